// The native tree-ensemble kernel (torch-free interface).
//
// A spec::TreeEnsemble is packed once into flat arrays (what the compiled program keeps as
// module buffers) and scored over float32 row-major batches [rows × cols] into raw margins
// [rows × num_groups] (sum of the leaves; no base margin, no link: the program adds those).
//
// Two layouts:
//   Perfect  (depth ≤ kMaxPerfectDepth, ≤ 128 features): trees padded to perfect trees of the
//            ensemble's depth D and gathered in blocks of 16 (one SIMD lane per tree; trees of
//            one output group per block, padded with zero trees). Thresholds are replaced by
//            their rank among the feature's distinct thresholds, so one 32-bit node word holds
//            rank, default direction and feature:  word = rank << 8 | default_left << 7 | feature.
//            Each row's inputs are turned into ranks once (binary search in `cuts`); a node
//            test is then one unsigned integer compare, with exactly the decisions of the float
//            compare (x < t or x <= t; NaN takes the default direction).
//   Bitvector (not perfect, every tree ≤ kMaxBitvectorLeaves leaves: LightGBM's leaf-wise trees,
//            XGBoost's lossguide and deep trees): QuickScorer (Lucchese et al., SIGIR 2015) over
//            the generic layout's arrays. A tree's leaves, left to right, are bits of one or more
//            32-bit words; a node whose test fails (the row goes right) clears the bits of its left
//            subtree, and the leftmost bit left set is the exit leaf. The nodes of a block of trees
//            are sorted by threshold per feature, so a row visits only the nodes it fails, in one
//            branch-free stream, 8 rows at a time with AVX2 (vQS). Same float compares as the
//            generic walk and the same summation (tree order, float): results equal bit for bit.
//            (src/kernels/bitvector.hpp)
//   Generic  (anything else): explicit child pointers, float compares.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace pg_predict::spec { struct TreeEnsemble; }

namespace pg_predict::kernels {

constexpr int kMaxPerfectDepth = 12;
constexpr int kMaxBitvectorLeaves = 256;  // 8 words a tree
constexpr int kLanes = 16;             // trees per block in the perfect layout
constexpr int64_t kFormatVersion = 1;

enum class Layout : int64_t { Perfect = 0, Generic = 1, Bitvector = 2 };

// Which implementation scores the perfect layout: Auto picks the widest one that this build
// compiled and this CPU offers (AVX-512, then AVX2, then NEON on ARM, then portable C++).
enum class Isa { Auto, Portable, Avx2, Avx512, Neon };

// meta[] slots (an int64 tensor in the program).
enum MetaSlot : int {
    kMetaVersion = 0,
    kMetaLayout,
    kMetaFeatures,
    kMetaGroups,
    kMetaComparison,    // 0: x < t goes left, 1: x <= t
    kMetaDepth,         // perfect: padded depth D; generic: max depth
    kMetaUnits,         // perfect: number of 16-tree blocks; generic and bitvector: number of trees
    kMetaSize,
    // The bitvector layout only (its meta has kBitvectorMetaSize slots):
    kMetaBlocks = kMetaSize,  // blocks of consecutive trees, each ≤ kBitvectorBlockWords words
    kMetaEntries,             // node entries (a node spanning k words of its tree has k)
    kMetaWords,               // words of all trees
    kBitvectorMetaSize
};

struct PackedEnsemble {
    std::vector<int64_t> meta;   // kMetaSize
    // perfect: per block 16 × (2^D - 1) node words, level l at 16·(2^l - 1), entry lane·2^l + pos
    // generic: per node 4 words {feature | default_left << 31, threshold bits, left, right}
    std::vector<int32_t> nodes;
    // perfect: per block 16 × 2^D leaf values, entry lane·2^D + pos.  generic: per node value
    std::vector<float> leaves;
    // perfect: per feature its sorted distinct thresholds, padded with NaN to 2^k - 1 entries
    // (k = cut_steps[f]) then one more NaN; generic: empty
    std::vector<float> cuts;
    // perfect: cut_offset[F + 1], cut_steps[F], block_group[units]
    // generic: tree_root[T], tree_group[T]
    // bitvector: the generic layout's arrays, then its own (E entries, W words, U blocks, T trees):
    //   nodes  += per entry {slot | default_right << 31, clear}: the word (within its block) and
    //             the bits the entry clears when the row goes right
    //   leaves += per word 32 leaf values (tree t's leaf i at leaf_base[t] + i; 0 past its leaves)
    //   cuts    = per entry its threshold, entries of block b and feature f sorted ascending
    //   aux    += block_tree[U + 1], block_words[U], entry_begin[U·F + 1] (block-major),
    //             tree_slot[T] (first word within its block), tree_words[T], leaf_base[T]
    std::vector<int32_t> aux;
};

// Throws Error(InvalidModel) for an ensemble that fails the structural checks it needs.
PackedEnsemble pack(const spec::TreeEnsemble&, bool allow_perfect = true);
// The layout pack() chooses (it may still fall back from perfect to bitvector or generic for a
// feature with more than 2^24 distinct thresholds, which no importer writes): perfect where the
// trees are near-perfect, bitvector where they are leaf-wise or deep, generic past 256 leaves.
Layout choose_layout(const spec::TreeEnsemble&, bool allow_perfect = true);
const char* layout_name(Layout);

// A non-owning, checked view of the arrays (from a PackedEnsemble or from tensors).
struct PackedView {
    Layout layout = Layout::Perfect;
    int32_t num_features = 0;
    int32_t num_groups = 1;
    bool less_equal = false;
    int depth = 0;
    int64_t units = 0;
    const int32_t* nodes = nullptr;
    int64_t num_nodes = 0;
    const float* leaves = nullptr;
    int64_t num_leaves = 0;
    const float* cuts = nullptr;
    int64_t num_cuts = 0;
    const int32_t* aux = nullptr;
    int64_t num_aux = 0;

