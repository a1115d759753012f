#include "catalog/catalog.hpp"

#include "catalog/citus.hpp"
#include "catalog/jsonb_text.hpp"
#include "catalog/kept_entries.hpp"
#include "pg_predict/runtime/api.hpp"
#include "settings.hpp"

extern "C" {
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "access/xlog.h"
#include "common/hashfn.h"
#include "storage/lmgr.h"
#include "common/shortest_dec.h"
#include "tcop/utility.h"
#include "utils/timestamp.h"
}

// No C++ object with a destructor may live in these frames: SPI and ereport longjmp.

namespace pg_predict::pg {

namespace {

// PostgreSQL 15 does not export get_extension_schema(); this is its body.
Oid extension_schema(Oid extension) {
    Relation relation = table_open(ExtensionRelationId, AccessShareLock);
    ScanKeyData key;
    ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
                ObjectIdGetDatum(extension));
    SysScanDesc scan = systable_beginscan(relation, ExtensionOidIndexId, true, NULL, 1, &key);
    HeapTuple tuple = systable_getnext(scan);
    Oid schema = HeapTupleIsValid(tuple) ? ((Form_pg_extension)GETSTRUCT(tuple))->extnamespace
                                         : InvalidOid;
    systable_endscan(scan);
    table_close(relation, AccessShareLock);
    if (!OidIsValid(schema)) elog(ERROR, "pg_predict: extension %u has no schema", extension);
    return schema;
}

// The attribute numbers of the columns a lookup reads (lookup_by_index).
struct CatalogColumns {
    AttrNumber id, name, owner, format, strategy, features, columns, task, classes, summary, text_features,
        unused_features, usable_by, class_labels, version, deployed;
};

struct CatalogTable {
    char* qualified_table;     // "schema".model_catalog: what changes are written to
    char* qualified_sequence;  // "schema".model_catalog_id_seq
    // What lookups read: the table, or on a Citus node this node's copy of it (catalog/citus.hpp).
    char* read_table;
    Oid relation;              // read_table's OID: plans depend on it, changes invalidate it
    Oid catalog;               // the table's own OID (relation is its Citus copy on a Citus node)
    Oid owner;
    // A 0.1.0 catalog (the library was updated, ALTER EXTENSION ... UPDATE not run yet): owners
    // are regrole, there are no grants and every role may use every model, as in 0.1.0.
    bool legacy;
    const char* owner_name;  // SQL for the owner's name (NULL when it has none)
    const char* usable_by;   // SQL for the roles that may use the model
    const char* owner_value; // SQL storing parameter $13 (a role name) as the owner
    // 0.3.0 keeps the source as given: source (jsonb), source_text or source_bytes. Before, only
    // jsonb could be given.
    bool typed_sources;
    // 0.4.0 keeps the labels as text (class_labels) and classes NULL for labels that are not
    // numbers. Before, every label was a number.
    bool text_labels;
    // 0.6.0 keeps one row per version, `deployed` marks the one a name resolves to.
    bool versions;
    const char* deployed_only;  // " AND deployed" for lookups by name, "" before 0.6.0
    // 0.8.0 keeps each version's deployment times (deployments): the history rollback undoes.
    bool deploy_history;
    bool cascades;  // 0.9.0: a version's cascade (create_cascade)
    bool profiles;  // 0.9.0: a version's profile (profile_model)
    // Lookups read the row through the table's indexes, without SPI (the current catalog in this
    // database's own table); else through the query, which serves every version and Citus copies.
    bool direct_reads;
    Oid deployed_name_index;  // model_catalog_deployed_name: name, WHERE deployed
    Oid id_index;             // model_catalog_pkey: id
    CatalogColumns columns;
};

// The catalog's privileges need 0.2.0; a 0.1.0 catalog errors clearly instead.
void require_privileges(const CatalogTable& table) {
    if (table.legacy)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("pg_predict's catalog in this database is still version 0.1.0"),
                        errhint("Run ALTER EXTENSION pg_predict UPDATE.")));
}

// `index` when it is a valid btree index of `relation` whose first column is `column`, else
// InvalidOid (an index renamed or replaced by hand: lookups then go through the query).
Oid index_on(Oid index, Oid relation, AttrNumber column) {
    if (!OidIsValid(index) || column == InvalidAttrNumber) return InvalidOid;
    HeapTuple tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(index));
    if (!HeapTupleIsValid(tuple)) return InvalidOid;
    Form_pg_index form = (Form_pg_index)GETSTRUCT(tuple);
    bool fits = form->indrelid == relation && form->indisvalid && form->indnatts >= 1 && form->indkey.values[0] == column;
    ReleaseSysCache(tuple);
    if (!fits) return InvalidOid;
    tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(index));
    if (!HeapTupleIsValid(tuple)) return InvalidOid;
    fits = ((Form_pg_class)GETSTRUCT(tuple))->relam == BTREE_AM_OID;
    ReleaseSysCache(tuple);
    return fits ? index : InvalidOid;
}

// The catalog table itself (not a Citus node's copy) and its schema.
Oid catalog_table_oid(Oid* schema_out) {
    Oid extension = get_extension_oid("pg_predict", true);
    if (!OidIsValid(extension))
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                        errmsg("extension \"pg_predict\" is not installed in this database"),
                        errhint("Run CREATE EXTENSION pg_predict.")));
    Oid schema = extension_schema(extension);
    const char* schema_name = quote_identifier(get_namespace_name(schema));
    Oid relation = get_relname_relid("model_catalog", schema);
    if (!OidIsValid(relation))
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
                        errmsg("pg_predict's catalog table %s.model_catalog is missing",
                               schema_name)));
    *schema_out = schema;
    return relation;
}

CatalogTable look_up_catalog_table() {
    Oid schema;
    Oid relation = catalog_table_oid(&schema);
    const char* schema_name = quote_identifier(get_namespace_name(schema));
    HeapTuple tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relation));
    if (!HeapTupleIsValid(tuple)) elog(ERROR, "cache lookup failed for relation %u", relation);
    CatalogTable table;
    table.relation = relation;
    table.catalog = relation;
    table.owner = ((Form_pg_class)GETSTRUCT(tuple))->relowner;
    ReleaseSysCache(tuple);
    table.qualified_table = psprintf("%s.model_catalog", schema_name);
    table.qualified_sequence = psprintf("%s.model_catalog_id_seq", schema_name);
    table.read_table = table.qualified_table;
    Oid copy = citus_catalog_copy(relation, schema);
    if (OidIsValid(copy)) {
        table.relation = copy;
        table.read_table = psprintf("%s.%s", schema_name, quote_identifier(get_rel_name(copy)));
    }
    table.legacy = get_attnum(relation, "usable_by") == InvalidAttrNumber;
    table.typed_sources = get_attnum(relation, "source_bytes") != InvalidAttrNumber;
    table.text_labels = get_attnum(relation, "class_labels") != InvalidAttrNumber;
    table.versions = get_attnum(relation, "deployed") != InvalidAttrNumber;
    table.deployed_only = table.versions ? " AND deployed" : "";
    table.deploy_history = get_attnum(relation, "deployments") != InvalidAttrNumber;
    table.cascades = get_attnum(relation, "cascade") != InvalidAttrNumber;
    table.profiles = get_attnum(relation, "profile") != InvalidAttrNumber;
    table.direct_reads = false;
    if (!table.legacy && table.typed_sources && table.text_labels && table.versions && table.cascades &&
        table.read_table == table.qualified_table) {
        CatalogColumns& c = table.columns;
        const struct { AttrNumber* at; const char* name; } wanted[] = {
            {&c.id, "id"}, {&c.name, "name"}, {&c.owner, "owner"}, {&c.format, "format"}, {&c.strategy, "strategy"},
            {&c.features, "features"}, {&c.columns, "columns"}, {&c.task, "task"}, {&c.classes, "classes"},
            {&c.summary, "summary"}, {&c.text_features, "text_features"}, {&c.unused_features, "unused_features"},
            {&c.usable_by, "usable_by"}, {&c.class_labels, "class_labels"}, {&c.version, "version"},
            {&c.deployed, "deployed"}};
        bool found = true;
        for (const auto& w : wanted) found = found && (*w.at = get_attnum(relation, w.name)) != InvalidAttrNumber;
        table.deployed_name_index = index_on(get_relname_relid("model_catalog_deployed_name", schema), relation, c.name);
        table.id_index = index_on(get_relname_relid("model_catalog_pkey", schema), relation, c.id);
        table.direct_reads = found && OidIsValid(table.deployed_name_index) && OidIsValid(table.id_index);
    }
    if (table.legacy) {
        table.owner_name = "(SELECT r.rolname::pg_catalog.text FROM pg_catalog.pg_roles r "
                           "WHERE r.oid OPERATOR(pg_catalog.=) owner::pg_catalog.oid)";
        table.usable_by = "'{public}'::pg_catalog.text[]";
        table.owner_value = "$13::pg_catalog.regrole";
    } else {
        table.owner_name = "owner";
        table.usable_by = "usable_by";
        table.owner_value = "$13";
    }
    return table;
}

// catalog_table()'s answer, kept for the backend: looking it up costs two scans of pg_extension
// (pg_predict, then citus) and a dozen syscache reads, on every catalog access of every
// statement. It is forgotten when the catalog table or its Citus copy changes (DROP or
// ALTER EXTENSION, ALTER TABLE, OWNER TO, create_reference_table, a shard row Citus adds on a
// node: each sends that relation's relcache invalidation), on a full reset, and when any
// schema changes (a renamed schema renames the qualified names).
CatalogTable kept_table;
bool table_kept = false;
uint64 table_invalidations = 0;  // counted, so that a lookup an invalidation overtook is not kept

