// The process-wide kernel path: set by the pg_predict.cpu_kernel setting (its assign hook, in
// every backend and parallel worker), read once per tree_ensemble op call.
#include "pg_predict/kernels/tree_ensemble.hpp"

namespace pg_predict::kernels {
namespace {
Isa chosen = Isa::Auto;  // constant-initialized: no static constructor
}

void set_process_isa(Isa isa) {
    resolve_isa(isa);  // throws for a path this build or CPU lacks
    chosen = isa;
}

Isa process_isa() { return chosen; }

}  // namespace pg_predict::kernels
