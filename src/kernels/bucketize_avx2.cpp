// AVX2 bucketize (kernels/bucketize_blocks.hpp; compiled with -mavx2, only called after the
// run-time CPU check): four pivots or edges per compare, the counts by popcount of the masks.
#include "bucketize_blocks.hpp"

#if defined(__AVX2__)
#include <immintrin.h>

#include <cmath>

namespace pg_predict::kernels::detail {
namespace {

template <int Cmp>
void rows(const double* x, int64_t begin, int64_t end, const BucketBlocks& b, double* out) {
    const int64_t C = b.columns;
    for (int64_t i = begin; i < end; ++i)
        for (int64_t c = 0; c < C; ++c) {
            const double v = x[i * C + c];
            const __m256d xv = _mm256_set1_pd(v);
            const double* pivots = &b.pivots[c * b.pivot_stride];
            int64_t k = 0;
            for (int64_t j = 0; j < b.pivot_stride; j += 4)
                k += __builtin_popcount(_mm256_movemask_pd(_mm256_cmp_pd(_mm256_loadu_pd(pivots + j), xv, Cmp)));
            const double* e = &b.edges[c * b.edge_stride + bucket_block(b, c, k) * kBucketWidth];
            const int mask = _mm256_movemask_pd(_mm256_cmp_pd(_mm256_loadu_pd(e), xv, Cmp)) |
                             _mm256_movemask_pd(_mm256_cmp_pd(_mm256_loadu_pd(e + 4), xv, Cmp)) << 4 |
                             _mm256_movemask_pd(_mm256_cmp_pd(_mm256_loadu_pd(e + 8), xv, Cmp)) << 8 |
                             _mm256_movemask_pd(_mm256_cmp_pd(_mm256_loadu_pd(e + 12), xv, Cmp)) << 12;
            out[i * C + c] = std::isnan(v) ? v : static_cast<double>(bucket_count(b, c, k, __builtin_popcount(mask)));
        }
}

}  // namespace

bool bucketize_avx2_compiled() { return true; }

void bucketize_rows_avx2(const double* x, int64_t begin, int64_t end, const BucketBlocks* b, double* out) {
    static_assert(kBucketWidth == 16, "four vectors of four edges a block");
    // Ordered, non-signalling compares: a NaN value counts nothing (and its output is NaN).
    if (b->right) rows<_CMP_LE_OQ>(x, begin, end, *b, out);
    else rows<_CMP_LT_OQ>(x, begin, end, *b, out);
}

}  // namespace pg_predict::kernels::detail

#else  // built without AVX2 flags (another architecture)

#include "pg_predict/common/error.hpp"

namespace pg_predict::kernels::detail {
bool bucketize_avx2_compiled() { return false; }
void bucketize_rows_avx2(const double*, int64_t, int64_t, const BucketBlocks*, double*) {
    fail(ErrorCategory::Internal, "bucketize kernel: AVX2 path not compiled");
}
}  // namespace pg_predict::kernels::detail

#endif
