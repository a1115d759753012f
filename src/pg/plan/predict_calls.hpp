// Recognizing calls of pg_predict's SQL functions in planned expressions.
#pragma once

#include "postgres_headers.hpp"

namespace pg_predict::pg {

enum class PredictCallKind {
    None, Predict, PredictProba, PredictLabel, Transform, DecisionFunction, ScoreSamples,
    PredictOutputs,  // predict_outputs(): every value predict gives per row (multi-output models)
    Contributions,   // predict_contributions(): each input's share of the raw score, and the bias
};

// The SQL type of a call's result (float8, float8[], text) and its collation.
Oid predict_call_type(PredictCallKind kind);
Oid predict_call_collation(PredictCallKind kind);
// The program a call runs: the model's own (predict, predict_proba, predict_label, transform:
// the program create_model stored) or one compiled from its spec for decision_function /
// score_samples / predict_contributions.
enum class ModelOutput { Stored = 0, DecisionFunction = 1, ScoreSamples = 2, Contributions = 3 };
ModelOutput model_output(PredictCallKind kind);
// Whether the call returns float8[] (predict_proba, transform, decision_function, predict_outputs,
// predict_contributions).
bool call_returns_array(PredictCallKind kind);
// "predict()", ... for messages.
const char* call_name(PredictCallKind kind);

// Which of our functions `funcid` is (by its C symbol, so the schema does not matter).
// Cached per backend; the cache is dropped whenever pg_proc changes.
PredictCallKind predict_call_kind(Oid funcid);

// Called once from _PG_init.
void register_predict_call_cache();

}  // namespace pg_predict::pg
