// TreeSHAP: the checked view of the packed arrays (see kernels/tree_shap.hpp). Every offset and
// index the kernel follows is checked here once per call, so the kernel itself trusts them.
#include <string>

#include "pg_predict/common/error.hpp"
#include "pg_predict/kernels/tree_shap.hpp"

namespace pg_predict::kernels {

namespace {

[[noreturn]] void bad_view(const std::string& why) { fail(ErrorCategory::InvalidModel, "tree_shap: " + why); }

template <typename T>
ShapArray<T> array(const std::vector<T>& v) {
    return {v.data(), static_cast<int64_t>(v.size())};
}

// An edge (node * 2 + left) of a tree of `nodes` nodes at `node0` must be a split.
bool is_split_edge(const ShapArrays& a, const int32_t* tree, int32_t edge) {
    return edge >= 0 && edge / 2 < tree[1] && a.nodes.data[2 * (int64_t(tree[0]) + edge / 2)] >= 0;
}

bool edges_ok(const ShapArrays& a, const int32_t* tree, int32_t first, int32_t count) {
    if (first < 0 || count < 1 || int64_t(first) + count > a.edges.size) return false;
    for (int32_t j = first; j < first + count; ++j)
        if (!is_split_edge(a, tree, a.edges.data[j])) return false;
    return true;
}

}  // namespace

ShapArrays shap_arrays(const PackedShap& p) {
    return {array(p.meta),  array(p.trees), array(p.nodes),       array(p.thresholds),
            array(p.edges), array(p.subtrees), array(p.terms),    array(p.slots),
            array(p.tables), array(p.paths), array(p.path_values), array(p.elements),
            array(p.zero_fractions)};
}

ShapView make_shap_view(const ShapArrays& a) {
    if (a.meta.size != kShapMetaSize) bad_view("meta has " + std::to_string(a.meta.size) + " entries");
    const int64_t* meta = a.meta.data;
    ShapView v;
    v.players = static_cast<int32_t>(meta[kShapPlayers]);
    v.groups = static_cast<int32_t>(meta[kShapGroups]);
    v.columns = static_cast<int32_t>(meta[kShapColumns]);
    v.less_equal = meta[kShapComparison] != 0;
    v.num_trees = meta[kShapTrees];
    v.max_elements = static_cast<int32_t>(meta[kShapMaxElements]);
    v.max_nodes = static_cast<int32_t>(meta[kShapMaxNodes]);
    if (v.players < 0 || v.groups < 1 || v.columns < 0 || v.num_trees < 0 || v.max_elements < 0 ||
        v.max_nodes < 0 || meta[kShapMaxNodes] > a.thresholds.size || meta[kShapMaxElements] > a.zero_fractions.size || a.trees.size != 7 * v.num_trees ||
        a.nodes.size != 2 * a.thresholds.size || a.paths.size != 2 * a.path_values.size ||
        a.elements.size != 3 * a.zero_fractions.size || a.subtrees.size % 5 != 0 || a.terms.size % 2 != 0)
        bad_view("inconsistent sizes");
    for (int64_t t = 0; t < v.num_trees; ++t) {
        const int32_t* tr = a.trees.data + 7 * t;
        if (tr[0] < 0 || tr[1] < 1 || tr[1] > v.max_nodes || int64_t(tr[0]) + tr[1] > a.thresholds.size ||
            tr[2] < 0 || tr[3] < 0 || int64_t(tr[2]) + tr[3] > a.path_values.size || tr[4] < 0 ||
            tr[4] >= v.groups || tr[5] < 0 || tr[6] < 0 || 5 * (int64_t(tr[5]) + tr[6]) > a.subtrees.size)
            bad_view("tree " + std::to_string(t) + " is out of range");
        for (int32_t n = 0; n < tr[1]; ++n)
            if (a.nodes.data[2 * (tr[0] + n)] >= v.columns) bad_view("a node reads a column out of range");
        for (int32_t s = tr[5]; s < tr[5] + tr[6]; ++s) {
            const int32_t* st = a.subtrees.data + 5 * s;
            const int32_t term0 = st[0], terms = st[1], slot0 = st[2], slots = st[3], table = st[4];
            if (term0 < 0 || terms < 0 || terms > kMaxTableElements || 2 * (int64_t(term0) + terms) > a.terms.size ||
                slot0 < 0 || slots < 0 || int64_t(slot0) + slots > a.slots.size || table < 0 ||
                int64_t(table) + (int64_t(slots) << terms) > a.tables.size)
                bad_view("a subtree's table is out of range");
            for (int32_t k = term0; k < term0 + terms; ++k)
                if (!edges_ok(a, tr, a.terms.data[2 * k], a.terms.data[2 * k + 1])) bad_view("a term is out of range");
            for (int32_t j = slot0; j < slot0 + slots; ++j)
                if (a.slots.data[j] < 0 || a.slots.data[j] >= v.players) bad_view("a slot's player is out of range");
        }
        for (int32_t q = tr[2]; q < tr[2] + tr[3]; ++q) {
            const int32_t first = a.paths.data[2 * q], count = a.paths.data[2 * q + 1];
            if (first < 0 || count < 0 || count > v.max_elements || int64_t(first) + count > a.zero_fractions.size)
                bad_view("a path is out of range");
            for (int32_t k = first; k < first + count; ++k) {
                const int32_t* el = a.elements.data + 3 * k;
                if (el[0] < 0 || el[0] >= v.players || !edges_ok(a, tr, el[1], el[2]))
                    bad_view("an element is out of range");
            }
        }
    }
    // The checked arrays: the trees, their subtrees' tables, their paths.
    v.trees = a.trees.data, v.nodes = a.nodes.data, v.thresholds = a.thresholds.data, v.edges = a.edges.data;
    v.subtrees = a.subtrees.data, v.terms = a.terms.data, v.slots = a.slots.data, v.tables = a.tables.data;
    v.paths = a.paths.data, v.path_values = a.path_values.data, v.elements = a.elements.data;
    v.zero_fractions = a.zero_fractions.data;
    return v;
}

}  // namespace pg_predict::kernels
