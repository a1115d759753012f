// Exact path-dependent TreeSHAP (Lundberg et al., "Consistent individualized feature attribution
// for tree ensembles"; XGBoost's TreeShap in src/tree/tree_model.cc) over float32 batches.
//
// Layout: the recursion of the original algorithm is unrolled at pack time into one entry per
// leaf (GPUTreeShap's reformulation): the leaf's value and its path's unique features
// ("elements"), each with its zero fraction (the product of cover(child) / cover(parent) over
// the path's edges that split on it) and its edges. For a row, an element's one fraction is 1
// when the row takes every one of its edges, else 0; the leaf then adds, per element,
// UnwoundPathSum × (one - zero) × value to its feature, exactly what the recursion adds at that
// leaf.
//
// Tables (Yang's Fast TreeSHAP v2, extended to whole subtrees): the leaves under a node m add,
// for a row, a function of a few bits of the row only: per player on the path from the root to
// m, whether the row takes all of that player's edges there ("terms" of the path), and per
// split node below m, whether the row goes left there (a term of one edge). Every leaf's
// combination of one fractions follows from those bits, so the subtree's contributions for each
// of the 2^terms combinations are summed at pack time into one float32 table, [2^terms][slot]
// (a slot per player of the subtree: a row's reads share a cache line). A row then finds its
// combination (an integer built from bit masks) and adds one number per slot. A single leaf is
// the subtree with no split: its terms are its path's unique features, as in Fast TreeSHAP v2.
// Which nodes root the tabled subtrees is chosen per tree at pack time (fewest table reads per
// row, tables kept small, all of them within a budget; see ShapPacking). Leaves no table may
// cover (more unique features than a table may index) are "untabled paths": their O(d²) path
// arithmetic runs per block of rows.
//
// Rows go in blocks of 64 (a node's decisions for the block are one 64-bit mask), and 16 blocks
// go through a tree before the next one, so that a tree's tables are read from memory once per
// 1024 rows. The block evaluation has a portable reference and an AVX-512 path that gives the
// same bits: each row adds the same float32 numbers in the same order.
//
#pragma once

#include <cstdint>
#include <vector>

#include "pg_predict/kernels/tree_ensemble.hpp"  // Isa

namespace pg_predict::spec { struct TreeEnsemble; }

