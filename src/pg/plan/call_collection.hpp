// Call collection and expression rewriting for the planner hook: find the scoring calls of one
// plan node that can be batched (each becomes an output of a PredictBatch node, calls of one
// model over one argument share an input), decide where each input's features come from, and
// afterwards replace the calls by the node's output columns. Collection changes no plan node:
// the push-downs it decides are applied by apply_pushdowns once the whole node can be batched.
#pragma once

#include "plan/node_private.hpp"
#include "postgres_headers.hpp"

namespace pg_predict::pg {

// One node's rewrite in progress.
struct Rewrite {
    PlannedStmt* stmt;
    Plan* node;               // the node whose expressions hold the calls
    Plan* child;              // Case 2: the node's child; Case 1: NULL
    int scanrelid;            // Case 1 on a scan: its range table index, else 0
    List* inputs;             // BatchInput*
    List* input_args;         // the call argument each input was made from (for dedupe)
    List* calls;              // FuncExpr* of each output, deduplicated with equal()
    List* outputs;            // BatchOutput*
    List* pushdowns;          // Pushdown* (feature_pushdown.hpp): decided, not yet applied
    bool failed;              // something we cannot batch here: leave the node alone
};

// Registers every batchable call in `expr` (not descending into one); a SubPlan fails the node.
void collect_calls(Rewrite* rw, Node* expr);

// Whether an expression contains a call of predict() or another scoring function.
bool contain_predict_call(Node* node);

// Replacing the collected calls in an expression by the PredictBatch node's output columns.
struct ReplaceContext {
    Rewrite* rw;
    int output_varno;        // INDEX_VAR (Case 1) or OUTER_VAR (Case 2)
    int output_base;         // attno of output 0, minus 1
    List* vars;              // Case 1: Vars moved into P'.tlist, by position
    bool map_vars;           // Case 1: replace Vars by INDEX_VAR references
};

Node* replace_calls(Node* expr, ReplaceContext* cx);

// Adds to cx->vars the Vars an expression uses outside the collected calls.
void collect_vars(Node* expr, ReplaceContext* cx);

}  // namespace pg_predict::pg
