// The planner hook: after PostgreSQL has planned a statement, find predict(), predict_proba(),
// transform(), decision_function() and score_samples() calls with a constant model name and
// move their evaluation into PredictBatch nodes.
//
// Two rewrites, depending on where a call sits:
//
//  * In a scan or join node (a target list or a filter), the call is evaluated over that
//    node's own tuples, and a node cannot be put below a scan. So the node P becomes
//    PredictBatch(P'): P' returns only the Vars the moved expressions need plus the features
//    (a whole-row argument becomes the model's feature columns: projection push-down), and the
//    PredictBatch node evaluates P's target list and filters over P's output plus the scores.
//
//  * In a node that reads one child (Agg, WindowAgg, Result, ProjectSet, Group), the call is
//    evaluated over the child's output: PredictBatch goes between the node and its child,
//    passes the child's columns through and appends the scores, which the node reads as
//    plain columns. A whole-row argument coming from a scan child is pushed down into it.
//
// Calls that cannot be batched (model name not a constant, a join clause of an outer join,
// odd arguments) stay as they are and run through the per-row function.
//
// The rewrite of one node is in three steps, each in its own file: call_collection.cpp finds the
// calls and decides where their features come from (feature_pushdown.cpp), changing no plan
// node; then the push-downs are applied and the calls replaced by the node's output columns;
// plan/node_build.cpp builds and costs the PredictBatch node. This file holds the two rewrites
// and the walk over the plan.
#include "plan/node_build.hpp"
#include "plan/call_collection.hpp"
#include "plan/early_exit_request.hpp"
#include "plan/feature_pushdown.hpp"
#include "plan/invalidation.hpp"
#include "plan/node_kinds.hpp"
#include "plan/planner_hook.hpp"
#include "preload.hpp"
#include "plan/predicate_specialization.hpp"
#include "plan/predict_calls.hpp"
#include "plan/version_pinning.hpp"
#include "settings.hpp"

extern "C" {
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/planner.h"
#include "optimizer/planmain.h"
#include "executor/executor.h"
}

