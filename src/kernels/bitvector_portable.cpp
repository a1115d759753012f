// Portable scoring of the bitvector layout (QuickScorer), one row at a time: the reference the
// AVX2 path matches bit for bit. Per block of trees: every word all ones, then per feature the
// entries the row fails (a prefix of the sorted thresholds; for NaN, the default-right nodes)
// clear their bits; the exit leaf of each tree is its lowest set bit. Leaves add up in tree
// order in float, as the generic walk does, so both layouts give the same margins.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "bitvector.hpp"

namespace pg_predict::kernels::detail {
namespace {

constexpr int64_t kRowBlock = 64;

template <bool LessEqual>
void fail_nodes(float x, const PackedView::Bitvectors& b, int64_t e0, int64_t e1, uint32_t* state) {
    if (std::isnan(x)) {  // NaN fails exactly the default-right nodes
        for (int64_t i = e0; i < e1; ++i)
            if (b.entry[2 * i] < 0) state[b.entry[2 * i] & INT32_MAX] &= ~static_cast<uint32_t>(b.entry[2 * i + 1]);
        return;
    }
    for (int64_t i = e0; i < e1; ++i) {
        // x <= t (or x < t) goes left; thresholds ascend, so the first node passed ends the run
        if (LessEqual ? !(x > b.threshold[i]) : !(x >= b.threshold[i])) return;
        state[b.entry[2 * i] & INT32_MAX] &= ~static_cast<uint32_t>(b.entry[2 * i + 1]);
    }
}

}  // namespace

void score_bitvector_portable(const PackedView& v, const float* x, int64_t rows, int64_t cols, float* margins) {
    const PackedView::Bitvectors& b = v.bits;
    const int G = v.num_groups;
    const int64_t F = v.num_features;
    parallel_for(0, rows, kRowBlock, [&](int64_t begin, int64_t end) {
        std::vector<uint32_t> state(kBitvectorBlockWords);
        for (int64_t r = begin; r < end; ++r) std::fill(margins + r * G, margins + (r + 1) * G, 0.0f);
        for (int64_t k = 0; k < b.blocks; ++k) {
            for (int64_t r = begin; r < end; ++r) {
                const float* row = x + r * cols;
                std::fill(state.begin(), state.begin() + b.block_words[k], ~0u);
                for (int64_t f = 0; f < F; ++f) {
                    const int64_t e0 = b.entry_begin[k * F + f], e1 = b.entry_begin[k * F + f + 1];
                    if (v.less_equal) fail_nodes<true>(row[f], b, e0, e1, state.data());
                    else fail_nodes<false>(row[f], b, e0, e1, state.data());
                }
                float* m = margins + r * G;
                for (int64_t t = b.block_tree[k]; t < b.block_tree[k + 1]; ++t) {
                    const uint32_t* w = state.data() + b.tree_slot[t];
                    int word = 0;
                    while (word + 1 < b.tree_words[t] && w[word] == 0) ++word;
                    // A valid model always leaves its exit leaf's bit set; a corrupt one reads
                    // bit 1, as the AVX2 path does.
                    const int bit = w[word] != 0 ? __builtin_ctz(w[word]) : 1;
                    m[v.tree_group()[t]] += b.leaves[b.leaf_base[t] + 32 * word + bit];
                }
            }
        }
    });
}

}  // namespace pg_predict::kernels::detail
