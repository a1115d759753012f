#include "device.hpp"

#include <errno.h>
#include <signal.h>

#include "guard.hpp"
#include "shmem.hpp"
#include "pg_predict/runtime/api.hpp"
#include "settings.hpp"

extern "C" {
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "storage/lwlock.h"
}

namespace pg_predict::pg {

namespace {

// Slots in shared memory: the pid of each backend holding one, 0 when free. A spinlock guards
// a few hundred int reads; nothing in the critical sections can error.
struct GpuSlots {
    slock_t lock;
    int32 pid[kMaxGpuSlots];
};

GpuSlots* slots = NULL;  // set in the postmaster, inherited by every backend it forks
int held_slot = -1;      // this backend's slot
bool exit_callback_registered = false;
Size slots_size() { return sizeof(GpuSlots); }

// Also runs after a crash restart, which reinitializes shared memory: slots of crashed
// backends start free again.
void attach_slots() {
    bool found;
    slots = (GpuSlots*)ShmemInitStruct("pg_predict GPU slots", sizeof(GpuSlots), &found);
    if (!found) {
        SpinLockInit(&slots->lock);
        memset(slots->pid, 0, sizeof(slots->pid));
    }
}

void release_slot(int code, Datum arg) {
    if (held_slot < 0 || slots == NULL) return;
    SpinLockAcquire(&slots->lock);
    if (slots->pid[held_slot] == MyProcPid) slots->pid[held_slot] = 0;
    SpinLockRelease(&slots->lock);
    held_slot = -1;
}

int cap() { return Min(max_gpu_backends, kMaxGpuSlots); }

// Takes a free slot if fewer than the cap are used; the slot index or -1.
int try_take() {
    int taken = -1, used = 0, free_slot = -1;
    SpinLockAcquire(&slots->lock);
    for (int i = 0; i < kMaxGpuSlots; i++) {
        if (slots->pid[i] != 0) used++;
        else if (free_slot < 0) free_slot = i;
    }
    if (used < cap() && free_slot >= 0) {
        slots->pid[free_slot] = MyProcPid;
        taken = free_slot;
    }
    SpinLockRelease(&slots->lock);
    return taken;
}

// Frees the slots of processes that no longer exist (belt and braces: exits release their
// slot, crashes reinitialize shared memory). True if any was freed.
bool reclaim_dead_slots() {
    bool freed = false;
    for (int i = 0; i < kMaxGpuSlots; i++) {
        SpinLockAcquire(&slots->lock);
        int32 pid = slots->pid[i];
        SpinLockRelease(&slots->lock);
        if (pid == 0 || pid == MyProcPid || kill(pid, 0) == 0 || errno != ESRCH) continue;
        SpinLockAcquire(&slots->lock);
        if (slots->pid[i] == pid) {
            slots->pid[i] = 0;
            freed = true;
        }
        SpinLockRelease(&slots->lock);
    }
    return freed;
}

}  // namespace

bool gpu_wanted() {
    if (device_setting == DEVICE_CPU) return false;
    const char* why = guarded([] { return runtime::cuda_unavailable_reason(); });
    if (why == NULL) return true;
    if (device_setting == DEVICE_CUDA)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("pg_predict.device is cuda but CUDA cannot be used"),
                        errdetail("%s.", why),
                        errhint("SET pg_predict.device = cpu, or auto to use the GPU only when there is one.")));
    return false;
}

bool claim_gpu_slot() {
    if (held_slot >= 0 || slots == NULL) return true;
    int slot = try_take();
    if (slot < 0 && reclaim_dead_slots()) slot = try_take();
    if (slot < 0) return false;
    held_slot = slot;
    if (!exit_callback_registered) {
        before_shmem_exit(release_slot, (Datum)0);
        exit_callback_registered = true;
    }
    return true;
}

bool gpu_slot_available() {
    if (held_slot >= 0 || slots == NULL) return true;
    int used = 0;
    SpinLockAcquire(&slots->lock);
    for (int i = 0; i < kMaxGpuSlots; i++) used += slots->pid[i] != 0;
    SpinLockRelease(&slots->lock);
    return used < cap();
}

void install_gpu_slots() { register_shared_memory({slots_size, NULL, attach_slots}); }

}  // namespace pg_predict::pg
