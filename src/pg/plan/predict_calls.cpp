#include "plan/predict_calls.hpp"

extern "C" {
#include "catalog/pg_collation.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "utils/inval.h"
}

namespace pg_predict::pg {

namespace {

// A few functions appear in any one database's plans; a linear scan of a small array beats a
// hash table and needs no memory context.
struct KnownFunction {
    Oid funcid;
    PredictCallKind kind;
};
constexpr int cache_capacity = 64;
KnownFunction cache[cache_capacity];
int cache_size = 0;

void forget_functions(Datum, int, uint32) { cache_size = 0; }

PredictCallKind lookup(Oid funcid) {
    HeapTuple tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
    if (!HeapTupleIsValid(tuple)) return PredictCallKind::None;
    PredictCallKind kind = PredictCallKind::None;
    Form_pg_proc proc = (Form_pg_proc)GETSTRUCT(tuple);
    if (proc->prolang == ClanguageId) {
        bool isnull;
        Datum probin = SysCacheGetAttr(PROCOID, tuple, Anum_pg_proc_probin, &isnull);
        if (!isnull) {
            char* library = TextDatumGetCString(probin);
            const char* base = strrchr(library, '/');
            base = base ? base + 1 : library;
            if (strcmp(base, "pg_predict") == 0 || strcmp(base, "pg_predict.so") == 0) {
                Datum prosrc = SysCacheGetAttr(PROCOID, tuple, Anum_pg_proc_prosrc, &isnull);
                char* symbol = TextDatumGetCString(prosrc);
                static const struct {
                    const char* symbol;
                    PredictCallKind kind;
                } scoring_symbols[] = {
                    {"pg_predict_predict", PredictCallKind::Predict},
                    {"pg_predict_predict_proba", PredictCallKind::PredictProba},
                    {"pg_predict_predict_label", PredictCallKind::PredictLabel},
                    {"pg_predict_transform", PredictCallKind::Transform},
                    {"pg_predict_decision_function", PredictCallKind::DecisionFunction},
                    {"pg_predict_score_samples", PredictCallKind::ScoreSamples},
                    {"pg_predict_predict_outputs", PredictCallKind::PredictOutputs},
                    {"pg_predict_predict_contributions", PredictCallKind::Contributions},
                };
                for (const auto& s : scoring_symbols)
                    if (strcmp(symbol, s.symbol) == 0) {
                        kind = s.kind;
                        break;
                    }
                pfree(symbol);
            }
            pfree(library);
        }
    }
    ReleaseSysCache(tuple);
    return kind;
}

}  // namespace

ModelOutput model_output(PredictCallKind kind) {
    switch (kind) {
        case PredictCallKind::DecisionFunction: return ModelOutput::DecisionFunction;
        case PredictCallKind::ScoreSamples: return ModelOutput::ScoreSamples;
        case PredictCallKind::Contributions: return ModelOutput::Contributions;
        case PredictCallKind::None: case PredictCallKind::Predict: case PredictCallKind::PredictProba:
        case PredictCallKind::PredictLabel: case PredictCallKind::Transform: case PredictCallKind::PredictOutputs: break;
    }
    return ModelOutput::Stored;
}

bool call_returns_array(PredictCallKind kind) {
    return kind == PredictCallKind::PredictProba || kind == PredictCallKind::Transform ||
           kind == PredictCallKind::DecisionFunction || kind == PredictCallKind::PredictOutputs ||
           kind == PredictCallKind::Contributions;
}

const char* call_name(PredictCallKind kind) {
    switch (kind) {
        case PredictCallKind::Predict: return "predict()";
        case PredictCallKind::PredictProba: return "predict_proba()";
        case PredictCallKind::PredictLabel: return "predict_label()";
        case PredictCallKind::Transform: return "transform()";
        case PredictCallKind::DecisionFunction: return "decision_function()";
        case PredictCallKind::ScoreSamples: return "score_samples()";
        case PredictCallKind::PredictOutputs: return "predict_outputs()";
        case PredictCallKind::Contributions: return "predict_contributions()";
        case PredictCallKind::None: break;
    }
    return "?";
}

PredictCallKind predict_call_kind(Oid funcid) {
    for (int i = 0; i < cache_size; i++)
        if (cache[i].funcid == funcid) return cache[i].kind;
    PredictCallKind kind = lookup(funcid);
    if (cache_size == cache_capacity) cache_size = 0;
    cache[cache_size++] = {funcid, kind};
    return kind;
}

Oid predict_call_type(PredictCallKind kind) {
    switch (kind) {
        case PredictCallKind::PredictProba: case PredictCallKind::Transform:
        case PredictCallKind::DecisionFunction: case PredictCallKind::PredictOutputs:
        case PredictCallKind::Contributions: return FLOAT8ARRAYOID;
        case PredictCallKind::PredictLabel: return TEXTOID;
        default: return FLOAT8OID;
    }
}

Oid predict_call_collation(PredictCallKind kind) {
    return kind == PredictCallKind::PredictLabel ? DEFAULT_COLLATION_OID : InvalidOid;
}

void register_predict_call_cache() {
    CacheRegisterSyscacheCallback(PROCOID, forget_functions, (Datum)0);
}

}  // namespace pg_predict::pg
