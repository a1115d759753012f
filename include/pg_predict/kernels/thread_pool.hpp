// A small pool of scoring threads for the native kernel, used instead of OpenMP.
//
// Why not at::parallel_for: Debian's libtorch runs it on libgomp, whose idle threads spin
// (OMP_WAIT_POLICY=active, read once when the library loads, i.e. in the postmaster). On a
// database server whose cores are shared by many backends, spinning threads slowed a
// 2-thread batch 5-10x. These threads sleep on a condition variable between batches, block
// every signal (PostgreSQL's handlers must run in the backend's own thread), and are started
// lazily, in the backend, on the first batch that asks for more than one thread.
#pragma once

#include <cstdint>
#include <functional>

namespace pg_predict::kernels {

// Calls fn(begin, end) over [begin, end) cut into chunks of `grain`, on `threads` threads
// (the caller is one of them). Rethrows the first exception fn threw. Before each chunk every
// thread looks at common/interrupt.hpp's interrupt_pending(); once it is set no further chunk
// starts, and the calling thread throws Error(Cancelled) when the chunks under way are done.
// So keep a chunk to a few ms of work.
void run_parallel(int threads, int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn);

// The thread count the native ops (torch.ops.pg_predict.*) run on: pg_predict.threads, which
// runtime/program.cpp hands over before each batch. Torch's own intra-op count stays at 1 for
// programs that call these ops (see there).
void set_pool_threads(int threads) noexcept;
int pool_threads() noexcept;

// On the background thread (kernels/background.hpp): its runs use `threads` threads whatever
// they are asked for, and always go through the pool so another thread can join them; 0 ends it.
void set_background_threads(int threads) noexcept;
bool on_background_thread() noexcept;

// The calling thread takes chunks of the pool's run under way (one the background thread
// started), if any, and returns when none are left to take.
void help_parallel();

}  // namespace pg_predict::kernels
