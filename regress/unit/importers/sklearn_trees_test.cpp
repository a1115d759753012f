// scikit-learn tree models (src/importers/sklearn/trees.cpp): hand-made export
// documents whose expected leaves follow from the trees, and documents exported from
// scikit-learn 1.2.1 by regress/fixtures/sklearn_trees/make_fixtures.py with scikit-learn's own
// predictions.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pg_predict/common/error.hpp"
#include "pg_predict/compiler/compile.hpp"
#include "pg_predict/importers/sklearn.hpp"
#include "pg_predict/runtime/api.hpp"

namespace spec = pg_predict::spec;
namespace importers = pg_predict::importers;
namespace compiler = pg_predict::compiler;
namespace runtime = pg_predict::runtime;
using nlohmann::json;
using pg_predict::Error;
using pg_predict::ErrorCategory;

namespace {

spec::Pipeline empty_pipeline(spec::Task task, std::vector<double> classes, int features) {
    spec::Pipeline p;
    p.source_format = "sklearn";
    p.task = task;
    p.classes = std::move(classes);
    p.features.assign(features, "");
    return p;
}

spec::Pipeline import_step(const json& step, spec::Task task, std::vector<double> classes,
                           int features) {
    spec::Pipeline p = empty_pipeline(task, std::move(classes), features);
    importers::import_sklearn_estimator(step, features, p);
    spec::validate(p);
    return p;
}

std::vector<float> reference(const spec::Pipeline& p, const std::vector<float>& x) {
    const int64_t rows = static_cast<int64_t>(x.size()) / p.input_width();
    std::vector<float> out(rows * p.output_width());
    spec::reference_predict(p, x.data(), rows, out.data());
    return out;
}

std::string error_of(const json& step, spec::Task task, std::vector<double> classes, int features,
                     ErrorCategory want) {
    spec::Pipeline p = empty_pipeline(task, std::move(classes), features);
    try {
        importers::import_sklearn_estimator(step, features, p);
    } catch (const Error& e) {
        EXPECT_EQ(static_cast<int>(e.category()), static_cast<int>(want)) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no error for " << step.dump();
    return "";
}

bool has(const std::string& msg, const std::string& part) {
    return msg.find(part) != std::string::npos;
}

// x0 <= t ? left : right, as sklearn writes it.
json stump(double t, json left_value, json right_value, int feature = 0) {
    return {{"children_left", {1, -1, -1}},
            {"children_right", {2, -1, -1}},
            {"feature", {feature, -2, -2}},
            {"threshold", {t, -2.0, -2.0}},
            {"value", {json::array({left_value}), json::array({left_value}),
                       json::array({right_value})}}};
}

constexpr spec::Task kClf = spec::Task::Classification;
constexpr spec::Task kReg = spec::Task::Regression;

// --- hand-made documents ------------------------------------------------------------------

TEST(SklearnTrees, WhatIsNoEstimatorIsRefusedByName) {
    // The registry names what it supports; a transformer is no final estimator.
    std::string e = error_of(json{{"type", "KernelRidge"}}, kReg, {}, 1, ErrorCategory::Unsupported);
    EXPECT_TRUE(has(e, "estimator \"KernelRidge\" is not supported; supported: LinearRegression")) << e;
    EXPECT_TRUE(has(e, "RandomForestClassifier")) << e;
    EXPECT_TRUE(has(error_of(json{{"type", "StandardScaler"}}, kReg, {}, 1, ErrorCategory::Unsupported),
                    "\"StandardScaler\" is not supported"));
    EXPECT_TRUE(has(error_of(json{{"coef", {1}}}, kReg, {}, 1, ErrorCategory::InvalidModel), "step.type: is missing"));
    EXPECT_TRUE(has(error_of(json::array(), kReg, {}, 1, ErrorCategory::InvalidModel), "step: must be an object"));
}

TEST(SklearnTrees, ThresholdRoundsDownAndLessEqualGoesLeft) {
    // 0.1 (float64) lies below float32(0.1): the importer keeps the float32 just under it.
    json step = {{"type", "DecisionTreeRegressor"}, {"trees", {stump(0.1, {2.0}, {5.0})}}};
    spec::Pipeline p = import_step(step, kReg, {}, 1);
    ASSERT_EQ(p.model.trees.size(), 1u);
    EXPECT_EQ(p.model.comparison, spec::Comparison::LessEqual);
    const float t = p.model.trees[0].threshold[0];
    EXPECT_LE(static_cast<double>(t), 0.1);
    EXPECT_GT(static_cast<double>(std::nextafter(t, 1.0f)), 0.1);
    EXPECT_EQ(t, std::nextafter(0.1f, 0.0f));
    // float32(0.1) > 0.1 goes right in scikit-learn; its predecessor goes left.
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> x = {std::nextafter(0.1f, 0.0f), 0.1f, -3.0f, nan};
    const std::vector<float> got = reference(p, x);
    ASSERT_EQ(got.size(), 4u);
    EXPECT_EQ(std::vector<float>(got.begin(), got.begin() + 3), (std::vector<float>{2, 5, 2}));
    EXPECT_TRUE(std::isnan(got[3]));  // no rule for a missing value (scikit-learn 1.2 raises): no prediction
    EXPECT_EQ(p.model.inputs_without_missing_rule, std::vector<int32_t>{0});

    // A threshold exactly representable in float32 stays as it is, and x == t goes left.
    step["trees"][0]["threshold"][0] = 0.5;
    p = import_step(step, kReg, {}, 1);
    EXPECT_EQ(p.model.trees[0].threshold[0], 0.5f);
    EXPECT_EQ(reference(p, {0.5f, std::nextafter(0.5f, 1.0f)}), (std::vector<float>{2, 5}));
}

TEST(SklearnTrees, ClassifierLeavesAreNormalizedCountsOneTreePerClass) {
    // Leaf values are weighted counts; a zero row stays zero (predict_proba's normalizer).
    json step = {{"type", "DecisionTreeClassifier"},
                 {"n_classes", 3},
                 {"trees", {stump(1.5, {3.0, 1.0, 0.0}, {0.0, 0.0, 0.0})}}};
    spec::Pipeline p = import_step(step, kClf, {10, 20, 30}, 2);
    ASSERT_EQ(p.model.trees.size(), 3u);
    EXPECT_EQ(p.model.num_groups, 3);
    EXPECT_EQ(p.transform, spec::PostTransform::Identity);
    for (int k = 0; k < 3; ++k) EXPECT_EQ(p.model.trees[k].group, k);
    EXPECT_EQ(reference(p, {1.0f, 0.0f, 2.0f, 0.0f}),
              (std::vector<float>{0.75f, 0.25f, 0.0f, 0.0f, 0.0f, 0.0f}));
}

TEST(SklearnTrees, BinaryClassifierHasOneGroupAndItsComplement) {
    json step = {{"type", "DecisionTreeClassifier"},
                 {"n_classes", 2},
                 {"trees", {stump(0.0, {1.0, 3.0}, {2.0, 0.0})}}};
    spec::Pipeline p = import_step(step, kClf, {0, 1}, 1);
    EXPECT_EQ(p.model.num_groups, 1);  // P(class 1); P(class 0) = 1 - it
    EXPECT_EQ(p.transform, spec::PostTransform::Complement);
    EXPECT_EQ(p.model.trees.size(), 1u);
    EXPECT_EQ(p.output_width(), 2);
    EXPECT_EQ(reference(p, {-1.0f, 1.0f}), (std::vector<float>{0.25f, 0.75f, 1.0f, 0.0f}));
}

TEST(SklearnTrees, ForestsAverageTheTreesProbabilities) {
    json step = {{"type", "RandomForestClassifier"},
                 {"n_classes", 2},
                 {"trees", {stump(0.0, {1.0, 3.0}, {2.0, 0.0}),
                            stump(5.0, {4.0, 1.0}, {0.0, 7.0}, 1)}}};
    spec::Pipeline p = import_step(step, kClf, {0, 1}, 2);
    ASSERT_EQ(p.model.trees.size(), 2u);  // binary: one group
    // row (-1, 0): tree 0 → (1/4, 3/4), tree 1 → (4/5, 1/5); row (1, 9): (1, 0), (0, 1).
    const std::vector<float> got = reference(p, {-1.0f, 0.0f, 1.0f, 9.0f});
    const double want[] = {(0.25 + 0.8) / 2, (0.75 + 0.2) / 2, 0.5, 0.5};
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(got[i], want[i], 1e-7) << i;

    json reg = {{"type", "ExtraTreesRegressor"},
                {"trees", {stump(0.0, {1.0}, {2.0}), stump(0.0, {10.0}, {20.0}),
                           stump(0.0, {100.0}, {200.0})}}};
    p = import_step(reg, kReg, {}, 1);
    const std::vector<float> r = reference(p, {-1.0f, 1.0f});
    EXPECT_NEAR(r[0], 111.0 / 3, 1e-5);
    EXPECT_NEAR(r[1], 222.0 / 3, 1e-5);
}

TEST(SklearnTrees, GradientBoostingFoldsTheLearningRate) {
    // Binary log_loss: one group, base margin = init, leaves = lr · value, logistic.
    json step = {{"type", "GradientBoostingClassifier"},
                 {"loss", "log_loss"},
                 {"learning_rate", 0.1},
                 {"init", {0.25}},
                 {"n_classes", 2},
                 {"trees", {{stump(0.0, {-1.0}, {2.0})}, {stump(1.0, {0.5}, {-0.5})}}}};
    spec::Pipeline p = import_step(step, kClf, {0, 1}, 1);
    EXPECT_EQ(p.transform, spec::PostTransform::Logistic);
    EXPECT_EQ(p.model.num_groups, 1);
    EXPECT_EQ(p.model.base_margin, (std::vector<float>{0.25f}));
    EXPECT_EQ(p.model.trees[0].value[1], static_cast<float>(0.1 * -1.0));
    auto sigmoid = [](double m) { return 1.0 / (1.0 + std::exp(-m)); };
    std::vector<float> got = reference(p, {-1.0f, 2.0f});
    EXPECT_NEAR(got[1], sigmoid(0.25 + 0.1 * (-1.0 + 0.5)), 1e-6);
    EXPECT_NEAR(got[3], sigmoid(0.25 + 0.1 * (2.0 - 0.5)), 1e-6);
    EXPECT_NEAR(got[0] + got[1], 1.0, 1e-6);

    // exponential: predict_proba = expit(2 · raw).
    step["loss"] = "exponential";
    p = import_step(step, kClf, {0, 1}, 1);
    got = reference(p, {-1.0f, 2.0f});
    EXPECT_NEAR(got[1], sigmoid(2 * (0.25 + 0.1 * (-1.0 + 0.5))), 1e-6);
    EXPECT_NEAR(got[3], sigmoid(2 * (0.25 + 0.1 * (2.0 - 0.5))), 1e-6);

    // Multiclass: one tree per class per stage, softmax.
    json multi = {{"type", "GradientBoostingClassifier"},
                  {"loss", "log_loss"},
                  {"learning_rate", 0.5},
                  {"init", {-1.0, 0.0, 1.0}},
                  {"n_classes", 3},
                  {"trees", {{stump(0.0, {1.0}, {0.0}), stump(0.0, {0.0}, {1.0}),
                              stump(0.0, {2.0}, {-2.0})}}}};
    p = import_step(multi, kClf, {1, 2, 3}, 1);
    EXPECT_EQ(p.transform, spec::PostTransform::Softmax);
    EXPECT_EQ(p.model.num_groups, 3);
    got = reference(p, {-1.0f});
    const double m[3] = {-1.0 + 0.5, 0.0, 1.0 + 1.0};
    const double z = std::exp(m[0]) + std::exp(m[1]) + std::exp(m[2]);
    for (int k = 0; k < 3; ++k) EXPECT_NEAR(got[k], std::exp(m[k]) / z, 1e-6);

    // Regressor: raw for every loss.
    json reg = {{"type", "GradientBoostingRegressor"},
                {"loss", "quantile"},
                {"learning_rate", 0.1},
                {"init", 3.5},
                {"trees", {{stump(0.0, {10.0}, {20.0})}}}};
    p = import_step(reg, kReg, {}, 1);
    EXPECT_EQ(p.transform, spec::PostTransform::Identity);
    EXPECT_NEAR(reference(p, {1.0f})[0], 5.5, 1e-6);
}

TEST(SklearnTrees, MalformedTreesNameTheFieldAndTree) {
    auto forest = [](json tree) {
        return json{{"type", "RandomForestRegressor"}, {"trees", {stump(0.0, {1.0}, {2.0}), tree}}};
    };
    json t = stump(0.0, {1.0}, {2.0});
    t["children_left"][0] = 7;
    EXPECT_TRUE(has(error_of(forest(t), kReg, {}, 1, ErrorCategory::InvalidModel),
                    "trees[1].children_left[0]"));
    t = stump(0.0, {1.0}, {2.0});
    t["children_left"][0] = 2;  // node 2 reached twice
    EXPECT_TRUE(has(error_of(forest(t), kReg, {}, 1, ErrorCategory::InvalidModel), "trees[1]"));
    t = stump(0.0, {1.0}, {2.0});
    t["feature"][0] = 3;
    EXPECT_TRUE(has(error_of(forest(t), kReg, {}, 1, ErrorCategory::InvalidModel),
                    "trees[1].feature[0]"));
    t = stump(0.0, {1.0}, {2.0});
    t["threshold"].erase(2);
    EXPECT_TRUE(has(error_of(forest(t), kReg, {}, 1, ErrorCategory::InvalidModel),
                    "trees[1].threshold"));
    t = stump(0.0, {1.0}, {2.0});
    t["threshold"][0] = "NaN";
    EXPECT_TRUE(has(error_of(forest(t), kReg, {}, 1, ErrorCategory::InvalidModel),
                    "trees[1].threshold[0]"));
    t = stump(0.0, {1.0}, {2.0});
    t.erase("value");
    EXPECT_TRUE(has(error_of(forest(t), kReg, {}, 1, ErrorCategory::InvalidModel),
                    "trees[1].value"));
    t = stump(0.0, {1.0}, {2.0});
    t["value"][1][0] = {1.0, 2.0};  // a regressor's leaf has one value
    EXPECT_TRUE(has(error_of(forest(t), kReg, {}, 1, ErrorCategory::InvalidModel),
                    "trees[1].value[1][0]"));
    EXPECT_TRUE(has(error_of({{"type", "RandomForestRegressor"}}, kReg, {}, 1,
                             ErrorCategory::InvalidModel), "trees"));

    json gb = {{"type", "GradientBoostingClassifier"}, {"loss", "log_loss"},
               {"learning_rate", 0.1}, {"init", {0.0, 0.0, 0.0}}, {"n_classes", 3},
               {"trees", {{stump(0.0, {1.0}, {0.0})}}}};  // 1 tree for 3 outputs
    EXPECT_TRUE(has(error_of(gb, kClf, {0, 1, 2}, 1, ErrorCategory::InvalidModel), "trees[0]"));
    gb["trees"] = {{stump(0.0, {1.0}, {0.0}), stump(0.0, {1.0}, {0.0}), stump(0.0, {1.0}, {0.0})}};
    gb["init"] = {0.0};
    EXPECT_TRUE(has(error_of(gb, kClf, {0, 1, 2}, 1, ErrorCategory::InvalidModel), "init"));
    gb["init"] = {0.0, 0.0, 0.0};
    gb["n_classes"] = 4;
    EXPECT_TRUE(has(error_of(gb, kClf, {0, 1, 2}, 1, ErrorCategory::InvalidModel), "n_classes"));
    gb["n_classes"] = 3;
    EXPECT_TRUE(has(error_of(gb, kReg, {}, 1, ErrorCategory::InvalidModel), "task"));
}

TEST(SklearnTrees, UnsupportedNamesTheEstimatorAndParameter) {
    json multi = {{"type", "RandomForestRegressor"},
                  {"trees", {stump(0.0, {1.0}, {2.0})}}};
    multi["trees"][0]["value"][1] = {{1.0}, {2.0}};  // two outputs
    // A multi-output regressor's document says so ("outputs": 2); without it, one output.
    std::string msg = error_of(multi, kReg, {}, 1, ErrorCategory::InvalidModel);
    EXPECT_TRUE(has(msg, "RandomForestRegressor") && has(msg, "has 2 outputs, the document's outputs is 1")) << msg;
    json n_out = {{"type", "DecisionTreeRegressor"}, {"n_outputs", 2},
                  {"trees", {stump(0.0, {1.0}, {2.0})}}};
    msg = error_of(n_out, kReg, {}, 1, ErrorCategory::InvalidModel);
    EXPECT_TRUE(has(msg, "n_outputs") && has(msg, "the document's outputs is 1")) << msg;
    json gb = {{"type", "GradientBoostingRegressor"}, {"loss", "poisson"},
               {"learning_rate", 0.1}, {"init", 0.0}, {"trees", {{stump(0.0, {1.0}, {0.0})}}}};
    msg = error_of(gb, kReg, {}, 1, ErrorCategory::Unsupported);
    EXPECT_TRUE(has(msg, "GradientBoostingRegressor") && has(msg, "loss") && has(msg, "poisson"))
        << msg;
}

// HistGradientBoosting's TreePredictor nodes: x0 <= t ? left : right, NaN goes left or right.
json hist_stump(double t, double left, double right, bool missing_left) {
    return {{"feature_idx", {0, 0, 0}},   {"num_threshold", {t, 0.0, 0.0}},
            {"missing_go_to_left", {missing_left ? 1 : 0, 0, 0}},
            {"left", {1, 0, 0}},          {"right", {2, 0, 0}},
            {"is_leaf", {0, 1, 1}},       {"value", {0.0, left, right}}};
}

TEST(SklearnTrees, HistGradientBoostingMissingValuesAndFloat64Thresholds) {
    // 0.1 is not a float32: the float32 0.1f is above it, so it goes right (as in float64).
    json hgb = {{"type", "HistGradientBoostingRegressor"}, {"loss", "squared_error"},
                {"baseline", {10.0}},
                {"trees", {{hist_stump(0.1, 1.0, 2.0, true)}, {hist_stump(0.5, 0.25, 0.5, false)}}}};
    spec::Pipeline p = import_step(hgb, kReg, {}, 1);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float below = std::nextafter(0.1f, 0.0f);
    EXPECT_EQ(reference(p, {below, 0.1f, 0.7f, nan}),
              (std::vector<float>{11.25f, 12.25f, 12.5f, 11.5f}));
    EXPECT_EQ(p.transform, spec::PostTransform::Identity);
    hgb["loss"] = "poisson";
    EXPECT_EQ(import_step(hgb, kReg, {}, 1).transform, spec::PostTransform::Exp);
}

TEST(SklearnTrees, HistGradientBoostingRefusals) {
    json hgb = {{"type", "HistGradientBoostingClassifier"}, {"loss", "log_loss"},
                {"baseline", {0.0}}, {"n_classes", 2},
                {"trees", {{hist_stump(0.5, -1.0, 1.0, false)}}}};
    EXPECT_EQ(import_step(hgb, kClf, {0, 1}, 1).transform, spec::PostTransform::Logistic);
    json loss = hgb;
    loss["loss"] = "hinge";
    std::string msg = error_of(loss, kClf, {0, 1}, 1, ErrorCategory::Unsupported);
    EXPECT_TRUE(has(msg, "loss") && has(msg, "hinge")) << msg;
    json gamma = {{"type", "HistGradientBoostingRegressor"}, {"loss", "gamma"},
                  {"baseline", {0.0}}, {"trees", {{hist_stump(0.5, -1.0, 1.0, false)}}}};
    EXPECT_TRUE(has(error_of(gamma, kReg, {}, 1, ErrorCategory::Unsupported), "gamma"));
    json base = hgb;
    base["baseline"] = {0.0, 0.0};
    EXPECT_TRUE(has(error_of(base, kClf, {0, 1}, 1, ErrorCategory::InvalidModel), "baseline"));
    json child = hgb;
    child["trees"][0][0]["left"] = {7, 0, 0};
    EXPECT_TRUE(has(error_of(child, kClf, {0, 1}, 1, ErrorCategory::InvalidModel), "left[0]"));
    json feature = hgb;
    feature["trees"][0][0]["feature_idx"] = {3, 0, 0};
    EXPECT_TRUE(has(error_of(feature, kClf, {0, 1}, 1, ErrorCategory::InvalidModel), "feature_idx"));
}

// A categorical HistGradientBoosting regressor over [x0 categorical, x1 numeric]: known
// categories {0, 1, 2, 3, 5}; tree 1 sends {1, 3} left (missing right), tree 2 sends {0, 2} left
// (missing left), then splits x1 <= 0.5.
json hist_categorical() {
    json t1 = {{"feature_idx", {0, 0, 0}},     {"num_threshold", {0.0, 0.0, 0.0}},
               {"missing_go_to_left", {0, 0, 0}}, {"left", {1, 0, 0}}, {"right", {2, 0, 0}},
               {"is_leaf", {0, 1, 1}},         {"value", {0.0, 1.0, 2.0}},
               {"is_categorical", {1, 0, 0}},  {"bitset_idx", {0, 0, 0}},
               {"raw_left_cat_bitsets", {{0b1010, 0, 0, 0, 0, 0, 0, 0}}}};
    json t2 = {{"feature_idx", {0, 1, 0, 0, 0}},  {"num_threshold", {0.0, 0.5, 0.0, 0.0, 0.0}},
               {"missing_go_to_left", {1, 0, 0, 0, 0}}, {"left", {1, 3, 0, 0, 0}},
               {"right", {2, 4, 0, 0, 0}},        {"is_leaf", {0, 0, 1, 1, 1}},
               {"value", {0.0, 0.0, 40.0, 10.0, 20.0}},
               {"is_categorical", {1, 0, 0, 0, 0}}, {"bitset_idx", {0, 0, 0, 0, 0}},
               {"raw_left_cat_bitsets", {{0b0101, 0, 0, 0, 0, 0, 0, 0}}}};
    return {{"type", "HistGradientBoostingRegressor"}, {"loss", "squared_error"},
            {"baseline", {100.0}}, {"is_categorical", {1, 0}}, {"f_idx_map", {0, 0}},
            {"known_cat_bitsets", {{0b101111, 0, 0, 0, 0, 0, 0, 0}}},
            {"trees", {{t1}, {t2}}}};
}

TEST(SklearnTrees, HistGradientBoostingCategoricalSplits) {
    spec::Pipeline p = import_step(hist_categorical(), kReg, {}, 2);
    ASSERT_EQ(p.steps.size(), 1u);  // the set columns, before the trees
    const double nan = std::numeric_limits<double>::quiet_NaN();
    // x0: tree 1 goes left (1) for 1, 3 and right (2) for anything else; tree 2 goes right (40)
    // for the known categories outside {0, 2} (1, 3, 5), else left to x1 <= 0.5 (10 / 20):
    // 0, 2, NaN, negatives, unseen 4 and 6, and 256 (never a category) go left there.
    const std::vector<std::pair<double, double>> rows = {
        {0, 0}, {1, 0}, {2, 1}, {3, 1}, {5, 0}, {4, 0}, {6, 1}, {nan, 0}, {-1, 0}, {-0.5, 1},
        {2.75, 0}, {3.5, 0}, {256, 0}, {259, 1}, {-0.0, 0}};
    const std::vector<float> want = {112, 141, 122, 141, 142, 112, 122, 112, 112, 122,
                                     112, 141, 112, 122, 112};
    std::vector<double> x;
    for (const auto& r : rows) x.insert(x.end(), {r.first, r.second});
    std::vector<float> got(rows.size());
    spec::reference_predict(p, x.data(), static_cast<int64_t>(rows.size()), got.data());
    EXPECT_EQ(got, want);
}

TEST(SklearnTrees, HistGradientBoostingCategoricalDamaged) {
    const auto invalid = [](const json& doc) { return error_of(doc, kReg, {}, 2, ErrorCategory::InvalidModel); };
    json d = hist_categorical();
    d["trees"][0][0]["raw_left_cat_bitsets"][0] = {1, 2, 3};
    EXPECT_TRUE(has(invalid(d), "raw_left_cat_bitsets[0]")) << invalid(d);
    d = hist_categorical();
    d["trees"][0][0]["bitset_idx"][0] = 4;
    EXPECT_TRUE(has(invalid(d), "bitset_idx[0]")) << invalid(d);
    d = hist_categorical();
    d["is_categorical"] = {0, 1};  // the split's feature is not categorical
    EXPECT_TRUE(has(invalid(d), "feature_idx[0]")) << invalid(d);
    d = hist_categorical();
    d["f_idx_map"] = {3, 0};
    EXPECT_TRUE(has(invalid(d), "f_idx_map[0]")) << invalid(d);
    d = hist_categorical();
    d["known_cat_bitsets"][0][0] = 4294967296.0;  // above uint32
    EXPECT_TRUE(has(invalid(d), "known_cat_bitsets[0][0]")) << invalid(d);
    d = hist_categorical();
    d["known_cat_bitsets"][0][0] = 0b0101;  // every known category goes left, missing too
    EXPECT_TRUE(has(invalid(d), "one side")) << invalid(d);
    d = hist_categorical();
    d["trees"][0][0].erase("raw_left_cat_bitsets");
    EXPECT_TRUE(has(invalid(d), "raw_left_cat_bitsets")) << invalid(d);
}

// One isolation tree: x0 <= 0 → a leaf of depth 1 with 1 sample, else one with 5 samples.
json isolation_forest(double offset, int max_samples = 6) {
    json t = stump(0.0, {0.0}, {0.0});
    t["n_node_samples"] = {6, 1, 5};
    return {{"type", "IsolationForest"}, {"max_samples", max_samples}, {"offset", offset},
            {"trees", {t}}};
}

TEST(SklearnTrees, IsolationForestPredictsLikeItsThreshold) {
    auto c = [](double n) {
        return n <= 1 ? 0.0 : n == 2 ? 1.0 : 2.0 * (std::log(n - 1.0) + 0.5772156649015329) - 2.0 * (n - 1.0) / n;
    };
    // m = (1 + c(n_leaf)) / c(6): left 1 / c(6), right (1 + c(5)) / c(6).
    const double left = 1.0 / c(6), right = (1.0 + c(5)) / c(6);
    for (double m_cut : {0.5 * (left + right), right, left}) {
        // offset with -log2(-offset) = m_cut: decision = 0 exactly at m = m_cut → inlier.
        const double offset = -std::exp2(-m_cut);
        spec::Pipeline p = import_step(isolation_forest(offset), kClf, {-1, 1}, 1);
        EXPECT_EQ(p.transform, spec::PostTransform::TwoSided);
        EXPECT_FALSE(p.has_probabilities);
        const std::vector<float> out = reference(p, {-1.0f, 1.0f});
        auto label = [&](int row) { return out[2 * row + 1] > out[2 * row] ? 1 : -1; };
        auto want = [&](double m) { return -std::exp2(-m) - offset < 0 ? -1 : 1; };
        EXPECT_EQ(label(0), want(static_cast<float>(left))) << m_cut;
        EXPECT_EQ(label(1), want(static_cast<float>(right))) << m_cut;
    }
    // max_samples = 1: sklearn's score is -0.5 everywhere.
    EXPECT_EQ(reference(import_step(isolation_forest(-0.6, 1), kClf, {-1, 1}, 1), {0.0f})[1], 1.0f);
    EXPECT_EQ(reference(import_step(isolation_forest(-0.4, 1), kClf, {-1, 1}, 1), {0.0f})[1], -1.0f);
}

TEST(SklearnTrees, IsolationForestRefusals) {
    EXPECT_TRUE(has(error_of(isolation_forest(0.1), kClf, {-1, 1}, 1, ErrorCategory::InvalidModel),
                    "offset"));
    EXPECT_TRUE(has(error_of(isolation_forest(-0.5), kClf, {0, 1}, 1, ErrorCategory::InvalidModel),
                    "classes"));
    EXPECT_TRUE(has(error_of(isolation_forest(-0.5), kReg, {}, 1, ErrorCategory::InvalidModel), "task"));
    json short_counts = isolation_forest(-0.5);
    short_counts["trees"][0]["n_node_samples"] = {6, 1};
    EXPECT_TRUE(has(error_of(short_counts, kClf, {-1, 1}, 1, ErrorCategory::InvalidModel),
                    "n_node_samples"));
}

// --- documents exported from scikit-learn ---------------------------------------------------

json fixture(const std::string& name) {
    std::ifstream in(std::string(PG_PREDICT_FIXTURES) + "/sklearn_trees/" + name + ".json");
    EXPECT_TRUE(in.good()) << name;
    return json::parse(in);
}

spec::Pipeline import_document(const json& doc) {
    const spec::Task task = doc["task"] == "classification" ? kClf : kReg;
    std::vector<double> classes;
    if (doc.contains("classes")) classes = doc["classes"].get<std::vector<double>>();
    spec::Pipeline p = empty_pipeline(task, classes, static_cast<int>(doc["inputs"].size()));
    for (size_t i = 0; i < doc["inputs"].size(); ++i) p.features[i] = doc["inputs"][i]["name"];
    importers::import_sklearn_estimator(doc["steps"].back(), static_cast<int>(p.features.size()), p);
    spec::validate(p);
    return p;
}

class SklearnFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(SklearnFixture, ReferenceAndEveryStrategyMatchScikitLearn) {
    const json f = fixture(GetParam());
    const spec::Pipeline p = import_document(f["document"]);
    std::vector<float> x;
    for (const auto& row : f["X"])
        for (const auto& v : row)  // "NaN" (a missing value) or "Infinity" in HGB fixtures
            x.push_back(!v.is_string() ? static_cast<float>(v.get<double>())
                        : v == "NaN"   ? std::numeric_limits<float>::quiet_NaN()
                                       : std::numeric_limits<float>::infinity());
    std::vector<double> want;
    for (const auto& row : f["expected"]) {
        if (row.is_array())
            for (const auto& v : row) want.push_back(v.get<double>());
        else
            want.push_back(row.get<double>());
    }
    const int64_t rows = static_cast<int64_t>(f["X"].size());
    const std::vector<float> got = reference(p, x);
    ASSERT_EQ(got.size(), want.size());
    double worst = 0.0;
    for (size_t i = 0; i < got.size(); ++i) {
        const double tol = 1e-5 * std::max(1.0, std::fabs(want[i]));
        EXPECT_NEAR(got[i], want[i], tol) << GetParam() << " output " << i;
        worst = std::max(worst, std::fabs(got[i] - want[i]));
    }
    std::cout << "[          ] " << GetParam() << ": worst |reference - sklearn| = " << worst
              << "\n";

    // The compiled programs agree with the reference.
    static int64_t id = int64_t(3) << 40;
    for (auto s : {compiler::Strategy::Gemm, compiler::Strategy::TreeTraversal,
                   compiler::Strategy::PerfectTreeTraversal, compiler::Strategy::Native}) {
        const std::string bytes = compiler::compile(p, s);
        runtime::Program* prog = runtime::load_program(++id, bytes.data(), bytes.size());
        ASSERT_EQ(runtime::program_output_width(prog), p.output_width());
        std::vector<float> out(got.size());
        runtime::run_program(prog, x.data(), rows, p.input_width(), out.data());
        runtime::release_program(prog);
        for (size_t i = 0; i < got.size(); ++i)
            EXPECT_NEAR(out[i], got[i], 1e-6 * std::max(1.0f, std::fabs(got[i])))
                << GetParam() << " strategy " << static_cast<int>(s) << " output " << i;
    }
}

INSTANTIATE_TEST_SUITE_P(
    Exported, SklearnFixture,
    ::testing::Values("dt_classifier3", "dt_regressor", "rf_classifier2",
                      "rf_classifier3_weighted", "rf_regressor", "et_classifier3",
                      "et_regressor", "gb_classifier2", "gb_classifier2_exponential",
                      "gb_classifier3", "gb_regressor", "gb_regressor_huber",
                      "hgb_classifier2", "hgb_classifier3", "hgb_regressor",
                      "hgb_regressor_poisson", "hgb_classifier2_nan_split",
                      "hgb_categorical_regressor", "hgb_categorical_classifier3"));

// IsolationForest: the outputs are decision values in margin space ([-d, d]); their argmax
// must be scikit-learn's predict on every row not within 1e-6 of the decision boundary.
class IsolationFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(IsolationFixture, ArgmaxIsScikitLearnsPredict) {
    const json f = fixture(GetParam());
    const spec::Pipeline p = import_document(f["document"]);
    std::vector<float> x;
    for (const auto& row : f["X"])
        for (const auto& v : row) x.push_back(static_cast<float>(v.get<double>()));
    const int64_t rows = static_cast<int64_t>(f["X"].size());
    const std::vector<float> got = reference(p, x);
    ASSERT_EQ(got.size(), static_cast<size_t>(2 * rows));
    int outliers = 0;
    for (int64_t r = 0; r < rows; ++r) {
        const double want = f["expected"][r].get<double>();
        outliers += want < 0;
        if (std::fabs(f["decision"][r].get<double>()) < 1e-6) continue;
        EXPECT_EQ(got[2 * r + 1] > got[2 * r] ? 1.0 : -1.0, want) << GetParam() << " row " << r;
    }
    EXPECT_GT(outliers, 0) << GetParam();
    static int64_t id = int64_t(5) << 40;
    for (auto s : {compiler::Strategy::Gemm, compiler::Strategy::TreeTraversal,
                   compiler::Strategy::PerfectTreeTraversal, compiler::Strategy::Native}) {
        const std::string bytes = compiler::compile(p, s);
        runtime::Program* prog = runtime::load_program(++id, bytes.data(), bytes.size());
        ASSERT_EQ(runtime::program_output_width(prog), 2);
        std::vector<float> out(got.size());
        runtime::run_program(prog, x.data(), rows, p.model.num_features, out.data());
        runtime::release_program(prog);
        for (size_t i = 0; i < got.size(); ++i)
            EXPECT_NEAR(out[i], got[i], 1e-6 * std::max(1.0f, std::fabs(got[i])))
                << GetParam() << " strategy " << static_cast<int>(s) << " output " << i;
    }
}

INSTANTIATE_TEST_SUITE_P(Exported, IsolationFixture,
                         ::testing::Values("if_auto", "if_contamination_features"));

}  // namespace
