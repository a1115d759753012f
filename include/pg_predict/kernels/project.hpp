// The dense projection out[i, j] = Σ_l x[i, l] · w[j, l] + offset[j] of a float64 batch (an MLP's
// hidden layers, PCA, an SVM's dual coefficients: spec step "project"), natively: Debian's
// libtorch hands matmul to the reference BLAS, whose dgemm took 62 % of an MLP's query.
//
// Each sum runs over l in order with the product rounded before the add, as the reference
// dgemm does (and numpy's matmul, which scikit-learn uses, over the same BLAS), then adds the
// offset: the results are the bits torch.matmul(x, wᵀ) + offset gave. Every path (AVX-512,
// AVX2, portable) does the same, lane by lane. The outputs are the SIMD lanes, so the kernel
// pays where there are at least 8 of them.
#pragma once

#include <cstdint>

#include "pg_predict/kernels/tree_ensemble.hpp"  // Isa

namespace pg_predict::kernels {

// w laid out for the kernel: wt is k × padded_m, column j of row l = w[j, l], zero-padded to a
// multiple of kProjectLanes outputs.
constexpr int64_t kProjectLanes = 16;
int64_t project_padded(int64_t m);

// out: rows × m, overwritten. x: rows × k, row-major. offset: m values. Runs over row blocks on
// torch's intra-op thread count in pg_predict's own pool; throws Error(Cancelled) on an interrupt.
void project(const double* x, int64_t rows, int64_t k, const double* wt, int64_t m, const double* offset,
             double* out, Isa isa);

// Defined beside the registration of torch.ops.pg_predict.project; the compiler references it so
// a static link keeps the registrar.
int project_op_anchor();

namespace detail {
bool project_avx512_compiled();
void project_rows_avx512(const double* x, int64_t begin, int64_t end, int64_t k, const double* wt, int64_t m,
                         const double* offset, double* out);
bool project_avx2_compiled();
void project_rows_avx2(const double* x, int64_t begin, int64_t end, int64_t k, const double* wt, int64_t m,
                       const double* offset, double* out);
}  // namespace detail

}  // namespace pg_predict::kernels
