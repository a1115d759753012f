// The planner hook that moves predict() calls into PredictBatch nodes (planner_hook.cpp).
#pragma once

#include "postgres_headers.hpp"

namespace pg_predict::pg {

// Chains in after any hook installed before us. Called once from _PG_init.
void install_planner_hook();

// Whether an expression contains a call of predict() or another scoring function
// (predict_calls.hpp).
bool contain_predict_call(Node* node);

}  // namespace pg_predict::pg
