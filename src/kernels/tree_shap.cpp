// TreeSHAP: packing the leaf paths, and the blocked evaluation (see kernels/tree_shap.hpp).
#include "pg_predict/kernels/tree_shap.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "pg_predict/common/error.hpp"
#include "pg_predict/kernels/thread_pool.hpp"
#include "pg_predict/spec/pipeline.hpp"

namespace pg_predict::kernels {

namespace {

[[noreturn]] void bad(const std::string& why) { fail(ErrorCategory::InvalidModel, "tree_shap: " + why); }

// cover(child) / cover(parent); a parent nobody reached in training sends nothing anywhere.
double fraction(double child, double parent) { return parent > 0.0 ? child / parent : 0.0; }

// The cover-weighted mean of a tree's leaves (XGBoost's node mean value of the root).
double expected_value(const spec::Tree& t) {
    std::vector<double> mean(t.size(), 0.0);
    // Children after their parent in DFS order: evaluate it backwards.
    std::vector<int32_t> order, stack{0};
    while (!stack.empty()) {
        const int32_t n = stack.back();
        stack.pop_back();
        order.push_back(n);
        if (!t.is_leaf(n)) {
            stack.push_back(t.left[n]);
            stack.push_back(t.right[n]);
        }
    }
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        const int32_t n = *it;
        if (t.is_leaf(n)) {
            mean[n] = t.value[n];
            continue;
        }
        const int32_t l = t.left[n], r = t.right[n];
        const double cl = t.cover[l], cr = t.cover[r];
        const double w = t.cover[n] > 0.0 ? t.cover[n] : cl + cr;
        mean[n] = w > 0.0 ? (mean[l] * cl + mean[r] * cr) / w : 0.5 * (mean[l] + mean[r]);
    }
    return mean[0];
}

struct Edge {
    int32_t node;
    bool left;
    int32_t player;
    double zero;  // cover(child) / cover(node)
};

// What each element of a path with zero fractions `zero` adds, per unit of leaf value, for the
// one fractions `mask` (bit e: element e's one fraction is 1): UnwoundPathSum × (one - zero)
// after extending the path with every element (XGBoost's ExtendPath / UnwoundPathSum).
void path_coefficients(const double* zero, int d, uint32_t mask, double* out) {
    double w[kMaxTableElements + 2] = {1.0};
    for (int ud = 1; ud <= d; ++ud) {
        const double z = zero[ud - 1], o = (mask >> (ud - 1) & 1u) ? 1.0 : 0.0;
        w[ud] = 0.0;
        for (int i = ud - 1; i >= 0; --i) {
            w[i + 1] += o * w[i] * (i + 1) / (ud + 1);
            w[i] = z * w[i] * (ud - i) / (ud + 1);
        }
    }
    for (int e = 0; e < d; ++e) {
        const double z = zero[e];
        const bool one = mask >> e & 1u;
        double total = 0.0, next = w[d];
        for (int i = d - 1; i >= 0; --i) {
            if (one) {
                const double tmp = next * (d + 1) / (i + 1);
                total += tmp;
                next = w[i] - tmp * z * (d - i) / (d + 1);
            } else if (z > 0.0) {
                total += w[i] * (d + 1) / (z * (d - i));
            }
        }
        out[e] = total * ((one ? 1.0 : 0.0) - z);
    }
}

// One path's elements: the edges grouped by player, in order of first appearance; with few
// enough elements, its table of contributions for every combination of one fractions.
void add_path(PackedShap& p, const std::vector<Edge>& path, double value, int max_table_elements) {
    p.paths.push_back(static_cast<int32_t>(p.zero_fractions.size()));
    std::vector<int32_t> players;
    for (const Edge& e : path)
        if (std::find(players.begin(), players.end(), e.player) == players.end()) players.push_back(e.player);
    for (int32_t player : players) {
        double zero = 1.0;
        const int32_t first = static_cast<int32_t>(p.edges.size());
        for (const Edge& e : path)
            if (e.player == player) {
                zero *= e.zero;
                p.edges.push_back(e.node * 2 + (e.left ? 1 : 0));
            }
        p.elements.insert(p.elements.end(), {player, first, static_cast<int32_t>(p.edges.size()) - first});
        p.zero_fractions.push_back(zero);
    }
    const int d = static_cast<int>(players.size());
    p.paths.push_back(d);
    const int64_t table = d <= std::min(max_table_elements, kMaxTableElements) ? (int64_t(d) << d) : 0;
    if (table > 0 && int64_t(p.tables.size()) + table <= kMaxTableValues) {
        p.paths.push_back(static_cast<int32_t>(p.tables.size()));
        const double* zero = p.zero_fractions.data() + (p.zero_fractions.size() - d);
        const size_t at = p.tables.size();
        p.tables.resize(at + size_t(table));
        for (uint32_t mask = 0; mask < (1u << d); ++mask) {
            double* c = p.tables.data() + at + size_t(mask) * d;
            path_coefficients(zero, d, mask, c);
            for (int e = 0; e < d; ++e) c[e] *= value;
        }
    } else {
        p.paths.push_back(-1);  // evaluated per row block (below)
    }
    p.path_values.push_back(value);
    p.meta[kShapMaxElements] = std::max<int64_t>(p.meta[kShapMaxElements], static_cast<int64_t>(players.size()));
}

}  // namespace

