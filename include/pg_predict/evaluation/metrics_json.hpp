// The metrics documents as nlohmann::json, and the key metric deploy => 'best' compares.
// Not for src/pg (PostgreSQL's macros break nlohmann): it uses metrics.hpp's text functions.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "pg_predict/evaluation/metrics.hpp"

namespace pg_predict::evaluation {

// The metrics document (docs/versions-and-training.md, "Evaluate a model"):
//   classification: task, rows, classes, unseen_classes, accuracy, per_class {label: {precision,
//     recall, f1, support}}, macro_avg and weighted_avg {precision, recall, f1}, log_loss,
//     confusion_matrix; binary models also roc_auc, positive_class and threshold
//   regression: task, rows, rmse, mse, mae, r2, explained_variance
// Undefined metrics are JSON null.
nlohmann::json to_json(const ClassificationMetrics& metrics);
nlohmann::json to_json(const RegressionMetrics& metrics);

// The metric that decides deploy => 'best': roc_auc for a binary classifier (accuracy when it
// is null), accuracy for a multiclass one (higher is better), rmse for a regressor (lower).
struct KeyMetric {
    std::string name;
    double value;
    bool higher_is_better;
};
std::optional<KeyMetric> key_metric(const nlohmann::json& document);

// Whether `candidate` beats `incumbent` on the key metric (a tie does not). A candidate without
// a key metric never improves; an incumbent without one (no metrics stored) is always beaten.
// When the two key metrics differ in name (a binary model whose AUC is null), accuracy decides
// if both have it, else the candidate does not improve.
bool improves(const nlohmann::json& candidate, const nlohmann::json& incumbent);

}  // namespace pg_predict::evaluation
