// The top-K filter: see exec/top_k_filter.hpp.
#include "exec/top_k_filter.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "catalog/catalog.hpp"
#include "exec/cascade.hpp"
#include "settings.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/buffile.h"
#include "utils/datum.h"
}

// No C++ object with a destructor lives in these frames: executor calls may longjmp.

namespace pg_predict::pg {

namespace {

constexpr double kKeptShare = 0.05;  // Willump's: at least 5% of the rows go to the full model

}  // namespace

struct TopKFilter {
    bool active;
    const char* reason;          // why not, when inactive
    int input;                   // whose value the Sort orders by
    CascadeModel* model;         // the small model
    int output;                  // its column that estimates the value
    int64 at_least;              // top_k_filter_factor x K
    bool descending;
    bool nulls_first;
    MemoryContext context;       // everything below
    // The kept rows ("slots"): a min-heap by key (the filter's score, negated for ascending:
    // larger is better), each slot's row in a memory cell or, past work_mem, in a temporary file.
    int64 count;
    int64 slots_allocated;
    int64 limit;                 // slots kept at most now: max(c x K, 5% of the rows read)
    int64* heap;
    double* key;
    int64* where;                // per slot: its cell (>= 0), or -(record + 1)
    // Memory cells: the columns passed up (by-reference values copied) and each input's features.
    int64 cells;
    int64 cells_allocated;
    int64* free_cells;           // cells of evicted rows, for the next ones
    int64 num_free;
    Datum* values;               // cells x passthrough
    bool* nulls;
    void** x;                    // per input: cells x its features (float or double)
    bool** row_null;             // per input: cells
    size_t cell_bytes;           // fixed bytes of one cell (and its slot)
    size_t held_bytes;           // by-reference values copied
    // The file, as a sort spills: records appended (an evicted one stays, unread).
    bool spilling;
    BufFile* file;
    int* record_file;
    off_t* record_offset;
    int64 records;
    int64 records_allocated;
    char* buffer;                // one record's bytes
    size_t buffer_size;
    int64 seen;                  // rows read through the filter
    bool filtered;               // the child is read; the kept rows are being handed on
    int64* order;                // slots in the order they are handed on (cells, then the file's)
    int64 handed;
};

namespace {

size_t feature_bytes(const InputState* input) {
    return (size_t)Max(input->num_features, 1) * (input->reads_float64 ? sizeof(double) : sizeof(float));
}

void* grow(TopKFilter* f, void* old, size_t bytes) {
    return old == NULL ? MemoryContextAllocHuge(f->context, bytes) : repalloc_huge(old, bytes);
}

void grow_slots(TopKFilter* f, int64 wanted) {
    if (wanted <= f->slots_allocated) return;
    const int64 n = Max(f->slots_allocated * 2, Max(wanted, (int64)1024));
    f->heap = (int64*)grow(f, f->heap, sizeof(int64) * n);
    f->key = (double*)grow(f, f->key, sizeof(double) * n);
    f->where = (int64*)grow(f, f->where, sizeof(int64) * n);
    f->slots_allocated = n;
}

// A memory cell for a new row: a freed one, a new one within work_mem, or -1 (to the file).
int64 new_cell(PredictBatchState* state, TopKFilter* f) {
    if (f->num_free > 0) return f->free_cells[--f->num_free];
    if (f->spilling) return -1;
    if ((f->cells + 1) * (int64)f->cell_bytes + (int64)f->held_bytes > (int64)work_mem * 1024L) {
        f->spilling = true;
        return -1;
    }
    if (f->cells == f->cells_allocated) {
        const int64 n = Max(f->cells_allocated * 2, (int64)1024);
        const int stride = Max(state->plan->passthrough, 1);
        f->values = (Datum*)grow(f, f->values, sizeof(Datum) * n * stride);
        f->nulls = (bool*)grow(f, f->nulls, sizeof(bool) * n * stride);
        f->free_cells = (int64*)grow(f, f->free_cells, sizeof(int64) * n);
        for (int i = 0; i < state->plan->num_inputs; i++) {
            f->x[i] = grow(f, f->x[i], feature_bytes(&state->inputs[i]) * n);
            f->row_null[i] = (bool*)grow(f, f->row_null[i], sizeof(bool) * n);
        }
        f->cells_allocated = n;
    }
    return f->cells++;
}

const void* batch_features(const InputState* input, int r) {
    return input->x64 != NULL ? (const void*)(input->x64 + (size_t)r * input->num_features)
                              : (const void*)(input->x32 + (size_t)r * input->num_features);
}

void* live_features(InputState* input, int r) {
    return input->x64 != NULL ? (void*)(input->x64 + (size_t)r * input->num_features)
                              : (void*)(input->x32 + (size_t)r * input->num_features);
}

// Batch row r into cell c.
void store_cell(PredictBatchState* state, TopKFilter* f, int64 c, int r) {
    const int passthrough = state->plan->passthrough;
    Datum* values = f->values + c * Max(passthrough, 1);
    bool* nulls = f->nulls + c * Max(passthrough, 1);
    memcpy(values, state->values + (size_t)r * state->row_stride, sizeof(Datum) * passthrough);
    memcpy(nulls, state->nulls + (size_t)r * state->row_stride, sizeof(bool) * passthrough);
    MemoryContext old = MemoryContextSwitchTo(f->context);
    for (int a = 0; a < passthrough; a++) {
        if (nulls[a] || state->typbyval[a]) continue;
        values[a] = datumCopy(values[a], false, state->typlen[a]);
        f->held_bytes += datumGetSize(values[a], false, state->typlen[a]);
    }
    MemoryContextSwitchTo(old);
    for (int i = 0; i < state->plan->num_inputs; i++) {
        const InputState* input = &state->inputs[i];
        const size_t bytes = feature_bytes(input);
        memcpy((char*)f->x[i] + c * bytes, batch_features(input, r), bytes);
        f->row_null[i][c] = input->row_null[r];
    }
}

// Cell c's row is evicted: its copied values freed, the cell free for the next row.
void release_cell(PredictBatchState* state, TopKFilter* f, int64 c) {
    Datum* values = f->values + c * Max(state->plan->passthrough, 1);
    bool* nulls = f->nulls + c * Max(state->plan->passthrough, 1);
    for (int a = 0; a < state->plan->passthrough; a++) {
        if (nulls[a] || state->typbyval[a]) continue;
        f->held_bytes -= datumGetSize(values[a], false, state->typlen[a]);
        pfree(DatumGetPointer(values[a]));
    }
    f->free_cells[f->num_free++] = c;
}

void reserve_buffer(TopKFilter* f, size_t bytes) {
    if (bytes <= f->buffer_size) return;
    f->buffer_size = Max(bytes, 2 * f->buffer_size);
    f->buffer = (char*)grow(f, f->buffer, f->buffer_size);
}

// Batch row r appended to the file (the passed-up values serialized, then the features).
int64 store_record(PredictBatchState* state, TopKFilter* f, int r) {
    const int passthrough = state->plan->passthrough;
    const Datum* values = state->values + (size_t)r * state->row_stride;
    const bool* nulls = state->nulls + (size_t)r * state->row_stride;
    size_t size = 0;
    for (int a = 0; a < passthrough; a++)
        size += datumEstimateSpace(values[a], nulls[a], state->typbyval[a], state->typlen[a]);
    for (int i = 0; i < state->plan->num_inputs; i++) size += feature_bytes(&state->inputs[i]) + sizeof(bool);
    reserve_buffer(f, size);
    char* at = f->buffer;
    for (int a = 0; a < passthrough; a++) datumSerialize(values[a], nulls[a], state->typbyval[a], state->typlen[a], &at);
    for (int i = 0; i < state->plan->num_inputs; i++) {
        const InputState* input = &state->inputs[i];
        memcpy(at, batch_features(input, r), feature_bytes(input));
        at += feature_bytes(input);
        *at++ = input->row_null[r] ? 1 : 0;
    }
    if (f->file == NULL) {
        MemoryContext old = MemoryContextSwitchTo(f->context);
        f->file = BufFileCreateTemp(false);
        MemoryContextSwitchTo(old);
    }
    if (f->records == f->records_allocated) {
        const int64 n = Max(f->records_allocated * 2, (int64)1024);
        f->record_file = (int*)grow(f, f->record_file, sizeof(int) * n);
        f->record_offset = (off_t*)grow(f, f->record_offset, sizeof(off_t) * n);
        f->records_allocated = n;
    }
    BufFileTell(f->file, &f->record_file[f->records], &f->record_offset[f->records]);
    BufFileWrite(f->file, &size, sizeof(size));
    BufFileWrite(f->file, f->buffer, size);
    state->rows_spilled++;
    return f->records++;
}

// Record k into row r of the live batch (by-reference values restored in the batch's memory).
void load_record(PredictBatchState* state, TopKFilter* f, int64 k, int r) {
    size_t size;
    if (BufFileSeek(f->file, f->record_file[k], f->record_offset[k], SEEK_SET) != 0 ||
        BufFileRead(f->file, &size, sizeof(size)) != sizeof(size))
        ereport(ERROR, (errcode_for_file_access(), errmsg("pg_predict: could not read the top-K filter's temporary file")));
    reserve_buffer(f, size);
    if (BufFileRead(f->file, f->buffer, size) != size)
        ereport(ERROR, (errcode_for_file_access(), errmsg("pg_predict: could not read the top-K filter's temporary file")));
    char* at = f->buffer;
    Datum* values = state->values + (size_t)r * state->row_stride;
    bool* nulls = state->nulls + (size_t)r * state->row_stride;
    MemoryContext old = MemoryContextSwitchTo(state->batch_context);
    for (int a = 0; a < state->plan->passthrough; a++) values[a] = datumRestore(&at, &nulls[a]);
    MemoryContextSwitchTo(old);
    for (int i = 0; i < state->plan->num_inputs; i++) {
        InputState* input = &state->inputs[i];
        memcpy(live_features(input, r), at, feature_bytes(input));
        at += feature_bytes(input);
        input->row_null[r] = *at++ != 0;
    }
}

// Cell c into row r of the live batch.
void load_cell(PredictBatchState* state, TopKFilter* f, int64 c, int r) {
    const int passthrough = state->plan->passthrough;
    memcpy(state->values + (size_t)r * state->row_stride, f->values + c * Max(passthrough, 1), sizeof(Datum) * passthrough);
    memcpy(state->nulls + (size_t)r * state->row_stride, f->nulls + c * Max(passthrough, 1), sizeof(bool) * passthrough);
    for (int i = 0; i < state->plan->num_inputs; i++) {
        InputState* input = &state->inputs[i];
        const size_t bytes = feature_bytes(input);
        memcpy(live_features(input, r), (char*)f->x[i] + c * bytes, bytes);
        input->row_null[r] = f->row_null[i][c];
    }
}

// Batch row r into slot s: a memory cell, or the file.
void put(PredictBatchState* state, TopKFilter* f, int64 s, int r) {
    const int64 c = new_cell(state, f);
    if (c >= 0) {
        store_cell(state, f, c, r);
        f->where[s] = c;
    } else {
        f->where[s] = -(store_record(state, f, r) + 1);
    }
}

void sift_down(TopKFilter* f, int64 i) {
    const int64 n = f->count;
    const int64 s = f->heap[i];
    const double k = f->key[s];
    for (;;) {
        int64 child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && f->key[f->heap[child + 1]] < f->key[f->heap[child]]) child++;
        if (f->key[f->heap[child]] >= k) break;
        f->heap[i] = f->heap[child];
        i = child;
    }
    f->heap[i] = s;
}

void offer(PredictBatchState* state, TopKFilter* f, int r, double key) {
    if (f->count < f->limit) {
        grow_slots(f, f->count + 1);
        const int64 s = f->count;
        put(state, f, s, r);
        f->key[s] = key;
        int64 i = f->count++;  // sift up
        while (i > 0 && f->key[f->heap[(i - 1) / 2]] > key) {
            f->heap[i] = f->heap[(i - 1) / 2];
            i = (i - 1) / 2;
        }
        f->heap[i] = s;
        return;
    }
    const int64 worst = f->heap[0];
    if (!(key > f->key[worst])) return;
    if (f->where[worst] >= 0) release_cell(state, f, f->where[worst]);
    put(state, f, worst, r);
    f->key[worst] = key;
    sift_down(f, 0);
}

// The order the kept rows are handed on: the cells', then the file's in file order (one pass).
void hand_on_order(TopKFilter* f) {
    f->order = (int64*)grow(f, NULL, sizeof(int64) * Max(f->count, (int64)1));
    int64 n = 0;
    for (int64 s = 0; s < f->count; s++)
        if (f->where[s] >= 0) f->order[n++] = s;
    const int64 first_record = n;
    for (int64 s = 0; s < f->count; s++)
        if (f->where[s] < 0) f->order[n++] = s;
    std::sort(f->order + first_record, f->order + n, [f](int64 a, int64 b) {
        const int64 ka = -f->where[a] - 1, kb = -f->where[b] - 1;
        return f->record_file[ka] != f->record_file[kb] ? f->record_file[ka] < f->record_file[kb]
                                                        : f->record_offset[ka] < f->record_offset[kb];
    });
}

// The filter over the live batch: each row's key, offered to the heap.
void filter_batch(PredictBatchState* state, TopKFilter* f) {
    InputState* input = &state->inputs[f->input];
    const int rows = state->count;
    int width = 0;
    instr_time start, elapsed;
    INSTR_TIME_SET_CURRENT(start);
    const float* scores =
        input->x64 != NULL ? cascade_small_scores(f->model, input->x64, rows, input->num_features, &width)
                           : cascade_small_scores(f->model, input->x32, rows, input->num_features, &width);
    INSTR_TIME_SET_CURRENT(elapsed);
    INSTR_TIME_SUBTRACT(elapsed, start);
    INSTR_TIME_ADD(state->model_time, elapsed);
    const bool argument = input->plan->source != FeatureSource::Columns;
    f->seen += rows;
    f->limit = Max(f->at_least, (int64)std::ceil(kKeptShare * (double)f->seen));
    for (int r = 0; r < rows; r++) {
        double key;
        if (argument && input->row_null[r]) {
            // A NULL argument scores NULL: where the sort puts NULLs first, the row is among the best.
            key = f->nulls_first ? INFINITY : -INFINITY;
        } else {
            const double s = scores[(size_t)r * width + f->output];
            key = std::isnan(s) ? -INFINITY : (f->descending ? s : -s);
        }
        offer(state, f, r, key);
    }
    state->rows_filtered += rows;
}

}  // namespace

