// The native bucketize (kernels/bucketize.hpp): the block layout, the portable path and the
// dispatch.
#include "pg_predict/kernels/bucketize.hpp"

#include <algorithm>
#include <cmath>

#include "bucketize_blocks.hpp"
#include "row_paths.hpp"

namespace pg_predict::kernels {
namespace {

using detail::BucketBlocks;
using detail::kBucketWidth;

constexpr int64_t kChunkRows = 512;

BucketBlocks make_blocks(int64_t columns, const double* edges, int64_t stride, const int64_t* counts, bool right) {
    BucketBlocks b;
    b.columns = columns;
    b.right = right;
    int64_t most = 0;
    for (int64_t c = 0; c < columns; ++c) {
        b.counts.push_back(counts[c]);
        b.blocks.push_back((counts[c] + kBucketWidth - 1) / kBucketWidth);
        most = std::max(most, b.blocks.back());
    }
    b.pivot_stride = (most + 3) / 4 * 4;
    b.edge_stride = std::max<int64_t>(most, 1) * kBucketWidth;
    b.pivots.assign(columns * b.pivot_stride, HUGE_VAL);
    b.edges.assign(columns * b.edge_stride, HUGE_VAL);
    for (int64_t c = 0; c < columns; ++c) {
        const double* e = edges + c * stride;
        std::copy(e, e + counts[c], b.edges.begin() + c * b.edge_stride);
        for (int64_t j = 0; j < b.blocks[c]; ++j) {
            const int64_t last = (j + 1) * kBucketWidth - 1;  // a partial last block keeps +inf
            if (last < counts[c]) b.pivots[c * b.pivot_stride + j] = e[last];
        }
    }
    return b;
}

template <typename Below>
void rows_with(const double* x, int64_t begin, int64_t end, const BucketBlocks& b, double* out, Below below) {
    const int64_t C = b.columns;
    for (int64_t i = begin; i < end; ++i)
        for (int64_t c = 0; c < C; ++c) {
            const double v = x[i * C + c];
            const double* pivots = &b.pivots[c * b.pivot_stride];
            int64_t k = 0;
            for (int64_t j = 0; j < b.pivot_stride; ++j) k += below(pivots[j], v) ? 1 : 0;
            const int64_t block = detail::bucket_block(b, c, k);
            const double* e = &b.edges[c * b.edge_stride + block * kBucketWidth];
            int64_t w = 0;
            for (int64_t j = 0; j < kBucketWidth; ++j) w += below(e[j], v) ? 1 : 0;
            out[i * C + c] = std::isnan(v) ? v : static_cast<double>(detail::bucket_count(b, c, k, w));
        }
}

void rows_portable(const double* x, int64_t begin, int64_t end, const BucketBlocks* b, double* out) {
    if (b->right) rows_with(x, begin, end, *b, out, [](double e, double v) { return e <= v; });
    else rows_with(x, begin, end, *b, out, [](double e, double v) { return e < v; });
}

}  // namespace

void bucketize(const double* x, int64_t rows, int64_t columns, const double* edges, int64_t stride,
               const int64_t* counts, bool right, double* out, Isa isa) {
    if (rows <= 0 || columns <= 0) return;
    const BucketBlocks blocks = make_blocks(columns, edges, stride, counts, right);
    detail::run_rows<const BucketBlocks*, double*>(
        isa, rows, kChunkRows, rows_portable, {detail::bucketize_avx2_compiled(), detail::bucketize_rows_avx2},
        {false, rows_portable}, x, &blocks, out);
}

}  // namespace pg_predict::kernels
