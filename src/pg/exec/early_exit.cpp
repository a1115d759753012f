#include "exec/early_exit.hpp"

#include <cmath>

#include "guard.hpp"
#include "settings.hpp"

extern "C" {
#include "commands/explain.h"
}

namespace pg_predict::pg {

void early_exit_init(EarlyExit* e, const EarlyExitPlan* plan) {
    *e = EarlyExit{};
    e->plan = plan;
    e->input = -1;
    e->column = -1;
    e->pause_next = 1;
}

void early_exit_activate(EarlyExit* e, int input, runtime::Program* program, int predict_column, int proba_columns,
                         bool gpu_possible, bool reads_float64, MemoryContext context) {
    const EarlyExitPlan* plan = e->plan;
    e->input = input;
    if (!early_exit_enabled) {
        e->inactive_reason = "off (pg_predict.early_exit)";
        return;
    }
    e->column = plan->column < 0 ? predict_column : plan->column;
    if (plan->column < 0 && predict_column < 0) {
        e->inactive_reason = "not used: predict() returns a class label";
        return;
    }
    if (plan->column >= proba_columns) {
        e->inactive_reason = "not used: no such predict_proba element";
        return;
    }
    if (gpu_possible) {
        e->inactive_reason = "not used: the GPU may score this query";
        return;
    }
    if (reads_float64) {  // the screen's kernel reads float32 rows
        e->inactive_reason = "not used: the model compares its features in float64";
        return;
    }
    if (!guarded([&] { return runtime::program_screens_column(program, e->column); })) {
        e->inactive_reason = "not used: the model is not a tree ensemble with one score and a monotone link";
        return;
    }
    e->program = program;
    e->active = true;
    if (plan->top_k > 0) e->heap = (double*)MemoryContextAlloc(context, sizeof(double) * plan->top_k);
}

bool early_exit_interval(const EarlyExit* e, double* lower, double* upper) {
    *lower = e->plan->lower;
    *upper = e->plan->upper;
    if (e->plan->top_k > 0 && e->heap_size == e->plan->top_k) {
        if (e->plan->descending)
            *lower = Max(*lower, e->heap[0]);
        else
            *upper = Min(*upper, -e->heap[0]);
    }
    return std::isfinite(*lower) || std::isfinite(*upper);
}

bool early_exit_screen_next(EarlyExit* e) {
    if (e->pause_left == 0) return true;
    e->pause_left--;
    e->paused_batches++;
    return false;
}

void early_exit_screened(EarlyExit* e, const runtime::ScreenStats& before, int64 scored_rows) {
    const runtime::ScreenStats& now = e->stats;
    const double trees = (double)now.trees;
    const double rows = (double)(now.rows - before.rows);
    const double with_screen = (double)(now.tree_visits - before.tree_visits) +
                               (double)(now.stage_rows - before.stage_rows) * now.rank_trees + scored_rows * trees;
    if (with_screen <= rows * trees) {
        e->pause_next = 1;
        return;
    }
    e->pause_left = e->pause_next;
    e->pause_next = Min(e->pause_next * 2, 64);
}

void early_exit_returned(EarlyExit* e, double value) {
    if (!e->active || e->plan->top_k == 0 || std::isnan(value)) return;
    const double key = e->plan->descending ? value : -value;
    double* heap = e->heap;
    int64 n = e->heap_size;
    if (n < e->plan->top_k) {  // sift up
        int64 i = e->heap_size++;
        while (i > 0 && heap[(i - 1) / 2] > key) {
            heap[i] = heap[(i - 1) / 2];
            i = (i - 1) / 2;
        }
        heap[i] = key;
        return;
    }
    if (key <= heap[0]) return;
    int64 i = 0;  // replace the root, sift down
    for (;;) {
        int64 child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && heap[child + 1] < heap[child]) child++;
        if (heap[child] >= key) break;
        heap[i] = heap[child];
        i = child;
    }
    heap[i] = key;
}

void early_exit_rescan(EarlyExit* e) { e->heap_size = 0; }

void early_exit_explain(const EarlyExit* e, const char* call, bool analyze, ExplainState* es) {
    const EarlyExitPlan* plan = e->plan;
    if (plan->output < 0) return;
    StringInfoData text;
    initStringInfo(&text);
    const char* value = plan->column < 0 ? psprintf("%s", call) : psprintf("%s[%d]", call, plan->column + 1);
    if (std::isfinite(plan->lower) || std::isfinite(plan->upper)) {
        appendStringInfoString(&text, value);
        if (std::isfinite(plan->lower)) appendStringInfo(&text, " %s %g", plan->lower_strict ? ">" : ">=", plan->lower);
        if (std::isfinite(plan->lower) && std::isfinite(plan->upper)) appendStringInfoString(&text, " and");
        if (std::isfinite(plan->upper)) appendStringInfo(&text, " %s %g", plan->upper_strict ? "<" : "<=", plan->upper);
        if (plan->owned != NIL) appendStringInfoString(&text, " (applied by this node)");
    }
    if (plan->top_k > 0)
        appendStringInfo(&text, "%stop " INT64_FORMAT " by %s %s", text.len > 0 ? "; " : "", plan->top_k, value,
                         plan->descending ? "descending" : "ascending");
    if (!early_exit_enabled) appendStringInfoString(&text, "; off (pg_predict.early_exit)");
    ExplainPropertyText("Early Exit", text.data, es);
    if (!analyze) return;
    if (e->inactive_reason != NULL && early_exit_enabled) {
        ExplainPropertyText("Early Exit Used", e->inactive_reason, es);
        return;
    }
    if (!e->active) return;
    ExplainPropertyInteger("Rows Screened", NULL, e->stats.rows, es);
    // Early: decided while trees were left, which were never walked. A row decided only once
    // every tree was walked (a model of fewer trees than the first stage) is decided, not
    // stopped early: Trees per Row counts all its trees.
    ExplainPropertyInteger("Rows Stopped Early", NULL, e->stats.early, es);
    const int64 decided_last = e->stats.outside + e->stats.inside - e->stats.early;
    if (decided_last > 0) ExplainPropertyInteger("Rows Decided After Every Tree", NULL, decided_last, es);
    // Trees per row: the screen's own, plus every tree for the rows the program scored.
    const double scored = (double)(e->stats.rows - e->stats.outside - e->stats.inside);
    const double per_row =
        e->stats.rows > 0 ? ((double)e->stats.tree_visits + scored * e->stats.trees) / e->stats.rows : 0.0;
    ExplainPropertyText("Trees per Row", psprintf("%.1f of " INT64_FORMAT, per_row, e->stats.trees), es);
    // Batches scored whole because the screen cost more than it saved on the ones before.
    if (e->paused_batches > 0) ExplainPropertyInteger("Batches Not Screened", NULL, e->paused_batches, es);
}

}  // namespace pg_predict::pg
