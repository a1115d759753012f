// The PredictBatch node's executor callbacks: create, begin (plan → state), exec (a batch at a
// time: load the programs, read the batch (fill.cpp), screen it, score it, hand rows up), end
// and rescan; EXPLAIN's part is explain.cpp.
#include "exec/cascade.hpp"
#include "exec/top_k_filter.hpp"
#include "exec/scan_methods.hpp"

#include <cmath>

#include "plan/node_private.hpp"
#include "exec/state.hpp"
#include "exec/per_row_models.hpp"
#include "exec/early_exit.hpp"
#include "device.hpp"
#include "features.hpp"
#include "guard.hpp"
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

// No C++ object with a destructor lives in these frames: executor calls may longjmp.

namespace pg_predict::pg {

namespace {

constexpr int first_batch_rows = 64;  // batches grow ×4 from here, so LIMIT 5 scores 64 rows
// What one node's batch buffers may take: rows per batch = min(batch size, budget / bytes per
// row), so a model with very wide rows gets shorter batches instead of gigabytes (docs/semantics.md "Limits").
constexpr size_t batch_memory_budget = (size_t)256 << 20;
// A node with models named per row reads batches up to this many times batch_size, so that each
// model's group is not a sliver of the batch (a group runs once it has batch_size rows), as far
// as the rows' copied arguments (about the child's row width each) stay within the budget below.
constexpr int per_row_batch_factor = 16;
constexpr double per_row_arguments_budget = 64.0 * 1024 * 1024;

Node* create_state(CustomScan* cscan);
void begin(CustomScanState* node, EState* estate, int eflags);
TupleTableSlot* exec(CustomScanState* node);
void end(CustomScanState* node);
void rescan(CustomScanState* node);

// The members left out are NULL: no mark/restore. Parallel workers rebuild the node from its
// plan; its shared memory holds only their EXPLAIN ANALYZE counters (exec/worker_counters.hpp).
CustomExecMethods exec_methods = {
    .CustomName = "PredictBatch",
    .BeginCustomScan = begin,
    .ExecCustomScan = exec,
    .EndCustomScan = end,
    .ReScanCustomScan = rescan,
    .EstimateDSMCustomScan = estimate_worker_counters,
    .InitializeDSMCustomScan = initialize_worker_counters,
    .ReInitializeDSMCustomScan = reinitialize_worker_counters,
    .InitializeWorkerCustomScan = attach_worker_counters,
    .ShutdownCustomScan = share_worker_counters,
    .ExplainCustomScan = explain_node,
};

Node* create_state(CustomScan* cscan) {
    PredictBatchState* state = (PredictBatchState*)newNode(sizeof(PredictBatchState), T_CustomScanState);
    state->css.methods = &exec_methods;
    state->css.flags = cscan->flags;
    return (Node*)state;
}

void free_pinned_batch_callback(void* arg) {
    InputState* input = static_cast<InputState*>(arg);
    if (input->x32 != NULL) runtime::free_batch_buffer(input->x32);
    input->x32 = NULL;
}

// Adds a child column to those keep_row copies beyond the passed-through ones (once).
void keep_column(PredictBatchState* state, AttrNumber attno) {
    for (int k = 0; k < state->num_kept_columns; k++)
        if (state->kept_columns[k] == attno) return;
    state->kept_columns[state->num_kept_columns++] = attno;
}

void init_input(PredictBatchState* state, InputState* input, const BatchInput* plan, EState* estate,
                bool explain_only) {
    input->plan = plan;
    input->num_features = plan->num_features;
    if (plan->named_per_row) {
        if (!explain_only) input->per_row = per_row_models_init(state, (int)(input - state->inputs), estate);
        state->per_row_reads = true;
        return;
    }
    if (!explain_only) {
        input->model = bind_model_entry(plan->model, estate->es_query_cxt, plan->output);
        input->model->pruned_bounds = plan->pruned_bounds;
        // Cached plans are re-planned for a new version (plan/invalidation.hpp); only a replace
        // committed between planning and the statement's snapshot gets here.
        if (input->model->entry->id != plan->model_version)
            stale_plan_error(plan->model, plan->model_version, input->model->entry->id);
    }
    PlanState* parent = &state->css.ss.ps;
    int features = Max(plan->num_features, 1);
    if (plan->source == FeatureSource::Columns) {
        input->column = (AttrNumber*)palloc0(sizeof(AttrNumber) * features);
        input->row_column = (AttrNumber*)palloc0(sizeof(AttrNumber) * features);
        input->column_type = (Oid*)palloc0(sizeof(Oid) * features);
        input->feature_expr = (ExprState**)palloc0(sizeof(ExprState*) * features);
        input->convert = (FeatureConverter*)palloc0(sizeof(FeatureConverter) * features);
        input->text_column = (const char**)palloc0(sizeof(char*) * features);
        input->blank_padded = (bool*)palloc0(sizeof(bool) * features);
        input->float4_reads = (DirectRead*)palloc0(sizeof(DirectRead) * features);
        input->float8_reads = (DirectRead*)palloc0(sizeof(DirectRead) * features);
        int f = 0;
        ListCell* lc;
        foreach (lc, plan->exprs) {
            Node* expr = (Node*)lfirst(lc);
            Oid type = getBaseType(exprType(expr));
            if (IsA(expr, Var) && ((Var*)expr)->varno == OUTER_VAR) {
                AttrNumber attno = ((Var*)expr)->varattno;
                state->last_needed = Max(state->last_needed, attno);
                if ((type == FLOAT4OID || type == FLOAT8OID) && state->typbyval[attno - 1]) {
                    DirectRead read = {attno - 1, f};
                    if (type == FLOAT4OID)
                        input->float4_reads[input->num_float4_reads++] = read;
                    else
                        input->float8_reads[input->num_float8_reads++] = read;
                } else if (attno <= state->plan->passthrough) {
                    input->column[f] = attno;
                } else if (state->typbyval[attno - 1] && converter_for_type(type) != NULL) {
                    // Only the model reads it: its Datum is kept like a passed-through one.
                    input->column[f] = attno;
                    keep_column(state, attno);
                } else {
                    // By reference (numeric, text): converted while the tuple is current, so
                    // the value is never copied.
                    input->row_column[f] = attno;
                }
                input->column_type[f] = type;
            } else if (is_unread_feature(expr)) {
                // a feature the model never reads (text or not): x keeps the 0 set below
                f++;
                continue;
            } else {
                input->feature_expr[f] = ExecInitExpr((Expr*)expr, parent);
            }
            input->convert[f] = converter_for_type(type);
            if (input->model != NULL && input->model->entry->is_text[f]) {
                if (!is_text_type(type))
                    elog(ERROR, "pg_predict: feature %d of model \"%s\" is not text", f + 1, plan->model);
                input->convert[f] = NULL;
                input->text_column[f] = input->model->entry->columns[f];
                input->blank_padded[f] = is_blank_padded(type);
            } else if (input->convert[f] == NULL && input->model != NULL) {
                elog(ERROR, "pg_predict: feature %d of model \"%s\" is not numeric", f + 1, plan->model);
            }
            f++;
        }
        input->per_row_features = (int*)palloc0(sizeof(int) * features);
        for (int g = 0; g < plan->num_features; g++)
            if (input->row_column[g] != 0 || input->feature_expr[g] != NULL)
                input->per_row_features[input->num_per_row_features++] = g;
        state->per_row_reads |= input->num_per_row_features > 0;
    } else {
        input->argument = ExecInitExpr((Expr*)linitial(plan->exprs), parent);
        state->per_row_reads = true;
    }
}

}  // namespace


namespace {

// The inputs' programs and what depends on them (output width, float64 or float32 batch, the
// batch size the memory budget allows). Loaded when the first batch is pulled, not at executor
// start: a parallel leader that does not take part never loads them, and one that does loads
// while its workers load theirs instead of before it launches them.
void load_programs(PredictBatchState* state) {
    for (int i = 0; i < state->plan->num_inputs; i++) {
        InputState* input = &state->inputs[i];
        if (input->per_row != NULL) continue;  // bound per name as rows name them
        load_bound_program(input->model);
        input->width = input->model->output_width;
        runtime::Program* program = input->model->program;
        input->reads_float64 = guarded([&] { return runtime::program_reads_float64(program); });
        input->pinned = !input->reads_float64 && state->gpu_possible;
        cascade_activate(state, i);
        if (input->pinned) {
            MemoryContextCallback* release =
                (MemoryContextCallback*)MemoryContextAllocZero(state->buffer_context, sizeof(MemoryContextCallback));
            release->func = free_pinned_batch_callback;
            release->arg = input;
            MemoryContextRegisterResetCallback(state->buffer_context, release);
        }
    }
    const EarlyExitPlan* early = &state->plan->early_exit;
    if (early->output >= 0) {
        const int i = state->plan->outputs[early->output].input;
        const BoundModel* model = state->inputs[i].model;
        early_exit_activate(&state->early, i, model->program,
                            model->entry->classification || model->output_width != 1 ? -1 : 0, model->proba_width,
                            state->gpu_possible, state->inputs[i].reads_float64, state->buffer_context);
    }
    top_k_filter_activate(state);
    if (overlap_wanted(state)) start_overlap(state);
    // The overlap keeps two batches, and the kernel's margins for each.
    const size_t per_row = state->overlap ? 2 * (row_bytes(state) + sizeof(float)) : row_bytes(state);
    state->capacity = (int)Max((size_t)1, Min((size_t)state->capacity, batch_memory_budget / per_row));
    state->target = Min(first_batch_rows, state->capacity);
    state->programs_loaded = true;
}

void begin(CustomScanState* node, EState* estate, int eflags) {
    PredictBatchState* state = (PredictBatchState*)node;
    CustomScan* cscan = (CustomScan*)node->ss.ps.plan;
    bool explain_only = (eflags & EXEC_FLAG_EXPLAIN_ONLY) != 0;
    state->plan = batch_plan_load(cscan->custom_private, cscan->custom_exprs);
    // device = cuda takes its GPU slot now (the batch size depends on it); auto only when a
    // batch is big enough, so small queries never hold one.
    state->gpu_possible = gpu_wanted();
    // Models named per row score on the CPU (exec/per_row_models.hpp): a node of only those
    // takes no GPU slot.
    bool all_per_row = true;
    for (int i = 0; i < state->plan->num_inputs; i++) all_per_row = all_per_row && state->plan->inputs[i].named_per_row;
    if (all_per_row) state->gpu_possible = false;
    if (state->gpu_possible && device_setting == DEVICE_CUDA) {
        bool granted = explain_only ? gpu_slot_available() : claim_gpu_slot();
        state->gpu_claimed = !explain_only;
        state->gpu_granted = granted;
        state->gpu_refused = !granted;
        state->gpu_possible = granted;
    }
    state->capacity = state->gpu_possible ? gpu_batch_size : batch_size;
    for (int i = 0; i < state->plan->num_inputs; i++)
        if (state->plan->inputs[i].named_per_row) {
            const double row_width = Max(outerPlan(cscan)->plan_width, 1) + 64.0;  // + headers, group arrays
            const double factor = Min((double)per_row_batch_factor,
                                      Max(1.0, per_row_arguments_budget / (row_width * state->capacity)));
            state->capacity = (int)Min((int64)(state->capacity * factor), (int64)MaxAllocSize / 64);
            break;
        }
    state->target = Min(first_batch_rows, state->capacity);

    outerPlanState(node) = ExecInitNode(outerPlan(cscan), estate, eflags);
    TupleDesc child = ExecGetResultType(outerPlanState(node));
    state->typlen = (int16*)palloc0(sizeof(int16) * Max(child->natts, 1));
    state->typbyval = (bool*)palloc0(sizeof(bool) * Max(child->natts, 1));
    for (int a = 0; a < child->natts; a++) {
        state->typlen[a] = TupleDescAttr(child, a)->attlen;
        state->typbyval[a] = TupleDescAttr(child, a)->attbyval;
    }
    state->kept_columns = (AttrNumber*)palloc0(sizeof(AttrNumber) * Max(child->natts, 1));
    state->last_needed = state->plan->passthrough;

    state->inputs = (InputState*)palloc0(sizeof(InputState) * Max(state->plan->num_inputs, 1));
    state->fill = (instr_time*)palloc0(sizeof(instr_time) * Max(state->plan->num_inputs, 1));
    for (int i = 0; i < state->plan->num_inputs; i++)
        init_input(state, &state->inputs[i], &state->plan->inputs[i], estate, explain_only);
    // Nothing past the last column read is kept: a 10-feature model over the first columns of
    // a 200-column table keeps 11 Datums a row, and its batch stays dense in the cache.
    state->row_stride = state->last_needed;
    early_exit_init(&state->early, &state->plan->early_exit);
    if (state->plan->early_exit.owned != NIL) {
        // The threshold's conjuncts are applied apart: rows the screen finds certain to pass skip them.
        List* owned = NIL;
        List* rest = NIL;
        int position = 0;
        ListCell* lc;
        foreach (lc, cscan->scan.plan.qual) {
            if (list_member_int(state->plan->early_exit.owned, position++))
                owned = lappend(owned, lfirst(lc));
            else
                rest = lappend(rest, lfirst(lc));
        }
        state->owned_qual = ExecInitQual(owned, &node->ss.ps);
        node->ss.ps.qual = ExecInitQual(rest, &node->ss.ps);
    }
    if (explain_only) return;
    // The planner checked each call against the version it planned for (the one bound here);
    // a call sharing another's input was not looked at there.
    for (int j = 0; j < state->plan->num_outputs; j++) {
        const BatchOutput* output = &state->plan->outputs[j];
        if (state->inputs[output->input].per_row != NULL) continue;  // checked per model as bound
        const CatalogEntry* entry = state->inputs[output->input].model->entry;
        check_outputs(entry, output->kind);
        if (output->kind == PredictCallKind::Predict) check_predict(entry);
        if (output->kind == PredictCallKind::PredictProba) check_predict_proba(entry);
        if (output->kind == PredictCallKind::PredictLabel) check_predict_label(entry);
    }

    state->buffer_context = CurrentMemoryContext;
    state->batch_context = AllocSetContextCreate(estate->es_query_cxt, "PredictBatch batch",
                                                 ALLOCSET_DEFAULT_SIZES);
    INSTR_TIME_SET_ZERO(state->model_time);
}


// Whether this batch goes to the GPU: every batch for device = cuda, batches of at least
// gpu_min_rows for auto; the first such batch takes this backend's GPU slot.
bool batch_on_gpu(PredictBatchState* state) {
    if (!state->gpu_possible) return false;
    if (device_setting != DEVICE_CUDA && state->count < gpu_min_rows) return false;
    if (!state->gpu_claimed) {
        state->gpu_claimed = true;
        state->gpu_granted = claim_gpu_slot();
        state->gpu_refused = !state->gpu_granted;
    }
    return state->gpu_granted;
}

// Moves batch row `from` to row `to` (to < from): its kept values, every input's features, and
// the screened input's outputs (scored before the move).
void move_row(PredictBatchState* state, int from, int to) {
    const size_t stride = state->row_stride;
    memcpy(state->values + to * stride, state->values + from * stride, sizeof(Datum) * stride);
    memcpy(state->nulls + to * stride, state->nulls + from * stride, sizeof(bool) * stride);
    for (int i = 0; i < state->plan->num_inputs; i++) {
        InputState* input = &state->inputs[i];
        const size_t features = input->num_features;
        if (input->x64 != NULL)
            memcpy(input->x64 + to * features, input->x64 + from * features, sizeof(double) * features);
        else
            memcpy(input->x32 + to * features, input->x32 + from * features, sizeof(float) * features);
        input->row_null[to] = input->row_null[from];
    }
    const InputState* screened = &state->inputs[state->early.input];
    memcpy(screened->out + (size_t)to * screened->width, screened->out + (size_t)from * screened->width,
           sizeof(float) * screened->width);
}

// The early exit's screen over a filled batch: rows whose value cannot reach the interval the
// query needs leave the batch; rows certain to pass it are marked and, when the node applies
// the threshold itself, not scored; the others are scored here, in their places in the batch
// (runtime::score_undecided_rows), before the batch closes up.
void screen_batch(PredictBatchState* state, runtime::Program* program) {
    EarlyExit* e = &state->early;
    double lower, upper;
    if (!early_exit_interval(e, &lower, &upper)) return;
    InputState* input = &state->inputs[e->input];
    const float* x = input->x32;
    float* out = input->out;
    const int rows = state->count;
    const int64 cols = input->num_features;
    uint8_t* verdict = e->verdict;
    const runtime::ScreenStats before = e->stats;
    guarded([&] { runtime::screen_rows(e->program, x, rows, cols, e->column, lower, upper, verdict, &e->stats); });
    const bool owned = state->owned_qual != NULL;
    for (int r = 0; r < rows; r++) {
        // A NULL row argument scores NULL: it stays, as the filter or the sort sees it.
        const bool null_argument = input->plan->source != FeatureSource::Columns && input->row_null[r];
        if ((verdict[r] == runtime::kScreenInside && !owned) || (verdict[r] != runtime::kScreenUndecided && null_argument)) {
            e->stats.inside -= verdict[r] == runtime::kScreenInside;
            e->stats.outside -= verdict[r] == runtime::kScreenOutside;
            verdict[r] = runtime::kScreenUndecided;
        }
    }
    guarded([&] { runtime::score_undecided_rows(program, x, rows, cols, verdict, out); });
    int64 undecided = 0;
    for (int r = 0; r < rows; r++) undecided += verdict[r] == runtime::kScreenUndecided;
    early_exit_screened(e, before, undecided);
    int kept = 0;
    for (int r = 0; r < rows; r++) {
        if (verdict[r] == runtime::kScreenOutside) {
            e->rows_dropped++;
            continue;
        }
        if (kept != r) move_row(state, r, kept);
        verdict[kept++] = verdict[r];
    }
    state->count = kept;
    state->screened = true;
}

}  // namespace

const CatalogEntry* scoring_entry(const PredictBatchState* state) {
    if (state->scoring_input < 0) return NULL;
    const InputState* input = &state->inputs[state->scoring_input];
    return input->per_row != NULL ? per_row_models_current(input) : input->model->entry;
}

// Runs an input's program over the batch (the screened input's rows were scored by the screen).
void score_input(PredictBatchState* state, int i, runtime::Program* program) {
    InputState* input = &state->inputs[i];
    const float* x32 = input->x32;
    const double* x64 = input->x64;
    float* out = input->out;
    const int64 rows = state->count;
    const int64 cols = input->num_features;
    if (state->screened && i == state->early.input) return;
    guarded([&] {
        if (x64 != NULL)
            runtime::run_program(program, x64, rows, cols, out);
        else
            runtime::run_rows(program, x32, rows, cols, out);  // a one-row query's batch: no TorchScript call
    });
}

// Fills each input's batch, screens it (the early exit) and runs the programs; each input's
// usage statistics get the batch once (usage_add): the rows, the model time and the fill time
// (pulling the rows, shared by the inputs, and converting the input's columns).

namespace {

void score_batch(PredictBatchState* state) {
    const bool gpu = batch_on_gpu(state);
    const int inputs = state->plan->num_inputs;
    const instr_time* fill = state->fill;
    state->screened = false;
    // The screen scores the screened input's undecided rows: its time is that model's time.
    instr_time screen_time;
    INSTR_TIME_SET_ZERO(screen_time);
    if (state->early.active && !gpu && early_exit_screen_next(&state->early)) {
        state->scoring_input = state->early.input;
        instr_time start;
        INSTR_TIME_SET_CURRENT(start);
        screen_batch(state, state->early.program);
        INSTR_TIME_SET_CURRENT(screen_time);
        INSTR_TIME_SUBTRACT(screen_time, start);
    }
    for (int i = 0; i < inputs; i++) {
        InputState* input = &state->inputs[i];
        state->scoring_input = i;
        if (input->per_row != NULL) {  // each model's group, timed and counted per model
            per_row_models_score(state, i);
            state->scoring_input = -1;
            continue;
        }
        runtime::Program* program = program_for(input->model, gpu);
        instr_time start, elapsed;
        INSTR_TIME_SET_CURRENT(start);
        if (!cascade_score(state, i, program, gpu)) score_input(state, i, program);
        INSTR_TIME_SET_CURRENT(elapsed);
        state->scoring_input = -1;
        INSTR_TIME_SUBTRACT(elapsed, start);
        if (i == state->early.input) INSTR_TIME_ADD(elapsed, screen_time);
        INSTR_TIME_ADD(state->model_time, elapsed);
        usage_add(input->model->entry, UsageCounts{1, state->count, 1, 0, INSTR_TIME_GET_MILLISEC(elapsed),
                                                   INSTR_TIME_GET_MILLISEC(fill[i])});
    }
    state->batches++;
    state->gpu_batches += gpu;
    state->rows_scored += state->count;
}

}  // namespace


namespace {

// Pulls the next batch from the child and scores it. False when the child had no more rows.
bool pull_batch(PredictBatchState* state) {
    if (state->overlap) return pull_batch_overlapped(state);
    if (state->child_done && !top_k_filter_active(state)) return false;
    CHECK_FOR_INTERRUPTS();
    if (!state->programs_loaded) {
        load_programs(state);
        if (state->overlap) return pull_batch_overlapped(state);
    }
    // With a top-K filter, the batches are the rows it kept (the child is read through it first).
    if (top_k_filter_active(state) ? !top_k_filter_next_batch(state) : !read_batch(state)) return false;
    // An error while an input's program runs counts against that model version.
    PG_TRY();
    {
        score_batch(state);
    }
    PG_CATCH();
    {
        if (const CatalogEntry* entry = scoring_entry(state)) count_scoring_error(entry);
        PG_RE_THROW();
    }
    PG_END_TRY();
    return true;
}


// The next batch with rows to hand up: one the early exit emptied is not the end of the rows below.
bool next_batch(PredictBatchState* state) {
    while (pull_batch(state))
        if (state->count > 0) return true;
    return false;
}

Datum output_value(PredictBatchState* state, const BatchOutput* output, int row, bool* isnull) {
    InputState* input = &state->inputs[output->input];
    if (input->plan->source != FeatureSource::Columns && input->row_null[row]) {
        *isnull = true;
        return (Datum)0;
    }
    if (input->per_row != NULL) return per_row_models_result(input, (int)(output - state->plan->outputs), row, isnull);
    return call_result(input->model, output->kind, input->out + (size_t)row * input->width, isnull);
}

TupleTableSlot* exec(CustomScanState* node) {
    PredictBatchState* state = (PredictBatchState*)node;
    ExprContext* econtext = node->ss.ps.ps_ExprContext;
    ExprState* qual = node->ss.ps.qual;
    ProjectionInfo* projection = node->ss.ps.ps_ProjInfo;
    TupleTableSlot* scan = node->ss.ss_ScanTupleSlot;
    const int passthrough = state->plan->passthrough;

    for (;;) {
        if (state->position >= state->count && !next_batch(state)) return NULL;
        int row = state->position++;
        ResetExprContext(econtext);
        MemoryContext old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
        ExecClearTuple(scan);
        memcpy(scan->tts_values, state->values + (size_t)row * state->row_stride, sizeof(Datum) * passthrough);
        memcpy(scan->tts_isnull, state->nulls + (size_t)row * state->row_stride, sizeof(bool) * passthrough);
        // A row the screen found certain to pass its threshold has no scores from that model
        // (nothing reads them: plan/early_exit_request.cpp).
        const bool certain = state->screened && state->early.verdict[row] == runtime::kScreenInside;
        for (int j = 0; j < state->plan->num_outputs; j++) {
            if (certain && state->plan->outputs[j].input == state->early.input) {
                scan->tts_values[passthrough + j] = (Datum)0;
                scan->tts_isnull[passthrough + j] = true;
                continue;
            }
            scan->tts_values[passthrough + j] =
                output_value(state, &state->plan->outputs[j], row, &scan->tts_isnull[passthrough + j]);
        }
        MemoryContextSwitchTo(old);
        ExecStoreVirtualTuple(scan);

        econtext->ecxt_scantuple = scan;
        if (state->owned_qual != NULL && !certain && !ExecQual(state->owned_qual, econtext)) {
            InstrCountFiltered1(node, 1);
            continue;
        }
        if (qual != NULL && !ExecQual(qual, econtext)) {
            InstrCountFiltered1(node, 1);
            continue;
        }
        if (state->early.active && state->plan->early_exit.top_k > 0) {
            const EarlyExit* e = &state->early;
            if (!scan->tts_isnull[passthrough + state->plan->early_exit.output]) {
                const InputState* input = &state->inputs[e->input];
                early_exit_returned(&state->early, (double)input->out[(size_t)row * input->width + e->column]);
            }
        }
        return projection != NULL ? ExecProject(projection) : scan;
    }
}

void end(CustomScanState* node) {
    PredictBatchState* state = (PredictBatchState*)node;
    stop_overlap(state);
    top_k_filter_end(state);
    if (state->inputs != NULL)
        for (int i = 0; i < state->plan->num_inputs; i++) per_row_models_end(&state->inputs[i]);
    ExecEndNode(outerPlanState(node));
}

void rescan(CustomScanState* node) {
    PredictBatchState* state = (PredictBatchState*)node;
    stop_overlap(state);
    state->count = state->position = 0;
    state->child_done = false;
    state->target = Min(first_batch_rows, state->capacity);
    state->screened = false;
    early_exit_rescan(&state->early);
    top_k_filter_rescan(state);
    if (state->batch_context != NULL) MemoryContextReset(state->batch_context);
    PlanState* child = outerPlanState(node);
    if (child->chgParam == NULL) ExecReScan(child);
}


}  // namespace

CustomScanMethods predict_batch_scan_methods = {
    .CustomName = "PredictBatch",
    .CreateCustomScanState = create_state,
};

void register_batch_node() { RegisterCustomScanMethods(&predict_batch_scan_methods); }

}  // namespace pg_predict::pg
