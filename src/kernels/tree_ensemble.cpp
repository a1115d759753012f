// The native tree-ensemble kernel: packing, checks, the generic-layout scorer and the dispatch
// to the perfect-layout ones (tree_ensemble_portable.cpp and the SIMD files). Torch-free: threads come from
// detail::parallel_for, defined in tree_ensemble_op.cpp.
#include "pg_predict/common/interrupt.hpp"
#include "pg_predict/kernels/tree_ensemble.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "pg_predict/common/error.hpp"
#include "pg_predict/spec/pipeline.hpp"
#include "bitvector.hpp"

namespace pg_predict::kernels {
namespace {

constexpr int64_t kRowBlock = 64;       // rows whose ranks are computed together
constexpr int kMaxPerfectFeatures = 128;
constexpr int64_t kMaxRanks = (int64_t(1) << 24) - 2;  // rank << 8 | 0xFF must stay < kNanRank

[[noreturn]] void bad_model(const std::string& what) {
    fail(ErrorCategory::InvalidModel, "native tree kernel: " + what);
}

int32_t bits_of(float f) {
    int32_t i;
    std::memcpy(&i, &f, sizeof i);
    return i;
}

float float_of(int32_t i) {
    float f;
    std::memcpy(&f, &i, sizeof f);
    return f;
}

// Checks the tree and returns its nodes in preorder (children after their parent).
std::vector<int32_t> preorder(const spec::Tree& t, size_t index, int num_features) {
    const size_t n = t.size();
    if (n == 0) bad_model("tree " + std::to_string(index) + " has no nodes");
    if (t.right.size() != n || t.feature.size() != n || t.threshold.size() != n ||
        t.default_left.size() != n || t.value.size() != n)
        bad_model("tree " + std::to_string(index) + " has arrays of different lengths");
    std::vector<int32_t> order, stack{0};
    std::vector<uint8_t> seen(n, 0);
    while (!stack.empty()) {
        const int32_t node = stack.back();
        stack.pop_back();
        if (node < 0 || static_cast<size_t>(node) >= n || seen[node])
            bad_model("tree " + std::to_string(index) + " has a bad child index or a cycle");
        seen[node] = 1;
        order.push_back(node);
        if (t.is_leaf(node)) continue;
        if (t.feature[node] < 0 || t.feature[node] >= num_features)
            bad_model("tree " + std::to_string(index) + " node " + std::to_string(node) +
                      " reads feature " + std::to_string(t.feature[node]));
        stack.push_back(t.right[node]);
        stack.push_back(t.left[node]);
    }
    return order;
}

PackedEnsemble pack_generic(const spec::TreeEnsemble& e) {
    PackedEnsemble p;
    const int64_t T = static_cast<int64_t>(e.trees.size());
    p.meta.assign(kMetaSize, 0);
    p.meta[kMetaVersion] = kFormatVersion;
    p.meta[kMetaLayout] = static_cast<int64_t>(Layout::Generic);
    p.meta[kMetaFeatures] = e.num_features;
    p.meta[kMetaGroups] = e.num_groups;
    p.meta[kMetaComparison] = e.comparison == spec::Comparison::LessEqual ? 1 : 0;
    p.meta[kMetaDepth] = e.max_depth();
    p.meta[kMetaUnits] = T;
    p.aux.assign(2 * T, 0);
    for (int64_t i = 0; i < T; ++i) {
        const spec::Tree& t = e.trees[i];
        const std::vector<int32_t> order = preorder(t, i, e.num_features);
        std::vector<int32_t> where(t.size(), -1);
        const int64_t base = static_cast<int64_t>(p.leaves.size());
        if (base + static_cast<int64_t>(order.size()) > std::numeric_limits<int32_t>::max())
            bad_model("too many nodes");
        for (size_t k = 0; k < order.size(); ++k) where[order[k]] = static_cast<int32_t>(base + k);
        for (int32_t node : order) {
            if (t.is_leaf(node)) {
                p.nodes.insert(p.nodes.end(), {0, 0, -1, -1});
            } else {
                const int32_t f = t.feature[node] | (t.default_left[node] ? int32_t(INT32_MIN) : 0);
                p.nodes.insert(p.nodes.end(), {f, bits_of(t.threshold[node]), where[t.left[node]],
                                               where[t.right[node]]});
            }
            p.leaves.push_back(t.is_leaf(node) ? t.value[node] : 0.0f);
        }
        p.aux[i] = static_cast<int32_t>(base);
        p.aux[T + i] = t.group;
    }
    return p;
}

// Cuts of one feature: sorted distinct thresholds (-0 and +0 are one).
struct Cuts {
    std::vector<float> values;
};

void place(const spec::Tree& t, int32_t node, int level, int64_t pos, int D, uint32_t* words,
           float* leaves, int lane, const std::vector<Cuts>& cuts) {
    if (t.is_leaf(node)) {
        const int64_t span = int64_t(1) << (D - level);
        float* first = leaves + (int64_t(lane) << D) + pos * span;
        std::fill(first, first + span, t.value[node]);
        return;
    }
    const int f = t.feature[node];
    const std::vector<float>& u = cuts[f].values;
    const float thr = t.threshold[node];
    const int64_t j = std::lower_bound(u.begin(), u.end(), thr) - u.begin();
    const uint32_t rank = static_cast<uint32_t>(j + 1);
    words[kLanes * ((int64_t(1) << level) - 1) + (int64_t(lane) << level) + pos] =
        rank << 8 | (t.default_left[node] ? 0x80u : 0u) | static_cast<uint32_t>(f);
    place(t, t.left[node], level + 1, 2 * pos, D, words, leaves, lane, cuts);
    place(t, t.right[node], level + 1, 2 * pos + 1, D, words, leaves, lane, cuts);
}

}  // namespace

namespace {
std::atomic<bool> bitvector_on{bitvector_built()};
}

bool bitvector_built() noexcept {
#ifdef PG_PREDICT_NO_BITVECTOR
    return false;
#else
    return true;
#endif
}

void set_bitvector_enabled(bool on) noexcept { bitvector_on.store(on && bitvector_built(), std::memory_order_relaxed); }

bool bitvector_enabled() noexcept { return bitvector_on.load(std::memory_order_relaxed); }

Layout choose_layout(const spec::TreeEnsemble& e, bool allow_perfect) {
    const bool bitvector = bitvector_built() && detail::bitvector_eligible(e);
    bool perfect = allow_perfect && e.max_depth() <= kMaxPerfectDepth && e.num_features <= kMaxPerfectFeatures;
    for (size_t i = 0; i < e.trees.size() && perfect; ++i)
        for (size_t n = 0; n < e.trees[i].size() && perfect; ++n)
            perfect = e.trees[i].is_leaf(n) || !std::isnan(e.trees[i].threshold[n]);  // ranks cannot express it
    if (perfect && !(bitvector && detail::bitvector_cheaper(e))) return Layout::Perfect;
    return bitvector ? Layout::Bitvector : Layout::Generic;
}

namespace detail {

void narrow_bitvectors(const int64_t* meta, int64_t meta_size, PackedView& v) {
    constexpr int64_t kWordBits = kBitvectorWordBits;
    if (meta_size < kBitvectorMetaSize) bad_model("bad bitvector-layout header");
    const int64_t U = meta[kMetaBlocks], E = meta[kMetaEntries], W = meta[kMetaWords], T = v.units,
                  F = v.num_features;
    if (U < 1 || U > T || E < 0 || E > INT32_MAX || W < 1 || W > INT32_MAX / kWordBits ||
        U * F + 1 > INT32_MAX)
        bad_model("bad bitvector-layout header");
    const int64_t N = v.num_leaves - W * kWordBits;
    if (N < 1 || v.num_nodes != 4 * N + 2 * E || v.num_cuts != E ||
        v.num_aux != 2 * T + (U + 1) + U + (U * F + 1) + 3 * T)
        bad_model("bitvector-layout arrays do not match the header");
    PackedView::Bitvectors& b = v.bits;
    b.blocks = U, b.entries = E, b.words = W, b.generic_nodes = N;
    b.entry = v.nodes + 4 * N;
    b.threshold = v.cuts;
    b.leaves = v.leaves + N;
    b.block_tree = v.aux + 2 * T;
    b.block_words = b.block_tree + U + 1;
    b.entry_begin = b.block_words + U;
    b.tree_slot = b.entry_begin + U * F + 1;
    b.tree_words = b.tree_slot + T;
    b.leaf_base = b.tree_words + T;
    v.num_nodes = 4 * N;
    v.num_leaves = N;
    v.num_aux = 2 * T;
}

}  // namespace detail

const char* layout_name(Layout layout) {
    switch (layout) {
    case Layout::Perfect: return "perfect";
    case Layout::Bitvector: return "bitvector";
    case Layout::Generic: break;
    }
    return "generic";
}

PackedEnsemble pack(const spec::TreeEnsemble& e, bool allow_perfect) {
    if (e.num_features < 0) bad_model("negative feature count");
    if (e.num_groups < 1) bad_model("no output groups");
    for (size_t i = 0; i < e.trees.size(); ++i) {
        check_interrupts();
        preorder(e.trees[i], i, e.num_features);  // structural checks
        if (e.trees[i].group < 0 || e.trees[i].group >= e.num_groups)
            bad_model("tree " + std::to_string(i) + " adds to group " + std::to_string(e.trees[i].group));
    }
    const int D = e.max_depth();
    bool perfect = choose_layout(e, allow_perfect) == Layout::Perfect;

    const int F = e.num_features;
    std::vector<Cuts> cuts(perfect ? F : 0);
    if (perfect) {
        for (const spec::Tree& t : e.trees)
            for (size_t n = 0; n < t.size() && perfect; ++n) {
                if (t.is_leaf(n)) continue;
                if (std::isnan(t.threshold[n])) perfect = false;  // ranks cannot express it
                else cuts[t.feature[n]].values.push_back(t.threshold[n]);
            }
    }
    if (perfect) {
        for (Cuts& c : cuts) {
            std::sort(c.values.begin(), c.values.end());
            c.values.erase(std::unique(c.values.begin(), c.values.end()), c.values.end());
            if (static_cast<int64_t>(c.values.size()) > kMaxRanks) perfect = false;
        }
    }
    if (!perfect) {
        PackedEnsemble p = pack_generic(e);
        if (bitvector_built() && detail::bitvector_eligible(e)) detail::pack_bitvectors(e, p);
        return p;
    }

    PackedEnsemble p;
    p.meta.assign(kMetaSize, 0);
    p.meta[kMetaVersion] = kFormatVersion;
    p.meta[kMetaLayout] = static_cast<int64_t>(Layout::Perfect);
    p.meta[kMetaFeatures] = F;
    p.meta[kMetaGroups] = e.num_groups;
    p.meta[kMetaComparison] = e.comparison == spec::Comparison::LessEqual ? 1 : 0;
    p.meta[kMetaDepth] = D;

    // cut_offset[F + 1], cut_steps[F]
    std::vector<int32_t> offset(F + 1, 0), steps(F, 0);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (int f = 0; f < F; ++f) {
        const int64_t n = static_cast<int64_t>(cuts[f].values.size());
        int k = 0;
        while ((int64_t(1) << k) - 1 < n) ++k;
        offset[f] = static_cast<int32_t>(p.cuts.size());
        steps[f] = k;
        p.cuts.insert(p.cuts.end(), cuts[f].values.begin(), cuts[f].values.end());
        p.cuts.resize(p.cuts.size() + ((int64_t(1) << k) - n), nan);
    }
    offset[F] = static_cast<int32_t>(p.cuts.size());

    // Blocks of 16 trees, group by group (trees keep their order inside a group).
    std::vector<std::vector<int32_t>> by_group(e.num_groups);
    for (size_t i = 0; i < e.trees.size(); ++i) by_group[e.trees[i].group].push_back(static_cast<int32_t>(i));
    std::vector<int32_t> block_group;
    const int64_t node_words = kLanes * ((int64_t(1) << D) - 1), leaf_words = int64_t(kLanes) << D;
    for (int g = 0; g < e.num_groups; ++g) {
        const std::vector<int32_t>& trees = by_group[g];
        for (size_t first = 0; first < trees.size(); first += kLanes) {
            const int64_t b = static_cast<int64_t>(block_group.size());
            block_group.push_back(g);
            p.nodes.resize((b + 1) * node_words, 0);
            p.leaves.resize((b + 1) * leaf_words, 0.0f);
            for (int lane = 0; lane < kLanes && first + lane < trees.size(); ++lane)
                place(e.trees[trees[first + lane]], 0, 0, 0, D,
                      reinterpret_cast<uint32_t*>(p.nodes.data() + b * node_words),
                      p.leaves.data() + b * leaf_words, lane, cuts);
        }
    }
    p.meta[kMetaUnits] = static_cast<int64_t>(block_group.size());
    p.aux = offset;
    p.aux.insert(p.aux.end(), steps.begin(), steps.end());
    p.aux.insert(p.aux.end(), block_group.begin(), block_group.end());
    return p;
}

PackedView make_view(const int64_t* meta, int64_t meta_size, const int32_t* nodes, int64_t num_nodes,
                     const float* leaves, int64_t num_leaves, const float* cuts, int64_t num_cuts,
                     const int32_t* aux, int64_t num_aux) {
    if (meta_size < kMetaSize || meta[kMetaVersion] != kFormatVersion)
        bad_model("unknown packed-model format");
    PackedView v;
    const int64_t layout = meta[kMetaLayout], F = meta[kMetaFeatures], G = meta[kMetaGroups],
                  D = meta[kMetaDepth], U = meta[kMetaUnits];
    if (F < 0 || F > INT32_MAX || G < 1 || G > INT32_MAX || D < 0 || U < 0 || U > INT32_MAX ||
        (meta[kMetaComparison] != 0 && meta[kMetaComparison] != 1))
        bad_model("bad packed-model header");
    v.num_features = static_cast<int32_t>(F);
    v.num_groups = static_cast<int32_t>(G);
    v.less_equal = meta[kMetaComparison] == 1;
    v.depth = static_cast<int>(std::min<int64_t>(D, 1 << 20));
    v.units = U;
    v.nodes = nodes, v.num_nodes = num_nodes, v.leaves = leaves, v.num_leaves = num_leaves;
    v.cuts = cuts, v.num_cuts = num_cuts, v.aux = aux, v.num_aux = num_aux;
    if (layout == static_cast<int64_t>(Layout::Perfect)) {
        v.layout = Layout::Perfect;
        if (D > kMaxPerfectDepth || F > kMaxPerfectFeatures) bad_model("bad perfect-layout header");
        if (num_nodes != U * kLanes * ((int64_t(1) << D) - 1) || num_leaves != U * (int64_t(kLanes) << D) ||
            num_aux != 2 * F + 1 + U)
            bad_model("perfect-layout arrays do not match the header");
        const int32_t* off = v.cut_offset();
        const int32_t* steps = v.cut_steps();
        if (off[0] != 0 || off[F] != num_cuts) bad_model("bad cut offsets");
        for (int64_t f = 0; f < F; ++f)
            if (steps[f] < 0 || steps[f] > 24 || int64_t(off[f + 1]) - off[f] != (int64_t(1) << steps[f]))
                bad_model("bad cut table");
        for (int64_t b = 0; b < U; ++b)
            if (v.block_group()[b] < 0 || v.block_group()[b] >= G || (b > 0 && v.block_group()[b] < v.block_group()[b - 1]))
                bad_model("bad block groups");
        // Node words need no check: a feature field ≥ F reads a padding rank (the rank rows
        // are 128 wide), and indices are computed, never read.
    } else if (layout == static_cast<int64_t>(Layout::Generic) || layout == static_cast<int64_t>(Layout::Bitvector)) {
        v.layout = static_cast<Layout>(layout);
        // The bitvector layout's own arrays come after the generic ones: v is narrowed to those.
        if (v.layout == Layout::Bitvector) {
            if (bitvector_built()) {
                detail::check_bitvectors(meta, meta_size, v);
            } else {  // stored by a build with the layout: its generic part only
                detail::narrow_bitvectors(meta, meta_size, v);
                v.layout = Layout::Generic;
            }
        }
        if (v.num_nodes != 4 * v.num_leaves || v.num_aux != 2 * U)
            bad_model("generic-layout arrays do not match the header");
        num_leaves = v.num_leaves;
        for (int64_t t = 0; t < U; ++t) {
            if (v.tree_root()[t] < 0 || v.tree_root()[t] >= num_leaves) bad_model("bad tree root");
            if (v.tree_group()[t] < 0 || v.tree_group()[t] >= G) bad_model("bad tree group");
        }
        for (int64_t n = 0; n < num_leaves; ++n) {
            const int32_t* w = nodes + 4 * n;
            if (w[2] < 0 && w[3] < 0) continue;
            // Children strictly after their parent: every walk ends.
            if (w[2] <= n || w[3] <= n || w[2] >= num_leaves || w[3] >= num_leaves ||
                (w[0] & INT32_MAX) >= F)
                bad_model("bad node " + std::to_string(n));
        }
    } else {
        bad_model("unknown packed-model layout");
    }
    return v;
}

PackedView generic_part(const PackedView& v) {
    if (v.layout != Layout::Bitvector) return v;
    PackedView g = v;
    g.layout = Layout::Generic;
    g.cuts = nullptr;
    g.num_cuts = 0;
    g.bits = {};
    return g;
}

PackedView make_view(const PackedEnsemble& p) {
    return make_view(p.meta.data(), static_cast<int64_t>(p.meta.size()), p.nodes.data(),
                     static_cast<int64_t>(p.nodes.size()), p.leaves.data(), static_cast<int64_t>(p.leaves.size()),
                     p.cuts.data(), static_cast<int64_t>(p.cuts.size()), p.aux.data(),
                     static_cast<int64_t>(p.aux.size()));
}

namespace {

void score_generic(const PackedView& v, const float* x, int64_t rows, int64_t cols, float* margins) {
    const int G = v.num_groups;
    detail::parallel_for(0, rows, kRowBlock, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const float* row = x + r * cols;
            float* m = margins + r * G;
            std::fill(m, m + G, 0.0f);
            for (int64_t t = 0; t < v.units; ++t) {
                int64_t n = v.tree_root()[t];
                for (;;) {
                    const int32_t* w = v.nodes + 4 * n;
                    if (w[2] < 0) break;
                    const float xv = row[w[0] & INT32_MAX];
                    const float th = float_of(w[1]);
                    const bool left = std::isnan(xv) ? w[0] < 0 : (v.less_equal ? xv <= th : xv < th);
                    n = left ? w[2] : w[3];
                }
                m[v.tree_group()[t]] += v.leaves[n];
            }
        }
    });
}

}  // namespace