void top_k_filter_activate(PredictBatchState* state) {
    const EarlyExitPlan* plan = &state->plan->early_exit;
    state->filter = NULL;
    if (!approximate_top_k || plan->top_k <= 0 || plan->output < 0) return;
    TopKFilter* f = (TopKFilter*)MemoryContextAllocZero(state->buffer_context, sizeof(TopKFilter));
    state->filter = f;
    f->input = state->plan->outputs[plan->output].input;
    f->descending = plan->descending;
    f->nulls_first = plan->nulls_first;
    for (int i = 0; i < state->plan->num_inputs; i++)
        if (state->inputs[i].per_row != NULL) {
            f->reason = "not used: a model named per row";
            return;
        }
    const InputState* input = &state->inputs[f->input];
    const bool classification = input->model->entry->classification;
    if (classification && plan->column < 0) {
        f->reason = "not used: predict() returns a class label";
        return;
    }
    f->model = cascade_model(input->model, state->buffer_context);
    if (f->model == NULL) {
        f->reason = "not used: the model has no filter (create_cascade)";
        return;
    }
    if (cascade_reads_text(f->model)) {
        f->reason = "not used: the filter reads text through its own terms (a cascade's text inputs)";
        return;
    }
    f->output = cascade_filter_output(f->model, plan->column);
    if (f->output < 0) {
        f->reason = "not used: the filter does not estimate this value";
        return;
    }
    const double at_least = (double)top_k_filter_factor * (double)plan->top_k;
    f->at_least = (int64)Min(at_least, (double)(MaxAllocHugeSize / 64));
    f->limit = f->at_least;
    f->context = AllocSetContextCreate(state->buffer_context, "PredictBatch top-K filter", ALLOCSET_DEFAULT_SIZES);
    f->x = (void**)MemoryContextAllocZero(state->buffer_context, sizeof(void*) * Max(state->plan->num_inputs, 1));
    f->row_null = (bool**)MemoryContextAllocZero(state->buffer_context, sizeof(bool*) * Max(state->plan->num_inputs, 1));
    f->cell_bytes = 3 * sizeof(int64) + sizeof(double) +
                    (size_t)Max(state->plan->passthrough, 1) * (sizeof(Datum) + sizeof(bool));
    for (int i = 0; i < state->plan->num_inputs; i++) f->cell_bytes += feature_bytes(&state->inputs[i]) + sizeof(bool);
    f->active = true;
}

