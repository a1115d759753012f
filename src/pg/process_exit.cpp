// Process exit without libtorch's static destructors.
//
// Loading libtorch constructs a registry of thousands of operators. When a process exits,
// C++ static destructors deregister every one of them, writing to pages that a forked child
// shares copy-on-write with the postmaster: measured here at ~0.75 s of CPU per exit. With
// pg_predict preloaded that is every backend's disconnect and every parallel worker's end,
// which the leader waits for: a parallel `SELECT sum(x)` over 1M rows took 1.0 s instead of
// 60 ms, whether or not it used a model.
//
// PostgreSQL leaves a process through proc_exit(), which first runs every cleanup callback
// (shared memory, locks, stats) and then calls exit(). By then nothing is left for destructors
// to do, so this handler, registered with glibc's on_exit() after libtorch's destructors (it
// runs before them), ends the process with the same status. When exit() is called any other
// way, PostgreSQL's own atexit cleanup has not run yet: the handler then does nothing.
#include "process_exit.hpp"
#include "postgres_headers.hpp"

extern "C" {
#include "storage/ipc.h"
}

#include <unistd.h>

namespace pg_predict::pg {

namespace {

bool installed = false;

void exit_without_destructors(int status, void*) {
    if (!proc_exit_inprogress) return;
    fflush(NULL);
    _exit(status);
}

}  // namespace

void install_fast_exit() {
    // Once per process image: a backend forked from a preloading postmaster inherits it.
    if (installed) return;
    if (on_exit(exit_without_destructors, NULL) == 0) installed = true;
}

}  // namespace pg_predict::pg
