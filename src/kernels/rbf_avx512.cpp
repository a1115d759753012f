// AVX-512 RBF kernel matrix (compiled with -mavx512f -mavx512dq; only called after the run-time
// CPU check). A register tile is 4 rows × 16 support vectors (two 8-lane vectors): per feature
// two loads, four broadcasts, eight subtractions and eight FMAs; then exp in the registers.
// Same operations per lane as rbf_math.hpp's scalar reference, so the results are identical.
#include "pg_predict/kernels/rbf.hpp"

#if defined(__AVX512F__) && defined(__AVX512DQ__)
#include <immintrin.h>

// GCC 12 inside its conversion and rounding intrinsics (their "undefined" pass-through operand).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "rbf_math.hpp"

namespace pg_predict::kernels::detail {
namespace {

namespace m = rbf_math;

inline __m512d pow2(__m512d k) {  // k integral in [-1022, 1023]
    const __m512i e = _mm512_add_epi64(_mm512_cvtpd_epi64(k), _mm512_set1_epi64(1023));
    return _mm512_castsi512_pd(_mm512_slli_epi64(e, 52));
}

inline __m512d exp_nonpositive(__m512d x) {
    x = _mm512_max_pd(_mm512_set1_pd(m::kFloor), x);  // NaN stays: max returns x when one is NaN
    const __m512d k = _mm512_roundscale_pd(_mm512_mul_pd(x, _mm512_set1_pd(m::kLog2e)),
                                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512d r = _mm512_fnmadd_pd(k, _mm512_set1_pd(m::kLn2Hi), x);
    r = _mm512_fnmadd_pd(k, _mm512_set1_pd(m::kLn2Lo), r);
    __m512d p = _mm512_set1_pd(m::kTaylor[13]);
    for (int i = 12; i >= 0; --i) p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(m::kTaylor[i]));
    const __m512d k1 = _mm512_roundscale_pd(_mm512_mul_pd(k, _mm512_set1_pd(0.5)),
                                            _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    return _mm512_mul_pd(_mm512_mul_pd(p, pow2(k1)), pow2(_mm512_sub_pd(k, k1)));
}

// Rows i0 .. i0 + R - 1 against support vectors s .. s + 15.
template <int R>
inline void tile(const double* x, int64_t i0, int64_t cols, const double* svt, int64_t padded, int64_t s,
                 int64_t n, __m512d neg_gamma, double* out) {
    __m512d acc[R][2];
    // Unrolled so the accumulators stay in registers (a loop over r spills them to the stack).
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_pd();
    for (int64_t f = 0; f < cols; ++f) {
        const __m512d s0 = _mm512_loadu_pd(svt + f * padded + s);
        const __m512d s1 = _mm512_loadu_pd(svt + f * padded + s + 8);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
            const __m512d xv = _mm512_set1_pd(x[(i0 + r) * cols + f]);
            const __m512d d0 = _mm512_sub_pd(xv, s0), d1 = _mm512_sub_pd(xv, s1);
            acc[r][0] = _mm512_fmadd_pd(d0, d0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_pd(d1, d1, acc[r][1]);
        }
    }
    const int64_t left0 = n - s, left1 = n - s - 8;
    const __mmask8 m0 = left0 >= 8 ? 0xFF : static_cast<__mmask8>((1u << left0) - 1);
    const __mmask8 m1 = left1 >= 8 ? 0xFF : left1 <= 0 ? 0 : static_cast<__mmask8>((1u << left1) - 1);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
        double* o = out + (i0 + r) * n + s;
        _mm512_mask_storeu_pd(o, m0, exp_nonpositive(_mm512_mul_pd(neg_gamma, acc[r][0])));
        _mm512_mask_storeu_pd(o + 8, m1, exp_nonpositive(_mm512_mul_pd(neg_gamma, acc[r][1])));
    }
}

}  // namespace

bool rbf_avx512_compiled() { return true; }

void rbf_rows_avx512(const double* x, int64_t begin, int64_t end, int64_t cols, const double* svt, int64_t n,
                     double gamma, double* out) {
    static_assert(kRbfLanes == 16, "a tile is 16 support vectors");
    const int64_t padded = rbf_padded(n);
    const __m512d neg_gamma = _mm512_set1_pd(-gamma);
    // Support vectors outermost: their 16 columns (cols × 128 bytes) stay in L1 over the rows.
    for (int64_t s = 0; s < n; s += kRbfLanes) {
        int64_t i = begin;
        for (; i + 4 <= end; i += 4) tile<4>(x, i, cols, svt, padded, s, n, neg_gamma, out);
        for (; i < end; ++i) tile<1>(x, i, cols, svt, padded, s, n, neg_gamma, out);
    }
}

}  // namespace pg_predict::kernels::detail

#else  // built without AVX-512 flags (another architecture)

#include "pg_predict/common/error.hpp"

namespace pg_predict::kernels::detail {
bool rbf_avx512_compiled() { return false; }
void rbf_rows_avx512(const double*, int64_t, int64_t, int64_t, const double*, int64_t, double, double*) {
    fail(ErrorCategory::Internal, "RBF kernel: AVX-512 path not compiled");
}
}  // namespace pg_predict::kernels::detail

#endif
