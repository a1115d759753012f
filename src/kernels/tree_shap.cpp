// TreeSHAP: packing a tree ensemble into subtree tables and untabled paths (see kernels/tree_shap.hpp).
#include "pg_predict/kernels/tree_shap.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "pg_predict/common/error.hpp"
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

// What each element of a path with zero fractions `zero` adds, per unit of leaf value, for each
// combination of one fractions (mask bit e: element e's one fraction is 1): UnwoundPathSum ×
// (one - zero) after extending the path with every element (XGBoost's ExtendPath /
// UnwoundPathSum). out: [2^d][d]. The masks sharing their first elements share those extensions
// (a walk over the bits), and the divisions by constants are multiplications.
class LeafCoefficients {
public:
    LeafCoefficients(const double* zero, int d, double* out) : zero_(zero), d_(d), out_(out) {
        for (int i = 0; i < d; ++i) {
            up_[i] = double(d + 1) / (i + 1);
            down_[i] = double(d - i) / (d + 1);
            back_[i] = double(d + 1) / (d - i);
        }
        double w[kMaxTableElements + 2] = {1.0};
        extend(1, 0, w);
    }

private:
    // w: the path's weights after extending with elements [0, ud - 1), their one fractions `mask`.
    void extend(int ud, uint32_t mask, const double* w) {
        if (ud > d_) return unwind(mask, w);
        const double z = zero_[ud - 1], scale = 1.0 / (ud + 1);
        for (const uint32_t o : {0u, 1u}) {
            double next[kMaxTableElements + 2];
            next[ud] = 0.0;
            for (int i = ud - 1; i >= 0; --i) {
                next[i + 1] += o ? w[i] * (i + 1) * scale : 0.0;
                next[i] = z * w[i] * (ud - i) * scale;
            }
            extend(ud + 1, mask | o << (ud - 1), next);
        }
    }

    void unwind(uint32_t mask, const double* w) {
        const int d = d_;
        double* out = out_ + size_t(mask) * d;
        for (int e = 0; e < d; ++e) {
            const double z = zero_[e];
            const bool one = mask >> e & 1u;
            double total = 0.0, next = w[d];
            if (one) {
                for (int i = d - 1; i >= 0; --i) {
                    const double tmp = next * up_[i];
                    total += tmp;
                    next = w[i] - tmp * z * down_[i];
                }
            } else if (z > 0.0) {
                const double inverse = 1.0 / z;
                for (int i = d - 1; i >= 0; --i) total += w[i] * back_[i] * inverse;
            }
            out[e] = total * ((one ? 1.0 : 0.0) - z);
        }
    }

    const double* zero_;
    const int d_;
    double* out_;
    double up_[kMaxTableElements], down_[kMaxTableElements], back_[kMaxTableElements];
};

// A path's unique features in order of first appearance, each with its zero fraction and its
// edges (indices into the path).
struct Element {
    int32_t player;
    double zero = 1.0;
    std::vector<int> edges;
};
std::vector<Element> elements_of(const std::vector<Edge>& path) {
    std::vector<Element> out;
    for (size_t i = 0; i < path.size(); ++i) {
        auto it = std::find_if(out.begin(), out.end(), [&](const Element& e) { return e.player == path[i].player; });
        if (it == out.end()) it = out.insert(out.end(), Element{path[i].player, 1.0, {}});
        it->zero *= path[i].zero;
        it->edges.push_back(static_cast<int>(i));
    }
    return out;
}

int32_t edge_code(const Edge& e) { return e.node * 2 + (e.left ? 1 : 0); }

// A leaf no table covers: its elements, evaluated per row block.
void add_untabled_path(PackedShap& p, const std::vector<Edge>& path, double value) {
    const std::vector<Element> elements = elements_of(path);
    p.paths.push_back(static_cast<int32_t>(p.zero_fractions.size()));
    p.paths.push_back(static_cast<int32_t>(elements.size()));
    for (const Element& el : elements) {
        const int32_t first = static_cast<int32_t>(p.edges.size());
        for (int i : el.edges) p.edges.push_back(edge_code(path[i]));
        p.elements.insert(p.elements.end(), {el.player, first, static_cast<int32_t>(el.edges.size())});
        p.zero_fractions.push_back(el.zero);
    }
    p.path_values.push_back(value);
    p.meta[kShapMaxElements] = std::max<int64_t>(p.meta[kShapMaxElements], static_cast<int64_t>(elements.size()));
}

// One tree's nodes seen from the root: parents, which side, the splits below each node.
struct TreeShape {
    std::vector<int32_t> parent, splits;  // splits: internal nodes in the subtree, capped
    std::vector<uint8_t> is_left;
    std::vector<int32_t> preorder;
};

