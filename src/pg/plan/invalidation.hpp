// Cached plans that score a model are re-planned when the model is replaced or dropped, in the
// same transaction too, the way PostgreSQL re-plans for a changed table.
//
// create/replace/drop send a relcache invalidation of the catalog table, and a plan that scores
// a model lists that table in its relationOids, so the plan cache throws the plan away once the
// message is read. PostgreSQL reads such messages when a transaction starts and when a lock is
// taken that was not held yet; a table's DDL conflicts with the locks of its readers, so they
// always wait and then read it. A model's replace takes no lock a reader holds, and inside one
// READ COMMITTED transaction every lock a cached plan takes is already held after its first run,
// so the message would stay unread and the next EXECUTE (or PL/pgSQL loop iteration) would feed
// the new model the columns planned for the old one. Hence:
//   - the plan also carries a range-table entry for the catalog (no permissions required, never
//     scanned), so the plan cache locks it before reusing the plan, and
//   - after each run of such a plan the local lock on the catalog is marked as "not cleared", so
//     that lock call reads the pending invalidation messages again, every statement;
//   - a plan made under a snapshot older than the newest version (a REPEATABLE READ transaction
//     that began before the replace, or a replace committed between snapshot and planning) has
//     consumed the message but is already outdated for later snapshots: when it starts, every
//     cached plan of the backend is dropped, so later statements are planned afresh.
#pragma once

#include "postgres_headers.hpp"

namespace pg_predict::pg {

// Makes `stmt` depend on the model catalog as described above. Called by the planner hook for
// every statement that scores a model.
void depend_on_model_catalog(PlannedStmt* stmt);

// Called by the planner for each model a plan scores, with the version its snapshot sees.
void note_planned_version(const char* model, int64 version);

// The plan was made for another version of `model` than the statement's snapshot sees (a
// replace committed between planning and the snapshot): drops every cached plan of the backend,
// so the next run is planned afresh, and raises an error saying to run the statement again.
void stale_plan_error(const char* model, int64 planned_version, int64 visible_version);

// A counter that moves whenever this backend reads an invalidation of the model catalog (or of
// every relation): what is bound to a model version outside a plan compares it to rebind.
// Never 0, which callers may use for "not bound".
uint64 catalog_generation();

// Installs the executor hooks and the catalog's invalidation callback. Called once from _PG_init.
void install_plan_invalidation();

}  // namespace pg_predict::pg
