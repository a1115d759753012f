// EXPLAIN ANALYZE's counters of a PredictBatch node that runs in parallel workers: each worker
// adds its batches, rows and model time into the node's shared memory when it shuts down, and
// the leader adds them to its own before the shared memory goes (ExecShutdownNode visits the
// node before its Gather). Without this, the leader's EXPLAIN shows only what the leader scored.
#pragma once

#include "postgres_headers.hpp"

extern "C" {
#include "access/parallel.h"
#include "nodes/execnodes.h"
}

namespace pg_predict::pg {

// What one process scored, as EXPLAIN ANALYZE shows it.
struct NodeCounters {
    int64 batches;
    int64 rows_scored;
    int64 overlapped_batches;
    int64 gpu_batches;
    int64 rows_decided;     // cascades (exec/cascade.hpp)
    int64 rows_full_model;
    int64 rows_filtered;    // top-K filters (exec/top_k_filter.hpp): rows the filter scored
    int64 rows_kept;        // ... and kept for the full model
    int64 rows_spilled;     // ... of which written to its temporary file
    double model_ms;
    // Models named per row (exec/per_row_models.hpp), over every such input: distinct names
    // scored (per process), programs run, groups whose program was bound or cached (hits) or read
// from the catalog (loads), models released to
    // stay within pg_predict.cache_size.
    int64 models_scored;
    int64 model_runs;
    int64 model_hits;
    int64 model_loads;
    int64 models_released;
    int64 shared_featurizer_runs;  // featurizer runs that served several models' groups
};

// The node's CustomExecMethods for its shared memory, and its shutdown step.
Size estimate_worker_counters(CustomScanState* node, ParallelContext* pcxt);
void initialize_worker_counters(CustomScanState* node, ParallelContext* pcxt, void* coordinate);
void reinitialize_worker_counters(CustomScanState* node, ParallelContext* pcxt, void* coordinate);
void attach_worker_counters(CustomScanState* node, shm_toc* toc, void* coordinate);
void share_worker_counters(CustomScanState* node);

}  // namespace pg_predict::pg