TreeShape shape_of(const spec::Tree& t) {
    TreeShape s;
    s.parent.assign(t.size(), -1);
    s.is_left.assign(t.size(), 0);
    s.splits.assign(t.size(), 0);
    std::vector<int32_t> stack{0};
    while (!stack.empty()) {
        const int32_t n = stack.back();
        stack.pop_back();
        s.preorder.push_back(n);
        if (t.is_leaf(n)) continue;
        s.parent[t.left[n]] = s.parent[t.right[n]] = n;
        s.is_left[t.left[n]] = 1;
        stack.push_back(t.right[n]);
        stack.push_back(t.left[n]);
    }
    constexpr int32_t kCap = 1 << 20;
    for (auto it = s.preorder.rbegin(); it != s.preorder.rend(); ++it)
        if (!t.is_leaf(*it)) s.splits[*it] = std::min(kCap, 1 + s.splits[t.left[*it]] + s.splits[t.right[*it]]);
    return s;
}

// Packs one tree: picks the tabled subtrees, fills their tables, and lists the leaves left over.
class TreePacker {
public:
    TreePacker(PackedShap& p, const spec::Tree& t, const std::vector<int32_t>& player, const ShapPacking& packing)
        : p_(p), t_(t), player_(player), packing_(packing), shape_(shape_of(t)) {}

    // Picks the tables for a weight of table memory against reads per row (larger: smaller
    // tables); returns the floats they take.
    int64_t choose(double memory_weight) {
        if (t_.is_leaf(0)) return 0;  // a single leaf: its value is all expectation
        if (layouts_.empty()) {
            layouts_.resize(t_.size());
            fits_.resize(t_.size());
            for (size_t n = 0; n < t_.size(); ++n) fits_[n] = layout(int32_t(n), &layouts_[n]);
        }
        choose_cover(memory_weight);
        int64_t values = 0;
        std::vector<int32_t> stack{0};
        while (!stack.empty()) {
            const int32_t n = stack.back();
            stack.pop_back();
            if (own_[n]) {
                values += int64_t(layouts_[n].slots) << layouts_[n].terms;
            } else if (!t_.is_leaf(n)) {
                stack.push_back(t_.left[n]);
                stack.push_back(t_.right[n]);
            }
        }
        return values;
    }

    // Adds the chosen tables (while the budget lasts) and the untabled leaves.
    void emit() {
        if (t_.is_leaf(0)) return;
        std::vector<Edge> path;
        emit(0, path);
    }

private:
    // The edges from the root down to n.
    std::vector<Edge> path_to(int32_t n) const {
        std::vector<Edge> path;
        for (int32_t c = n; shape_.parent[c] >= 0; c = shape_.parent[c]) {
            const int32_t up = shape_.parent[c];
            path.push_back({up, shape_.is_left[c] != 0, player_[t_.feature[up]], fraction(t_.cover[c], t_.cover[up])});
        }
        std::reverse(path.begin(), path.end());
        return path;
    }

    // The subtree at n as one table: its terms and slots; false where it is too large.
    struct Layout {
        int terms = 0, slots = 0;
    };
    bool layout(int32_t n, Layout* out) const {
        const int limit = t_.is_leaf(n) ? packing_.leaf_terms : packing_.subtree_terms;
        if (shape_.splits[n] > limit) return false;
        std::vector<int32_t> players;
        auto add = [&](int32_t pl) {
            if (std::find(players.begin(), players.end(), pl) == players.end()) players.push_back(pl);
        };
        for (const Edge& e : path_to(n)) add(e.player);
        out->terms = static_cast<int>(players.size()) + shape_.splits[n];
        if (out->terms > std::min(limit, kMaxTableElements)) return false;
        for_each_split(n, [&](int32_t m) { add(player_[t_.feature[m]]); });
        out->slots = static_cast<int>(players.size());
        return true;
    }

    template <typename Fn>
    void for_each_split(int32_t n, Fn fn) const {  // pre-order
        std::vector<int32_t> stack{n};
        while (!stack.empty()) {
            const int32_t m = stack.back();
            stack.pop_back();
            if (t_.is_leaf(m)) continue;
            fn(m);
            stack.push_back(t_.right[m]);
            stack.push_back(t_.left[m]);
        }
    }

    // Per row, a table costs a read per slot and a little per term (its bits); a larger table
    // costs cache misses, and memory. An untabled leaf costs its O(d²) path arithmetic.
    static double table_cost(const Layout& l, double memory_weight) {
        return l.slots + memory_weight * double(int64_t(l.slots) * l.slots << l.terms) / 8192.0 + 0.25 * l.terms;
    }

