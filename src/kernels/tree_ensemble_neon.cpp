// NEON scoring of the perfect layout (AArch64, where Advanced SIMD is always present). The
// algorithm and the order of every float addition are the portable path's, so the results are
// bit-identical: per block of 16 trees, each row's 16 tree values are added to 16 per-lane
// accumulators (here four 4-lane vectors), and after the group's last block the lanes are
// summed in order 0..15.
//   * a row's ranks are computed once per 64-row block with gpu::rank_word, as everywhere;
//   * one vector = one row in 4 trees of the block; the four vectors of a block run together
//     so their loads overlap;
//   * levels 0..2 take their node words from per-block registers: the words of 4 trees are
//     contiguous there (level l holds tree t's 2^l positions at t·2^l), so vld1q / vld2q /
//     vld4q de-interleave them by position and blends on the decisions already taken pick
//     each lane's word; deeper levels and the leaf load lane by lane (NEON has no gather).
// The row blocks, ranks, groups and sums are block_driver.hpp's; this file holds the walk.
#include "pg_predict/kernels/tree_ensemble.hpp"

#if defined(__aarch64__)
#include <arm_neon.h>

#include "block_driver.hpp"

namespace pg_predict::kernels::detail {
namespace {

constexpr int kQuads = kLanes / 4; // 4-lane vectors per 16-tree block

// Node words of levels 0..2 of one block, by position: top[quad][i] holds, for the quad's 4
// trees, level 0 (i = 0), level 1 positions 0..1 (i = 1..2), level 2 positions 0..3 (i = 3..6).
struct TopLevels {
    uint32x4_t w[kQuads][7];
};

void load_top(const uint32_t* words, int D, TopLevels& t) {
    for (int k = 0; k < kQuads; ++k) {
        for (int i = 0; i < 7; ++i) t.w[k][i] = vdupq_n_u32(0);
        if (D > 0) t.w[k][0] = vld1q_u32(words + 4 * k);
        if (D > 1) {
            const uint32x4x2_t l1 = vld2q_u32(words + kLanes + 8 * k);
            t.w[k][1] = l1.val[0], t.w[k][2] = l1.val[1];
        }
        if (D > 2) {
            const uint32x4x4_t l2 = vld4q_u32(words + 3 * kLanes + 16 * k);
            for (int p = 0; p < 4; ++p) t.w[k][3 + p] = l2.val[p];
        }
    }
}

template <int L>
inline uint32x4_t set_lane(uint32_t x, uint32x4_t v) { return vsetq_lane_u32(x, v, L); }
template <int L>
inline float32x4_t set_lane(float x, float32x4_t v) { return vsetq_lane_f32(x, v, L); }

// base[index(idx lane)] into each lane of v: NEON has no gather.
template <typename Vec, typename T, typename Index>
inline Vec load_lanes(Vec v, const T* base, uint32x4_t idx, Index index) {
    v = set_lane<0>(base[index(vgetq_lane_u32(idx, 0))], v);
    v = set_lane<1>(base[index(vgetq_lane_u32(idx, 1))], v);
    v = set_lane<2>(base[index(vgetq_lane_u32(idx, 2))], v);
    return set_lane<3>(base[index(vgetq_lane_u32(idx, 3))], v);
}

inline uint32_t same(uint32_t i) { return i; }

// The rank word of each lane's feature (w & 0x7F) in row q.
inline uint32x4_t lookup(const uint32_t* q, uint32x4_t w) {
    return load_lanes(vdupq_n_u32(0), q, w, [](uint32_t i) { return i & 0x7F; });
}

// All ones in the lanes that go right at node words w: rank ≥ word, except a NaN (rank all
// ones) at a default-left node.
inline uint32x4_t go_right(uint32x4_t w, const uint32_t* q) {
    const uint32x4_t v = lookup(q, w);
    const uint32x4_t ge = vcgeq_u32(v, w);
    const uint32x4_t nan_left = vandq_u32(vceqq_u32(v, vdupq_n_u32(kNanRank)), vtstq_u32(w, vdupq_n_u32(0x80)));
    return vbicq_u32(ge, nan_left);
}

// idx = 2 idx + (right ? 1 : 0); right is all ones (-1) or zero.
inline uint32x4_t step(uint32x4_t idx, uint32x4_t right) { return vsubq_u32(vaddq_u32(idx, idx), right); }

// One row through one block of 16 trees of depth D: acc[0..15] += the leaf of each tree.
void walk_row(const uint32_t* words, const float* leaves, int D, const TopLevels& top, const uint32_t* q,
              float* acc) {
    uint32x4_t idx[kQuads], d0[kQuads], d1[kQuads];
    for (int k = 0; k < kQuads; ++k) {
        const uint32_t first[4] = {uint32_t(4 * k), uint32_t(4 * k + 1), uint32_t(4 * k + 2), uint32_t(4 * k + 3)};
        idx[k] = vld1q_u32(first);  // the tree's lane in the block
    }
    if (D > 0)
        for (int k = 0; k < kQuads; ++k) {
            d0[k] = go_right(top.w[k][0], q);
            idx[k] = step(idx[k], d0[k]);
        }
    if (D > 1)
        for (int k = 0; k < kQuads; ++k) {
            d1[k] = go_right(vbslq_u32(d0[k], top.w[k][2], top.w[k][1]), q);
            idx[k] = step(idx[k], d1[k]);
        }
    if (D > 2)
        for (int k = 0; k < kQuads; ++k) {
            const uint32x4_t left = vbslq_u32(d1[k], top.w[k][4], top.w[k][3]);
            const uint32x4_t right = vbslq_u32(d1[k], top.w[k][6], top.w[k][5]);
            idx[k] = step(idx[k], go_right(vbslq_u32(d0[k], right, left), q));
        }
    const uint32_t* level = words + 7 * kLanes;
    for (int l = 3; l < D; ++l) {
        for (int k = 0; k < kQuads; ++k) idx[k] = step(idx[k], go_right(load_lanes(vdupq_n_u32(0), level, idx[k], same), q));
        level += kLanes << l;
    }
    for (int k = 0; k < kQuads; ++k)
        vst1q_f32(acc + 4 * k, vaddq_f32(vld1q_f32(acc + 4 * k), load_lanes(vdupq_n_f32(0.0f), leaves, idx[k], same)));
}

// The NEON path for block_driver.hpp.
struct Neon : ScalarPath {};

template <int FW>
void walk_block(const uint32_t* words, const float* leaves, int D, BlockScratch<Neon, FW>& s, int64_t n) {
    TopLevels top;
    load_top(words, D, top);
    for (int64_t r = 0; r < n; ++r) walk_row(words, leaves, D, top, s.q + r * FW, s.acc + r * kLanes);
}

}  // namespace

PerfectPath neon_path() { return score_perfect<Neon>; }

}  // namespace pg_predict::kernels::detail

#else  // not AArch64

namespace pg_predict::kernels::detail {
PerfectPath neon_path() { return nullptr; }
}  // namespace pg_predict::kernels::detail

#endif
