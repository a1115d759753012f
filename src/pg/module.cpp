// Module entry: the magic block and _PG_init.
//
// _PG_init runs in the postmaster when the library is preloaded. It must not run any torch or
// OpenMP operation there: every backend forked afterwards would hang on its first parallel op.
// So it only registers settings, hooks and node methods; the runtime starts lazily in each
// backend.
#include "batch_node.hpp"
#include "device.hpp"
#include "fast_exit.hpp"
#include "interrupts.hpp"
#include "loaded_programs.hpp"
#include "plan_invalidation.hpp"
#include "planner_hook.hpp"
#include "predict_calls.hpp"
#include "role_hook.hpp"
#include "settings.hpp"
#include "usage_stats.hpp"

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
}
