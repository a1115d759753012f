// The metrics module against values worked out by hand from scikit-learn's definitions
// (the conformance test regress/conformance/test_evaluate.py compares with sklearn itself).
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pg_predict/common/error.hpp"
#include "pg_predict/evaluation/metrics_json.hpp"

namespace ev = pg_predict::evaluation;
using pg_predict::Error;

namespace {

// Four rows of a binary model, positive-class probabilities 0.1, 0.4, 0.35, 0.8.
ev::ClassificationInput binary_input() {
    ev::ClassificationInput in;
    in.labels = {"no", "yes"};
    in.model_classes = 2;
    in.truth = {0, 0, 1, 1};
    in.probabilities = {0.9, 0.1, 0.6, 0.4, 0.65, 0.35, 0.2, 0.8};
    in.threshold = 0.5;
    return in;
}

}  // namespace

TEST(Metrics, BinaryCountsAndAverages) {
    ev::ClassificationMetrics m = ev::classification_metrics(binary_input());
    // Predicted at 0.5: no, no, no, yes.
    EXPECT_EQ(m.confusion, (std::vector<std::vector<int64_t>>{{2, 0}, {1, 1}}));
    EXPECT_DOUBLE_EQ(m.accuracy, 0.75);
    EXPECT_DOUBLE_EQ(m.per_class[0].precision, 2.0 / 3);
    EXPECT_DOUBLE_EQ(m.per_class[0].recall, 1.0);
    EXPECT_DOUBLE_EQ(m.per_class[0].f1, 0.8);
    EXPECT_DOUBLE_EQ(m.per_class[1].precision, 1.0);
    EXPECT_DOUBLE_EQ(m.per_class[1].recall, 0.5);
    EXPECT_DOUBLE_EQ(m.per_class[1].f1, 2.0 / 3);
    EXPECT_EQ(m.per_class[1].support, 2);
    EXPECT_DOUBLE_EQ(m.macro.precision, (2.0 / 3 + 1.0) / 2);
    EXPECT_DOUBLE_EQ(m.weighted.f1, (2 * 0.8 + 2 * (2.0 / 3)) / 4);
    // Positive/negative pairs ordered right: (0.35 > 0.1), (0.8 > 0.1), (0.8 > 0.4) = 3 of 4.
    ASSERT_TRUE(m.roc_auc);
    EXPECT_DOUBLE_EQ(*m.roc_auc, 0.75);
    ASSERT_TRUE(m.log_loss);
    EXPECT_NEAR(*m.log_loss, -(std::log(0.9) + std::log(0.6) + std::log(0.35) + std::log(0.8)) / 4, 1e-15);
}

TEST(Metrics, ThresholdDecidesThePositiveClass) {
    ev::ClassificationInput in = binary_input();
    in.threshold = 0.3;  // yes for 0.4, 0.35, 0.8
    in.predicted = {0, 0, 0, 0};  // ignored: the threshold decides for a binary model
    ev::ClassificationMetrics m = ev::classification_metrics(in);
    EXPECT_EQ(m.confusion, (std::vector<std::vector<int64_t>>{{1, 1}, {0, 2}}));
    EXPECT_DOUBLE_EQ(*m.threshold, 0.3);
    // A probability equal to the threshold is not above it.
    in.threshold = 0.35;
    EXPECT_EQ(ev::classification_metrics(in).confusion, (std::vector<std::vector<int64_t>>{{1, 1}, {1, 1}}));
}

TEST(Metrics, RocAucCountsTiesAsHalf) {
    ev::ClassificationInput in;
    in.labels = {"0", "1"};
    in.model_classes = 2;
    in.truth = {0, 1, 0, 1};
    in.probabilities = {0.5, 0.5, 0.5, 0.5, 0.8, 0.2, 0.1, 0.9};
    // Positive 0.5: tie with negative 0.5 (1/2), above 0.2 (1); positive 0.9 above both (2).
    EXPECT_DOUBLE_EQ(*ev::classification_metrics(in).roc_auc, 3.5 / 4);
    in.truth = {1, 1, 1, 1};  // one class only: undefined, like sklearn's ValueError
    EXPECT_FALSE(ev::classification_metrics(in).roc_auc);
}

TEST(Metrics, LogLossClipsAndRenormalises) {
    ev::ClassificationInput in;
    in.labels = {"a", "b", "c"};
    in.model_classes = 3;
    in.truth = {1, 2};
    in.probabilities = {1.0, 0.0, 0.0, 0.2, 0.2, 0.4};
    const double eps = std::numeric_limits<double>::epsilon();
    // Row 1: p(b) = 0 clipped to eps, the row renormalised by (1 - eps) + 2 eps.
    // Row 2: p(c) = 0.4 of a row summing to 0.8.
    const double expected = (-std::log(eps / ((1 - eps) + eps + eps)) - std::log(0.4 / 0.8)) / 2;
    EXPECT_NEAR(*ev::classification_metrics(in).log_loss, expected, 1e-12);
    // Multiclass: no ROC AUC; the prediction is the most probable class, the first on ties.
    ev::ClassificationMetrics m = ev::classification_metrics(in);
    EXPECT_FALSE(m.roc_auc);
    EXPECT_EQ(m.confusion, (std::vector<std::vector<int64_t>>{{0, 0, 0}, {1, 0, 0}, {0, 0, 1}}));
}