void forget_table_on_relation(Datum, Oid relation) {
    if (relation == InvalidOid || relation == kept_table.catalog || relation == kept_table.relation) {
        table_kept = false;
        table_invalidations++;
    }
}

void forget_table_on_schema(Datum, int, uint32) {
    table_kept = false;
    table_invalidations++;
}

// The kept copy's strings live as long as the backend and are never freed: a caller may still
// hold an older copy of the struct when an invalidation makes the next call look it up again. A
// string that did not change keeps its pointer; one that did (a renamed schema, a new Citus copy:
// rare DDL) is allocated anew and the old one left behind.
char* kept_string(const char* kept, const char* now) {
    return kept != NULL && strcmp(kept, now) == 0 ? (char*)kept : MemoryContextStrdup(TopMemoryContext, now);
}

void keep_table(const CatalogTable& table) {
    const CatalogTable before = kept_table;
    kept_table = table;
    kept_table.qualified_table = kept_string(before.qualified_table, table.qualified_table);
    kept_table.qualified_sequence = kept_string(before.qualified_sequence, table.qualified_sequence);
    kept_table.read_table = table.read_table == table.qualified_table ? kept_table.qualified_table
                                                                       : kept_string(before.read_table, table.read_table);
    table_kept = true;
}

CatalogTable catalog_table() {
    static bool registered = false;
    if (!registered) {
        CacheRegisterRelcacheCallback(forget_table_on_relation, (Datum)0);
        CacheRegisterSyscacheCallback(NAMESPACEOID, forget_table_on_schema, (Datum)0);
        registered = true;
    }
    // What other sessions committed (DROP EXTENSION, a new Citus copy) reaches the callbacks
    // here, as taking a lock on the table would deliver it.
    AcceptInvalidationMessages();
    if (table_kept) return kept_table;
    uint64 before = table_invalidations;
    CatalogTable table = look_up_catalog_table();
    if (table_invalidations == before) keep_table(table);
    return table;
}

// Runs the catalog statements as the table's owner, in a restricted security context, the way
// PostgreSQL's own RI triggers do, with search_path = pg_catalog, pg_temp so that no function
// or operator of the caller's schemas can be picked up while the owner's rights are in force
// (the statements qualify their names as well). An error inside is fine: transaction abort
// restores the user id, the security context and the setting.
struct OwnerSwitch {
    Oid saved_user;
    int saved_context;
    int guc_nest_level;
};

OwnerSwitch become_catalog_owner(Oid owner) {
    OwnerSwitch saved;
    GetUserIdAndSecContext(&saved.saved_user, &saved.saved_context);
    SetUserIdAndSecContext(owner, saved.saved_context | SECURITY_LOCAL_USERID_CHANGE |
                                      SECURITY_RESTRICTED_OPERATION);
    saved.guc_nest_level = NewGUCNestLevel();
    set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
                      GUC_ACTION_SAVE, true, 0, false);
    return saved;
}

void restore_user(const OwnerSwitch& saved) {
    AtEOXact_GUC(true, saved.guc_nest_level);
    SetUserIdAndSecContext(saved.saved_user, saved.saved_context);
}

char** text_array_to_cstrings(Datum array_datum, int* count) {
    ArrayType* array = DatumGetArrayTypeP(array_datum);
    Datum* elements;
    bool* nulls;
    deconstruct_array(array, TEXTOID, -1, false, TYPALIGN_INT, &elements, &nulls, count);
    char** result = (char**)palloc(sizeof(char*) * (*count > 0 ? *count : 1));
    for (int i = 0; i < *count; i++)
        result[i] = nulls[i] ? pstrdup("") : TextDatumGetCString(elements[i]);
    return result;
}

Datum cstrings_to_text_array(const std::vector<std::string>& strings) {
    int count = (int)strings.size();
    Datum* elements = (Datum*)palloc(sizeof(Datum) * (count > 0 ? count : 1));
    for (int i = 0; i < count; i++) elements[i] = CStringGetTextDatum(strings[i].c_str());
    return PointerGetDatum(construct_array(elements, count, TEXTOID, -1, false, TYPALIGN_INT));
}

// A numeric label as text: float8's own text form (what classes::text[] gives with the default
// extra_float_digits), whatever the session's extra_float_digits says.
char* numeric_label_text(double label) { return double_to_shortest_decimal(label); }

Datum numeric_labels_to_text_array(const std::vector<double>& labels) {
    int count = (int)labels.size();
    Datum* elements = (Datum*)palloc(sizeof(Datum) * (count > 0 ? count : 1));
    for (int i = 0; i < count; i++) elements[i] = CStringGetTextDatum(numeric_label_text(labels[i]));
    return PointerGetDatum(construct_array(elements, count, TEXTOID, -1, false, TYPALIGN_INT));
}

Datum doubles_to_float8_array(const std::vector<double>& values) {
    int count = (int)values.size();
    Datum* elements = (Datum*)palloc(sizeof(Datum) * (count > 0 ? count : 1));
    for (int i = 0; i < count; i++) elements[i] = Float8GetDatum(values[i]);
    return PointerGetDatum(
        construct_array(elements, count, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

// Per-feature flags from an int4[] of feature indices.
bool* feature_flags(Datum indices, const CatalogEntry* entry, const char* what) {
    bool* flags = (bool*)palloc0(sizeof(bool) * Max(entry->num_features, 1));
    Datum* elements;
    bool* nulls;
    int count;
    deconstruct_array(DatumGetArrayTypeP(indices), INT4OID, sizeof(int32), true, TYPALIGN_INT, &elements,
                      &nulls, &count);
    for (int i = 0; i < count; i++) {
        int32 feature = DatumGetInt32(elements[i]);
        if (nulls[i] || feature < 0 || feature >= entry->num_features)
            elog(ERROR, "pg_predict: catalog row of model \"%s\" has bad %s", entry->name, what);
        flags[feature] = true;
    }
    return flags;
}

Datum ints_to_int4_array(const std::vector<int32_t>& values) {
    int count = (int)values.size();
    Datum* elements = (Datum*)palloc(sizeof(Datum) * (count > 0 ? count : 1));
    for (int i = 0; i < count; i++) elements[i] = Int32GetDatum(values[i]);
    return PointerGetDatum(construct_array(elements, count, INT4OID, sizeof(int32), true, TYPALIGN_INT));
}

Datum bytes_to_bytea(const std::string& bytes) {
    bytea* result = (bytea*)palloc(VARHDRSZ + bytes.size());
    SET_VARSIZE(result, VARHDRSZ + bytes.size());
    memcpy(VARDATA(result), bytes.data(), bytes.size());
    return PointerGetDatum(result);
}

Datum cstring_to_jsonb(const char* json) {
    // jsonb_in builds a tree of every value before the binary form: for the spec of a big model
    // that is several times its text. Parsed in a context of its own, it is freed here instead
    // of staying allocated through the catalog write (create_model's peak memory).
    MemoryContext parse = AllocSetContextCreate(CurrentMemoryContext, "pg_predict jsonb input",
                                                ALLOCSET_DEFAULT_SIZES);
    MemoryContext caller = MemoryContextSwitchTo(parse);
    Datum parsed = text_to_jsonb(json);  // jsonb_in, with interrupt checks
    MemoryContextSwitchTo(caller);
    Datum result = PointerGetDatum(DatumGetJsonbPCopy(parsed));
    MemoryContextDelete(parse);
    return result;
}

// The versions of `name` as `snapshot` sees them: their count and newest version, as text.
char* versions_seen(const CatalogTable& table, const char* name, Snapshot snapshot) {
    char* query = psprintf("SELECT pg_catalog.count(*)::text || '/' || coalesce(pg_catalog.max(version)::text, '') "
                           "FROM %s WHERE name OPERATOR(pg_catalog.=) $1",
                           table.qualified_table);
    Oid types[1] = {TEXTOID};
    Datum values[1] = {CStringGetTextDatum(name)};
    SPIPlanPtr plan = SPI_prepare(query, 1, types);
    if (plan == NULL) elog(ERROR, "pg_predict: reading the catalog failed: %s", SPI_result_code_string(SPI_result));
    int rc = SPI_execute_snapshot(plan, values, NULL, snapshot, InvalidSnapshot, true, false, 1);
    if (rc != SPI_OK_SELECT || SPI_processed != 1)
        elog(ERROR, "pg_predict: reading the catalog failed: %s", SPI_result_code_string(rc));
    char* seen = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
    SPI_freeplan(plan);
    return seen;
}

// Under a transaction snapshot: a serialization failure when another transaction changed the
// versions of `name` (a new name, a new version) after the snapshot was taken.
void refuse_concurrent_change(const CatalogTable& table, const char* name) {
    char* mine = versions_seen(table, name, GetTransactionSnapshot());
    char* latest = versions_seen(table, name, GetLatestSnapshot());
    if (strcmp(mine, latest) != 0)
        ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                        errmsg("could not serialize access due to a concurrent change of model \"%s\"", name),
                        errdetail("Another transaction added or removed a version of the model after this "
                                  "transaction's snapshot was taken."),
                        errhint("Retry the transaction.")));
}

// Locks the rows of `name` (every version, in version order, so writers of one name queue
// behind each other); false when there is no such model. *owner: its owner's name (NULL when it
// has none), in the caller's memory context (SPI's would go with SPI_finish).
//
// First a lock on the name itself (the catalog's OID and a hash of the name, until the end of
// the transaction): a new name has no row to lock, and two create_model of one new name each
// inserted version 1, one of them failing on the unique constraint (issue 46). Now the second
// waits; under READ COMMITTED it then sees the first's row and adds version 2, as for an
// existing name. A snapshot that must not change (REPEATABLE READ, SERIALIZABLE) cannot see
// what was committed while it waited: that is a serialization failure, which clients retry.
bool lock_model_row(const CatalogTable& table, const char* name, char** owner) {
    MemoryContext caller = CurrentMemoryContext;
    LockDatabaseObject(table.relation, hash_bytes((const unsigned char*)name, (int)strlen(name)), 0, ExclusiveLock);
    if (IsolationUsesXactSnapshot()) refuse_concurrent_change(table, name);
    char* query = psprintf("SELECT %s FROM %s WHERE name OPERATOR(pg_catalog.=) $1%s FOR UPDATE",
                           table.owner_name, table.qualified_table, table.versions ? " ORDER BY version" : "");
    Oid types[1] = {TEXTOID};
    Datum values[1] = {CStringGetTextDatum(name)};
    int rc = SPI_execute_with_args(query, 1, types, values, NULL, false, 0);
    if (rc != SPI_OK_SELECT) elog(ERROR, "pg_predict: reading the catalog failed: %s", SPI_result_code_string(rc));
    if (SPI_processed == 0) return false;
    char* value = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
    *owner = value == NULL ? NULL : MemoryContextStrdup(caller, value);
    return true;
}

}  // namespace

