#include "exec/per_row_models.hpp"

#include "exec/cascade.hpp"

#include "features.hpp"
#include "guard.hpp"
#include "pg_predict/runtime/api.hpp"
#include "settings.hpp"
#include "catalog/usage_stats.hpp"

extern "C" {
#include "common/hashfn.h"
#include "executor/executor.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
}

// No C++ object with a destructor lives in these frames: executor calls may longjmp.

namespace pg_predict::pg {

namespace {

struct PerRowCounters {
    int64 models;
    int64 runs;
    int64 hits;
    int64 loads;
    int64 released;
    int64 shared;            // featurizer runs shared by several models' groups
};

constexpr int first_group_rows = 16;  // a group's buffers grow ×2 from here
constexpr uint32 max_keys = 1 << 16;  // column values whose model is kept, at most

// One model name the query has met; while bound, its model; and this batch's group of rows.
struct RowModel {
    char* name;
    size_t length;           // compared before the bytes: no strlen per row
    uint32 hash;
    BoundModel* model;       // NULL while released (or before the first bind)
    MemoryContext context;   // the bound model and its reader: reset on release
    RowReader* reader;       // for the last row type seen
    bool reads_float64;
    const void* featurizer;  // the program's shared featurizer (runtime::program_featurizer)
    CascadeModel* cascade;   // the bound version's cascade (pg_predict.cascades), or NULL
    size_t bytes;            // what the program cache counts for its program
    bool scored;             // counted in PerRowCounters::models
    bool fresh;              // bound since its last group: its next group counts a hit or a load
    // The usage statistics of the bound version, added to model_stats when it is released or
    // the node ends: once per model, not per group (thousands of models, each a few rows a batch).
    UsageCounts usage;
    // This batch's group (in the batch's memory): the rows that name the model and their
    // arguments, scored when the batch is (score_groups).
    int count;
    int capacity;
    int* rows;               // batch row of each group row
    // Where the model was bound when the batch named it first (the usual case after the first
    // batch), each row's features are read as the row is read, while it is in the cache:
    // `features` (float64 where the model reads float64). Otherwise each row's argument is
    // copied, and its features are read when the group is scored.
    bool read_early;
    void* features;
    Datum* arguments;        // its row or array, copied
    bool listed;             // in the batch's list of groups (PerRowModels::pending)
    bool done;               // its group of this batch is scored
    RowModel* next_pending;
    // Bound models, most recently used first.
    RowModel* newer;
    RowModel* older;
};

// The model a value of the name's column names (NULL: the name is NULL).
struct KeyEntry {
    Datum key;
    RowModel* model;
    bool used;
};

}  // namespace

struct PerRowModels {
    ExprState* name;
    ExprState* argument;
    FeatureSource source;
    ModelOutput output;         // the program the calls run
    int num_outputs;            // the node's outputs that read this input
    int* outputs;               // ... their indices in the plan
    PredictCallKind* kinds;     // ... and their calls
    MemoryContext context;      // the query's: the table and the names
    // The names met, by hash (open addressing, a power of two, at most half full).
    RowModel** table;
    uint32 table_size;
    uint32 count;
    RowModel* last;             // the previous row's: runs of one name skip the hash
    // A name computed by immutable functions from one by-value column ('store_' || store_id):
    // the model of each of the column's values is kept, so the name is evaluated once per value.
    AttrNumber key_column;      // the column (child attno), 0: the name is evaluated per row
    KeyEntry* keys;             // open addressing, a power of two, at most half full
    uint32 keys_size;
    uint32 keys_count;
    bool null_key_known;        // the column's NULL: its model is null_key_model
    RowModel* null_key_model;
    RowModel* pending;          // the models that had a group in this batch
    int group_limit;            // rows per program run, at most: pg_predict.batch_size
    RowModel* newest;           // bound models, least recently used at the tail
    RowModel* oldest;
    size_t held_bytes;
    // Each output's value per batch row: num_outputs × allocated_rows.
    Datum* values;
    bool* nulls;
    int allocated_rows;
    RowModel* current;          // whose features are read or whose program runs
    // One group's features and outputs at a time (group_limit rows at most).
    float* x32;                 // (a double* where the model reads float64)
    float* out;
    size_t x_bytes;
    size_t out_bytes;
    PerRowCounters counters;
};

namespace {

RowModel* find_model(const PerRowModels* p, const char* name, size_t length, uint32 hash) {
    if (p->table_size == 0) return NULL;
    for (uint32 i = hash & (p->table_size - 1); p->table[i] != NULL; i = (i + 1) & (p->table_size - 1)) {
        RowModel* m = p->table[i];
        if (m->hash == hash && m->length == length && memcmp(m->name, name, length) == 0) return m;
    }
    return NULL;
}

void insert_into_table(PerRowModels* p, RowModel* m) {
    uint32 i = m->hash & (p->table_size - 1);
    while (p->table[i] != NULL) i = (i + 1) & (p->table_size - 1);
    p->table[i] = m;
}

void add_model(PerRowModels* p, RowModel* m) {
    if (2 * (p->count + 1) > p->table_size) {
        RowModel** old = p->table;
        uint32 old_size = p->table_size;
        p->table_size = old_size == 0 ? 64 : 2 * old_size;
        p->table = (RowModel**)MemoryContextAllocZero(p->context, sizeof(RowModel*) * p->table_size);
        for (uint32 i = 0; i < old_size; i++)
            if (old[i] != NULL) insert_into_table(p, old[i]);
        if (old != NULL) pfree(old);
    }
    insert_into_table(p, m);
    p->count++;
}

void unlink_bound(PerRowModels* p, RowModel* m) {
    if (m->newer != NULL) m->newer->older = m->older; else p->newest = m->older;
    if (m->older != NULL) m->older->newer = m->newer; else p->oldest = m->newer;
    m->newer = m->older = NULL;
}

void link_newest(PerRowModels* p, RowModel* m) {
    m->newer = NULL;
    m->older = p->newest;
    if (p->newest != NULL) p->newest->newer = m; else p->oldest = m;
    p->newest = m;
}

void flush_usage(RowModel* m) {
    if (m->model == NULL || (m->usage.calls == 0 && m->usage.errors == 0)) return;
    usage_add(m->model->entry, m->usage);
    m->usage = UsageCounts{};
}

// A statement that fails mid-way ends no node, but the rows its models scored before the error
// count (issue 46): when a bound model's memory goes (released, or the query's memory deleted
// by an abort, which runs before the transaction's callbacks) its usage goes to model_stats
// first. After a normal end or a release it holds none.
void flush_usage_callback(void* arg) { flush_usage((RowModel*)arg); }

void flush_usage_when_freed(RowModel* m) {
    MemoryContextCallback* callback = (MemoryContextCallback*)MemoryContextAlloc(m->context, sizeof(MemoryContextCallback));
    callback->func = flush_usage_callback;
    callback->arg = m;
    MemoryContextRegisterResetCallback(m->context, callback);
}

void release_model(PerRowModels* p, RowModel* m) {
    flush_usage(m);
    unlink_bound(p, m);
    p->held_bytes -= m->bytes;
    m->model = NULL;
    m->reader = NULL;
    m->featurizer = NULL;
    m->cascade = NULL;
    MemoryContextReset(m->context);  // releases the program
    p->counters.released++;
}

// Binds the version the statement's snapshot deploys, with the checks the per-row function
// makes, after releasing the least recently used models beyond pg_predict.cache_size (their
// groups of this batch are scored already: see score_groups).
void bind_row_model(PerRowModels* p, RowModel* m) {
    CHECK_FOR_INTERRUPTS();
    MemoryContext old = MemoryContextSwitchTo(m->context);
    BoundModel* model = bind_model_entry(m->name, m->context, p->output);
    for (int o = 0; o < p->num_outputs; o++) check_call(model->entry, p->kinds[o]);
    load_bound_program(model);
    MemoryContextSwitchTo(old);
    m->cascade = cascade_load(model, p->kinds, p->num_outputs, m->context);
    m->model = model;  // only once bound: an error leaves it to bind again
    flush_usage_when_freed(m);
    m->fresh = true;
    runtime::Program* program = model->program;
    m->reads_float64 = guarded([&] { return runtime::program_reads_float64(program); });
    m->featurizer = m->reads_float64 ? runtime::program_featurizer(program) : NULL;  // (it always does)
    m->bytes = runtime::program_bytes(program);
    const size_t limit = (size_t)cache_size_mb << 20;
    while (p->oldest != NULL && p->held_bytes + m->bytes > limit) release_model(p, p->oldest);
    link_newest(p, m);
    p->held_bytes += m->bytes;
}

// The entry of the model `name` names (not bound here).
RowModel* named_model(PerRowModels* p, const char* name, size_t length) {
    RowModel* m = p->last;
    if (m != NULL && m->length == length && memcmp(m->name, name, length) == 0) return m;
    const uint32 hash = hash_bytes((const unsigned char*)name, (int)length);
    m = find_model(p, name, length, hash);
    if (m == NULL) {
        m = (RowModel*)MemoryContextAllocZero(p->context, sizeof(RowModel));
        m->name = (char*)MemoryContextAlloc(p->context, length + 1);
        memcpy(m->name, name, length);
        m->name[length] = '\0';
        m->length = length;
        m->hash = hash;
        m->context = AllocSetContextCreate(p->context, "pg_predict per-row model", ALLOCSET_SMALL_SIZES);
        add_model(p, m);
    }
    p->last = m;
    return m;
}

// Room in the scratch buffers for x_bytes of features and out_bytes of outputs.
void reserve_scratch(PerRowModels* p, size_t x_bytes, size_t out_bytes) {
    if (x_bytes > p->x_bytes) {
        if (p->x32 != NULL) pfree(p->x32);
        p->x32 = NULL;
        p->x32 = (float*)MemoryContextAllocHuge(p->context, x_bytes);
        p->x_bytes = x_bytes;
    }
    if (out_bytes > p->out_bytes) {
        if (p->out != NULL) pfree(p->out);
        p->out = NULL;
        p->out = (float*)MemoryContextAllocHuge(p->context, out_bytes);
        p->out_bytes = out_bytes;
    }
}

size_t feature_bytes(const RowModel* m, int rows) {
    return (size_t)rows * Max(m->model->entry->num_features, 1) * (m->reads_float64 ? sizeof(double) : sizeof(float));
}

size_t output_bytes(const RowModel* m, int rows) {
    return (size_t)rows * Max(m->model->output_width, 1) * sizeof(float);
}

template <typename Feature>
void read_features(PerRowModels* p, RowModel* m, Datum argument, Feature* x);

// Reads the features of `rows` rows of a model's group from `first` on into x (float64 where
// the model reads float64, else float32).
void read_group_features(PredictBatchState* state, PerRowModels* p, RowModel* m, int first, int rows, void* x) {
    const int64 cols = m->model->entry->num_features;
    MemoryContext old = MemoryContextSwitchTo(state->batch_context);  // detoasted arrays
    const bool text = m->cascade != NULL && cascade_reads_text(m->cascade);
    if (text) cascade_read_rows(m->cascade, m->model, rows);
    for (int k = 0; k < rows; k++) {
        if (text) cascade_reading_row(m->cascade, m->model, k);
        if (m->reads_float64)
            read_features(p, m, m->arguments[first + k], (double*)x + k * cols);
        else
            read_features(p, m, m->arguments[first + k], (float*)x + k * cols);
    }
    if (text) cascade_read_done(m->cascade);
    MemoryContextSwitchTo(old);
}

// The features of a read_early group's row `first` on.
void* group_features(const RowModel* m, int first) {
    return (char*)m->features + feature_bytes(m, first);
}

// The model's usage and the node's counters for one run of `rows` rows.
void count_run(PerRowModels* p, RowModel* m, int rows, double ms) {
    m->usage.calls++;
    m->usage.rows += rows;
    m->usage.batches++;
    m->usage.model_ms += ms;
    p->counters.runs++;
}

// Each row's results from its outputs in `out` (rows × the model's width), into the batch's
// memory, which lives until the next batch: label texts are copied, since the model may be
// released before.
void keep_results(PredictBatchState* state, PerRowModels* p, RowModel* m, int first, int rows, const float* out) {
    const int width = m->model->output_width;
    MemoryContext old = MemoryContextSwitchTo(state->batch_context);
    for (int k = 0; k < rows; k++) {
        const int row = m->rows[first + k];
        const float* scores = out + (size_t)k * width;
        for (int o = 0; o < p->num_outputs; o++) {
            const size_t at = (size_t)o * p->allocated_rows + row;
            Datum value = call_result(m->model, p->kinds[o], scores, &p->nulls[at]);
            if (p->kinds[o] == PredictCallKind::PredictLabel && !p->nulls[at]) value = datumCopy(value, false, -1);
            p->values[at] = value;
        }
    }
    MemoryContextSwitchTo(old);
}

// Scores `rows` rows of a model's group from `first` on: features, program run, results.
void score_rows(PredictBatchState* state, PerRowModels* p, RowModel* m, int first, int rows) {
    reserve_scratch(p, m->read_early ? 0 : feature_bytes(m, rows), output_bytes(m, rows));
    const int64 cols = m->model->entry->num_features;
    void* x = m->read_early ? group_features(m, first) : p->x32;
    if (!m->read_early) read_group_features(state, p, m, first, rows, x);
    float* x32 = m->reads_float64 ? NULL : (float*)x;
    double* x64 = m->reads_float64 ? (double*)x : NULL;
    runtime::Program* program = m->model->program;
    float* out = p->out;
    instr_time start, elapsed;
    INSTR_TIME_SET_CURRENT(start);
    if (m->cascade != NULL) {
        const int64 decided = x64 != NULL ? cascade_run(m->cascade, m->model, program, x64, rows, out)
                                          : cascade_run(m->cascade, m->model, program, x32, rows, out);
        state->rows_decided += decided;
        state->rows_full_model += rows - decided;
    } else {
        guarded([&] {
            if (x64 != NULL)
                runtime::run_program(program, x64, rows, cols, out);
            else
                runtime::run_rows(program, x32, rows, cols, out);  // a few rows: no TorchScript call
        });
    }
    INSTR_TIME_SET_CURRENT(elapsed);
    INSTR_TIME_SUBTRACT(elapsed, start);
    INSTR_TIME_ADD(state->model_time, elapsed);
    count_run(p, m, rows, INSTR_TIME_GET_MILLISEC(elapsed));
    keep_results(state, p, m, first, rows, out);
}

// Before a model's group is scored: bound where it is not (a name that does not exist errors
// here, also when its rows' arguments were all NULL), counted, and made the most recently used.
void start_group(PerRowModels* p, RowModel* m) {
    p->current = m;
    if (m->model == NULL) bind_row_model(p, m);
    // A hit: the model was bound, or this backend's cache had its program; a load: read from
    // the catalog for this group.
    if (m->fresh && m->model->loaded_from_catalog)
        p->counters.loads++;
    else
        p->counters.hits++;
    m->fresh = false;
    unlink_bound(p, m);
    link_newest(p, m);
    if (m->count > 0 && !m->scored) {
        m->scored = true;
        p->counters.models++;
    }
}

void finish_group(PerRowModels* p, RowModel* m) {
    m->count = 0;
    m->done = true;
    p->current = NULL;
}

// A model's group, in runs of at most batch_size rows.
void score_group(PredictBatchState* state, PerRowModels* p, RowModel* m) {
    start_group(p, m);
    for (int first = 0; first < m->count; first += p->group_limit)
        score_rows(state, p, m, first, Min(p->group_limit, m->count - first));
    finish_group(p, m);
}

// The groups of `count` bound models that share one featurizer and read as many columns, of
// batch_size rows in all at most: their features one after the other, the featurizer run once
// over all of them, then each model's rest over its rows (runtime::run_sharing_featurizer).
void score_sharing(PredictBatchState* state, PerRowModels* p, RowModel** models, int count) {
    int total = 0;
    size_t out_bytes = 0;
    for (int i = 0; i < count; i++) {
        start_group(p, models[i]);
        total += models[i]->count;
        out_bytes += output_bytes(models[i], models[i]->count);
    }
    reserve_scratch(p, feature_bytes(models[0], total), out_bytes);
    const int64 cols = models[0]->model->entry->num_features;
    runtime::Program** programs = (runtime::Program**)palloc(sizeof(runtime::Program*) * count);
    int64* rows = (int64*)palloc(sizeof(int64) * count);
    int at = 0;
    for (int i = 0; i < count; i++) {
        p->current = models[i];
        double* x = (double*)p->x32 + (size_t)at * cols;
        if (models[i]->read_early)
            memcpy(x, models[i]->features, feature_bytes(models[i], models[i]->count));
        else
            read_group_features(state, p, models[i], 0, models[i]->count, x);
        programs[i] = models[i]->model->program;
        rows[i] = models[i]->count;
        at += models[i]->count;
    }
    p->current = models[0];
    instr_time start, elapsed;
    INSTR_TIME_SET_CURRENT(start);
    guarded([&] { runtime::run_sharing_featurizer(programs, rows, count, (double*)p->x32, cols, p->out); });
    INSTR_TIME_SET_CURRENT(elapsed);
    INSTR_TIME_SUBTRACT(elapsed, start);
    INSTR_TIME_ADD(state->model_time, elapsed);
    if (count >= 2) p->counters.shared++;
    const float* out = p->out;
    for (int i = 0; i < count; i++) {
        RowModel* m = models[i];
        count_run(p, m, m->count, INSTR_TIME_GET_MILLISEC(elapsed) * m->count / total);
        keep_results(state, p, m, 0, m->count, out);
        out += (size_t)m->count * m->model->output_width;
        finish_group(p, m);
    }
    pfree(programs);
    pfree(rows);
}

// Sharing featurizers first, then by reading width: runs of models that can share a run.
int compare_sharing(const void* a, const void* b) {
    const RowModel* x = *(RowModel* const*)a;
    const RowModel* y = *(RowModel* const*)b;
    if (x->featurizer != y->featurizer) return (uintptr_t)x->featurizer < (uintptr_t)y->featurizer ? -1 : 1;
    const int64 fx = x->model->entry->num_features, fy = y->model->entry->num_features;
    return fx < fy ? -1 : fx > fy ? 1 : 0;
}

// The groups of every bound model of the batch not yet scored. Models sharing a featurizer
// (PRETZEL) are scored together, in sets of at most batch_size rows; the others one by one.
void score_bound(PredictBatchState* state, PerRowModels* p) {
    int count = 0;
    for (RowModel* m = p->pending; m != NULL; m = m->next_pending)
        if (m->model != NULL && !m->done) count++;
    if (count == 0) return;
    RowModel** ready = (RowModel**)palloc(sizeof(RowModel*) * count);
    int n = 0;
    for (RowModel* m = p->pending; m != NULL; m = m->next_pending)
        if (m->model != NULL && !m->done) ready[n++] = m;
    qsort(ready, n, sizeof(RowModel*), compare_sharing);
    for (int i = 0; i < n;) {
        RowModel* m = ready[i];
        int j = i + 1, rows = m->count;
        if (share_featurizers && m->featurizer != NULL && m->count > 0)
            while (j < n && compare_sharing(&ready[i], &ready[j]) == 0 && ready[j]->count > 0 &&
                   rows + ready[j]->count <= p->group_limit)
                rows += ready[j++]->count;
        // A featurizer's run for one model's group too: its program's rest may then skip the
        // TorchScript interpreter (runtime::run_sharing_featurizer).
        if (share_featurizers && m->featurizer != NULL && m->count > 0 && m->count <= p->group_limit)
            score_sharing(state, p, ready + i, j - i);
        else if (!m->done)  // (a model released by an earlier bind is bound again here)
            score_group(state, p, m);
        i = Max(j, i + 1);
    }
    pfree(ready);
}

// Empties the batch's list of groups; their arrays go with the batch's memory.
void clear_groups(PerRowModels* p) {
    while (p->pending != NULL) {
        RowModel* m = p->pending;
        p->pending = m->next_pending;
        m->next_pending = NULL;
        m->listed = false;
        m->done = false;
        m->count = 0;
        m->capacity = 0;
        m->rows = NULL;
        m->arguments = NULL;
        m->features = NULL;
        m->read_early = false;
    }
}

// Every group of the batch: the bound models' first, so that binding the others releases only
// models whose groups are done. The others are bound while they fit in pg_predict.cache_size
// beside the ones bound before them, then scored together (so that models sharing a featurizer
// share its runs), and so on: each model is bound at most once a batch.
void score_groups(PredictBatchState* state, PerRowModels* p) {
    score_bound(state, p);
    const size_t limit = (size_t)cache_size_mb << 20;
    size_t last_bytes = 0;
    bool waiting = false;  // bound and not scored yet
    for (RowModel* m = p->pending; m != NULL; m = m->next_pending) {
        if (m->done || m->model != NULL) continue;
        if (waiting && p->held_bytes + last_bytes > limit) {
            score_bound(state, p);
            waiting = false;
        }
        p->current = m;
        bind_row_model(p, m);
        p->current = NULL;
        last_bytes = m->bytes;
        waiting = true;
    }
    score_bound(state, p);
    // A bind that needed more room than the one before it may have released a waiting model
    // (its estimate is the previous model's size): its group binds it again here.
    for (RowModel* m = p->pending; m != NULL; m = m->next_pending)
        if (!m->done) score_group(state, p, m);
    clear_groups(p);
}

uint32 key_hash(Datum key) { return (uint32)(((uint64)key * UINT64CONST(0x9E3779B97F4A7C15)) >> 32); }

KeyEntry* find_key(const PerRowModels* p, Datum key) {
    if (p->keys_size == 0) return NULL;
    for (uint32 i = key_hash(key) & (p->keys_size - 1); p->keys[i].used; i = (i + 1) & (p->keys_size - 1))
        if (p->keys[i].key == key) return &p->keys[i];
    return NULL;
}

void insert_key(KeyEntry* keys, uint32 size, Datum key, RowModel* m) {
    uint32 i = key_hash(key) & (size - 1);
    while (keys[i].used) i = (i + 1) & (size - 1);
    keys[i] = KeyEntry{key, m, true};
}

void add_key(PerRowModels* p, Datum key, RowModel* m) {
    if (p->keys_count >= max_keys) return;  // further values are evaluated per row
    if (2 * (p->keys_count + 1) > p->keys_size) {
        const uint32 size = p->keys_size == 0 ? 256 : 2 * p->keys_size;
        KeyEntry* keys = (KeyEntry*)MemoryContextAllocZero(p->context, sizeof(KeyEntry) * size);
        for (uint32 i = 0; i < p->keys_size; i++)
            if (p->keys[i].used) insert_key(keys, size, p->keys[i].key, p->keys[i].model);
        if (p->keys != NULL) pfree(p->keys);
        p->keys = keys;
        p->keys_size = size;
    }
    insert_key(p->keys, p->keys_size, key, m);
    p->keys_count++;
}

// The entry of the model the current row's name names; NULL when the name is NULL.
RowModel* evaluate_name(PerRowModels* p, ExprContext* econtext) {
    bool isnull;
    Datum name = ExecEvalExpr(p->name, econtext, &isnull);
    if (isnull) return NULL;
    text* name_text = DatumGetTextPP(name);
    return named_model(p, VARDATA_ANY(name_text), VARSIZE_ANY_EXHDR(name_text));
}

// The entry of the model the current row names (NULL: a NULL name): by its key column's value
// when the name has one, else by evaluating the name.
RowModel* row_model(PerRowModels* p, ExprContext* econtext) {
    if (p->key_column == 0) return evaluate_name(p, econtext);
    const TupleTableSlot* slot = econtext->ecxt_outertuple;
    const bool key_null = slot->tts_isnull[p->key_column - 1];
    const Datum key = slot->tts_values[p->key_column - 1];
    if (key_null && p->null_key_known) return p->null_key_model;
    if (!key_null) {
        if (const KeyEntry* entry = find_key(p, key)) return entry->model;
    }
    RowModel* m = evaluate_name(p, econtext);
    if (key_null) {
        p->null_key_known = true;
        p->null_key_model = m;
    } else {
        add_key(p, key, m);
    }
    return m;
}

// The one column a name expression reads, when it reads exactly one and no parameter (a
// parameter may change between rescans).
struct NameColumn {
    Var* var;
    bool other;  // another column, or a parameter
};

bool find_name_column(Node* node, NameColumn* found) {
    if (node == NULL) return false;
    if (IsA(node, Param)) found->other = true;
    if (IsA(node, Var)) {
        Var* var = (Var*)node;
        if (found->var == NULL)
            found->var = var;
        else if (found->var->varno != var->varno || found->var->varattno != var->varattno)
            found->other = true;
        return false;
    }
    return expression_tree_walker(node, (bool (*)())find_name_column, (void*)found);
}

template <typename Feature>
void read_features(PerRowModels* p, RowModel* m, Datum argument, Feature* x) {
    if (p->source == FeatureSource::Row) {
        HeapTupleHeader tuple = DatumGetHeapTupleHeader(argument);
        Oid type_id = HeapTupleHeaderGetTypeId(tuple);
        int32 typmod = HeapTupleHeaderGetTypMod(tuple);
        if (m->reader == NULL || m->reader->type_id != type_id || m->reader->typmod != typmod)
            m->reader = make_row_reader(m->model, type_id, typmod, m->context);
        read_row(m->model, m->reader, tuple, x);
    } else {
        read_array(m->model, DatumGetArrayTypeP(argument), x);
    }
}

}  // namespace

PerRowModels* per_row_models_init(PredictBatchState* state, int input, EState* estate) {
    const BatchInput* plan = &state->plan->inputs[input];
    PerRowModels* p = (PerRowModels*)palloc0(sizeof(PerRowModels));
    PlanState* parent = &state->css.ss.ps;
    p->argument = ExecInitExpr((Expr*)linitial(plan->exprs), parent);
    p->name = ExecInitExpr((Expr*)lsecond(plan->exprs), parent);
    p->source = plan->source;
    p->output = plan->output;
    p->context = estate->es_query_cxt;
    p->group_limit = Max(batch_size, 1);
    Node* name = (Node*)lsecond(plan->exprs);
    NameColumn column = {};
    find_name_column(name, &column);
    if (column.var != NULL && !column.other && column.var->varno == OUTER_VAR && column.var->varlevelsup == 0 &&
        column.var->varattno > 0 && get_typbyval(column.var->vartype) && !contain_mutable_functions(name)) {
        p->key_column = column.var->varattno;
        state->last_needed = Max(state->last_needed, p->key_column);  // deformed by keep_row
    }
    p->outputs = (int*)palloc0(sizeof(int) * Max(state->plan->num_outputs, 1));
    p->kinds = (PredictCallKind*)palloc0(sizeof(PredictCallKind) * Max(state->plan->num_outputs, 1));
    for (int j = 0; j < state->plan->num_outputs; j++) {
        if (state->plan->outputs[j].input != input) continue;
        p->outputs[p->num_outputs] = j;
        p->kinds[p->num_outputs++] = state->plan->outputs[j].kind;
    }
    return p;
}

void per_row_models_reserve(PredictBatchState* state, InputState* input, int rows) {
    PerRowModels* p = input->per_row;
    if (p->values != NULL) pfree(p->values);
    if (p->nulls != NULL) pfree(p->nulls);
    p->values = NULL;
    p->nulls = NULL;
    const size_t cells = (size_t)Max(p->num_outputs, 1) * rows;
    p->values = (Datum*)MemoryContextAllocHuge(state->buffer_context, sizeof(Datum) * cells);
    p->nulls = (bool*)MemoryContextAllocHuge(state->buffer_context, sizeof(bool) * cells);
    p->allocated_rows = rows;
}

void per_row_models_begin_batch(InputState* input) {
    PerRowModels* p = input->per_row;
    clear_groups(p);  // also the groups an error left behind
    p->current = NULL;
}

namespace {

// Room for one more row in the model's group (in the batch's memory).
void grow_group(PredictBatchState* state, RowModel* m) {
    if (m->count < m->capacity) return;
    const int capacity = m->capacity == 0 ? first_group_rows : 2 * m->capacity;
    MemoryContext old = MemoryContextSwitchTo(state->batch_context);
    m->rows = m->rows == NULL ? (int*)palloc(sizeof(int) * capacity) : (int*)repalloc(m->rows, sizeof(int) * capacity);
    if (m->read_early) {
        const size_t bytes = feature_bytes(m, capacity);
        m->features = m->features == NULL ? MemoryContextAllocHuge(CurrentMemoryContext, bytes)
                                          : repalloc_huge(m->features, bytes);
    } else {
        m->arguments = m->arguments == NULL ? (Datum*)palloc(sizeof(Datum) * capacity)
                                            : (Datum*)repalloc(m->arguments, sizeof(Datum) * capacity);
    }
    MemoryContextSwitchTo(old);
    m->capacity = capacity;
}

}  // namespace

void per_row_models_read(PredictBatchState* state, InputState* input, int row) {
    PerRowModels* p = input->per_row;
    ExprContext* econtext = state->css.ss.ps.ps_ExprContext;
    input->row_null[row] = true;  // until its group holds it
    // A NULL name (a tenant column that is NULL) scores nothing: the results are NULL.
    RowModel* m = row_model(p, econtext);
    if (m == NULL) return;
    if (!m->listed) {
        m->listed = true;
        m->next_pending = p->pending;
        p->pending = m;
    }
    bool isnull;
    Datum argument = ExecEvalExpr(p->argument, econtext, &isnull);
    if (isnull) return;
    // (A cascade's text inputs are read with the rows when the group is scored: its side rows.)
    if (m->count == 0 && m->capacity == 0)  // the batch's first row of it
        m->read_early = m->model != NULL && (m->cascade == NULL || !cascade_reads_text(m->cascade));
    grow_group(state, m);
    MemoryContext old = MemoryContextSwitchTo(state->batch_context);
    if (m->read_early) {
        // The model stays bound until the batch is scored (binding, which releases models,
        // happens only then).
        p->current = m;
        if (m->reads_float64)
            read_features(p, m, argument, (double*)group_features(m, m->count));
        else
            read_features(p, m, argument, (float*)group_features(m, m->count));
        p->current = NULL;
    } else {
        // Kept until the batch is scored: the row's features are read then, by its model.
        m->arguments[m->count] = datumCopy(argument, false, -1);
    }
    MemoryContextSwitchTo(old);
    m->rows[m->count++] = row;
    input->row_null[row] = false;
}

void per_row_models_end(InputState* input) {
    if (input->per_row == NULL) return;
    for (RowModel* m = input->per_row->newest; m != NULL; m = m->older) flush_usage(m);
}

void per_row_models_score(PredictBatchState* state, int input_index) {
    score_groups(state, state->inputs[input_index].per_row);
}

Datum per_row_models_result(const InputState* input, int output, int row, bool* isnull) {
    const PerRowModels* p = input->per_row;
    int o = 0;
    while (o < p->num_outputs && p->outputs[o] != output) o++;
    const size_t at = (size_t)o * p->allocated_rows + row;
    *isnull = p->nulls[at];
    return p->values[at];
}

const CatalogEntry* per_row_models_current(const InputState* input) {
    const RowModel* m = input->per_row->current;
    return m != NULL && m->model != NULL ? m->model->entry : NULL;
}

void per_row_models_count(const InputState* input, NodeCounters* sum) {
    const PerRowCounters& c = input->per_row->counters;
    sum->models_scored += c.models;
    sum->model_runs += c.runs;
    sum->model_hits += c.hits;
    sum->model_loads += c.loads;
    sum->models_released += c.released;
    sum->shared_featurizer_runs += c.shared;
}

}  // namespace pg_predict::pg