PackedShap pack_shap(const spec::TreeEnsemble& e, const std::vector<int32_t>& player, int32_t players,
                     int max_table_elements) {
    PackedShap p;
    p.meta.assign(kShapMetaSize, 0);
    p.meta[kShapPlayers] = players;
    p.meta[kShapGroups] = e.num_groups;
    p.meta[kShapColumns] = e.num_features;
    p.meta[kShapComparison] = e.comparison == spec::Comparison::LessEqual ? 1 : 0;
    p.expected.assign(static_cast<size_t>(std::max(1, e.num_groups)), 0.0);
    if (player.size() != static_cast<size_t>(e.num_features))
        bad("players for " + std::to_string(player.size()) + " of " + std::to_string(e.num_features) + " columns");
    for (size_t ti = 0; ti < e.trees.size(); ++ti) {
        const spec::Tree& t = e.trees[ti];
        if (t.cover.size() != t.size()) bad("tree " + std::to_string(ti) + " has no node covers");
        if (t.group < 0 || t.group >= e.num_groups) bad("tree " + std::to_string(ti) + " has no group");
        p.expected[static_cast<size_t>(t.group)] += expected_value(t);
        const int32_t node_offset = static_cast<int32_t>(p.thresholds.size());
        const int32_t path_offset = static_cast<int32_t>(p.path_values.size());
        for (size_t n = 0; n < t.size(); ++n) {
            const bool leaf = t.is_leaf(n);
            if (!leaf && (t.feature[n] < 0 || t.feature[n] >= e.num_features || player[t.feature[n]] < 0 ||
                          player[t.feature[n]] >= players))
                bad("tree " + std::to_string(ti) + " node " + std::to_string(n) + " splits on a column without a player");
            p.nodes.push_back(leaf ? -1 : t.feature[n]);
            p.nodes.push_back(t.default_left[n]);
            p.thresholds.push_back(t.threshold[n]);
        }
        // Depth-first over the paths; a single leaf has none (its value is all expectation).
        if (!t.is_leaf(0)) {
            struct Visit { int32_t node; size_t depth; Edge into; };
            std::vector<Edge> path;
            std::vector<Visit> stack{{0, 0, {}}};
            while (!stack.empty()) {
                const Visit v = stack.back();
                stack.pop_back();
                if (v.depth > 0) {
                    path.resize(v.depth - 1);
                    path.push_back(v.into);
                }
                const int32_t n = v.node;
                if (t.is_leaf(n)) {
                    add_path(p, path, t.value[n], max_table_elements);
                    continue;
                }
                const int32_t pl = player[t.feature[n]];
                stack.push_back({t.right[n], v.depth + 1, {n, false, pl, fraction(t.cover[t.right[n]], t.cover[n])}});
                stack.push_back({t.left[n], v.depth + 1, {n, true, pl, fraction(t.cover[t.left[n]], t.cover[n])}});
            }
        }
        p.trees.insert(p.trees.end(), {node_offset, static_cast<int32_t>(t.size()), path_offset,
                                       static_cast<int32_t>(p.path_values.size()) - path_offset, t.group});
    }
    p.meta[kShapTrees] = static_cast<int64_t>(e.trees.size());
    return p;
}