Oid catalog_relation_id() { return catalog_table().relation; }

bool catalog_is_citus_reference_table() {
    CatalogTable table = catalog_table();
    return table.read_table != table.qualified_table;
}

void check_model_owner(const char* name, const char* owner) {
    if (superuser()) return;
    Oid role = owner == NULL ? InvalidOid : get_role_oid(owner, true);
    if (OidIsValid(role) && has_privs_of_role(GetUserId(), role)) return;
    if (owner == NULL)
        ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                        errmsg("must be owner of model \"%s\"", name),
                        errdetail("The model has no owner (its role was dropped); only superusers may change it.")));
    if (!OidIsValid(role))
        ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                        errmsg("must be owner of model \"%s\"", name),
                        errdetail("The model is owned by role \"%s\", which does not exist in this cluster; "
                                  "only superusers may change it.", owner),
                        errhint("A superuser can give it to a role: SELECT set_model_owner('%s', 'role').", name)));
    ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                    errmsg("must be owner of model \"%s\"", name),
                    errdetail("The model is owned by role \"%s\".", owner)));
}

void prevent_catalog_change(const char* what) {
    PreventCommandDuringRecovery(what);
    PreventCommandIfReadOnly(what);
    Oid schema;
    Oid relation = catalog_table_oid(&schema);
    HeapTuple tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relation));
    if (!HeapTupleIsValid(tuple)) elog(ERROR, "cache lookup failed for relation %u", relation);
    Oid owner = ((Form_pg_class)GETSTRUCT(tuple))->relowner;
    ReleaseSysCache(tuple);
    prepare_citus_catalog_change(relation, owner, what);
}

void check_model_name(const char* name) {
    if (name[0] == '\0')
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("model name must not be empty")));
    for (const char* c = name; *c != '\0'; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("model name must not contain control characters")));
    size_t bytes = strlen(name);
    if (bytes > (size_t)model_name_max_bytes)
        ereport(ERROR, (errcode(ERRCODE_NAME_TOO_LONG),
                        errmsg("model name is too long"),
                        errdetail("A model name may have at most %d bytes; this one has %zu.",
                                  model_name_max_bytes, bytes)));
}

namespace {

// The catalog's read queries, prepared once per backend: a query that names a model per tenant
// looks thousands of models up, and parsing and planning each lookup cost more than the lookup.
// (The plan cache re-plans a kept plan when the catalog table changes.)
struct PreparedRead {
    char* query;
    Oid type;
    SPIPlanPtr plan;
};
constexpr int kPreparedReads = 16;
PreparedRead prepared_reads[kPreparedReads];
int next_prepared_read = 0;  // the slot replaced next when all are taken

SPIPlanPtr prepared_read(const char* query, Oid type) {
    for (const PreparedRead& r : prepared_reads)
        if (r.query != NULL && r.type == type && strcmp(r.query, query) == 0) return r.plan;
    SPIPlanPtr plan = SPI_prepare(query, 1, &type);
    if (plan == NULL) elog(ERROR, "pg_predict: preparing a catalog read failed: %s", SPI_result_code_string(SPI_result));
    if (SPI_keepplan(plan) != 0) elog(ERROR, "pg_predict: keeping a catalog read's plan failed");
    PreparedRead& slot = prepared_reads[next_prepared_read];
    next_prepared_read = (next_prepared_read + 1) % kPreparedReads;
    if (slot.query != NULL) {
        SPI_freeplan(slot.plan);
        pfree(slot.query);
    }
    slot = PreparedRead{MemoryContextStrdup(TopMemoryContext, query), type, plan};
    return plan;
}

// Runs a read-only query on the catalog table as its owner, in the calling statement's snapshot
// (every use of a model within one statement sees the same version even if a replace commits
// meanwhile; planning may happen without an active snapshot, then the transaction's is taken),
// and calls read() while SPI's result is there. At most one row. `snapshot`, when given, replaces
// the statement's.
template <typename Read>
void read_catalog(const CatalogTable& table, const char* query, Oid type, Datum value, Read read,
                  Snapshot snapshot = NULL) {
    bool pushed_snapshot = snapshot != NULL || !ActiveSnapshotSet();
    if (pushed_snapshot) PushActiveSnapshot(snapshot != NULL ? snapshot : GetTransactionSnapshot());
    OwnerSwitch saved = become_catalog_owner(table.owner);
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "pg_predict: SPI_connect failed");
    int rc = SPI_execute_plan(prepared_read(query, type), &value, NULL, true, 1);
    if (rc != SPI_OK_SELECT) elog(ERROR, "pg_predict: reading the catalog failed: %s", SPI_result_code_string(rc));
    read();
    SPI_finish();
    restore_user(saved);
    if (pushed_snapshot) PopActiveSnapshot();
}

// The condition that selects the version a name refers to: the deployed one, or for a pinned
// name (pin_model_version) the one with the pinned id. *bare: the name without its pin.
const char* version_condition(const CatalogTable& table, const char* name, const char** bare) {
    const char* mark = strchr(name, kVersionPinMark);
    if (mark == NULL) {
        *bare = name;
        return table.deployed_only;
    }
    char* end;
    errno = 0;
    long long id = strtoll(mark + 1, &end, 10);
    if (errno != 0 || *end != '\0' || end == mark + 1 || id <= 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("invalid model name \"%s\"", name),
                        errdetail("A model name has no control characters.")));
    *bare = pnstrdup(name, mark - name);
    return psprintf(" AND id OPERATOR(pg_catalog.=) %lld", id);
}

}  // namespace

char* pin_model_version(const char* name, int64 id) {
    return psprintf("%s%c" INT64_FORMAT, name, kVersionPinMark, id);
}

const char* unpinned_model_name(const char* name) {
    const char* mark = strchr(name, kVersionPinMark);
    return mark == NULL ? name : pnstrdup(name, mark - name);
}

