// The top-K filter: see exec/top_k_filter.hpp.
#include "exec/top_k_filter.hpp"

#include <cmath>
#include <cstring>

#include "catalog/catalog.hpp"
#include "exec/cascade.hpp"
#include "settings.hpp"

extern "C" {
#include "miscadmin.h"
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
    // The kept rows ("slots"), in `context`: their kept columns and each input's features, a
    // min-heap of slots by key (the filter's score, negated for ascending: larger is better).
    MemoryContext context;
    int64 count;
    int64 allocated;
    int64 limit;                 // slots kept at most now: grows with the rows read
    bool limit_fixed;            // work_mem reached: no more beyond c x K
    int64* heap;
    double* key;
    Datum* values;               // allocated x row_stride
    bool* nulls;
    void** x;                    // per input: allocated x its features (float or double)
    bool** row_null;             // per input: allocated
    size_t slot_bytes;           // fixed bytes of one slot
    size_t held_bytes;           // by-reference values copied
    int64 seen;                  // rows read through the filter
    bool filtered;               // the child is read; the kept rows are being handed on
    int64 handed;                // slots handed on so far
};

namespace {

size_t feature_bytes(const InputState* input) {
    return (size_t)Max(input->num_features, 1) * (input->reads_float64 ? sizeof(double) : sizeof(float));
}

void grow_slots(PredictBatchState* state, TopKFilter* f, int64 wanted) {
    if (wanted <= f->allocated) return;
    int64 n = Max(f->allocated * 2, Max(wanted, (int64)1024));
    const int stride = Max(state->row_stride, 1);
    auto grow = [&](void* old, size_t bytes) {
        return old == NULL ? MemoryContextAllocHuge(f->context, bytes) : repalloc_huge(old, bytes);
    };
    f->heap = (int64*)grow(f->heap, sizeof(int64) * n);
    f->key = (double*)grow(f->key, sizeof(double) * n);
    f->values = (Datum*)grow(f->values, sizeof(Datum) * n * stride);
    f->nulls = (bool*)grow(f->nulls, sizeof(bool) * n * stride);
    for (int i = 0; i < state->plan->num_inputs; i++) {
        f->x[i] = grow(f->x[i], feature_bytes(&state->inputs[i]) * n);
        f->row_null[i] = (bool*)grow(f->row_null[i], sizeof(bool) * n);
    }
    f->allocated = n;
}

// Batch row r into slot s: its kept columns (by-reference passed-through values copied) and
// every input's features.
void store(PredictBatchState* state, TopKFilter* f, int64 s, int r) {
    const int stride = state->row_stride;
    Datum* values = f->values + s * stride;
    bool* nulls = f->nulls + s * stride;
    memcpy(values, state->values + (size_t)r * stride, sizeof(Datum) * stride);
    memcpy(nulls, state->nulls + (size_t)r * stride, sizeof(bool) * stride);
    MemoryContext old = MemoryContextSwitchTo(f->context);
    for (int a = 0; a < state->plan->passthrough; a++) {
        if (nulls[a] || state->typbyval[a]) continue;
        values[a] = datumCopy(values[a], false, state->typlen[a]);
        f->held_bytes += datumGetSize(values[a], false, state->typlen[a]);
    }
    MemoryContextSwitchTo(old);
    for (int i = 0; i < state->plan->num_inputs; i++) {
        const InputState* input = &state->inputs[i];
        const size_t bytes = feature_bytes(input);
        const void* from = input->x64 != NULL ? (const void*)(input->x64 + (size_t)r * input->num_features)
                                              : (const void*)(input->x32 + (size_t)r * input->num_features);
        memcpy((char*)f->x[i] + s * bytes, from, bytes);
        f->row_null[i][s] = input->row_null[r];
    }
}

// Frees slot s's copied values (it is about to hold another row).
void release(PredictBatchState* state, TopKFilter* f, int64 s) {
    Datum* values = f->values + s * state->row_stride;
    bool* nulls = f->nulls + s * state->row_stride;
    for (int a = 0; a < state->plan->passthrough; a++) {
        if (nulls[a] || state->typbyval[a]) continue;
        f->held_bytes -= datumGetSize(values[a], false, state->typlen[a]);
        pfree(DatumGetPointer(values[a]));
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
        grow_slots(state, f, f->count + 1);
        const int64 s = f->count;
        store(state, f, s, r);
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
    release(state, f, worst);
    store(state, f, worst, r);
    f->key[worst] = key;
    sift_down(f, 0);
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
    if (!f->limit_fixed) {
        f->limit = Max(f->at_least, (int64)std::ceil(kKeptShare * (double)f->seen));
        if (f->count * (int64)f->slot_bytes + (int64)f->held_bytes > (int64)work_mem * 1024L) {
            f->limit_fixed = true;
            f->limit = Max(f->at_least, f->count);
        }
    }
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
    f->slot_bytes = sizeof(int64) + sizeof(double) + (size_t)Max(state->row_stride, 1) * (sizeof(Datum) + sizeof(bool));
    for (int i = 0; i < state->plan->num_inputs; i++) f->slot_bytes += feature_bytes(&state->inputs[i]) + sizeof(bool);
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
    }
    if (f->handed >= f->count) return false;
    const int rows = (int)Min((int64)state->capacity, f->count - f->handed);
    MemoryContextReset(state->batch_context);
    reserve_rows(state, rows);
    const int stride = state->row_stride;
    memcpy(state->values, f->values + f->handed * stride, sizeof(Datum) * rows * stride);
    memcpy(state->nulls, f->nulls + f->handed * stride, sizeof(bool) * rows * stride);
    for (int i = 0; i < state->plan->num_inputs; i++) {
        InputState* input = &state->inputs[i];
        const size_t bytes = feature_bytes(input);
        void* to = input->x64 != NULL ? (void*)input->x64 : (void*)input->x32;
        memcpy(to, (char*)f->x[i] + f->handed * bytes, bytes * rows);
        memcpy(input->row_null, f->row_null[i] + f->handed, sizeof(bool) * rows);
        INSTR_TIME_SET_ZERO(state->fill[i]);  // read while the filter ran
    }
    f->handed += rows;
    state->count = rows;
    state->position = 0;
    return true;
}

void top_k_filter_rescan(PredictBatchState* state) {
    TopKFilter* f = state->filter;
    if (f == NULL || !f->active) return;
    MemoryContextReset(f->context);
    f->heap = NULL;
    f->key = NULL;
    f->values = NULL;
    f->nulls = NULL;
    for (int i = 0; i < state->plan->num_inputs; i++) {
        f->x[i] = NULL;
        f->row_null[i] = NULL;
    }
    f->count = f->allocated = f->seen = f->handed = 0;
    f->held_bytes = 0;
    f->limit = f->at_least;
    f->limit_fixed = f->filtered = false;
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
