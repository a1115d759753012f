// Metrics of a model on labelled rows: what evaluate_model() returns and what train() stores
// with a version. Torch-free and PostgreSQL-free; the definitions are scikit-learn's
// (sklearn.metrics, 1.2), so the conformance tests compare with it directly. No nlohmann here:
// src/pg includes this header, and PostgreSQL's port.h macros (snprintf) break nlohmann's;
// metrics_json.hpp has the JSON documents as nlohmann::json.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pg_predict::evaluation {

// A classifier's predictions on n rows.
struct ClassificationInput {
    // Class labels as text: first the model's classes in its order (model_classes of them),
    // then any true labels the model does not know ("unseen"), which it can never predict.
    std::vector<std::string> labels;
    size_t model_classes = 0;
    std::vector<int32_t> truth;        // per row: index into labels
    std::vector<int32_t> predicted;    // per row: index < model_classes; empty: from probabilities
    std::vector<double> probabilities; // n × model_classes, row-major; empty when the model has none
    // Binary models with probabilities: the positive class (labels[1]) is predicted when its
    // probability is > threshold (0.5 is scikit-learn's and XGBoost's predict()).
    std::optional<double> threshold;
};

struct ClassMetrics {
    double precision = 0, recall = 0, f1 = 0;  // 0 where undefined (zero_division=0)
    int64_t support = 0;                       // rows whose true class this is
};

struct Averages {
    double precision = 0, recall = 0, f1 = 0;
};

struct ClassificationMetrics {
    std::vector<std::string> labels;
    size_t model_classes = 0;
    int64_t rows = 0;
    double accuracy = 0;
    std::vector<ClassMetrics> per_class;         // one per label
    Averages macro, weighted;                    // over every label (model's and unseen)
    std::optional<double> log_loss;              // needs probabilities and no unseen labels
    std::optional<double> roc_auc;               // binary, probabilities, both classes present
    std::vector<std::vector<int64_t>> confusion; // [true][predicted], labels order
    std::optional<double> threshold;             // binary models with probabilities
};

struct RegressionMetrics {
    int64_t rows = 0;
    double mse = 0, rmse = 0, mae = 0, explained_variance = 0;
    std::optional<double> r2;  // undefined for a single row (r2_score's NaN)
};

// Throw pg_predict::Error (InvalidParameter) on inconsistent input or zero rows.
ClassificationMetrics classification_metrics(const ClassificationInput& input);
RegressionMetrics regression_metrics(const std::vector<double>& truth,
                                     const std::vector<double>& predicted);

// The metrics document as JSON text (keys: metrics_json.hpp and docs/versions-and-training.md, "Evaluate a model").
std::string render(const ClassificationMetrics& metrics);
std::string render(const RegressionMetrics& metrics);

// Whether the metrics document `candidate_json` beats `incumbent_json` on the key metric
// (metrics_json.hpp: key_metric); "" or unparsable text is a document without one.
bool improves(const std::string& candidate_json, const std::string& incumbent_json);

// improves() in the shape of catalog_store's MetricsBetter (src/pg/catalog/catalog.hpp): documents as
// C strings (NULL: none), the deployed one first; never throws (false on any failure).
bool metrics_better(const char* deployed_json, const char* candidate_json) noexcept;

}  // namespace pg_predict::evaluation