namespace {

// The columns of a catalog lookup, in the order catalog_lookup's query returns them.
enum LookupColumn {
    kId, kName, kOwner, kFormat, kStrategy, kFeatures, kColumns, kTask, kClasses, kTrees, kDepth, kTextFeatures,
    kProbabilities, kUnusedFeatures, kObjective, kUsableBy, kClassLabels, kOutputs, kVersion, kLayout, kText,
    kLookupColumns
};

// A catalog row's lookup columns as a CatalogEntry, in the current memory context.
CatalogEntry* entry_of_row(const char* name, const Datum* value, const bool* null) {
    CatalogEntry* entry = (CatalogEntry*)palloc0(sizeof(CatalogEntry));
    entry->id = DatumGetInt64(value[kId]);
    entry->name = pstrdup(name);
    entry->owner = null[kOwner] ? NULL : TextDatumGetCString(value[kOwner]);
    entry->usable_by = text_array_to_cstrings(value[kUsableBy], &entry->num_usable_by);
    entry->format = TextDatumGetCString(value[kFormat]);
    entry->strategy = TextDatumGetCString(value[kStrategy]);
    int columns_count;
    entry->features = text_array_to_cstrings(value[kFeatures], &entry->num_features);
    entry->columns = text_array_to_cstrings(value[kColumns], &columns_count);
    if (columns_count != entry->num_features)
        elog(ERROR, "pg_predict: catalog row of model \"%s\" is inconsistent (features/columns)", name);
    char* task = TextDatumGetCString(value[kTask]);
    entry->classification = strcmp(task, "classification") == 0;
    entry->transformer = strcmp(task, "transformer") == 0;
    if (!null[kClasses]) {
        ArrayType* array = DatumGetArrayTypeP(value[kClasses]);
        Datum* elements;
        bool* nulls;
        deconstruct_array(array, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &elements, &nulls,
                          &entry->num_classes);
        entry->classes = (double*)palloc(sizeof(double) * (entry->num_classes > 0 ? entry->num_classes : 1));
        for (int i = 0; i < entry->num_classes; i++) entry->classes[i] = DatumGetFloat8(elements[i]);
    }
    if (!null[kClassLabels]) {
        int count;
        entry->class_labels = text_array_to_cstrings(value[kClassLabels], &count);
        if (entry->classes != NULL && count != entry->num_classes)
            elog(ERROR, "pg_predict: catalog row of model \"%s\" is inconsistent (classes/class_labels)", name);
        entry->num_classes = count;
    } else if (entry->classes != NULL) {  // a catalog from before 0.4.0
        entry->class_labels = (char**)palloc(sizeof(char*) * Max(entry->num_classes, 1));
        for (int i = 0; i < entry->num_classes; i++) entry->class_labels[i] = numeric_label_text(entry->classes[i]);
    }
    entry->trees = DatumGetInt32(value[kTrees]);
    entry->depth = DatumGetInt32(value[kDepth]);
    entry->has_probabilities = DatumGetBool(value[kProbabilities]);
    entry->is_text = feature_flags(value[kTextFeatures], entry, "text features");
    entry->is_unused = feature_flags(value[kUnusedFeatures], entry, "unused features");
    entry->objective = TextDatumGetCString(value[kObjective]);
    entry->num_outputs = DatumGetInt32(value[kOutputs]);
    entry->version = DatumGetInt32(value[kVersion]);
    entry->layout = TextDatumGetCString(value[kLayout]);
    entry->text_summary = TextDatumGetCString(value[kText]);
    for (int f = 0; f < entry->num_features; f++) entry->has_text = entry->has_text || entry->is_text[f];
    return entry;
}

// Through SPI: the query serves every catalog version (0.1.0 on) and a Citus node's copy.
CatalogEntry* lookup_by_query(const CatalogTable& table, const char* pinned_name, const char* name,
                              const char* which, Snapshot snapshot) {
    MemoryContext caller = CurrentMemoryContext;
    char* query = psprintf(
        "SELECT id, name, %s, format, strategy, features, columns, task, classes, "
        "coalesce((summary OPERATOR(pg_catalog.->>) 'trees')::pg_catalog.int4, 0), "
        "coalesce((summary OPERATOR(pg_catalog.->>) 'depth')::pg_catalog.int4, 0), text_features, "
        "coalesce((summary OPERATOR(pg_catalog.->>) 'probabilities')::pg_catalog.bool, "
        "task OPERATOR(pg_catalog.=) 'classification'), unused_features, "
        "coalesce(summary OPERATOR(pg_catalog.->>) 'objective', ''), %s, %s, "
        "coalesce((summary OPERATOR(pg_catalog.->>) 'outputs')::pg_catalog.int4, 1), %s, "
        "coalesce(summary OPERATOR(pg_catalog.->>) 'layout', ''), "
        "coalesce(summary OPERATOR(pg_catalog.->>) 'text', '') "
        "FROM %s WHERE name OPERATOR(pg_catalog.=) $1%s",
        table.owner_name, table.usable_by, table.text_labels ? "class_labels" : "NULL::pg_catalog.text[]",
        table.versions ? "version" : "1", table.read_table, which);
    CatalogEntry* entry = NULL;
    read_catalog(table, query, TEXTOID, CStringGetTextDatum(name), [&] {
        if (SPI_processed == 0) return;
        Datum value[kLookupColumns];
        bool null[kLookupColumns];
        for (int c = 0; c < kLookupColumns; c++)
            value[c] = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, c + 1, &null[c]);
        MemoryContext spi = MemoryContextSwitchTo(caller);
        entry = entry_of_row(name, value, null);
        MemoryContextSwitchTo(spi);
    }, snapshot);
    return entry;
}

// summary ->> key as a C string (NULL for a missing key or JSON null), as the operator gives it.
char* summary_text(Jsonb* summary, const char* key) {
    JsonbValue k;
    k.type = jbvString;
    k.val.string.val = (char*)key;
    k.val.string.len = (int)strlen(key);
    JsonbValue* v = findJsonbValueFromContainer(&summary->root, JB_FOBJECT, &k);
    if (v == NULL) return NULL;
    switch (v->type) {
        case jbvNull: return NULL;
        case jbvString: return pnstrdup(v->val.string.val, v->val.string.len);
        case jbvNumeric: return DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v->val.numeric)));
        case jbvBool: return pstrdup(v->val.boolean ? "true" : "false");
        default: return JsonbToCString(NULL, &JsonbValueToJsonb(v)->root, 0);
    }
}

Datum summary_int(Jsonb* summary, const char* key, int32 otherwise) {
    char* text = summary_text(summary, key);
    return text == NULL ? Int32GetDatum(otherwise) : DirectFunctionCall1(int4in, CStringGetDatum(text));
}

Datum summary_string(Jsonb* summary, const char* key) {
    char* text = summary_text(summary, key);
    return CStringGetTextDatum(text == NULL ? "" : text);
}

// The same row read straight through the table's indexes, without SPI: the current catalog
// (0.9.0's columns) in this database's own table. What the query computes from the row's
// columns is computed here the same way (the summary's keys as ->> and the casts give them).
// The snapshot is the query's: the statement's, or `snapshot`.
// `xmin` (when not NULL) is set to the row's inserting transaction.
CatalogEntry* lookup_by_index(const CatalogTable& table, const char* name, int64 pinned_id, Snapshot snapshot,
                              TransactionId* xmin = NULL) {
    bool pushed_snapshot = snapshot != NULL || !ActiveSnapshotSet();
    if (pushed_snapshot) PushActiveSnapshot(snapshot != NULL ? snapshot : GetTransactionSnapshot());
    Relation rel = table_open(table.relation, AccessShareLock);
    TupleDesc desc = RelationGetDescr(rel);
    const CatalogColumns& a = table.columns;
    ScanKeyData key;
    if (pinned_id > 0) {
        ScanKeyInit(&key, a.id, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(pinned_id));
    } else {
        ScanKeyEntryInitialize(&key, 0, a.name, BTEqualStrategyNumber, InvalidOid,
                               TupleDescAttr(desc, a.name - 1)->attcollation, F_TEXTEQ, CStringGetTextDatum(name));
    }
    SysScanDesc scan = systable_beginscan(rel, pinned_id > 0 ? table.id_index : table.deployed_name_index, true,
                                          GetActiveSnapshot(), 1, &key);
    HeapTuple row = NULL;
    CatalogEntry* entry = NULL;
    for (HeapTuple tuple; row == NULL && entry == NULL && HeapTupleIsValid(tuple = systable_getnext(scan));) {
        bool null;
        Datum row_name = heap_getattr(tuple, a.name, desc, &null);
        Datum deployed = heap_getattr(tuple, a.deployed, desc, &null);
        char* row_text = TextDatumGetCString(row_name);
        if (strcmp(row_text, name) != 0 || (pinned_id <= 0 && !DatumGetBool(deployed))) continue;
        if (xmin != NULL) *xmin = HeapTupleHeaderGetXmin(tuple->t_data);
        entry = parsed_row_entry(table.relation, tuple, name);
        if (entry == NULL) row = heap_copytuple(tuple);
    }
    systable_endscan(scan);
    if (row != NULL) {
        Datum value[kLookupColumns];
        bool null[kLookupColumns];
        const AttrNumber plain[][2] = {{kId, a.id},       {kOwner, a.owner},         {kFormat, a.format},
                                       {kStrategy, a.strategy}, {kFeatures, a.features}, {kColumns, a.columns},
                                       {kTask, a.task},   {kClasses, a.classes},     {kTextFeatures, a.text_features},
                                       {kUnusedFeatures, a.unused_features},         {kUsableBy, a.usable_by},
                                       {kClassLabels, a.class_labels},               {kVersion, a.version}};
        for (const auto& c : plain) value[c[0]] = heap_getattr(row, c[1], desc, &null[c[0]]);
        bool summary_null;
        Jsonb* summary = DatumGetJsonbP(heap_getattr(row, a.summary, desc, &summary_null));
        if (summary_null) elog(ERROR, "pg_predict: catalog row of model \"%s\" has no summary", name);
        for (int c : {kTrees, kDepth, kProbabilities, kObjective, kOutputs, kLayout, kText}) null[c] = false;
        value[kTrees] = summary_int(summary, "trees", 0);
        value[kDepth] = summary_int(summary, "depth", 0);
        char* probabilities = summary_text(summary, "probabilities");
        value[kProbabilities] = probabilities != NULL
                                    ? DirectFunctionCall1(boolin, CStringGetDatum(probabilities))
                                    : BoolGetDatum(strcmp(TextDatumGetCString(value[kTask]), "classification") == 0);
        value[kObjective] = summary_string(summary, "objective");
        value[kOutputs] = summary_int(summary, "outputs", 1);
        value[kLayout] = summary_string(summary, "layout");
        value[kText] = summary_string(summary, "text");
        entry = entry_of_row(name, value, null);
        keep_parsed_row(table.relation, row, name, entry);
    }
    table_close(rel, NoLock);  // held to the end of the transaction, as the query's would be
    if (pushed_snapshot) PopActiveSnapshot();
    return entry;
}

// Through the kept lookups when one may be used (catalog/kept_entries.hpp), else through the
// index in the statement's snapshot. A lookup not kept yet is read once more with the newest
// snapshot to be kept: the statement's own may be older than the writers' generation says.
CatalogEntry* lookup_direct(const CatalogTable& table, const char* name, int64 pinned_id, Snapshot snapshot) {
    Snapshot reading = snapshot != NULL ? snapshot : ActiveSnapshotSet() ? GetActiveSnapshot() : GetTransactionSnapshot();
    if (CatalogEntry* kept = kept_lookup(table.relation, name, pinned_id, reading)) return kept;
    uint64 generation;
    if (may_keep_lookup(&generation)) {
        TransactionId xmin = InvalidTransactionId;
        CatalogEntry* newest = lookup_by_index(table, name, pinned_id, GetLatestSnapshot(), &xmin);
        if (newest != NULL) keep_lookup(generation, table.relation, name, pinned_id, xmin, newest);
        if (CatalogEntry* kept = kept_lookup(table.relation, name, pinned_id, reading)) return kept;
    }
    return lookup_by_index(table, name, pinned_id, reading);
}

}  // namespace

