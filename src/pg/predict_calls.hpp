// Recognizing calls of pg_predict's SQL functions in planned expressions.
#pragma once

#include "postgres_headers.hpp"

namespace pg_predict::pg {

enum class PredictCallKind { None, Predict, PredictProba, PredictLabel };

// The SQL type of a call's result (float8, float8[], text) and its collation.
Oid predict_call_type(PredictCallKind kind);
Oid predict_call_collation(PredictCallKind kind);

// Which of our functions `funcid` is (by its C symbol, so the schema does not matter).
// Cached per backend; the cache is dropped whenever pg_proc changes.
PredictCallKind predict_call_kind(Oid funcid);

// Called once from _PG_init.
void register_predict_call_cache();

}  // namespace pg_predict::pg
