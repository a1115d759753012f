// On a Citus coordinator, the model names of a statement's predict(), predict_proba(), ... calls
// are pinned to the version the coordinator's snapshot deploys, before Citus plans the
// statement and writes its shard queries: a worker then scores exactly that version, even when
// a deploy_model() commits between the coordinator's snapshot and the worker's.
#pragma once

#include "postgres_headers.hpp"

extern "C" {
#include "nodes/parsenodes.h"
}

namespace pg_predict::pg {

// Pins the constant model names in `parse` when this node is a Citus coordinator whose catalog
// is a reference table; true when it pinned any (the plan then depends on the catalog).
bool pin_model_versions(Query* parse);

}  // namespace pg_predict::pg
