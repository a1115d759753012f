// Module entry: the magic block and _PG_init.
//
// _PG_init runs in the postmaster when the library is preloaded. It must not run any torch or
// OpenMP operation there: every backend forked afterwards would hang on its first parallel op.
// So it only registers settings, hooks and node methods; the runtime starts lazily in each
// backend.
#include "exec/scan_methods.hpp"
#include "device.hpp"
#include "process_exit.hpp"
#include "interrupts.hpp"
#include "preload.hpp"
#include "binding/loaded_programs.hpp"
#include "binding/shared_programs.hpp"
#include "plan/invalidation.hpp"
#include "plan/planner_hook.hpp"
#include "plan/predict_calls.hpp"
#include "catalog/role_hook.hpp"
#include "settings.hpp"
#include "catalog/usage_stats.hpp"
#include "catalog/kept_entries.hpp"

extern "C" {
PG_MODULE_MAGIC;
PGDLLEXPORT void _PG_init(void);
}

void _PG_init(void) {
    using namespace pg_predict::pg;
    define_settings();
    install_interrupt_probe();
    register_predict_call_cache();
    register_batch_node();
    install_planner_hook();
    install_plan_invalidation();
    install_role_hook();
    install_gpu_slots();
    install_fast_exit();
    install_usage_stats();
    install_loaded_programs();
    install_shared_programs();
    install_kept_entries();
    note_how_loaded();  // last: a WARNING when a statement loaded the library
}
