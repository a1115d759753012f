// Usage statistics of model versions (the model_stats view, docs/execution.md "Usage statistics").
//
// Counters are kept per (database, catalog row id): one entry per model version. With
// pg_predict in shared_preload_libraries they live in shared memory (a hash of at most
// pg_predict.stats_max entries under one LWLock, each entry's counters under its spinlock); without
// it, in this backend's memory, and the view shows this backend's own usage only.
//
// Nothing here costs per row: the PredictBatch node adds a batch's counts once per batch
// (usage_add); the per-row path counts into backend-local PendingUsage records, moved to the
// entries at the end of each statement and transaction and every kFlushEveryCalls calls, and
// times one call in kTimeEveryCalls: a clock read took 68 ns here (10^7 reads, under load), a
// whole per-row statement 410-540 ns a row (1M rows, binary_tiny.json), so three reads on every
// row would have cost 40 %.
#pragma once

#include "postgres_headers.hpp"

extern "C" {
#include "portability/instr_time.h"
}

namespace pg_predict::pg {

struct CatalogEntry;

// What one batch, or the per-row calls since the last flush, add to a version's counters.
struct UsageCounts {
    int64 calls;            // program runs: one per batch, one per row on the per-row path
    int64 rows;             // rows that went through the program
    int64 batches;          // runs of the PredictBatch node
    int64 errors;           // scoring calls that ended in an error
    double model_ms;        // running the program
    double fill_ms;         // filling its input: the batch's rows pulled and converted
};

// Adds `counts` to the entry of `entry`'s version (created when missing). Once per batch.
void usage_add(const CatalogEntry* entry, const UsageCounts& counts);

// The per-row path's backend-local record of one version.
struct PendingUsage {
    int64 model_id;  // 0: a free record
    char name[NAMEDATALEN];
    int32 version;
    UsageCounts counts;       // the times are added at the flush, from the timed calls
    int64 timed_calls;
    instr_time timed_model;
    instr_time timed_fill;
};

// Per-row calls are moved to the shared entry at least this often; one in kTimeEveryCalls is
// timed (the first of each flush, so every flush has one), and the flush scales their times
// to all calls.
constexpr int64 kFlushEveryCalls = 4096;
constexpr int64 kTimeEveryCalls = 16;
static_assert(kFlushEveryCalls % kTimeEveryCalls == 0, "a flush leaves the count at a timed call");

// This backend's record for `entry`'s version. `may_flush`: when every record holds counts,
// they are moved to the entries first (never in an error's cleanup: then NULL is returned).
// A record stays its version's until the table is full, so callers keep the pointer and check
// model_id before each use.
PendingUsage* pending_usage(const CatalogEntry* entry, bool may_flush = true);

// Moves every record's counts to the entries.
void flush_pending_usage();

extern bool usage_pending;  // some PendingUsage record holds counts

// Whether the next per-row call is one to time.
inline bool time_next_call(const PendingUsage* usage) { return usage->counts.calls % kTimeEveryCalls == 0; }

// One per-row call.
inline void count_row_call(PendingUsage* usage) {
    UsageCounts* c = &usage->counts;
    usage_pending = true;
    c->calls++;
    c->rows++;
    if (c->calls >= kFlushEveryCalls) flush_pending_usage();
}

// One timed per-row call: read the row from `start` to `read`, ran the program until `done`.
inline void count_timed_row_call(PendingUsage* usage, const instr_time& start, const instr_time& read,
                                 const instr_time& done) {
    usage->timed_calls++;
    INSTR_TIME_ACCUM_DIFF(usage->timed_fill, read, start);
    INSTR_TIME_ACCUM_DIFF(usage->timed_model, done, read);
    count_row_call(usage);
}

// A scoring call of `entry`'s version failed. Callable while the error is being cleaned up
// (PG_CATCH): only backend-local memory is touched; the count reaches the entry at the
// transaction's end (or the next statement's, when the error was caught).
void count_scoring_error(const CatalogEntry* entry);

// From _PG_init: shared memory (when preloaded) and the end-of-statement flush.
void install_usage_stats();

}  // namespace pg_predict::pg
