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
        case ErrorCategory::Runtime: return ERRCODE_EXTERNAL_ROUTINE_EXCEPTION;
        case ErrorCategory::Internal: return ERRCODE_INTERNAL_ERROR;
    }
    return ERRCODE_INTERNAL_ERROR;
}

void describe_exception(std::exception_ptr error, CaughtError* out) noexcept {
    const char* message = "unknown C++ exception";
    out->sqlstate = ERRCODE_INTERNAL_ERROR;
    try {
        std::rethrow_exception(error);
    } catch (const Error& e) {
        message = e.what();
        out->sqlstate = sqlstate_for(e.category());
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
    ereport(ERROR, (errcode(caught->sqlstate), errmsg("%s", caught->message)));
    pg_unreachable();
}

}  // namespace pg_predict::pg