TEST(Metrics, UnseenAndAbsentClasses) {
    ev::ClassificationInput in;
    in.labels = {"a", "b", "c", "zebra"};  // the model knows a, b, c
    in.model_classes = 3;
    in.truth = {0, 0, 3, 1};
    in.predicted = {0, 1, 0, 1};
    in.probabilities = {0.8, 0.1, 0.1, 0.3, 0.6, 0.1, 0.5, 0.4, 0.1, 0.1, 0.8, 0.1};
    ev::ClassificationMetrics m = ev::classification_metrics(in);
    EXPECT_DOUBLE_EQ(m.accuracy, 0.5);
    // "c": neither true nor predicted anywhere: all zero. "zebra": one true row, never predicted.
    EXPECT_EQ(m.per_class[2].support, 0);
    EXPECT_DOUBLE_EQ(m.per_class[2].f1, 0.0);
    EXPECT_EQ(m.per_class[3].support, 1);
    EXPECT_DOUBLE_EQ(m.per_class[3].recall, 0.0);
    EXPECT_DOUBLE_EQ(m.per_class[3].precision, 0.0);
    // a: precision 1/2, recall 1/2; b: precision 1/2, recall 1; macro over the four labels.
    EXPECT_DOUBLE_EQ(m.macro.precision, (0.5 + 0.5) / 4);
    EXPECT_DOUBLE_EQ(m.macro.recall, (0.5 + 1.0) / 4);
    EXPECT_FALSE(m.log_loss);  // no probability for "zebra"
    nlohmann::json doc = ev::to_json(m);
    EXPECT_EQ(doc["unseen_classes"], nlohmann::json::array({"zebra"}));
    EXPECT_EQ(doc["classes"].size(), 3u);
    EXPECT_TRUE(doc["log_loss"].is_null());
    EXPECT_FALSE(doc.contains("roc_auc"));
    EXPECT_EQ(doc["per_class"]["zebra"]["support"], 1);
}

TEST(Metrics, RegressionDefinitions) {
    std::vector<double> truth = {3, -0.5, 2, 7}, predicted = {2.5, 0.0, 2, 8};
    ev::RegressionMetrics m = ev::regression_metrics(truth, predicted);
    // Errors 0.5, -0.5, 0, -1; mean of the target 2.875.
    EXPECT_DOUBLE_EQ(m.mse, (0.25 + 0.25 + 0 + 1) / 4);
    EXPECT_DOUBLE_EQ(m.rmse, std::sqrt(0.375));
    EXPECT_DOUBLE_EQ(m.mae, 0.5);
    const double total = 0.125 * 0.125 + 3.375 * 3.375 + 0.875 * 0.875 + 4.125 * 4.125;
    EXPECT_DOUBLE_EQ(*m.r2, 1 - 1.5 / total);
    // Error mean -0.25: deviations 0.75, -0.25, 0.25, -0.75.
    EXPECT_DOUBLE_EQ(m.explained_variance, 1 - (0.5625 + 0.0625 + 0.0625 + 0.5625) / total);
}

TEST(Metrics, ConstantTarget) {
    std::vector<double> constant = {0.1, 0.1, 0.1};
    ev::RegressionMetrics perfect = ev::regression_metrics(constant, constant);
    EXPECT_EQ(*perfect.r2, 1.0);
    EXPECT_EQ(perfect.explained_variance, 1.0);
    ev::RegressionMetrics off = ev::regression_metrics(constant, {0.0, 0.1, 0.2});
    EXPECT_EQ(*off.r2, 0.0);
    EXPECT_EQ(off.explained_variance, 0.0);
    // A constant offset explains all the variance but not R².
    ev::RegressionMetrics shifted = ev::regression_metrics({1, 2, 3}, {2, 3, 4});
    EXPECT_EQ(shifted.explained_variance, 1.0);
    EXPECT_DOUBLE_EQ(*shifted.r2, 1 - 3.0 / 2.0);
    // One row: no R² (scikit-learn's NaN); explained variance of one error is perfect.
    ev::RegressionMetrics one = ev::regression_metrics({1}, {2});
    EXPECT_FALSE(one.r2);
    EXPECT_EQ(one.explained_variance, 1.0);
    EXPECT_TRUE(ev::to_json(one)["r2"].is_null());
}