    // Bottom-up: each node's cheapest cover by tables (own_[n]: the subtree at n is one table).
    void choose_cover(double memory_weight) {
        cost_.assign(t_.size(), 0.0);
        own_.assign(t_.size(), 0);
        for (auto it = shape_.preorder.rbegin(); it != shape_.preorder.rend(); ++it) {
            const int32_t n = *it;
            const Layout& l = layouts_[size_t(n)];
            const bool fits = fits_[size_t(n)];
            double below;
            if (t_.is_leaf(n)) {
                const double d = fits ? l.terms : kMaxTableElements + 1;  // untabled: longer than a table
                below = 8.0 * (d + 1.0) * (d + 1.0);
            } else {
                below = cost_[t_.left[n]] + cost_[t_.right[n]];
            }
            if (fits && table_cost(l, memory_weight) <= below) {
                cost_[n] = table_cost(l, memory_weight);
                own_[n] = 1;
            } else {
                cost_[n] = below;
            }
        }
    }

    void emit(int32_t n, std::vector<Edge>& path) {
        if (own_[n] && add_table(n, path)) return;
        if (t_.is_leaf(n)) {
            add_untabled_path(p_, path, t_.value[n]);
            return;
        }
        const int32_t pl = player_[t_.feature[n]];
        for (const bool left : {true, false}) {
            const int32_t child = left ? t_.left[n] : t_.right[n];
            path.push_back({n, left, pl, fraction(t_.cover[child], t_.cover[n])});
            emit(child, path);
            path.pop_back();
        }
    }

    // The table of the subtree at n, reached by `path`; false (nothing added) past the budget.
    bool add_table(int32_t n, const std::vector<Edge>& path) {
        // Terms: the path's players (all their edges), then each split of the subtree.
        const std::vector<Element> above = elements_of(path);
        std::vector<int32_t> splits, players;
        for (const Element& el : above) players.push_back(el.player);
        for_each_split(n, [&](int32_t m) {
            splits.push_back(m);
            if (std::find(players.begin(), players.end(), player_[t_.feature[m]]) == players.end())
                players.push_back(player_[t_.feature[m]]);
        });
        const int terms = static_cast<int>(above.size() + splits.size());
        const int64_t width = int64_t(1) << terms, values = width * int64_t(players.size());
        if (int64_t(p_.tables.size()) + values > packing_.max_values) return false;

        std::vector<double> table(size_t(values), 0.0);
        std::vector<Edge> leaf_path = path;
        std::vector<double> coefficients;
        struct Walk { int32_t node; size_t depth; };
        std::vector<Walk> stack{{n, path.size()}};
        while (!stack.empty()) {
            const Walk w = stack.back();
            stack.pop_back();
            leaf_path.resize(w.depth);  // the path down to w.node's parent
            if (w.node != n) {
                const int32_t up = shape_.parent[w.node];
                leaf_path.push_back({up, shape_.is_left[w.node] != 0, player_[t_.feature[up]],
                                     fraction(t_.cover[w.node], t_.cover[up])});
            }
            if (!t_.is_leaf(w.node)) {
                stack.push_back({t_.right[w.node], leaf_path.size()});
                stack.push_back({t_.left[w.node], leaf_path.size()});
                continue;
            }
            // The leaf's elements; per element, the index bits that decide its one fraction:
            // (index & need) == want.
            const std::vector<Element> elements = elements_of(leaf_path);
            const int d = static_cast<int>(elements.size());
            std::vector<uint32_t> need(d, 0), want(d, 0);
            std::vector<int> slot(d);
            std::vector<double> zero(d);
            for (int e = 0; e < d; ++e) {
                zero[e] = elements[e].zero;
                slot[e] = int(std::find(players.begin(), players.end(), elements[e].player) - players.begin());
                for (int i : elements[e].edges) {
                    uint32_t bit;
                    bool left = true;
                    if (size_t(i) < path.size()) {  // an edge above n: the player's term
                        bit = uint32_t(std::find_if(above.begin(), above.end(), [&](const Element& a) {
                                           return a.player == elements[e].player;
                                       }) - above.begin());
                    } else {  // the decision of a split below n
                        bit = uint32_t(above.size() + size_t(std::find(splits.begin(), splits.end(), leaf_path[i].node) -
                                                             splits.begin()));
                        left = leaf_path[i].left;
                    }
                    need[e] |= 1u << bit;
                    if (left) want[e] |= 1u << bit;
                }
            }
            coefficients.resize(size_t(d) << d);
            LeafCoefficients(zero.data(), d, coefficients.data());
            const double value = t_.value[w.node];
            for (uint32_t index = 0; index < uint32_t(width); ++index) {
                uint32_t mask = 0;
                for (int e = 0; e < d; ++e) mask |= uint32_t((index & need[e]) == want[e]) << e;
                for (int e = 0; e < d; ++e)
                    table[size_t(index) * players.size() + size_t(slot[e])] += coefficients[size_t(mask) * d + e] * value;
            }
        }

        p_.subtrees.insert(p_.subtrees.end(),
                           {static_cast<int32_t>(p_.terms.size() / 2), terms, static_cast<int32_t>(p_.slots.size()),
                            static_cast<int32_t>(players.size()), static_cast<int32_t>(p_.tables.size())});
        for (const Element& el : above) {
            p_.terms.insert(p_.terms.end(), {static_cast<int32_t>(p_.edges.size()), static_cast<int32_t>(el.edges.size())});
            for (int i : el.edges) p_.edges.push_back(edge_code(path[i]));
        }
        for (int32_t m : splits) {
            p_.terms.insert(p_.terms.end(), {static_cast<int32_t>(p_.edges.size()), 1});
            p_.edges.push_back(m * 2 + 1);
        }
        p_.slots.insert(p_.slots.end(), players.begin(), players.end());
        for (double v : table) p_.tables.push_back(static_cast<float>(v));
        return true;
    }

