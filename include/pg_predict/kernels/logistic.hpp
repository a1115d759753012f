// The logistic function 1 / (1 + e^-m), one way everywhere: the compiled programs' links
// (torch.ops.pg_predict.logistic), the per-row shortcut, the program tail and the reference.
// ATen's torch.sigmoid is not position-free: it runs a vectorized exp over whole vector blocks
// and a scalar tail over the rest, and the two differ in the last bit, so a row's probability
// would depend on which rows share its batch. This is the scalar form for every element, glibc's
// expf (float32) or exp (float64): XGBoost's own float32 sigmoid, and ATen's scalar tail.
#pragma once

#include <cmath>
#include <cstdint>

namespace pg_predict::kernels {

inline float logistic(float m) { return 1.0f / (1.0f + std::exp(-m)); }
inline double logistic(double m) { return 1.0 / (1.0 + std::exp(-m)); }

// out[i] = logistic(in[i]) for i < n (in == out allowed).
void logistic(const float* in, int64_t n, float* out);
void logistic(const double* in, int64_t n, double* out);

// Defined beside the registration of torch.ops.pg_predict.logistic; the compiler references it
// so a static link keeps the registrar.
int logistic_op_anchor();

}  // namespace pg_predict::kernels