CatalogEntry* catalog_lookup(const char* pinned_name, bool missing_ok, Snapshot snapshot) {
    CatalogTable table = catalog_table();
    const char* name;
    const char* which = version_condition(table, pinned_name, &name);
    CatalogEntry* entry;
    if (table.direct_reads) {
        const char* mark = strchr(pinned_name, kVersionPinMark);
        entry = lookup_direct(table, name, mark != NULL ? strtoll(mark + 1, NULL, 10) : 0, snapshot);
    } else {
        entry = lookup_by_query(table, pinned_name, name, which, snapshot);
    }

    if (entry == NULL && name != pinned_name)
        ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                        errmsg("the version of model \"%s\" this statement was planned for was dropped", name),
                        errdetail("The coordinator planned the statement for version id %s.",
                                  strchr(pinned_name, kVersionPinMark) + 1),
                        errhint("Run the statement again: it will be planned for the deployed version.")));
    if (entry == NULL && !missing_ok)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                        errmsg("model \"%s\" does not exist", name),
                        errhint("SELECT name FROM models lists the models; create_model() adds one.")));
    return entry;
}

namespace {

// One column of row `id`, copied into the caller's memory context.
Datum read_column_by_id(int64 id, const char* column) {
    CatalogTable table = catalog_table();
    MemoryContext caller = CurrentMemoryContext;
    char* query = psprintf("SELECT %s FROM %s WHERE id OPERATOR(pg_catalog.=) $1", column,
                           table.read_table);
    Datum result = (Datum)0;
    read_catalog(table, query, INT8OID, Int64GetDatum(id), [&] {
        if (SPI_processed == 0) elog(ERROR, "pg_predict: model version %lld vanished from the catalog", (long long)id);
        bool isnull;
        Datum value = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
        if (isnull) elog(ERROR, "pg_predict: model version %lld has no %s", (long long)id, column);
        MemoryContext spi = MemoryContextSwitchTo(caller);
        result = PointerGetDatum(PG_DETOAST_DATUM_COPY(value));
        MemoryContextSwitchTo(spi);
    });
    return result;
}

}  // namespace

int64 catalog_latest_version(const char* pinned_name) {
    CatalogTable table = catalog_table();
    const char* name;
    const char* which = version_condition(table, pinned_name, &name);
    char* query = psprintf("SELECT id FROM %s WHERE name OPERATOR(pg_catalog.=) $1%s", table.read_table, which);
    int64 version = 0;
    read_catalog(
        table, query, TEXTOID, CStringGetTextDatum(name),
        [&] {
            bool isnull;
            if (SPI_processed > 0)
                version = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
        },
        GetLatestSnapshot());
    return version;
}

CatalogEntry* catalog_lookup_for_planning(const char* name) {
    return catalog_lookup(name, false, GetTransactionSnapshot());
}

bytea* catalog_program(int64 id) { return DatumGetByteaPP(read_column_by_id(id, "program")); }

char* catalog_spec(int64 id) {
    return TextDatumGetCString(read_column_by_id(id, "spec::pg_catalog.text"));
}

namespace {

// A jsonb column of row `id` as JSON text in the caller's context; NULL when the row or the
// value is missing.
char* optional_json_by_id(const CatalogTable& table, int64 id, const char* column) {
    MemoryContext caller = CurrentMemoryContext;
    char* query = psprintf("SELECT %s::pg_catalog.text FROM %s WHERE id OPERATOR(pg_catalog.=) $1", column,
                           table.read_table);
    char* result = NULL;
    read_catalog(table, query, INT8OID, Int64GetDatum(id), [&] {
        if (SPI_processed == 0) return;
        bool isnull;
        Datum value = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
        if (isnull) return;
        MemoryContext spi = MemoryContextSwitchTo(caller);
        result = TextDatumGetCString(value);
        MemoryContextSwitchTo(spi);
    });
    return result;
}

}  // namespace

char* catalog_cascade(int64 id) {
    CatalogTable table = catalog_table();
    return table.cascades ? optional_json_by_id(table, id, "cascade") : NULL;
}

void notice_cascade_not_carried(const char* name, const CatalogEntry* before, int version) {
    if (before == NULL || before->version == version) return;
    char* cascade = catalog_cascade(before->id);
    if (cascade == NULL) return;
    pfree(cascade);
    ereport(NOTICE, (errmsg("version %d of model \"%s\" has no cascade; version %d, deployed before, had one",
                            version, name, before->version),
                     errhint("create_cascade('%s', ...) builds one for the new version; rollback_model brings version "
                             "%d back with its cascade.", name, before->version)));
}

int64 catalog_cascade_program_id(int64 id) {
    CatalogTable table = catalog_table();
    if (!table.cascades) return 0;
    char* query = psprintf("SELECT (cascade OPERATOR(pg_catalog.->>) 'program_id')::pg_catalog.int8 FROM %s "
                           "WHERE id OPERATOR(pg_catalog.=) $1",
                           table.read_table);
    int64 result = 0;
    read_catalog(table, query, INT8OID, Int64GetDatum(id), [&] {
        if (SPI_processed == 0) return;
        bool isnull;
        Datum value = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
        if (!isnull) result = DatumGetInt64(value);
    });
    return result;
}

char* catalog_text_inputs(int64 id) {
    return TextDatumGetCString(read_column_by_id(id, "text_inputs::pg_catalog.text"));
}

namespace {

// Runs one catalog statement with text argument $1 (the name) and an optional int4 $2, inside
// an SPI connection made by the caller; returns SPI_processed.
// $3, when given, is a timestamp (volatile functions such as clock_timestamp() are evaluated
// here, not in the statement: Citus refuses them in an UPDATE of a reference table).
uint64 run_on_model(const char* statement, const char* name, int number = 0, bool has_number = false,
                    const TimestampTz* at = NULL) {
    Oid types[3] = {TEXTOID, INT4OID, TIMESTAMPTZOID};
    Datum values[3] = {CStringGetTextDatum(name), Int32GetDatum(number), TimestampTzGetDatum(at ? *at : 0)};
    int rc = SPI_execute_with_args(statement, at ? 3 : has_number ? 2 : 1, types, values, NULL, false, 0);
    if (rc < 0) elog(ERROR, "pg_predict: writing the catalog failed: %s", SPI_result_code_string(rc));
    return SPI_processed;
}

// The time of a new deployment of `name`, whose rows the caller has locked: now, or just after
// the name's newest deployment if the clock went back, so that the history stays in order.
TimestampTz next_deployment_time(const CatalogTable& table, const char* name) {
    TimestampTz now = GetCurrentTimestamp();
    if (!table.deploy_history) return now;
    run_on_model(psprintf("SELECT pg_catalog.max(t) FROM %s, pg_catalog.unnest(deployments) AS t "
                          "WHERE name OPERATOR(pg_catalog.=) $1",
                          table.qualified_table),
                 name);
    bool isnull;
    Datum newest = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
    return !isnull && DatumGetTimestampTz(newest) >= now ? DatumGetTimestampTz(newest) + 1 : now;
}

// Runs a query with $1 = name in the caller's SPI connection; it must return one row (SPI_tuptable).
void select_one_row(const char* query, const char* name) {
    Oid types[1] = {TEXTOID};
    Datum values[1] = {CStringGetTextDatum(name)};
    int rc = SPI_execute_with_args(query, 1, types, values, NULL, false, 1);
    if (rc != SPI_OK_SELECT || SPI_processed != 1)
        elog(ERROR, "pg_predict: reading the catalog failed: %s", SPI_result_code_string(rc));
}

// The number and the deployment of a new version of `name`, whose rows the caller has locked.
// Read with a new snapshot (SPI takes one per statement): a writer that held the lock first
// and committed has added its version by now.
StoredVersion next_version(const CatalogTable& table, const char* name, const char* metrics_json,
                           DeployChoice deploy, MetricsBetter better) {
    char* query = psprintf(
        "SELECT pg_catalog.max(version), (SELECT d.metrics::pg_catalog.text FROM %s d "
        "WHERE d.name OPERATOR(pg_catalog.=) $1 AND d.deployed) FROM %s WHERE name OPERATOR(pg_catalog.=) $1",
        table.qualified_table, table.qualified_table);
    select_one_row(query, name);
    bool isnull;
    StoredVersion stored;
    stored.version = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)) + 1;
    char* deployed_metrics = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
    switch (deploy) {
        case DeployChoice::always: stored.deployed = true; break;
        case DeployChoice::never: stored.deployed = false; break;
        case DeployChoice::best:
            if (better == NULL) elog(ERROR, "pg_predict: deploy 'best' needs a metrics comparison");
            stored.deployed = metrics_json != NULL &&
                              (deployed_metrics == NULL || better(deployed_metrics, metrics_json));
            break;
    }
    return stored;
}

