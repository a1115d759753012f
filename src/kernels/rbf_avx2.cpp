// AVX2 RBF kernel matrix (compiled with -mavx2 -mfma; only called after the run-time CPU check).
// A register tile is 4 rows × 8 support vectors (two 4-lane vectors), the same sums and exp as
// rbf_math.hpp's scalar reference lane by lane, so the results equal the other paths'.
#include "pg_predict/kernels/rbf.hpp"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include <algorithm>

#include "rbf_math.hpp"

namespace pg_predict::kernels::detail {
namespace {

namespace m = rbf_math;

// 2^k for an integral k in [-1022, 1023]: k + 1.5·2^52 holds k in its low mantissa bits, so the
// integer difference of the two bit patterns is k (AVX2 has no double → int64 conversion).
inline __m256d pow2(__m256d k) {
    const __m256d magic = _mm256_set1_pd(6755399441055744.0);
    const __m256i ki = _mm256_sub_epi64(_mm256_castpd_si256(_mm256_add_pd(k, magic)), _mm256_castpd_si256(magic));
    return _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_add_epi64(ki, _mm256_set1_epi64x(1023)), 52));
}

inline __m256d exp_nonpositive(__m256d x) {
    x = _mm256_max_pd(_mm256_set1_pd(m::kFloor), x);  // NaN stays: max returns x when one is NaN
    const __m256d k = _mm256_round_pd(_mm256_mul_pd(x, _mm256_set1_pd(m::kLog2e)),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256d r = _mm256_fnmadd_pd(k, _mm256_set1_pd(m::kLn2Hi), x);
    r = _mm256_fnmadd_pd(k, _mm256_set1_pd(m::kLn2Lo), r);
    __m256d p = _mm256_set1_pd(m::kTaylor[13]);
    for (int i = 12; i >= 0; --i) p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(m::kTaylor[i]));
    const __m256d k1 = _mm256_round_pd(_mm256_mul_pd(k, _mm256_set1_pd(0.5)), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    return _mm256_mul_pd(_mm256_mul_pd(p, pow2(k1)), pow2(_mm256_sub_pd(k, k1)));
}

// Rows i0 .. i0 + R - 1 against support vectors s .. s + 7.
template <int R>
inline void tile(const double* x, int64_t i0, int64_t cols, const double* svt, int64_t padded, int64_t s,
                 int64_t n, __m256d neg_gamma, double* out) {
    __m256d acc[R][2];
    // Unrolled so the accumulators stay in registers (a loop over r spills them to the stack).
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_pd();
    for (int64_t f = 0; f < cols; ++f) {
        const __m256d s0 = _mm256_loadu_pd(svt + f * padded + s);
        const __m256d s1 = _mm256_loadu_pd(svt + f * padded + s + 4);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
            const __m256d xv = _mm256_set1_pd(x[(i0 + r) * cols + f]);
            const __m256d d0 = _mm256_sub_pd(xv, s0), d1 = _mm256_sub_pd(xv, s1);
            acc[r][0] = _mm256_fmadd_pd(d0, d0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_pd(d1, d1, acc[r][1]);
        }
    }
    const int64_t valid = std::min<int64_t>(8, n - s);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
        double* o = out + (i0 + r) * n + s;
        const __m256d k0 = exp_nonpositive(_mm256_mul_pd(neg_gamma, acc[r][0]));
        const __m256d k1 = exp_nonpositive(_mm256_mul_pd(neg_gamma, acc[r][1]));
        if (valid == 8) {
            _mm256_storeu_pd(o, k0);
            _mm256_storeu_pd(o + 4, k1);
        } else {  // the last support vectors: only the valid lanes
            alignas(32) double buf[8];
            _mm256_store_pd(buf, k0);
            _mm256_store_pd(buf + 4, k1);
            std::copy(buf, buf + valid, o);
        }
    }
}

}  // namespace

bool rbf_avx2_compiled() { return true; }

void rbf_rows_avx2(const double* x, int64_t begin, int64_t end, int64_t cols, const double* svt, int64_t n,
                   double gamma, double* out) {
    const int64_t padded = rbf_padded(n);
    const __m256d neg_gamma = _mm256_set1_pd(-gamma);
    // Support vectors outermost: their 8 columns (cols × 64 bytes) stay in L1 over the rows.
    for (int64_t s = 0; s < n; s += 8) {
        int64_t i = begin;
        for (; i + 4 <= end; i += 4) tile<4>(x, i, cols, svt, padded, s, n, neg_gamma, out);
        for (; i < end; ++i) tile<1>(x, i, cols, svt, padded, s, n, neg_gamma, out);
    }
}

}  // namespace pg_predict::kernels::detail

#else  // built without AVX2 flags (another architecture)

#include "pg_predict/common/error.hpp"

namespace pg_predict::kernels::detail {
bool rbf_avx2_compiled() { return false; }
void rbf_rows_avx2(const double*, int64_t, int64_t, int64_t, const double*, int64_t, double, double*) {
    fail(ErrorCategory::Internal, "RBF kernel: AVX2 path not compiled");
}
}  // namespace pg_predict::kernels::detail

#endif
