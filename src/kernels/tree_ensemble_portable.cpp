// Portable scoring of the perfect layout: plain C++, no intrinsics, the reference every SIMD
// path must match bit for bit (same decisions, same summation order).
//
// A tree walk is a chain of dependent loads (node word, then the row's rank of its feature), so
// one walk at a time leaves the core idle waiting on L1. The walks here go level by level over
// kRows rows × 16 trees of a block: 64 independent chains per level keep the load ports busy,
// which is what makes this path as fast as a fused float-compare loop over perfect trees.
// The row blocks, ranks, groups and sums are block_driver.hpp's; this file holds the walk.
#include <algorithm>

#include "block_driver.hpp"
#include "pg_predict/kernels/tree_ensemble.hpp"

namespace pg_predict::kernels::detail {
namespace {

constexpr int kRows = 4;            // rows walked together (kRows × 16 chains per level)
constexpr int kStride = kMaxWidth;  // rank words per row (features ≤ 128; padding reads NaN)

// One block of 16 trees for kRows rows (n ≤ kRows of them real): acc[r][lane] += leaf.
template <bool NaN>
inline void walk_rows(const uint32_t* words, const float* leaves, int D, const uint32_t* q, int n, float* acc) {
    uint32_t idx[kRows][kLanes];
    for (int r = 0; r < kRows; ++r)
        for (int lane = 0; lane < kLanes; ++lane) idx[r][lane] = lane;
    const uint32_t* level = words;
    for (int l = 0; l < D; ++l) {
        for (int r = 0; r < kRows; ++r) {
            const uint32_t* qr = q + (r < n ? r : 0) * kStride;
            for (int lane = 0; lane < kLanes; ++lane) {
                const uint32_t w = level[idx[r][lane]];
                const uint32_t qv = qr[w & 0x7F];
                uint32_t right = qv >= w;
                // NaN's rank word is all ones (≥ every word: right); default-left nodes send it left.
                if constexpr (NaN) right &= !(qv == kNanRank && (w & 0x80));
                idx[r][lane] = 2 * idx[r][lane] + right;
            }
        }
        level += kLanes << l;
    }
    for (int r = 0; r < n; ++r)
        for (int lane = 0; lane < kLanes; ++lane) acc[r * kLanes + lane] += leaves[idx[r][lane]];
}

// The portable path for block_driver.hpp.
struct Portable : ScalarPath {};

template <int FW>
void walk_block(const uint32_t* words, const float* leaves, int D, BlockScratch<Portable, FW>& s, int64_t n) {
    for (int64_t r = 0; r < n; r += kRows) {
        const int k = static_cast<int>(std::min<int64_t>(kRows, n - r));
        bool nan = false;
        for (int i = 0; i < k; ++i) nan |= s.has_nan[r + i] != 0;
        if (nan) walk_rows<true>(words, leaves, D, s.q + r * kStride, k, s.acc + r * kLanes);
        else walk_rows<false>(words, leaves, D, s.q + r * kStride, k, s.acc + r * kLanes);
    }
}

}  // namespace

void score_perfect_portable(const PackedView& v, const float* x, int64_t rows, int64_t cols, float* margins) {
    score_perfect<Portable>(v, x, rows, cols, margins);
}

}  // namespace pg_predict::kernels::detail
