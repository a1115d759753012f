// Cancel, statement_timeout and terminate reach C++ code through one torch-free check.
//
// PostgreSQL's signal handlers only set flags (InterruptPending, QueryCancelPending,
// ProcDiePending); its own loops act on them in CHECK_FOR_INTERRUPTS(). C++ code must not call
// that (it longjmps over live destructors, docs/design.md, house rule 2), so src/pg registers a probe that
// only reads those flags, and long-running C++ loops (importers per tree, the compiler per tree
// or step, the kernels per block of rows) call check_interrupts() between blocks of work a few
// ms long. It throws Error(Cancelled); the guard in src/pg/guard.cpp then runs
// CHECK_FOR_INTERRUPTS() after the C++ frames have unwound, so PostgreSQL raises its own
// cancel / timeout / terminate error.
//
// interrupt_pending() is a few plain volatile reads, safe from any thread: worker threads of a
// thread pool call it to stop early and leave the throwing to the calling thread. Without a
// registered probe (unit tests, tools) nothing is ever pending.
#pragma once

#include <atomic>

#include "pg_predict/common/error.hpp"

namespace pg_predict {

// Whether PostgreSQL wants the current statement to end. Must not block, allocate or throw.
using InterruptProbe = bool (*)() noexcept;

namespace detail {
inline std::atomic<InterruptProbe> interrupt_probe{nullptr};
}  // namespace detail

// Installed once per process by src/pg (_PG_init); nullptr uninstalls (tests).
inline void set_interrupt_probe(InterruptProbe probe) noexcept {
    detail::interrupt_probe.store(probe, std::memory_order_relaxed);
}

inline bool interrupt_pending() noexcept {
    InterruptProbe probe = detail::interrupt_probe.load(std::memory_order_relaxed);
    return probe != nullptr && probe();
}

// The message of the Error thrown; the guard replaces it by PostgreSQL's own error.
inline constexpr const char* kCancelledMessage = "canceling statement: an interrupt is pending";

// Throws Error(Cancelled) when an interrupt is pending. Call it from the thread PostgreSQL
// called into (worker threads use interrupt_pending() and return early instead).
inline void check_interrupts() {
    if (interrupt_pending()) throw Error(ErrorCategory::Cancelled, kCancelledMessage);
}

}  // namespace pg_predict
