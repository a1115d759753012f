// AVX2 RBF kernel matrix (compiled with -mavx2 -mfma; only called after the run-time CPU check).
// A register tile (output_tiles.hpp) is 4 rows × 8 support vectors (two 4-lane vectors), the
// same sums and exp as rbf_math.hpp's scalar reference lane by lane, so the results equal the
// other paths'. Support vectors outermost: their 8 columns (cols × 64 bytes) stay in L1.
#include "pg_predict/kernels/rbf.hpp"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include "double_lanes.hpp"
#include "output_tiles.hpp"
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

// The lanes of output_tiles.hpp's Rbf.
struct Avx2Rbf : Avx2Doubles {
    static __m256d fmadd(__m256d a, __m256d b, __m256d c) { return _mm256_fmadd_pd(a, b, c); }
    static __m256d exp(__m256d x) { return exp_nonpositive(x); }
};

}  // namespace

bool rbf_avx2_compiled() { return true; }

void rbf_rows_avx2(const double* x, int64_t begin, int64_t end, int64_t cols, const double* svt, int64_t n,
                   double gamma, double* out) {
    tile_rows<Avx2Rbf>(x, begin, end, cols, svt, rbf_padded(n), n, Rbf<Avx2Rbf>{_mm256_set1_pd(-gamma)}, out);
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
