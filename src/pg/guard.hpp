// The one door from C++ into PostgreSQL's error handling (docs/design.md, house rule 2).
//
// C++ code throws; PostgreSQL reports errors with ereport(ERROR), which longjmps and would skip
// C++ destructors. So every C++ call made from src/pg runs inside guarded(): it catches, copies
// the message into a fixed buffer, lets the try block's frames unwind, and only then calls
// ereport. The body must not call PostgreSQL functions that can raise an error.
// An Error(Cancelled) (common/interrupt.hpp) is reported by CHECK_FOR_INTERRUPTS(), so the
// user sees PostgreSQL's own cancel, statement_timeout or terminate error.
#pragma once

#include <cstring>
#include <exception>
#include <utility>

#include "pg_predict/common/error.hpp"
#include "postgres_headers.hpp"

namespace pg_predict::pg {

int sqlstate_for(ErrorCategory category);

struct CaughtError {
    char message[2048];
    int sqlstate;
    bool cancelled;  // Error(Cancelled): PostgreSQL's pending interrupt becomes the error
};

// Copies what the exception says into `out`; never throws, never allocates.
void describe_exception(std::exception_ptr error, CaughtError* out) noexcept;

[[noreturn]] void report_caught(const CaughtError* caught);

template <typename Body>
auto guarded(Body&& body) -> decltype(body()) {
    CaughtError caught;
    try {
        return std::forward<Body>(body)();
    } catch (...) {
        describe_exception(std::current_exception(), &caught);
    }
    report_caught(&caught);  // the C++ frames of body() are gone by now
}

}  // namespace pg_predict::pg
