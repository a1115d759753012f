// The planner hook that moves predict() calls into PredictBatch nodes (planner_hook.cpp).
#pragma once

#include "postgres_headers.hpp"

namespace pg_predict::pg {

// Chains in after any hook installed before us. Called once from _PG_init.
void install_planner_hook();

}  // namespace pg_predict::pg
