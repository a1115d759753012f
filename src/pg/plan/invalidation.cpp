#include "plan/invalidation.hpp"

#include "catalog/catalog.hpp"
#include "catalog/kept_entries.hpp"

extern "C" {
#include "access/xact.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/plancache.h"
}

namespace pg_predict::pg {

namespace {

// The range-table entry's alias: how the executor hooks recognise it.
constexpr const char* kCatalogEntryAlias = "pg_predict model catalog";

// A plan for a version older than the newest was made since the last executor start or end.
bool outdated_plan_made = false;

uint64 generation = 1;  // 0 means "not bound" to callers
Oid known_catalog = InvalidOid;  // the catalog's OID, once a plan or a binding needed it

// Runs while invalidation messages are read: must not access the catalogs. The OID is looked
// up again later, as DROP and CREATE EXTENSION give the catalog a new one.
void catalog_invalidated(Datum, Oid relation) {
    if (relation == InvalidOid || relation == known_catalog) {
        generation++;
        known_catalog = InvalidOid;
    }
}

ExecutorStart_hook_type previous_executor_start = NULL;
ExecutorEnd_hook_type previous_executor_end = NULL;

const RangeTblEntry* catalog_entry(const PlannedStmt* stmt) {
    if (stmt == NULL) return NULL;
    ListCell* lc;
    foreach (lc, stmt->rtable) {
        const RangeTblEntry* rte = (const RangeTblEntry*)lfirst(lc);
        if (rte->rtekind == RTE_RELATION && rte->requiredPerms == 0 && rte->eref != NULL &&
            strcmp(rte->eref->aliasname, kCatalogEntryAlias) == 0)
            return rte;
    }
    return NULL;
}

// Marks this backend's lock on the catalog as not cleared: the plan cache's next lock call on
// it reads the invalidation messages that arrived since (LockRelationOid skips that only for a
// lock marked cleared). The lock is taken and released here once to reach its local entry;
// when the statement held it, it stays held, as before.
void unclear_catalog_lock(Oid relation, LOCKMODE mode) {
    if (CurrentResourceOwner == NULL) return;
    LOCKTAG tag;
    SET_LOCKTAG_RELATION(tag, MyDatabaseId, relation);
    LOCALLOCK* local = NULL;
    LockAcquireResult result = LockAcquireExtended(&tag, mode, false, true, true, &local);
    if (result == LOCKACQUIRE_NOT_AVAIL) return;  // someone holds it exclusively: a DDL runs
    if (local != NULL) local->lockCleared = false;
    LockRelease(&tag, mode, false);
}

void unclear_after_plan(const QueryDesc* query) {
    const RangeTblEntry* rte = catalog_entry(query->plannedstmt);
    if (rte != NULL) unclear_catalog_lock(rte->relid, rte->rellockmode);
}

void drop_outdated_plans() {
    if (!outdated_plan_made) return;
    outdated_plan_made = false;
    ResetPlanCache();
}

void executor_start(QueryDesc* query, int eflags) {
    drop_outdated_plans();
    note_catalog_writes(query->plannedstmt);  // before it writes: a kept lookup must not outlive it
    if (previous_executor_start)
        previous_executor_start(query, eflags);
    else
        standard_ExecutorStart(query, eflags);
    // Starting read the catalog (binding models); the plan cache must read messages again.
    unclear_after_plan(query);
}

void executor_end(QueryDesc* query) {
    drop_outdated_plans();
    unclear_after_plan(query);
    if (previous_executor_end)
        previous_executor_end(query);
    else
        standard_ExecutorEnd(query);
}

}  // namespace

uint64 catalog_generation() {
    if (!OidIsValid(known_catalog)) {
        known_catalog = catalog_relation_id();
        generation++;  // whatever was bound before the OID was known is rebound
    }
    return generation;
}

void depend_on_model_catalog(PlannedStmt* stmt) {
    Oid catalog = catalog_relation_id();
    known_catalog = catalog;
    stmt->relationOids = lappend_oid(stmt->relationOids, catalog);
    RangeTblEntry* rte = makeNode(RangeTblEntry);
    rte->rtekind = RTE_RELATION;
    rte->relid = catalog;
    rte->relkind = RELKIND_RELATION;
    rte->rellockmode = AccessShareLock;
    rte->requiredPerms = 0;  // never scanned: the functions read the catalog as its owner
    rte->eref = makeAlias(kCatalogEntryAlias, NIL);
    stmt->rtable = lappend(stmt->rtable, rte);
}

void note_planned_version(const char* model, int64 version) {
    // READ COMMITTED plans under a fresh snapshot (catalog_lookup_for_planning): it is the
    // newest but for a commit in the last microseconds, which the node's version check reports.
    if (!IsolationUsesXactSnapshot()) return;
    if (catalog_latest_version(model) != version) outdated_plan_made = true;
}

void stale_plan_error(const char* model, int64 planned_version, int64 visible_version) {
    ResetPlanCache();
    ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                    errmsg("model \"%s\" was replaced while this statement was being planned", model),
                    errdetail("The plan is for version " INT64_FORMAT
                              "; the statement's snapshot sees version " INT64_FORMAT ".",
                              planned_version, visible_version),
                    errhint("Run the statement again: it will be planned for the new version.")));
}

void install_plan_invalidation() {
    previous_executor_start = ExecutorStart_hook;
    ExecutorStart_hook = executor_start;
    previous_executor_end = ExecutorEnd_hook;
    ExecutorEnd_hook = executor_end;
    CacheRegisterRelcacheCallback(catalog_invalidated, (Datum)0);
}

}  // namespace pg_predict::pg
