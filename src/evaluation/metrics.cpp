// Classification and regression metrics with scikit-learn's definitions (sklearn.metrics 1.2):
// zero_division=0 for precision/recall/F1, log_loss clipped to [eps, 1-eps] and renormalised,
// roc_auc_score's tie handling, r2_score's and explained_variance_score's constant-target rules.
#include "pg_predict/evaluation/metrics_json.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include "pg_predict/common/error.hpp"

namespace pg_predict::evaluation {

namespace {

[[noreturn]] void bad_input(const std::string& what) {
    fail(ErrorCategory::InvalidParameter, "evaluation: " + what);
}

// Neumaier's compensated sum: the metrics of a million rows agree with numpy's pairwise sums.
class Sum {
public:
    void add(double x) {
        double t = sum_ + x;
        if (std::fabs(sum_) >= std::fabs(x))
            compensation_ += (sum_ - t) + x;
        else
            compensation_ += (x - t) + sum_;
        sum_ = t;
    }
    double value() const { return sum_ + compensation_; }

private:
    double sum_ = 0, compensation_ = 0;
};

double ratio_or_zero(double numerator, double denominator) {
    return denominator == 0 ? 0.0 : numerator / denominator;
}

// r2_score / explained_variance_score with force_finite=True: a constant target gives 1 when
// the predictions are perfect, else 0. (scikit-learn tests the denominator after its own mean,
// so a constant such as 0.1 that the mean does not reproduce exactly gives it ~-1e31 instead.)
double one_minus_ratio(double numerator, double denominator) {
    if (numerator == 0) return 1.0;
    if (denominator == 0) return 0.0;
    return 1.0 - numerator / denominator;
}

void check_input(const ClassificationInput& in) {
    const size_t k = in.model_classes, labels = in.labels.size(), n = in.truth.size();
    if (k == 0 || k > labels) bad_input("the model's classes must be among the labels");
    if (n == 0) bad_input("no rows to evaluate");
    if (!in.predicted.empty() && in.predicted.size() != n)
        bad_input("one predicted class per row is needed");
    if (!in.probabilities.empty() && in.probabilities.size() != n * k)
        bad_input("one probability per row and model class is needed");
    if (in.predicted.empty() && in.probabilities.empty())
        bad_input("neither predicted classes nor probabilities were given");
    for (int32_t t : in.truth)
        if (t < 0 || static_cast<size_t>(t) >= labels) bad_input("a true class index is out of range");
    for (int32_t p : in.predicted)
        if (p < 0 || static_cast<size_t>(p) >= k) bad_input("a predicted class index is out of range");
    if (in.threshold && !std::isfinite(*in.threshold)) bad_input("the threshold must be a finite number");
}

// The predicted class of each row: the positive class above the threshold for a binary model,
// else the given prediction, else the most probable class (the first one on ties, like argmax).
std::vector<int32_t> predicted_classes(const ClassificationInput& in, bool use_threshold) {
    const size_t n = in.truth.size(), k = in.model_classes;
    if (!use_threshold && !in.predicted.empty()) return in.predicted;
    std::vector<int32_t> predicted(n);
    for (size_t i = 0; i < n; ++i) {
        const double* row = &in.probabilities[i * k];
        if (use_threshold)
            predicted[i] = row[1] > *in.threshold ? 1 : 0;
        else
            predicted[i] = static_cast<int32_t>(std::max_element(row, row + k) - row);
    }
    return predicted;
}

// sklearn.metrics.log_loss(y_true, y_prob, labels=classes): clip to [eps, 1-eps] with eps the
// float64 epsilon, renormalise each row, average -log p(true class).
double log_loss(const ClassificationInput& in) {
    const size_t n = in.truth.size(), k = in.model_classes;
    const double eps = std::numeric_limits<double>::epsilon();
    Sum total;
    for (size_t i = 0; i < n; ++i) {
        const double* row = &in.probabilities[i * k];
        double row_sum = 0;
        for (size_t c = 0; c < k; ++c) row_sum += std::clamp(row[c], eps, 1 - eps);
        double p = std::clamp(row[in.truth[i]], eps, 1 - eps) / row_sum;
        total.add(-std::log(p));
    }
    return total.value() / static_cast<double>(n);
}

// sklearn.metrics.roc_auc_score(y_true == labels[1], p1): the probability that a positive row
// scores above a negative one, ties counting one half (what the trapezoids of the ROC curve
// over distinct thresholds add up to). Undefined (nullopt) when one class has no rows.
std::optional<double> roc_auc(const ClassificationInput& in) {
    const size_t n = in.truth.size();
    std::vector<std::pair<double, bool>> scored(n);
    for (size_t i = 0; i < n; ++i) scored[i] = {in.probabilities[i * 2 + 1], in.truth[i] == 1};
    std::sort(scored.begin(), scored.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    double pairs = 0, negatives_below = 0, positives = 0;
    for (size_t i = 0; i < n;) {
        size_t end = i;
        double pos = 0, neg = 0;
        for (; end < n && scored[end].first == scored[i].first; ++end) (scored[end].second ? pos : neg) += 1;
        pairs += pos * negatives_below + 0.5 * pos * neg;
        negatives_below += neg;
        positives += pos;
        i = end;
    }
    if (positives == 0 || negatives_below == 0) return std::nullopt;
    return pairs / (positives * negatives_below);
}

}  // namespace

ClassificationMetrics classification_metrics(const ClassificationInput& in) {
    check_input(in);
    const size_t n = in.truth.size(), k = in.model_classes, labels = in.labels.size();
    const bool binary = k == 2 && !in.probabilities.empty();
    const bool use_threshold = binary && in.threshold.has_value();
    const bool has_unseen = labels > k &&
        std::any_of(in.truth.begin(), in.truth.end(), [k](int32_t t) { return static_cast<size_t>(t) >= k; });

    ClassificationMetrics m;
    m.labels = in.labels;
    m.model_classes = k;
    m.rows = static_cast<int64_t>(n);
    if (use_threshold) m.threshold = in.threshold;

    const std::vector<int32_t> predicted = predicted_classes(in, use_threshold);
    m.confusion.assign(labels, std::vector<int64_t>(labels, 0));
    for (size_t i = 0; i < n; ++i) ++m.confusion[in.truth[i]][predicted[i]];

    int64_t correct = 0;
    m.per_class.resize(labels);
    for (size_t c = 0; c < labels; ++c) {
        int64_t predicted_as_c = 0, support = 0;
        for (size_t o = 0; o < labels; ++o) {
            predicted_as_c += m.confusion[o][c];
            support += m.confusion[c][o];
        }
        const double tp = static_cast<double>(m.confusion[c][c]);
        correct += m.confusion[c][c];
        ClassMetrics& cm = m.per_class[c];
        cm.support = support;
        cm.precision = ratio_or_zero(tp, static_cast<double>(predicted_as_c));
        cm.recall = ratio_or_zero(tp, static_cast<double>(support));
        cm.f1 = ratio_or_zero(2 * cm.precision * cm.recall, cm.precision + cm.recall);
    }
    m.accuracy = static_cast<double>(correct) / static_cast<double>(n);

    Sum macro_p, macro_r, macro_f, weighted_p, weighted_r, weighted_f;
    for (const ClassMetrics& cm : m.per_class) {
        const double w = static_cast<double>(cm.support);
        macro_p.add(cm.precision);
        macro_r.add(cm.recall);
        macro_f.add(cm.f1);
        weighted_p.add(w * cm.precision);
        weighted_r.add(w * cm.recall);
        weighted_f.add(w * cm.f1);
    }
    const double count = static_cast<double>(labels), rows = static_cast<double>(n);
    m.macro = {macro_p.value() / count, macro_r.value() / count, macro_f.value() / count};
    m.weighted = {weighted_p.value() / rows, weighted_r.value() / rows, weighted_f.value() / rows};

    if (!in.probabilities.empty() && !has_unseen) {
        m.log_loss = log_loss(in);
        if (binary) m.roc_auc = roc_auc(in);
    }
    return m;
}

RegressionMetrics regression_metrics(const std::vector<double>& truth, const std::vector<double>& predicted) {
    const size_t n = truth.size();
    if (n == 0) bad_input("no rows to evaluate");
    if (predicted.size() != n) bad_input("one prediction per row is needed");
    for (size_t i = 0; i < n; ++i)
        if (!std::isfinite(truth[i]) || !std::isfinite(predicted[i]))
            bad_input("targets and predictions must be finite numbers");
    const double rows = static_cast<double>(n);

    // Means shifted by the first value: a constant column's mean is that value exactly, so its
    // deviations are exact zeros (the constant-target rule below depends on it).
    Sum shifted_truth, shifted_error;
    for (size_t i = 0; i < n; ++i) {
        shifted_truth.add(truth[i] - truth[0]);
        shifted_error.add((truth[i] - predicted[i]) - (truth[0] - predicted[0]));
    }
    const double mean_truth = truth[0] + shifted_truth.value() / rows;
    const double mean_error = (truth[0] - predicted[0]) + shifted_error.value() / rows;

    Sum squared, absolute, total, error_variance;
    for (size_t i = 0; i < n; ++i) {
        const double error = truth[i] - predicted[i];
        squared.add(error * error);
        absolute.add(std::fabs(error));
        total.add((truth[i] - mean_truth) * (truth[i] - mean_truth));
        error_variance.add((error - mean_error) * (error - mean_error));
    }
    RegressionMetrics m;
    m.rows = static_cast<int64_t>(n);
    m.mse = squared.value() / rows;
    m.rmse = std::sqrt(m.mse);
    m.mae = absolute.value() / rows;
    if (n >= 2) m.r2 = one_minus_ratio(squared.value(), total.value());
    m.explained_variance = one_minus_ratio(error_variance.value(), total.value());
    return m;
}

namespace {

nlohmann::json optional_number(const std::optional<double>& value) {
    return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json averages_json(const Averages& a) {
    return {{"precision", a.precision}, {"recall", a.recall}, {"f1", a.f1}};
}

}  // namespace

nlohmann::json to_json(const ClassificationMetrics& m) {
    nlohmann::json doc = nlohmann::json::object();
    doc["task"] = "classification";
    doc["rows"] = m.rows;
    doc["classes"] = std::vector<std::string>(m.labels.begin(), m.labels.begin() + m.model_classes);
    doc["unseen_classes"] = std::vector<std::string>(m.labels.begin() + m.model_classes, m.labels.end());
    doc["accuracy"] = m.accuracy;
    nlohmann::json per_class = nlohmann::json::object();
    for (size_t c = 0; c < m.labels.size(); ++c) {
        const ClassMetrics& cm = m.per_class[c];
        per_class[m.labels[c]] = {{"precision", cm.precision}, {"recall", cm.recall},
                                  {"f1", cm.f1}, {"support", cm.support}};
    }
    doc["per_class"] = std::move(per_class);
    doc["macro_avg"] = averages_json(m.macro);
    doc["weighted_avg"] = averages_json(m.weighted);
    doc["log_loss"] = optional_number(m.log_loss);
    doc["confusion_matrix"] = m.confusion;
    if (m.model_classes == 2) {
        doc["roc_auc"] = optional_number(m.roc_auc);
        doc["positive_class"] = m.labels[1];
        doc["threshold"] = optional_number(m.threshold);
    }
    return doc;
}

nlohmann::json to_json(const RegressionMetrics& m) {
    return {{"task", "regression"}, {"rows", m.rows}, {"rmse", m.rmse}, {"mse", m.mse},
            {"mae", m.mae}, {"r2", optional_number(m.r2)}, {"explained_variance", m.explained_variance}};
}

std::string render(const ClassificationMetrics& m) { return to_json(m).dump(); }
std::string render(const RegressionMetrics& m) { return to_json(m).dump(); }

namespace {

std::optional<double> number_at(const nlohmann::json& doc, const char* key) {
    if (!doc.is_object()) return std::nullopt;
    auto it = doc.find(key);
    if (it == doc.end() || !it->is_number()) return std::nullopt;
    return it->get<double>();
}

}  // namespace

std::optional<KeyMetric> key_metric(const nlohmann::json& doc) {
    if (!doc.is_object()) return std::nullopt;
    auto task = doc.find("task");
    if (task == doc.end() || !task->is_string()) return std::nullopt;
    if (*task == "regression") {
        if (auto rmse = number_at(doc, "rmse")) return KeyMetric{"rmse", *rmse, false};
        return std::nullopt;
    }
    if (*task == "classification") {
        if (auto auc = number_at(doc, "roc_auc")) return KeyMetric{"roc_auc", *auc, true};
        if (auto accuracy = number_at(doc, "accuracy")) return KeyMetric{"accuracy", *accuracy, true};
    }
    return std::nullopt;
}

bool improves(const nlohmann::json& candidate, const nlohmann::json& incumbent) {
    std::optional<KeyMetric> mine = key_metric(candidate);
    if (!mine) return false;
    std::optional<KeyMetric> theirs = key_metric(incumbent);
    if (!theirs) return true;
    if (mine->name != theirs->name) {
        auto a = number_at(candidate, "accuracy"), b = number_at(incumbent, "accuracy");
        return a && b && *a > *b;
    }
    return mine->higher_is_better ? mine->value > theirs->value : mine->value < theirs->value;
}

bool improves(const std::string& candidate_json, const std::string& incumbent_json) {
    auto parse = [](const std::string& text) {
        return text.empty() ? nlohmann::json(nullptr)
                            : nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    };
    return improves(parse(candidate_json), parse(incumbent_json));
}

bool metrics_better(const char* deployed_json, const char* candidate_json) noexcept {
    try {
        return improves(std::string(candidate_json ? candidate_json : ""), std::string(deployed_json ? deployed_json : ""));
    } catch (...) {
        return false;
    }
}

}  // namespace pg_predict::evaluation
