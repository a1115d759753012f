#include "binding/loaded_programs.hpp"

#include "pg_predict/runtime/api.hpp"
#include "shmem.hpp"

extern "C" {
#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
}

namespace pg_predict::pg {

namespace {

// One backend's programs: written only by that backend, read by any; the spinlock guards a
// copy of at most kMaxCachedPrograms records, nothing in it can fail.
struct Slot {
    slock_t lock;
    int32 pid;      // 0: no backend, or one that holds nothing
    Oid database;
    int32 count;
    runtime::CachedModel models[runtime::kMaxCachedPrograms];
};

Slot* slots = NULL;  // shared: set in the postmaster, inherited; else this backend's one
int num_slots = 0;
bool tracking = false;

// Backends have proc numbers below MaxBackends (auxiliary processes load no models).
Size slots_size() { return mul_size(sizeof(Slot), MaxBackends); }

// Also after a crash restart, which reinitializes shared memory: every slot starts empty.
void attach_slots() {
    bool found;
    slots = (Slot*)ShmemInitStruct("pg_predict loaded programs", slots_size(), &found);
    num_slots = MaxBackends;
    if (!found) {
        memset(slots, 0, slots_size());
        for (int i = 0; i < num_slots; i++) SpinLockInit(&slots[i].lock);
    }
}

Slot* my_slot() {
    if (slots == NULL || MyProc == NULL) return NULL;
    if (num_slots == 1) return &slots[0];  // not preloaded: this backend's own
    int index = MyProc->pgprocno;
    return index >= 0 && index < num_slots ? &slots[index] : NULL;
}

void write_slot(Slot* slot, const runtime::CachedModel* models, int count) {
    SpinLockAcquire(&slot->lock);
    slot->pid = count > 0 ? MyProcPid : 0;
    slot->database = MyDatabaseId;
    slot->count = count;
    memcpy(slot->models, models, sizeof(runtime::CachedModel) * count);
    SpinLockRelease(&slot->lock);
}

// The cache listener: runs inside the runtime (in C++ frames), so plain memory work only.
void publish() noexcept {
    Slot* slot = my_slot();
    if (slot == NULL) return;
    runtime::CachedModel models[runtime::kMaxCachedPrograms];
    int count = (int)runtime::cached_models(models, runtime::kMaxCachedPrograms);
    write_slot(slot, models, count);
}

void empty_slot(int code, Datum arg) {
    Slot* slot = my_slot();
    if (slot != NULL) write_slot(slot, NULL, 0);
}

}  // namespace

void track_loaded_programs() {
    if (tracking) return;
    if (slots == NULL) {  // not preloaded
        slots = (Slot*)MemoryContextAllocZero(TopMemoryContext, sizeof(Slot));
        SpinLockInit(&slots[0].lock);
        num_slots = 1;
    }
    before_shmem_exit(empty_slot, (Datum)0);
    runtime::set_cache_listener(publish);
    tracking = true;
}

namespace {

int by_model_id(const void* a, const void* b) {
    const int64 x = ((const LoadedModel*)a)->model_id, y = ((const LoadedModel*)b)->model_id;
    return x < y ? -1 : x > y;
}

}  // namespace

LoadedModel* loaded_models(int* count) {
    *count = 0;
    if (slots == NULL) return (LoadedModel*)palloc(sizeof(LoadedModel));
    // A record per backend and version, then sorted by version and merged: backends may each
    // hold a thousand tenants' models.
    int capacity = 64;
    int records = 0;
    LoadedModel* all = (LoadedModel*)palloc(sizeof(LoadedModel) * capacity);
    runtime::CachedModel models[runtime::kMaxCachedPrograms];
    for (int i = 0; i < num_slots; i++) {
        Slot* slot = &slots[i];
        SpinLockAcquire(&slot->lock);
        bool ours = slot->pid != 0 && slot->database == MyDatabaseId;
        int n = ours ? slot->count : 0;
        memcpy(models, slot->models, sizeof(runtime::CachedModel) * n);
        SpinLockRelease(&slot->lock);
        for (int k = 0; k < n; k++) {
            if (records == capacity) {
                capacity *= 2;
                all = (LoadedModel*)repalloc_huge(all, sizeof(LoadedModel) * capacity);
            }
            all[records++] = LoadedModel{models[k].id, 1, models[k].programs, models[k].bytes};
        }
    }
    qsort(all, records, sizeof(LoadedModel), by_model_id);
    for (int k = 0; k < records; k++) {
        if (*count > 0 && all[*count - 1].model_id == all[k].model_id) {
            all[*count - 1].backends += all[k].backends;
            all[*count - 1].programs += all[k].programs;
            all[*count - 1].bytes += all[k].bytes;
        } else {
            all[(*count)++] = all[k];
        }
    }
    return all;
}

void install_loaded_programs() { register_shared_memory({slots_size, NULL, attach_slots}); }

}  // namespace pg_predict::pg
