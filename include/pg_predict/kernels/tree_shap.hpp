// Exact path-dependent TreeSHAP (Lundberg et al., "Consistent individualized feature attribution
// for tree ensembles"; XGBoost's TreeShap in src/tree/tree_model.cc) over float32 batches.
//
// Layout: the recursion of the original algorithm is unrolled at pack time into one entry per
// leaf (GPUTreeShap's reformulation): the leaf's value and its path's unique features
// ("elements"), each with its zero fraction (the product of cover(child) / cover(parent) over
// the path's edges that split on it) and its edges. For a row, an element's one fraction is 1
// when the row takes every one of its edges, else 0; the leaf then adds, per element,
// UnwoundPathSum × (one - zero) × value to its feature, exactly what the recursion adds at that
// leaf. Rows are processed in blocks, so the O(depth²) path arithmetic runs over a block's
// rows at once (auto-vectorized loops), with the node decisions computed once per tree.
//
// A path of at most kMaxTableElements unique features also gets a table (Yang's Fast TreeSHAP
// v2): its contributions for each of the 2^d combinations of one fractions, computed at pack
// time, so that a row only finds its combination (d bits) and adds d numbers. Tables stop at
// kMaxTableValues values in all; longer paths, and paths beyond that, are computed per block.
//
// A split reads a model column (after the featurizers); its element is the column's
// "player", the input column it derives from (spec/origins.hpp), so splits on several columns
// of one input (a LightGBM feature's rank and category-set columns, one-hot indicators) are one
// feature of the path, as the library's own TreeSHAP has them.
#pragma once

#include <cstdint>
#include <vector>

namespace pg_predict::spec { struct TreeEnsemble; }

namespace pg_predict::kernels {

constexpr int kMaxTableElements = 10;
constexpr int64_t kMaxTableValues = int64_t(1) << 25;  // 256 MB of doubles

enum ShapMetaSlot : int {
    kShapPlayers = 0,   // F: contributions per group are F values plus the bias
    kShapGroups,
    kShapColumns,       // the model columns a row has
    kShapComparison,    // 0: x < t goes left, 1: x <= t
    kShapTrees,
    kShapMaxElements,   // the longest path's unique features
    kShapMetaSize
};

struct PackedShap {
    std::vector<int64_t> meta;         // kShapMetaSize
    std::vector<int32_t> trees;        // per tree: node offset, nodes, path offset, paths, group
    std::vector<int32_t> nodes;        // per node: column (-1 at a leaf), default_left
    std::vector<float> thresholds;     // per node
    std::vector<int32_t> paths;        // per path: element offset, elements, table offset (-1: none)
    std::vector<double> path_values;   // per path: its leaf's value
    std::vector<int32_t> elements;     // per element: player, edge offset, edges
    std::vector<double> zero_fractions;  // per element
    std::vector<int32_t> edges;        // per edge: node (in its tree) * 2 + (1: goes left)
    // Per tabled path: [2^d masks][d elements] contributions (leaf value included); mask bit e
    // is element e's one fraction.
    std::vector<double> tables;
    // Per group the sum of the trees' expected values (the cover-weighted mean of their leaves):
    // the bias, before the model's base margin.
    std::vector<double> expected;
};

// `player[c]`: the player of model column c (in [0, players)); every column a split reads must
// have one. Every tree must have covers (spec::Tree::cover). Throws Error(InvalidModel)
// otherwise.
// Paths of more than `max_table_elements` unique features get no table (tests pass 0 to check the
// per-block evaluation).
PackedShap pack_shap(const spec::TreeEnsemble&, const std::vector<int32_t>& player, int32_t players,
                     int max_table_elements = kMaxTableElements);

// A non-owning view of the packed arrays (from a PackedShap or from a program's tensors),
// checked: sizes agree, offsets and indices in range.
struct ShapView {
    int32_t players = 0, groups = 1, columns = 0, max_elements = 0;
    bool less_equal = false;
    int64_t num_trees = 0;
    const int32_t* trees = nullptr;
    const int32_t* nodes = nullptr;
    const float* thresholds = nullptr;
    const int32_t* paths = nullptr;
    const double* path_values = nullptr;
    const int32_t* elements = nullptr;
    const double* zero_fractions = nullptr;
    const int32_t* edges = nullptr;
    const double* tables = nullptr;
};
ShapView make_shap_view(const int64_t* meta, int64_t meta_size, const int32_t* trees, int64_t trees_size,
                        const int32_t* nodes, int64_t nodes_size, const float* thresholds, int64_t thresholds_size,
                        const int32_t* paths, int64_t paths_size, const double* path_values, int64_t values_size,
                        const int32_t* elements, int64_t elements_size, const double* zero_fractions,
                        int64_t zeros_size, const int32_t* edges, int64_t edges_size, const double* tables,
                        int64_t tables_size);

// out [rows × groups·(players + 1)]: per group each player's contribution, then 0 in the bias
// slot (the program adds the expected values and the base margin there). x is [rows × cols],
// cols == the view's columns; NaN takes each node's default direction. Runs on `threads`.
void tree_shap(const ShapView&, const float* x, int64_t rows, int64_t cols, float* out, int threads);

// Referenced from the compiler so that a static link keeps the op's registration.
int shap_op_anchor();

}  // namespace pg_predict::kernels