bool top_k_filter_active(const PredictBatchState* state) { return state->filter != NULL && state->filter->active; }

bool top_k_filter_next_batch(PredictBatchState* state) {
    TopKFilter* f = state->filter;
    if (!f->filtered) {
        while (!state->child_done) {
            CHECK_FOR_INTERRUPTS();
            if (!read_batch(state)) break;
            filter_batch(state, f);
        }
        f->filtered = true;
        state->rows_kept += f->count;
        hand_on_order(f);
    }
    if (f->handed >= f->count) return false;
    const int rows = (int)Min((int64)state->capacity, f->count - f->handed);
    MemoryContextReset(state->batch_context);
    reserve_rows(state, rows);
    for (int r = 0; r < rows; r++) {
        const int64 s = f->order[f->handed + r];
        if (f->where[s] >= 0)
            load_cell(state, f, f->where[s], r);
        else
            load_record(state, f, -f->where[s] - 1, r);
    }
    for (int i = 0; i < state->plan->num_inputs; i++) INSTR_TIME_SET_ZERO(state->fill[i]);  // read while filtering
    f->handed += rows;
    state->count = rows;
    state->position = 0;
    return true;
}

void top_k_filter_end(PredictBatchState* state) {
    TopKFilter* f = state->filter;
    if (f == NULL || f->file == NULL) return;
    BufFileClose(f->file);
    f->file = NULL;
}

