// How this backend loaded pg_predict, and whether its statements can batch.
//
// The PredictBatch node comes from a planner hook, installed when the library loads. Loaded by
// shared_preload_libraries (the postmaster), or session_/local_preload_libraries (backend
// start, before any client statement), every statement is planned with it. Loaded by a statement
// (its first pg_predict call, or CREATE EXTENSION), that statement was planned before: it
// scores row by row, and the backend says so once with a WARNING that names the settings.
#pragma once

namespace pg_predict::pg {

// From _PG_init: remembers how the library was loaded, and warns when a statement loaded it.
void note_how_loaded();
// From the planner hook: a statement was planned with it.
void note_planned();
// Whether the running statement was planned with pg_predict's planner hook (the library was
// preloaded, or the hook has planned since a statement loaded it) and pg_predict.enable_batching
// is on (SQL: batching_available()).
bool batching_available_now();

}  // namespace pg_predict::pg
