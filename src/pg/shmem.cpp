// The shared-memory hook chain (shmem.hpp): one pair of hooks for every part that registers.
#include "shmem.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
}

namespace pg_predict::pg {

namespace {

constexpr int kMaxParts = 8;
SharedMemoryPart parts[kMaxParts];
int num_parts = 0;
shmem_request_hook_type previous_request_hook = NULL;
shmem_startup_hook_type previous_startup_hook = NULL;

void request_shmem() {
    if (previous_request_hook != NULL) previous_request_hook();
    for (int i = 0; i < num_parts; i++) {
        RequestAddinShmemSpace(parts[i].size());
        if (parts[i].lwlock_tranche != NULL) RequestNamedLWLockTranche(parts[i].lwlock_tranche, 1);
    }
}

void startup_shmem() {
    if (previous_startup_hook != NULL) previous_startup_hook();
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    for (int i = 0; i < num_parts; i++) parts[i].attach();
    LWLockRelease(AddinShmemInitLock);
}

}  // namespace

// Only hooks and plain memory: this runs in the postmaster, whose children inherit them.
void register_shared_memory(const SharedMemoryPart& part) {
    if (!process_shared_preload_libraries_in_progress) return;
    // A build-time limit (three parts today), checked in release builds too: in the postmaster
    // this stops the server's start with the message, instead of writing past the array.
    if (num_parts == kMaxParts) elog(ERROR, "pg_predict: more than %d shared-memory parts registered", kMaxParts);
    if (num_parts == 0) {
        previous_request_hook = shmem_request_hook;
        shmem_request_hook = request_shmem;
        previous_startup_hook = shmem_startup_hook;
        shmem_startup_hook = startup_shmem;
    }
    parts[num_parts++] = part;
}

}  // namespace pg_predict::pg
