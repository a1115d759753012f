// AVX-512 RBF kernel matrix (compiled with -mavx512f -mavx512dq; only called after the run-time
// CPU check). A register tile (output_tiles.hpp) is 4 rows × 16 support vectors (two 8-lane
// vectors): per feature two loads, four broadcasts, eight subtractions and eight FMAs; then exp
// in the registers. Support vectors outermost: their 16 columns (cols × 128 bytes) stay in L1.
// Same operations per lane as rbf_math.hpp's scalar reference, so the results are identical.
#include "pg_predict/kernels/rbf.hpp"

#if defined(__AVX512F__) && defined(__AVX512DQ__)
#include <immintrin.h>

// GCC 12 inside its conversion and rounding intrinsics (their "undefined" pass-through operand).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "double_lanes.hpp"
#include "output_tiles.hpp"
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

// The lanes of output_tiles.hpp's Rbf.
struct Avx512Rbf : Avx512Doubles {
    static __m512d fmadd(__m512d a, __m512d b, __m512d c) { return _mm512_fmadd_pd(a, b, c); }
    static __m512d exp(__m512d x) { return exp_nonpositive(x); }
};

}  // namespace

bool rbf_avx512_compiled() { return true; }

void rbf_rows_avx512(const double* x, int64_t begin, int64_t end, int64_t cols, const double* svt, int64_t n,
                     double gamma, double* out) {
    static_assert(kRbfLanes == 2 * Avx512Doubles::kWidth, "a tile is 16 support vectors");
    tile_rows<Avx512Rbf>(x, begin, end, cols, svt, rbf_padded(n), n, Rbf<Avx512Rbf>{_mm512_set1_pd(-gamma)}, out);
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
