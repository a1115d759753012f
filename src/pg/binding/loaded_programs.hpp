// Which backends hold which model versions' programs in their cache, and how many bytes (the
// model_stats view's backends and loaded_bytes columns).
//
// Each backend publishes what its program cache holds (runtime::cached_models) into its own
// slot, indexed by its proc number, whenever the cache changes (runtime::set_cache_listener):
// never per row or per batch. Slots live in shared memory when pg_predict is preloaded; else
// there is one, this backend's.
#pragma once

#include "postgres_headers.hpp"

namespace pg_predict::pg {

// Called before this backend first loads a program: installs the cache listener and the exit
// callback that empties the slot.
void track_loaded_programs();

struct LoadedModel {
    int64 model_id;
    int32 backends;  // backends whose cache holds a program of it
    int32 programs;  // their programs of it (stored, strategy variants, outputs, GPU copies)
    int64 bytes;     // what their caches count for them
};

// The model versions of this database that some backend holds, palloc'd, sorted by model id;
// *count of them.
LoadedModel* loaded_models(int* count);

// From _PG_init: the slots' shared memory when preloaded.
void install_loaded_programs();

}  // namespace pg_predict::pg
