// The PredictBatch node's executor state (exec/callbacks.cpp), shared with the overlap
// (exec/overlap.cpp): what one node keeps between batches, per input and per batch.
#pragma once

#include "plan/node_private.hpp"
#include "exec/early_exit.hpp"
#include "features.hpp"
#include "binding/model.hpp"
#include "exec/worker_counters.hpp"
#include "pg_predict/runtime/api.hpp"
#include "postgres_headers.hpp"

extern "C" {
#include "nodes/execnodes.h"
#include "commands/explain.h"
#include "portability/instr_time.h"
}

namespace pg_predict::pg {

struct DirectRead {
    int attr;     // child column, 0-based
    int feature;
};

struct PerRowModels;  // exec/per_row_models.hpp
struct CascadeScoring;  // exec/cascade.hpp
struct TopKFilter;      // exec/top_k_filter.hpp

struct InputState {
    const BatchInput* plan;
    BoundModel* model;           // NULL under EXPLAIN without ANALYZE, and for a name per row
    PerRowModels* per_row;       // a model name computed per row (BatchInput::named_per_row)
    int num_features;
    int width;                   // model outputs per row
    // FeatureSource::Columns: a child column, or an expression evaluated per row
    AttrNumber* column;          // per feature: child attno filled a column at a time from the
                                 // kept values (passed through, or a by-value column), or 0
                                 // (also for the float4/float8 reads below)
    AttrNumber* row_column;      // per feature: child attno of a by-reference column only the
                                 // model reads: converted while the child's tuple is current
    Oid* column_type;            // per feature, when column != 0
    ExprState** feature_expr;    // per feature, when column == 0
    FeatureConverter* convert;   // per feature, for expressions; NULL for a text feature
    const char** text_column;    // per text feature: its name, for error messages
    bool* blank_padded;          // per text feature: read from a char(n) (is_blank_padded)
    int* per_row_features;       // the features read per row (row_column or feature_expr)
    int num_per_row_features;
    // real and double precision columns (by value): converted from the child's slot straight
    // into the batch row by keep_row (no kept Datum, no second pass)
    DirectRead* float4_reads;
    int num_float4_reads;
    DirectRead* float8_reads;
    int num_float8_reads;
    // FeatureSource::Row / Array: one expression
    ExprState* argument;
    RowReader* reader;
    // The batch, allocated_rows × num_features, row-major: float64 when the program computes
    // in float64 (runtime::program_reads_float64), else float32 (pinned when the GPU may
    // score). Exactly one is set once reserve_rows ran.
    bool reads_float64;
    bool pinned;
    float* x32;
    double* x64;
    float* out;                  // allocated_rows × width
    bool* row_null;              // allocated_rows: the row or array argument was NULL
    CascadeScoring* cascade;     // scoring through the version's cascade (pg_predict.cascades), or NULL
};

// One batch's rows and buffers, as the overlap exchanges them (swap_batches): the live set is
// spread over PredictBatchState and its one input, the spare set is kept here.
struct BatchBuffers {
    Datum* values;
    bool* nulls;
    MemoryContext batch_context;
    int count;
    int allocated_rows;
    float* x32;
    float* out;
    bool* row_null;
    float* margins;               // the kernel's raw margins (rows), before the program's tail
    double fill_ms;               // reading and converting the batch (usage statistics)
};

enum class Spare { Empty, InFlight, Ready };

struct PredictBatchState {
    CustomScanState css;
    BatchPlan* plan;
    InputState* inputs;
    int capacity;                // pg_predict.batch_size (gpu_batch_size if the GPU may score)
    int target;                  // rows to pull for the next batch
    int row_stride;              // columns kept per row, 1 .. last_needed (the stride of values/nulls)
    int16* typlen;
    bool* typbyval;
    // By-value feature columns the parent does not need, kept (Datum and null flag) in values/
    // nulls like the passed-through ones, so the batch is converted a column at a time.
    AttrNumber* kept_columns;
    int num_kept_columns;
    int last_needed;             // child columns deformed per row: 1 .. last_needed
    bool per_row_reads;          // some input reads features per row (expressions, by-reference
                                 // columns, row or array arguments)
    bool programs_loaded;        // load_programs ran (at the first batch)
    Datum* values;               // allocated_rows × row_stride
    int allocated_rows;          // rows the buffers hold: grown with the batch (reserve_rows)
    MemoryContext buffer_context;
    bool* nulls;
    int count;                   // rows in the current batch
    int position;                // next row to hand up
    bool child_done;
    MemoryContext batch_context; // by-reference values of the current batch
    // Device placement, decided when the node starts and per batch (pg_predict.device)
    bool gpu_possible;           // the GPU may score this query's batches
    bool gpu_claimed;            // claim_gpu_slot() was asked
    bool gpu_granted;            // ... and gave a slot
    bool gpu_refused;            // the cap sent batches to the CPU
    // Usage statistics: the input whose features are read or whose program runs, to count an
    // error against (-1: none, e.g. while the plan below makes a row), and the time the current
    // batch's rows took to come from the plan below and be kept.
    int scoring_input;
    instr_time pull_time;
    instr_time* fill;             // per input: the current batch's pull and conversion time
    // The early exit (plan/early_exit_request.hpp, early_exit.hpp): the screen's verdicts for the
    // current batch (when `screened`), the conjuncts the node applies itself, the top-K's heap.
    EarlyExit early;
    ExprState* owned_qual;
    bool screened;
    // The top-K filter (pg_predict.approximate_top_k): every row scored by the filter first, the
    // best kept, then those handed to the batches as if the child gave only them. NULL: none.
    TopKFilter* filter;
    // The overlap (pg_predict.overlap, pg_predict.threads ≥ 2): a filled batch's trees are walked
    // on the background thread (runtime::start_background_kernel) while the next batch is read
    // into the other set of buffers. One input, a program that splits, CPU, no early exit.
    bool overlap;
    float* margins;               // the live set's
    double fill_ms;               // the live set's
    BatchBuffers spare;
    Spare spare_state;
    int64 overlapped_batches;
    double overlap_model_ms;      // Model Time of the batches scored by the overlap
    // EXPLAIN ANALYZE
    int64 gpu_batches;
    int64 batches;
    int64 rows_scored;
    int64 rows_decided;          // by a cascade's small model (exec/cascade.hpp)
    int64 rows_full_model;       // ... and left to the full model
    int64 rows_filtered;         // by a top-K filter (exec/top_k_filter.hpp)
    int64 rows_kept;             // ... and kept for the full model
    int64 rows_spilled;          // ... written to its temporary file (past work_mem)
    instr_time model_time;
    // ... and the parallel workers' (exec/worker_counters.hpp): their shared memory while the
    // node runs under a Gather, and in the leader, what they scored
    void* shared_counters;
    NodeCounters worker_counters;
};

// exec/fill.cpp
size_t row_bytes(const PredictBatchState* state);   // bytes one row takes in the node's buffers
void reserve_rows(PredictBatchState* state, int rows);  // the live batch's buffers for `rows` rows
void pull_rows(PredictBatchState* state);           // up to state->target rows from the child
void fill_inputs(PredictBatchState* state, instr_time* fill);  // features of the pulled rows
bool read_batch(PredictBatchState* state);          // pull_rows + fill_inputs into the live batch

// The catalog row of the model an error while the batch is read or scored counts against
// (state->scoring_input's, or for a name per row, the model it was reading or scoring); NULL: none.
const CatalogEntry* scoring_entry(const PredictBatchState* state);

// exec/callbacks.cpp
void score_input(PredictBatchState* state, int i, runtime::Program* program);  // input i's program

// exec/explain.cpp: the node's ExplainCustomScan
void explain_node(CustomScanState* node, List* ancestors, ExplainState* es);

// exec/overlap.cpp
bool overlap_wanted(PredictBatchState* state);      // decided when the programs load
void start_overlap(PredictBatchState* state);
bool pull_batch_overlapped(PredictBatchState* state);  // pull_batch with the overlap
void stop_overlap(PredictBatchState* state);        // waits for a batch in flight (rescan, end)

}  // namespace pg_predict::pg
