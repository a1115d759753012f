// explain_prediction()'s body: the jsonb built from a row's predict_contributions(), in the
// style of BigQuery's ML.EXPLAIN_PREDICT. explain_prediction (SQL, inlined by the planner) is
//   explain_contributions(name, predict_contributions(name, row), to_jsonb(row), top)
// so the contributions are batched by the PredictBatch node like predict(); this function only
// picks the top features and names them. No C++ objects live here: plain PostgreSQL code.
#include "sql/arguments.hpp"
#include "catalog/catalog.hpp"
#include "binding/model.hpp"
#include "guard.hpp"
#include "pg_predict/runtime/api.hpp"
#include "plan/invalidation.hpp"
#include "catalog/privileges.hpp"

extern "C" {
#include "mb/pg_wchar.h"
#include "utils/float.h"
#include "utils/fmgrprotos.h"
}

namespace pg_predict::pg {

namespace {

// The model's names, looked up once per call site (again after a catalog change).
struct ExplainSite {
    char* name;
    uint64 generation;
    CatalogEntry* entry;
    MemoryContext context;
};

const CatalogEntry* site_entry(FunctionCallInfo fcinfo, const char* name) {
    ExplainSite* site = (ExplainSite*)fcinfo->flinfo->fn_extra;
    if (site == NULL) {
        site = (ExplainSite*)MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(ExplainSite));
        site->context = AllocSetContextCreate(fcinfo->flinfo->fn_mcxt, "pg_predict explain", ALLOCSET_SMALL_SIZES);
        fcinfo->flinfo->fn_extra = site;
    }
    if (site->entry != NULL && site->generation == catalog_generation() && strcmp(site->name, name) == 0)
        return site->entry;
    uint64 generation = catalog_generation();
    site->entry = NULL;
    MemoryContextReset(site->context);
    MemoryContext old = MemoryContextSwitchTo(site->context);
    site->name = pstrdup(name);
    CatalogEntry* entry = catalog_lookup(name, false);
    check_model_usage(entry);
    MemoryContextSwitchTo(old);
    site->entry = entry;
    site->generation = generation;
    return entry;
}

// A JSON string, as an object's key (WJB_KEY) or a value (WJB_VALUE).
void push_text(JsonbParseState** state, const char* s, JsonbIteratorToken as) {
    JsonbValue v;
    v.type = jbvString;
    v.val.string.len = (int)strlen(s);
    v.val.string.val = (char*)s;
    pushJsonbValue(state, as, &v);
}

void push_key(JsonbParseState** state, const char* key) { push_text(state, key, WJB_KEY); }

void push_number(JsonbParseState** state, double value) {
    JsonbValue v;
    if (isnan(value) || isinf(value)) {
        v.type = jbvNull;
    } else {
        v.type = jbvNumeric;
        v.val.numeric = DatumGetNumeric(DirectFunctionCall1(float8_numeric, Float8GetDatum(value)));
    }
    pushJsonbValue(state, WJB_VALUE, &v);
}

void push_string(JsonbParseState** state, const char* s) { push_text(state, s, WJB_VALUE); }

// The value feature i had in the row: its column of the row object, or element i of an array.
void push_feature_value(JsonbParseState** state, Jsonb* row, const CatalogEntry* entry, int i) {
    JsonbValue* value = NULL;
    if (row != NULL && JB_ROOT_IS_OBJECT(row)) {
        const char* column = entry->columns[i][0] != '\0' ? entry->columns[i] : entry->features[i];
        value = getKeyJsonValueFromContainer(&row->root, column, (uint32)strlen(column), NULL);
    } else if (row != NULL && JB_ROOT_IS_ARRAY(row) && !JB_ROOT_IS_SCALAR(row)) {
        value = getIthJsonbValueFromContainer(&row->root, (uint32)i);
    }
    JsonbValue null_value;
    if (value == NULL) {
        null_value.type = jbvNull;
        value = &null_value;
    }
    pushJsonbValue(state, WJB_VALUE, value);
}

// A text input read by a vectorizer: its terms in the row, by |contribution| ("terms": [{"term",
// "value", "attribution"}]), the question a user asks of a text model ("why was this ticket
// flagged?").
void push_terms(JsonbParseState** state, Jsonb* row, const CatalogEntry* entry, int i, int top) {
    if (row == NULL || !JB_ROOT_IS_OBJECT(row)) return;
    const char* column = entry->columns[i][0] != '\0' ? entry->columns[i] : entry->features[i];
    JsonbValue* value = getKeyJsonValueFromContainer(&row->root, column, (uint32)strlen(column), NULL);
    if (value == NULL || value->type != jbvString) return;
    runtime::TextEncoder* encoder = acquire_text_encoder(entry->id, CurrentMemoryContext);
    if (!runtime::is_vectorizer_slot(encoder, i)) return;
    const char* text = value->val.string.val;
    size_t length = (size_t)value->val.string.len;
    const int encoding = GetDatabaseEncoding();  // the vocabulary is UTF-8
    if (encoding != PG_UTF8 && encoding != PG_SQL_ASCII) {
        text = pg_server_to_any(text, (int)length, PG_UTF8);
        length = strlen(text);
    }
    const int32 limit = top == INT_MAX ? -1 : top;
    char* json = guarded([&] { return runtime::explain_text(encoder, i, text, length, limit); });
    char* copy = pstrdup(json);
    free(json);
    Jsonb* terms = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(copy)));
    push_key(state, "terms");
    JsonbValue v;
    v.type = jbvBinary;
    v.val.binary.data = &terms->root;
    v.val.binary.len = (int)VARSIZE(terms);
    pushJsonbValue(state, WJB_VALUE, &v);
}

}  // namespace

}  // namespace pg_predict::pg

