// The RBF kernel matrix (kernels/rbf.hpp): dispatch and the portable path, which does what the
// SIMD paths do one lane at a time.
#include "pg_predict/kernels/rbf.hpp"

#include <cmath>
#include <string>

#include "pg_predict/common/error.hpp"
#include "rbf_math.hpp"
#include "row_paths.hpp"

namespace pg_predict::kernels {
namespace {

// Rows per parallel chunk: a few hundred µs of work for a few thousand support vectors.
constexpr int64_t kRbfRows = 32;

void rows_portable(const double* x, int64_t begin, int64_t end, int64_t cols, const double* svt, int64_t n,
                   double gamma, double* out) {
    const int64_t padded = rbf_padded(n);
    for (int64_t i = begin; i < end; ++i) {
        const double* xi = x + i * cols;
        double* oi = out + i * n;
        for (int64_t j = 0; j < n; ++j) {
            double acc = 0.0;
            for (int64_t f = 0; f < cols; ++f) {
                const double d = xi[f] - svt[f * padded + j];
                acc = std::fma(d, d, acc);
            }
            oi[j] = rbf_math::exp_nonpositive(-gamma * acc);
        }
    }
}

}  // namespace

int64_t rbf_padded(int64_t n) { return (n + kRbfLanes - 1) / kRbfLanes * kRbfLanes; }

void rbf_kernel(const double* x, int64_t rows, int64_t cols, const double* svt, int64_t n, double gamma,
                double* out, Isa isa) {
    if (rows <= 0 || n <= 0) return;
    detail::run_rows(isa, rows, kRbfRows, rows_portable, {detail::rbf_avx2_compiled(), detail::rbf_rows_avx2},
                     {detail::rbf_avx512_compiled(), detail::rbf_rows_avx512}, x, cols, svt, n, gamma, out);
}

}  // namespace pg_predict::kernels
