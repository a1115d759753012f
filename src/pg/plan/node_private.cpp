#include "plan/node_private.hpp"

#include <limits>

namespace pg_predict::pg {

// custom_private = (passthrough, inputs, outputs, early_exit)
//   input  = (model, source, expr_count, num_features, model_version),
//            (format, strategy, trees, depth, output, layout, named_per_row)
//   (model_version as a decimal string: an Integer node holds only 32 bits)
//   output = (input, kind)
// early_exit = (output, column, lower, upper, strictness, owned, (top_k, descending, nulls_first)), the doubles as
//   strings ("%.17g", exact) and top_k as a decimal string
// custom_exprs = every input's exprs, concatenated in input order.
// After the four: ("pruned", (bounds, note) per input) when predicate pruning specialized one.

namespace {

List* early_exit_store(const EarlyExitPlan* e) {
    return list_make4(list_make4(makeInteger(e->output), makeInteger(e->column),
                                 makeString(psprintf("%.17g", e->lower)), makeString(psprintf("%.17g", e->upper))),
                      makeInteger((e->lower_strict ? 1 : 0) | (e->upper_strict ? 2 : 0)), list_copy(e->owned),
                      list_make3(makeString(psprintf(INT64_FORMAT, e->top_k)), makeInteger(e->descending ? 1 : 0),
                                 makeInteger(e->nulls_first ? 1 : 0)));
}

void early_exit_load(List* stored, EarlyExitPlan* e) {
    List* first = (List*)linitial(stored);
    e->output = intVal(linitial(first));
    e->column = intVal(lsecond(first));
    e->lower = strtod(strVal(lthird(first)), NULL);
    e->upper = strtod(strVal(lfourth(first)), NULL);
    int strict = intVal(lsecond(stored));
    e->lower_strict = (strict & 1) != 0;
    e->upper_strict = (strict & 2) != 0;
    e->owned = (List*)lthird(stored);
    List* last = (List*)lfourth(stored);
    e->top_k = pg_strtoint64(strVal(linitial(last)));
    e->descending = intVal(lsecond(last)) != 0;
    e->nulls_first = intVal(lthird(last)) != 0;
}

}  // namespace

void early_exit_none(EarlyExitPlan* e) {
    *e = EarlyExitPlan{};
    e->output = -1;
    e->column = -1;
    e->lower = -std::numeric_limits<double>::infinity();
    e->upper = std::numeric_limits<double>::infinity();
}

void batch_plan_store(const BatchPlan* plan, List** custom_private, List** custom_exprs) {
    List* inputs = NIL;
    List* exprs = NIL;
    for (int i = 0; i < plan->num_inputs; i++) {
        const BatchInput* in = &plan->inputs[i];
        inputs = lappend(inputs, list_make5(makeString(pstrdup(in->model)),
                                            makeInteger((int)in->source),
                                            makeInteger(list_length(in->exprs)),
                                            makeInteger(in->num_features),
                                            makeString(psprintf(INT64_FORMAT, in->model_version))));
        List* facts = list_make5(makeString(pstrdup(in->format)), makeString(pstrdup(in->strategy)),
                                 makeInteger(in->trees), makeInteger(in->depth), makeInteger((int)in->output));
        facts = lappend(facts, makeString(pstrdup(in->layout != NULL ? in->layout : "")));
        facts = lappend(facts, makeInteger(in->named_per_row ? 1 : 0));
        inputs = lappend(inputs, facts);
        exprs = list_concat(exprs, in->exprs);
    }
    List* outputs = NIL;
    for (int j = 0; j < plan->num_outputs; j++)
        outputs = lappend(outputs, list_make2(makeInteger(plan->outputs[j].input),
                                              makeInteger((int)plan->outputs[j].kind)));
    *custom_private = list_make4(makeInteger(plan->passthrough), inputs, outputs, early_exit_store(&plan->early_exit));
    // Pruned inputs: a tagged list ("pruned", then (bounds, note) per input, "" for none),
    // present only when some input was pruned.
    List* pruned = NIL;
    bool any_pruned = false;
    for (int i = 0; i < plan->num_inputs; i++) {
        const BatchInput* in = &plan->inputs[i];
        any_pruned = any_pruned || in->pruned_bounds != NULL;
        pruned = lappend(pruned, list_make2(makeString(pstrdup(in->pruned_bounds ? in->pruned_bounds : "")),
                                            makeString(pstrdup(in->pruned_note ? in->pruned_note : ""))));
    }
    if (any_pruned) *custom_private = lappend(*custom_private, lcons(makeString(pstrdup("pruned")), pruned));
    *custom_exprs = exprs;
}

BatchPlan* batch_plan_load(List* custom_private, List* custom_exprs) {
    BatchPlan* plan = (BatchPlan*)palloc0(sizeof(BatchPlan));
    plan->passthrough = intVal(linitial(custom_private));
    List* inputs = (List*)lsecond(custom_private);
    List* outputs = (List*)lthird(custom_private);
    plan->num_inputs = list_length(inputs) / 2;
    plan->inputs = (BatchInput*)palloc0(sizeof(BatchInput) * Max(plan->num_inputs, 1));
    int next_expr = 0;
    for (int i = 0; i < plan->num_inputs; i++) {
        List* first = (List*)list_nth(inputs, 2 * i);
        List* second = (List*)list_nth(inputs, 2 * i + 1);
        BatchInput* in = &plan->inputs[i];
        in->model = strVal(linitial(first));
        in->source = (FeatureSource)intVal(lsecond(first));
        int count = intVal(lthird(first));
        in->num_features = intVal(lfourth(first));
        in->model_version = pg_strtoint64(strVal(list_nth(first, 4)));
        in->format = strVal(linitial(second));
        in->strategy = strVal(lsecond(second));
        in->trees = intVal(lthird(second));
        in->depth = intVal(lfourth(second));
        in->output = (ModelOutput)intVal(list_nth(second, 4));
        in->layout = strVal(list_nth(second, 5));
        in->named_per_row = list_length(second) > 6 && intVal(list_nth(second, 6)) != 0;
        in->exprs = list_copy_head(list_copy_tail(custom_exprs, next_expr), count);
        next_expr += count;
    }
    for (int k = 4; k < list_length(custom_private); k++) {
        List* extra = (List*)list_nth(custom_private, k);
        if (!IsA(extra, List) || !IsA(linitial(extra), String) || strcmp(strVal(linitial(extra)), "pruned") != 0)
            continue;
        for (int i = 0; i < plan->num_inputs && i + 1 < list_length(extra); i++) {
            List* entry = (List*)list_nth(extra, i + 1);
            char* bounds = strVal(linitial(entry));
            plan->inputs[i].pruned_bounds = bounds[0] != '\0' ? bounds : NULL;
            plan->inputs[i].pruned_note = bounds[0] != '\0' ? strVal(lsecond(entry)) : NULL;
        }
    }
    plan->num_outputs = list_length(outputs);
    plan->outputs = (BatchOutput*)palloc0(sizeof(BatchOutput) * Max(plan->num_outputs, 1));
    for (int j = 0; j < plan->num_outputs; j++) {
        List* output = (List*)list_nth(outputs, j);
        plan->outputs[j].input = intVal(linitial(output));
        plan->outputs[j].kind = (PredictCallKind)intVal(lsecond(output));
    }
    early_exit_load((List*)lfourth(custom_private), &plan->early_exit);
    return plan;
}

}  // namespace pg_predict::pg
