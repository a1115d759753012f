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
#include "batch_node.hpp"
#include "batch_plan.hpp"
#include "catalog.hpp"
#include "features.hpp"
#include "model_binding.hpp"
#include "plan_invalidation.hpp"
#include "planner_hook.hpp"
#include "settings.hpp"

extern "C" {
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "optimizer/planmain.h"
#include "optimizer/plancat.h"
#include "optimizer/planner.h"
#include "parser/parsetree.h"
#include "access/relation.h"
#include "executor/executor.h"
#include "jit/jit.h"
}

namespace pg_predict::pg {

namespace {

planner_hook_type previous_planner_hook = NULL;

// Planner cost of the calls moved into PredictBatch nodes by the statement being rewritten, less
// what they cost batched (one operator per row and call). Saved and restored around a nested
// planner call (the catalog lookup plans SPI queries).
double batched_cost_saved = 0.0;

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
    bool failed;              // something we cannot batch here: leave the node alone
};

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

// Nodes whose expressions are evaluated over the single child's output.
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

// The constant model name of a call, or NULL.
const char* constant_model_name(FuncExpr* call) {
    if (list_length(call->args) != 2) return NULL;
    Node* name = strip_relabel((Node*)linitial(call->args));
    if (name == NULL || !IsA(name, Const) || ((Const*)name)->constisnull) return NULL;
    Const* constant = (Const*)name;
    if (constant->consttype != TEXTOID && constant->consttype != VARCHAROID) return NULL;
    return TextDatumGetCString(constant->constvalue);
}

// A whole-row Var of a plain table (seen through a partition's row-type conversion), or NULL.
Var* whole_row_var(Node* node) {
    node = strip_relabel(node);
    if (node != NULL && IsA(node, ConvertRowtypeExpr)) node = (Node*)((ConvertRowtypeExpr*)node)->arg;
    if (node == NULL || !IsA(node, Var)) return NULL;
    Var* var = (Var*)node;
    return var->varattno == 0 && !IS_SPECIAL_VARNO(var->varno) ? var : NULL;
}

// Feature Vars for a whole-row Var of relation `rtindex`, in the scan's own terms; NIL if the
// range table entry is not a plain relation. Errors (missing or non-numeric column) here are
// the plan-time errors users see.
List* feature_columns_of_relation(PlannedStmt* stmt, Index rtindex, const CatalogEntry* entry) {
    RangeTblEntry* rte = rt_fetch(rtindex, stmt->rtable);
    if (rte->rtekind != RTE_RELATION) return NIL;
    Relation relation = relation_open(rte->relid, NoLock);
    TupleDesc desc = RelationGetDescr(relation);
    AttrNumber* attnums = (AttrNumber*)palloc(sizeof(AttrNumber) * Max(entry->num_features, 1));
    resolve_feature_columns(entry, desc, RelationGetRelationName(relation), attnums);
    List* vars = NIL;
    for (int f = 0; f < entry->num_features; f++) {
        if (attnums[f] == InvalidAttrNumber) {  // a feature the model never reads: not fetched
            vars = lappend(vars, makeConst(FLOAT4OID, -1, InvalidOid, sizeof(float4), Float4GetDatum(0.0f),
                                           false, true));
            continue;
        }
        Form_pg_attribute attribute = TupleDescAttr(desc, attnums[f] - 1);
        vars = lappend(vars, makeVar(rtindex, attnums[f], attribute->atttypid, attribute->atttypmod,
                                     attribute->attcollation, 0));
    }
    relation_close(relation, NoLock);
    return vars;
}

// Position (1-based) of `expr` in `plan`'s target list, appending it if absent.
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

// The scans under `append` when every one of them is a plain table's scan returning its whole
// row at `attno` (a partitioned table read by an aggregate); NIL otherwise.
List* partition_scans_returning_row(Append* append, AttrNumber attno) {
    List* scans = NIL;
    ListCell* lc;
    foreach (lc, append->appendplans) {
        Plan* child = (Plan*)lfirst(lc);
        if (!is_scan(child) || ((Scan*)child)->scanrelid == 0 ||
            list_length(child->targetlist) != list_length(append->plan.targetlist))
            return NIL;
        TargetEntry* tle = (TargetEntry*)list_nth(child->targetlist, attno - 1);
        Var* row = whole_row_var((Node*)tle->expr);
        if (row == NULL || (Index)row->varno != ((Scan*)child)->scanrelid) return NIL;
        scans = lappend(scans, child);
    }
    return scans;
}

// Pushes the model's feature columns into every partition's scan under `append`, at the same
// new positions in each (looked up by name: partitions may order their columns differently),
// and has the Append pass them up. Returns the features as the Append's output Vars (constants
// for features the model ignores), or NIL when the children are not such scans.
List* push_features_through_append(PlannedStmt* stmt, Append* append, AttrNumber attno,
                                   const CatalogEntry* entry) {
    List* scans = partition_scans_returning_row(append, attno);
    if (scans == NIL) return NIL;
    List* columns_per_scan = NIL;
    ListCell* lc;
    foreach (lc, scans) {
        List* columns = feature_columns_of_relation(stmt, ((Scan*)lfirst(lc))->scanrelid, entry);
        if (columns == NIL) return NIL;
        columns_per_scan = lappend(columns_per_scan, columns);
    }
    List* features = NIL;
    for (int f = 0; f < entry->num_features; f++) {
        Node* first = (Node*)list_nth((List*)linitial(columns_per_scan), f);
        if (IsA(first, Const)) {  // ignored by the model: the same constant for every partition
            features = lappend(features, first);
            continue;
        }
        AttrNumber resno = list_length(append->plan.targetlist) + 1;
        ListCell* scan;
        ListCell* columns;
        forboth (scan, scans, columns, columns_per_scan) {
            Plan* child = (Plan*)lfirst(scan);
            child->targetlist = lappend(child->targetlist,
                                        makeTargetEntry((Expr*)list_nth((List*)lfirst(columns), f), resno, NULL, false));
        }
        Var* column = (Var*)first;
        Var* passed_up = makeVar(OUTER_VAR, resno, column->vartype, column->vartypmod, column->varcollid, 0);
        append->plan.targetlist = lappend(append->plan.targetlist, makeTargetEntry((Expr*)passed_up, resno, NULL, false));
        features = lappend(features, passed_up);
    }
    return features;
}

// The feature source of a call's argument, in the context of the node being rewritten.
// Returns false when the argument is nothing we batch.
bool feature_source(Rewrite* rw, Node* arg, const CatalogEntry* entry, FeatureSource* source,
                    List** exprs) {
    Node* bare = strip_relabel(arg);
    if (bare != NULL && IsA(bare, ArrayExpr) && !((ArrayExpr*)bare)->multidims && !entry->has_text) {
        List* elements = ((ArrayExpr*)bare)->elements;
        if (converter_for_type(((ArrayExpr*)bare)->element_typeid) == NULL) return false;
        if (list_length(elements) != entry->num_features)
            ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                            errmsg("model \"%s\" expects %d features, but the array has %d elements",
                                   entry->name, entry->num_features, list_length(elements))));
        *source = FeatureSource::Columns;
        *exprs = list_copy(elements);
        return true;
    }
    Var* whole_row = whole_row_var(arg);
    if (rw->child == NULL && whole_row != NULL && (int)whole_row->varno == rw->scanrelid) {
        List* columns = feature_columns_of_relation(rw->stmt, whole_row->varno, entry);
        if (columns != NIL) {
            *source = FeatureSource::Columns;
            *exprs = columns;
            return true;
        }
    }
    if (rw->child != NULL && bare != NULL && IsA(bare, Var) && ((Var*)bare)->varno == OUTER_VAR &&
        is_scan(rw->child) && ((Scan*)rw->child)->scanrelid > 0) {
        TargetEntry* tle = (TargetEntry*)list_nth(rw->child->targetlist, ((Var*)bare)->varattno - 1);
        Var* scanned = whole_row_var((Node*)tle->expr);
        if (scanned != NULL && (Index)scanned->varno == ((Scan*)rw->child)->scanrelid) {
            List* columns = feature_columns_of_relation(rw->stmt, scanned->varno, entry);
            if (columns != NIL) {
                List* vars = NIL;
                ListCell* lc;
                foreach (lc, columns)
                    vars = lappend(vars, IsA(lfirst(lc), Const)
                                             ? lfirst(lc)
                                             : outer_var_for(rw->child, target_position(rw->child, (Expr*)lfirst(lc))));
                *source = FeatureSource::Columns;
                *exprs = vars;
                return true;
            }
        }
    }
    if (rw->child != NULL && bare != NULL && IsA(bare, Var) && ((Var*)bare)->varno == OUTER_VAR &&
        IsA(rw->child, Append)) {
        List* columns = push_features_through_append(rw->stmt, (Append*)rw->child, ((Var*)bare)->varattno, entry);
        if (columns != NIL) {
            *source = FeatureSource::Columns;
            *exprs = columns;
            return true;
        }
    }
    Oid type = exprType(arg);
    if (type_is_rowtype(type)) {
        *source = FeatureSource::Row;
        *exprs = list_make1(arg);
        return true;
    }
    if (OidIsValid(get_element_type(getBaseType(type)))) {
        *source = FeatureSource::Array;
        *exprs = list_make1(arg);
        return true;
    }
    return false;
}

