// Specialization of a pipeline for one query (issue 15 §3, the Raven idea, exact): the query's
// WHERE clause bounds some inputs (`plan = 'pro'`, `age >= 60`), so tree nodes whose test is
// decided for every allowed value become their taken child, and an input nothing reads any more
// is left out of the scan. Constant inputs are carried through the featurizers where that is
// exact (one-hot, ordinal, bucketize, impute, affine with a margin); other steps make their outputs
// unknown. Every output equals the unspecialized pipeline's, bit for bit, for every input the
// bounds allow: trees are never removed or reordered (a decided tree keeps its leaf, so sums
// run in the same order), only nodes no allowed value reaches.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "pg_predict/spec/pipeline.hpp"

namespace pg_predict::optimizer {

// The values one input may take, as the model reads it (a number, or a text input's vocabulary
// index): a number in [lo, hi] (when `values`), or missing (SQL NULL or NaN, when `missing`).
struct ValueSet {
    double lo = -std::numeric_limits<double>::infinity();
    double hi = std::numeric_limits<double>::infinity();
    bool values = true;
    bool missing = true;

    bool is_constant() const { return values && !missing && lo == hi; }
};

struct Specialization {
    spec::Pipeline pipeline;            // specialized, then optimized (validated)
    int32_t trees = 0;
    int64_t nodes_before = 0;           // tree nodes of the given pipeline
    int64_t nodes_after = 0;
    std::vector<int32_t> unused_inputs; // of the specialized pipeline (optimizer/unused_inputs.hpp)
    bool changed = false;               // some tree node was decided; else pipeline is a copy
};

// `optimized`: the pipeline as compiled (optimizer::optimize of the catalog's spec). `inputs`:
// the value set of each bounded input (by index into pipeline.features); inputs not listed may
// take any value. A transformer (Task::Transform) and a pipeline without trees are left alone.
Specialization specialize(const spec::Pipeline& optimized, const std::map<int32_t, ValueSet>& inputs);

// The index a text input gives `value` (its position in the vocabulary, -1 when it is not
// there, kMissingText when it is not there and the input reads that as missing), or -2 when
// `input` is no text input or the encoder refuses unknown values (then a row with it is an
// error, which pruning must not hide).
constexpr int32_t kMissingText = -3;
int32_t text_value_index(const spec::Pipeline&, int32_t input, const std::string& value);

}  // namespace pg_predict::optimizer
