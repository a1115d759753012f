// Programs shared between backends: one native image per model version per server, in shared
// memory sized at start (pg_predict.shared_programs_size; only when pg_predict is preloaded).
//
// The first backend that loads a native program (a tree ensemble or linear model on the native
// kernel, its base margin and an elementwise link: runtime::program_maps_natively) from the
// catalog writes its image there; every other backend maps the image (runtime::map_program):
// nothing deserialized, no TorchScript module, a few KB of its own. Keyed by database, catalog
// relation and catalog row id (ids are never reused within a catalog; a dropped and re-created
// extension has a new catalog relation). A backend pins the images it maps until its program
// cache frees them (a new version of the model, DROP, pg_predict.cache_size, the end of the
// session); an image no backend pins is evicted, least recently mapped first, when a new one
// needs room. When nothing can be evicted the new program simply stays private. A crash restart
// reinitializes shared memory: every image is gone and is written again by the next load.
#pragma once

#include "postgres_headers.hpp"

namespace pg_predict::runtime {
struct Program;
}

namespace pg_predict::pg {

// Version `id`'s program mapped from its shared image, with a reference held (as
// runtime::load_program gives it), or NULL when there is no image for it.
runtime::Program* map_shared_program(int64 id);

// After `program` (version `id`) was loaded from the catalog: its image written to shared
// memory, when it has one, there is room and no other backend wrote it first.
void share_program(int64 id, const runtime::Program* program);

// From _PG_init: the area's shared memory when preloaded and pg_predict.shared_programs_size > 0.
void install_shared_programs();

}  // namespace pg_predict::pg
