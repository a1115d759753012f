// The SQL functions' required arguments (arguments.hpp).
#include "sql/arguments.hpp"

#include <cctype>

namespace pg_predict::pg {

char* required_text_arg(FunctionCallInfo fcinfo, int arg, const char* what) {
    if (PG_ARGISNULL(arg))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s must not be NULL", what)));
    return text_to_cstring(PG_GETARG_TEXT_PP(arg));
}

int required_version_arg(FunctionCallInfo fcinfo, int arg) {
    if (PG_ARGISNULL(arg))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("model version must not be NULL")));
    return PG_GETARG_INT32(arg);
}

char* query_without_terminator(const char* query) {
    char* copy = pstrdup(query);
    size_t length = strlen(copy);
    while (length > 0 && (copy[length - 1] == ';' || isspace((unsigned char)copy[length - 1]))) copy[--length] = '\0';
    return copy;
}

}  // namespace pg_predict::pg
