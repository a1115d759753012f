#include "catalog/kept_entries.hpp"

#include "shmem.hpp"

extern "C" {
#include "access/parallel.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "parser/parsetree.h"
#include "port/atomics.h"
#include "storage/shmem.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
}

namespace pg_predict::pg {

namespace {

char** copy_strings(char** strings, int count) {
    if (strings == NULL) return NULL;
    char** copy = (char**)palloc(sizeof(char*) * Max(count, 1));
    for (int i = 0; i < count; i++) copy[i] = strings[i] != NULL ? pstrdup(strings[i]) : NULL;
    return copy;
}

template <typename T>
T* copy_array(const T* values, int count) {
    if (values == NULL) return NULL;
    T* copy = (T*)palloc(sizeof(T) * Max(count, 1));
    memcpy(copy, values, sizeof(T) * count);
    return copy;
}

// An entry copied into its own small context, which the slot deletes when it is reused.
struct KeptEntry {
    MemoryContext context;  // NULL: the slot is empty
    CatalogEntry* entry;
};

void keep_entry(KeptEntry* slot, const CatalogEntry* entry) {
    if (slot->context != NULL) MemoryContextDelete(slot->context);
    slot->context = NULL;
    MemoryContext context = AllocSetContextCreate(TopMemoryContext, "pg_predict kept catalog entry", ALLOCSET_SMALL_SIZES);
    MemoryContext old = MemoryContextSwitchTo(context);
    slot->entry = copy_entry(entry);
    MemoryContextSwitchTo(old);
    slot->context = context;
}

// ---- parsed rows: by tuple version. A tuple is never changed in place, and (relation, TID,
// xmin) names one tuple version for as long as anyone can see it.

struct ParsedRow {
    Oid relation;
    ItemPointerData tid;
    TransactionId xmin;
    char name[NAMEDATALEN];
    KeptEntry kept;
};
constexpr int kParsedRows = 16;
ParsedRow parsed_rows[kParsedRows];
int next_parsed_row = 0;

// ---- kept lookups: by name, checked against the writers' generation.

// In shared memory. A writer of the catalog advances `generation` and counts itself in
// `committing` before its commit becomes visible, and advances `generation` again and leaves
// `committing` after (XACT_EVENT_COMMIT runs after the commit is visible to new snapshots).
// A lookup kept under generation g while no writer was committing is therefore used only
// while no writer has even begun committing since: every change a later snapshot can see
// changed the generation first. `off`: a two-phase transaction wrote the catalog; its COMMIT
// PREPARED can happen in any backend, so nothing is kept until the server restarts.
struct Writers {
    pg_atomic_uint64 generation;
    pg_atomic_uint32 committing;
    pg_atomic_uint32 off;
};
Writers* writers = NULL;

Size writers_size() { return MAXALIGN(sizeof(Writers)); }

void attach_writers() {
    bool found;
    writers = (Writers*)ShmemInitStruct("pg_predict catalog writers", writers_size(), &found);
    if (!found) {
        pg_atomic_init_u64(&writers->generation, 1);
        pg_atomic_init_u32(&writers->committing, 0);
        pg_atomic_init_u32(&writers->off, 0);
    }
}

bool wrote_catalog = false;  // this transaction wrote the catalog table
bool announced = false;      // and is counted in writers->committing

struct KeptLookup {
    uint64 generation;
    Oid relation;
    int64 pinned_id;
    TransactionId xmin;  // the row's: an entry newer than a statement's snapshot is not used
    char name[NAMEDATALEN];
    KeptEntry kept;
};
constexpr int kKeptLookups = 32;
KeptLookup kept_lookups[kKeptLookups];
int next_kept_lookup = 0;
bool forget_registered = false;

// Runs while invalidation messages are read: only marks. The catalog's own invalidation
// (every writer sends one at commit; ALTER TABLE, TRUNCATE) empties what was read from it.
void forget_lookups(Datum, Oid relation) {
    for (KeptLookup& k : kept_lookups)
        if (relation == InvalidOid || relation == k.relation) k.generation = 0;
}

bool lookups_usable() {
    return writers != NULL && !wrote_catalog && pg_atomic_read_u32(&writers->off) == 0 && !RecoveryInProgress();
}

// A row whose inserting transaction the snapshot does not see is newer than the statement.
bool row_visible_to(TransactionId xmin, Snapshot snapshot) {
    return !TransactionIdIsNormal(xmin) || !XidInMVCCSnapshot(xmin, snapshot);
}

void at_transaction_end(XactEvent event, void*) {
    if (writers == NULL || !wrote_catalog) return;
    switch (event) {
        case XACT_EVENT_PRE_COMMIT:
            pg_atomic_fetch_add_u32(&writers->committing, 1);
            pg_atomic_fetch_add_u64(&writers->generation, 1);
            announced = true;
            break;
        case XACT_EVENT_PRE_PREPARE:
            pg_atomic_write_u32(&writers->off, 1);
            pg_atomic_fetch_add_u64(&writers->generation, 1);
            ereport(LOG, (errmsg("pg_predict: a prepared transaction changed the model catalog; catalog lookups "
                                 "are read from the table until the server restarts")));
            break;
        case XACT_EVENT_COMMIT:
        case XACT_EVENT_ABORT:
        case XACT_EVENT_PREPARE:
            if (announced) {
                pg_atomic_fetch_add_u64(&writers->generation, 1);
                pg_atomic_fetch_sub_u32(&writers->committing, 1);
            }
            announced = false;
            wrote_catalog = false;
            break;
        default: break;
    }
}

}  // namespace

CatalogEntry* copy_entry(const CatalogEntry* e) {
    CatalogEntry* c = (CatalogEntry*)palloc(sizeof(CatalogEntry));
    *c = *e;
    c->name = pstrdup(e->name);
    c->owner = e->owner != NULL ? pstrdup(e->owner) : NULL;
    c->usable_by = copy_strings(e->usable_by, e->num_usable_by);
    c->format = pstrdup(e->format);
    c->strategy = pstrdup(e->strategy);
    c->features = copy_strings(e->features, e->num_features);
    c->columns = copy_strings(e->columns, e->num_features);
    c->classes = copy_array(e->classes, e->num_classes);
    c->class_labels = copy_strings(e->class_labels, e->num_classes);
    c->text_summary = pstrdup(e->text_summary);
    c->objective = pstrdup(e->objective);
    c->is_text = copy_array(e->is_text, e->num_features);
    c->is_unused = copy_array(e->is_unused, e->num_features);
    c->layout = pstrdup(e->layout);
    return c;
}

CatalogEntry* parsed_row_entry(Oid relation, HeapTuple tuple, const char* name) {
    const TransactionId xmin = HeapTupleHeaderGetRawXmin(tuple->t_data);
    for (ParsedRow& r : parsed_rows)
        if (r.kept.context != NULL && r.relation == relation && r.xmin == xmin &&
            ItemPointerEquals(&r.tid, &tuple->t_self) && strcmp(r.name, name) == 0)
            return copy_entry(r.kept.entry);
    return NULL;
}

void keep_parsed_row(Oid relation, HeapTuple tuple, const char* name, const CatalogEntry* entry) {
    if (strlen(name) >= NAMEDATALEN) return;
    ParsedRow& r = parsed_rows[next_parsed_row];
    next_parsed_row = (next_parsed_row + 1) % kParsedRows;
    keep_entry(&r.kept, entry);
    r.relation = relation;
    r.tid = tuple->t_self;
    r.xmin = HeapTupleHeaderGetRawXmin(tuple->t_data);
    strlcpy(r.name, name, NAMEDATALEN);
}

CatalogEntry* kept_lookup(Oid relation, const char* name, int64 pinned_id, Snapshot snapshot) {
    if (!lookups_usable() || snapshot == NULL || !IsMVCCSnapshot(snapshot)) return NULL;
    pg_read_barrier();  // the generation is read after the snapshot was taken
    const uint64 now = pg_atomic_read_u64(&writers->generation);
    for (const KeptLookup& k : kept_lookups)
        if (k.generation == now && k.kept.context != NULL && k.relation == relation && k.pinned_id == pinned_id &&
            strcmp(k.name, name) == 0)
            return row_visible_to(k.xmin, snapshot) ? copy_entry(k.kept.entry) : NULL;
    return NULL;
}

bool may_keep_lookup(uint64* generation) {
    if (!lookups_usable() || IsInParallelMode()) return false;
    if (pg_atomic_read_u32(&writers->committing) != 0) return false;
    pg_read_barrier();
    *generation = pg_atomic_read_u64(&writers->generation);
    pg_read_barrier();  // read before the lookup's snapshot is taken
    return true;
}

void keep_lookup(uint64 generation, Oid relation, const char* name, int64 pinned_id, TransactionId xmin,
                 const CatalogEntry* entry) {
    if (strlen(name) >= NAMEDATALEN) return;
    pg_read_barrier();
    if (pg_atomic_read_u32(&writers->committing) != 0 || pg_atomic_read_u64(&writers->generation) != generation)
        return;
    if (!forget_registered) {
        CacheRegisterRelcacheCallback(forget_lookups, (Datum)0);
        forget_registered = true;
    }
    KeptLookup* slot = NULL;
    for (KeptLookup& k : kept_lookups)  // the same lookup kept under an older generation
        if (k.kept.context != NULL && k.relation == relation && k.pinned_id == pinned_id && strcmp(k.name, name) == 0)
            slot = &k;
    if (slot == NULL) {
        slot = &kept_lookups[next_kept_lookup];
        next_kept_lookup = (next_kept_lookup + 1) % kKeptLookups;
    }
    slot->generation = 0;  // not usable until complete
    keep_entry(&slot->kept, entry);
    slot->relation = relation;
    slot->pinned_id = pinned_id;
    slot->xmin = xmin;
    strlcpy(slot->name, name, NAMEDATALEN);
    slot->generation = generation;
}

void note_catalog_writes(const PlannedStmt* stmt) {
    if (writers == NULL || wrote_catalog || stmt == NULL || stmt->resultRelations == NIL) return;
    ListCell* lc;
    foreach (lc, stmt->resultRelations) {
        const RangeTblEntry* rte = rt_fetch(lfirst_int(lc), stmt->rtable);
        // By name, without looking the extension up: a statement in a database without it, or
        // a table of that name elsewhere, only makes lookups read the table once more.
        const char* name = rte->rtekind == RTE_RELATION ? get_rel_name(rte->relid) : NULL;
        if (name != NULL && strcmp(name, "model_catalog") == 0) wrote_catalog = true;
    }
}

// Only hooks and plain memory: this may run in the postmaster, whose children inherit them.
void install_kept_entries() {
    RegisterXactCallback(at_transaction_end, NULL);
    register_shared_memory({writers_size, NULL, attach_writers});
}

}  // namespace pg_predict::pg