// Registers a call as an output of the node; returns its index or -1 if it cannot be batched.
int add_call(Rewrite* rw, FuncExpr* call, PredictCallKind kind) {
    int j = 0;
    ListCell* lc;
    foreach (lc, rw->calls) {
        if (equal(lfirst(lc), call)) return j;
        j++;
    }
    const char* model = constant_model_name(call);
    if (model == NULL) return -1;
    Node* arg = (Node*)lsecond(call->args);

    // Calls of one model over the same argument share an input (one program run per batch)
    // when they need the same program: decision_function and score_samples have their own.
    int input = -1, i = 0;
    foreach (lc, rw->inputs) {
        BatchInput* in = (BatchInput*)lfirst(lc);
        if (strcmp(in->model, model) == 0 && in->output == model_output(kind) &&
            equal(list_nth(rw->input_args, i), arg)) {
            input = i;
            break;
        }
        i++;
    }
    if (input >= 0) check_call(catalog_lookup_for_planning(model), kind);  // the input was made for another call
    if (input < 0) {
        CatalogEntry* entry = catalog_lookup_for_planning(model);
        check_call(entry, kind);
        BatchInput* in = (BatchInput*)palloc0(sizeof(BatchInput));
        in->output = model_output(kind);
        if (!feature_source(rw, arg, entry, &in->source, &in->exprs)) return -1;
        in->model = pstrdup(model);
        in->num_features = entry->num_features;
        in->model_version = entry->id;
        note_planned_version(model, entry->id);
        // EXPLAIN's description: the format, a model without trees (a linear model, an SVM, ...)
        // named by its estimator, and the shape ("3 features -> 2 classes").
        const char* shape =
            entry->num_outputs > 1
                ? psprintf("%d feature%s -> %d outputs", entry->num_features, entry->num_features == 1 ? "" : "s",
                           entry->num_outputs)
            : entry->classification
                ? psprintf("%d feature%s -> %d classes", entry->num_features, entry->num_features == 1 ? "" : "s",
                           entry->num_classes)
            : entry->transformer
                ? psprintf("%d feature%s -> transformed columns", entry->num_features, entry->num_features == 1 ? "" : "s")
                : psprintf("%d feature%s -> 1 value", entry->num_features, entry->num_features == 1 ? "" : "s");
        in->format = entry->trees > 0 || entry->objective[0] == '\0'
                         ? psprintf("%s, %s", entry->format, shape)
                         : psprintf("%s, %s, %s", entry->format, entry->objective, shape);
        // Which version a plan scores, once a name has more than one.
        if (entry->version > 1) in->format = psprintf("version %d, %s", entry->version, in->format);
        in->strategy = entry->strategy;
        in->trees = entry->trees;
        in->depth = entry->depth;
        rw->inputs = lappend(rw->inputs, in);
        rw->input_args = lappend(rw->input_args, arg);
        input = list_length(rw->inputs) - 1;
    }
    BatchOutput* out = (BatchOutput*)palloc0(sizeof(BatchOutput));
    out->input = input;
    out->kind = kind;
    rw->outputs = lappend(rw->outputs, out);
    rw->calls = lappend(rw->calls, call);
    return list_length(rw->calls) - 1;
}

