// The model catalog: an ordinary table in the extension's schema, so it is transactional,
// MVCC-visible, replicated and dumped. Ordinary roles have no privileges on it; the functions
// here read and write it as the table's owner and check model ownership themselves.
#pragma once

#include "pg_predict/common/artifact.hpp"
#include "postgres_headers.hpp"

namespace pg_predict::runtime { struct BuiltModel; }

namespace pg_predict::pg {

// One catalog row without the heavy columns (source, spec, program). Allocated in the
// memory context that was current when catalog_lookup was called.
struct CatalogEntry {
    int64 id;             // a new id for every create or replace: the program cache key
    char* name;
    char* owner;          // the owner's role name; NULL when it has none (see check_model_owner)
    char** usable_by;     // roles granted its use by name, "public" for every role
    int num_usable_by;
    char* format;
    char* strategy;
    int num_features;
    char** features;      // the model's feature names
    char** columns;       // the column each feature reads ("" when the model has no names)
    bool classification;
    bool transformer;     // task "transformer": a pipeline that ends in a featurizer (transform())
    int num_classes;
    double* classes;      // the numeric labels predict() returns; NULL when the labels are text
    char** class_labels;  // num_classes labels as text: what predict_label() returns
    int trees;            // from the summary, for EXPLAIN
    int depth;
    char* text_summary;   // from the summary: its text vectorizers, for EXPLAIN ("" when none)
    char* objective;      // from the summary: the XGBoost objective or the estimator's class
    bool* is_text;        // per feature: read as text and dictionary-encoded
    bool has_text;
    bool has_probabilities;  // a classifier whose outputs are probabilities (predict_proba)
    bool* is_unused;      // per feature: the model never reads it, so its column is not fetched
    int num_outputs;      // values predict gives per row (summary's outputs; 1 for models from before 0.5.0)
    int version;          // the deployed version's number (1 in a catalog from before 0.6.0)
    char* layout;         // the native kernel's layout ("perfect", "bitvector", "generic"; "" unknown)
};

// The catalog table's OID: plans that use a model depend on it, and create/replace/drop
// invalidate it so cached plans are rebuilt.
Oid catalog_relation_id();

// A name pinned to one version: name, kVersionPinMark, the version's id. On a Citus
// coordinator the planner pins the names a statement's shard queries use (plan/version_pinning),
// so that every worker scores the version the coordinator's snapshot deploys. The lookups below
// take pinned names too; model names have no control characters.
constexpr char kVersionPinMark = '\x1f';
char* pin_model_version(const char* name, int64 id);
// The name for messages and EXPLAIN: without its pin.
const char* unpinned_model_name(const char* name);

// Whether the catalog is a Citus reference table (catalog/citus.hpp).
bool catalog_is_citus_reference_table();

// Lookups by name find the name's deployed version (0.6.0 keeps one row per version).
// The row visible to the current snapshot (or to `snapshot`), or NULL when missing_ok and there
// is none.
CatalogEntry* catalog_lookup(const char* name, bool missing_ok, Snapshot snapshot = NULL);

// The row the planner plans for: the one a new snapshot of the transaction sees (in READ
// COMMITTED a fresh one, else the transaction's). The statement that runs the plan takes its
// snapshot at the same time or after planning (SPI, the extended protocol, a simple query), so
// an older active snapshot (a PL/pgSQL function's caller's) would plan for an outdated version.
CatalogEntry* catalog_lookup_for_planning(const char* name);

// The id of the version of `name` that the latest snapshot sees (committed now, or written by
// this transaction); 0 when there is none.
int64 catalog_latest_version(const char* name);

// The compiled program bytes of row `id` (detoasted, in the current memory context).
bytea* catalog_program(int64 id);

// The spec of row `id` as JSON text (in the current memory context).
char* catalog_spec(int64 id);

// The dictionaries of row `id`'s text inputs as JSON text.
char* catalog_text_inputs(int64 id);
// Model version `id`'s cascade (create_cascade's document, with "program_id": a catalog id of
// its own for the program cache), or NULL when it has none or the catalog predates 0.9.0.
char* catalog_cascade(int64 id);
// Its program id alone (0: none), to find a cascade a backend has parsed before.
int64 catalog_cascade_program_id(int64 id);
// Whether the catalog keeps profiles (0.9.0).
bool catalog_has_profiles();
// The id of version `version` of `name` as the latest snapshot sees it (a version this statement
// stored too); an error naming it when there is none.
int64 catalog_version_id(const char* name, int version);
// Model version `id`'s profile (profile_model's document, JSON text), or NULL when it has none.
// Errors before 0.9.0.
char* catalog_profile(int64 id);
// Stores `profile_json` as version `id`'s profile (number `version`), with the version, `query` and the time it
// was taken (only the model's owner or a superuser may); returns what was stored (JSON text),
// NULL when the row is gone.
char* catalog_set_profile(const char* name, int64 id, int version, const char* profile_json, const char* query);
// After a new version `version` of `name` was deployed over `before` (NULL: none): a NOTICE
// when `before` had a cascade, since the new one has none until create_cascade builds it.
void notice_cascade_not_carried(const char* name, const CatalogEntry* before, int version);

// Whether a new version becomes the deployed one: always, never (staged: deploy_model() later),
// or best: when `better` says its metrics beat the deployed version's (or that one has none).
// The first version of a name is always deployed.
enum class DeployChoice { always, never, best };
// Compares two metrics documents (JSON text): true when `candidate` is better than `deployed`.
// Called inside the catalog write: it must not throw or call PostgreSQL.
using MetricsBetter = bool (*)(const char* deployed, const char* candidate);

struct StoredVersion {
    int version;    // the new version's number
    bool deployed;  // whether it is the one predict() uses now
};

// Add a model, or a new version of an existing one (only its owner or a superuser may; it gets
// the name's owner and grants). `source` is the artifact as given, a jsonb, text or bytea datum
// by `kind`: stored in the column of its type (text and bytea need a 0.3.0 catalog).
// `metrics_json`: train()'s test-split metrics, NULL when none. pg_predict.keep_versions then
// removes the oldest versions beyond the newest N (never the deployed one).
// A catalog from before 0.6.0 has no versions: an existing model is replaced when `replace`,
// and is an error otherwise.
StoredVersion catalog_store(const char* name, const runtime::BuiltModel* built, Datum source, ArtifactKind kind,
                            Datum options_jsonb, bool replace, const char* metrics_json = NULL,
                            DeployChoice deploy = DeployChoice::always, MetricsBetter better = NULL);

// Delete a model, every version of it (only its owner or a superuser may); returns how many
// versions it deleted.
int catalog_delete(const char* name);

// Whether the catalog keeps versions (0.6.0); the functions below error clearly when it does not.
bool catalog_has_versions();

// Delete one version (only its owner or a superuser may): not the deployed one while other
// versions remain; the only version deletes the model. Returns how many versions remain.
int catalog_delete_version(const char* name, int version);

// Make `version` the deployed one (only its owner or a superuser may); from 0.8.0 the deploy
// history (each version's `deployments`) records it.
void catalog_deploy(const char* name, int version);

// Undo the newest deployment: deploy the version deployed before it, and return it. Before
// 0.8.0 (no history): the newest older version that was ever deployed.
int catalog_rollback(const char* name);

// Errors unless the current user may replace or drop a model owned by the role named `owner`
// (NULL: none). Owners are kept by name so that a dump restores into a cluster without the role;
// a name that denotes no role now leaves the model to superusers.
void check_model_owner(const char* name, const char* owner);

// Errors, before any work, when the catalog cannot be written: during recovery (a hot standby)
// or in a read-only transaction. `what` names the function, e.g. "create_model()".
void prevent_catalog_change(const char* what);

// Errors unless `name` is a valid model name (not empty, at most model_name_max_bytes).
constexpr int model_name_max_bytes = NAMEDATALEN - 1;  // the catalog's CHECK says the same
void check_model_name(const char* name);

// Locks model `name`, checks that the current user owns it, and runs `set_clause` on its row
// (an UPDATE's SET list; $1 is the model name, $2 `argument`). For grants and owner changes.
void catalog_update_model(const char* name, const char* set_clause, const char* argument);
// Sets (cascade_json) or clears (NULL) the cascade of `name`'s deployed version, when that is
// still `version` (0: whichever is deployed): -1 when no such row, else whether it had one.
// Only the model's owner (or a superuser) may; the catalog must be 0.9.0.
int catalog_set_cascade(const char* name, int version, const char* cascade_json);

// What the role named `role` has in this database's catalog: the comma-separated names of the
// models it owns and of those granted to it (NULL when none). For DROP ROLE.
void catalog_role_references(const char* role, char** owned, char** granted);

// REASSIGN OWNED / DROP OWNED / ALTER ROLE ... RENAME, applied to the models of this database.
// The caller (the utility hook) runs them after PostgreSQL checked the command's privileges.
void catalog_reassign_owner(const char* old_role, const char* new_role);
void catalog_drop_owned(const char* role);
void catalog_rename_role(const char* old_name, const char* new_name);

}  // namespace pg_predict::pg
