#include "binding/shared_programs.hpp"

#include "catalog/catalog.hpp"
#include "guard.hpp"
#include "pg_predict/runtime/api.hpp"
#include "settings.hpp"
#include "shmem.hpp"

extern "C" {
#include "funcapi.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/tuplestore.h"
}

// No C++ object with a destructor may live in these frames: ereport longjmps.

namespace pg_predict::pg {

namespace {

constexpr const char* kTrancheName = "pg_predict shared programs";
constexpr int kMaxEntries = 4096;  // images at most (the area's header: 256 KB)
constexpr Size kAlign = 64;        // each image, as its arrays inside it (the kernels' loads)

// One image. `lock` guards every field but `pins` and `last_used`: those change under the
// shared lock (a backend mapping or unmapping), atomically; an entry is freed only under the
// exclusive lock with no pin, so no backend can hold its image then.
struct Entry {
    bool used;
    Oid database;
    Oid catalog;  // the catalog relation the id belongs to (a Citus node's copy on Citus)
    int64 id;
    uint64 offset;  // in the arena
    uint64 length;
    pg_atomic_uint32 pins;  // backends whose program cache holds the mapped program
    pg_atomic_uint64 last_used;
};

struct Area {
    LWLock* lock;
    uint64 capacity;  // the arena's bytes: pg_predict.shared_programs_size
    int high_water;   // entries at or beyond it are unused
    int64 evicted;    // images evicted to make room
    int64 refused;    // programs that stayed private: no room even after evicting
    pg_atomic_uint64 clock;
    Entry entries[kMaxEntries];
};

Area* area = NULL;  // NULL: not preloaded, or the size is 0
char* arena = NULL;

// This backend's pins, per entry, so that its exit lets go of them all.
uint16* my_pins = NULL;
bool exiting = false;

Size arena_bytes() { return (Size)shared_programs_size_mb * 1024 * 1024; }

Size area_size() { return add_size(add_size(sizeof(Area), kAlign), arena_bytes()); }

// Also after a crash restart, which reinitializes shared memory: the area starts empty.
void attach_area() {
    bool found;
    area = (Area*)ShmemInitStruct(kTrancheName, area_size(), &found);
    if (!found) {
        memset(area, 0, sizeof(Area));
        area->lock = &(GetNamedLWLockTranche(kTrancheName))->lock;
        area->capacity = arena_bytes();
        pg_atomic_init_u64(&area->clock, 0);
        for (Entry& e : area->entries) {
            pg_atomic_init_u32(&e.pins, 0);
            pg_atomic_init_u64(&e.last_used, 0);
        }
    }
    arena = (char*)TYPEALIGN(kAlign, (char*)area + sizeof(Area));
}

void unpin(int index) noexcept {
    if (my_pins == NULL || my_pins[index] == 0) return;
    my_pins[index]--;
    pg_atomic_fetch_sub_u32(&area->entries[index].pins, 1);
}

// The runtime's unmap listener: the cache freed a mapped program (inside the runtime: plain
// memory work only). The mapping is the entry's index + 1.
void unmapped(void* mapping) noexcept {
    if (exiting) return;
    unpin((int)((intptr_t)mapping - 1));
}

void let_go_of_pins(int, Datum) {
    exiting = true;
    for (int i = 0; i < kMaxEntries; i++)
        while (my_pins[i] > 0) {
            my_pins[i]--;
            pg_atomic_fetch_sub_u32(&area->entries[i].pins, 1);
        }
}

void start_pinning() {
    if (my_pins != NULL) return;
    my_pins = (uint16*)MemoryContextAllocZero(TopMemoryContext, sizeof(uint16) * kMaxEntries);
    before_shmem_exit(let_go_of_pins, (Datum)0);
    runtime::set_unmap_listener(unmapped);
}

// The entry of (this database, catalog, id), or -1. Under the lock.
int find(Oid catalog, int64 id) {
    for (int i = 0; i < area->high_water; i++) {
        const Entry& e = area->entries[i];
        if (e.used && e.id == id && e.catalog == catalog && e.database == MyDatabaseId) return i;
    }
    return -1;
}

int by_offset(const void* a, const void* b) {
    const uint64 x = area->entries[*(const int*)a].offset, y = area->entries[*(const int*)b].offset;
    return x < y ? -1 : x > y;
}

// The first gap of `length` bytes between the images, or -1. Under the exclusive lock.
int64 find_gap(uint64 length) {
    int* order = (int*)palloc(sizeof(int) * Max(area->high_water, 1));
    int n = 0;
    for (int i = 0; i < area->high_water; i++)
        if (area->entries[i].used) order[n++] = i;
    qsort(order, n, sizeof(int), by_offset);
    uint64 end = 0;  // of the images so far
    int64 gap = -1;
    for (int k = 0; k < n && gap < 0; k++) {
        const Entry& e = area->entries[order[k]];
        if (e.offset >= end + length) gap = (int64)end;
        end = TYPEALIGN(kAlign, e.offset + e.length);
    }
    if (gap < 0 && area->capacity >= end + length) gap = (int64)end;
    pfree(order);
    return gap;
}

// Frees the least recently mapped image no backend pins; false when every image is pinned.
bool evict_one() {
    int oldest = -1;
    for (int i = 0; i < area->high_water; i++) {
        Entry& e = area->entries[i];
        if (!e.used || pg_atomic_read_u32(&e.pins) != 0) continue;
        if (oldest < 0 || pg_atomic_read_u64(&e.last_used) < pg_atomic_read_u64(&area->entries[oldest].last_used))
            oldest = i;
    }
    if (oldest < 0) return false;
    area->entries[oldest].used = false;
    area->evicted++;
    return true;
}

int free_entry() {
    for (int i = 0; i < kMaxEntries; i++)
        if (!area->entries[i].used) return i;
    return -1;
}

}  // namespace

runtime::Program* map_shared_program(int64 id) {
    if (area == NULL) return NULL;
    Oid catalog = catalog_relation_id();
    start_pinning();
    LWLockAcquire(area->lock, LW_SHARED);
    int index = find(catalog, id);
    if (index < 0) {
        LWLockRelease(area->lock);
        return NULL;
    }
    Entry* e = &area->entries[index];
    pg_atomic_fetch_add_u32(&e->pins, 1);
    my_pins[index]++;
    pg_atomic_write_u64(&e->last_used, pg_atomic_add_fetch_u64(&area->clock, 1));
    const char* image = arena + e->offset;
    size_t length = e->length;
    LWLockRelease(area->lock);
    return guarded([&] {
        try {
            return runtime::map_program(id, image, length, (void*)(intptr_t)(index + 1));
        } catch (...) {
            unpin(index);
            throw;
        }
    });
}

void share_program(int64 id, const runtime::Program* program) {
    if (area == NULL) return;
    size_t length = runtime::native_image_length(program);
    if (length == 0 || length > area->capacity) return;
    Oid catalog = catalog_relation_id();
    LWLockAcquire(area->lock, LW_EXCLUSIVE);
    if (find(catalog, id) >= 0) {  // another backend wrote it meanwhile
        LWLockRelease(area->lock);
        return;
    }
    int index = free_entry();
    int64 offset = index >= 0 ? find_gap(length) : -1;
    while ((index < 0 || offset < 0) && evict_one()) {
        if (index < 0) index = free_entry();
        offset = index >= 0 ? find_gap(length) : -1;
    }
    if (index < 0 || offset < 0) {
        area->refused++;
        LWLockRelease(area->lock);
        return;
    }
    runtime::write_native_image(program, arena + offset);
    Entry* e = &area->entries[index];
    e->database = MyDatabaseId;
    e->catalog = catalog;
    e->id = id;
    e->offset = (uint64)offset;
    e->length = length;
    pg_atomic_write_u32(&e->pins, 0);
    pg_atomic_write_u64(&e->last_used, pg_atomic_add_fetch_u64(&area->clock, 1));
    e->used = true;
    area->high_water = Max(area->high_water, index + 1);
    LWLockRelease(area->lock);
}

void install_shared_programs() {
    if (shared_programs_size_mb > 0) register_shared_memory({area_size, kTrancheName, attach_area});
}

}  // namespace pg_predict::pg

