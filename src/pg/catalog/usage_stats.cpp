#include "catalog/usage_stats.hpp"

#include "catalog/catalog.hpp"
#include "shmem.hpp"
#include "binding/loaded_programs.hpp"
#include "exec/scoring_marks.hpp"
#include "settings.hpp"

extern "C" {
#include "access/xact.h"
#include "executor/executor.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"
}

namespace pg_predict::pg {

namespace {

constexpr const char* kTrancheName = "pg_predict usage statistics";

// Zeroed before use: the hash reads its padding bytes too (HASH_BLOBS).
struct EntryKey {
    int64 model_id;
    Oid database;
    int32 padding;
};

struct Entry {
    EntryKey key;  // first: the hash's key
    char name[NAMEDATALEN];  // the model's name and version number when first counted
    int32 version;
    slock_t mutex;  // guards the counters below
    int64 calls;
    int64 rows;
    int64 batches;
    int64 errors;
    double model_ms;
    double fill_ms;
    TimestampTz last_used;
    TimestampTz since;  // the entry was created (or its model's counters reset)
};

// The table's header. `lock` guards the hash (shared: find and update an entry; exclusive:
// add, evict, remove); the header's own counters are changed under it exclusively.
struct Table {
    LWLock* lock;  // NULL when the table is this backend's own (no preloading)
    int64 evicted;
    TimestampTz reset_at;
};

Table* table = NULL;
HTAB* entries = NULL;
bool shared = false;  // the table is in shared memory

ExecutorEnd_hook_type previous_executor_end = NULL;

Size table_size() { return add_size(MAXALIGN(sizeof(Table)), hash_estimate_size(stats_max, sizeof(Entry))); }

// Also after a crash restart, which reinitializes shared memory: the counters start again.
void attach_table() {
    bool found;
    table = (Table*)ShmemInitStruct(kTrancheName, sizeof(Table), &found);
    if (!found) {
        table->lock = &(GetNamedLWLockTranche(kTrancheName))->lock;
        table->evicted = 0;
        table->reset_at = GetCurrentTimestamp();
    }
    HASHCTL info;
    info.keysize = sizeof(EntryKey);
    info.entrysize = sizeof(Entry);
    entries = ShmemInitHash("pg_predict usage statistics entries", stats_max, stats_max, &info,
                            HASH_ELEM | HASH_BLOBS);
    shared = true;
}

// Without preloading: this backend's own table, made on first use.
bool ensure_table() {
    if (table != NULL) return true;
    if (process_shared_preload_libraries_in_progress) return false;
    table = (Table*)MemoryContextAllocZero(TopMemoryContext, sizeof(Table));
    table->reset_at = GetCurrentTimestamp();
    HASHCTL info;
    info.keysize = sizeof(EntryKey);
    info.entrysize = sizeof(Entry);
    info.hcxt = TopMemoryContext;
    entries = hash_create("pg_predict usage statistics entries", 64, &info, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
    return true;
}

void lock_table(LWLockMode mode) {
    if (table->lock != NULL) LWLockAcquire(table->lock, mode);
}

void unlock_table() {
    if (table->lock != NULL) LWLockRelease(table->lock);
}

EntryKey key_of(int64 model_id) {
    EntryKey key;
    memset(&key, 0, sizeof(key));
    key.model_id = model_id;
    key.database = MyDatabaseId;
    return key;
}

// Makes room when the table is full: the least recently used entry goes (exclusive lock held).
void evict_one() {
    HASH_SEQ_STATUS scan;
    hash_seq_init(&scan, entries);
    Entry* oldest = NULL;
    for (Entry* e; (e = (Entry*)hash_seq_search(&scan)) != NULL;)
        if (oldest == NULL || e->last_used < oldest->last_used) oldest = e;
    if (oldest == NULL) return;
    hash_search(entries, &oldest->key, HASH_REMOVE, NULL);
    table->evicted++;
}

// The entry of `key`, created when missing; the table is locked (shared or exclusive) on return,
// or NULL (nothing locked) when there is no room. Never errors: runs at transaction abort too.
Entry* find_entry(const EntryKey& key, const char* name, int32 version) {
    lock_table(LW_SHARED);
    Entry* e = (Entry*)hash_search(entries, &key, HASH_FIND, NULL);
    if (e != NULL) return e;
    unlock_table();
    lock_table(LW_EXCLUSIVE);
    if (hash_get_num_entries(entries) >= stats_max && hash_search(entries, &key, HASH_FIND, NULL) == NULL) evict_one();
    bool found;
    e = (Entry*)hash_search(entries, &key, shared ? HASH_ENTER_NULL : HASH_ENTER, &found);
    if (e == NULL) {
        unlock_table();
        return NULL;
    }
    if (!found) {
        strlcpy(e->name, name, sizeof(e->name));
        e->version = version;
        SpinLockInit(&e->mutex);
        e->calls = e->rows = e->batches = e->errors = 0;
        e->model_ms = e->fill_ms = 0;
        e->since = e->last_used = GetCurrentTimestamp();
    }
    return e;
}

void add_to_entry(int64 model_id, const char* name, int32 version, const UsageCounts& counts) {
    if (!ensure_table()) return;
    Entry* e = find_entry(key_of(model_id), name, version);
    if (e == NULL) return;
    TimestampTz now = GetCurrentTimestamp();
    SpinLockAcquire(&e->mutex);
    e->calls += counts.calls;
    e->rows += counts.rows;
    e->batches += counts.batches;
    e->errors += counts.errors;
    e->model_ms += counts.model_ms;
    e->fill_ms += counts.fill_ms;
    e->last_used = now;
    SpinLockRelease(&e->mutex);
    unlock_table();
}

// ---- the per-row path's records -------------------------------------------------------------

constexpr int kPendingRecords = 32;
PendingUsage pending[kPendingRecords];

bool holds_counts(const PendingUsage* p) { return p->counts.calls != 0 || p->counts.errors != 0; }

// An abort with a per-row call still marked ended that call with an error (scoring_marks.hpp):
// counted before the flush.
void at_transaction_end(XactEvent event, void*) {
    switch (event) {
        case XACT_EVENT_COMMIT: case XACT_EVENT_PARALLEL_COMMIT:
            forget_scoring_marks();
            flush_pending_usage();
            break;
        case XACT_EVENT_PREPARE:
            forget_scoring_marks();
            break;
        case XACT_EVENT_ABORT: case XACT_EVENT_PARALLEL_ABORT:
            count_marked_scoring_errors(1);
            flush_pending_usage();
            break;
        default: break;
    }
}

// An error caught by a SAVEPOINT or an exception block: the calls marked inside it failed. The
// count is flushed with the next statement's (or the transaction's end).
void at_subtransaction_end(SubXactEvent event, SubTransactionId, SubTransactionId, void*) {
    if (event == SUBXACT_EVENT_ABORT_SUB) count_marked_scoring_errors(GetCurrentTransactionNestLevel());
}

void executor_end(QueryDesc* query) {
    if (previous_executor_end != NULL)
        previous_executor_end(query);
    else
        standard_ExecutorEnd(query);
    flush_pending_usage();
}

}  // namespace

void usage_add(const CatalogEntry* entry, const UsageCounts& counts) {
    add_to_entry(entry->id, entry->name, entry->version, counts);
}

PendingUsage* pending_usage(const CatalogEntry* entry, bool may_flush) {
    PendingUsage* free_record = NULL;
    for (PendingUsage& p : pending) {
        if (p.model_id == entry->id) return &p;
        if (free_record == NULL && !holds_counts(&p)) free_record = &p;
    }
    if (free_record == NULL) {
        if (!may_flush) return NULL;
        flush_pending_usage();
        free_record = &pending[0];
    }
    memset(free_record, 0, sizeof(*free_record));
    free_record->model_id = entry->id;
    strlcpy(free_record->name, entry->name, sizeof(free_record->name));
    free_record->version = entry->version;
    return free_record;
}

bool usage_pending = false;

void flush_pending_usage() {
    if (!usage_pending) return;  // the usual case at the end of a statement
    usage_pending = false;
    for (PendingUsage& p : pending) {
        if (!holds_counts(&p)) continue;
        UsageCounts counts = p.counts;
        if (p.timed_calls > 0) {
            const double scale = (double)counts.calls / p.timed_calls;
            counts.model_ms = INSTR_TIME_GET_MILLISEC(p.timed_model) * scale;
            counts.fill_ms = INSTR_TIME_GET_MILLISEC(p.timed_fill) * scale;
        }
        memset(&p.counts, 0, sizeof(p.counts));
        p.timed_calls = 0;
        INSTR_TIME_SET_ZERO(p.timed_model);
        INSTR_TIME_SET_ZERO(p.timed_fill);
        add_to_entry(p.model_id, p.name, p.version, counts);
    }
}

void count_scoring_error(const CatalogEntry* entry) {
    PendingUsage* p = pending_usage(entry, false);
    if (p != NULL) p->counts.errors++;
    usage_pending = true;
}

namespace {

// The entries of this database, copied under the lock.
Entry* copy_entries(int* count) {
    *count = 0;
    if (!ensure_table()) return (Entry*)palloc(sizeof(Entry));
    lock_table(LW_SHARED);
    Entry* out = (Entry*)palloc(sizeof(Entry) * Max(hash_get_num_entries(entries), 1));
    HASH_SEQ_STATUS scan;
    hash_seq_init(&scan, entries);
    for (Entry* e; (e = (Entry*)hash_seq_search(&scan)) != NULL;) {
        if (e->key.database != MyDatabaseId) continue;
        SpinLockAcquire(&e->mutex);
        out[(*count)++] = *e;
        SpinLockRelease(&e->mutex);
    }
    unlock_table();
    return out;
}

void not_shared_notice() {
    if (shared) return;
    ereport(NOTICE, (errmsg("pg_predict is not in shared_preload_libraries: model_stats shows this session's usage only"),
                     errhint("Add pg_predict to shared_preload_libraries and restart the server to count every "
                             "session's usage.")));
}

}  // namespace

// Only hooks and plain memory: this may run in the postmaster, whose children inherit them.
void install_usage_stats() {
    previous_executor_end = ExecutorEnd_hook;
    ExecutorEnd_hook = executor_end;
    RegisterXactCallback(at_transaction_end, NULL);
    RegisterSubXactCallback(at_subtransaction_end, NULL);
    install_worker_error_counting();
    register_shared_memory({table_size, kTrancheName, attach_table});
}

}  // namespace pg_predict::pg

using namespace pg_predict::pg;

extern "C" {

PG_PREDICT_SQL_FUNCTION(pg_predict_model_stats_entries);
PG_PREDICT_SQL_FUNCTION(pg_predict_model_stats_reset);
PG_PREDICT_SQL_FUNCTION(pg_predict_model_stats_info);

namespace {

// One row of model_stats_entries(): an entry's counters (NULL: none, zeros) and what backends
// hold of the version (NULL: nothing).
void put_row(ReturnSetInfo* rsinfo, int64 model_id, const Entry* e, const LoadedModel* held) {
    constexpr int kColumns = 14;
    Datum values[kColumns];
    bool nulls[kColumns];
    memset(nulls, 0, sizeof(nulls));
    values[0] = Int64GetDatum(model_id);
    values[3] = Int64GetDatum(e != NULL ? e->calls : 0);
    values[4] = Int64GetDatum(e != NULL ? e->rows : 0);
    values[5] = Int64GetDatum(e != NULL ? e->batches : 0);
    values[6] = Int64GetDatum(e != NULL ? e->errors : 0);
    values[7] = Float8GetDatum(e != NULL ? e->model_ms : 0);
    values[8] = Float8GetDatum(e != NULL ? e->fill_ms : 0);
    if (e != NULL) {
        values[1] = CStringGetTextDatum(e->name);
        values[2] = Int32GetDatum(e->version);
        values[9] = TimestampTzGetDatum(e->last_used);
        values[10] = TimestampTzGetDatum(e->since);
    } else {
        nulls[1] = nulls[2] = nulls[9] = nulls[10] = true;
    }
    values[11] = Int32GetDatum(held != NULL ? held->backends : 0);
    values[12] = Int32GetDatum(held != NULL ? held->programs : 0);
    values[13] = Int64GetDatum(held != NULL ? held->bytes : 0);
    tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

}  // namespace

// One row per model version of this database that has counters or is loaded by a backend.
Datum pg_predict_model_stats_entries(PG_FUNCTION_ARGS) {
    not_shared_notice();
    flush_pending_usage();  // this backend's own per-row calls, so a session sees what it did
    InitMaterializedSRF(fcinfo, 0);
    ReturnSetInfo* rsinfo = (ReturnSetInfo*)fcinfo->resultinfo;
    int num_entries, num_loaded;
    Entry* counted = copy_entries(&num_entries);
    LoadedModel* loaded = loaded_models(&num_loaded);
    bool* listed = (bool*)palloc0(sizeof(bool) * Max(num_loaded, 1));
    for (int i = 0; i < num_entries; i++) {
        // loaded is sorted by model id
        const LoadedModel* held = NULL;
        int low = 0, high = num_loaded - 1;
        while (low <= high && held == NULL) {
            const int middle = low + (high - low) / 2;
            if (loaded[middle].model_id == counted[i].key.model_id) {
                held = &loaded[middle];
                listed[middle] = true;
            } else if (loaded[middle].model_id < counted[i].key.model_id) {
                low = middle + 1;
            } else {
                high = middle - 1;
            }
        }
        put_row(rsinfo, counted[i].key.model_id, &counted[i], held);
    }
    // Loaded without counters: not scored since a reset (or the entry was evicted).
    for (int j = 0; j < num_loaded; j++)
        if (!listed[j]) put_row(rsinfo, loaded[j].model_id, NULL, &loaded[j]);
    return (Datum)0;
}

// model_stats_reset(model text DEFAULT NULL): every entry of every database and the evictions
// counter, or the entries of `model`'s versions in this database (dropped ones too).
Datum pg_predict_model_stats_reset(PG_FUNCTION_ARGS) {
    flush_pending_usage();  // what this backend counted so far goes too
    if (!ensure_table()) PG_RETURN_VOID();
    const char* name = PG_ARGISNULL(0) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(0));
    lock_table(LW_EXCLUSIVE);
    HASH_SEQ_STATUS scan;
    hash_seq_init(&scan, entries);
    // Removing the entry just returned is allowed during a sequential scan (dynahash).
    for (Entry* e; (e = (Entry*)hash_seq_search(&scan)) != NULL;)
        if (name == NULL || (e->key.database == MyDatabaseId && strcmp(e->name, name) == 0))
            hash_search(entries, &e->key, HASH_REMOVE, NULL);
    if (name == NULL) {
        table->evicted = 0;
        table->reset_at = GetCurrentTimestamp();
    }
    unlock_table();
    PG_RETURN_VOID();
}

// model_stats_info(): entries evicted to make room (pg_predict.stats_max) and the last reset of
// everything.
Datum pg_predict_model_stats_info(PG_FUNCTION_ARGS) {
    TupleDesc desc;
    if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE) elog(ERROR, "return type must be a row type");
    desc = BlessTupleDesc(desc);
    Datum values[3];
    bool nulls[3] = {false, false, false};
    ensure_table();
    lock_table(LW_SHARED);
    values[0] = Int64GetDatum(table->evicted);
    values[1] = TimestampTzGetDatum(table->reset_at);
    unlock_table();
    values[2] = BoolGetDatum(shared);
    PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

}  // extern "C"