// Walks expressions, registering every batchable call (not descending into one).
bool collect_calls_walker(Node* node, Rewrite* rw) {
    if (node == NULL) return false;
    if (IsA(node, SubPlan) || IsA(node, AlternativeSubPlan)) {
        rw->failed = true;  // moving a SubPlan between nodes is not worth the risk
        return true;
    }
    if (IsA(node, FuncExpr)) {
        PredictCallKind kind = predict_call_kind(((FuncExpr*)node)->funcid);
        if (kind != PredictCallKind::None && add_call(rw, (FuncExpr*)node, kind) >= 0) return false;
    }
    return expression_tree_walker(node, (bool (*)())collect_calls_walker, (void*)rw);
}

struct ReplaceContext {
    Rewrite* rw;
    int output_varno;        // INDEX_VAR (Case 1) or OUTER_VAR (Case 2)
    int output_base;         // attno of output 0, minus 1
    List* vars;              // Case 1: Vars moved into P'.tlist, by position
    bool map_vars;           // Case 1: replace Vars by INDEX_VAR references
};

Var* output_var(ReplaceContext* cx, int j) {
    PredictCallKind kind = ((BatchOutput*)list_nth(cx->rw->outputs, j))->kind;
    return makeVar(cx->output_varno, cx->output_base + j + 1, predict_call_type(kind), -1,
                   predict_call_collation(kind), 0);
}

