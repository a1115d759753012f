// The shared-memory hook chain, once for the whole extension. A part of pg_predict that keeps
// state in shared memory (GPU slots, loaded programs, usage statistics) registers what it
// requests and how it attaches; shmem.cpp chains into shmem_request_hook and
// shmem_startup_hook a single time and calls every part in registration order.
// Only with shared_preload_libraries: registering at any other time does nothing (the parts
// then keep backend-local state), since the hooks have already run.
#pragma once

#include "postgres_headers.hpp"

namespace pg_predict::pg {

struct SharedMemoryPart {
    // In the postmaster's request hook: RequestAddinShmemSpace(size) and, when set,
    // RequestNamedLWLockTranche(lwlock_tranche, 1).
    Size (*size)();
    const char* lwlock_tranche;
    // Under AddinShmemInitLock, in the postmaster after it created shared memory, and again
    // after a crash restart reinitialized it: ShmemInitStruct and the part's own setup.
    void (*attach)();
};

void register_shared_memory(const SharedMemoryPart& part);

}  // namespace pg_predict::pg