// The owner and usable_by of a name's versions (every version has the same ones), copied out
// of SPI's memory into the caller's context.
void read_owner_and_grants(const CatalogTable& table, const char* name, Datum* owner, char* owner_null,
                           Datum* usable_by, char* usable_by_null) {
    char* query = psprintf("SELECT owner, usable_by FROM %s WHERE name OPERATOR(pg_catalog.=) $1 LIMIT 1",
                           table.qualified_table);
    select_one_row(query, name);
    bool isnull;
    Datum value = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
    *owner_null = isnull ? 'n' : ' ';
    *owner = isnull ? (Datum)0 : PointerGetDatum(SPI_datumTransfer(value, false, -1));
    value = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
    *usable_by_null = isnull ? 'n' : ' ';
    *usable_by = isnull ? (Datum)0 : PointerGetDatum(SPI_datumTransfer(value, false, -1));
}

}  // namespace

StoredVersion catalog_store(const char* name, const runtime::BuiltModel* built, Datum source, ArtifactKind kind,
                            Datum options_jsonb, bool replace, const char* metrics_json, DeployChoice deploy,
                            MetricsBetter better) {
    CatalogTable table = catalog_table();
    Oid caller = GetUserId();
    if (kind != ArtifactKind::Json && !table.typed_sources)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("pg_predict's catalog in this database predates version 0.3.0 and "
                               "keeps jsonb sources only"),
                        errhint("Run ALTER EXTENSION pg_predict UPDATE.")));

    // $1 name, $2 format, $3 source (jsonb), $4 spec, $5 program, $6 features, $7 columns,
    // $8 task, $9 classes, $10 strategy, $11 options, $12 summary, $13 owner (insert only),
    // $14 text_features, $15 text_inputs, $16 unused_features; 0.3.0: $17 source_text,
    // $18 source_bytes (the two of the three sources not given are NULL); 0.4.0: $19 class_labels;
    // 0.6.0: $20 version, $21 deployed, $22 metrics ($13 is created_by too), $23 owner and
    // $24 usable_by of the name's other versions (a new version of an existing name), $25 the
    // time of its deployment (when $21)
    Datum values[25];
    Oid types[25] = {TEXTOID,      TEXTOID,      JSONBOID, JSONBOID,       BYTEAOID,
                     TEXTARRAYOID, TEXTARRAYOID, TEXTOID,  FLOAT8ARRAYOID, TEXTOID,
                     JSONBOID,     JSONBOID,     TEXTOID,  INT4ARRAYOID,   JSONBOID,
                     INT4ARRAYOID, TEXTOID,      BYTEAOID, TEXTARRAYOID,   INT4OID,
                     BOOLOID,      JSONBOID,     TEXTOID,  TEXTARRAYOID,   TIMESTAMPTZOID};
    char nulls[25];
    memset(nulls, ' ', sizeof(nulls));
    values[0] = CStringGetTextDatum(name);
    values[1] = CStringGetTextDatum(built->format.c_str());
    const int source_arg = kind == ArtifactKind::Json ? 2 : kind == ArtifactKind::Text ? 16 : 17;
    for (int arg : {2, 16, 17}) {
        values[arg] = arg == source_arg ? source : (Datum)0;
        nulls[arg] = arg == source_arg ? ' ' : 'n';
    }
    values[3] = cstring_to_jsonb(built->spec_json.c_str());
    values[4] = bytes_to_bytea(built->program);
    values[5] = cstrings_to_text_array(built->features);
    values[6] = cstrings_to_text_array(built->columns);
    values[7] = CStringGetTextDatum(built->task.c_str());
    if (!built->class_labels.empty() && !table.text_labels)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("pg_predict's catalog in this database predates version 0.4.0 and "
                               "keeps numeric class labels only"),
                        errhint("Run ALTER EXTENSION pg_predict UPDATE.")));
    // classes: the numeric labels (NULL for text labels or a regression); class_labels: every
    // classifier's labels as text.
    values[8] = (Datum)0;
    nulls[8] = 'n';
    values[18] = (Datum)0;
    nulls[18] = 'n';
    if (!built->class_labels.empty()) {
        values[18] = cstrings_to_text_array(built->class_labels);
        nulls[18] = ' ';
    } else if (!built->classes.empty()) {
        values[8] = doubles_to_float8_array(built->classes);
        nulls[8] = ' ';
        values[18] = numeric_labels_to_text_array(built->classes);
        nulls[18] = ' ';
    }
    values[9] = CStringGetTextDatum(built->strategy.c_str());
    values[10] = options_jsonb;
    values[11] = cstring_to_jsonb(built->summary_json.c_str());
    values[12] = CStringGetTextDatum(GetUserNameFromId(caller, false));
    values[13] = ints_to_int4_array(built->text_features);
    values[14] = cstring_to_jsonb(built->text_inputs_json.c_str());
    values[15] = ints_to_int4_array(built->unused_features);
    values[21] = metrics_json != NULL ? cstring_to_jsonb(metrics_json) : (Datum)0;
    nulls[21] = metrics_json != NULL ? ' ' : 'n';

    OwnerSwitch saved = become_catalog_owner(table.owner);
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "pg_predict: SPI_connect failed");
    char* existing_owner;
    char* statement;
    StoredVersion stored = {1, true};
    bool exists = lock_model_row(table, name, &existing_owner);
    if (exists) {
        if (!replace && !table.versions)
            ereport(ERROR, (errcode(ERRCODE_DUPLICATE_OBJECT),
                            errmsg("model \"%s\" already exists", name),
                            errhint("Pass options => '{\"replace\": true}' to replace it, or drop_model() it first.")));
        restore_user(saved);  // the ownership check is about the caller, not the table owner
        check_model_owner(name, existing_owner);
        saved = become_catalog_owner(table.owner);
    }
    if (table.versions) {
        // A new row; an existing name's owner and grants carry over to it.
        if (exists) stored = next_version(table, name, metrics_json, deploy, better);
        if (exists && stored.deployed)
            run_on_model(psprintf("UPDATE %s SET deployed = false WHERE name OPERATOR(pg_catalog.=) $1 AND deployed",
                                  table.qualified_table), name);
        // The owner and the grants as parameters, not subqueries: Citus takes no subquery in
        // an INSERT into a reference table.
        values[22] = values[23] = (Datum)0;
        nulls[22] = nulls[23] = 'n';
        if (exists) read_owner_and_grants(table, name, &values[22], &nulls[22], &values[23], &nulls[23]);
        values[24] = TimestampTzGetDatum(next_deployment_time(table, name));
        // 0.8.0: a deployed new version starts the name's next deployment in the history.
        statement = psprintf(
            "INSERT INTO %s (id, name, format, source, spec, program, features, columns, task, "
            "classes, strategy, options, summary, owner, usable_by, text_features, text_inputs, unused_features, "
            "source_text, source_bytes, class_labels, version, deployed, deployed_at, created_by, metrics%s) "
            "VALUES (pg_catalog.nextval('%s'), $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, "
            "%s, %s, $14, $15, $16, $17, $18, $19, $20, $21, CASE WHEN $21 THEN $25 END, $13, $22%s)",
            table.qualified_table, table.deploy_history ? ", deployments" : "", table.qualified_sequence,
            exists ? "$23" : table.owner_value, exists ? "$24" : "'{}'::pg_catalog.text[]",
            table.deploy_history ? ", CASE WHEN $21 THEN ARRAY[$25] ELSE '{}' END" : "");
        values[19] = Int32GetDatum(stored.version);
        values[20] = BoolGetDatum(stored.deployed);
    } else if (exists) {
        // A replace keeps the row (and its owner) but takes a new id: backends that cached
        // the old program see a different key and load the new one.
        statement = psprintf(
            "UPDATE %s SET id = pg_catalog.nextval('%s'), format = $2, source = $3, spec = $4, "
            "program = $5, features = $6, columns = $7, task = $8, classes = $9, strategy = $10, "
            "options = $11, summary = $12, text_features = $14, text_inputs = $15, unused_features = $16, "
            "%s%screated_at = pg_catalog.now() "
            "WHERE name OPERATOR(pg_catalog.=) $1",
            table.qualified_table, table.qualified_sequence,
            table.typed_sources ? "source_text = $17, source_bytes = $18, " : "",
            table.text_labels ? "class_labels = $19, " : "");
    } else {
        statement = psprintf(
            "INSERT INTO %s (id, name, format, source, spec, program, features, columns, task, "
            "classes, strategy, options, summary, owner, text_features, text_inputs, unused_features%s%s) "
            "VALUES (pg_catalog.nextval('%s'), $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, "
            "%s, $14, $15, $16%s%s)",
            table.qualified_table, table.typed_sources ? ", source_text, source_bytes" : "",
            table.text_labels ? ", class_labels" : "", table.qualified_sequence, table.owner_value,
            table.typed_sources ? ", $17, $18" : "", table.text_labels ? ", $19" : "");
    }
    const int nargs = table.versions ? 25 : table.text_labels ? 19 : table.typed_sources ? 18 : 16;
#ifdef USE_LZ4
    // The row's big values (a 100k-tree model's source, spec and program: ~130 MB) are
    // compressed as they are toasted, in PostgreSQL code that no cancel can enter: pglz took
    // 2.5 s of such a create_model, lz4 takes a tenth of that. Only for this statement, and a
    // column with a COMPRESSION of its own keeps it.
    const int guc_level = NewGUCNestLevel();
    set_config_option("default_toast_compression", "lz4", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0,
                      false);
#endif
    int rc = SPI_execute_with_args(statement, nargs, types, values, nulls, false, 0);
#ifdef USE_LZ4
    AtEOXact_GUC(true, guc_level);