using namespace pg_predict::pg;

extern "C" {

PG_PREDICT_SQL_FUNCTION(pg_predict_explain_contributions);

// explain_contributions(name, contributions float8[], row jsonb, top int4) → jsonb:
//   {"prediction_value": raw score (the sum), "baseline_prediction_value": bias,
//    "class": the class explained (classifiers), "top_feature_attributions":
//    [{"feature", "value", "attribution"}, ...] by |attribution| descending (ties: input order)}
Datum pg_predict_explain_contributions(PG_FUNCTION_ARGS) {
    char* name = required_text_arg(fcinfo, 0, "model name");
    if (PG_ARGISNULL(1)) PG_RETURN_NULL();  // NULL row, or a NULL the model cannot score
    ArrayType* array = PG_GETARG_ARRAYTYPE_P(1);
    Jsonb* row = PG_ARGISNULL(2) ? NULL : PG_GETARG_JSONB_P(2);
    int top = PG_ARGISNULL(3) ? INT_MAX : PG_GETARG_INT32(3);
    if (top < 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("explain_prediction's top must not be negative, got %d", top)));
    const CatalogEntry* entry = site_entry(fcinfo, name);
    if (entry->num_outputs > 1)
        ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                        errmsg("model \"%s\" predicts %d outputs per row; explain_prediction() explains one", name,
                               entry->num_outputs),
                        errhint("Use predict_contributions() for a row of contributions per output.")));

    Datum* elements;
    bool* nulls;
    int count;
    deconstruct_array(array, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &elements, &nulls, &count);
    const int per_group = entry->num_features + 1;
    if (count == 0 || count % per_group != 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("model \"%s\" has %d features: %d contributions are not a multiple of %d", name,
                               entry->num_features, count, per_group)));
    // Several groups (a multiclass model): explain the one with the largest raw score, the
    // predicted class.
    const int groups = count / per_group;
    int group = 0;
    double best = -get_float8_infinity();
    for (int g = 0; g < groups; g++) {
        double sum = 0;
        for (int k = 0; k < per_group; k++) sum += nulls[g * per_group + k] ? 0 : DatumGetFloat8(elements[g * per_group + k]);
        if (sum > best) {
            best = sum;
            group = g;
        }
    }
    const Datum* c = elements + group * per_group;
    double prediction = 0;
    for (int k = 0; k < per_group; k++) prediction += DatumGetFloat8(c[k]);

    // Indices by |contribution| descending, stable (an insertion sort: a model has few inputs
    // compared with the work that computed them).
    int* order = (int*)palloc(sizeof(int) * Max(entry->num_features, 1));
    for (int i = 0; i < entry->num_features; i++) {
        const double a = fabs(DatumGetFloat8(c[i]));
        int j = i;
        while (j > 0 && fabs(DatumGetFloat8(c[order[j - 1]])) < a) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }

    JsonbParseState* state = NULL;
    pushJsonbValue(&state, WJB_BEGIN_OBJECT, NULL);
    push_key(&state, "prediction_value");
    push_number(&state, prediction);
    push_key(&state, "baseline_prediction_value");
    push_number(&state, DatumGetFloat8(c[entry->num_features]));
    if (entry->classification && entry->num_classes >= 2) {
        // One group of a binary classifier scores its second class; else group g is class g.
        int k = groups == 1 ? 1 : group;
        if (k < entry->num_classes) {
            push_key(&state, "class");
            push_string(&state, entry->class_labels[k]);
        }
    }
    push_key(&state, "top_feature_attributions");
    pushJsonbValue(&state, WJB_BEGIN_ARRAY, NULL);
    for (int r = 0; r < Min(top, entry->num_features); r++) {
        const int i = order[r];
        pushJsonbValue(&state, WJB_BEGIN_OBJECT, NULL);
        push_key(&state, "feature");
        push_string(&state, entry->features[i][0] != '\0' ? entry->features[i] : psprintf("f%d", i));
        push_key(&state, "value");
        push_feature_value(&state, row, entry, i);
        push_key(&state, "attribution");
        push_number(&state, DatumGetFloat8(c[i]));
        if (entry->is_text[i] && entry->text_summary[0] != '\0') push_terms(&state, row, entry, i, top);
        pushJsonbValue(&state, WJB_END_OBJECT, NULL);
    }
    pushJsonbValue(&state, WJB_END_ARRAY, NULL);
    JsonbValue* result = pushJsonbValue(&state, WJB_END_OBJECT, NULL);
    PG_RETURN_JSONB_P(JsonbValueToJsonb(result));
}

}  // extern "C"