ShapView make_shap_view(const int64_t* meta, int64_t meta_size, const int32_t* trees, int64_t trees_size,
                        const int32_t* nodes, int64_t nodes_size, const float* thresholds, int64_t thresholds_size,
                        const int32_t* paths, int64_t paths_size, const double* path_values, int64_t values_size,
                        const int32_t* elements, int64_t elements_size, const double* zero_fractions,
                        int64_t zeros_size, const int32_t* edges, int64_t edges_size, const double* tables,
                        int64_t tables_size) {
    if (meta_size != kShapMetaSize) bad("meta has " + std::to_string(meta_size) + " entries");
    ShapView v;
    v.players = static_cast<int32_t>(meta[kShapPlayers]);
    v.groups = static_cast<int32_t>(meta[kShapGroups]);
    v.columns = static_cast<int32_t>(meta[kShapColumns]);
    v.less_equal = meta[kShapComparison] != 0;
    v.num_trees = meta[kShapTrees];
    v.max_elements = static_cast<int32_t>(meta[kShapMaxElements]);
    if (v.players < 0 || v.groups < 1 || v.columns < 0 || v.num_trees < 0 || v.max_elements < 0 ||
        trees_size != 5 * v.num_trees || nodes_size != 2 * thresholds_size || paths_size != 3 * values_size ||
        elements_size != 3 * zeros_size)
        bad("inconsistent sizes");
    // Every index the kernel follows, checked once here.
    for (int64_t t = 0; t < v.num_trees; ++t) {
        const int32_t* tr = trees + 5 * t;
        if (tr[0] < 0 || tr[1] < 1 || int64_t(tr[0]) + tr[1] > thresholds_size || tr[2] < 0 || tr[3] < 0 ||
            int64_t(tr[2]) + tr[3] > values_size || tr[4] < 0 || tr[4] >= v.groups)
            bad("tree " + std::to_string(t) + " is out of range");
        for (int32_t n = 0; n < tr[1]; ++n)
            if (nodes[2 * (tr[0] + n)] >= v.columns) bad("a node reads a column out of range");
        for (int32_t q = tr[2]; q < tr[2] + tr[3]; ++q) {
            const int32_t first = paths[3 * q], count = paths[3 * q + 1], table = paths[3 * q + 2];
            if (first < 0 || count < 0 || count > v.max_elements || int64_t(first) + count > zeros_size)
                bad("a path is out of range");
            if (table != -1 && (table < 0 || count > kMaxTableElements ||
                                int64_t(table) + (int64_t(count) << count) > tables_size))
                bad("a path's table is out of range");
            for (int32_t k = first; k < first + count; ++k) {
                const int32_t* el = elements + 3 * k;
                if (el[0] < 0 || el[0] >= v.players || el[1] < 0 || el[2] < 1 || int64_t(el[1]) + el[2] > edges_size)
                    bad("an element is out of range");
                for (int32_t j = el[1]; j < el[1] + el[2]; ++j)
                    if (edges[j] < 0 || edges[j] / 2 >= tr[1] || nodes[2 * (tr[0] + edges[j] / 2)] < 0)
                        bad("an edge is out of range");
            }
        }
    }
    v.trees = trees;
    v.nodes = nodes;
    v.thresholds = thresholds;
    v.paths = paths;
    v.path_values = path_values;
    v.elements = elements;
    v.zero_fractions = zero_fractions;
    v.edges = edges;
    v.tables = tables;
    return v;
}

