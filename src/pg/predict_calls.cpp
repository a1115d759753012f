#include "predict_calls.hpp"

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
                if (strcmp(symbol, "pg_predict_predict") == 0)
                    kind = PredictCallKind::Predict;
                else if (strcmp(symbol, "pg_predict_predict_proba") == 0)
                    kind = PredictCallKind::PredictProba;
                else if (strcmp(symbol, "pg_predict_predict_label") == 0)
                    kind = PredictCallKind::PredictLabel;
                pfree(symbol);
            }
            pfree(library);
        }
    }
    ReleaseSysCache(tuple);
    return kind;
}

}  // namespace

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
        case PredictCallKind::PredictProba: return FLOAT8ARRAYOID;
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
