// The optimizer: passes over the pipeline spec, run at create_model (and wherever a spec is
// compiled again, e.g. a strategy variant) between import and compile. Each pass keeps the
// pipeline's input vector (features, width, text inputs) as it is, so the program reads the
// same row layout; what shrinks is the work inside, and the inputs nothing reads any more are
// reported by unused_inputs() so the scan never fetches their columns.
//
// Semantics kept: every output equals the un-optimized pipeline's for every input, NaN
// included, with one deliberate exception that the source libraries share: an input the model
// ignores (a column a selector drops, a zero weight in every row of a linear model, a feature
// no tree splits on) is not read, so a NULL there cannot make the prediction NULL. Infinite
// inputs may differ where the original computed inf * 0 inside a fused product of matrices.
#pragma once

#include <string>
#include <vector>

#include "pg_predict/spec/pipeline.hpp"

namespace pg_predict::optimizer {

// What one pass did, in words ("steps[0] affine: 50 -> 5 columns"); empty when nothing.
struct PassReport {
    std::string pass;
    std::vector<std::string> changes;
};

struct Report {
    std::vector<PassReport> passes;
};

// The optimized pipeline (validated). Deterministic: the same spec always gives the same
// result, so the catalog keeps the imported spec and anything compiling it runs this first.
spec::Pipeline optimize(const spec::Pipeline&, Report* report = nullptr);

}  // namespace pg_predict::optimizer
