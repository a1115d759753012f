// Intra-op thread count: only recorded here. program.cpp applies it right before the next
// run, so no torch/OpenMP call can happen in the postmaster (it would hang forked backends).
#include <string>

#include "pg_predict/common/error.hpp"
#include "pg_predict/runtime/api.hpp"
#include "program_internal.hpp"

namespace pg_predict::runtime {
namespace {
int requested_threads = 0;  // constant-initialized: no static constructor
}

void set_num_threads(int threads) {
    if (threads < 1)
        fail(ErrorCategory::InvalidParameter,
             "number of threads must be at least 1, got " + std::to_string(threads));
    requested_threads = threads;
}

int take_thread_request() {
    const int n = requested_threads;
    requested_threads = 0;
    return n;
}

}  // namespace pg_predict::runtime