Node* replace_mutator(Node* node, ReplaceContext* cx) {
    if (node == NULL) return NULL;
    if (IsA(node, FuncExpr)) {
        int j = 0;
        ListCell* lc;
        foreach (lc, cx->rw->calls) {
            if (equal(lfirst(lc), node)) return (Node*)output_var(cx, j);
            j++;
        }
    }
    if (cx->map_vars && IsA(node, Var)) {
        int position = 1;
        ListCell* lc;
        foreach (lc, cx->vars) {
            if (equal(lfirst(lc), node)) break;
            position++;
        }
        Var* var = (Var*)node;
        return (Node*)makeVar(INDEX_VAR, position, var->vartype, var->vartypmod, var->varcollid, 0);
    }
    return expression_tree_mutator(node, (Node * (*)()) replace_mutator, (void*)cx);
}

// Collects the Vars an expression uses outside the batched calls.
bool collect_vars_walker(Node* node, ReplaceContext* cx) {
    if (node == NULL) return false;
    if (IsA(node, FuncExpr)) {
        ListCell* lc;
        foreach (lc, cx->rw->calls)
            if (equal(lfirst(lc), node)) return false;
    }
    if (IsA(node, Var)) {
        if (!list_member(cx->vars, node)) cx->vars = lappend(cx->vars, node);
        return false;
    }
    return expression_tree_walker(node, (bool (*)())collect_vars_walker, (void*)cx);
}

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
        lsecond(call->args) = in->source == FeatureSource::Columns
                                  ? (Node*)makeNullConst(RECORDOID, -1, InvalidOid)
                                  : (Node*)linitial(in->exprs);
        if (in->source == FeatureSource::Columns) {
            RowExpr* row = makeNode(RowExpr);
            row->args = NIL;  // the features read; constants stand for features the model ignores
            ListCell* e;
            foreach (e, in->exprs)
                if (!IsA(lfirst(e), Const)) row->args = lappend(row->args, lfirst(e));
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

CustomScan* make_batch_node(Rewrite* rw, Plan* child, int passthrough, List* tlist, List* qual) {
    BatchPlan plan;
    plan.passthrough = passthrough;
    plan.num_inputs = list_length(rw->inputs);
    plan.inputs = (BatchInput*)palloc0(sizeof(BatchInput) * plan.num_inputs);
    for (int i = 0; i < plan.num_inputs; i++) plan.inputs[i] = *(BatchInput*)list_nth(rw->inputs, i);
    plan.num_outputs = list_length(rw->outputs);
    plan.outputs = (BatchOutput*)palloc0(sizeof(BatchOutput) * plan.num_outputs);
    for (int j = 0; j < plan.num_outputs; j++) plan.outputs[j] = *(BatchOutput*)list_nth(rw->outputs, j);

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
    node->parallel_aware = false;
    node->parallel_safe = child->parallel_safe;
    Bitmapset* params = params_of(cscan->custom_exprs);
    params = bms_join(params, params_of(tlist));
    params = bms_join(params, params_of(qual));
    node->extParam = bms_union(child->extParam, params);
    node->allParam = bms_union(child->allParam, params);
    node->plan_node_id = -1;  // numbered once the whole statement is rewritten
    return cscan;
}

// Case 1: P (a scan or a join) becomes PredictBatch(P').
Plan* rewrite_above(PlannedStmt* stmt, Plan* node) {
    Rewrite rw = {};
    rw.stmt = stmt;
    rw.node = node;
    rw.scanrelid = is_scan(node) ? (int)((Scan*)node)->scanrelid : 0;
    collect_calls_walker((Node*)node->targetlist, &rw);
    // Only whole filter conjuncts move; the others stay in P' and filter early.
    List* moved_qual = NIL;
    List* kept_qual = NIL;
    ListCell* lc;
    foreach (lc, node->qual) {
        int before = list_length(rw.calls);
        collect_calls_walker((Node*)lfirst(lc), &rw);
        bool has_call = list_length(rw.calls) > before || contain_predict_call((Node*)lfirst(lc));
        if (has_call)
            moved_qual = lappend(moved_qual, lfirst(lc));
        else
            kept_qual = lappend(kept_qual, lfirst(lc));
    }
    if (rw.failed || rw.calls == NIL) return node;

    ReplaceContext cx = {};
    cx.rw = &rw;
    collect_vars_walker((Node*)node->targetlist, &cx);
    collect_vars_walker((Node*)moved_qual, &cx);

    // P' returns the Vars, then every input expression.
    List* original_tlist = node->targetlist;
    node->targetlist = NIL;
    foreach (lc, cx.vars) target_position(node, (Expr*)lfirst(lc));
    int var_count = list_length(node->targetlist);
    foreach (lc, rw.inputs) {
        BatchInput* in = (BatchInput*)lfirst(lc);
        List* mapped = NIL;
        ListCell* e;
        foreach (e, in->exprs)
            mapped = lappend(mapped, IsA(lfirst(e), Const)
                                         ? lfirst(e)
                                         : outer_var_for(node, target_position(node, (Expr*)lfirst(e))));
        in->exprs = mapped;
    }
    node->qual = kept_qual;
    // The parent reads only the Vars; feature columns after them go to the model alone, and the
    // node reads them from the child's tuple without keeping a copy.
    int passthrough = var_count;

    cx.output_varno = INDEX_VAR;
    cx.output_base = passthrough;
    cx.map_vars = true;
    List* tlist = (List*)replace_mutator((Node*)original_tlist, &cx);
    List* qual = (List*)replace_mutator((Node*)moved_qual, &cx);
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
    collect_calls_walker((Node*)node->targetlist, &rw);
    collect_calls_walker((Node*)node->qual, &rw);
    if (rw.failed || rw.calls == NIL) {
        // Undo any feature columns pushed into the child (and an Append's scans) while collecting.
        child->targetlist = list_truncate(child->targetlist, original_width);
        if (IsA(child, Append)) {
            ListCell* lc;
            foreach (lc, ((Append*)child)->appendplans) {
                Plan* scan = (Plan*)lfirst(lc);
                scan->targetlist = list_truncate(scan->targetlist, original_width);
            }
        }
        return;
    }
    ReplaceContext cx = {};
    cx.rw = &rw;
    cx.output_varno = OUTER_VAR;
    cx.output_base = original_width;
    cx.map_vars = false;
    node->targetlist = (List*)replace_mutator((Node*)node->targetlist, &cx);
    node->qual = (List*)replace_mutator((Node*)node->qual, &cx);

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

bool contains_call_walker(Node* node, void* context) {
    if (node == NULL) return false;
    if (IsA(node, FuncExpr) && predict_call_kind(((FuncExpr*)node)->funcid) != PredictCallKind::None)
        return true;
    return expression_tree_walker(node, (bool (*)())contains_call_walker, context);
}

// standard_planner chose JIT compilation by the plan's total cost, with every predict call
// costed as a per-row function call. JIT cannot speed up a model, and batched calls cost a
// small part of that: decide again without their cost (only ever less JIT, never more). A
// 1M-row sum(predict(...)) otherwise spent 0.3-0.7 s inlining and optimizing with LLVM.
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

PlannedStmt* batching_planner(Query* parse, const char* query_string, int cursor_options,
                              ParamListInfo bound_params) {
    PlannedStmt* stmt = previous_planner_hook
                            ? previous_planner_hook(parse, query_string, cursor_options, bound_params)
                            : standard_planner(parse, query_string, cursor_options, bound_params);
    if (!batching_enabled) return stmt;
    bool has_calls = false;
    int max_id = 0;
    visit_statement(stmt, [&](Plan* plan) {
        has_calls = has_calls || contains_call_walker((Node*)plan->targetlist, NULL) ||
                    contains_call_walker((Node*)plan->qual, NULL);
        max_id = Max(max_id, plan->plan_node_id);
    });
    if (!has_calls) return stmt;

    double outer_cost_saved = batched_cost_saved;
    batched_cost_saved = 0.0;
    stmt->planTree = rewrite_plan(stmt, stmt->planTree, false);
    stmt->subplans = rewrite_plan_list(stmt, stmt->subplans);
    reconsider_jit(stmt, batched_cost_saved);
    batched_cost_saved = outer_cost_saved;

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
    depend_on_model_catalog(stmt);
    return stmt;
}

}  // namespace

bool contain_predict_call(Node* node) { return contains_call_walker(node, NULL); }

void install_planner_hook() {
    previous_planner_hook = planner_hook;
    planner_hook = batching_planner;
}

}  // namespace pg_predict::pg
