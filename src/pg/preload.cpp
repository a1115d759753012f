// How this backend loaded pg_predict (preload.hpp).
#include "postgres_headers.hpp"

extern "C" {
#include "access/parallel.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "tcop/tcopprot.h"
}

#include "preload.hpp"
#include "settings.hpp"

namespace pg_predict::pg {

namespace {

bool loaded_by_statement = false;
bool planned_since_loading = false;

}  // namespace

void note_how_loaded() {
    // The postmaster, backend start (session_ / local_preload_libraries: no client statement is
    // running yet), a parallel worker (its leader warned) or a background worker: nothing to say.
    if (process_shared_preload_libraries_in_progress || debug_query_string == NULL || IsParallelWorker() ||
        IsBackgroundWorker || MyProcPid == PostmasterPid)
        return;
    loaded_by_statement = true;
    ereport(WARNING,
            (errmsg("pg_predict is not preloaded: this statement was planned before it loaded and scores row by row"),
             errdetail("Each connection's statements before pg_predict loads run without the PredictBatch node, "
                       "several times slower on large models; later statements of this connection batch."),
             errhint("Set shared_preload_libraries = 'pg_predict' in postgresql.conf and restart, or run "
                     "ALTER DATABASE %s SET session_preload_libraries = 'pg_predict' for new connections.",
                     quote_identifier(get_database_name(MyDatabaseId)))));
}

void note_planned() { planned_since_loading = true; }

bool batching_available_now() { return batching_enabled && (!loaded_by_statement || planned_since_loading); }

}  // namespace pg_predict::pg

extern "C" {

PG_PREDICT_SQL_FUNCTION(pg_predict_batching_available);

Datum pg_predict_batching_available(PG_FUNCTION_ARGS) {
    PG_RETURN_BOOL(pg_predict::pg::batching_available_now());
}

}  // extern "C"
