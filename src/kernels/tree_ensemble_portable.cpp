// Portable scoring of the perfect layout: plain C++, no intrinsics, the reference every SIMD
// path must match bit for bit (same decisions, same summation order).
//
// A tree walk is a chain of dependent loads (node word, then the row's rank of its feature), so
// one walk at a time leaves the core idle waiting on L1. The walks here go level by level over
// kRows rows × 16 trees of a block: 64 independent chains per level keep the load ports busy,
// which is what makes this path as fast as a fused float-compare loop over perfect trees.
#include <algorithm>
#include <cstring>
#include <vector>

#include "pg_predict/kernels/tree_ensemble.hpp"
#include "pg_predict/kernels/tree_ensemble_gpu.hpp"  // rank_word: every path ranks alike

namespace pg_predict::kernels::detail {
namespace {

constexpr int64_t kBlockRows = 64;  // rows ranked together, then walked block of trees by block
constexpr int kRows = 4;            // rows walked together (kRows × 16 chains per level)
constexpr int kStride = 128;        // rank words per row (features ≤ 128; padding reads NaN)

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

}  // namespace

void score_perfect_portable(const PackedView& v, const float* x, int64_t rows, int64_t cols, float* margins) {
    const int G = v.num_groups, D = v.depth, F = v.num_features;
    const int64_t node_words = kLanes * ((int64_t(1) << D) - 1), leaf_words = int64_t(kLanes) << D;
    const uint32_t* words = reinterpret_cast<const uint32_t*>(v.nodes);
    parallel_for(0, rows, kBlockRows, [&](int64_t begin, int64_t end) {
        std::vector<uint32_t> q(kBlockRows * kStride, kNanRank);
        std::vector<uint8_t> has_nan(kBlockRows);
        std::vector<float> acc(kBlockRows * kLanes);
        for (int64_t r0 = begin; r0 < end; r0 += kBlockRows) {
            const int64_t n = std::min(kBlockRows, end - r0);
            for (int64_t r = 0; r < n; ++r) {
                uint8_t nan = 0;
                for (int f = 0; f < F; ++f) {
                    const uint32_t w = gpu::rank_word(v.cuts + v.cut_offset()[f], v.cut_steps()[f],
                                                      x[(r0 + r) * cols + f], v.less_equal);
                    q[r * kStride + f] = w;
                    nan |= w == kNanRank;
                }
                has_nan[r] = nan;
            }
            for (int64_t r = 0; r < n; ++r) std::fill(margins + (r0 + r) * G, margins + (r0 + r + 1) * G, 0.0f);
            int64_t b = 0;
            while (b < v.units) {
                const int g = v.block_group()[b];
                std::fill(acc.begin(), acc.end(), 0.0f);
                for (; b < v.units && v.block_group()[b] == g; ++b) {
                    const uint32_t* bw = words + b * node_words;
                    const float* bl = v.leaves + b * leaf_words;
                    for (int64_t r = 0; r < n; r += kRows) {
                        const int k = static_cast<int>(std::min<int64_t>(kRows, n - r));
                        bool nan = false;
                        for (int i = 0; i < k; ++i) nan |= has_nan[r + i] != 0;
                        if (nan) walk_rows<true>(bw, bl, D, q.data() + r * kStride, k, acc.data() + r * kLanes);
                        else walk_rows<false>(bw, bl, D, q.data() + r * kStride, k, acc.data() + r * kLanes);
                    }
                }
                for (int64_t r = 0; r < n; ++r) {
                    float s = 0.0f;  // lane order 0..15: every path sums alike
                    for (int lane = 0; lane < kLanes; ++lane) s += acc[r * kLanes + lane];
                    margins[(r0 + r) * G + g] = s;
                }
            }
        }
    });
}

}  // namespace pg_predict::kernels::detail
