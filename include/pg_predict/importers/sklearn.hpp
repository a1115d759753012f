// scikit-learn export documents (src/spec/SKLEARN_FORMAT.md) → pipeline spec. The importer is
// src/importers/sklearn/: a registry of the supported classes, one file per family.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "pg_predict/spec/pipeline.hpp"

namespace pg_predict::importers {

// The whole document: inputs, featurizer steps, the final model. Throws Error(InvalidModel)
// naming the field for a malformed document, Error(Unsupported) naming the estimator and
// parameter for what pg_predict cannot score.
spec::Pipeline import_sklearn(const nlohmann::json& document);

// One final-estimator step (its "type" looked up in the registry) reading a vector of
// `num_features` columns, into `pipeline` whose task and classes are set: the model, estimator,
// transform and any steps it needs. Errors name the step as "step". For tests.
void import_sklearn_estimator(const nlohmann::json& step, int32_t num_features, spec::Pipeline& pipeline);

}  // namespace pg_predict::importers
