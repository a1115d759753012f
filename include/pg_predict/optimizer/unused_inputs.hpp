// Inputs a model never reads. PostgreSQL does not fetch their columns (the scan below a
// PredictBatch node deforms only what is used), and a row need not even have them; the
// program gets 0 in their place, which no output depends on.
#pragma once

#include <cstdint>
#include <vector>

#include "pg_predict/spec/pipeline.hpp"

namespace pg_predict::optimizer {

// Indices into pipeline.features, ascending: the inputs no output depends on, by the liveness
// analysis of optimizer/passes.hpp (features no tree splits on, columns a selector drops,
// columns with a zero weight in every row of a linear model). Give it the optimized pipeline:
// that is the one compiled.
std::vector<int32_t> unused_inputs(const spec::Pipeline& pipeline);

}  // namespace pg_predict::optimizer
