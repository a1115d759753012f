// A PredictBatch input whose model name is computed per row (predict('store_' || store_id, t)):
// while a batch is read, each row's name is evaluated and the row (its argument, copied) joins
// the group of the model it names; when the batch is scored, each group's features are read by
// its model and scored in one program run (batch_size rows at most), and the results are written
// back to the rows' places, so the node hands its rows up in their order.
//
// The models are bound when their first group is scored (catalog lookup at the statement's
// snapshot, usage privilege, the call's checks) and kept for the query while their programs stay
// within pg_predict.cache_size; binding one more beyond it releases the least recently used. The
// groups of bound models are scored first, so a model is bound at most once a batch, and a batch
// that names more models than fit still completes.
#pragma once

#include "exec/state.hpp"

namespace pg_predict::pg {

struct PerRowModels;

// At executor start (not under EXPLAIN without ANALYZE): the name and argument expressions.
PerRowModels* per_row_models_init(PredictBatchState* state, int input, EState* estate);

// Buffers for a batch of `rows` rows (with the node's reserve_rows).
void per_row_models_reserve(PredictBatchState* state, InputState* input, int rows);

// A new batch: no rows in any group.
void per_row_models_begin_batch(InputState* input);

// The child's current tuple (econtext's outer tuple) as batch row `row`: evaluates the name and
// the argument and puts the row into the named model's group. Runs in per-tuple memory.
void per_row_models_read(PredictBatchState* state, InputState* input, int row);

// Binds the batch's models, scores every group and writes each row's results (score_batch).
void per_row_models_score(PredictBatchState* state, int input_index);

// At the node's end: the bound models' usage statistics go to model_stats.
void per_row_models_end(InputState* input);

// Output j's value for batch row `row` (its input is named per row).
Datum per_row_models_result(const InputState* input, int output, int row, bool* isnull);

// The catalog row of the model whose features are being read or whose program runs (usage
// statistics count an error against it); NULL when none.
const CatalogEntry* per_row_models_current(const InputState* input);

// Adds this process's counters of the input to `sum` (EXPLAIN ANALYZE: models scored, programs
// run, one per model per batch, or more when a batch names more than the cache holds; programs
// read or compiled from the catalog; models released to stay within pg_predict.cache_size).
void per_row_models_count(const InputState* input, NodeCounters* sum);

}  // namespace pg_predict::pg
