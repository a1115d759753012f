#include "guard.hpp"

#include <new>

namespace pg_predict::pg {

int sqlstate_for(ErrorCategory category) {
    switch (category) {
        case ErrorCategory::InvalidParameter: return ERRCODE_INVALID_PARAMETER_VALUE;
        case ErrorCategory::InvalidModel: return ERRCODE_INVALID_TEXT_REPRESENTATION;
        case ErrorCategory::Unsupported: return ERRCODE_FEATURE_NOT_SUPPORTED;
        case ErrorCategory::UndefinedObject: return ERRCODE_UNDEFINED_OBJECT;
        case ErrorCategory::DuplicateObject: return ERRCODE_DUPLICATE_OBJECT;
        case ErrorCategory::UndefinedColumn: return ERRCODE_UNDEFINED_COLUMN;
        case ErrorCategory::DatatypeMismatch: return ERRCODE_DATATYPE_MISMATCH;
        case ErrorCategory::OutOfRange: return ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE;
        case ErrorCategory::Runtime: return ERRCODE_EXTERNAL_ROUTINE_EXCEPTION;
        case ErrorCategory::Internal: return ERRCODE_INTERNAL_ERROR;
        case ErrorCategory::Cancelled: return ERRCODE_QUERY_CANCELED;
    }
    return ERRCODE_INTERNAL_ERROR;
}

void describe_exception(std::exception_ptr error, CaughtError* out) noexcept {
    const char* message = "unknown C++ exception";
    out->sqlstate = ERRCODE_INTERNAL_ERROR;
    out->cancelled = false;
    try {
        std::rethrow_exception(error);
    } catch (const Error& e) {
        message = e.what();
        out->sqlstate = sqlstate_for(e.category());
        out->cancelled = e.category() == ErrorCategory::Cancelled;
        strlcpy(out->message, message, sizeof(out->message));
        return;
    } catch (const std::bad_alloc&) {
        message = "out of memory in pg_predict";
        out->sqlstate = ERRCODE_OUT_OF_MEMORY;
        strlcpy(out->message, message, sizeof(out->message));
        return;
    } catch (const std::exception& e) {
        strlcpy(out->message, e.what(), sizeof(out->message));
        return;
    } catch (...) {
    }
    strlcpy(out->message, message, sizeof(out->message));
}

void report_caught(const CaughtError* caught) {
    if (caught->cancelled) {
        // For the tests and whoever debugs a slow cancel: the C++ work itself saw the interrupt.
        ereport(DEBUG1, (errmsg_internal("pg_predict: C++ work stopped for a pending interrupt")));
        // PostgreSQL raises the error it owes (cancel, statement_timeout, terminate) ...
        CHECK_FOR_INTERRUPTS();
        // ... unless it no longer thinks so (the flag was consumed meanwhile): the work was
        // abandoned anyway, so it is still a cancel.
        ereport(ERROR, (errcode(ERRCODE_QUERY_CANCELED),
                        errmsg("canceling statement due to user request")));
    }
    ereport(ERROR, (errcode(caught->sqlstate), errmsg("%s", caught->message)));
    pg_unreachable();
}

}  // namespace pg_predict::pg
