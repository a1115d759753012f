// TreeSHAP (kernels/tree_shap.hpp) against the definition: the exact Shapley values of the
// path-dependent value function v(S) (follow the row at splits on players in S, the covers'
// weighted mean of both children elsewhere), by enumerating every subset of players. Random
// trees with ties at thresholds, NaN (default directions), both comparisons, several groups, and
// two columns of one player (its splits are one feature of the path, as LightGBM's rank and
// category columns of one input are); every way of packing the trees into tables; the SIMD path
// against the portable one bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "pg_predict/common/error.hpp"
#include "pg_predict/kernels/tree_shap.hpp"
#include "tree_gen.hpp"

namespace pg_predict {
namespace {

// Leaves get random positive covers, splits the sum of their children's.
double assign_covers(spec::Tree& t, std::mt19937& rng, int node) {
    if (t.cover.empty()) t.cover.assign(t.size(), 0.0);
    if (t.is_leaf(node)) return t.cover[node] = std::uniform_real_distribution<double>(0.5, 4.0)(rng);
    return t.cover[node] = assign_covers(t, rng, t.left[node]) + assign_covers(t, rng, t.right[node]);
}

bool goes_left(const spec::Tree& t, int n, const float* x, spec::Comparison cmp) {
    const float v = x[t.feature[n]];
    if (std::isnan(v)) return t.default_left[n] != 0;
    return cmp == spec::Comparison::Less ? v < t.threshold[n] : v <= t.threshold[n];
}

double value_of(const spec::Tree& t, int n, const float* x, spec::Comparison cmp, const std::vector<int>& player,
                unsigned known) {
    if (t.is_leaf(n)) return t.value[n];
    const int l = t.left[n], r = t.right[n];
    if (known >> player[t.feature[n]] & 1u)
        return value_of(t, goes_left(t, n, x, cmp) ? l : r, x, cmp, player, known);
    return (t.cover[l] * value_of(t, l, x, cmp, player, known) + t.cover[r] * value_of(t, r, x, cmp, player, known)) /
           t.cover[n];
}

// [groups × (players + 1)] by enumeration, the bias being v(∅) plus nothing else.
std::vector<double> shapley(const spec::Pipeline& p, const float* x, const std::vector<int>& player, int players) {
    const int G = p.model.num_groups;
    std::vector<double> out(size_t(G) * (players + 1), 0.0), fact(players + 1, 1.0);
    for (int k = 1; k <= players; ++k) fact[k] = fact[k - 1] * k;
    for (const spec::Tree& t : p.model.trees) {
        double* phi = out.data() + size_t(t.group) * (players + 1);
        phi[players] += value_of(t, 0, x, p.model.comparison, player, 0);
        for (int i = 0; i < players; ++i)
            for (unsigned s = 0; s < (1u << players); ++s) {
                if (s >> i & 1u) continue;
                const int size = __builtin_popcount(s);
                const double w = fact[size] * fact[players - size - 1] / fact[players];
                phi[i] += w * (value_of(t, 0, x, p.model.comparison, player, s | 1u << i) -
                               value_of(t, 0, x, p.model.comparison, player, s));
            }
    }
    return out;
}

struct Packed {
    size_t table_values = 0, untabled_paths = 0;
};

// Contributions of `rows` rows on every path this build and CPU have: the portable one against
// the enumeration, every SIMD one against the portable one bit for bit. Says how it was packed.
Packed check(spec::Comparison cmp, int groups, unsigned seed, const kernels::ShapPacking& packing, int max_depth = 5,
           int rows = 150) {
    std::mt19937 rng(seed);
    const int columns = 6, players = 5;
    const std::vector<int> player = {0, 1, 2, 3, 4, 0};  // column 5 counts for input 0
    spec::Pipeline p = testing::make_pipeline(spec::Task::Regression, spec::PostTransform::Identity, groups, columns, cmp);
    testing::TreeShape shape;
    shape.max_depth = max_depth;
    testing::add_trees(p, rng, 7, shape);
    for (spec::Tree& t : p.model.trees) assign_covers(t, rng, 0);
    p.model.trees.push_back(testing::random_tree(rng, columns, {0, 0.0, false}, 0));  // a single leaf
    p.model.trees.back().cover = {2.0};

    const kernels::PackedShap packed = kernels::pack_shap(p.model, player, players, packing);
    if (packing.leaf_terms == 0 && packing.subtree_terms == 0) {
        EXPECT_TRUE(packed.tables.empty());
    }
    const kernels::ShapView view = kernels::make_shap_view(kernels::shap_arrays(packed));
    std::vector<float> x(size_t(rows) * columns);
    for (float& v : x)
        v = std::uniform_int_distribution<int>(0, 9)(rng) == 0 ? std::nanf("") : testing::grid_value(rng);
    const int width = groups * (players + 1);
    std::vector<float> out(size_t(rows) * width, -7.0f);
    kernels::tree_shap(view, x.data(), rows, columns, out.data(), 2, kernels::Isa::Portable);
    for (int r = 0; r < rows; ++r) {
        const std::vector<double> want = shapley(p, x.data() + size_t(r) * columns, player, players);
        for (int g = 0; g < groups; ++g) {
            // The kernel leaves the bias slot 0: the program adds the expected values.
            EXPECT_NEAR(packed.expected[g], want[size_t(g) * (players + 1) + players], 1e-9) << "group " << g;
            EXPECT_EQ(out[size_t(r) * width + size_t(g) * (players + 1) + players], 0.0f);
            for (int i = 0; i < players; ++i)
                EXPECT_NEAR(out[size_t(r) * width + size_t(g) * (players + 1) + i], want[size_t(g) * (players + 1) + i],
                            1e-5 * (1.0 + std::fabs(want[size_t(g) * (players + 1) + i])))
                    << "row " << r << " group " << g << " player " << i;
        }
    }
    for (kernels::Isa isa : kernels::available_isas()) {
        std::vector<float> simd(out.size(), -7.0f);
        kernels::tree_shap(view, x.data(), rows, columns, simd.data(), 2, isa);
        size_t differ = 0, first = 0;
        for (size_t k = 0; k < out.size(); ++k)
            if (std::memcmp(&simd[k], &out[k], sizeof(float)) != 0 && differ++ == 0) first = k;
        EXPECT_EQ(differ, 0u) << kernels::isa_name(isa) << " differs from the portable path in " << differ
                              << " values, first at row " << first / width << " slot " << first % width << ": "
                              << simd[first] << " versus " << out[first];
    }
    return {packed.tables.size(), packed.path_values.size()};
}

TEST(TreeShap, EqualsTheShapleyValuesOfThePathDependentExpectation) {
    // Subtree tables as packed by default, one table per leaf, and no tables (per block).
    for (const kernels::ShapPacking packing : {kernels::ShapPacking{}, kernels::ShapPacking{10, 0},
                                               kernels::ShapPacking{0, 0}})
        for (unsigned seed = 1; seed <= 4; ++seed) {
            check(spec::Comparison::Less, 1, seed, packing);
            check(spec::Comparison::LessEqual, 3, seed + 10, packing);
        }
}

TEST(TreeShap, MixesTablesAndUntabledPaths) {
    for (unsigned seed = 1; seed <= 3; ++seed) {
        // Leaves of up to 3 features get a table, longer ones none; subtree tables may cover
        // leaves too long for their own.
        check(spec::Comparison::Less, 2, seed + 20, {3, 6});
        const Packed short_leaves = check(spec::Comparison::Less, 2, seed + 20, {3, 0});
        EXPECT_GT(short_leaves.table_values, 0u);
        EXPECT_GT(short_leaves.untabled_paths, 0u);
        // A budget too small for every leaf: smaller tables, then untabled leaves.
        const Packed budget = check(spec::Comparison::LessEqual, 1, seed + 30, {10, 8, 300});
        EXPECT_GT(budget.table_values, 0u);
        EXPECT_LE(budget.table_values, 300u);
        EXPECT_GT(budget.untabled_paths, 0u);
    }
}

TEST(TreeShap, DeepTreesSingleRowsAndPartialBlocks) {
    // Trees of more than 64 nodes; a single row; rows that end inside a 16-row vector.
    check(spec::Comparison::Less, 1, 41, {}, 8, 70);
    check(spec::Comparison::LessEqual, 2, 42, {}, 7, 1);
    check(spec::Comparison::Less, 1, 43, {}, 6, 37);
}

TEST(TreeShap, RefusesTreesWithoutCovers) {
    std::mt19937 rng(5);
    spec::Pipeline p = testing::make_pipeline(spec::Task::Regression, spec::PostTransform::Identity, 1, 3,
                                              spec::Comparison::Less);
    testing::add_trees(p, rng, 2, {});
    EXPECT_THROW(kernels::pack_shap(p.model, {0, 1, 2}, 3), Error);
}

}  // namespace
}  // namespace pg_predict
