#include "plan/node_kinds.hpp"

extern "C" {
#include "access/genam.h"
#include "access/stratnum.h"
#include "catalog/pg_am.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
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

bool returns_at_most_one_row(const Plan* plan) {
    Oid index;
    List* quals;
    if (IsA(plan, IndexScan)) {
        index = ((const IndexScan*)plan)->indexid;
        quals = ((const IndexScan*)plan)->indexqual;
    } else if (IsA(plan, IndexOnlyScan)) {
        index = ((const IndexOnlyScan*)plan)->indexid;
        quals = ((const IndexOnlyScan*)plan)->indexqual;
    } else {
        return false;
    }
    Relation rel = index_open(index, AccessShareLock);  // the planner holds it already
    const Form_pg_index form = rel->rd_index;
    bool one = rel->rd_rel->relam == BTREE_AM_OID && form->indisunique && form->indimmediate &&
               form->indnkeyatts > 0 && form->indnkeyatts <= 32;
    uint32 equal_columns = 0;
    ListCell* lc;
    foreach (lc, quals) {
        if (!one) break;
        Node* clause = (Node*)lfirst(lc);
        if (!IsA(clause, OpExpr) || list_length(((OpExpr*)clause)->args) != 2) continue;
        OpExpr* op = (OpExpr*)clause;
        Node* left = strip_relabel((Node*)linitial(op->args));
        // the index qual's key side is the index column, as an INDEX_VAR Var
        if (left == NULL || !IsA(left, Var) || ((Var*)left)->varno != INDEX_VAR) continue;
        AttrNumber column = ((Var*)left)->varattno;
        if (column < 1 || column > form->indnkeyatts) continue;
        if (get_op_opfamily_strategy(op->opno, rel->rd_opfamily[column - 1]) == BTEqualStrategyNumber)
            equal_columns |= 1u << (column - 1);
    }
    one = one && equal_columns == (form->indnkeyatts == 32 ? 0xffffffffu : (1u << form->indnkeyatts) - 1);
    index_close(rel, AccessShareLock);
    return one;
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
