// Reading the SQL functions' arguments: a NULL where a value is required is an ERROR that names
// the argument ("model name must not be NULL"), the same wording in every function.
#pragma once

#include "postgres_headers.hpp"

namespace pg_predict::pg {

char* required_text_arg(FunctionCallInfo fcinfo, int arg, const char* what);  // palloc'd C string
int required_version_arg(FunctionCallInfo fcinfo, int arg);                   // "model version"
// A query given as text, without its trailing semicolons and blanks (it becomes a subquery);
// a palloc'd copy, "" when nothing is left.
char* query_without_terminator(const char* query);

}  // namespace pg_predict::pg
