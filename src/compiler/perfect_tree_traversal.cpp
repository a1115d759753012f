// PerfectTreeTraversal strategy (Hummingbird §4.1): every tree padded to a perfect tree of
// the ensemble's depth D, so children are computed instead of stored. Node tables are kept
// per level, indexed by tree * 2^level + position, which makes the step
// index = 2 * index + go_right with no per-tree offsets; level 0 needs no gather at all.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "pg_predict/common/interrupt.hpp"
#include "program_parts.hpp"

namespace pg_predict::compiler {
namespace {

struct Levels {
    int depth;
    std::vector<std::vector<int64_t>> feature;       // [level][tree * 2^level + pos]
    std::vector<std::vector<float>> threshold;
    std::vector<std::vector<uint8_t>> default_left;
    std::vector<float> value;                        // [tree * 2^depth + pos]
};

void place(const spec::Tree& tree, const SplitCode& code, int32_t node, int level, int64_t tree_index, int64_t pos,
           Levels& out) {
    if (tree.is_leaf(node)) {
        // A shallow leaf owns all 2^(D - level) leaves of its padded subtree.
        const int64_t span = int64_t(1) << (out.depth - level);
        const int64_t first = (tree_index << out.depth) + pos * span;
        std::fill(out.value.begin() + first, out.value.begin() + first + span, tree.value[node]);
        return;
    }
    const int64_t g = (tree_index << level) + pos;
    out.feature[level][g] = split_column(code, tree.feature[node], tree.default_left[node]);
    out.threshold[level][g] = tree.threshold[node];
    out.default_left[level][g] = tree.default_left[node] ? 1 : 0;
    place(tree, code, tree.left[node], level + 1, tree_index, 2 * pos, out);
    place(tree, code, tree.right[node], level + 1, tree_index, 2 * pos + 1, out);
}

}  // namespace

void build_perfect_tree_traversal(const spec::TreeEnsemble& e, ProgramParts& parts) {
    const int64_t T = static_cast<int64_t>(e.trees.size());
    const int D = e.max_depth();
    const SplitCode code = split_code(e);
    if (D > 40) check_program_bytes(INT64_MAX, Strategy::PerfectTreeTraversal);
    check_program_bytes(T * ((int64_t(1) << D) - 1) * (8 + 4 + 1) + T * (int64_t(4) << D),
                        Strategy::PerfectTreeTraversal);

    Levels lv;
    lv.depth = D;
    for (int l = 0; l < D; ++l) {
        lv.feature.emplace_back(T << l, 0);
        lv.threshold.emplace_back(T << l, 0.0f);
        lv.default_left.emplace_back(T << l, 1);
    }
    lv.value.assign(T << D, 0.0f);
    for (int64_t t = 0; t < T; ++t) {
        check_interrupts();
        place(e.trees[t], code, 0, 0, t, 0, lv);
    }

    const std::string sT = std::to_string(T);
    std::string s = "def margin(self, x: Tensor) -> Tensor:\n" + inputs_source(code, "    ");
    if (D == 0) {
        s += "    per_tree = self.ptt_value.expand(x.size(0), " + sT + ").contiguous()\n";
    }
    for (int l = 0; l < D; ++l) {
        const std::string n = std::to_string(l);
        parts.buffers.push_back(make_i64("ptt_feature_" + n, {T << l}, std::move(lv.feature[l])));
        parts.buffers.push_back(make_f32("ptt_threshold_" + n, {T << l}, std::move(lv.threshold[l])));
        if (!code.folded)
            parts.buffers.push_back(make_bool("ptt_default_left_" + n, {T << l}, std::move(lv.default_left[l])));
        const std::string f = "self.ptt_feature_" + n, t = "self.ptt_threshold_" + n,
                          d = "self.ptt_default_left_" + n;
        if (l == 0) {
            // Every row is at its tree's root: the level's tables broadcast over rows.
            s += "    right = " + go_right_expr(code, "xa.index_select(1, " + f + ")", t, d) + "\n";
            s += "    idx = self.ptt_twice_tree + right\n";
        } else {
            s += "    v = xa.gather(1, " + lookup_expr(f, "idx", T) + ")\n";
            s += "    right = " + go_right_expr(code, "v", lookup_expr(t, "idx", T), lookup_expr(d, "idx", T)) + "\n";
            s += "    idx = torch.add(right, idx, alpha=2)\n";
        }
    }
    if (D > 0) {
        std::vector<int64_t> twice(T);
        for (int64_t t = 0; t < T; ++t) twice[t] = 2 * t;
        parts.buffers.push_back(make_i64("ptt_twice_tree", {T}, std::move(twice)));
        s += "    per_tree = " + lookup_expr("self.ptt_value", "idx", T) + "\n";
    }
    parts.buffers.push_back(make_f32("ptt_value", {D == 0 ? int64_t(1) : T << D, D == 0 ? T : int64_t(1)},
                                     std::move(lv.value)));
    s += reduce_trees_source(e, parts, "    ");
    s += "    return margin\n";
    parts.source += s;
    parts.chunk_rows = traversal_chunk_rows(T);
}

}  // namespace pg_predict::compiler
