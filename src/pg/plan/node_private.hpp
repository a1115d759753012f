// What the planner hook tells a PredictBatch node, stored in CustomScan.custom_private and
// custom_exprs so that it survives copyObject, plan caching and the trip to parallel workers.
//
// A node scores one or more *inputs*: a model plus where its features come from in the child
// plan's output. Each distinct scoring call it replaces (predict(), predict_proba(), transform(),
// ...) is an *output*: one column appended to the child's columns in the node's scan tuple.
#pragma once

#include "catalog/catalog.hpp"
#include "plan/predict_calls.hpp"

namespace pg_predict::pg {

enum class FeatureSource {
    Columns = 0,  // one scalar expression per feature (pushed-down columns, ARRAY[...] items)
    Row = 1,      // one composite expression, features read by column name per row
    Array = 2,    // one array expression, features by position per row
};

struct BatchInput {
    char* model;          // "" when the name is computed per row (named_per_row)
    FeatureSource source;
    List* exprs;          // over the child's output (OUTER_VAR); named per row: (argument, name)
    // The model name is an expression over the row, not a constant (predict('store_' || id, t)):
    // the node groups each batch's rows by the model they name (exec/per_row_models.hpp). Source
    // Row or Array only; no plan-time model facts (version, format, trees).
    bool named_per_row;
    int num_features;     // at plan time
    int64 model_version;  // the catalog row id planned for; checked again at executor start
    ModelOutput output;   // the program it runs (decision_function / score_samples have their own)
    // plan-time facts, for EXPLAIN
    char* format;
    char* strategy;
    int trees;
    int depth;
    char* layout;         // the native kernel's layout (CatalogEntry::layout)
    // Predicate pruning (plan/predicate_specialization.hpp): the bounds the program was specialized for
    // (runtime::encode_bounds' text; NULL: the stored program) and what EXPLAIN shows.
    char* pruned_bounds;
    char* pruned_note;
    const CatalogEntry* entry;  // plan time only (not stored): the catalog row planned for
};

struct BatchOutput {
    int input;
    PredictCallKind kind;
};

// The early exit (plan/early_exit_request.hpp): one output value the query only needs within an
// interval (a WHERE threshold) or among the best rows (ORDER BY ... LIMIT above the node).
struct EarlyExitPlan {
    int output;           // the bounded output, -1: none
    int column;           // predict_proba's element (0-based); -1: predict's value
    double lower, upper;  // the threshold's interval (±inf where open)
    bool lower_strict, upper_strict;  // for EXPLAIN only: the screen is conservative either way
    List* owned;          // Integer positions in the node's qual of the conjuncts the node applies
                          // itself (rows certain to pass skip them and their scores); NIL: none
    int64 top_k;          // rows the ORDER BY ... LIMIT above needs (limit + offset); 0: none
    bool descending;
    bool nulls_first;     // the sort's first key puts NULLs first (a NULL argument's row is among the best)
};

struct BatchPlan {
    int passthrough;      // child columns copied into the scan tuple, before the outputs
    int num_inputs;
    BatchInput* inputs;
    int num_outputs;
    BatchOutput* outputs;
    EarlyExitPlan early_exit;
};

// No early exit: output -1, an unbounded interval.
void early_exit_none(EarlyExitPlan* e);

void batch_plan_store(const BatchPlan* plan, List** custom_private, List** custom_exprs);
BatchPlan* batch_plan_load(List* custom_private, List* custom_exprs);

}  // namespace pg_predict::pg
