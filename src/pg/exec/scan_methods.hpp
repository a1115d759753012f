// PredictBatch's scan methods: what the planner (plan/) needs of the executor's node to build
// one, and what _PG_init registers. The node pulls tuples from its child, scores them a batch
// at a time, and hands them up with the scores appended (exec/callbacks.cpp, fill.cpp, explain.cpp).
#pragma once

#include "postgres_headers.hpp"

extern "C" {
#include "nodes/extensible.h"
}

namespace pg_predict::pg {

extern CustomScanMethods predict_batch_scan_methods;

// Called once from _PG_init, so parallel workers can rebuild the node from its plan.
void register_batch_node();

}  // namespace pg_predict::pg