namespace {

// The block's loops (the table gathers above all) vectorize well: one clone per x86 ISA, picked
// once at load time by the CPU (AVX-512: 1.5x the default build here).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SHAP_ISA_CLONES __attribute__((target_clones("arch=skylake-avx512", "avx2", "default")))
#else
#define SHAP_ISA_CLONES
#endif

constexpr int kBlock = 64;  // rows evaluated together (each path's table is read once per block)

// Per thread: the block's node decisions, one fractions, path weights and contributions.
struct Scratch {
    std::vector<uint8_t> left;   // [node][row]: the row goes left at the node
    std::vector<double> one;     // [element][row]
    std::vector<double> weight;  // [depth][row]
    std::vector<double> phi;     // [row][groups·(players+1)]
};

SHAP_ISA_CLONES void score_block(const ShapView& v, const float* x, int64_t cols, int rows, Scratch& s) {
    std::fill(s.phi.begin(), s.phi.end(), 0.0);
    for (int64_t t = 0; t < v.num_trees; ++t) {
        const int32_t* tr = v.trees + 5 * t;
        const int32_t node0 = tr[0], nodes = tr[1];
        // Exactly the scoring decisions: NaN takes the default direction.
        for (int32_t n = 0; n < nodes; ++n) {
            const int32_t col = v.nodes[2 * (node0 + n)];
            if (col < 0) continue;
            const bool dl = v.nodes[2 * (node0 + n) + 1] != 0;
            const float th = v.thresholds[node0 + n];
            uint8_t* left = s.left.data() + size_t(n) * kBlock;
            for (int b = 0; b < rows; ++b) {
                const float value = x[b * cols + col];
                left[b] = std::isnan(value) ? dl : (v.less_equal ? value <= th : value < th);
            }
        }
        // Contributions [group·(players+1) + player][row]: a row block of one player is contiguous.
        double* phi_group = s.phi.data() + int64_t(tr[4]) * (v.players + 1) * kBlock;
        for (int32_t q = tr[2]; q < tr[2] + tr[3]; ++q) {
            const int32_t first = v.paths[3 * q], d = v.paths[3 * q + 1], table = v.paths[3 * q + 2];
            if (table >= 0) {
                // Each row's combination of one fractions, then its row of the table.
                uint32_t mask[kBlock] = {};
                for (int e = 0; e < d; ++e) {
                    const int32_t* el = v.elements + 3 * (first + e);
                    uint8_t takes[kBlock];
                    for (int b = 0; b < kBlock; ++b) takes[b] = 1;
                    for (int32_t j = el[1]; j < el[1] + el[2]; ++j) {
                        const uint8_t* left = s.left.data() + size_t(v.edges[j] / 2) * kBlock;
                        const uint8_t want = static_cast<uint8_t>(v.edges[j] & 1);
                        for (int b = 0; b < kBlock; ++b) takes[b] &= static_cast<uint8_t>(left[b] == want);
                    }
                    for (int b = 0; b < kBlock; ++b) mask[b] |= uint32_t(takes[b]) << e;
                }
                // Per element, over the rows: a gather from the table into the player's row block
                // (independent adds, unlike a scatter over each row's players).
                const double* rows_of = v.tables + table;
                for (int e = 0; e < d; ++e) {
                    double* phi = phi_group + size_t(v.elements[3 * (first + e)]) * kBlock;
                    for (int b = 0; b < kBlock; ++b) phi[b] += rows_of[size_t(mask[b]) * d + e];
                }
                continue;
            }
            const double value = v.path_values[q];
            // One fractions: 1 where the row takes every edge of the element.
            for (int e = 0; e < d; ++e) {
                const int32_t* el = v.elements + 3 * (first + e);
                double* one = s.one.data() + size_t(e) * kBlock;
                for (int b = 0; b < kBlock; ++b) one[b] = 1.0;
                for (int32_t j = el[1]; j < el[1] + el[2]; ++j) {
                    const uint8_t* left = s.left.data() + size_t(v.edges[j] / 2) * kBlock;
                    const uint8_t want = static_cast<uint8_t>(v.edges[j] & 1);
                    for (int b = 0; b < kBlock; ++b) one[b] = left[b] == want ? one[b] : 0.0;
                }
            }
            // ExtendPath for the root's dummy element, then each element in order.
            double* w = s.weight.data();
            for (int b = 0; b < kBlock; ++b) w[b] = 1.0;
            for (int ud = 1; ud <= d; ++ud) {
                const double zero = v.zero_fractions[first + ud - 1];
                const double* one = s.one.data() + size_t(ud - 1) * kBlock;
                double* top = w + size_t(ud) * kBlock;
                for (int b = 0; b < kBlock; ++b) top[b] = 0.0;
                for (int i = ud - 1; i >= 0; --i) {
                    const double up = double(i + 1) / (ud + 1), stay = zero * double(ud - i) / (ud + 1);
                    double* wi = w + size_t(i) * kBlock;
                    double* wn = w + size_t(i + 1) * kBlock;
                    for (int b = 0; b < kBlock; ++b) {
                        wn[b] += one[b] * wi[b] * up;
                        wi[b] *= stay;
                    }
                }
            }
            // Each element's UnwoundPathSum, for one fraction 1 and 0 (selected per row).
            for (int e = 0; e < d; ++e) {
                const double zero = v.zero_fractions[first + e];
                const double* one = s.one.data() + size_t(e) * kBlock;
                double total1[kBlock], next[kBlock], total0[kBlock];
                const double* wd = w + size_t(d) * kBlock;
                for (int b = 0; b < kBlock; ++b) {
                    next[b] = wd[b];
                    total1[b] = 0.0;
                    total0[b] = 0.0;
                }
                for (int i = d - 1; i >= 0; --i) {
                    const double up = double(d + 1) / (i + 1), down = zero * double(d - i) / (d + 1);
                    const double back = zero > 0.0 ? double(d + 1) / (zero * (d - i)) : 0.0;
                    const double* wi = w + size_t(i) * kBlock;
                    for (int b = 0; b < kBlock; ++b) {
                        const double tmp = next[b] * up;
                        total1[b] += tmp;
                        next[b] = wi[b] - tmp * down;
                        total0[b] += wi[b] * back;
                    }
                }
                const int32_t player = v.elements[3 * (first + e)];
                for (int b = 0; b < rows; ++b) {
                    const double total = one[b] != 0.0 ? total1[b] : total0[b];
                    phi_group[size_t(player) * kBlock + b] += total * (one[b] - zero) * value;
                }
            }
        }
    }
}

}  // namespace

