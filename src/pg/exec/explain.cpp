// EXPLAIN of a PredictBatch node: the models, strategy, kernel, device, features and batch size,
// and with ANALYZE the batches, rows scored and model time (from the node's state).
#include <cmath>
#include <cstring>

#include "plan/node_private.hpp"
#include "exec/cascade.hpp"
#include "exec/top_k_filter.hpp"
#include "exec/state.hpp"
#include "exec/per_row_models.hpp"
#include "exec/early_exit.hpp"
#include "device.hpp"
#include "features.hpp"
#include "guard.hpp"
#include "catalog/catalog.hpp"
#include "binding/model.hpp"
#include "plan/invalidation.hpp"
#include "pg_predict/runtime/api.hpp"
#include "settings.hpp"
#include "catalog/usage_stats.hpp"

extern "C" {
#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/nodeCustom.h"
#include "nodes/nodeFuncs.h"
#include "utils/datum.h"
#include "portability/instr_time.h"
#include "utils/ruleutils.h"
}

namespace pg_predict::pg {

namespace {

const char* source_name(FeatureSource source) {
    switch (source) {
        case FeatureSource::Columns: return "columns";
        case FeatureSource::Row: return "row";
        case FeatureSource::Array: return "array";
    }
    return "?";
}

// "cpu", "cuda:0", "cpu (GPU cap reached)", or for a run that used both "cuda:0 (N batches),
// cpu (M batches)". Without ANALYZE: where the batches would go.
const char* device_text(PredictBatchState* state, bool analyze) {
    const char* refused = state->gpu_refused ? " (GPU cap reached)" : "";
    const int64 batches = state->batches + state->worker_counters.batches;  // with the parallel workers'
    const int64 gpu_batches = state->gpu_batches + state->worker_counters.gpu_batches;
    if (!analyze || batches == 0) {
        if (!state->gpu_possible) return psprintf("cpu%s", refused);
        if (device_setting == DEVICE_CUDA) return "cuda:0";
        return psprintf("cuda:0 for batches of at least %d rows, else cpu", gpu_min_rows);
    }
    int64 cpu_batches = batches - gpu_batches;
    if (gpu_batches == 0) return psprintf("cpu%s", refused);
    if (cpu_batches == 0) return "cuda:0";
    return psprintf("cuda:0 (" INT64_FORMAT " batches), cpu (" INT64_FORMAT " batches)%s", gpu_batches,
                    cpu_batches, refused);
}

}  // namespace

void explain_node(CustomScanState* node, List* ancestors, ExplainState* es) {
    PredictBatchState* state = (PredictBatchState*)node;
    List* context = set_deparse_context_plan(es->deparse_cxt, node->ss.ps.plan, ancestors);
    bool use_prefix = list_length(es->rtable) > 1 || es->verbose;
    const bool many = state->plan->num_inputs > 1;
    for (int i = 0; i < state->plan->num_inputs; i++) {
        const BatchInput* in = &state->plan->inputs[i];
        char label[64];
        const char* suffix = many ? psprintf(" %d", i + 1) : "";
        snprintf(label, sizeof(label), "Model%s", suffix);
        if (in->named_per_row) {
            // The name the node evaluates per row; each model it names is bound as rows name it.
            const char* name = deparse_expression((Node*)lsecond(in->exprs), context, use_prefix, false);
            ExplainPropertyText(label, psprintf("%s (per row)", name), es);
        } else if (in->trees > 0) {
            ExplainPropertyText(label, psprintf("%s (%s, %d trees, depth %d)", unpinned_model_name(in->model), in->format, in->trees,
                                                in->depth), es);
            // how trees are compiled; other models have one program and no strategy
            snprintf(label, sizeof(label), "Strategy%s", suffix);
            const char* strategy = strcmp(strategy_setting, "auto") == 0 ? in->strategy : strategy_setting;
            ExplainPropertyText(label, strategy, es);
            if (strcmp(strategy, "native") == 0) {
                // the CPU path (pg_predict.cpu_kernel resolved), never "auto"
                snprintf(label, sizeof(label), "Kernel%s", suffix);
                ExplainPropertyText(label, runtime::native_cpu_kernel(in->depth, in->num_features, in->layout), es);
            }
        } else {
            ExplainPropertyText(label, psprintf("%s (%s)", unpinned_model_name(in->model), in->format), es);
        }
        snprintf(label, sizeof(label), "Device%s", suffix);
        ExplainPropertyText(label, in->named_per_row ? "cpu" : device_text(state, es->analyze), es);
        snprintf(label, sizeof(label), "Features%s", suffix);
        StringInfoData columns;
        initStringInfo(&columns);
        appendStringInfo(&columns, "%s:", source_name(in->source));
        ListCell* lc;
        bool first = true;
        foreach (lc, in->exprs) {
            if (is_unread_feature((Node*)lfirst(lc))) continue;  // not read by the model
            if (in->named_per_row && lc != list_head(in->exprs)) break;  // the name, shown above
            appendStringInfoString(&columns, first ? " " : ", ");
            first = false;
            appendStringInfoString(&columns, deparse_expression((Node*)lfirst(lc), context, use_prefix, false));
        }
        ExplainPropertyText(label, columns.data, es);
        cascade_explain(state, i, suffix, es);
        if (in->pruned_note != NULL) {  // specialized for the scan's WHERE clause (plan/predicate_specialization.hpp)
            snprintf(label, sizeof(label), "Pruned%s", suffix);
            ExplainPropertyText(label, in->pruned_note, es);
        }
    }
    ExplainPropertyInteger("Batch Size", NULL, state->capacity, es);
    if (state->plan->early_exit.output >= 0) {
        const BatchOutput* output = &state->plan->outputs[state->plan->early_exit.output];
        const char* call = psprintf("%s(%s)", output->kind == PredictCallKind::Predict ? "predict" : "predict_proba",
                                    state->plan->inputs[output->input].model);
        early_exit_explain(&state->early, call, es->analyze, es);
        top_k_filter_explain(state, es);
    }
    if (es->analyze) {
        // This process's and, under a Gather, the parallel workers' (exec/worker_counters.hpp).
        const NodeCounters& workers = state->worker_counters;
        ExplainPropertyInteger("Batches", NULL, state->batches + workers.batches, es);
        ExplainPropertyInteger("Rows Scored", NULL, state->rows_scored + workers.rows_scored, es);
        if (state->rows_decided + workers.rows_decided + state->rows_full_model + workers.rows_full_model > 0) {
            ExplainPropertyInteger("Rows Decided by Cascade", NULL, state->rows_decided + workers.rows_decided, es);
            ExplainPropertyInteger("Rows Scored by the Full Model", NULL, state->rows_full_model + workers.rows_full_model,
                                   es);
        }
        if (state->rows_filtered + workers.rows_filtered > 0) {
            ExplainPropertyInteger("Rows Scored by the Filter", NULL, state->rows_filtered + workers.rows_filtered, es);
            ExplainPropertyInteger("Rows Kept by the Filter", NULL, state->rows_kept + workers.rows_kept, es);
            if (state->rows_spilled + workers.rows_spilled > 0)
                ExplainPropertyInteger("Rows Written to Disk by the Filter", NULL,
                                       state->rows_spilled + workers.rows_spilled, es);
        }
        if (state->overlap || workers.overlapped_batches > 0)
            ExplainPropertyInteger("Batches Overlapped", NULL, state->overlapped_batches + workers.overlapped_batches, es);
        if (es->timing)
            ExplainPropertyFloat("Model Time", "ms",
                                 INSTR_TIME_GET_MILLISEC(state->model_time) + state->overlap_model_ms + workers.model_ms, 3, es);
        if (es->verbose && workers.rows_scored > 0)
            ExplainPropertyInteger("Rows Scored by Workers", NULL, workers.rows_scored, es);
        // Models named per row: how many, how often a model's group ran, and where the programs
        // came from (a hit: bound already, or in this backend's cache; a load: read from the catalog).
        NodeCounters models = workers;
        bool per_row = false;
        for (int i = 0; i < state->plan->num_inputs; i++) {
            if (state->inputs[i].per_row == NULL) continue;
            per_row = true;
            per_row_models_count(&state->inputs[i], &models);
        }
        if (per_row) {
            ExplainPropertyInteger("Models Scored", NULL, models.models_scored, es);
            ExplainPropertyInteger("Model Runs", NULL, models.model_runs, es);
            ExplainPropertyInteger("Model Cache Hits", NULL, models.model_hits, es);
            ExplainPropertyInteger("Model Cache Loads", NULL, models.model_loads, es);
            if (models.models_released > 0)
                ExplainPropertyInteger("Models Released", NULL, models.models_released, es);
            // Models with the same featurizer (PRETZEL): its runs over several models' groups.
            if (models.shared_featurizer_runs > 0)
                ExplainPropertyInteger("Shared Featurizer Runs", NULL, models.shared_featurizer_runs, es);
        }
    }
}

}  // namespace pg_predict::pg
