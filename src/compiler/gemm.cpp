// GEMM strategy (Hummingbird §4.1): per tree, which internal nodes send a row left, times a
// node × leaf path matrix, equals a leaf's count of left edges exactly for the leaf reached.
// Trees are padded to the largest internal/leaf counts and stacked for batched matmul.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "pg_predict/common/interrupt.hpp"
#include "program_parts.hpp"

namespace pg_predict::compiler {
namespace {

// Internal nodes and leaves of one tree in DFS order, with each leaf's root path.
struct TreePaths {
    std::vector<int32_t> internal;                        // spec node ids
    std::vector<int32_t> leaves;                          // spec node ids
    std::vector<std::vector<std::pair<int, bool>>> path;  // per leaf: (internal pos, went left)
};

TreePaths collect(const spec::Tree& tree) {
    TreePaths out;
    struct Frame {
        int32_t node;
        std::vector<std::pair<int, bool>> path;
    };
    std::vector<Frame> frames{{0, {}}};  // iterative DFS, left subtree first
    while (!frames.empty()) {
        Frame f = std::move(frames.back());
        frames.pop_back();
        if (tree.is_leaf(f.node)) {
            out.leaves.push_back(f.node);
            out.path.push_back(std::move(f.path));
            continue;
        }
        const int pos = static_cast<int>(out.internal.size());
        out.internal.push_back(f.node);
        Frame right{tree.right[f.node], f.path};
        right.path.emplace_back(pos, false);
        f.path.emplace_back(pos, true);
        frames.push_back(std::move(right));
        frames.push_back({tree.left[f.node], std::move(f.path)});
    }
    return out;
}

}  // namespace

void build_gemm(const spec::TreeEnsemble& e, ProgramParts& parts) {
    const int64_t T = static_cast<int64_t>(e.trees.size());
    const SplitCode code = split_code(e);
    std::vector<TreePaths> trees;
    trees.reserve(T);
    int64_t I = 0, L = 1;
    for (const spec::Tree& tree : e.trees) {
        check_interrupts();
        trees.push_back(collect(tree));
        I = std::max<int64_t>(I, trees.back().internal.size());
        L = std::max<int64_t>(L, trees.back().leaves.size());
    }
    check_program_bytes(T * I * (8 + 4 + 1) + T * I * L * 4 + T * L * 8, Strategy::Gemm);

    std::vector<int64_t> feature(T * I, 0);
    std::vector<float> threshold(T * I, 0.0f);
    std::vector<uint8_t> default_left(T * I, 1);
    std::vector<float> paths(T * I * L, 0.0f);
    std::vector<float> left_edges(T * L, -1.0f);  // padded leaves can never match
    std::vector<float> value(T * L, 0.0f);
    for (int64_t t = 0; t < T; ++t) {
        const spec::Tree& tree = e.trees[t];
        const TreePaths& tp = trees[t];
        for (size_t i = 0; i < tp.internal.size(); ++i) {
            const int32_t node = tp.internal[i];
            feature[t * I + i] = split_column(code, tree.feature[node], tree.default_left[node]);
            threshold[t * I + i] = tree.threshold[node];
            default_left[t * I + i] = tree.default_left[node] ? 1 : 0;
        }
        for (size_t l = 0; l < tp.leaves.size(); ++l) {
            int lefts = 0;
            for (auto [pos, went_left] : tp.path[l]) {
                paths[(t * I + pos) * L + l] = went_left ? 1.0f : -1.0f;
                lefts += went_left;
            }
            left_edges[t * L + l] = static_cast<float>(lefts);
            value[t * L + l] = tree.value[tp.leaves[l]];
        }
    }
    parts.buffers.push_back(make_i64("gemm_feature", {T * I}, std::move(feature)));
    parts.buffers.push_back(make_f32("gemm_threshold", {T, I}, std::move(threshold)));
    if (!code.folded) parts.buffers.push_back(make_bool("gemm_default_left", {T, I}, std::move(default_left)));
    parts.buffers.push_back(make_f32("gemm_paths", {T, I, L}, std::move(paths)));
    parts.buffers.push_back(make_f32("gemm_left_edges", {T, 1, L}, std::move(left_edges)));
    parts.buffers.push_back(make_f32("gemm_value", {T, L, 1}, std::move(value)));

    // Node values are selected (index_select), not X·A: inf * 0 would be NaN.
    const std::string sT = std::to_string(T), sI = std::to_string(I);
    std::string s = "def margin(self, x: Tensor) -> Tensor:\n"
                    "    n = x.size(0)\n" +
                    inputs_source(code, "    ") +
                    "    v = xa.index_select(1, self.gemm_feature).view(n, " + sT + ", " + sI + ")\n"
                    "    left = " + go_left_expr(code, "v", "self.gemm_threshold",
                                                 "self.gemm_default_left") + "\n"
                    "    hits = torch.bmm(left.float().transpose(0, 1), self.gemm_paths)\n"
                    "    fired = (hits == self.gemm_left_edges).float()\n"
                    // Contiguous before the sum over trees: summed across a transposed view, the
                    // order of the additions depended on the rows in the batch, so a row's score
                    // changed in its last bits with the batch size (issue 46's oracle found it).
                    "    per_tree = torch.bmm(fired, self.gemm_value).squeeze(2).t().contiguous()\n";
    s += reduce_trees_source(e, parts, "    ");
    s += "    return margin\n";
    parts.source += s;

    // Intermediates are ~3 floats per row, tree and node/leaf: keep a chunk near 64 MiB.
    const int64_t per_row = std::max<int64_t>(1, T * (I + L) * 12);
    parts.chunk_rows = std::max<int64_t>(1, (int64_t(64) << 20) / per_row);
}

}  // namespace pg_predict::compiler
