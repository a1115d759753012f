// The test split's metrics stored with the version: the evaluation module's (the same document
// evaluate_model() returns), from the fitted model's predictions on the test rows.
#include <charconv>
#include <cmath>
#include <string>

#include "pg_predict/evaluation/metrics_json.hpp"
#include "trainer_internal.hpp"

namespace pg_predict::training {

namespace {

// A label as text, as predict_label() gives it: strings as they are, booleans true / false,
// numbers in float8's shortest form.
std::string label_text(const nlohmann::json& label) {
    if (label.is_string()) return label.get<std::string>();
    if (label.is_boolean()) return label.get<bool>() ? "true" : "false";
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, label.get<double>());
    return std::string(buf, end);
}

}  // namespace

nlohmann::json test_metrics(Task task, const Labels& labels, const TestPredictions& p) {
    if (labels.test.empty()) return nlohmann::json::object();
    for (double v : p.values)
        if (!std::isfinite(v)) invalid("the fitted model predicts a value that is not finite on a test row");
    if (task == Task::Regression) return evaluation::to_json(evaluation::regression_metrics(labels.test, p.values));
    evaluation::ClassificationInput in;
    for (const nlohmann::json& c : labels.classes) in.labels.push_back(label_text(c));
    in.model_classes = in.labels.size();
    for (double y : labels.test) in.truth.push_back(static_cast<int32_t>(y));
    in.probabilities = p.values;
    if (in.model_classes == 2) in.threshold = 0.5;  // XGBoost's and scikit-learn's predict
    return evaluation::to_json(evaluation::classification_metrics(in));
}

}  // namespace pg_predict::training
