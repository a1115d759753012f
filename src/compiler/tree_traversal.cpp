// TreeTraversal strategy (Hummingbird §4.1): all trees flattened into one node table with
// per-tree offsets; each row walks every tree max_depth times by gathering, and a leaf's
// children point back to itself so rows that arrived early stay put.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "pg_predict/common/interrupt.hpp"
#include "program_parts.hpp"

namespace pg_predict::compiler {

void build_tree_traversal(const spec::TreeEnsemble& e, ProgramParts& parts) {
    const int64_t T = static_cast<int64_t>(e.trees.size());
    const SplitCode code = split_code(e);
    int64_t M = 0;
    for (const spec::Tree& tree : e.trees) M += static_cast<int64_t>(tree.size());
    check_program_bytes(M * (2 * 8 + 8 + 4 + 1 + 4) + T * 8, Strategy::TreeTraversal);

    std::vector<int64_t> root(T), children(2 * M), feature(M, 0);
    std::vector<float> threshold(M, 0.0f), value(M, 0.0f);
    std::vector<uint8_t> default_left(M, 1);
    int64_t offset = 0;
    for (int64_t t = 0; t < T; ++t) {
        check_interrupts();
        const spec::Tree& tree = e.trees[t];
        root[t] = offset;
        for (size_t n = 0; n < tree.size(); ++n) {
            const int64_t g = offset + static_cast<int64_t>(n);
            if (tree.is_leaf(n)) {
                children[2 * g] = children[2 * g + 1] = g;
                value[g] = tree.value[n];
            } else {
                // children[2g + go_right]: one gather picks the child.
                children[2 * g] = offset + tree.left[n];
                children[2 * g + 1] = offset + tree.right[n];
                feature[g] = split_column(code, tree.feature[n], tree.default_left[n]);
                threshold[g] = tree.threshold[n];
                default_left[g] = tree.default_left[n] ? 1 : 0;
            }
        }
        offset += static_cast<int64_t>(tree.size());
    }
    parts.buffers.push_back(make_i64("tt_root", {1, T}, std::move(root)));
    parts.buffers.push_back(make_i64("tt_children", {2 * M}, std::move(children)));
    parts.buffers.push_back(make_i64("tt_feature", {M}, std::move(feature)));
    parts.buffers.push_back(make_f32("tt_threshold", {M}, std::move(threshold)));
    if (!code.folded) parts.buffers.push_back(make_bool("tt_default_left", {M}, std::move(default_left)));
    parts.buffers.push_back(make_f32("tt_value", {M}, std::move(value)));

    const std::string depth = std::to_string(e.max_depth());
    std::string s = "def margin(self, x: Tensor) -> Tensor:\n" + inputs_source(code, "    ") +
                    "    idx = self.tt_root.expand(x.size(0), " + std::to_string(T) + ").contiguous()\n"
                    "    for level in range(" + depth + "):\n"
                    "        v = xa.gather(1, " + lookup_expr("self.tt_feature", "idx", T) + ")\n"
                    "        right = " + go_right_expr(code, "v", lookup_expr("self.tt_threshold", "idx", T),
                                                       lookup_expr("self.tt_default_left", "idx", T)) + "\n"
                    "        slot = torch.add(right, idx, alpha=2)\n"
                    "        idx = " + lookup_expr("self.tt_children", "slot", T) + "\n"
                    "    per_tree = " + lookup_expr("self.tt_value", "idx", T) + "\n";
    s += reduce_trees_source(e, parts, "    ");
    s += "    return margin\n";
    parts.source += s;
    parts.chunk_rows = traversal_chunk_rows(T);
}

}  // namespace pg_predict::compiler
