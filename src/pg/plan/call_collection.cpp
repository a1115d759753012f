#include "plan/call_collection.hpp"

#include "catalog/catalog.hpp"
#include "plan/feature_pushdown.hpp"
#include "binding/model.hpp"
#include "plan/invalidation.hpp"
#include "plan/node_kinds.hpp"
#include "plan/predict_calls.hpp"

extern "C" {
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
}

namespace pg_predict::pg {

namespace {

// The constant model name of a call, or NULL.
const char* constant_model_name(FuncExpr* call) {
    if (list_length(call->args) != 2) return NULL;
    Node* name = strip_relabel((Node*)linitial(call->args));
    if (name == NULL || !IsA(name, Const) || ((Const*)name)->constisnull) return NULL;
    Const* constant = (Const*)name;
    if (constant->consttype != TEXTOID && constant->consttype != VARCHAROID) return NULL;
    return TextDatumGetCString(constant->constvalue);
}

bool contains_call_walker(Node* node, void* context);

// Registers a call as output of input `input`; returns its index.
int add_output(Rewrite* rw, FuncExpr* call, PredictCallKind kind, int input) {
    BatchOutput* out = (BatchOutput*)palloc0(sizeof(BatchOutput));
    out->input = input;
    out->kind = kind;
    rw->outputs = lappend(rw->outputs, out);
    rw->calls = lappend(rw->calls, call);
    return list_length(rw->calls) - 1;
}

// A call whose model name is an expression over the row (predict('store_' || store_id, t)): an
// input that evaluates the name with the row or array argument; the executor groups each batch's
// rows by the model they name (exec/per_row_models.hpp). The models, and so their feature
// columns, are known only per row: nothing is pushed down. -1 for an argument that is neither a
// row nor an array (the per-row function reports it).
int add_per_row_call(Rewrite* rw, FuncExpr* call, PredictCallKind kind) {
    Node* name = (Node*)linitial(call->args);
    Node* arg = (Node*)lsecond(call->args);
    if (contains_call_walker(name, NULL) || contains_call_walker(arg, NULL)) return -1;
    Oid type = exprType(arg);
    FeatureSource source;
    if (type_is_rowtype(type))
        source = FeatureSource::Row;
    else if (OidIsValid(get_element_type(getBaseType(type))))
        source = FeatureSource::Array;
    else
        return -1;
    int input = -1, i = 0;
    ListCell* lc;
    foreach (lc, rw->inputs) {
        BatchInput* in = (BatchInput*)lfirst(lc);
        if (in->named_per_row && in->output == model_output(kind) && equal(linitial(in->exprs), arg) &&
            equal(lsecond(in->exprs), name)) {
            input = i;
            break;
        }
        i++;
    }
    if (input < 0) {
        BatchInput* in = (BatchInput*)palloc0(sizeof(BatchInput));
        in->named_per_row = true;
        in->model = pstrdup("");
        in->source = source;
        in->exprs = list_make2(arg, name);
        in->output = model_output(kind);
        in->format = pstrdup("per row");
        in->strategy = pstrdup("");
        in->layout = pstrdup("");
        rw->inputs = lappend(rw->inputs, in);
        rw->input_args = lappend(rw->input_args, arg);
        input = list_length(rw->inputs) - 1;
    }
    return add_output(rw, call, kind, input);
}

// Registers a call as an output of the node; returns its index or -1 if it cannot be batched.
int add_call(Rewrite* rw, FuncExpr* call, PredictCallKind kind) {
    int j = 0;
    ListCell* lc;
    foreach (lc, rw->calls) {
        if (equal(lfirst(lc), call)) return j;
        j++;
    }
    if (list_length(call->args) != 2) return -1;
    const char* model = constant_model_name(call);
    if (model == NULL) return add_per_row_call(rw, call, kind);
    Node* arg = (Node*)lsecond(call->args);

    // Calls of one model over the same argument share an input (one program run per batch)
    // when they need the same program: decision_function and score_samples have their own.
    int input = -1, i = 0;
    foreach (lc, rw->inputs) {
        BatchInput* in = (BatchInput*)lfirst(lc);
        if (!in->named_per_row && strcmp(in->model, model) == 0 && in->output == model_output(kind) &&
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
        if (!feature_source(rw, arg, entry, in)) return -1;
        in->model = pstrdup(model);
        in->num_features = entry->num_features;
        in->model_version = entry->id;
        in->entry = entry;
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
        if (entry->text_summary[0] != '\0') in->format = psprintf("%s; text: %s", in->format, entry->text_summary);
        // Which version a plan scores, once a name has more than one.
        if (entry->version > 1) in->format = psprintf("version %d, %s", entry->version, in->format);
        in->strategy = entry->strategy;
        in->trees = entry->trees;
        in->depth = entry->depth;
        in->layout = entry->layout;
        rw->inputs = lappend(rw->inputs, in);
        rw->input_args = lappend(rw->input_args, arg);
        input = list_length(rw->inputs) - 1;
    }
    return add_output(rw, call, kind, input);
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

bool contains_call_walker(Node* node, void* context) {
    if (node == NULL) return false;
    if (IsA(node, FuncExpr) && predict_call_kind(((FuncExpr*)node)->funcid) != PredictCallKind::None)
        return true;
    return expression_tree_walker(node, (bool (*)())contains_call_walker, context);
}

}  // namespace

void collect_calls(Rewrite* rw, Node* expr) { collect_calls_walker(expr, rw); }

bool contain_predict_call(Node* node) { return contains_call_walker(node, NULL); }

Node* replace_calls(Node* expr, ReplaceContext* cx) { return replace_mutator(expr, cx); }

void collect_vars(Node* expr, ReplaceContext* cx) { collect_vars_walker(expr, cx); }

}  // namespace pg_predict::pg
