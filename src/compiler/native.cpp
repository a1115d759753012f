// Native strategy: the ensemble packed for the native kernel (kernels/tree_ensemble.hpp) and
// scored by one TorchScript op, torch.ops.pg_predict.tree_ensemble. The packed arrays are
// module buffers, so the saved program is self-contained: loading it needs only the op's
// registration, which every binary linking the core has (whole-archive link; the anchor
// below is the backstop).
//
// The op returns raw margins [N, groups] (sum of the leaves); forward() from postprocess adds
// the base margin and the link like for every other strategy. The kernel bounds its own
// memory (row blocks), so margin() takes the whole batch: no chunk_rows.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "pg_predict/kernels/tree_ensemble.hpp"
#include "program_parts.hpp"

namespace pg_predict::compiler {
namespace {

// Bytes of the perfect layout: 16-tree blocks per group, each 16 × (2^D - 1) node words and
// 16 × 2^D leaves, plus at most one cut per internal node (padded to < 2× plus one per feature).
int64_t perfect_bytes(const spec::TreeEnsemble& e, int64_t internal_nodes) {
    const int D = e.max_depth();
    if (D > kernels::kMaxPerfectDepth) return INT64_MAX;
    std::vector<int64_t> per_group(static_cast<size_t>(std::max(1, e.num_groups)), 0);
    for (const spec::Tree& t : e.trees)
        if (t.group >= 0 && t.group < e.num_groups) ++per_group[t.group];
    int64_t blocks = 0;
    for (int64_t n : per_group) blocks += (n + kernels::kLanes - 1) / kernels::kLanes;
    return blocks * kernels::kLanes * (int64_t(1) << D) * 8 + (2 * internal_nodes + e.num_features) * 4 +
           (3 * int64_t(e.num_features) + blocks) * 4;
}

}  // namespace

void build_native(const spec::TreeEnsemble& e, ProgramParts& parts) {
    // Keep the op's registrar in statically linked binaries that compile programs.
    static_cast<void>(kernels::native_op_anchor());

    int64_t nodes = 0, internal = 0;
    for (const spec::Tree& t : e.trees) {
        nodes += static_cast<int64_t>(t.size());
        for (size_t n = 0; n < t.size(); ++n) internal += t.is_leaf(n) ? 0 : 1;
    }
    // The generic layout (20 bytes a node, plus the bitvector layout's entries of 12 bytes, often
    // two for a node, and a word of 32 leaves a tree at most wasted) is the fallback when perfect
    // trees would not fit.
    const int64_t trees = static_cast<int64_t>(e.trees.size());
    const int64_t generic = nodes * 20 + trees * 8 +
                            (kernels::choose_layout(e, false) == kernels::Layout::Bitvector
                                 ? internal * 24 + (nodes + 32 * trees) * 4 + trees * 12
                                 : 0);
    const bool allow_perfect = perfect_bytes(e, internal) <= kMaxProgramBytes;
    if (!allow_perfect) check_program_bytes(generic, Strategy::Native);

    kernels::PackedEnsemble packed = kernels::pack(e, allow_perfect);
    // Shapes first: the data vectors are moved into the buffers.
    const auto shape = [](const auto& v) { return std::vector<int64_t>{static_cast<int64_t>(v.size())}; };
    std::vector<int64_t> meta_shape = shape(packed.meta), nodes_shape = shape(packed.nodes),
                         leaves_shape = shape(packed.leaves), cuts_shape = shape(packed.cuts),
                         aux_shape = shape(packed.aux);
    parts.buffers.push_back(make_i64("native_meta", std::move(meta_shape), std::move(packed.meta)));
    parts.buffers.push_back(make_i32("native_nodes", std::move(nodes_shape), std::move(packed.nodes)));
    parts.buffers.push_back(make_f32("native_leaves", std::move(leaves_shape), std::move(packed.leaves)));
    parts.buffers.push_back(make_f32("native_cuts", std::move(cuts_shape), std::move(packed.cuts)));
    parts.buffers.push_back(make_i32("native_aux", std::move(aux_shape), std::move(packed.aux)));
    parts.source +=
        "def margin(self, x: Tensor) -> Tensor:\n"
        "    return ops.pg_predict.tree_ensemble(x, self.native_meta, self.native_nodes, self.native_leaves,\n"
        "                                        self.native_cuts, self.native_aux)\n";
    parts.chunk_rows = 0;
    parts.native_margin = true;
}

}  // namespace pg_predict::compiler
