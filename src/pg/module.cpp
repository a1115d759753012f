// Module entry: the magic block, _PG_init and the GUCs.
//
// _PG_init runs in the postmaster when the library is preloaded. It must not run any torch or
// OpenMP operation there: every backend forked afterwards would hang on its first parallel op.
// So it only registers settings; the runtime applies them lazily inside each backend.
#include "guard.hpp"
#include "pg_predict/runtime/api.hpp"

extern "C" {
PG_MODULE_MAGIC;
PGDLLEXPORT void _PG_init(void);
}

namespace {

int threads_setting = 1;

void assign_threads(int value, void* extra) { pg_predict::runtime::set_num_threads(value); }

}  // namespace

void _PG_init(void) {
    DefineCustomIntVariable(
        "pg_predict.threads",
        "Threads each backend uses to evaluate a model.",
        "Intra-operator threads of libtorch in this backend. Parallel workers each get their own; "
        "keep threads x workers within the cores you can spare.",
        &threads_setting, 1, 1, 256, PGC_USERSET, 0, NULL, assign_threads, NULL);
    MarkGUCPrefixReserved("pg_predict");
}
