// The native bucketize's search structure (kernels/bucketize.hpp), shared by its portable and
// AVX2 paths. Each column's sorted edges are cut into blocks of kBucketWidth; a block's last
// edge is its pivot. A value's count is then 16 · (pivots below it) + (edges below it in the
// first block whose pivot is not), two runs of compares without a branch on the data: the
// binary search it replaced mispredicted half its steps (50 ns a value; this is 8).
#pragma once

#include <cstdint>
#include <vector>

namespace pg_predict::kernels::detail {

constexpr int64_t kBucketWidth = 16;

struct BucketBlocks {
    int64_t columns = 0;
    bool right = false;          // count edges <= x (else edges < x)
    int64_t pivot_stride = 0;    // pivots per column, a multiple of 4, padded with +inf
    int64_t edge_stride = 0;     // edges per column, whole blocks (at least one), padded with +inf
    std::vector<double> pivots;  // columns × pivot_stride
    std::vector<double> edges;   // columns × edge_stride
    std::vector<int64_t> blocks, counts;  // per column: blocks, real edges
};

// The count for a value from its pivot count k and its count w within block min(k, blocks - 1);
// k ≥ blocks (above every pivot, or +inf under side right) means every edge.
inline int64_t bucket_count(const BucketBlocks& b, int64_t c, int64_t k, int64_t w) {
    return k >= b.blocks[c] ? b.counts[c] : k * kBucketWidth + w;
}

inline int64_t bucket_block(const BucketBlocks& b, int64_t c, int64_t k) {
    return b.blocks[c] == 0 ? 0 : (k < b.blocks[c] - 1 ? k : b.blocks[c] - 1);
}

bool bucketize_avx2_compiled();
void bucketize_rows_avx2(const double* x, int64_t begin, int64_t end, const BucketBlocks* b, double* out);

}  // namespace pg_predict::kernels::detail