#endif
    if (rc != SPI_OK_INSERT && rc != SPI_OK_UPDATE)
        elog(ERROR, "pg_predict: writing the catalog failed: %s", SPI_result_code_string(rc));
    if (table.versions && exists && keep_versions > 0)
        run_on_model(psprintf("DELETE FROM %s WHERE name OPERATOR(pg_catalog.=) $1 AND NOT deployed "
                              "AND version OPERATOR(pg_catalog.<>) ALL (ARRAY(SELECT k.version FROM %s k "
                              "WHERE k.name OPERATOR(pg_catalog.=) $1 ORDER BY k.version DESC LIMIT $2))",
                              table.qualified_table, table.qualified_table),
                     name, keep_versions, true);
    SPI_finish();
    restore_user(saved);
    CacheInvalidateRelcacheByRelid(table.relation);
    return stored;
}

namespace {

// Connects SPI as the catalog's owner and locks the row of `name`, which must exist and belong
// to the caller (or the caller be a superuser): what drop and the updates of one model share.
// Returns the caller's identity, for restore_user after SPI_finish.
OwnerSwitch lock_owned_model(const CatalogTable& table, const char* name) {
    OwnerSwitch saved = become_catalog_owner(table.owner);
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "pg_predict: SPI_connect failed");
    char* owner;
    if (!lock_model_row(table, name, &owner))
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT), errmsg("model \"%s\" does not exist", name)));
    restore_user(saved);  // the ownership check is about the caller, not the table owner
    check_model_owner(name, owner);
    return become_catalog_owner(table.owner);
}

}  // namespace

int catalog_delete(const char* name) {
    CatalogTable table = catalog_table();
    OwnerSwitch saved = lock_owned_model(table, name);
    char* statement = psprintf("DELETE FROM %s WHERE name OPERATOR(pg_catalog.=) $1", table.qualified_table);
    Oid types[1] = {TEXTOID};
    Datum values[1] = {CStringGetTextDatum(name)};
    int rc = SPI_execute_with_args(statement, 1, types, values, NULL, false, 0);
    if (rc != SPI_OK_DELETE) elog(ERROR, "pg_predict: writing the catalog failed: %s", SPI_result_code_string(rc));
    int removed = (int)SPI_processed;
    SPI_finish();
    restore_user(saved);
    CacheInvalidateRelcacheByRelid(table.relation);
    return removed;
}

int catalog_set_cascade(const char* name, int version, const char* cascade_json) {
    CatalogTable table = catalog_table();
    require_privileges(table);
    if (!table.cascades)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("pg_predict's catalog in this database has no cascades (before 0.9.0)"),
                        errhint("Run ALTER EXTENSION pg_predict UPDATE.")));
    OwnerSwitch saved = lock_owned_model(table, name);
    // The cascade's own program id, from the catalog's sequence: read first, as Citus refuses a
    // volatile function in an UPDATE of a reference table.
    int64 program_id = 0;
    if (cascade_json != NULL) {
        int rc = SPI_execute(psprintf("SELECT pg_catalog.nextval('%s')", table.qualified_sequence), false, 1);
        if (rc != SPI_OK_SELECT || SPI_processed != 1)
            elog(ERROR, "pg_predict: reading the catalog's sequence failed: %s", SPI_result_code_string(rc));
        bool isnull;
        program_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
    }
    // The deployed version's row, if it is still `version` (0: any): whether it had a cascade.
    char* statement = psprintf(
        "WITH old AS (SELECT id, cascade IS NOT NULL AS had FROM %s WHERE name OPERATOR(pg_catalog.=) $1 "
        "AND deployed AND ($3 OPERATOR(pg_catalog.=) 0 OR version OPERATOR(pg_catalog.=) $3)) "
        "UPDATE %s c SET cascade = $2::pg_catalog.jsonb OPERATOR(pg_catalog.||) "
        "pg_catalog.jsonb_build_object('program_id', $4::pg_catalog.int8) "
        "FROM old WHERE c.id OPERATOR(pg_catalog.=) old.id RETURNING old.had",
        table.qualified_table, table.qualified_table);
    Oid types[4] = {TEXTOID, TEXTOID, INT4OID, INT8OID};
    Datum values[4] = {CStringGetTextDatum(name), cascade_json ? CStringGetTextDatum(cascade_json) : (Datum)0,
                       Int32GetDatum(version), Int64GetDatum(program_id)};
    const char nulls[4] = {' ', cascade_json ? ' ' : 'n', ' ', ' '};
    int rc = SPI_execute_with_args(statement, 4, types, values, nulls, false, 0);
    if (rc != SPI_OK_UPDATE_RETURNING)
        elog(ERROR, "pg_predict: writing the catalog failed: %s", SPI_result_code_string(rc));
    int result = -1;
    if (SPI_processed == 1) {
        bool isnull;
        result = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)) ? 1 : 0;
    }
    SPI_finish();
    restore_user(saved);
    CacheInvalidateRelcacheByRelid(table.relation);
    return result;
}

bool catalog_has_versions() { return catalog_table().versions; }
bool catalog_has_profiles() { return catalog_table().profiles; }
namespace {

void require_profiles(const CatalogTable& table) {
    require_privileges(table);
    if (!table.profiles)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("pg_predict's catalog in this database has no profiles (before 0.9.0)"),
                        errhint("Run ALTER EXTENSION pg_predict UPDATE.")));
}

}  // namespace

int64 catalog_version_id(const char* name, int version) {
    CatalogTable table = catalog_table();
    require_profiles(table);  // 0.9.0, which has versions
    char* query = psprintf("SELECT id FROM %s WHERE name OPERATOR(pg_catalog.=) $1 AND version OPERATOR(pg_catalog.=) %d",
                           table.read_table, version);
    int64 id = 0;
    read_catalog(
        table, query, TEXTOID, CStringGetTextDatum(name),
        [&] {
            bool isnull;
            if (SPI_processed > 0) id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
        },
        GetLatestSnapshot());  // a version this statement stored (train()) too
    if (id == 0)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT), errmsg("model \"%s\" has no version %d", name, version),
                        errhint("SELECT version FROM model_versions WHERE name = '%s' lists its versions.", name)));
    return id;
}

char* catalog_profile(int64 id) {
    CatalogTable table = catalog_table();
    require_profiles(table);
    return optional_json_by_id(table, id, "profile");
}

char* catalog_set_profile(const char* name, int64 id, int version, const char* profile_json, const char* query) {
    CatalogTable table = catalog_table();
    require_profiles(table);
    MemoryContext caller = CurrentMemoryContext;
    OwnerSwitch saved = lock_owned_model(table, name);
    // Kept with what it was taken from: the version, the query and the time.
    char* statement = psprintf(
        "UPDATE %s SET profile = $2::pg_catalog.jsonb OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object("
        "'version', $5::pg_catalog.int4, 'query', $4::pg_catalog.text, 'taken_at', pg_catalog.now()), "
        "profiled_at = pg_catalog.now() "
        "WHERE name OPERATOR(pg_catalog.=) $1 AND id OPERATOR(pg_catalog.=) $3 RETURNING profile::pg_catalog.text",
        table.qualified_table);
    // No column in the expressions: Citus refuses a stable function over columns in an UPDATE.
    Oid types[5] = {TEXTOID, TEXTOID, INT8OID, TEXTOID, INT4OID};
    Datum values[5] = {CStringGetTextDatum(name), CStringGetTextDatum(profile_json), Int64GetDatum(id),
                       CStringGetTextDatum(query), Int32GetDatum(version)};
    int rc = SPI_execute_with_args(statement, 5, types, values, NULL, false, 0);
    if (rc != SPI_OK_UPDATE_RETURNING)
        elog(ERROR, "pg_predict: writing the catalog failed: %s", SPI_result_code_string(rc));
    char* stored = NULL;
    if (SPI_processed == 1) {
        char* text = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
        stored = MemoryContextStrdup(caller, text);
    }
    SPI_finish();
    restore_user(saved);
    CacheInvalidateRelcacheByRelid(table.relation);
    return stored;
}


namespace {

void require_versions(const CatalogTable& table) {
    if (!table.versions)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("pg_predict's catalog in this database predates version 0.6.0 and "
                               "keeps one version per model"),
                        errhint("Run ALTER EXTENSION pg_predict UPDATE.")));
}

// The deployed version of `name`, whose rows the caller has locked.
int deployed_version(const CatalogTable& table, const char* name) {
    char* query = psprintf("SELECT version FROM %s WHERE name OPERATOR(pg_catalog.=) $1 AND deployed",
                           table.qualified_table);
    run_on_model(query, name);
    if (SPI_processed != 1) elog(ERROR, "pg_predict: model \"%s\" has no deployed version", name);
    bool isnull;
    return DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

void require_version(const CatalogTable& table, const char* name, int version) {
    char* query = psprintf("SELECT FROM %s WHERE name OPERATOR(pg_catalog.=) $1 AND version OPERATOR(pg_catalog.=) $2",
                           table.qualified_table);
    if (run_on_model(query, name, version, true) == 0)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                        errmsg("model \"%s\" has no version %d", name, version),
                        errhint("SELECT version FROM model_versions WHERE name = '%s' lists its versions.", name)));
}

