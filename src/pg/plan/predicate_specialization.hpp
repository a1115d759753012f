// Predicate-based model pruning at plan time (issue 15 §3): the restriction clauses a table
// scan applies below a PredictBatch node hold for every row the node scores, so an input whose
// column they fix or bound (`plan = 'pro'`, `age >= 60`, BETWEEN, IS NULL) lets the model be
// specialized for them (optimizer/specialize.hpp), and a column the specialized model no longer
// reads is left out of the scan. Only top-level AND-ed clauses of the form column op constant
// (btree operators of the integer, float, numeric, text and boolean families; text equality
// under a deterministic collation), NullTests and boolean columns count: not OR branches, not
// parameters, not quals above the node.
#pragma once

#include "plan/call_collection.hpp"

namespace pg_predict::pg {

// Specializes the inputs of `rw` whose features are columns of the relations scanned below the
// node: Case 1 (rw->child NULL), the scan rw->node, which applies `scan_quals` (its filter less
// the conjuncts that moved up) besides its index conditions; Case 2, the scan child or every
// partition's scan under an Append that the push-down reads (each with its own filter and index
// conditions; the bounds used hold for all of them). An input that gets a specialized program
// keeps its bounds in in->pruned_bounds (the program's cache key) and what EXPLAIN shows in
// in->pruned_note; the columns it no longer reads become constants. Call before the push-downs
// are applied.
void specialize_inputs(Rewrite* rw, List* scan_quals);

}  // namespace pg_predict::pg