    PackedShap& p_;
    const spec::Tree& t_;
    const std::vector<int32_t>& player_;
    const ShapPacking& packing_;
    const TreeShape shape_;
    std::vector<Layout> layouts_;  // per node, where fits_
    std::vector<uint8_t> fits_;
    std::vector<double> cost_;
    std::vector<uint8_t> own_;
};

}  // namespace

PackedShap pack_shap(const spec::TreeEnsemble& e, const std::vector<int32_t>& player, int32_t players,
                     const ShapPacking& packing) {
    PackedShap p;
    p.meta.assign(kShapMetaSize, 0);
    p.meta[kShapPlayers] = players;
    p.meta[kShapGroups] = e.num_groups;
    p.meta[kShapColumns] = e.num_features;
    p.meta[kShapComparison] = e.comparison == spec::Comparison::LessEqual ? 1 : 0;
    p.expected.assign(static_cast<size_t>(std::max(1, e.num_groups)), 0.0);
    if (player.size() != static_cast<size_t>(e.num_features))
        bad("players for " + std::to_string(player.size()) + " of " + std::to_string(e.num_features) + " columns");
    std::vector<int32_t> node_offset;
    for (size_t ti = 0; ti < e.trees.size(); ++ti) {
        const spec::Tree& t = e.trees[ti];
        if (t.cover.size() != t.size()) bad("tree " + std::to_string(ti) + " has no node covers");
        if (t.group < 0 || t.group >= e.num_groups) bad("tree " + std::to_string(ti) + " has no group");
        p.expected[static_cast<size_t>(t.group)] += expected_value(t);
        node_offset.push_back(static_cast<int32_t>(p.thresholds.size()));
        for (size_t n = 0; n < t.size(); ++n) {
            const bool leaf = t.is_leaf(n);
            if (!leaf && (t.feature[n] < 0 || t.feature[n] >= e.num_features || player[t.feature[n]] < 0 ||
                          player[t.feature[n]] >= players))
                bad("tree " + std::to_string(ti) + " node " + std::to_string(n) + " splits on a column without a player");
            p.nodes.push_back(leaf ? -1 : t.feature[n]);
            p.nodes.push_back(t.default_left[n]);
            p.thresholds.push_back(t.threshold[n]);
        }
        p.meta[kShapMaxNodes] = std::max<int64_t>(p.meta[kShapMaxNodes], static_cast<int64_t>(t.size()));
    }
    // Tables for every tree within the budget: memory weighs more until they fit (a leaf past the
    // budget would be untabled, far slower than a smaller table).
    std::vector<TreePacker> packers;
    packers.reserve(e.trees.size());
    for (const spec::Tree& t : e.trees) packers.emplace_back(p, t, player, packing);
    for (double memory_weight = 1.0;; memory_weight *= 4.0) {
        int64_t values = 0;
        for (TreePacker& packer : packers) values += packer.choose(memory_weight);
        if (values <= packing.max_values || memory_weight > 1e6) break;
    }
    for (size_t ti = 0; ti < e.trees.size(); ++ti) {
        const int32_t path_offset = static_cast<int32_t>(p.path_values.size());
        const int32_t subtree_offset = static_cast<int32_t>(p.subtrees.size() / 5);
        packers[ti].emit();
        p.trees.insert(p.trees.end(), {node_offset[ti], static_cast<int32_t>(e.trees[ti].size()), path_offset,
                                       static_cast<int32_t>(p.path_values.size()) - path_offset, e.trees[ti].group,
                                       subtree_offset, static_cast<int32_t>(p.subtrees.size() / 5) - subtree_offset});
    }
    p.meta[kShapTrees] = static_cast<int64_t>(e.trees.size());
    return p;
}

}  // namespace pg_predict::kernels
