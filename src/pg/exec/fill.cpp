// Filling a PredictBatch node's batch: pulling the child's rows, keeping the columns the node
// passes up, and converting each input's features into its float32 or float64 batch, in the
// buffers reserve_rows sizes. The overlap (overlap.cpp) reads its batches through read_batch too.
#include <cmath>
#include <cstring>

#include "plan/node_private.hpp"
#include "exec/cascade.hpp"
#include "exec/state.hpp"
#include "exec/per_row_models.hpp"
#include "exec/early_exit.hpp"
#include "device.hpp"
#include "features.hpp"
#include "guard.hpp"
#include "binding/model.hpp"
#include "plan/invalidation.hpp"
#include "pg_predict/runtime/api.hpp"
#include "settings.hpp"
#include "catalog/usage_stats.hpp"

extern "C" {
#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/nodeCustom.h"
#include "nodes/nodeFuncs.h"
#include "utils/datum.h"
#include "portability/instr_time.h"
#include "utils/ruleutils.h"
}

// No C++ object with a destructor lives in these frames: executor calls may longjmp.

namespace pg_predict::pg {

// Bytes one row of a batch takes in this node's buffers.
size_t row_bytes(const PredictBatchState* state) {
    size_t bytes = (size_t)Max(state->row_stride, 1) * (sizeof(Datum) + sizeof(bool));
    for (int i = 0; i < state->plan->num_inputs; i++) {
        const InputState* input = &state->inputs[i];
        bytes += (size_t)Max(input->num_features, 1) * (input->reads_float64 ? sizeof(double) : sizeof(float)) +
                 (size_t)Max(input->width, 1) * sizeof(float) + sizeof(bool);
    }
    return bytes;
}

// Buffers for `rows` rows, zeroed (a feature the model never reads stays 0). They grow with
// the batch (×4 from first_batch_rows up to capacity), so a query that reads one row never
// allocates for batch_size rows.
void reserve_rows(PredictBatchState* state, int rows) {
    if (rows <= state->allocated_rows) return;
    for (int i = 0; i < state->plan->num_inputs; i++) {
        InputState* input = &state->inputs[i];
        size_t cells = (size_t)rows * Max(input->num_features, 1);
        if (input->x64 != NULL) pfree(input->x64);
        if (input->out != NULL) pfree(input->out);
        if (input->row_null != NULL) pfree(input->row_null);
        input->x64 = NULL;
        input->out = NULL;
        input->row_null = NULL;
        if (input->pinned) {
            // Pinned host memory: the GPU reads the batch from where the features are written.
            float* previous = input->x32;
            input->x32 = NULL;
            if (previous != NULL) runtime::free_batch_buffer(previous);
            input->x32 = guarded([&] { return runtime::alloc_batch_buffer(cells); });
        } else {
            if (input->x32 != NULL) pfree(input->x32);
            input->x32 = NULL;
            // GPU-sized batches of the CPU fallback can pass MaxAllocSize on wide rows.
            if (input->reads_float64)
                input->x64 = (double*)MemoryContextAllocExtended(state->buffer_context, sizeof(double) * cells,
                                                                 MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
            else
                input->x32 = (float*)MemoryContextAllocExtended(state->buffer_context, sizeof(float) * cells,
                                                                MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
        }
        input->out = (float*)MemoryContextAllocHuge(state->buffer_context,
                                                    sizeof(float) * (size_t)rows * Max(input->width, 1));
        input->row_null = (bool*)MemoryContextAllocZero(state->buffer_context, sizeof(bool) * rows);
        if (input->per_row != NULL) per_row_models_reserve(state, input, rows);
    }
    size_t cells = (size_t)rows * Max(state->row_stride, 1);
    if (state->values != NULL) pfree(state->values);
    if (state->nulls != NULL) pfree(state->nulls);
    state->values = NULL;
    state->nulls = NULL;
    state->values = (Datum*)MemoryContextAllocHuge(state->buffer_context, sizeof(Datum) * cells);
    state->nulls = (bool*)MemoryContextAllocHuge(state->buffer_context, sizeof(bool) * cells);
    if (state->overlap) {
        if (state->margins != NULL) pfree(state->margins);
        state->margins = NULL;
        state->margins = (float*)MemoryContextAllocHuge(state->buffer_context, sizeof(float) * rows);
    }
    if (state->early.active) {
        if (state->early.verdict != NULL) pfree(state->early.verdict);
        state->early.verdict = (uint8_t*)MemoryContextAlloc(state->buffer_context, rows);
    }
    state->allocated_rows = rows;
}

namespace {

// An input's real and double precision features of the child's current tuple, into its row
// of the batch: the same conversions as fill_column's.
template <typename Feature>
void read_direct(const InputState* input, const TupleTableSlot* slot, Feature* x) {
    // Local copies: x could alias the slot's fields as far as the compiler knows.
    const Datum* values = slot->tts_values;
    const bool* isnull = slot->tts_isnull;
    const DirectRead* reads = input->float4_reads;
    for (int k = 0, n = input->num_float4_reads; k < n; k++)
        x[reads[k].feature] = isnull[reads[k].attr] ? (Feature)NAN : (Feature)DatumGetFloat4(values[reads[k].attr]);
    reads = input->float8_reads;
    for (int k = 0, n = input->num_float8_reads; k < n; k++)
        x[reads[k].feature] = isnull[reads[k].attr] ? (Feature)NAN : (Feature)DatumGetFloat8(values[reads[k].attr]);
}

// Keeps one child tuple: the values passed through to the parent, by-reference ones copied
// since the child reuses its slot, and the other by-value columns only the model reads; the
// batch is filled from these a column at a time (fill_columns). Real and double precision
// features go straight into the batch (read_direct); by-reference columns only the model reads
// are converted from the slot by read_row_features.
void keep_row(PredictBatchState* state, TupleTableSlot* slot, int row) {
    // Deforms only up to the last column read: a 10-feature model over the first columns of a
    // wide table never touches the rest of the tuple.
    slot_getsomeattrs(slot, state->last_needed);
    Datum* values = state->values + (size_t)row * state->row_stride;
    bool* nulls = state->nulls + (size_t)row * state->row_stride;
    for (int a = 0; a < state->plan->passthrough; a++) {
        nulls[a] = slot->tts_isnull[a];
        if (nulls[a] || state->typbyval[a]) {
            values[a] = slot->tts_values[a];
        } else {
            MemoryContext old = MemoryContextSwitchTo(state->batch_context);
            values[a] = datumCopy(slot->tts_values[a], false, state->typlen[a]);
            MemoryContextSwitchTo(old);
        }
    }
    for (int k = 0; k < state->num_kept_columns; k++) {
        int a = state->kept_columns[k] - 1;
        values[a] = slot->tts_values[a];
        nulls[a] = slot->tts_isnull[a];
    }
    for (int i = 0; i < state->plan->num_inputs; i++) {
        InputState* input = &state->inputs[i];
        if (input->num_float4_reads + input->num_float8_reads == 0) continue;
        const size_t at = (size_t)row * input->num_features;
        if (input->x64 != NULL)
            read_direct(input, slot, input->x64 + at);
        else
            read_direct(input, slot, input->x32 + at);
    }
}

// One input's features of the current child tuple, into x (its row of the batch).
template <typename Feature>
void read_input_row(PredictBatchState* state, InputState* input, TupleTableSlot* slot, int row, Feature* x) {
    ExprContext* econtext = state->css.ss.ps.ps_ExprContext;
    if (input->plan->source == FeatureSource::Columns) {
        for (int i = 0; i < input->num_per_row_features; i++) {
            const int f = input->per_row_features[i];
            bool isnull;
            Datum value;
            if (input->row_column[f] != 0) {
                value = slot->tts_values[input->row_column[f] - 1];
                isnull = slot->tts_isnull[input->row_column[f] - 1];
            } else {
                value = ExecEvalExpr(input->feature_expr[f], econtext, &isnull);
            }
            if (input->convert[f] != NULL)
                x[f] = isnull ? (Feature)NAN : (Feature)input->convert[f](value);
            else if (cascade_defers(input, f))
                cascade_hold(state, input, f, row, value, isnull);
            else
                read_text_feature(input->model, f, value, isnull, input->text_column[f], input->blank_padded[f], x);
        }
        return;
    }
    bool isnull;
    Datum value = ExecEvalExpr(input->argument, econtext, &isnull);
    input->row_null[row] = isnull;
    if (isnull) return;
    if (input->plan->source == FeatureSource::Row) {
        HeapTupleHeader tuple = DatumGetHeapTupleHeader(value);
        Oid type_id = HeapTupleHeaderGetTypeId(tuple);
        int32 typmod = HeapTupleHeaderGetTypMod(tuple);
        if (input->reader == NULL || input->reader->type_id != type_id || input->reader->typmod != typmod)
            input->reader = make_row_reader(input->model, type_id, typmod, state->css.ss.ps.state->es_query_cxt);
        cascade_batch_row(state, input, row);  // a cascade's text inputs, from the same terms
        read_row(input->model, input->reader, tuple, x);
        cascade_batch_row_done(input);
    } else {
        read_array(input->model, DatumGetArrayTypeP(value), x);
    }
}

// Features that are expressions or whole arguments are evaluated while the child's tuple is
// current; plain columns are filled afterwards, a column at a time.
void read_row_features(PredictBatchState* state, TupleTableSlot* slot, int row) {
    ExprContext* econtext = state->css.ss.ps.ps_ExprContext;
    econtext->ecxt_outertuple = slot;
    MemoryContext old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
    for (int i = 0; i < state->plan->num_inputs; i++) {
        InputState* input = &state->inputs[i];
        size_t at = (size_t)row * input->num_features;
        state->scoring_input = i;
        if (input->per_row != NULL)
            per_row_models_read(state, input, row);
        else if (input->x64 != NULL)
            read_input_row(state, input, slot, row, input->x64 + at);
        else
            read_input_row(state, input, slot, row, input->x32 + at);
    }
    state->scoring_input = -1;
    MemoryContextSwitchTo(old);
    ResetExprContext(econtext);
}

// Rows filled a column at a time per tile: the tile's kept Datums (row_stride × 8 bytes a row)
// and its rows of the batch stay in L1 while each column is converted, instead of a strided
// pass over the whole batch per column.
constexpr int kFillTileRows = 64;

template <typename Feature, typename Read>
void fill_column(PredictBatchState* state, InputState* input, Feature* batch, int f, AttrNumber column,
                 int first, int last, Read read) {
    const int width = state->row_stride;
    const int features = input->num_features;
    const Datum* values = state->values + (column - 1);
    const bool* nulls = state->nulls + (column - 1);
    Feature* x = batch + f;
    for (int r = first; r < last; r++)
        x[(size_t)r * features] = nulls[(size_t)r * width] ? (Feature)NAN : (Feature)read(values[(size_t)r * width]);
}

template <typename Feature>
void fill_columns(PredictBatchState* state, InputState* input, Feature* x) {
    for (int first = 0; first < state->count; first += kFillTileRows) {
        const int last = Min(first + kFillTileRows, state->count);
        for (int f = 0; f < input->num_features; f++) {
            AttrNumber column = input->column[f];
            if (column == 0) continue;
            if (input->convert[f] == NULL && is_vectorized_feature(input->model, f)) {
                if (cascade_defers(input, f)) continue;  // filled for the rows the cascade leaves
                // a vectorizer: its K values into the row's slots (nothing at a later slot)
                const int width = state->row_stride;
                for (int r = first; r < last; r++) {
                    const size_t at = (size_t)r * width + (column - 1);
                    read_text_feature(input->model, f, state->values[at], state->nulls[at], input->text_column[f],
                                      input->blank_padded[f], x + (size_t)r * input->num_features);
                }
                continue;
            }
            if (input->convert[f] == NULL) {  // text: dictionary-encoded, one hash lookup a row
                const BoundModel* model = input->model;
                const char* name = input->text_column[f];
                const bool padded = input->blank_padded[f];
                fill_column(state, input, x, f, column, first, last, [model, f, name, padded](Datum v) {
                    return encode_text_feature(model, f, v, name, padded);
                });
                continue;
            }
            switch (input->column_type[f]) {
                case FLOAT4OID:
                    fill_column(state, input, x, f, column, first, last, [](Datum v) { return DatumGetFloat4(v); });
                    break;
                case FLOAT8OID:
                    fill_column(state, input, x, f, column, first, last, [](Datum v) { return DatumGetFloat8(v); });
                    break;
                case INT4OID:
                    fill_column(state, input, x, f, column, first, last, [](Datum v) { return DatumGetInt32(v); });
                    break;
                // via float64 as from_int8 and a library given float64 rows: above 2^53 a direct int64 -> float
                // rounding can differ
                case INT8OID:
                    fill_column(state, input, x, f, column, first, last,
                                [](Datum v) { return (double)DatumGetInt64(v); });
                    break;
                case INT2OID:
                    fill_column(state, input, x, f, column, first, last, [](Datum v) { return DatumGetInt16(v); });
                    break;
                case BOOLOID:
                    fill_column(state, input, x, f, column, first, last,
                                [](Datum v) { return DatumGetBool(v) ? 1 : 0; });
                    break;
                default: {
                    FeatureConverter convert = input->convert[f];
                    fill_column(state, input, x, f, column, first, last, [convert](Datum v) { return convert(v); });
                }
            }
        }
    }
}

}  // namespace

// Converts each input's features of the pulled rows into its batch; fill[i]: the time it took,
// plus the pull's.
void fill_inputs(PredictBatchState* state, instr_time* fill) {
    for (int i = 0; i < state->plan->num_inputs; i++) {
        InputState* input = &state->inputs[i];
        state->scoring_input = i;
        instr_time fill_start;
        INSTR_TIME_SET_CURRENT(fill_start);
        if (input->plan->source == FeatureSource::Columns) {
            // Detoasted text and numeric values live until the next batch.
            MemoryContext old = MemoryContextSwitchTo(state->batch_context);
            if (input->x64 != NULL)
                fill_columns(state, input, input->x64);
            else
                fill_columns(state, input, input->x32);
            MemoryContextSwitchTo(old);
            // Row and array arguments were checked as each was read (read_row, read_array).
            if (input->model != NULL) {
                if (input->x64 != NULL)
                    check_finite(input->model, input->x64, (size_t)state->count, input->num_features);
                else if (input->x32 != NULL)
                    check_finite(input->model, input->x32, (size_t)state->count, input->num_features);
            }
        }
        INSTR_TIME_SET_CURRENT(fill[i]);
        INSTR_TIME_SUBTRACT(fill[i], fill_start);
        INSTR_TIME_ADD(fill[i], state->pull_time);
    }
}

// Pulls up to target rows from the child into the batch buffers.
void pull_rows(PredictBatchState* state) {
    PlanState* child = outerPlanState(state);
    while (state->count < state->target) {
        TupleTableSlot* slot = ExecProcNode(child);
        if (TupIsNull(slot)) {
            state->child_done = true;
            break;
        }
        keep_row(state, slot, state->count);
        if (state->per_row_reads) read_row_features(state, slot, state->count);
        state->count++;
    }
}

// Reads the next batch into the (live) buffers and converts its features, without scoring it
// (state->fill: each input's time). False when the plan below had no more rows.
bool read_batch(PredictBatchState* state) {
    MemoryContextReset(state->batch_context);
    state->count = 0;
    state->position = 0;
    reserve_rows(state, state->target);
    for (int i = 0; i < state->plan->num_inputs; i++)
        if (state->inputs[i].per_row != NULL) per_row_models_begin_batch(&state->inputs[i]);
    instr_time start;
    INSTR_TIME_SET_CURRENT(start);
    state->scoring_input = -1;
    // An error while an input's features are read counts against that model version (usage
    // statistics), then goes on as it was.
    PG_TRY();
    {
        pull_rows(state);
        if (state->count > 0) {
            INSTR_TIME_SET_CURRENT(state->pull_time);
            INSTR_TIME_SUBTRACT(state->pull_time, start);
            fill_inputs(state, state->fill);
        }
    }
    PG_CATCH();
    {
        if (const CatalogEntry* entry = scoring_entry(state)) count_scoring_error(entry);
        PG_RE_THROW();
    }
    PG_END_TRY();
    state->scoring_input = -1;
    state->target = Min(state->capacity, state->target * 4);
    return state->count > 0;
}

}  // namespace pg_predict::pg