// Makes `version` (which exists) the deployed version; the rows are locked by the caller.
// `record`: a deployment the history keeps (deploy_model), not the undoing of one (rollback).
void switch_deployed(const CatalogTable& table, const char* name, int version, bool record) {
    TimestampTz at = next_deployment_time(table, name);
    run_on_model(psprintf("UPDATE %s SET deployed = false WHERE name OPERATOR(pg_catalog.=) $1 AND deployed "
                          "AND version OPERATOR(pg_catalog.<>) $2", table.qualified_table),
                 name, version, true);
    run_on_model(psprintf("UPDATE %s SET deployed = true, deployed_at = $3%s "
                          "WHERE name OPERATOR(pg_catalog.=) $1 AND version OPERATOR(pg_catalog.=) $2",
                          table.qualified_table,
                          record && table.deploy_history ? ", deployments = deployments OPERATOR(pg_catalog.||) $3" : ""),
                 name, version, true, &at);
}

// Before 0.8.0 there is no history: the newest older version that was ever deployed.
int version_before_without_history(const CatalogTable& table, const char* name, int current) {
    char* query = psprintf(
        "SELECT version FROM %s WHERE name OPERATOR(pg_catalog.=) $1 AND version OPERATOR(pg_catalog.<) $2 "
        "AND deployed_at IS NOT NULL ORDER BY version DESC LIMIT 1",
        table.qualified_table);
    if (run_on_model(query, name, current, true) == 0)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("model \"%s\" has no earlier version to roll back to", name),
                        errdetail("Version %d is deployed, and no older version of it was ever deployed.", current),
                        errhint("deploy_model('%s', version) deploys any version.", name)));
    bool isnull;
    return DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

// Undoes the newest deployment of `name` in its history: returns the version deployed before
// it (the newest deployment of another version that still exists), and removes from the
// deployed version's history what came after that one.
int pop_deployment(const CatalogTable& table, const char* name, int current) {
    char* query = psprintf(
        "SELECT version, t FROM %s, pg_catalog.unnest(deployments) AS t WHERE name OPERATOR(pg_catalog.=) $1 "
        "AND version OPERATOR(pg_catalog.<>) $2 ORDER BY t DESC LIMIT 1",
        table.qualified_table);
    if (run_on_model(query, name, current, true) == 0)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("model \"%s\" has no earlier deployment to roll back to", name),
                        errdetail("Version %d is deployed, and no other version of the model that still exists "
                                  "was deployed before it.", current),
                        errhint("deploy_model('%s', version) deploys any version; model_deployments shows the "
                                "history.", name)));
    bool isnull;
    int previous = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
    TimestampTz before = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
    // The deployed version keeps its deployments up to `before`: counted first, then trimmed
    // (Citus takes no subquery in an UPDATE of a reference table, and its deparser crashes on
    // an array slice there).
    run_on_model(psprintf("SELECT pg_catalog.count(*)::pg_catalog.int4 FROM %s, pg_catalog.unnest(deployments) AS t "
                          "WHERE name OPERATOR(pg_catalog.=) $1 AND version OPERATOR(pg_catalog.=) $2 "
                          "AND t OPERATOR(pg_catalog.<=) $3",
                          table.qualified_table),
                 name, current, true, &before);
    int kept = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
    run_on_model(psprintf("UPDATE %s SET deployments = pg_catalog.trim_array(deployments, "
                          "pg_catalog.cardinality(deployments) OPERATOR(pg_catalog.-) $2) "
                          "WHERE name OPERATOR(pg_catalog.=) $1 AND deployed",
                          table.qualified_table),
                 name, kept, true);
    return previous;
}

}  // namespace

void catalog_deploy(const char* name, int version) {
    CatalogTable table = catalog_table();
    require_versions(table);
    OwnerSwitch saved = lock_owned_model(table, name);
    require_version(table, name, version);
    // Deploying the deployed version changes nothing, and adds nothing to the history.
    if (deployed_version(table, name) != version) switch_deployed(table, name, version, true);
    SPI_finish();
    restore_user(saved);
    CacheInvalidateRelcacheByRelid(table.relation);
}

int catalog_rollback(const char* name) {
    CatalogTable table = catalog_table();
    require_versions(table);
    OwnerSwitch saved = lock_owned_model(table, name);
    int current = deployed_version(table, name);
    int previous = table.deploy_history ? pop_deployment(table, name, current)
                                        : version_before_without_history(table, name, current);
    switch_deployed(table, name, previous, false);
    SPI_finish();
    restore_user(saved);
    CacheInvalidateRelcacheByRelid(table.relation);
    return previous;
}

int catalog_delete_version(const char* name, int version) {
    CatalogTable table = catalog_table();
    require_versions(table);
    OwnerSwitch saved = lock_owned_model(table, name);
    require_version(table, name, version);
    int current = deployed_version(table, name);
    uint64 versions = run_on_model(psprintf("SELECT FROM %s WHERE name OPERATOR(pg_catalog.=) $1",
                                            table.qualified_table), name);
    if (version == current && versions > 1)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_IN_USE),
                        errmsg("version %d of model \"%s\" is deployed", version, name),
                        errhint("Deploy another version first (deploy_model, rollback_model), or drop_model('%s') "
                                "to drop every version.", name)));
    run_on_model(psprintf("DELETE FROM %s WHERE name OPERATOR(pg_catalog.=) $1 AND version OPERATOR(pg_catalog.=) $2",
                          table.qualified_table),
                 name, version, true);
    SPI_finish();
    restore_user(saved);
    CacheInvalidateRelcacheByRelid(table.relation);
    return (int)versions - 1;
}

void catalog_update_model(const char* name, const char* set_clause, const char* argument) {
    CatalogTable table = catalog_table();
    require_privileges(table);
    OwnerSwitch saved = lock_owned_model(table, name);
    char* statement = psprintf("UPDATE %s SET %s WHERE name OPERATOR(pg_catalog.=) $1",
                               table.qualified_table, set_clause);
    Oid types[2] = {TEXTOID, TEXTOID};
    Datum values[2] = {CStringGetTextDatum(name), CStringGetTextDatum(argument)};
    int rc = SPI_execute_with_args(statement, 2, types, values, NULL, false, 0);
    if (rc != SPI_OK_UPDATE) elog(ERROR, "pg_predict: writing the catalog failed: %s", SPI_result_code_string(rc));
    SPI_finish();
    restore_user(saved);
    CacheInvalidateRelcacheByRelid(table.relation);
}

void catalog_role_references(const char* role, char** owned, char** granted) {
    CatalogTable table = catalog_table();
    MemoryContext caller = CurrentMemoryContext;
    *owned = *granted = NULL;
    if (table.legacy) return;  // 0.1.0 did not track roles; ALTER EXTENSION ... UPDATE does
    char* query = psprintf(
        "SELECT pg_catalog.string_agg(name, ', ' ORDER BY name) "
        "         FILTER (WHERE owner OPERATOR(pg_catalog.=) $1), "
        "       pg_catalog.string_agg(name, ', ' ORDER BY name) "
        "         FILTER (WHERE $1 OPERATOR(pg_catalog.=) ANY (usable_by)) "
        "FROM %s",
        table.qualified_table);
    read_catalog(table, query, TEXTOID, CStringGetTextDatum(role), [&] {
        char* o = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
        char* g = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
        *owned = o == NULL ? NULL : MemoryContextStrdup(caller, o);
        *granted = g == NULL ? NULL : MemoryContextStrdup(caller, g);
    });
}

namespace {

// One statement on the catalog table ("%s" stands for it) with two text arguments, as the
// table's owner. No per-model ownership check: the utility command it follows made its own.
void write_catalog_for_role(const char* statement_format, const char* first, const char* second) {
    CatalogTable table = catalog_table();
    if (table.legacy) return;  // as in 0.1.0 until ALTER EXTENSION ... UPDATE
    // Citus runs the role command on every node; the coordinator's change reaches every copy.
    if (table.read_table != table.qualified_table && on_citus_worker()) return;
    OwnerSwitch saved = become_catalog_owner(table.owner);
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "pg_predict: SPI_connect failed");
    char* statement = psprintf(statement_format, table.qualified_table);
    Oid types[2] = {TEXTOID, TEXTOID};
    Datum values[2] = {CStringGetTextDatum(first), CStringGetTextDatum(second != NULL ? second : "")};
    int rc = SPI_execute_with_args(statement, second != NULL ? 2 : 1, types, values, NULL, false, 0);
    if (rc < 0) elog(ERROR, "pg_predict: writing the catalog failed: %s", SPI_result_code_string(rc));
    uint64 changed = SPI_processed;
    SPI_finish();
    restore_user(saved);
    if (changed > 0) CacheInvalidateRelcacheByRelid(table.relation);
}

}  // namespace

void catalog_reassign_owner(const char* old_role, const char* new_role) {
    write_catalog_for_role("UPDATE %s SET owner = $2 WHERE owner OPERATOR(pg_catalog.=) $1",
                           old_role, new_role);
}

void catalog_drop_owned(const char* role) {
    write_catalog_for_role("DELETE FROM %s WHERE owner OPERATOR(pg_catalog.=) $1", role, NULL);
    write_catalog_for_role("UPDATE %s SET usable_by = pg_catalog.array_remove(usable_by, $1) "
                           "WHERE $1 OPERATOR(pg_catalog.=) ANY (usable_by)",
                           role, NULL);
}

void catalog_rename_role(const char* old_name, const char* new_name) {
    write_catalog_for_role("UPDATE %s SET owner = $2 WHERE owner OPERATOR(pg_catalog.=) $1",
                           old_name, new_name);
    write_catalog_for_role("UPDATE %s SET usable_by = pg_catalog.array_replace(usable_by, $1, $2) "
                           "WHERE $1 OPERATOR(pg_catalog.=) ANY (usable_by)",
                           old_name, new_name);
}

}  // namespace pg_predict::pg
