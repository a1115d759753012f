// Inputs a model never reads. PostgreSQL does not fetch their columns (the scan below a
// PredictBatch node deforms only what is used), and a row need not even have them.
#pragma once

#include <cstdint>
#include <vector>

#include "pg_predict/spec/pipeline.hpp"

namespace pg_predict::optimizer {

// Indices into pipeline.features, ascending. For a bare tree ensemble: the features no split
// tests. A pipeline with featurizer steps or another estimator keeps every input for now.
std::vector<int32_t> unused_inputs(const spec::Pipeline& pipeline);

}  // namespace pg_predict::optimizer
