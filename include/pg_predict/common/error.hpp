// The one exception type C++ code throws. The PostgreSQL side (src/pg/guard.hpp) catches it
// after the C++ frames have unwound and turns the category into a SQLSTATE.
#pragma once

#include <stdexcept>
#include <string>

namespace pg_predict {

enum class ErrorCategory {
    InvalidParameter,   // bad option, wrong array length, unknown strategy   → 22023
    InvalidModel,       // malformed or inconsistent model artifact            → 22P02 / XX?
    Unsupported,        // an objective, operator or field we do not implement → 0A000
    UndefinedObject,    // unknown model name                                   → 42704
    DuplicateObject,    // model name already exists                            → 42710
    UndefinedColumn,    // feature column missing from the row                  → 42703
    DatatypeMismatch,   // feature column of a non-numeric type                 → 42804
    OutOfRange,         // a value the model cannot take (beyond float32)       → 22003
    Runtime,            // libtorch failed while loading or running a program   → 58000 / XX000
    Internal,           // a bug: an invariant did not hold                     → XX000
    Cancelled,          // an interrupt is pending (common/interrupt.hpp): the guard lets
                        // PostgreSQL raise its cancel / timeout / terminate error → 57014
};

class Error : public std::runtime_error {
public:
    Error(ErrorCategory category, const std::string& message)
        : std::runtime_error(message), category_(category) {}
    ErrorCategory category() const noexcept { return category_; }

private:
    ErrorCategory category_;
};

// The message of a program's error where a featurized value is beyond float32 and trees read
// float32 (kernels/float32_check_op.cpp; scikit-learn raises there: "Input contains infinity or
// a value too large for dtype('float32')"). The runtime turns it into an OutOfRange ERROR that
// names the input.
constexpr const char* kFloat32OverflowMarker = "pg_predict: a featurized value is beyond float32";

[[noreturn]] inline void fail(ErrorCategory category, const std::string& message) {
    throw Error(category, message);
}

}  // namespace pg_predict
