// Plan side of the early exit (issue 15 §2): which output value of a PredictBatch node the
// query needs only within an interval or only among its best rows, so the node may stop
// scoring rows that cannot qualify (the executor side is in exec/callbacks.cpp, the bounds in
// runtime::screen_rows).
//
//  * A threshold: conjuncts of the node's own filter comparing predict(...) or
//    predict_proba(...)[k] with a constant (<, <=, >, >=, and BETWEEN's pair). When nothing
//    else reads that model's outputs, the node applies those conjuncts itself, so that rows
//    certain to pass need no score either.
//  * A top-K: Limit (constant count and offset) over Sort, optionally through Gather Merge,
//    over the node, the sort's first key being such a value. The node then drops a row only
//    when its value is certain to be worse than k values it has already returned: the Sort
//    would have discarded it, so the result is the same rows, ties included.
#pragma once

#include "plan/node_private.hpp"

namespace pg_predict::pg {

// Fills plan->early_exit from the node's filter (its tlist decides which conjuncts it may own).
void plan_threshold(BatchPlan* plan, List* tlist, List* qual);

// Marks the PredictBatch nodes below a Limit and Sort of the finished statement.
void plan_top_k(PlannedStmt* stmt);

}  // namespace pg_predict::pg