bool cpu_has_avx512() {
#if defined(__x86_64__) || defined(__i386__)
    static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                            __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    return has;
#else
    return false;
#endif
}

namespace {

bool cpu_has_avx2() {
#if defined(__x86_64__) || defined(__i386__)
    static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return has;
#else
    return false;
#endif
}

// Whether this build and this CPU can run `isa` (Auto: always).
bool available(Isa isa) {
    switch (isa) {
    case Isa::Auto:
    case Isa::Portable: return true;
    case Isa::Avx512: return cpu_has_avx512() && detail::avx512_path();
    case Isa::Avx2: return cpu_has_avx2() && detail::avx2_path();
    case Isa::Neon: return detail::neon_path();  // NEON is part of every AArch64 CPU
    }
    return false;
}

}  // namespace

Isa resolve_isa(Isa isa) {
    if (isa == Isa::Auto) {
        for (Isa best : {Isa::Avx512, Isa::Avx2, Isa::Neon})
            if (available(best)) return best;
        return Isa::Portable;
    }
    if (!available(isa))
        fail(ErrorCategory::Unsupported,
             std::string("native tree kernel: this CPU (or build) has no ") + isa_name(isa) + " kernel");
    return isa;
}

const char* isa_name(Isa isa) {
    switch (isa) {
    case Isa::Auto: return "auto";
    case Isa::Portable: return "portable";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
    case Isa::Neon: return "neon";
    }
    return "unknown";
}

