// Scoring through a version's cascade (issue 48; create_cascade builds it, sql/cascade_function.cpp):
// the small model over every row of the batch, then the full model only over the rows it is not
// sure of. Only where the result is a label (predict, predict_label of a classifier), with
// pg_predict.cascades on; predict_proba and everything else keep the full model. Every path
// that scores a label applies it alike (the node, the predict functions, per-tenant models):
// no query shape changes what a cascade gives.
#pragma once

#include "exec/state.hpp"
#include "binding/model.hpp"

extern "C" {
#include "commands/explain.h"
}

namespace pg_predict::pg {

struct CascadeScoring;
struct CascadeModel;

// For the paths that score a bound model row by row or by group (the predict functions,
// per-tenant models in the node): the version's cascade when pg_predict.cascades is on and every
// call of `kinds` is a label; NULL otherwise. Lives in `context`, which releases it.
CascadeModel* cascade_load(const BoundModel* model, const PredictCallKind* kinds, int num_kinds,
                           MemoryContext context);

// Scores `rows` rows of the model's features into `out` (rows x output_width): the small model's
// class where it is sure, `full` over the rest. Returns the rows the small model decided.
int64 cascade_run(CascadeModel* c, const BoundModel* model, runtime::Program* full, const float* x, int64 rows,
                  float* out);
int64 cascade_run(CascadeModel* c, const BoundModel* model, runtime::Program* full, const double* x, int64 rows,
                  float* out);

// At the first batch (load_programs): input i's cascade, when the setting is on, every output
// of the input is a label, and its version has one. Reads
// the catalog once and the small program from the backend's cache (built there once).
void cascade_activate(PredictBatchState* state, int i);

// Scores input i's batch into its `out` through the cascade; false when it has none. Never
// active where the GPU may score (cascade_activate).
bool cascade_score(PredictBatchState* state, int i, runtime::Program* full, bool gpu);

// A text vectorizer the small model does not read is filled only for the rows it leaves to the
// full model: the fill skips it (cascade_defers) and, for a column read while the child's tuple
// is current, keeps the value for later (cascade_hold).
bool cascade_defers(const InputState* input, int f);
void cascade_hold(PredictBatchState* state, InputState* input, int f, int row, Datum value, bool isnull);

// The version's small model (a classifier's cascade, or a regressor's filter), whatever the
// settings; NULL where the version has none. Lives in `context`, which releases it.
CascadeModel* cascade_model(const BoundModel* model, MemoryContext context);

// For a top-K filter (exec/top_k_filter.hpp): the small model's output that estimates the full
// model's `column` (predict_proba's element; -1: a regressor's predict), or -1 where it has none;
// its outputs over `rows` rows of the model's features (rows x width, valid until its next run);
// and "20 trees on 2 inputs" for EXPLAIN.
int cascade_filter_output(const CascadeModel* c, int column);
const float* cascade_small_scores(CascadeModel* c, const float* x, int64 rows, int F, int* width);
const float* cascade_small_scores(CascadeModel* c, const double* x, int64 rows, int F, int* width);
const char* cascade_filter_description(const CascadeModel* c);

// A cascade whose small model reads text through its own projection of a vectorizer's terms
// (create_cascade's text inputs): those values are computed as the model's row is read, from the
// same terms, into the cascade's side rows. The per-row paths reserve `rows` side rows
// (cascade_read_rows), point the model's reading at row r (cascade_reading_row) before reading
// it, stop when done (cascade_read_done), and then cascade_run reads rows 0 .. rows - 1.
bool cascade_reads_text(const CascadeModel* c);
void cascade_read_rows(CascadeModel* c, BoundModel* model, int64 rows);
void cascade_reading_row(CascadeModel* c, BoundModel* model, int64 row);
void cascade_read_done(CascadeModel* c);

// The same for the node's input read through a row argument (a Columns input's text is held
// and projected when the batch is scored).
void cascade_batch_row(PredictBatchState* state, InputState* input, int row);
void cascade_batch_row_done(InputState* input);

// "Cascade: 20 trees on 2 of 8 inputs, confidence >= 0.84" for an active cascade.
void cascade_explain(const PredictBatchState* state, int i, const char* suffix, ExplainState* es);

}  // namespace pg_predict::pg
