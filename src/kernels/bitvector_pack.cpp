// The bitvector layout (QuickScorer): packing it beside the generic layout's arrays, and the
// checks make_view runs so that scoring never reads out of bounds, whatever the buffers hold.
//
// Leaves are numbered left to right within their tree. An internal node whose left subtree holds
// leaves [a, m) clears those bits when a row goes right; where [a, m) spans several 32-bit words
// it becomes one entry per word. Trees are cut into blocks of consecutive trees of at most
// kBitvectorBlockWords words (one block's state stays in L1 for 8 rows); within a block the
// entries of each feature are sorted by threshold, so a row's failed nodes are a prefix.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "pg_predict/common/error.hpp"
#include "pg_predict/common/interrupt.hpp"
#include "bitvector.hpp"
#include "pg_predict/spec/pipeline.hpp"

namespace pg_predict::kernels::detail {
namespace {

constexpr int kWordBits = kBitvectorWordBits;
constexpr int kMaxTreeWords = kMaxBitvectorLeaves / kWordBits;

[[noreturn]] void bad_model(const std::string& what) {
    fail(ErrorCategory::InvalidModel, "native tree kernel: " + what);
}

struct Entry {
    float threshold;
    int32_t slot;   // word within the block, | default_right << 31
    uint32_t clear;
};

// Leaves of each node's subtree, left to right: first[n] .. end[n] (exclusive).
struct LeafRanges {
    std::vector<int32_t> first, end;
    int32_t leaves = 0;
};

LeafRanges leaf_ranges(const spec::Tree& t) {
    LeafRanges r;
    r.first.assign(t.size(), 0);
    r.end.assign(t.size(), 0);
    // Iterative in-order walk: (node, children done?)
    std::vector<std::pair<int32_t, bool>> stack{{0, false}};
    while (!stack.empty()) {
        auto [n, done] = stack.back();
        stack.pop_back();
        if (t.is_leaf(n)) {
            r.first[n] = r.leaves;
            r.end[n] = ++r.leaves;
        } else if (!done) {
            stack.push_back({n, true});
            stack.push_back({t.right[n], false});
            stack.push_back({t.left[n], false});
        } else {
            r.first[n] = r.first[t.left[n]];
            r.end[n] = r.end[t.right[n]];
        }
    }
    return r;
}

int32_t leaf_count(const spec::Tree& t) {
    int32_t n = 0;
    for (size_t i = 0; i < t.size(); ++i) n += t.is_leaf(i) ? 1 : 0;
    return n;
}

}  // namespace

bool bitvector_eligible(const spec::TreeEnsemble& e) {
    // Every feature is a loop over its entries for each 16 rows: very wide rows stay generic.
    if (e.trees.empty() || e.num_features > kBitvectorMaxFeatures) return false;
    for (const spec::Tree& t : e.trees) {
        if (leaf_count(t) > kMaxBitvectorLeaves) return false;
        for (size_t n = 0; n < t.size(); ++n)
            if (!t.is_leaf(n) && std::isnan(t.threshold[n])) return false;  // no order to sort by
    }
    return true;
}

// The perfect layout walks D levels of every tree whatever its shape; the bitvector layout visits
// about every internal node for 16 rows. Measured with bench/kernel_bench (AVX2, 28 features,
// 500 trees, 1 thread): an internal node costs the bitvector layout about 1/7.5 of what one
// tree level costs the perfect one (depth 6 perfect trees: 0.25 s perfect against 0.31 s
// bitvector per 100k rows; depth 8: 0.46 s against 1.0 s; 31 leaves with depth up to 12: 1.04 s
// against 0.18 s). Ensembles of depth ≤ 8 keep the perfect layout whatever their shape: it is
// within 25% there, and its AVX-512 paths are faster still.
bool bitvector_cheaper(const spec::TreeEnsemble& e) {
    if (e.max_depth() <= 8) return false;
    int64_t internal = 0;
    for (const spec::Tree& t : e.trees) internal += static_cast<int64_t>(t.size()) - leaf_count(t);
    return 2 * internal < 15 * static_cast<int64_t>(e.trees.size()) * e.max_depth();
}

// Called after the generic layout's structural checks (pack_generic), on an eligible ensemble.
void pack_bitvectors(const spec::TreeEnsemble& e, PackedEnsemble& p) {
    const int64_t T = static_cast<int64_t>(e.trees.size()), F = e.num_features;
    std::vector<int32_t> block_tree{0}, block_words, tree_slot(T), tree_words(T), leaf_base(T);
    std::vector<int32_t> entry_begin{0}, entry_words;
    std::vector<float> thresholds, bit_leaves;
    std::vector<std::vector<Entry>> by_feature(F);
    int32_t words_in_block = 0;

    auto close_block = [&](int64_t end_tree) {
        for (auto& entries : by_feature) {
            std::stable_sort(entries.begin(), entries.end(),
                             [](const Entry& a, const Entry& b) { return a.threshold < b.threshold; });
            for (const Entry& en : entries) {
                thresholds.push_back(en.threshold);
                entry_words.push_back(en.slot);
                entry_words.push_back(static_cast<int32_t>(en.clear));
            }
            if (thresholds.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
                bad_model("too many nodes for the bitvector layout");
            entry_begin.push_back(static_cast<int32_t>(thresholds.size()));
            entries.clear();
        }
        block_tree.push_back(static_cast<int32_t>(end_tree));
        block_words.push_back(words_in_block);
        words_in_block = 0;
    };

    for (int64_t i = 0; i < T; ++i) {
        check_interrupts();
        const spec::Tree& t = e.trees[i];
        const LeafRanges r = leaf_ranges(t);
        const int32_t words = (r.leaves + kWordBits - 1) / kWordBits;
        if (words_in_block + words > kBitvectorBlockWords) close_block(i);
        tree_slot[i] = words_in_block;
        tree_words[i] = words;
        leaf_base[i] = static_cast<int32_t>(bit_leaves.size());
        bit_leaves.resize(bit_leaves.size() + static_cast<size_t>(words) * kWordBits, 0.0f);
        for (size_t n = 0; n < t.size(); ++n) {
            if (t.is_leaf(n)) {
                bit_leaves[leaf_base[i] + r.first[n]] = t.value[n];
                continue;
            }
            const int32_t a = r.first[n], m = r.end[t.left[n]];  // the left subtree's leaves
            for (int32_t w = a / kWordBits; w <= (m - 1) / kWordBits; ++w) {
                const int32_t lo = std::max(a, w * kWordBits) - w * kWordBits,
                              hi = std::min(m, (w + 1) * kWordBits) - w * kWordBits;
                const uint32_t bits = (hi - lo == kWordBits ? ~0u : ((1u << (hi - lo)) - 1u)) << lo;
                const int32_t slot = (words_in_block + w) | (t.default_left[n] ? 0 : INT32_MIN);
                by_feature[t.feature[n]].push_back({t.threshold[n], slot, bits});
            }
        }
        words_in_block += words;
    }
    close_block(T);

    const int64_t U = static_cast<int64_t>(block_words.size());
    p.meta.resize(kBitvectorMetaSize, 0);
    p.meta[kMetaLayout] = static_cast<int64_t>(Layout::Bitvector);
    p.meta[kMetaBlocks] = U;
    p.meta[kMetaEntries] = static_cast<int64_t>(thresholds.size());
    p.meta[kMetaWords] = static_cast<int64_t>(bit_leaves.size()) / kWordBits;
    if (p.leaves.size() + bit_leaves.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()) ||
        U * F + 1 > std::numeric_limits<int32_t>::max())
        bad_model("too many nodes for the bitvector layout");
    p.nodes.insert(p.nodes.end(), entry_words.begin(), entry_words.end());
    p.leaves.insert(p.leaves.end(), bit_leaves.begin(), bit_leaves.end());
    p.cuts = std::move(thresholds);
    for (const auto* part : {&block_tree, &block_words, &entry_begin, &tree_slot, &tree_words, &leaf_base})
        p.aux.insert(p.aux.end(), part->begin(), part->end());
}

void check_bitvectors(const int64_t* meta, int64_t meta_size, PackedView& v) {
    narrow_bitvectors(meta, meta_size, v);
    const PackedView::Bitvectors& b = v.bits;
    const int64_t U = b.blocks, E = b.entries, W = b.words, T = v.units, F = v.num_features;

    if (b.block_tree[0] != 0 || b.block_tree[U] != T || b.entry_begin[0] != 0 || b.entry_begin[U * F] != E)
        bad_model("bad bitvector blocks");
    for (int64_t k = 0; k < U; ++k) {
        const int32_t bw = b.block_words[k];
        if (b.block_tree[k + 1] <= b.block_tree[k] || bw < 1 || bw > kBitvectorBlockWords)
            bad_model("bad bitvector block " + std::to_string(k));
        for (int64_t t = b.block_tree[k]; t < b.block_tree[k + 1]; ++t)
            if (b.tree_words[t] < 1 || b.tree_words[t] > kMaxTreeWords || b.tree_slot[t] < 0 ||
                b.tree_slot[t] + b.tree_words[t] > bw || b.leaf_base[t] < 0 ||
                int64_t(b.leaf_base[t]) + kWordBits * b.tree_words[t] > W * kWordBits)
                bad_model("bad bitvector tree " + std::to_string(t));
        for (int64_t f = 0; f < F; ++f) {
            const int64_t e0 = b.entry_begin[k * F + f], e1 = b.entry_begin[k * F + f + 1];
            if (e1 < e0 || e1 > E) bad_model("bad bitvector entry offsets");
            for (int64_t i = e0; i < e1; ++i)
                if ((b.entry[2 * i] & INT32_MAX) >= bw || !(b.threshold[i] == b.threshold[i]) ||
                    (i > e0 && !(b.threshold[i - 1] <= b.threshold[i])))
                    bad_model("bad bitvector entry " + std::to_string(i));
        }
    }
}

}  // namespace pg_predict::kernels::detail