using namespace pg_predict::pg;

extern "C" {

PG_PREDICT_SQL_FUNCTION(pg_predict_shared_programs);
PG_PREDICT_SQL_FUNCTION(pg_predict_shared_programs_info);

// shared_programs(): the images of this database's catalog: model id, bytes, backends mapping it.
Datum pg_predict_shared_programs(PG_FUNCTION_ARGS) {
    InitMaterializedSRF(fcinfo, 0);
    if (area == NULL) return (Datum)0;
    ReturnSetInfo* rsinfo = (ReturnSetInfo*)fcinfo->resultinfo;
    Oid catalog = catalog_relation_id();
    LWLockAcquire(area->lock, LW_SHARED);
    for (int i = 0; i < area->high_water; i++) {
        const Entry& e = area->entries[i];
        if (!e.used || e.database != MyDatabaseId || e.catalog != catalog) continue;
        Datum values[3] = {Int64GetDatum(e.id), Int64GetDatum((int64)e.length),
                           Int32GetDatum((int32)pg_atomic_read_u32((pg_atomic_uint32*)&e.pins))};
        bool nulls[3] = {false, false, false};
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
    LWLockRelease(area->lock);
    return (Datum)0;
}

// shared_programs_info(): the area's size and use, every database's images together.
Datum pg_predict_shared_programs_info(PG_FUNCTION_ARGS) {
    TupleDesc desc;
    if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE) elog(ERROR, "return type must be a row type");
    desc = BlessTupleDesc(desc);
    Datum values[5];
    bool nulls[5] = {false, false, false, false, false};
    int64 used_bytes = 0, images = 0;
    if (area != NULL) {
        LWLockAcquire(area->lock, LW_SHARED);
        for (int i = 0; i < area->high_water; i++)
            if (area->entries[i].used) {
                used_bytes += (int64)area->entries[i].length;
                images++;
            }
        values[3] = Int64GetDatum(area->evicted);
        values[4] = Int64GetDatum(area->refused);
        values[0] = Int64GetDatum((int64)area->capacity);
        LWLockRelease(area->lock);
    } else {
        values[0] = values[3] = values[4] = Int64GetDatum(0);
    }
    values[1] = Int64GetDatum(used_bytes);
    values[2] = Int64GetDatum(images);
    PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

}  // extern "C"
