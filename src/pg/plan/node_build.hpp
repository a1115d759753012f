// Building and costing the PredictBatch node of a rewrite, and what batching saves the plan.
#pragma once

#include "plan/call_collection.hpp"

namespace pg_predict::pg {

// A PredictBatch node over `child` for the calls `rw` collected: its scan tuple is the child's
// first `passthrough` columns and one column per call, over which it evaluates `tlist` and
// `qual`. Costed as an operator per row and call; what that saves against the per-row calls'
// cost is added to the statement's saving (below).
CustomScan* make_batch_node(Rewrite* rw, Plan* child, int passthrough, List* tlist, List* qual);

// The planner cost of the calls moved into PredictBatch nodes while one statement is rewritten,
// less what they cost batched. begin returns the saving counted so far (a nested planner call:
// the catalog lookup plans SPI queries), end returns the statement's and restores that.
double begin_batched_cost();
double end_batched_cost(double outer);

// standard_planner chose JIT compilation by the plan's total cost, with every predict call
// costed as a per-row function call. JIT cannot speed up a model, and batched calls cost a
// small part of that: decide again without their cost (only ever less JIT, never more). A
// 1M-row sum(predict(...)) otherwise spent 0.3-0.7 s inlining and optimizing with LLVM.
void reconsider_jit(PlannedStmt* stmt, double cost_saved);

}  // namespace pg_predict::pg
