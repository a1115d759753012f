// AVX-512 dense projection (compiled with -mavx512f -ffp-contract=off; only called after the
// run-time CPU check). A register tile is 4 rows × 16 outputs (two 8-lane vectors): per input
// column two loads of wᵀ, four broadcasts, eight products and eight adds, in the order of
// project.hpp, so the results equal the portable path's.
#include "pg_predict/kernels/project.hpp"

#if defined(__AVX512F__)
#include <immintrin.h>

namespace pg_predict::kernels::detail {
namespace {

// Rows i0 .. i0 + R - 1, outputs j .. j + 15.
template <int R>
inline void tile(const double* x, int64_t i0, int64_t k, const double* wt, int64_t padded, int64_t j, int64_t m,
                 const double* offset, double* out) {
    __m512d acc[R][2];
    // Unrolled so the accumulators stay in registers (a loop over r spills them to the stack).
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_pd();
    for (int64_t l = 0; l < k; ++l) {
        const __m512d w0 = _mm512_loadu_pd(wt + l * padded + j);
        const __m512d w1 = _mm512_loadu_pd(wt + l * padded + j + 8);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
            const __m512d xv = _mm512_set1_pd(x[(i0 + r) * k + l]);
            acc[r][0] = _mm512_add_pd(acc[r][0], _mm512_mul_pd(xv, w0));
            acc[r][1] = _mm512_add_pd(acc[r][1], _mm512_mul_pd(xv, w1));
        }
    }
    const int64_t left0 = m - j, left1 = m - j - 8;
    const __mmask8 m0 = left0 >= 8 ? 0xFF : static_cast<__mmask8>((1u << left0) - 1);
    const __mmask8 m1 = left1 >= 8 ? 0xFF : left1 <= 0 ? 0 : static_cast<__mmask8>((1u << left1) - 1);
    const __m512d b0 = _mm512_maskz_loadu_pd(m0, offset + j), b1 = _mm512_maskz_loadu_pd(m1, offset + j + 8);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
        double* o = out + (i0 + r) * m + j;
        _mm512_mask_storeu_pd(o, m0, _mm512_add_pd(acc[r][0], b0));
        _mm512_mask_storeu_pd(o + 8, m1, _mm512_add_pd(acc[r][1], b1));
    }
}

}  // namespace

bool project_avx512_compiled() { return true; }

void project_rows_avx512(const double* x, int64_t begin, int64_t end, int64_t k, const double* wt, int64_t m,
                         const double* offset, double* out) {
    static_assert(kProjectLanes == 16, "a tile is 16 outputs");
    const int64_t padded = project_padded(m);
    for (int64_t j = 0; j < m; j += kProjectLanes) {
        int64_t i = begin;
        for (; i + 4 <= end; i += 4) tile<4>(x, i, k, wt, padded, j, m, offset, out);
        for (; i < end; ++i) tile<1>(x, i, k, wt, padded, j, m, offset, out);
    }
}

}  // namespace pg_predict::kernels::detail

#else  // built without AVX-512 flags (another architecture)

#include "pg_predict/common/error.hpp"

namespace pg_predict::kernels::detail {
bool project_avx512_compiled() { return false; }
void project_rows_avx512(const double*, int64_t, int64_t, int64_t, const double*, int64_t, const double*, double*) {
    fail(ErrorCategory::Internal, "projection kernel: AVX-512 path not compiled");
}
}  // namespace pg_predict::kernels::detail

#endif
