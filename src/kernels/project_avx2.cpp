// AVX2 dense projection (compiled with -mavx2 -ffp-contract=off; only called after the run-time
// CPU check). A register tile is 4 rows × 8 outputs (two 4-lane vectors), in the order of
// project.hpp, so the results equal the portable path's.
#include "pg_predict/kernels/project.hpp"

#if defined(__AVX2__)
#include <immintrin.h>

#include <algorithm>

namespace pg_predict::kernels::detail {
namespace {

// Rows i0 .. i0 + R - 1, outputs j .. j + 7.
template <int R>
inline void tile(const double* x, int64_t i0, int64_t k, const double* wt, int64_t padded, int64_t j, int64_t m,
                 const double* offset, double* out) {
    __m256d acc[R][2];
    // Unrolled so the accumulators stay in registers (a loop over r spills them to the stack).
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_pd();
    for (int64_t l = 0; l < k; ++l) {
        const __m256d w0 = _mm256_loadu_pd(wt + l * padded + j);
        const __m256d w1 = _mm256_loadu_pd(wt + l * padded + j + 4);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
            const __m256d xv = _mm256_set1_pd(x[(i0 + r) * k + l]);
            acc[r][0] = _mm256_add_pd(acc[r][0], _mm256_mul_pd(xv, w0));
            acc[r][1] = _mm256_add_pd(acc[r][1], _mm256_mul_pd(xv, w1));
        }
    }
    const int64_t valid = std::min<int64_t>(8, m - j);
    alignas(32) double b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    std::copy(offset + j, offset + j + valid, b);
    const __m256d b0 = _mm256_load_pd(b), b1 = _mm256_load_pd(b + 4);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
        double* o = out + (i0 + r) * m + j;
        const __m256d v0 = _mm256_add_pd(acc[r][0], b0), v1 = _mm256_add_pd(acc[r][1], b1);
        if (valid == 8) {
            _mm256_storeu_pd(o, v0);
            _mm256_storeu_pd(o + 4, v1);
        } else {  // the last outputs: only the valid lanes
            alignas(32) double buf[8];
            _mm256_store_pd(buf, v0);
            _mm256_store_pd(buf + 4, v1);
            std::copy(buf, buf + valid, o);
        }
    }
}

}  // namespace

bool project_avx2_compiled() { return true; }

void project_rows_avx2(const double* x, int64_t begin, int64_t end, int64_t k, const double* wt, int64_t m,
                       const double* offset, double* out) {
    const int64_t padded = project_padded(m);
    for (int64_t j = 0; j < m; j += 8) {
        int64_t i = begin;
        for (; i + 4 <= end; i += 4) tile<4>(x, i, k, wt, padded, j, m, offset, out);
        for (; i < end; ++i) tile<1>(x, i, k, wt, padded, j, m, offset, out);
    }
}

}  // namespace pg_predict::kernels::detail

#else  // built without AVX2 flags (another architecture)

#include "pg_predict/common/error.hpp"

namespace pg_predict::kernels::detail {
bool project_avx2_compiled() { return false; }
void project_rows_avx2(const double*, int64_t, int64_t, int64_t, const double*, int64_t, const double*, double*) {
    fail(ErrorCategory::Internal, "projection kernel: AVX2 path not compiled");
}
}  // namespace pg_predict::kernels::detail

#endif
