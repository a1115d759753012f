#include "catalog/citus.hpp"

extern "C" {
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
}

// No C++ object with a destructor may live in these frames: SPI and ereport longjmp.

namespace pg_predict::pg {

namespace {

bool citus_installed() { return OidIsValid(get_extension_oid("citus", true)); }

// Column `column` of the first row of Citus's metadata table `table` (in pg_catalog) that
// matches `key` (all rows when key is NULL), through `index` when it exists; false when the
// table is missing or no row matches. A catalog scan, not SPI: this runs while the planner
// looks a model up.
bool first_value(const char* table, const char* index, ScanKey key, AttrNumber column, Datum* value) {
    Oid relation = get_relname_relid(table, PG_CATALOG_NAMESPACE);
    if (!OidIsValid(relation)) return false;
    Oid index_oid = index != NULL ? get_relname_relid(index, PG_CATALOG_NAMESPACE) : InvalidOid;
    Relation rel = table_open(relation, AccessShareLock);
    SysScanDesc scan = systable_beginscan(rel, index_oid, OidIsValid(index_oid), NULL, key != NULL ? 1 : 0, key);
    bool found = false;
    HeapTuple tuple = systable_getnext(scan);
    if (HeapTupleIsValid(tuple)) {
        bool isnull;
        *value = heap_getattr(tuple, column, RelationGetDescr(rel), &isnull);
        found = !isnull;
    }
    systable_endscan(scan);
    table_close(rel, AccessShareLock);
    return found;
}

// The shard id of `relation` (pg_dist_shard), or 0 when it is not a Citus table.
int64 citus_shard_of(Oid relation) {
    ScanKeyData key;
    ScanKeyInit(&key, 1 /* logicalrelid */, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relation));
    Datum shard;
    return first_value("pg_dist_shard", "pg_dist_shard_logical_relid_index", &key, 2 /* shardid */, &shard)
               ? DatumGetInt64(shard)
               : 0;
}

// This node's group in Citus's metadata (pg_dist_local_group): 0 on the coordinator (and on a
// node no coordinator has added yet), the worker's group on a worker.
int32 citus_local_group() {
    Datum group;
    return first_value("pg_dist_local_group", NULL, NULL, 1 /* groupid */, &group) ? DatumGetInt32(group) : 0;
}

// Runs one query as the catalog's owner (creating a reference table needs its owner), with
// Citus's NOTICEs about copying the rows kept out of the caller's output.
void run_as_owner(Oid owner, const char* query, Oid catalog) {
    Oid saved_user;
    int saved_context;
    GetUserIdAndSecContext(&saved_user, &saved_context);
    SetUserIdAndSecContext(owner, saved_context | SECURITY_LOCAL_USERID_CHANGE);
    int nest = NewGUCNestLevel();
    set_config_option("client_min_messages", "warning", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0,
                      false);
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "pg_predict: SPI_connect failed");
    Oid types[1] = {OIDOID};
    Datum values[1] = {ObjectIdGetDatum(catalog)};
    int rc = SPI_execute_with_args(query, 1, types, values, NULL, false, 0);
    if (rc != SPI_OK_SELECT) elog(ERROR, "pg_predict: \"%s\" failed: %s", query, SPI_result_code_string(rc));
    SPI_finish();
    AtEOXact_GUC(true, nest);
    SetUserIdAndSecContext(saved_user, saved_context);
}

}  // namespace

bool on_citus_worker() { return citus_installed() && citus_local_group() != 0; }

Oid citus_catalog_copy(Oid catalog, Oid schema) {
    if (!citus_installed()) return InvalidOid;
    int64 shard = citus_shard_of(catalog);
    if (shard == 0) return InvalidOid;
    // Citus names a shard after its table: model_catalog_<shard id>, in the table's schema.
    char* name = psprintf("%s_" INT64_FORMAT, get_rel_name(catalog), shard);
    Oid copy = get_relname_relid(name, schema);
    if (!OidIsValid(copy))
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("pg_predict's model catalog has no copy on this Citus node yet"),
                        errdetail("The catalog is a Citus reference table; its shard %s is missing here.", name),
                        errhint("Run SELECT replicate_reference_tables(); on the coordinator.")));
    return copy;
}

void prepare_citus_catalog_change(Oid catalog, Oid owner, const char* what) {
    if (!citus_installed()) return;
    if (on_citus_worker())
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("cannot execute %s on a Citus worker", what),
                        errdetail("Models are changed on the coordinator; Citus copies them to every node."),
                        errhint("Connect to the coordinator and run it there.")));
    if (citus_shard_of(catalog) != 0) return;
    // The first change on a coordinator: the catalog becomes a reference table (the rows it
    // holds are copied to every node), in this transaction, so an error later undoes it too.
    // The table's own rows then lie unused under Citus's copies: remove them.
    run_as_owner(owner, "SELECT pg_catalog.create_reference_table($1::pg_catalog.regclass)", catalog);
    run_as_owner(owner, "SELECT pg_catalog.truncate_local_data_after_distributing_table($1::pg_catalog.regclass)",
                 catalog);
    CacheInvalidateRelcacheByRelid(catalog);
}

}  // namespace pg_predict::pg
