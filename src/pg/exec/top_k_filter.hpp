// Willump's top-K filter (issue 48): for ORDER BY <score> LIMIT K above the node
// (plan/early_exit_request.cpp marks it), with pg_predict.approximate_top_k on and a version
// whose create_cascade built a small model that estimates the score. The node reads every row
// of the child first, scores it with the small model only, keeps the best
// max(top_k_filter_factor x K, 5% of the rows read) and then hands only those on, as batches
// that the full model scores exactly: the Sort above returns the top K by the model's own score
// among them. The c x K best by the filter are always kept (as a bounded sort keeps its K rows);
// past work_mem, the kept rows go to a temporary file, as a sort spills.
#pragma once

#include "exec/state.hpp"

extern "C" {
#include "commands/explain.h"
}

namespace pg_predict::pg {

struct TopKFilter;

// At load_programs: state->filter when the setting is on and the node has a top-K; active when
// the model has a filter for the sorted value (else EXPLAIN ANALYZE says why not).
void top_k_filter_activate(PredictBatchState* state);

// Whether the node's batches come from the filter's kept rows (top_k_filter_next_batch).
bool top_k_filter_active(const PredictBatchState* state);

// Reads the child through the filter (the first call) and puts the next kept rows into the live
// batch, filled as read_batch fills it, for score_batch. False when none is left.
bool top_k_filter_next_batch(PredictBatchState* state);

// A rescan reads the child again; the node's end closes the temporary file.
void top_k_filter_rescan(PredictBatchState* state);
void top_k_filter_end(PredictBatchState* state);

// "Top-K Filter: 10 x 100 rows (20 trees on 2 inputs)", or why it is not used.
void top_k_filter_explain(const PredictBatchState* state, ExplainState* es);

}  // namespace pg_predict::pg
