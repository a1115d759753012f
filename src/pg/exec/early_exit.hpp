// Executor side of the early exit (issue 15 §2; the plan side is plan/early_exit_request.hpp): what a
// PredictBatch node keeps to screen its batches, and the top-K's record of the best values it
// has returned. The batch itself (dropping rows, scoring the undecided ones) is exec/callbacks.cpp's.
#pragma once

#include "plan/node_private.hpp"
#include "pg_predict/runtime/api.hpp"

extern "C" {
#include "commands/explain.h"
}

namespace pg_predict::pg {

struct EarlyExit {
    const EarlyExitPlan* plan;
    bool active;                  // screening runs (decided when the programs load)
    const char* inactive_reason;  // why not, for EXPLAIN ANALYZE; NULL when active or not planned
    int input;                    // the input screened
    int column;                   // the program's output column bounded
    runtime::Program* program;    // the CPU program whose trees bound it
    uint8_t* verdict;             // per batch row, allocated with the batch (reserve_rows)
    // top-K: the keys of the best values returned (the value, or minus it for ascending),
    // a min-heap of at most top_k entries.
    double* heap;
    int64 heap_size;
    runtime::ScreenStats stats;
    int64 rows_dropped;           // rows the node never handed up because of the screen
    // The screen pauses where it costs more than it saves (early_exit_screened): for
    // `pause_left` more batches, then tries again; each failed try doubles the pause.
    int pause_left;
    int pause_next;
    int64 paused_batches;
};

void early_exit_init(EarlyExit* e, const EarlyExitPlan* plan);

// Called once the node's programs are loaded: whether the planned early exit applies to this
// model (otherwise inactive_reason says why). `predict_column` is predict's column (-1: predict
// returns a label) and `proba_columns` predict_proba's width. The top-K's heap is allocated in
// `context` (the node's buffers: it lives as long as the query).
void early_exit_activate(EarlyExit* e, int input, runtime::Program* program, int predict_column, int proba_columns,
                         bool gpu_possible, bool reads_float64, MemoryContext context);

// The interval a row's value must be able to reach now: the threshold, narrowed by the k-th
// best value returned once k were. False when nothing bounds it yet (no screen needed).
bool early_exit_interval(const EarlyExit* e, double* lower, double* upper);

// Whether to screen the next batch (false while paused).
bool early_exit_screen_next(EarlyExit* e);

// After a screened batch: `before` is the stats before it. Pauses the screen when it cost more
// tree visits (its stages, its ranks, the rows still scored whole) than scoring the batch whole.
void early_exit_screened(EarlyExit* e, const runtime::ScreenStats& before, int64 scored_rows);

// The top-K's record of a value the node hands up.
void early_exit_returned(EarlyExit* e, double value);

// A rescan starts a new sort: the values returned so far no longer count.
void early_exit_rescan(EarlyExit* e);

// EXPLAIN lines: what is pushed, and with ANALYZE what the screen did.
void early_exit_explain(const EarlyExit* e, const char* call, bool analyze, ExplainState* es);

}  // namespace pg_predict::pg
