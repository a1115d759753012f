// Every tree strategy, compiled, serialized, loaded and run, must agree with
// spec::reference_predict: the same leaf for every row and tree, outputs within 1e-5.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "pg_predict/common/error.hpp"
#include "pg_predict/compiler/compile.hpp"
#include "pg_predict/runtime/api.hpp"
#include "pg_predict/runtime/strategies.hpp"
#include "tree_gen.hpp"

namespace pg_predict {
namespace {

using compiler::Strategy;
using spec::Comparison;
using spec::PostTransform;
using spec::Task;
using testing::TreeShape;

int64_t next_program_id() {
    static int64_t id = int64_t(1) << 40;
    return ++id;
}

std::vector<float> run_compiled(const spec::Pipeline& p, Strategy s, const std::vector<float>& x,
                                int64_t rows) {
    const std::string bytes = compiler::compile(p, s);
    runtime::Program* prog = runtime::load_program(next_program_id(), bytes.data(), bytes.size());
    const int width = runtime::program_output_width(prog);
    EXPECT_EQ(width, p.output_width());
    std::vector<float> out(static_cast<size_t>(rows * width), -12345.0f);
    runtime::run_program(prog, x.data(), rows, p.model.num_features, out.data());
    runtime::release_program(prog);
    return out;
}

void expect_matches_reference(const spec::Pipeline& p, Strategy s, int64_t rows, uint32_t seed) {
    std::mt19937 rng(seed);
    const std::vector<float> x = testing::random_inputs(rng, rows, p.model.num_features);
    std::vector<float> want(static_cast<size_t>(rows * p.output_width()));
    spec::reference_predict(p, x.data(), rows, want.data());
    const std::vector<float> got = run_compiled(p, s, x, rows);
    ASSERT_EQ(got.size(), want.size());
    int bad = 0;
    for (size_t i = 0; i < want.size() && bad < 5; ++i) {
        const float tol = 1e-5f * std::max(1.0f, std::fabs(want[i]));
        if (!(std::fabs(got[i] - want[i]) <= tol)) {
            ++bad;
            ADD_FAILURE() << compiler::strategy_name(s) << ": row " << i / p.output_width() << " col "
                          << i % p.output_width() << ": got " << got[i] << ", reference " << want[i];
        }
    }
}

class StrategyTest : public ::testing::TestWithParam<Strategy> {
protected:
    // Deep-tree limits that keep GEMM's 2^depth matrices and PTT's perfect trees small.
    int deep_limit() const {
        switch (GetParam()) {
        case Strategy::Gemm: return 8;
        case Strategy::PerfectTreeTraversal: return 12;
        default: return 14;  // native: beyond kernels::kMaxPerfectDepth, the generic layout
        }
    }
};

TEST_P(StrategyTest, ShallowRegressionBothComparisons) {
    for (Comparison cmp : {Comparison::Less, Comparison::LessEqual}) {
        std::mt19937 rng(1);
        auto p = testing::make_pipeline(Task::Regression, PostTransform::Identity, 1, 10, cmp);
        testing::add_trees(p, rng, 50, TreeShape{4, 0.3, true});
        expect_matches_reference(p, GetParam(), 2000, 11);
    }
}

TEST_P(StrategyTest, DeepUnbalancedTrees) {
    for (Comparison cmp : {Comparison::Less, Comparison::LessEqual}) {
        std::mt19937 rng(2);
        auto p = testing::make_pipeline(Task::Regression, PostTransform::Identity, 1, 12, cmp);
        testing::add_trees(p, rng, 20, TreeShape{deep_limit(), 0.35, true});
        ASSERT_EQ(p.model.max_depth(), deep_limit());
        expect_matches_reference(p, GetParam(), 3000, 12);
    }
}

TEST_P(StrategyTest, AllSingleLeafTrees) {
    std::mt19937 rng(3);
    auto p = testing::make_pipeline(Task::Regression, PostTransform::Identity, 1, 4, Comparison::Less);
    testing::add_trees(p, rng, 7, TreeShape{0, 0.0, false});
    ASSERT_EQ(p.model.max_depth(), 0);
    expect_matches_reference(p, GetParam(), 100, 13);
}

TEST_P(StrategyTest, SingleLeafTreesMixedWithDeepOnes) {
    std::mt19937 rng(4);
    auto p = testing::make_pipeline(Task::Classification, PostTransform::Softmax, 3, 6, Comparison::LessEqual);
    for (int i = 0; i < 9; ++i) {
        const TreeShape shape = i % 3 == 1 ? TreeShape{0, 0.0, false} : TreeShape{std::min(7, deep_limit()), 0.4, i == 0};
        p.model.trees.push_back(testing::random_tree(rng, 6, shape, i % 3));
    }
    expect_matches_reference(p, GetParam(), 1500, 14);
}

TEST_P(StrategyTest, BinaryLogisticGivesTwoColumns) {
    std::mt19937 rng(5);
    auto p = testing::make_pipeline(Task::Classification, PostTransform::Logistic, 1, 8, Comparison::Less);
    testing::add_trees(p, rng, 30, TreeShape{5, 0.25, true});
    ASSERT_EQ(p.output_width(), 2);
    expect_matches_reference(p, GetParam(), 1000, 15);
}

TEST_P(StrategyTest, MulticlassSoftmax) {
    std::mt19937 rng(6);
    auto p = testing::make_pipeline(Task::Classification, PostTransform::Softmax, 4, 9, Comparison::Less);
    testing::add_trees(p, rng, 40, TreeShape{6, 0.3, true});
    expect_matches_reference(p, GetParam(), 1000, 16);
}

TEST_P(StrategyTest, ExpRegression) {
    std::mt19937 rng(7);
    auto p = testing::make_pipeline(Task::Regression, PostTransform::Exp, 1, 5, Comparison::LessEqual);
    testing::add_trees(p, rng, 10, TreeShape{3, 0.2, true});
    expect_matches_reference(p, GetParam(), 500, 17);
}

TEST_P(StrategyTest, ManyTreesAcrossRowChunks) {
    // Enough trees and rows that forward() scores the batch in several chunks.
    std::mt19937 rng(8);
    auto p = testing::make_pipeline(Task::Classification, PostTransform::Logistic, 1, 28, Comparison::Less);
    testing::add_trees(p, rng, 600, TreeShape{5, 0.2, true});
    expect_matches_reference(p, GetParam(), 4001, 18);
}

TEST_P(StrategyTest, InfiniteThresholdsKeepPerNodeDefaults) {
    // Non-finite thresholds disable folding NaN into the inputs (the ±inf trick needs
    // finite thresholds): the per-node default direction path must agree as well.
    for (Comparison cmp : {Comparison::Less, Comparison::LessEqual}) {
        std::mt19937 rng(21);
        auto p = testing::make_pipeline(Task::Regression, PostTransform::Identity, 1, 5, cmp);
        testing::add_trees(p, rng, 25, TreeShape{5, 0.3, true});
        const float inf = std::numeric_limits<float>::infinity();
        int k = 0;
        for (spec::Tree& t : p.model.trees)
            for (size_t n = 0; n < t.size(); ++n)
                if (!t.is_leaf(n) && ++k % 5 == 0) t.threshold[n] = k % 10 == 0 ? inf : -inf;
        expect_matches_reference(p, GetParam(), 2000, 21);
    }
}

TEST_P(StrategyTest, OneRowAndNoTrees) {
    std::mt19937 rng(9);
    auto p = testing::make_pipeline(Task::Regression, PostTransform::Identity, 1, 3, Comparison::Less);
    expect_matches_reference(p, GetParam(), 5, 19);  // base margin only
    testing::add_trees(p, rng, 3, TreeShape{3, 0.3, true});
    expect_matches_reference(p, GetParam(), 1, 20);
}

INSTANTIATE_TEST_SUITE_P(AllStrategies, StrategyTest,
                         ::testing::Values(Strategy::Gemm, Strategy::TreeTraversal,
                                           Strategy::PerfectTreeTraversal, Strategy::Native),
                         [](const ::testing::TestParamInfo<Strategy>& info) {
                             return std::string(compiler::strategy_name(info.param));
                         });

TEST(StrategyNames, ParseRoundTripsAndRejectsUnknown) {
    for (Strategy s : {Strategy::Auto, Strategy::Gemm, Strategy::TreeTraversal, Strategy::PerfectTreeTraversal,
                       Strategy::Native})
        EXPECT_EQ(compiler::parse_strategy(compiler::strategy_name(s)), s);
    EXPECT_STREQ(compiler::strategy_name(Strategy::Native), "native");
    try {
        compiler::parse_strategy("fast");
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::InvalidParameter);
        EXPECT_NE(std::string(e.what()).find("tree_traversal"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("native"), std::string::npos) << e.what();
    }
}

// pg_predict.strategy's enum values: auto first, then every strategy parse_strategy knows,
// each once, then the end.
TEST(StrategyNames, SettingValuesAreTheCompilersStrategies) {
    std::vector<std::string> names;
    for (size_t i = 0; runtime::strategy_name_at(i) != nullptr; i++) names.push_back(runtime::strategy_name_at(i));
    ASSERT_EQ(names.size(), 5u);
    EXPECT_EQ(names[0], "auto");
    for (const std::string& n : names) {
        EXPECT_STREQ(compiler::strategy_name(compiler::parse_strategy(n)), n.c_str());
        EXPECT_EQ(std::count(names.begin(), names.end(), n), 1) << n;
    }
    EXPECT_EQ(runtime::strategy_name_at(1000), nullptr);
}

TEST(StrategyNames, CpuBuildChoosesNativeForEveryEnsemble) {
    std::mt19937 rng(10);
    for (int d : {0, 3, 8, 12, 20}) {
        auto p = testing::make_pipeline(Task::Regression, PostTransform::Identity, 1, 4, Comparison::Less);
        testing::add_trees(p, rng, 2, TreeShape{d, 0.0, d > 0});
        EXPECT_EQ(compiler::choose_strategy(p), Strategy::Native) << d;
    }
    auto wide = testing::make_pipeline(Task::Classification, PostTransform::Softmax, 3, 300, Comparison::LessEqual);
    testing::add_trees(wide, rng, 6, TreeShape{5, 0.2, true});
    EXPECT_EQ(compiler::choose_strategy(wide), Strategy::Native);
}

TEST(StrategyNames, TensorHeuristicFollowsDepth) {
    std::mt19937 rng(10);
    auto depth = [&](int d) {
        auto p = testing::make_pipeline(Task::Regression, PostTransform::Identity, 1, 4, Comparison::Less);
        testing::add_trees(p, rng, 2, TreeShape{d, 0.0, true});
        return compiler::choose_tensor_strategy(p);
    };
    EXPECT_EQ(depth(0), Strategy::Gemm);
    EXPECT_EQ(depth(3), Strategy::Gemm);
    EXPECT_EQ(depth(4), Strategy::PerfectTreeTraversal);
    EXPECT_EQ(depth(10), Strategy::PerfectTreeTraversal);
    EXPECT_EQ(depth(11), Strategy::TreeTraversal);
}

TEST(CompileLimits, OversizedGemmIsRefusedWithAdvice) {
    std::mt19937 rng(11);
    auto p = testing::make_pipeline(Task::Regression, PostTransform::Identity, 1, 4, Comparison::Less);
    testing::add_trees(p, rng, 1000, TreeShape{10, 0.0, true});  // C alone would be 4 GiB
    try {
        compiler::compile(p, Strategy::Gemm);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::InvalidParameter);
        EXPECT_NE(std::string(e.what()).find("tree_traversal"), std::string::npos) << e.what();
    }
}

TEST(CompileLimits, AutoMustBeResolvedFirst) {
    auto p = testing::make_pipeline(Task::Regression, PostTransform::Identity, 1, 2, Comparison::Less);
    std::mt19937 rng(12);
    testing::add_trees(p, rng, 1, TreeShape{2, 0.0, true});
    EXPECT_THROW(compiler::compile(p, Strategy::Auto), Error);
}

}  // namespace
}  // namespace pg_predict
