#include "heap_trim.hpp"

#include "pg_predict/runtime/api.hpp"
#include "postgres_headers.hpp"

extern "C" {
#include "access/xact.h"
}

namespace pg_predict::pg {
namespace {

bool pending = false;
bool registered = false;

// Runs after the portals of the transaction were dropped (PreCommit_Portals); must not fail.
void at_transaction_end(XactEvent event, void*) {
    if (!pending) return;
    if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT) return;
    pending = false;
    runtime::release_free_memory();
}

}  // namespace

void trim_heap_at_transaction_end() {
    if (!registered) {  // in the backend, on first use: nothing to do in the postmaster
        RegisterXactCallback(at_transaction_end, NULL);
        registered = true;
    }
    pending = true;
}

}  // namespace pg_predict::pg
