#include "exec/scoring_marks.hpp"

extern "C" {
#include "access/parallel.h"
#include "executor/executor.h"
#include "storage/ipc.h"
}

namespace pg_predict::pg {

ScoringMark scoring_marks[kMaxScoringMarks];
int open_scoring_marks = 0;

void scoring_marks_too_deep() {
    elog(ERROR, "pg_predict: more than %d scoring calls nested in one another", kMaxScoringMarks);
}

// Marks are made at non-decreasing nesting levels (a subtransaction started inside a call ends
// before it returns), so the ones to count are on top of the stack.
void count_marked_scoring_errors(int nest_level) {
    // A backend that exits aborts its transaction on the way out: a FATAL error (a terminate,
    // a parallel worker its leader stops after an error of its own) is not the model's. A
    // parallel worker's ERROR, which ends the worker too, was counted by executor_run below.
    if (proc_exit_inprogress) {
        open_scoring_marks = 0;
        return;
    }
    while (open_scoring_marks > 0 && scoring_marks[open_scoring_marks - 1].nest_level >= nest_level) {
        const ScoringMark& mark = scoring_marks[--open_scoring_marks];
        if (mark.usage->model_id != mark.model_id) continue;
        mark.usage->counts.errors++;
        usage_pending = true;
    }
}

namespace {

ExecutorRun_hook_type previous_executor_run = NULL;

void run_plan(QueryDesc* query, ScanDirection direction, uint64 count, bool execute_once) {
    if (previous_executor_run != NULL)
        previous_executor_run(query, direction, count, execute_once);
    else
        standard_ExecutorRun(query, direction, count, execute_once);
}

// A parallel worker's ERROR ends the worker: its transaction aborts in proc_exit, where the
// leader's SIGTERM may already have made it look like a FATAL one. So a worker counts its
// failed call here, one PG_TRY per plan run (not per row), before the error leaves for the leader.
void executor_run(QueryDesc* query, ScanDirection direction, uint64 count, bool execute_once) {
    if (!IsParallelWorker()) {
        run_plan(query, direction, count, execute_once);
        return;
    }
    PG_TRY();
    {
        run_plan(query, direction, count, execute_once);
    }
    PG_CATCH();
    {
        count_marked_scoring_errors(GetCurrentTransactionNestLevel());
        PG_RE_THROW();
    }
    PG_END_TRY();
}

}  // namespace

void install_worker_error_counting() {
    previous_executor_run = ExecutorRun_hook;
    ExecutorRun_hook = executor_run;
}

}  // namespace pg_predict::pg
