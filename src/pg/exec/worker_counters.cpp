#include "exec/worker_counters.hpp"

#include "exec/state.hpp"
#include "exec/per_row_models.hpp"

namespace pg_predict::pg {

namespace {

struct SharedCounters {
    int num_workers;
    NodeCounters workers[FLEXIBLE_ARRAY_MEMBER];  // by ParallelWorkerNumber
};

NodeCounters own_counters(const PredictBatchState* state) {
    NodeCounters own = {};
    for (int i = 0; i < state->plan->num_inputs; i++)
        if (state->inputs[i].per_row != NULL) per_row_models_count(&state->inputs[i], &own);
    own.batches = state->batches;
    own.rows_scored = state->rows_scored;
    own.overlapped_batches = state->overlapped_batches;
    own.gpu_batches = state->gpu_batches;
    own.rows_decided = state->rows_decided;
    own.rows_full_model = state->rows_full_model;
    own.rows_filtered = state->rows_filtered;
    own.rows_kept = state->rows_kept;
    own.rows_spilled = state->rows_spilled;
    own.model_ms = INSTR_TIME_GET_MILLISEC(state->model_time) + state->overlap_model_ms;
    return own;
}

void add(NodeCounters* sum, const NodeCounters& more) {
    sum->batches += more.batches;
    sum->rows_scored += more.rows_scored;
    sum->overlapped_batches += more.overlapped_batches;
    sum->gpu_batches += more.gpu_batches;
    sum->rows_decided += more.rows_decided;
    sum->rows_full_model += more.rows_full_model;
    sum->rows_filtered += more.rows_filtered;
    sum->rows_kept += more.rows_kept;
    sum->rows_spilled += more.rows_spilled;
    sum->model_ms += more.model_ms;
    sum->models_scored += more.models_scored;
    sum->model_runs += more.model_runs;
    sum->model_hits += more.model_hits;
    sum->model_loads += more.model_loads;
    sum->models_released += more.models_released;
    sum->shared_featurizer_runs += more.shared_featurizer_runs;
}

// The leader: adds what the workers left in `shared` to its own count of theirs, and clears it.
void collect(PredictBatchState* state, SharedCounters* shared) {
    for (int w = 0; w < shared->num_workers; w++) {
        add(&state->worker_counters, shared->workers[w]);
        memset(&shared->workers[w], 0, sizeof(NodeCounters));
    }
}

}  // namespace

Size estimate_worker_counters(CustomScanState*, ParallelContext* pcxt) {
    return add_size(offsetof(SharedCounters, workers), mul_size(sizeof(NodeCounters), pcxt->nworkers));
}

void initialize_worker_counters(CustomScanState* node, ParallelContext* pcxt, void* coordinate) {
    SharedCounters* shared = (SharedCounters*)coordinate;
    memset(shared, 0, estimate_worker_counters(node, pcxt));
    shared->num_workers = pcxt->nworkers;
    ((PredictBatchState*)node)->shared_counters = shared;
}

// A rescan of the Gather starts new workers on the same shared memory; the earlier ones have
// finished (ExecReScanGather waited for them): their counts go to the leader's first.
void reinitialize_worker_counters(CustomScanState* node, ParallelContext*, void* coordinate) {
    PredictBatchState* state = (PredictBatchState*)node;
    collect(state, (SharedCounters*)coordinate);
    state->shared_counters = coordinate;
}

void attach_worker_counters(CustomScanState* node, shm_toc*, void* coordinate) {
    ((PredictBatchState*)node)->shared_counters = coordinate;
}

void share_worker_counters(CustomScanState* node) {
    PredictBatchState* state = (PredictBatchState*)node;
    SharedCounters* shared = (SharedCounters*)state->shared_counters;
    if (shared == NULL) return;
    state->shared_counters = NULL;  // once per run; the leader's copy must not outlive the DSM
    if (IsParallelWorker()) {
        if (ParallelWorkerNumber >= 0 && ParallelWorkerNumber < shared->num_workers)
            add(&shared->workers[ParallelWorkerNumber], own_counters(state));
        return;
    }
    collect(state, shared);
}

}  // namespace pg_predict::pg
