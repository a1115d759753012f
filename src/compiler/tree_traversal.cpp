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

    // Linear leaves (LightGBM linear_tree): per node K slots of (input, coefficient, used),
    // its constant and whether it is a linear leaf; at the reached leaf, in double,
    // const + sum(coeff * x) unless one of its inputs is NaN.
    size_t K = 0;
    for (const spec::Tree& tree : e.trees)
        for (const auto& f : tree.linear_feature) K = std::max(K, f.size());
    const bool linear = e.has_linear_leaves();
    if (linear) {
        K = std::max<size_t>(K, 1);
        check_program_bytes(M * static_cast<int64_t>(K) * (8 + 8 + 1) + M * 9, Strategy::TreeTraversal);
        std::vector<int64_t> lin_feature(M * K, 0);
        std::vector<double> lin_coeff(M * K, 0.0), lin_const(M, 0.0);
        std::vector<uint8_t> lin_used(M * K, 0), lin_leaf(M, 0);
        int64_t base = 0;
        for (const spec::Tree& tree : e.trees) {
            for (size_t n = 0; tree.is_linear() && n < tree.size(); ++n) {
                if (!tree.is_leaf(n)) continue;
                const int64_t g = base + static_cast<int64_t>(n);
                lin_leaf[g] = 1;
                lin_const[g] = tree.linear_const[n];
                for (size_t k = 0; k < tree.linear_feature[n].size(); ++k) {
                    lin_feature[g * K + k] = tree.linear_feature[n][k];
                    lin_coeff[g * K + k] = tree.linear_coeff[n][k];
                    lin_used[g * K + k] = 1;
                }
            }
            base += static_cast<int64_t>(tree.size());
        }
        const int64_t k = static_cast<int64_t>(K);
        parts.buffers.push_back(make_i64("tt_lin_feature", {M, k}, std::move(lin_feature)));
        parts.buffers.push_back(make_f64("tt_lin_coeff", {M, k}, std::move(lin_coeff)));
        parts.buffers.push_back(make_bool("tt_lin_used", {M, k}, std::move(lin_used)));
        parts.buffers.push_back(make_f64("tt_lin_const", {M}, std::move(lin_const)));
        parts.buffers.push_back(make_bool("tt_lin_leaf", {M}, std::move(lin_leaf)));
    }

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
    if (linear) {
        const std::string t = std::to_string(T), k = std::to_string(K);
        s += "    flat = idx.reshape(-1)\n"
             "    xv = x.gather(1, self.tt_lin_feature.index_select(0, flat).view(-1, " + t + " * " + k + ")).double()"
             ".view(-1, " + t + ", " + k + ")\n"
             "    used = self.tt_lin_used.index_select(0, flat).view(-1, " + t + ", " + k + ")\n"
             "    terms = torch.where(used, self.tt_lin_coeff.index_select(0, flat).view(-1, " + t + ", " + k +
             ") * xv, torch.zeros_like(xv))\n"
             "    lin = self.tt_lin_const.index_select(0, flat).view(-1, " + t + ") + terms.sum(2)\n"
             "    nan = torch.logical_and(torch.isnan(xv), used).any(2)\n"
             "    use = torch.logical_and(self.tt_lin_leaf.index_select(0, flat).view(-1, " + t +
             "), torch.logical_not(nan))\n"
             "    per_tree = torch.where(use, lin.float(), per_tree)\n";
    }
    s += reduce_trees_source(e, parts, "    ");
    s += "    return margin\n";
    parts.source += s;
    parts.chunk_rows = traversal_chunk_rows(T);
}

}  // namespace pg_predict::compiler
