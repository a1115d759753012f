// The model catalog: an ordinary table in the extension's schema, so it is transactional,
// MVCC-visible, replicated and dumped. Ordinary roles have no privileges on it; the functions
// here read and write it as the table's owner and check model ownership themselves.
#pragma once

#include "postgres_headers.hpp"

namespace pg_predict::runtime { struct BuiltModel; }

namespace pg_predict::pg {

// One catalog row without the heavy columns (source, spec, program). Allocated in the
// memory context that was current when catalog_lookup was called.
struct CatalogEntry {
    int64 id;             // a new id for every create or replace: the program cache key
    char* name;
    Oid owner;
    char* format;
    char* strategy;
    int num_features;
    char** features;      // the model's feature names
    char** columns;       // the column each feature reads ("" when the model has no names)
    bool classification;
    int num_classes;
    double* classes;
    int trees;            // from the summary, for EXPLAIN
    int depth;
    char* objective;      // from the summary: the XGBoost objective or the estimator's class
    bool* is_text;        // per feature: read as text and dictionary-encoded
    bool has_text;
    bool has_probabilities;  // a classifier whose outputs are probabilities (predict_proba)
    bool* is_unused;      // per feature: the model never reads it, so its column is not fetched
};

// The catalog table's OID: plans that use a model depend on it, and create/replace/drop
// invalidate it so cached plans are rebuilt.
Oid catalog_relation_id();

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

// Insert a model, or replace it when `replace` (only its owner or a superuser may).
void catalog_store(const char* name, const runtime::BuiltModel* built, Datum source_jsonb,
                   Datum options_jsonb, bool replace);

// Delete a model (only its owner or a superuser may).
void catalog_delete(const char* name);

// Errors unless the current user may replace or drop a model owned by `owner`.
void check_model_owner(const char* name, Oid owner);

}  // namespace pg_predict::pg
