// The overlap (pg_predict.overlap; docs/execution.md "Overlap"): with pg_predict.threads ≥ 2, a filled
// batch's trees are walked on the background thread (runtime::start_background_kernel) while the
// node reads the next batch into its other set of buffers; then the backend joins the walk,
// applies the program's tail and hands the batch up. Batches keep their order.
//
// The spare set is the batch in flight, or one scored and waiting its turn; swap_batches
// exchanges it with the live set, which exec/callbacks.cpp's reading and exec() use as before.
// No C++ object with a destructor lives in these frames: executor calls may longjmp.
#include <utility>

#include "exec/state.hpp"
#include "guard.hpp"
#include "settings.hpp"
#include "catalog/usage_stats.hpp"

extern "C" {
#include "miscadmin.h"
#include "utils/memutils.h"
}

namespace pg_predict::pg {

namespace {

// The buffers are freed with the node's memory: a batch still in flight must end first.
void abandon_overlap_callback(void* arg) {
    PredictBatchState* state = static_cast<PredictBatchState*>(arg);
    if (state->spare_state == Spare::InFlight) runtime::abandon_background_kernel();
    state->spare_state = Spare::Empty;
}

// Exchanges the live batch (the one exec hands up, the one rows are read into) and the spare.
void swap_batches(PredictBatchState* state) {
    InputState* input = &state->inputs[0];
    BatchBuffers* b = &state->spare;
    std::swap(state->values, b->values);
    std::swap(state->nulls, b->nulls);
    std::swap(state->batch_context, b->batch_context);
    std::swap(state->count, b->count);
    std::swap(state->allocated_rows, b->allocated_rows);
    std::swap(input->x32, b->x32);
    std::swap(input->out, b->out);
    std::swap(input->row_null, b->row_null);
    std::swap(state->margins, b->margins);
    std::swap(state->fill_ms, b->fill_ms);
}

// A batch scored: EXPLAIN ANALYZE's and the usage statistics' counts.
void count_batch(PredictBatchState* state, int rows, double model_ms, double fill_ms) {
    InputState* input = &state->inputs[0];
    state->overlap_model_ms += model_ms;
    usage_add(input->model->entry, UsageCounts{1, rows, 1, 0, model_ms, fill_ms});
    state->batches++;
    state->rows_scored += rows;
}

// Runs f, counting an error it raises against the input's model version.
template <typename F>
void scoring(PredictBatchState* state, F f) {
    state->scoring_input = 0;
    PG_TRY();
    {
        f();
    }
    PG_CATCH();
    {
        count_scoring_error(state->inputs[0].model->entry);
        PG_RE_THROW();
    }
    PG_END_TRY();
    state->scoring_input = -1;
}

// The live batch's trees go to the background thread. False when it is busy (with another
// node's batch): nothing started.
bool start_live_kernel(PredictBatchState* state) {
    const InputState* input = &state->inputs[0];
    const runtime::Program* program = input->model->program;
    const float* x = input->x32;
    float* margins = state->margins;
    const int64 rows = state->count, cols = input->num_features;
    bool started = false;
    scoring(state, [&] {
        started = guarded([&] { return runtime::start_background_kernel(program, x, rows, cols, margins); });
    });
    return started;
}

// Waits for the spare batch's trees (this thread joins them) and applies the program's tail:
// the spare batch is scored, bit for bit as run_program scores it.
void finish_spare(PredictBatchState* state) {
    InputState* input = &state->inputs[0];
    runtime::Program* program = input->model->program;
    BatchBuffers* b = &state->spare;
    float* margins = b->margins;
    float* out = b->out;
    const int64 rows = b->count;
    // finish_background_kernel waits for the job's end, also when it throws.
    state->spare_state = Spare::Empty;
    double model_ms = 0.0;
    scoring(state, [&] {
        instr_time start, tail;
        INSTR_TIME_SET_CURRENT(start);
        const double kernel_ms = guarded([&] { return runtime::finish_background_kernel(); });
        guarded([&] { runtime::run_program_tail(program, margins, rows, out); });
        INSTR_TIME_SET_CURRENT(tail);
        INSTR_TIME_SUBTRACT(tail, start);
        // The kernel's own time (most of it overlapped the read of the next batch), then the
        // wait for what was left and the tail.
        model_ms = kernel_ms + INSTR_TIME_GET_MILLISEC(tail);
    });
    state->spare_state = Spare::Ready;
    count_batch(state, (int)rows, model_ms, b->fill_ms);
}

// Scores the live batch here and now (the background thread was busy).
void score_live_now(PredictBatchState* state) {
    InputState* input = &state->inputs[0];
    runtime::Program* program = input->model->program;
    instr_time start, elapsed;
    INSTR_TIME_SET_CURRENT(start);
    scoring(state, [&] { score_input(state, 0, program); });
    INSTR_TIME_SET_CURRENT(elapsed);
    INSTR_TIME_SUBTRACT(elapsed, start);
    count_batch(state, state->count, INSTR_TIME_GET_MILLISEC(elapsed), state->fill_ms);
}

}  // namespace

// Whether this node scores with the overlap (decided when the programs load).
bool overlap_wanted(PredictBatchState* state) {
    if (!overlap_batches || threads_setting < 2 || state->plan->num_inputs != 1 || state->gpu_possible ||
        state->early.active || state->filter != NULL)
        return false;
    const InputState* input = &state->inputs[0];
    if (input->per_row != NULL || input->reads_float64 || input->pinned || input->cascade != NULL) return false;
    const runtime::Program* program = input->model->program;
    return guarded([&] { return runtime::program_splits(program); });
}

void start_overlap(PredictBatchState* state) {
    state->spare = BatchBuffers{};
    state->spare.batch_context = AllocSetContextCreate(MemoryContextGetParent(state->batch_context),
                                                       "PredictBatch batch", ALLOCSET_DEFAULT_SIZES);
    state->spare_state = Spare::Empty;
    MemoryContextCallback* callback =
        (MemoryContextCallback*)MemoryContextAllocZero(state->buffer_context, sizeof(MemoryContextCallback));
    callback->func = abandon_overlap_callback;
    callback->arg = state;
    MemoryContextRegisterResetCallback(state->buffer_context, callback);
    state->overlap = true;
}

// pull_batch with the overlap: while the background thread walks the trees of one batch, the
// next is read; batches are handed up in order. False when no rows are left.
bool pull_batch_overlapped(PredictBatchState* state) {
    for (;;) {
        if (state->spare_state == Spare::Ready) {
            swap_batches(state);
            state->spare_state = Spare::Empty;
            state->position = 0;
            return true;
        }
        if (state->spare_state == Spare::Empty && state->child_done) return false;
        CHECK_FOR_INTERRUPTS();
        const bool read = !state->child_done && read_batch(state);
        if (read) state->fill_ms = INSTR_TIME_GET_MILLISEC(state->fill[0]);
        if (state->spare_state == Spare::InFlight) finish_spare(state);
        if (!read) continue;
        // The spare (scored, or none) is handed up before the batch just read.
        const Spare before = state->spare_state;
        if (start_live_kernel(state)) {
            swap_batches(state);
            state->spare_state = Spare::InFlight;
            state->overlapped_batches++;
            if (before == Spare::Empty) continue;  // read the next batch meanwhile
        } else {
            score_live_now(state);
            if (before == Spare::Ready) {
                swap_batches(state);
                state->spare_state = Spare::Ready;
            }
        }
        state->position = 0;
        return true;
    }
}

// A batch in flight ends before its buffers can be reused or freed.
void stop_overlap(PredictBatchState* state) {
    if (state->spare_state == Spare::InFlight) runtime::abandon_background_kernel();
    state->spare_state = Spare::Empty;
    state->spare.count = 0;
}

}  // namespace pg_predict::pg
