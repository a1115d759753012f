// The shared tree-importer helpers (importers/tree_builder.hpp): threshold rounding that keeps every
// float32 input on its side of a double threshold, the tree checks, and the objective tables.
#include <cfloat>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "pg_predict/common/error.hpp"
#include "pg_predict/importers/tree_builder.hpp"

namespace importers = pg_predict::importers;
namespace spec = pg_predict::spec;
using pg_predict::Error;
using pg_predict::ErrorCategory;

namespace {

// The message of the InvalidModel error `f` throws ("" when it throws none).
template <class F>
std::string invalid_model(F f) {
    try {
        f();
    } catch (const Error& e) {
        EXPECT_EQ(static_cast<int>(e.category()), static_cast<int>(ErrorCategory::InvalidModel)) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
}

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

}  // namespace

TEST(TreeThresholds, EveryFloatInputStaysOnItsSide) {
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> any(-1e6, 1e6);
    for (int i = 0; i < 20000; ++i) {
        const double t = any(rng);
        const float down = importers::round_down_to_float(t);
        const float up = importers::round_up_to_float(t);
        ASSERT_LE(static_cast<double>(down), t);
        ASSERT_GE(static_cast<double>(up), t);
        // The float32 neighbours of t are where the comparisons could disagree.
        for (float x : {down, std::nextafter(down, HUGE_VALF), up, std::nextafter(up, -HUGE_VALF),
                        static_cast<float>(t)}) {
            ASSERT_EQ(x <= t, x <= down) << t;
            ASSERT_EQ(x < t, x < up) << t;
            ASSERT_EQ(x <= t, x <= importers::float_threshold(t, spec::Comparison::LessEqual));
            ASSERT_EQ(x < t, x < importers::float_threshold(t, spec::Comparison::Less));
        }
        ASSERT_LT(static_cast<double>(importers::float_below(t)), t);
    }
    EXPECT_EQ(importers::round_down_to_float(0.5), 0.5f);  // representable: unchanged
    EXPECT_EQ(importers::float_below(0.5), std::nextafter(0.5f, 0.0f));
    EXPECT_EQ(importers::round_down_to_float(1e39), FLT_MAX);
    EXPECT_TRUE(std::isnan(importers::round_down_to_float(NAN)));
}

TEST(TreeStructure, BuildKeepsReachableNodesInOrder) {
    // Node 1 is deleted (unreachable): dropped, the others renumbered 0, 1, 2.
    importers::NodeArrays n;
    n.left = {2, -1, -1, -1};
    n.right = {3, -1, -1, -1};
    n.feature = {1, 0, 0, 0};
    n.threshold = {0.5f, 0, 0, 0};
    n.default_left = {1, 0, 0, 0};
    n.value = {0, 9, -1, 1};
    spec::Tree t = importers::build_tree(n, 2, 2, importers::UnreachableNodes::Drop, "fmt: trees[0]");
    EXPECT_EQ(t.left, (std::vector<int32_t>{1, -1, -1}));
    EXPECT_EQ(t.right, (std::vector<int32_t>{2, -1, -1}));
    EXPECT_EQ(t.value, (std::vector<float>{0, -1, 1}));
    EXPECT_EQ(t.default_left, (std::vector<uint8_t>{1, 0, 0}));
    EXPECT_EQ(t.group, 2);
    EXPECT_TRUE(has(invalid_model([&] {
        importers::build_tree(n, 0, 2, importers::UnreachableNodes::Refuse, "fmt: trees[0]");
    }), "fmt: trees[0]: 1 node(s) are not reachable from the root"));
}

TEST(TreeStructure, MalformedTreesNameTheNode) {
    auto error = [](std::vector<int32_t> left, std::vector<int32_t> right, int32_t feature = 0,
                    float threshold = 0.5f) {
        importers::NodeArrays n;
        n.left = left;
        n.right = right;
        n.feature.assign(left.size(), 0);
        n.threshold.assign(left.size(), 0.0f);
        if (!left.empty()) {
            n.feature[0] = feature;
            n.threshold[0] = threshold;
        }
        n.value.assign(left.size(), 0.0f);
        return invalid_model([&] { importers::build_tree(n, 0, 3, importers::UnreachableNodes::Drop, "w"); });
    };
    EXPECT_EQ(error({1, -1, -1}, {-1, -1, -1}), "w: node 0 has exactly one child");
    EXPECT_EQ(error({1, -1, -1}, {5, -1, -1}), "w: node 0 has child 5 outside [0, 3)");
    EXPECT_EQ(error({1, -1, -1}, {-7, -1, -1}), "w: node 0 has child -7 outside [0, 3)");
    EXPECT_EQ(error({1, 0, -1}, {2, 2, -1}), "w: node 1 reaches node 0 a second time (shared node or cycle)");
    EXPECT_EQ(error({1, -1, -1}, {1, -1, -1}), "w: node 0 reaches node 1 a second time (shared node or cycle)");
    EXPECT_EQ(error({1, -1, -1}, {2, -1, -1}, 3), "w: node 0 splits on feature 3 but the model reads 3 features");
    EXPECT_EQ(error({1, -1, -1}, {2, -1, -1}, 0, NAN), "w: node 0 has a NaN threshold");
    EXPECT_EQ(error({}, {}), "w: has no nodes: a tree has at least a root");
}

TEST(TreeObjectives, TablesAndLinks) {
    const auto& o = importers::find_objective(importers::xgboost_objectives(), "binary:logistic", "XGBoost objective");
    EXPECT_EQ(o.task, spec::Task::Classification);
    EXPECT_EQ(o.transform, spec::PostTransform::Logistic);
    EXPECT_EQ(importers::base_score_to_margin(0.3f, o.link, "w"), -std::log(1.0f / 0.3f - 1.0f));
    try {
        importers::find_objective(importers::xgboost_objectives(), "survival:cox", "XGBoost objective");
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(static_cast<int>(e.category()), static_cast<int>(ErrorCategory::Unsupported));
        EXPECT_TRUE(has(e.what(), "XGBoost objective \"survival:cox\" is not supported; supported: reg:squarederror"));
    }
    EXPECT_TRUE(has(invalid_model([] { importers::base_score_to_margin(1.0f, importers::Link::Logit, "w"); }),
                    "w: must lie in (0, 1)"));
    EXPECT_EQ(importers::objective_names(importers::sklearn_hist_gradient_boosting_losses(false)),
              "squared_error, absolute_error, quantile, poisson");
}