namespace pg_predict::kernels {

constexpr int kMaxTableElements = 10;                  // terms of a table, at most
constexpr int64_t kMaxTableValues = int64_t(1) << 25;  // 128 MB of floats in all

// How pack_shap tables a tree. The defaults are what the bench measured best; tests shrink them
// to reach every path of the kernel.
struct ShapPacking {
    int leaf_terms = kMaxTableElements;  // a leaf's own table: at most this many unique features
    int subtree_terms = 8;               // a table of several leaves: at most this many terms
    int64_t max_values = kMaxTableValues;
};

enum ShapMetaSlot : int {
    kShapPlayers = 0,   // F: contributions per group are F values plus the bias
    kShapGroups,
    kShapColumns,       // the model columns a row has
    kShapComparison,    // 0: x < t goes left, 1: x <= t
    kShapTrees,
    kShapMaxElements,   // the longest untabled path's unique features
    kShapMaxNodes,      // the largest tree's nodes
    kShapMetaSize
};

struct PackedShap {
    std::vector<int64_t> meta;         // kShapMetaSize
    // per tree: node offset, nodes, path offset, paths, group, subtree offset, subtrees
    std::vector<int32_t> trees;
    std::vector<int32_t> nodes;        // per node: column (-1 at a leaf), default_left
    std::vector<float> thresholds;     // per node
    std::vector<int32_t> edges;        // per edge: node (in its tree) * 2 + (1: goes left)
    // Tabled subtrees: per subtree term offset, terms, slot offset, slots, table offset.
    std::vector<int32_t> subtrees;
    std::vector<int32_t> terms;        // per term: edge offset, edges (bit 1: the row takes all)
    std::vector<int32_t> slots;        // per slot: player
    // Per subtree [2^terms][slots] contributions (leaf values included); bit k of the index is
    // term k.
    std::vector<float> tables;
    // Untabled paths: per path element offset, elements; per element player, edge offset, edges.
    std::vector<int32_t> paths;
    std::vector<double> path_values;   // per path: its leaf's value
    std::vector<int32_t> elements;
    std::vector<double> zero_fractions;  // per element
    // Per group the sum of the trees' expected values (the cover-weighted mean of their leaves):
    // the bias, before the model's base margin.
    std::vector<double> expected;
};

// `player[c]`: the player of model column c (in [0, players)); every column a split reads must
// have one. Every tree must have covers (spec::Tree::cover). Throws Error(InvalidModel)
// otherwise.
PackedShap pack_shap(const spec::TreeEnsemble&, const std::vector<int32_t>& player, int32_t players,
                     const ShapPacking& packing = {});

// A non-owning view of the packed arrays (from a PackedShap or from a program's tensors),
// checked: sizes agree, offsets and indices in range.
struct ShapView {
    int32_t players = 0, groups = 1, columns = 0, max_elements = 0, max_nodes = 0;
    bool less_equal = false;
    int64_t num_trees = 0;
    const int32_t* trees = nullptr;
    const int32_t* nodes = nullptr;
    const float* thresholds = nullptr;
    const int32_t* edges = nullptr;
    const int32_t* subtrees = nullptr;
    const int32_t* terms = nullptr;
    const int32_t* slots = nullptr;
    const float* tables = nullptr;
    const int32_t* paths = nullptr;
    const double* path_values = nullptr;
    const int32_t* elements = nullptr;
    const double* zero_fractions = nullptr;
};
// The arrays in PackedShap's order, each with its length.
template <typename T>
struct ShapArray {
    const T* data;
    int64_t size;
};
struct ShapArrays {
    ShapArray<int64_t> meta;
    ShapArray<int32_t> trees, nodes;
    ShapArray<float> thresholds;
    ShapArray<int32_t> edges, subtrees, terms, slots;
    ShapArray<float> tables;
    ShapArray<int32_t> paths;
    ShapArray<double> path_values;
    ShapArray<int32_t> elements;
    ShapArray<double> zero_fractions;
};
ShapArrays shap_arrays(const PackedShap&);
ShapView make_shap_view(const ShapArrays&);

// out [rows × groups·(players + 1)]: per group each player's contribution, then the bias slot;
// `bias` (that many floats, or null for zeros) is added to every row last, in float32: the
// program passes the expected values and the base margin there. (Adding it here rather than as a
// torch op afterwards keeps torch's OpenMP threads, which spin, out of the query.) x is
// [rows × cols], cols == the view's columns; NaN takes each node's default direction. Runs on
// `threads`. `isa`: Avx512 takes the AVX-512 path (where this build and CPU have it, else it
// throws Error(Unsupported)), any other the portable one; Auto the widest available.
void tree_shap(const ShapView&, const float* x, int64_t rows, int64_t cols, float* out, int threads,
               Isa isa = Isa::Auto, const float* bias = nullptr);

// Referenced from the compiler so that a static link keeps the op's registration.
int shap_op_anchor();

namespace detail {
// One block of rows, evaluated together (tree_shap_block.cpp, tree_shap_avx512.cpp).
constexpr int kShapBlock = 64;  // rows: a node's decisions are one 64-bit mask
struct ShapBlock {
    int rows = 0;               // valid rows, ≤ kShapBlock
    std::vector<float> x;       // [column][kShapBlock]: the rows transposed, 0 past `rows`
    std::vector<uint64_t> nan;  // [column]: rows whose value is NaN
    std::vector<uint64_t> left; // [node of the tree]: rows going left there
    std::vector<float> phi;     // [group·(players+1) + player][kShapBlock]
    std::vector<double> one, weight;  // untabled paths: [element][row], [depth][row]
};
// Both add one tree's contributions to the blocks' phi (zeroed by the caller): the tree's
// decisions for every block first, then each table over all blocks (it stays in cache).
void shap_tree_portable(const ShapView&, const int32_t* tree, ShapBlock* blocks, int count);
bool shap_avx512_compiled();
void shap_tree_avx512(const ShapView&, const int32_t* tree, ShapBlock* blocks, int count);
// The block's rows that take every one of the edges (node * 2 + left) [first_edge, + edges).
inline uint64_t shap_term(const ShapView& v, const ShapBlock& b, int32_t first_edge, int32_t edges) {
    uint64_t rows = ~uint64_t(0);
    for (int32_t j = first_edge; j < first_edge + edges; ++j) {
        const int32_t e = v.edges[j];
        const uint64_t left = b.left[size_t(e / 2)];
        rows &= (e & 1) ? left : ~left;
    }
    return rows;
}
// Shared by both: one tree's untabled paths.
void shap_untabled_paths(const ShapView&, const int32_t* tree, ShapBlock& b);
}  // namespace detail

}  // namespace pg_predict::kernels
