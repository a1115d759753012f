// Which model version the per-row path is scoring right now, so that an error while it scores
// counts against that version (usage statistics) without a PG_TRY per call: PG_TRY is a
// sigsetjmp, which the per-row path would pay on every row.
//
// score_one marks the version before it reads the row and runs the program and unmarks it
// after. An error in between never reaches the unmark: it aborts the transaction or the
// subtransaction that catches it (a SAVEPOINT, a PL/pgSQL exception block), and that abort
// (usage_stats.cpp's callbacks) counts one error for each mark made at that nesting level or a
// deeper one and removes those marks. Marks made at an outer level stay: the call that made
// them goes on. An error raised anywhere else (a division after predict() returned, an argument
// that failed before the call) finds no mark and counts nothing, nor does a FATAL one that ends
// the backend (a terminate). A parallel worker, which an ERROR ends, counts it as it leaves
// ExecutorRun (scoring_marks.cpp).
//
// Marks form a stack because a mark may be made while another is open (a call nested inside a
// scoring call); in practice one is open at a time.
#pragma once

#include "catalog/usage_stats.hpp"

extern "C" {
#include "access/xact.h"
}

namespace pg_predict::pg {

struct ScoringMark {
    PendingUsage* usage;  // the version's per-row record (usage_stats.hpp)
    int64 model_id;       // the record's version when marked: a record reused since counts nothing
    int nest_level;       // GetCurrentTransactionNestLevel() when marked
};

constexpr int kMaxScoringMarks = 16;
extern ScoringMark scoring_marks[kMaxScoringMarks];
extern int open_scoring_marks;

[[noreturn]] void scoring_marks_too_deep();

// Before the part of a call that may fail (reading the row, running the program).
inline void mark_scoring(PendingUsage* usage) {
    if (open_scoring_marks == kMaxScoringMarks) scoring_marks_too_deep();
    scoring_marks[open_scoring_marks++] = ScoringMark{usage, usage->model_id, GetCurrentTransactionNestLevel()};
}

// After it, once it has succeeded.
inline void unmark_scoring() { open_scoring_marks--; }

// A (sub)transaction of nesting level `nest_level` aborts (1: the whole transaction): counts one
// error for each open mark made at that level or deeper and removes them. Never errors.
void count_marked_scoring_errors(int nest_level);

// A transaction commits: no scoring call can still be open; forgets any mark left behind.
inline void forget_scoring_marks() { open_scoring_marks = 0; }

// From install_usage_stats: the ExecutorRun hook that counts a parallel worker's failed call
// (its ERROR ends the process). Only sets the hook: safe in the postmaster.
void install_worker_error_counting();

}  // namespace pg_predict::pg
