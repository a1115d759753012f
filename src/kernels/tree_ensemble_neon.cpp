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
#include "pg_predict/kernels/tree_ensemble.hpp"

#if defined(__aarch64__)
#include <arm_neon.h>

#include <algorithm>
#include <vector>

#include "pg_predict/kernels/tree_ensemble_gpu.hpp"  // rank_word

namespace pg_predict::kernels::detail {
namespace {

constexpr int64_t kRowBlock = 64;  // rows ranked together (as the portable path)
constexpr int kQStride = 128;      // rank words per row; feature fields ≥ F read padding (NaN)
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

// The rank word of each lane's feature (w & 0x7F) in row q.
inline uint32x4_t lookup(const uint32_t* q, uint32x4_t w) {
    uint32x4_t v = vdupq_n_u32(0);
    v = vsetq_lane_u32(q[vgetq_lane_u32(w, 0) & 0x7F], v, 0);
    v = vsetq_lane_u32(q[vgetq_lane_u32(w, 1) & 0x7F], v, 1);
    v = vsetq_lane_u32(q[vgetq_lane_u32(w, 2) & 0x7F], v, 2);
    v = vsetq_lane_u32(q[vgetq_lane_u32(w, 3) & 0x7F], v, 3);
    return v;
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

inline uint32x4_t load_lanes(const uint32_t* base, uint32x4_t idx) {
    uint32x4_t v = vdupq_n_u32(0);
    v = vsetq_lane_u32(base[vgetq_lane_u32(idx, 0)], v, 0);
    v = vsetq_lane_u32(base[vgetq_lane_u32(idx, 1)], v, 1);
    v = vsetq_lane_u32(base[vgetq_lane_u32(idx, 2)], v, 2);
    v = vsetq_lane_u32(base[vgetq_lane_u32(idx, 3)], v, 3);
    return v;
}

inline float32x4_t load_leaves(const float* base, uint32x4_t idx) {
    float32x4_t v = vdupq_n_f32(0.0f);
    v = vsetq_lane_f32(base[vgetq_lane_u32(idx, 0)], v, 0);
    v = vsetq_lane_f32(base[vgetq_lane_u32(idx, 1)], v, 1);
    v = vsetq_lane_f32(base[vgetq_lane_u32(idx, 2)], v, 2);
    v = vsetq_lane_f32(base[vgetq_lane_u32(idx, 3)], v, 3);
    return v;
}

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
        for (int k = 0; k < kQuads; ++k) idx[k] = step(idx[k], go_right(load_lanes(level, idx[k]), q));
        level += kLanes << l;
    }
    for (int k = 0; k < kQuads; ++k)
        vst1q_f32(acc + 4 * k, vaddq_f32(vld1q_f32(acc + 4 * k), load_leaves(leaves, idx[k])));
}

void score_range(const PackedView& v, const float* x, int64_t begin, int64_t end, int64_t cols, float* margins) {
    const int G = v.num_groups, D = v.depth;
    const int64_t node_words = kLanes * ((int64_t(1) << D) - 1), leaf_words = int64_t(kLanes) << D;
    const uint32_t* words = reinterpret_cast<const uint32_t*>(v.nodes);
    std::vector<uint32_t> q(kRowBlock * kQStride, kNanRank);
    std::vector<float> acc(kRowBlock * kLanes);
    TopLevels top;
    for (int64_t r0 = begin; r0 < end; r0 += kRowBlock) {
        const int64_t n = std::min(kRowBlock, end - r0);
        for (int64_t r = 0; r < n; ++r)
            for (int f = 0; f < v.num_features; ++f)
                q[r * kQStride + f] = gpu::rank_word(v.cuts + v.cut_offset()[f], v.cut_steps()[f],
                                                     x[(r0 + r) * cols + f], v.less_equal);
        for (int64_t r = 0; r < n; ++r) std::fill(margins + (r0 + r) * G, margins + (r0 + r + 1) * G, 0.0f);
        int64_t b = 0;
        while (b < v.units) {
            const int g = v.block_group()[b];
            std::fill(acc.begin(), acc.end(), 0.0f);
            for (; b < v.units && v.block_group()[b] == g; ++b) {
                load_top(words + b * node_words, D, top);
                for (int64_t r = 0; r < n; ++r)
                    walk_row(words + b * node_words, v.leaves + b * leaf_words, D, top, q.data() + r * kQStride,
                             acc.data() + r * kLanes);
            }
            for (int64_t r = 0; r < n; ++r) {
                float s = 0.0f;  // lane order, as the portable path
                for (int lane = 0; lane < kLanes; ++lane) s += acc[r * kLanes + lane];
                margins[(r0 + r) * G + g] = s;
            }
        }
    }
}

}  // namespace

bool neon_compiled() { return true; }

void score_perfect_neon(const PackedView& v, const float* x, int64_t rows, int64_t cols, float* margins) {
    parallel_for(0, rows, kRowBlock, [&](int64_t begin, int64_t end) { score_range(v, x, begin, end, cols, margins); });
}

}  // namespace pg_predict::kernels::detail

#else  // not AArch64

#include "pg_predict/common/error.hpp"

namespace pg_predict::kernels::detail {
bool neon_compiled() { return false; }
void score_perfect_neon(const PackedView&, const float*, int64_t, int64_t, float*) {
    fail(ErrorCategory::Internal, "native tree kernel: NEON path not compiled");
}
}  // namespace pg_predict::kernels::detail

#endif