    // perfect layout helpers
    const int32_t* cut_offset() const { return aux; }
    const int32_t* cut_steps() const { return aux + num_features + 1; }
    const int32_t* block_group() const { return aux + 2 * num_features + 1; }
    // generic layout helpers (the bitvector layout's generic part too)
    const int32_t* tree_root() const { return aux; }
    const int32_t* tree_group() const { return aux + units; }

    // bitvector layout: its own arrays (null otherwise), set by make_view
    struct Bitvectors {
        int64_t blocks = 0, entries = 0, words = 0, generic_nodes = 0;
        const int32_t* entry = nullptr;      // entries × {slot | default_right << 31, clear}
        const float* threshold = nullptr;    // entries
        const float* leaves = nullptr;       // 32 × words
        const int32_t* block_tree = nullptr; // blocks + 1
        const int32_t* block_words = nullptr;
        const int32_t* entry_begin = nullptr;  // blocks × features + 1
        const int32_t* tree_slot = nullptr;
        const int32_t* tree_words = nullptr;
        const int32_t* leaf_base = nullptr;
    } bits;
};

// Validates sizes and indices so that scoring never reads out of bounds or loops forever;
// throws Error(InvalidModel) otherwise.
PackedView make_view(const int64_t* meta, int64_t meta_size, const int32_t* nodes, int64_t num_nodes,
                     const float* leaves, int64_t num_leaves, const float* cuts, int64_t num_cuts,
                     const int32_t* aux, int64_t num_aux);
PackedView make_view(const PackedEnsemble&);
// The generic layout inside a bitvector view (the view itself for a generic one): what the
// early-exit stages and other per-tree consumers read.
PackedView generic_part(const PackedView&);

// margins: rows × num_groups, overwritten. cols must equal num_features. Runs over row blocks
// on torch's intra-op thread count, in pg_predict's own pool (kernels/thread_pool.hpp).
void score(const PackedView&, const float* x, int64_t rows, int64_t cols, float* margins,
           Isa isa = Isa::Auto);

bool cpu_has_avx512();

// Defined beside the TORCH_LIBRARY registration of torch.ops.pg_predict.tree_ensemble; code that
// emits calls to the op references it so a static link keeps the registrar.
int native_op_anchor();
// The implementation `isa` runs with: Auto gives the widest available one; an explicit one
// this build or CPU lacks throws Error(Unsupported).
Isa resolve_isa(Isa);
// The process-wide choice (the pg_predict.cpu_kernel setting) that the tree_ensemble op passes
// to score(); Auto until set. set_process_isa throws Error(Unsupported), and keeps the old
// choice, for a path this build or CPU lacks.
void set_process_isa(Isa);

// The bitvector layout (QuickScorer; see docs/design.md on US patent 11,106,685): whether this
// build has it (CMake option PG_PREDICT_BITVECTOR), and whether score() uses it
// (pg_predict.bitvector_layout). Off, a model packed with it is scored through its generic part,
// which every bitvector packing holds, with the same results; a build without it never packs it.
bool bitvector_built() noexcept;
void set_bitvector_enabled(bool) noexcept;
bool bitvector_enabled() noexcept;
Isa process_isa();
const char* isa_name(Isa);
// Parses "auto", "portable", "avx2", "avx512", "neon"; false for anything else.
bool parse_isa(const std::string& name, Isa* out);
// The implementations this build and CPU can run (Portable first), for tests and the bench.
std::vector<Isa> available_isas();

namespace detail {
// Row-block parallelism, defined in the torch TU (it reads torch's thread count) so the kernel
// TUs stay torch-free.
void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn);

// Per-row ranks of a block of rows (perfect layout): q[r * qstride + f] = rank << 8 | 0xFF,
// 0xFFFFFFFF for NaN; entries f ≥ F are 0xFFFFFFFF. has_nan[r] tells whether the row has one.
constexpr uint32_t kNanRank = 0xFFFFFFFFu;

// The plain C++ path (tree_ensemble_portable.cpp): the reference the SIMD paths match bit for bit.
void score_perfect_portable(const PackedView&, const float* x, int64_t rows, int64_t cols, float* margins);

// One entry per SIMD file (tree_ensemble_<isa>.cpp, each compiled with its own ISA flags and
// only called after the run-time CPU check): its scoring function, or nullptr where the file
// was built without its flags (another architecture, an old compiler).
using PerfectPath = void (*)(const PackedView&, const float* x, int64_t rows, int64_t cols, float* margins);
PerfectPath avx512_path();
PerfectPath avx2_path();
PerfectPath neon_path();
// Depth ≤ 4, ≤ 64 features: scores without ranks (tree_ensemble_shallow_avx512.cpp); false,
// touching nothing, where it does not apply.
bool score_shallow_avx512(const PackedView&, const float* x, int64_t rows, int64_t cols, float* margins);

}  // namespace detail

}  // namespace pg_predict::kernels
