#include "interrupts.hpp"

#include "pg_predict/common/interrupt.hpp"
#include "postgres_headers.hpp"

namespace pg_predict::pg {
namespace {

// True when the next CHECK_FOR_INTERRUPTS() would end the statement: a cancel (also
// statement_timeout, which arrives as one) or a terminate, and interrupts are not held off.
// Other reasons for InterruptPending (catch-up, barriers, ...) do not stop C++ work: the guard
// could not turn them into an error. Only volatile reads of flags that signal handlers set, so
// any thread may call it.
bool statement_interrupted() noexcept {
    if (!InterruptPending || InterruptHoldoffCount != 0 || CritSectionCount != 0) return false;
    return ProcDiePending || (QueryCancelPending && QueryCancelHoldoffCount == 0);
}

}  // namespace

void install_interrupt_probe() { set_interrupt_probe(&statement_interrupted); }

}  // namespace pg_predict::pg
