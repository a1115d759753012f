// The bitvector layout (QuickScorer) of the native tree kernel: leaf-wise trees of 2..256 leaves
// (one to eight words, blocks of many trees), both comparisons, NaN / ±inf / inputs equal to
// thresholds, row counts around the 8-, 16- and 256-row steps of the AVX2 path. Every path
// equals the generic walk over the same trees bit for bit (same decisions, same float sums in
// tree order) and the reference within 1e-5; which layout pack() chooses; corrupt arrays are
// refused by make_view.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "pg_predict/common/error.hpp"
#include "pg_predict/kernels/tree_bounds.hpp"
#include "pg_predict/kernels/tree_ensemble.hpp"
#include "pg_predict/spec/pipeline.hpp"
#include "tree_gen.hpp"

namespace pg_predict {
namespace {

using kernels::Isa;
using kernels::Layout;

// A leaf-wise tree as LightGBM grows one: split one leaf at a time until `leaves`. Splitting
// mostly the newest leaves makes long chains (deep, unbalanced trees).
spec::Tree leafwise_tree(std::mt19937& rng, int features, int leaves, int group) {
    spec::Tree t;
    t.group = group;
    auto add_leaf = [&] {
        t.left.push_back(-1);
        t.right.push_back(-1);
        t.feature.push_back(0);
        t.threshold.push_back(0.0f);
        t.default_left.push_back(0);
        t.value.push_back(static_cast<float>(std::uniform_real_distribution<double>(-1, 1)(rng)));
        return static_cast<int32_t>(t.left.size() - 1);
    };
    std::vector<int32_t> open{add_leaf()};
    while (static_cast<int>(open.size()) < leaves) {
        const size_t n = open.size();
        const size_t pick = rng() % 2 ? n - 1 - rng() % std::min<size_t>(n, 3) : rng() % n;
        const int32_t node = open[pick];
        open.erase(open.begin() + static_cast<long>(pick));
        t.feature[node] = static_cast<int32_t>(rng() % features);
        t.threshold[node] = testing::grid_value(rng);
        t.default_left[node] = rng() % 2;
        t.value[node] = 0.0f;
        const int32_t l = add_leaf(), r = add_leaf();
        t.left[node] = l;
        t.right[node] = r;
        open.push_back(l);
        open.push_back(r);
    }
    return t;
}

spec::Pipeline ensemble(std::mt19937& rng, int features, int groups, spec::Comparison cmp,
                        const std::vector<int>& leaf_counts) {
    spec::Pipeline p = testing::make_pipeline(spec::Task::Regression, spec::PostTransform::Identity, groups,
                                              features, cmp);
    for (size_t i = 0; i < leaf_counts.size(); ++i)
        p.model.trees.push_back(leafwise_tree(rng, features, leaf_counts[i], static_cast<int>(i) % groups));
    return p;
}

std::vector<float> scored(const kernels::PackedView& v, const std::vector<float>& x, int64_t rows, Isa isa) {
    std::vector<float> out(static_cast<size_t>(rows * v.num_groups), -12345.0f);
    kernels::score(v, x.data(), rows, v.num_features, out.data(), isa);
    return out;
}

// Margins by the reference walk, tree by tree in tree order, in double.
std::vector<double> reference(const spec::TreeEnsemble& e, const std::vector<float>& x, int64_t rows) {
    std::vector<double> out(static_cast<size_t>(rows * e.num_groups), 0.0);
    for (int64_t r = 0; r < rows; ++r)
        for (const spec::Tree& t : e.trees) {
            int32_t n = 0;
            while (!t.is_leaf(n)) {
                const float v = x[r * e.num_features + t.feature[n]];
                const bool left = std::isnan(v) ? t.default_left[n] != 0
                                  : e.comparison == spec::Comparison::LessEqual ? v <= t.threshold[n]
                                                                               : v < t.threshold[n];
                n = left ? t.left[n] : t.right[n];
            }
            out[r * e.num_groups + t.group] += t.value[n];
        }
    return out;
}

void check_ensemble(const spec::Pipeline& p, std::mt19937& rng, const char* what) {
    const kernels::PackedEnsemble packed = kernels::pack(p.model, false);
    ASSERT_EQ(packed.meta[kernels::kMetaLayout], static_cast<int64_t>(Layout::Bitvector)) << what;
    const kernels::PackedView view = kernels::make_view(packed);
    const kernels::PackedView generic = kernels::generic_part(view);
    ASSERT_EQ(generic.layout, Layout::Generic);
    for (int64_t rows : {1, 7, 8, 9, 15, 16, 17, 255, 256, 257, 700}) {
        const std::vector<float> x = testing::random_inputs(rng, rows, p.model.num_features);
        const std::vector<float> walk = scored(generic, x, rows, Isa::Portable);
        const std::vector<double> want = reference(p.model, x, rows);
        // float sums of T leaves in [-1, 1]: the rounding of T additions to sums of a few units
        const double rounding = 4e-7 * static_cast<double>(p.model.trees.size()) / p.model.num_groups;
        for (size_t i = 0; i < want.size(); ++i)
            ASSERT_NEAR(want[i], walk[i], 1e-5 * std::max(1.0, std::fabs(want[i])) + rounding)
                << what << " element " << i;
        for (Isa isa : kernels::available_isas()) {
            const std::vector<float> got = scored(view, x, rows, isa);
            EXPECT_EQ(0, std::memcmp(walk.data(), got.data(), got.size() * sizeof(float)))
                << what << ": the bitvector layout (" << kernels::isa_name(isa) << ") differs from the generic walk, "
                << rows << " rows";
        }
    }
}

TEST(BitvectorKernel, EqualsTheGenericWalkBitForBit) {
    if (!kernels::bitvector_built()) GTEST_SKIP() << "built without the bitvector layout";
    unsigned seed = 1;
    for (spec::Comparison cmp : {spec::Comparison::Less, spec::Comparison::LessEqual})
        for (int groups : {1, 3}) {
            std::mt19937 rng(seed++);
            // One word (2..32 leaves), two (33), full words (32, 64), eight (256), and a mix.
            for (const std::vector<int>& counts :
                 {std::vector<int>(40, 31), std::vector<int>{2, 32, 33, 64, 65, 5, 256, 17},
                  std::vector<int>(9, 256), std::vector<int>{1, 3, 1, 31}}) {
                const spec::Pipeline p = ensemble(rng, 9, groups, cmp, counts);
                check_ensemble(p, rng, cmp == spec::Comparison::Less ? "x < t" : "x <= t");
            }
        }
}

// pg_predict.bitvector_layout = off: a model packed with the layout is scored through its
// generic part, bit for bit the same.
TEST(BitvectorKernel, TurnedOffScoresTheGenericPart) {
    if (!kernels::bitvector_built()) GTEST_SKIP() << "built without the bitvector layout";
    std::mt19937 rng(11);
    const spec::Pipeline p = ensemble(rng, 9, 2, spec::Comparison::Less, std::vector<int>(40, 31));
    const kernels::PackedEnsemble packed = kernels::pack(p.model, false);
    const kernels::PackedView view = kernels::make_view(packed);
    ASSERT_EQ(view.layout, Layout::Bitvector);
    const int64_t rows = 300;
    const std::vector<float> x = testing::random_inputs(rng, rows, p.model.num_features);
    const std::vector<float> walk = scored(kernels::generic_part(view), x, rows, Isa::Portable);
    const std::vector<float> on = scored(view, x, rows, Isa::Portable);
    kernels::set_bitvector_enabled(false);
    const std::vector<float> off = scored(view, x, rows, Isa::Portable);
    kernels::set_bitvector_enabled(true);
    EXPECT_EQ(0, std::memcmp(walk.data(), off.data(), off.size() * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(on.data(), off.data(), off.size() * sizeof(float)));
    EXPECT_TRUE(kernels::bitvector_enabled());
}

TEST(BitvectorKernel, ManyBlocksAndWideRows) {
    if (!kernels::bitvector_built()) GTEST_SKIP() << "built without the bitvector layout";
    std::mt19937 rng(77);
    // 600 trees of 31 leaves: 600 words, three blocks; 200 features (past the perfect layout's 128)
    std::vector<int> counts(600, 31);
    counts[100] = 200;
    check_ensemble(ensemble(rng, 200, 1, spec::Comparison::Less, counts), rng, "600 trees");
    // trees of 8 words fill blocks of 256 words exactly
    check_ensemble(ensemble(rng, 28, 2, spec::Comparison::LessEqual, std::vector<int>(70, 250)), rng, "8-word trees");
}

TEST(BitvectorKernel, ChoosesTheLayoutByShape) {
    if (!kernels::bitvector_built()) GTEST_SKIP() << "built without the bitvector layout";
    std::mt19937 rng(5);
    // Leaf-wise trees of 31 leaves, deeper than the perfect layout: bitvector.
    spec::Pipeline deep = ensemble(rng, 28, 1, spec::Comparison::Less, std::vector<int>(50, 31));
    ASSERT_GT(deep.model.max_depth(), 12);
    EXPECT_EQ(kernels::choose_layout(deep.model), Layout::Bitvector);
    // Full trees of depth 6: the perfect layout walks them faster.
    spec::Pipeline full = testing::make_pipeline(spec::Task::Regression, spec::PostTransform::Identity, 1, 28,
                                                 spec::Comparison::Less);
    testing::TreeShape shape;
    shape.max_depth = 6;
    shape.leaf_probability = 0.0;
    testing::add_trees(full, rng, 50, shape);
    EXPECT_EQ(kernels::choose_layout(full.model), Layout::Perfect);
    EXPECT_EQ(kernels::pack(full.model).meta[kernels::kMetaLayout], static_cast<int64_t>(Layout::Perfect));
    // Small leaf-wise trees (depth ≤ 8): the perfect layout keeps them.
    spec::Pipeline small = ensemble(rng, 28, 1, spec::Comparison::Less, std::vector<int>(50, 8));
    ASSERT_LE(small.model.max_depth(), 8);
    EXPECT_EQ(kernels::choose_layout(small.model), Layout::Perfect);
    // A tree of more than 256 leaves: generic.
    spec::Pipeline big = ensemble(rng, 28, 1, spec::Comparison::Less, {31, 257});
    EXPECT_EQ(kernels::choose_layout(big.model), Layout::Generic);
    EXPECT_EQ(kernels::pack(big.model).meta[kernels::kMetaLayout], static_cast<int64_t>(Layout::Generic));
    // Rows of more than 4096 features: generic (each feature is a loop for every 16 rows).
    EXPECT_EQ(kernels::choose_layout(ensemble(rng, 5000, 1, spec::Comparison::Less, {31, 31}).model), Layout::Generic);
    // A NaN threshold has no place in the sorted thresholds: generic.
    spec::Pipeline nan = ensemble(rng, 28, 1, spec::Comparison::Less, std::vector<int>(5, 31));
    nan.model.trees[2].threshold[0] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_EQ(kernels::choose_layout(nan.model), Layout::Generic);
}

TEST(BitvectorKernel, EarlyExitStagesWalkTheGenericPart) {
    if (!kernels::bitvector_built()) GTEST_SKIP() << "built without the bitvector layout";
    std::mt19937 rng(21);
    const spec::Pipeline p = ensemble(rng, 8, 1, spec::Comparison::Less, std::vector<int>(40, 31));
    const kernels::PackedEnsemble packed = kernels::pack(p.model, false);
    const kernels::PackedView v = kernels::make_view(packed);
    ASSERT_EQ(v.layout, Layout::Bitvector);
    ASSERT_TRUE(kernels::can_stage(v));
    const kernels::StagedEnsemble s = kernels::stage(v);
    EXPECT_EQ(s.trees, 40);
    ASSERT_FALSE(s.stages.empty());
    for (const kernels::PackedView& stage : s.stages) EXPECT_EQ(stage.layout, Layout::Generic);
}

TEST(BitvectorKernel, RejectsCorruptArrays) {
    if (!kernels::bitvector_built()) GTEST_SKIP() << "built without the bitvector layout";
    std::mt19937 rng(9);
    const spec::Pipeline p = ensemble(rng, 6, 1, spec::Comparison::Less, {31, 40, 7});
    const kernels::PackedEnsemble good = kernels::pack(p.model, false);
    ASSERT_NO_THROW(kernels::make_view(good));
    const kernels::PackedView v = kernels::make_view(good);
    const int64_t generic_words = 4 * v.num_leaves;  // the entries follow the generic nodes
    auto refused = [](kernels::PackedEnsemble bad) {
        EXPECT_THROW(kernels::make_view(bad), pg_predict::Error);
    };
    {
        kernels::PackedEnsemble bad = good;
        bad.meta.resize(kernels::kMetaSize);  // the header without the bitvector slots
        refused(bad);
    }
    {
        kernels::PackedEnsemble bad = good;
        bad.nodes[generic_words] = 999;  // an entry's word outside its block
        refused(bad);
    }
    {
        kernels::PackedEnsemble bad = good;
        bool swapped = false;  // thresholds out of order within one feature's run
        for (int64_t k = 0; k < v.bits.blocks * v.num_features && !swapped; ++k) {
            const int64_t e0 = v.bits.entry_begin[k], e1 = v.bits.entry_begin[k + 1];
            if (e1 - e0 >= 2 && bad.cuts[e0] < bad.cuts[e1 - 1]) {
                std::swap(bad.cuts[e0], bad.cuts[e1 - 1]);
                swapped = true;
            }
        }
        ASSERT_TRUE(swapped);
        refused(bad);
        bad = good;
        bad.cuts[0] = std::numeric_limits<float>::quiet_NaN();
        refused(bad);
    }
    {
        kernels::PackedEnsemble bad = good;
        bad.leaves.pop_back();  // sizes no longer match the header
        refused(bad);
    }
    {
        kernels::PackedEnsemble bad = good;
        bad.aux[bad.aux.size() - 1] = static_cast<int32_t>(bad.leaves.size());  // a leaf base past the leaves
        refused(bad);
    }
}

}  // namespace
}  // namespace pg_predict
