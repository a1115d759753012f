#include "plan/early_exit_request.hpp"

#include <cmath>

#include "exec/scan_methods.hpp"

extern "C" {
#include "nodes/nodeFuncs.h"
#include "utils/lsyscache.h"
}

namespace pg_predict::pg {

namespace {

// float8's comparison operators (pg_operator.dat)
constexpr Oid kFloat8Less = 672, kFloat8LessEqual = 673, kFloat8Greater = 674, kFloat8GreaterEqual = 675;

// The largest top-K kept: a heap of this many doubles per node (8 MB).
constexpr int64 kMaxTopK = 1000000;

// The output and column an expression over the node's scan tuple reads: predict's value (a Var
// of a predict() output, column -1) or a constant element of predict_proba's array.
bool output_value(const BatchPlan* plan, Node* expr, int* output, int* column) {
    // A node with models named per row hands its rows up in order and screens none (the screen
    // and the heap need one program for the whole batch).
    for (int i = 0; i < plan->num_inputs; i++)
        if (plan->inputs[i].named_per_row) return false;
    auto output_of = [plan](Node* node, PredictCallKind kind) {
        if (node == NULL || !IsA(node, Var)) return -1;
        Var* var = (Var*)node;
        int j = var->varattno - plan->passthrough - 1;
        if (var->varno != INDEX_VAR || var->varlevelsup != 0 || j < 0 || j >= plan->num_outputs ||
            plan->outputs[j].kind != kind)
            return -1;
        return j;
    };
    if (expr != NULL && IsA(expr, Var)) {
        *output = output_of(expr, PredictCallKind::Predict);
        *column = -1;
        return *output >= 0;
    }
    if (expr == NULL || !IsA(expr, SubscriptingRef)) return false;
    SubscriptingRef* ref = (SubscriptingRef*)expr;
    if (ref->refassgnexpr != NULL || ref->reflowerindexpr != NIL || list_length(ref->refupperindexpr) != 1) return false;
    Node* index = (Node*)linitial(ref->refupperindexpr);
    if (!IsA(index, Const) || ((Const*)index)->constisnull || ((Const*)index)->consttype != INT4OID) return false;
    int k = DatumGetInt32(((Const*)index)->constvalue);
    *output = output_of((Node*)ref->refexpr, PredictCallKind::PredictProba);
    *column = k - 1;  // predict_proba's arrays start at 1
    return *output >= 0 && k >= 1;
}

// A conjunct `value op constant` (either side), as the comparison the value must pass.
bool threshold_conjunct(const BatchPlan* plan, Node* clause, int* output, int* column, Oid* op, double* bound) {
    if (!IsA(clause, OpExpr) || list_length(((OpExpr*)clause)->args) != 2) return false;
    OpExpr* opexpr = (OpExpr*)clause;
    Node* left = (Node*)linitial(opexpr->args);
    Node* right = (Node*)lsecond(opexpr->args);
    Oid opno = opexpr->opno;
    if (IsA(left, Const)) {
        std::swap(left, right);
        opno = get_commutator(opno);
    }
    if (opno != kFloat8Less && opno != kFloat8LessEqual && opno != kFloat8Greater && opno != kFloat8GreaterEqual)
        return false;
    if (!IsA(right, Const) || ((Const*)right)->constisnull || ((Const*)right)->consttype != FLOAT8OID) return false;
    *bound = DatumGetFloat8(((Const*)right)->constvalue);
    *op = opno;
    // NaN sorts above every number in PostgreSQL: leave such comparisons to the filter.
    return !std::isnan(*bound) && output_value(plan, left, output, column);
}

struct OutputsOfInput {
    const BatchPlan* plan;
    int input;
};

bool reads_outputs_of(Node* node, OutputsOfInput* cx) {
    if (node == NULL) return false;
    if (IsA(node, Var)) {
        Var* var = (Var*)node;
        int j = var->varattno - cx->plan->passthrough - 1;
        return var->varno == INDEX_VAR && j >= 0 && j < cx->plan->num_outputs && cx->plan->outputs[j].input == cx->input;
    }
    return expression_tree_walker(node, (bool (*)())reads_outputs_of, (void*)cx);
}

bool is_batch_node(Plan* plan) {
    return plan != NULL && IsA(plan, CustomScan) && ((CustomScan*)plan)->methods == &predict_batch_scan_methods;
}

// Limit's count or offset as a number: false for a parameter, an expression or NULL (LIMIT ALL).
bool constant_count(Node* node, int64* value) {
    if (node == NULL) {
        *value = 0;
        return true;
    }
    if (!IsA(node, Const) || ((Const*)node)->constisnull || ((Const*)node)->consttype != INT8OID) return false;
    *value = DatumGetInt64(((Const*)node)->constvalue);
    return *value >= 0;
}

void mark_top_k(Limit* limit) {
    int64 count, offset;
    if (limit->limitCount == NULL || !constant_count(limit->limitCount, &count) ||
        !constant_count(limit->limitOffset, &offset) || count == 0 || count > kMaxTopK || offset > kMaxTopK - count)
        return;
    Plan* below = limit->plan.lefttree;
    if (below != NULL && IsA(below, GatherMerge)) below = below->lefttree;
    if (below == NULL || !IsA(below, Sort) || !is_batch_node(below->lefttree)) return;
    Sort* sort = (Sort*)below;
    CustomScan* batch = (CustomScan*)below->lefttree;
    if (sort->numCols < 1 || sort->sortColIdx[0] < 1 || sort->sortColIdx[0] > list_length(batch->scan.plan.targetlist))
        return;
    bool descending;
    if (sort->sortOperators[0] == kFloat8Less)
        descending = false;
    else if (sort->sortOperators[0] == kFloat8Greater)
        descending = true;
    else
        return;
    BatchPlan* plan = batch_plan_load(batch->custom_private, batch->custom_exprs);
    TargetEntry* key = (TargetEntry*)list_nth(batch->scan.plan.targetlist, sort->sortColIdx[0] - 1);
    int output, column;
    if (!output_value(plan, (Node*)key->expr, &output, &column)) return;
    EarlyExitPlan* e = &plan->early_exit;
    if (e->output >= 0 && (e->output != output || e->column != column)) return;  // one value per node
    e->output = output;
    e->column = column;
    e->top_k = count + offset;
    e->descending = descending;
    e->nulls_first = sort->nullsFirst[0];
    batch_plan_store(plan, &batch->custom_private, &batch->custom_exprs);
}

void visit(Plan* plan) {
    if (plan == NULL) return;
    check_stack_depth();
    if (IsA(plan, Limit)) mark_top_k((Limit*)plan);
    visit(plan->lefttree);
    visit(plan->righttree);
    List* children = NIL;
    switch (nodeTag(plan)) {
        case T_Append: children = ((Append*)plan)->appendplans; break;
        case T_MergeAppend: children = ((MergeAppend*)plan)->mergeplans; break;
        case T_SubqueryScan: visit(((SubqueryScan*)plan)->subplan); break;
        case T_CustomScan: children = ((CustomScan*)plan)->custom_plans; break;
        default: break;
    }
    ListCell* lc;
    foreach (lc, children) visit((Plan*)lfirst(lc));
}

}  // namespace

void plan_threshold(BatchPlan* plan, List* tlist, List* qual) {
    EarlyExitPlan* e = &plan->early_exit;
    early_exit_none(e);
    List* conjuncts = NIL;  // positions of the threshold's conjuncts
    int position = 0;
    ListCell* lc;
    foreach (lc, qual) {
        int output, column;
        Oid op;
        double bound;
        if (threshold_conjunct(plan, (Node*)lfirst(lc), &output, &column, &op, &bound) &&
            (e->output < 0 || (e->output == output && e->column == column))) {
            e->output = output;
            e->column = column;
            const bool strict = op == kFloat8Less || op == kFloat8Greater;
            if (op == kFloat8Greater || op == kFloat8GreaterEqual) {
                if (bound > e->lower || (bound == e->lower && strict)) e->lower = bound, e->lower_strict = strict;
            } else if (bound < e->upper || (bound == e->upper && strict)) {
                e->upper = bound, e->upper_strict = strict;
            }
            conjuncts = lappend_int(conjuncts, position);
        }
        position++;
    }
    if (e->output < 0) return;
    // The node applies the conjuncts itself only when nothing else reads this model's outputs:
    // then a row certain to pass is never scored.
    OutputsOfInput cx = {plan, plan->outputs[e->output].input};
    bool read_elsewhere = reads_outputs_of((Node*)tlist, &cx);
    position = 0;
    foreach (lc, qual) {
        if (!list_member_int(conjuncts, position) && reads_outputs_of((Node*)lfirst(lc), &cx)) read_elsewhere = true;
        position++;
    }
    if (!read_elsewhere) e->owned = conjuncts;
}

void plan_top_k(PlannedStmt* stmt) {
    visit(stmt->planTree);
    ListCell* lc;
    foreach (lc, stmt->subplans) visit((Plan*)lfirst(lc));
}

}  // namespace pg_predict::pg