namespace pg_predict::pg {

namespace {

planner_hook_type previous_planner_hook = NULL;

// Whether the node reads child column `attno` through a key array rather than an expression
// (grouping, partitioning, ordering columns).
bool used_as_key(const Plan* plan, AttrNumber attno) {
    auto contains = [attno](const AttrNumber* columns, int count) {
        for (int i = 0; i < count; i++)
            if (columns[i] == attno) return true;
        return false;
    };
    switch (nodeTag(plan)) {
        case T_Agg: {
            const Agg* agg = (const Agg*)plan;
            if (agg->chain != NIL) return true;  // grouping sets: be conservative
            return contains(agg->grpColIdx, agg->numCols);
        }
        case T_Group: return contains(((const Group*)plan)->grpColIdx, ((const Group*)plan)->numCols);
        case T_WindowAgg: {
            const WindowAgg* window = (const WindowAgg*)plan;
            return contains(window->partColIdx, window->partNumCols) ||
                   contains(window->ordColIdx, window->ordNumCols);
        }
        default: return false;
    }
}

bool references_outer_column(Node* node, AttrNumber* attno) {
    if (node == NULL) return false;
    if (IsA(node, Var) && ((Var*)node)->varno == OUTER_VAR && ((Var*)node)->varattno == *attno) return true;
    return expression_tree_walker(node, (bool (*)())references_outer_column, (void*)attno);
}

// An expression over P's output with each Var replaced by an OUTER_VAR reference to it in P's
// target list (added there when missing).
Node* vars_through(Node* node, Plan* plan) {
    if (node == NULL) return NULL;
    if (IsA(node, Var) && ((Var*)node)->varlevelsup == 0)
        return (Node*)outer_var_for(plan, target_position(plan, (Expr*)node));
    return expression_tree_mutator(node, (Node * (*)()) vars_through, (void*)plan);
}

// Case 1: P (a scan or a join) becomes PredictBatch(P').
Plan* rewrite_above(PlannedStmt* stmt, Plan* node) {
    Rewrite rw = {};
    rw.stmt = stmt;
    rw.node = node;
    rw.scanrelid = is_scan(node) ? (int)((Scan*)node)->scanrelid : 0;
    collect_calls(&rw, (Node*)node->targetlist);
    // Only whole filter conjuncts move; the others stay in P' and filter early.
    List* moved_qual = NIL;
    List* kept_qual = NIL;
    ListCell* lc;
    foreach (lc, node->qual) {
        int before = list_length(rw.calls);
        collect_calls(&rw, (Node*)lfirst(lc));
        bool has_call = list_length(rw.calls) > before || contain_predict_call((Node*)lfirst(lc));
        if (has_call)
            moved_qual = lappend(moved_qual, lfirst(lc));
        else
            kept_qual = lappend(kept_qual, lfirst(lc));
    }
    if (rw.failed || rw.calls == NIL) return node;
    specialize_inputs(&rw, kept_qual);  // a scan's own filter holds for the rows below the node
    apply_pushdowns(&rw);  // none here: a scan's own columns need no push-down

    ReplaceContext cx = {};
    cx.rw = &rw;
    collect_vars((Node*)node->targetlist, &cx);
    collect_vars((Node*)moved_qual, &cx);

    // P' returns the Vars, then every input expression.
    List* original_tlist = node->targetlist;
    node->targetlist = NIL;
    foreach (lc, cx.vars) target_position(node, (Expr*)lfirst(lc));
    int var_count = list_length(node->targetlist);
    foreach (lc, rw.inputs) {
        BatchInput* in = (BatchInput*)lfirst(lc);
        List* mapped = NIL;
        ListCell* e;
        foreach (e, in->exprs) {
            // A model name per row is evaluated by the node over the columns it reads, so that
            // the node can keep each column value's model (exec/per_row_models.cpp).
            if (in->named_per_row && e != list_head(in->exprs)) {
                mapped = lappend(mapped, vars_through((Node*)lfirst(e), node));
                continue;
            }
            mapped = lappend(mapped, IsA(lfirst(e), Const)
                                         ? lfirst(e)
                                         : outer_var_for(node, target_position(node, (Expr*)lfirst(e))));
        }
        in->exprs = mapped;
    }
    node->qual = kept_qual;
    // The parent reads only the Vars; feature columns after them go to the model alone, and the
    // node reads them from the child's tuple without keeping a copy.
    int passthrough = var_count;

    cx.output_varno = INDEX_VAR;
    cx.output_base = passthrough;
    cx.map_vars = true;
    List* tlist = (List*)replace_calls((Node*)original_tlist, &cx);
    List* qual = (List*)replace_calls((Node*)moved_qual, &cx);
    CustomScan* batch = make_batch_node(&rw, node, passthrough, tlist, qual);
    batch->scan.plan.plan_rows = node->plan_rows;
    batch->scan.plan.plan_width = node->plan_width;
    return &batch->scan.plan;
}

// Case 2: PredictBatch goes between P and its child.
void rewrite_below(PlannedStmt* stmt, Plan* node) {
    Plan* child = node->lefttree;
    int original_width = list_length(child->targetlist);
    Rewrite rw = {};
    rw.stmt = stmt;
    rw.node = node;
    rw.child = child;
    collect_calls(&rw, (Node*)node->targetlist);
    collect_calls(&rw, (Node*)node->qual);
    if (rw.failed || rw.calls == NIL) return;  // collecting changed nothing
    specialize_inputs(&rw, NIL);  // each scan's filter, read by the push-down
    apply_pushdowns(&rw);
    ReplaceContext cx = {};
    cx.rw = &rw;
    cx.output_varno = OUTER_VAR;
    cx.output_base = original_width;
    cx.map_vars = false;
    node->targetlist = (List*)replace_calls((Node*)node->targetlist, &cx);
    node->qual = (List*)replace_calls((Node*)node->qual, &cx);

    // A whole row the child built only for the model is not needed any more: return NULL in
    // its place so the scan (each partition's, under an Append) deforms just the feature columns.
    for (AttrNumber attno = 1; attno <= original_width; attno++) {
        if (!is_scan(child) && !IsA(child, Append)) break;
        List* scans = is_scan(child) ? list_make1(child) : partition_scans_returning_row((Append*)child, attno);
        if (scans == NIL || whole_row_var((Node*)((TargetEntry*)list_nth(((Plan*)linitial(scans))->targetlist,
                                                                         attno - 1))->expr) == NULL)
            continue;
        if (used_as_key(node, attno) || references_outer_column((Node*)node->targetlist, &attno) ||
            references_outer_column((Node*)node->qual, &attno))
            continue;
        bool used_by_input = false;
        ListCell* lc;
        foreach (lc, rw.inputs) {
            BatchInput* in = (BatchInput*)lfirst(lc);
            if (references_outer_column((Node*)in->exprs, &attno)) used_by_input = true;
        }
        if (used_by_input) continue;
        foreach (lc, scans) {
            TargetEntry* tle = (TargetEntry*)list_nth(((Plan*)lfirst(lc))->targetlist, attno - 1);
            tle->expr = (Expr*)makeNullConst(exprType((Node*)tle->expr), -1, InvalidOid);
        }
    }

    List* tlist = NIL;
    for (int i = 1; i <= original_width + list_length(rw.calls); i++) {
        TargetEntry* scan_entry = i <= original_width
                                      ? (TargetEntry*)list_nth(child->targetlist, i - 1)
                                      : NULL;
        Oid type;
        int32 typmod;
        Oid collation;
        if (scan_entry != NULL) {
            type = exprType((Node*)scan_entry->expr);
            typmod = exprTypmod((Node*)scan_entry->expr);
            collation = exprCollation((Node*)scan_entry->expr);
        } else {
            PredictCallKind kind = ((BatchOutput*)list_nth(rw.outputs, i - original_width - 1))->kind;
            type = predict_call_type(kind);
            typmod = -1;
            collation = predict_call_collation(kind);
        }
        tlist = lappend(tlist, makeTargetEntry((Expr*)makeVar(INDEX_VAR, i, type, typmod, collation, 0), i,
                                               NULL, false));
    }
    CustomScan* batch = make_batch_node(&rw, child, original_width, tlist, NIL);
    node->lefttree = &batch->scan.plan;
}

Plan* rewrite_plan(PlannedStmt* stmt, Plan* plan, bool needs_mark_restore);

List* rewrite_plan_list(PlannedStmt* stmt, List* plans) {
    ListCell* lc;
    foreach (lc, plans) lfirst(lc) = rewrite_plan(stmt, (Plan*)lfirst(lc), false);
    return plans;
}

Plan* rewrite_plan(PlannedStmt* stmt, Plan* plan, bool needs_mark_restore) {
    if (plan == NULL) return NULL;
    CHECK_FOR_INTERRUPTS();
    check_stack_depth();

    // Children first: a rewrite of this node looks at its child as it finally is.
    bool child_keeps_mark = needs_mark_restore && (IsA(plan, Result) || IsA(plan, ProjectSet));
    if (IsA(plan, MergeJoin)) {
        plan->lefttree = rewrite_plan(stmt, plan->lefttree, false);
        plan->righttree = rewrite_plan(stmt, plan->righttree, true);
    } else {
        plan->lefttree = rewrite_plan(stmt, plan->lefttree, child_keeps_mark);
        plan->righttree = rewrite_plan(stmt, plan->righttree, false);
    }
    switch (nodeTag(plan)) {
        case T_Append: ((Append*)plan)->appendplans = rewrite_plan_list(stmt, ((Append*)plan)->appendplans); break;
        case T_MergeAppend: ((MergeAppend*)plan)->mergeplans = rewrite_plan_list(stmt, ((MergeAppend*)plan)->mergeplans); break;
        case T_SubqueryScan: ((SubqueryScan*)plan)->subplan = rewrite_plan(stmt, ((SubqueryScan*)plan)->subplan, false); break;
        case T_CustomScan: ((CustomScan*)plan)->custom_plans = rewrite_plan_list(stmt, ((CustomScan*)plan)->custom_plans); break;
        default: break;
    }
    if (needs_mark_restore) return plan;  // a PredictBatch node cannot mark and restore

    // A primary key lookup's row gains nothing from a batch: its calls stay with the per-row
    // function, which costs a few microseconds less to plan and start (issue 49; the node's
    // rewrite and start cost more than one row's scoring).
    if (is_scan(plan) && returns_at_most_one_row(plan)) return plan;
    if (is_scan(plan) || is_join(plan)) return rewrite_above(stmt, plan);
    if (reads_one_child(plan)) rewrite_below(stmt, plan);
    return plan;
}

// Calls visit on every node of every plan tree of the statement (the main tree and the
// subplans), parents before children.
template <typename Visit>
void visit_plan(Plan* plan, Visit& visit) {
    if (plan == NULL) return;
    check_stack_depth();  // recursion over the plan tree; nothing here has a destructor
    visit(plan);
    visit_plan(plan->lefttree, visit);
    visit_plan(plan->righttree, visit);
    List* children = NIL;
    switch (nodeTag(plan)) {
        case T_Append: children = ((Append*)plan)->appendplans; break;
        case T_MergeAppend: children = ((MergeAppend*)plan)->mergeplans; break;
        case T_SubqueryScan: visit_plan(((SubqueryScan*)plan)->subplan, visit); break;
        case T_CustomScan: children = ((CustomScan*)plan)->custom_plans; break;
        default: break;
    }
    ListCell* lc;
    foreach (lc, children) visit_plan((Plan*)lfirst(lc), visit);
}

template <typename Visit>
void visit_statement(PlannedStmt* stmt, Visit visit) {
    visit_plan(stmt->planTree, visit);
    ListCell* lc;
    foreach (lc, stmt->subplans) visit_plan((Plan*)lfirst(lc), visit);
}

PlannedStmt* batching_planner(Query* parse, const char* query_string, int cursor_options,
                              ParamListInfo bound_params) {
    note_planned();
    bool pinned = pin_model_versions(parse);  // before Citus's planner writes shard queries
    PlannedStmt* stmt = previous_planner_hook
                            ? previous_planner_hook(parse, query_string, cursor_options, bound_params)
                            : standard_planner(parse, query_string, cursor_options, bound_params);
    if (pinned) depend_on_model_catalog(stmt);  // a deploy replans it
    if (!batching_enabled) return stmt;
    bool has_calls = false;
    int max_id = 0;
    visit_statement(stmt, [&](Plan* plan) {
        has_calls = has_calls || contain_predict_call((Node*)plan->targetlist) ||
                    contain_predict_call((Node*)plan->qual);
        max_id = Max(max_id, plan->plan_node_id);
    });
    if (!has_calls) return stmt;

    double outer_cost_saved = begin_batched_cost();
    stmt->planTree = rewrite_plan(stmt, stmt->planTree, false);
    stmt->subplans = rewrite_plan_list(stmt, stmt->subplans);
    reconsider_jit(stmt, end_batched_cost(outer_cost_saved));
    plan_top_k(stmt);

    // Nodes made here get ids after the highest one the planner used.
    int next_id = max_id + 1;
    visit_statement(stmt, [&](Plan* plan) {
        if (plan->plan_node_id < 0) plan->plan_node_id = next_id++;
    });

    // A scrollable cursor over a node that cannot go backwards needs a Material on top, as
    // standard_planner would have added.
    if ((cursor_options & CURSOR_OPT_SCROLL) && !ExecSupportsBackwardScan(stmt->planTree)) {
        Plan* material = materialize_finished_plan(stmt->planTree);
        material->plan_node_id = next_id++;
        stmt->planTree = material;
    }
    if (!pinned) depend_on_model_catalog(stmt);
    return stmt;
}

}  // namespace

void install_planner_hook() {
    previous_planner_hook = planner_hook;
    planner_hook = batching_planner;
}

}  // namespace pg_predict::pg
