#include "plan/node_build.hpp"

#include "exec/scan_methods.hpp"
#include "plan/early_exit_request.hpp"
#include "features.hpp"
#include "plan/node_kinds.hpp"
#include "plan/predict_calls.hpp"

extern "C" {
#include "jit/jit.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/plancat.h"
}

namespace pg_predict::pg {

namespace {

double batched_cost_saved = 0.0;

// custom_scan_tlist: the child's columns (as the child's Vars) and one entry per output.
List* scan_tlist_for(Plan* child, int passthrough, Rewrite* rw) {
    List* tlist = NIL;
    for (int i = 1; i <= passthrough; i++)
        tlist = lappend(tlist, makeTargetEntry((Expr*)outer_var_for(child, i), i, NULL, false));
    int j = 0;
    ListCell* lc;
    foreach (lc, rw->calls) {
        // For EXPLAIN VERBOSE: show the call with its model name, features elided.
        FuncExpr* call = (FuncExpr*)copyObjectImpl(lfirst(lc));
        BatchOutput* out = (BatchOutput*)list_nth(rw->outputs, j);
        BatchInput* in = (BatchInput*)list_nth(rw->inputs, out->input);
        // A name computed per row: the expression the node evaluates (over the child's output).
        if (in->named_per_row) linitial(call->args) = lsecond(in->exprs);
        lsecond(call->args) = in->source == FeatureSource::Columns
                                  ? (Node*)makeNullConst(RECORDOID, -1, InvalidOid)
                                  : (Node*)linitial(in->exprs);
        if (in->source == FeatureSource::Columns) {
            RowExpr* row = makeNode(RowExpr);
            row->args = NIL;  // the features read; constants stand for features the model ignores
            ListCell* e;
            foreach (e, in->exprs)
                if (!is_unread_feature((Node*)lfirst(e))) row->args = lappend(row->args, lfirst(e));
            row->row_typeid = RECORDOID;
            row->row_format = COERCE_IMPLICIT_CAST;
            row->location = -1;
            lsecond(call->args) = (Node*)row;
        }
        tlist = lappend(tlist, makeTargetEntry((Expr*)call, passthrough + j + 1, NULL, false));
        j++;
    }
    return tlist;
}

Bitmapset* params_of(List* exprs) {
    Bitmapset* params = NULL;
    ListCell* lc;
    foreach (lc, exprs) params = bms_join(params, pull_paramids((Expr*)lfirst(lc)));
    return params;
}

}  // namespace

namespace {

// Whether `plan` runs in parallel workers, each over part of the rows: a parallel-aware node
// below it, not below a Gather of its own.
bool reads_partial_rows(const Plan* plan) {
    if (plan == NULL || IsA(plan, Gather) || IsA(plan, GatherMerge)) return false;
    if (plan->parallel_aware) return true;
    if (reads_partial_rows(plan->lefttree) || reads_partial_rows(plan->righttree)) return true;
    List* children = IsA(plan, Append) ? ((const Append*)plan)->appendplans
                     : IsA(plan, MergeAppend) ? ((const MergeAppend*)plan)->mergeplans
                     : IsA(plan, SubqueryScan) ? list_make1(((const SubqueryScan*)plan)->subplan)
                     : NIL;
    ListCell* lc;
    foreach (lc, children)
        if (reads_partial_rows((const Plan*)lfirst(lc))) return true;
    return false;
}

}  // namespace

CustomScan* make_batch_node(Rewrite* rw, Plan* child, int passthrough, List* tlist, List* qual) {
    BatchPlan plan;
    plan.passthrough = passthrough;
    plan.num_inputs = list_length(rw->inputs);
    plan.inputs = (BatchInput*)palloc0(sizeof(BatchInput) * plan.num_inputs);
    for (int i = 0; i < plan.num_inputs; i++) plan.inputs[i] = *(BatchInput*)list_nth(rw->inputs, i);
    plan.num_outputs = list_length(rw->outputs);
    plan.outputs = (BatchOutput*)palloc0(sizeof(BatchOutput) * plan.num_outputs);
    for (int j = 0; j < plan.num_outputs; j++) plan.outputs[j] = *(BatchOutput*)list_nth(rw->outputs, j);
    plan_threshold(&plan, tlist, qual);

    CustomScan* cscan = makeNode(CustomScan);
    cscan->methods = &predict_batch_scan_methods;
    cscan->scan.scanrelid = 0;
    cscan->scan.plan.lefttree = child;
    cscan->scan.plan.targetlist = tlist;
    cscan->scan.plan.qual = qual;
    cscan->custom_scan_tlist = scan_tlist_for(child, passthrough, rw);
    batch_plan_store(&plan, &cscan->custom_private, &cscan->custom_exprs);

    // Scoring a batch costs about an operator per row and call; the planner costed each call
    // as a function with COST 1000.
    double rows = Max(child->plan_rows, 1.0);
    double batched = rows * list_length(rw->calls) * cpu_operator_cost;
    QualCost per_row_calls = {0, 0};
    ListCell* lc;
    foreach (lc, rw->calls) add_function_cost(NULL, ((FuncExpr*)lfirst(lc))->funcid, (Node*)lfirst(lc), &per_row_calls);
    batched_cost_saved += Max(rows * per_row_calls.per_tuple - batched, 0.0);

    Plan* node = &cscan->scan.plan;
    node->startup_cost = child->startup_cost;
    node->total_cost = child->total_cost + batched;
    node->plan_rows = child->plan_rows;
    node->plan_width = child->plan_width;
    // Under a Gather, the node is "parallel aware" only to get its shared memory: the workers
    // leave their EXPLAIN ANALYZE counters there (exec/worker_counters.cpp). It divides no work.
    node->parallel_aware = reads_partial_rows(child);
    node->parallel_safe = child->parallel_safe;
    Bitmapset* params = params_of(cscan->custom_exprs);
    params = bms_join(params, params_of(tlist));
    params = bms_join(params, params_of(qual));
    node->extParam = bms_union(child->extParam, params);
    node->allParam = bms_union(child->allParam, params);
    node->plan_node_id = -1;  // numbered once the whole statement is rewritten
    return cscan;
}

double begin_batched_cost() {
    double outer = batched_cost_saved;
    batched_cost_saved = 0.0;
    return outer;
}

double end_batched_cost(double outer) {
    double saved = batched_cost_saved;
    batched_cost_saved = outer;
    return saved;
}

void reconsider_jit(PlannedStmt* stmt, double cost_saved) {
    if (!(stmt->jitFlags & PGJIT_PERFORM) || cost_saved <= 0.0) return;
    double cost = stmt->planTree->total_cost - cost_saved;
    if (cost <= jit_above_cost) {
        stmt->jitFlags = PGJIT_NONE;
        return;
    }
    if (jit_optimize_above_cost < 0 || cost <= jit_optimize_above_cost) stmt->jitFlags &= ~PGJIT_OPT3;
    if (jit_inline_above_cost < 0 || cost <= jit_inline_above_cost) stmt->jitFlags &= ~PGJIT_INLINE;
}

}  // namespace pg_predict::pg