void top_k_filter_rescan(PredictBatchState* state) {
    TopKFilter* f = state->filter;
    if (f == NULL || !f->active) return;
    top_k_filter_end(state);
    MemoryContextReset(f->context);
    TopKFilter fresh = *f;
    fresh.count = fresh.slots_allocated = fresh.cells = fresh.cells_allocated = fresh.num_free = 0;
    fresh.records = fresh.records_allocated = fresh.seen = fresh.handed = 0;
    fresh.heap = fresh.where = fresh.free_cells = fresh.order = NULL;
    fresh.key = NULL;
    fresh.values = NULL;
    fresh.nulls = NULL;
    fresh.record_file = NULL;
    fresh.record_offset = NULL;
    fresh.buffer = NULL;
    fresh.buffer_size = fresh.held_bytes = 0;
    fresh.spilling = fresh.filtered = false;
    fresh.limit = fresh.at_least;
    for (int i = 0; i < state->plan->num_inputs; i++) {
        f->x[i] = NULL;
        f->row_null[i] = NULL;
    }
    *f = fresh;
}

void top_k_filter_explain(const PredictBatchState* state, ExplainState* es) {
    const EarlyExitPlan* plan = &state->plan->early_exit;
    if (!approximate_top_k || plan->top_k <= 0 || plan->output < 0) return;
    const TopKFilter* f = state->filter;
    const char* text;
    if (f != NULL && f->active) {
        text = psprintf("%d x " INT64_FORMAT " rows (%s)", top_k_filter_factor, plan->top_k,
                        cascade_filter_description(f->model));
    } else if (f != NULL) {
        text = f->reason;
    } else {  // not started (EXPLAIN without ANALYZE): what the catalog says of the deployed version
        const BatchInput* in = &state->plan->inputs[state->plan->outputs[plan->output].input];
        const CatalogEntry* entry = catalog_lookup(unpinned_model_name(in->model), true);
        char* stored = entry != NULL ? catalog_cascade(entry->id) : NULL;
        if (entry != NULL && entry->classification && plan->column < 0)
            text = "not used: predict() returns a class label";
        else if (stored == NULL)
            text = "not used: the model has no filter (create_cascade)";
        else
            text = psprintf("%d x " INT64_FORMAT " rows", top_k_filter_factor, plan->top_k);
    }
    ExplainPropertyText("Top-K Filter", text, es);
}

}  // namespace pg_predict::pg