bool parse_isa(const std::string& name, Isa* out) {
    for (Isa isa : {Isa::Auto, Isa::Portable, Isa::Avx2, Isa::Avx512, Isa::Neon})
        if (name == isa_name(isa)) {
            *out = isa;
            return true;
        }
    return false;
}

std::vector<Isa> available_isas() {
    std::vector<Isa> out;
    for (Isa isa : {Isa::Portable, Isa::Avx2, Isa::Avx512, Isa::Neon})
        if (available(isa)) out.push_back(isa);
    return out;
}

void score(const PackedView& v, const float* x, int64_t rows, int64_t cols, float* margins, Isa isa) {
    if (cols != v.num_features)
        fail(ErrorCategory::InvalidParameter, "native tree kernel: batch has " + std::to_string(cols) +
                                                  " columns, the model reads " + std::to_string(v.num_features));
    if (rows <= 0) return;
    if (v.layout == Layout::Generic) return score_generic(v, x, rows, cols, margins);
    const Isa path = resolve_isa(isa);
    if (v.layout == Layout::Bitvector) {
        // A pass scores 16 rows for about the cost of walking 4 (same results bit for bit).
        if (rows < 4 || !bitvector_enabled()) return score_generic(generic_part(v), x, rows, cols, margins);
        // AVX-512 CPUs run the AVX2 code: 8 rows a vector is what a block's state fits in L1.
        if ((path == Isa::Avx2 || path == Isa::Avx512) && detail::bitvector_avx2_path() != nullptr)
            return detail::bitvector_avx2_path()(v, x, rows, cols, margins);
        return detail::score_bitvector_portable(v, x, rows, cols, margins);
    }
    switch (path) {
    case Isa::Avx512: return detail::avx512_path()(v, x, rows, cols, margins);
    case Isa::Avx2: return detail::avx2_path()(v, x, rows, cols, margins);
    case Isa::Neon: return detail::neon_path()(v, x, rows, cols, margins);
    case Isa::Auto:
    case Isa::Portable: break;
    }
    detail::score_perfect_portable(v, x, rows, cols, margins);
}

}  // namespace pg_predict::kernels