TEST(Metrics, BadInput) {
    EXPECT_THROW(ev::regression_metrics({}, {}), Error);
    EXPECT_THROW(ev::regression_metrics({1, 2}, {1}), Error);
    EXPECT_THROW(ev::regression_metrics({1, NAN}, {1, 2}), Error);
    ev::ClassificationInput in = binary_input();
    in.truth.clear();
    in.probabilities.clear();
    EXPECT_THROW(ev::classification_metrics(in), Error);
    in = binary_input();
    in.truth[0] = 2;  // no such label
    EXPECT_THROW(ev::classification_metrics(in), Error);
    in = binary_input();
    in.probabilities.pop_back();
    EXPECT_THROW(ev::classification_metrics(in), Error);
    in = binary_input();
    in.probabilities.clear();  // and no predicted classes either
    EXPECT_THROW(ev::classification_metrics(in), Error);
    in = binary_input();
    in.probabilities[1] = NAN;  // ROC AUC's sort needs a total order: refused, not looped on
    EXPECT_THROW(ev::classification_metrics(in), Error);
    in = binary_input();
    in.probabilities[0] = INFINITY;
    EXPECT_THROW(ev::classification_metrics(in), Error);
}

TEST(Metrics, DocumentKeys) {
    nlohmann::json doc = ev::to_json(ev::classification_metrics(binary_input()));
    for (const char* key : {"task", "rows", "classes", "unseen_classes", "accuracy", "per_class", "macro_avg",
                            "weighted_avg", "log_loss", "roc_auc", "confusion_matrix", "positive_class", "threshold"})
        EXPECT_TRUE(doc.contains(key)) << key;
    EXPECT_EQ(doc["positive_class"], "yes");
    EXPECT_EQ(doc["per_class"]["no"]["support"], 2);
    // The rendered text is the same document; doubles survive the round trip bit for bit.
    EXPECT_EQ(nlohmann::json::parse(ev::render(ev::classification_metrics(binary_input()))), doc);
    nlohmann::json reg = ev::to_json(ev::regression_metrics({1, 2, 4}, {1, 2, 3}));
    for (const char* key : {"task", "rows", "rmse", "mse", "mae", "r2", "explained_variance"})
        EXPECT_TRUE(reg.contains(key)) << key;
    EXPECT_EQ(reg["task"], "regression");
}

TEST(Metrics, ImprovesOnTheKeyMetric) {
    auto cls = [](double accuracy, nlohmann::json auc) {
        return nlohmann::json{{"task", "classification"}, {"accuracy", accuracy}, {"roc_auc", auc}};
    };
    auto reg = [](double rmse) { return nlohmann::json{{"task", "regression"}, {"rmse", rmse}}; };
    EXPECT_EQ(ev::key_metric(cls(0.9, 0.7))->name, "roc_auc");
    EXPECT_EQ(ev::key_metric(cls(0.9, nullptr))->name, "accuracy");
    EXPECT_FALSE(ev::key_metric(reg(1.0))->higher_is_better);
    EXPECT_TRUE(ev::improves(cls(0.5, 0.8), cls(0.9, 0.7)));   // AUC decides, not accuracy
    EXPECT_FALSE(ev::improves(cls(0.9, 0.7), cls(0.5, 0.8)));
    EXPECT_FALSE(ev::improves(cls(0.9, 0.7), cls(0.9, 0.7)));  // equal is no improvement
    EXPECT_TRUE(ev::improves(cls(0.9, nullptr), cls(0.8, nullptr)));
    EXPECT_TRUE(ev::improves(cls(0.9, nullptr), cls(0.8, 0.99)));  // names differ: accuracy
    EXPECT_TRUE(ev::improves(reg(1.0), reg(2.0)));
    EXPECT_FALSE(ev::improves(reg(2.0), reg(1.0)));
    EXPECT_TRUE(ev::improves(reg(2.0), nullptr));               // nothing stored to beat
    EXPECT_FALSE(ev::improves(nlohmann::json(nullptr), reg(1.0)));
    EXPECT_TRUE(ev::improves(std::string(R"({"task":"regression","rmse":1})"), std::string()));
    EXPECT_FALSE(ev::improves(std::string("not json"), std::string()));
    // catalog_store's shape: the deployed document first, NULL for none
    EXPECT_TRUE(ev::metrics_better(R"({"task":"regression","rmse":2})", R"({"task":"regression","rmse":1})"));
    EXPECT_FALSE(ev::metrics_better(R"({"task":"regression","rmse":1})", R"({"task":"regression","rmse":2})"));
    EXPECT_TRUE(ev::metrics_better(nullptr, R"({"task":"regression","rmse":2})"));
    EXPECT_FALSE(ev::metrics_better(R"({"task":"regression","rmse":2})", nullptr));
}
