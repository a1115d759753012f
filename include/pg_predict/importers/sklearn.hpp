// scikit-learn export documents (src/spec/SKLEARN_FORMAT.md) → pipeline spec.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "pg_predict/spec/pipeline.hpp"

namespace pg_predict::importers {

// The whole document: inputs, featurizer steps, the final model. Throws Error(InvalidModel)
// naming the field for a malformed document, Error(Unsupported) naming the estimator and
// parameter for what pg_predict cannot score.
spec::Pipeline import_sklearn(const nlohmann::json& document);

// The final step when it is a tree model (DecisionTree*, RandomForest*, ExtraTrees*,
// GradientBoosting*): fills pipeline.model, transform and the output layout for
// pipeline.task / classes; `num_features` is the width of the vector the model reads.
// Returns false when `step` is not a tree model.
bool import_sklearn_tree_model(const nlohmann::json& step, int32_t num_features,
                               spec::Pipeline& pipeline);

// The final step when it is a naive Bayes classifier, KMeans / MiniBatchKMeans, an MLP or a
// kernel SVM (SVC, NuSVC, SVR, NuSVR): appends the featurizer steps it needs to
// pipeline.steps and sets the "linear" estimator, transform and output layout; `path` names
// the step in messages. Returns false when `step` is none of these.
bool import_sklearn_other_model(const nlohmann::json& step, const std::string& path, int32_t num_features,
                                spec::Pipeline& pipeline);

}  // namespace pg_predict::importers