void tree_shap(const ShapView& v, const float* x, int64_t rows, int64_t cols, float* out, int threads) {
    if (cols != v.columns)
        bad("the batch has " + std::to_string(cols) + " columns, the model reads " + std::to_string(v.columns));
    const int64_t width = int64_t(v.groups) * (v.players + 1);
    int64_t max_nodes = 1;
    for (int64_t t = 0; t < v.num_trees; ++t) max_nodes = std::max<int64_t>(max_nodes, v.trees[5 * t + 1]);
    // Chunks of a few ms: about 2M path-element steps.
    int64_t work = 1;
    for (int64_t t = 0; t < v.num_trees; ++t)
        for (int32_t q = v.trees[5 * t + 2]; q < v.trees[5 * t + 2] + v.trees[5 * t + 3]; ++q)
            work += v.paths[3 * q + 2] >= 0 ? 2 * int64_t(v.paths[3 * q + 1] + 1)
                                            : int64_t(v.paths[3 * q + 1] + 1) * (v.paths[3 * q + 1] + 1);
    const int64_t blocks = (rows + kBlock - 1) / kBlock;
    const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 21) / (work * kBlock));
    run_parallel(std::max(1, threads), 0, blocks, grain, [&](int64_t begin, int64_t end) {
        Scratch s;
        s.left.assign(size_t(max_nodes) * kBlock, 0);
        s.one.assign(size_t(std::max(1, v.max_elements)) * kBlock, 0.0);
        s.weight.assign(size_t(v.max_elements + 1) * kBlock, 0.0);
        s.phi.assign(size_t(width) * kBlock, 0.0);
        for (int64_t block = begin; block < end; ++block) {
            const int64_t row0 = block * kBlock;
            const int n = static_cast<int>(std::min<int64_t>(kBlock, rows - row0));
            score_block(v, x + row0 * cols, cols, n, s);
            for (int b = 0; b < n; ++b)
                for (int64_t k = 0; k < width; ++k)
                    out[(row0 + b) * width + k] = static_cast<float>(s.phi[size_t(k) * kBlock + b]);
        }
    });
}

}  // namespace pg_predict::kernels
