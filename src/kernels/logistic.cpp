// The logistic function over arrays (kernels/logistic.hpp): the scalar form at every element,
// so an element's value does not depend on its position.
#include "pg_predict/kernels/logistic.hpp"

namespace pg_predict::kernels {

void logistic(const float* in, int64_t n, float* out) {
    for (int64_t i = 0; i < n; ++i) out[i] = logistic(in[i]);
}

void logistic(const double* in, int64_t n, double* out) {
    for (int64_t i = 0; i < n; ++i) out[i] = logistic(in[i]);
}

}  // namespace pg_predict::kernels
