#include "plan/node_kinds.hpp"

extern "C" {
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
}

namespace pg_predict::pg {

bool is_scan(const Plan* plan) {
    switch (nodeTag(plan)) {
        case T_SeqScan:
        case T_SampleScan:
        case T_IndexScan:
        case T_IndexOnlyScan:
        case T_BitmapHeapScan:
        case T_TidScan:
        case T_TidRangeScan:
        case T_SubqueryScan:
        case T_FunctionScan:
        case T_TableFuncScan:
        case T_ValuesScan:
        case T_CteScan:
        case T_NamedTuplestoreScan:
        case T_WorkTableScan:
            return true;
        default:
            return false;
    }
}

bool is_join(const Plan* plan) {
    return IsA(plan, NestLoop) || IsA(plan, MergeJoin) || IsA(plan, HashJoin);
}

bool reads_one_child(const Plan* plan) {
    if (plan->lefttree == NULL || plan->righttree != NULL) return false;
    switch (nodeTag(plan)) {
        case T_Agg:
            // A combining (finalize) Agg does not evaluate its aggregates' arguments.
            return !DO_AGGSPLIT_COMBINE(((Agg*)plan)->aggsplit);
        case T_WindowAgg:
        case T_Result:
        case T_ProjectSet:
        case T_Group:
            return true;
        default:
            return false;
    }
}

Node* strip_relabel(Node* node) {
    while (node != NULL && IsA(node, RelabelType)) node = (Node*)((RelabelType*)node)->arg;
    return node;
}

Var* whole_row_var(Node* node) {
    node = strip_relabel(node);
    if (node != NULL && IsA(node, ConvertRowtypeExpr)) node = (Node*)((ConvertRowtypeExpr*)node)->arg;
    if (node == NULL || !IsA(node, Var)) return NULL;
    Var* var = (Var*)node;
    return var->varattno == 0 && !IS_SPECIAL_VARNO(var->varno) ? var : NULL;
}

AttrNumber target_position(Plan* plan, Expr* expr) {
    ListCell* lc;
    foreach (lc, plan->targetlist) {
        TargetEntry* tle = (TargetEntry*)lfirst(lc);
        if (equal(tle->expr, expr)) return tle->resno;
    }
    AttrNumber resno = list_length(plan->targetlist) + 1;
    plan->targetlist = lappend(plan->targetlist, makeTargetEntry(expr, resno, NULL, false));
    return resno;
}

Var* outer_var_for(Plan* child, AttrNumber resno) {
    TargetEntry* tle = (TargetEntry*)list_nth(child->targetlist, resno - 1);
    Node* expr = (Node*)tle->expr;
    return makeVar(OUTER_VAR, resno, exprType(expr), exprTypmod(expr), exprCollation(expr), 0);
}

}  // namespace pg_predict::pg
