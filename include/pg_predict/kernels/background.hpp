// One background thread per process that scores a batch while the backend's own thread reads
// the next one from the plan below (the batching node's overlap, src/pg/exec/overlap.cpp).
//
// The job must be torch-free and must not call PostgreSQL: it runs beside the backend, which
// goes on executing the query. It may use run_parallel (its runs take `threads` threads: the
// background thread and threads - 1 of the pool), and finish_background's caller joins them.
// Like the pool's threads, the background thread blocks every signal and is started lazily.
#pragma once

#include <functional>

namespace pg_predict::kernels {

// Hands `job` to the background thread; false (and nothing started) when a job is running.
bool start_background(std::function<void()> job, int threads);

// Waits for the job to end, joining its parallel runs meanwhile, and rethrows its exception.
// Does nothing when no job was started.
void finish_background();

// finish_background for unwinding: waits, and drops the job's exception. Never throws.
void abandon_background() noexcept;

bool background_running() noexcept;

}  // namespace pg_predict::kernels
