// Predicate-based model pruning at plan time (issue 15 §3): the restriction clauses a table
// scan applies below a PredictBatch node hold for every row the node scores, so an input whose
// column they fix or bound (`plan = 'pro'`, `age >= 60`, BETWEEN, IS NULL) lets the model be
// specialized for them (optimizer/specialize.hpp), and a column the specialized model no longer
// reads is left out of the scan. Only top-level AND-ed clauses of the form column op constant
// (btree operators of the integer, float, numeric, text and boolean families; text equality
// under a deterministic collation), NullTests and boolean columns count: not OR branches, not
// parameters, not quals above the node.
#pragma once

#include "call_collection.hpp"

namespace pg_predict::pg {

// Specializes the inputs of `rw` whose features are columns of the relation `scan` reads
// (Case 1: `scan` is rw->node; Case 2: rw->child), given the clauses `quals` that scan applies
// besides its index conditions (those are added here). An input that gets a specialized program
// keeps its bounds in in->pruned_bounds (the program's cache key) and what EXPLAIN shows in
// in->pruned_note; the columns it no longer reads become constants in `columns_of(in)`.
// Call before the push-downs are applied.
void prune_inputs(Rewrite* rw, Plan* scan, List* quals);

}  // namespace pg_predict::pg
