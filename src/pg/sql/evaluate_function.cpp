// evaluate_model(name, query, target, threshold): a model's metrics on the rows of a query.
//
// The query runs through SPI in a cursor, wrapped as
//     SELECT predict_proba('<name>', q), (q."<target>")::text FROM (<query>) q
// so the model scores through the normal path: the model name is a constant, the planner hook
// puts the calls in a PredictBatch node, and nothing here runs per row but reading the results.
// Targets are matched to the model's classes (as text, or as numbers when both are numbers) and
// the metrics are evaluation/metrics.hpp's, computed once all rows are read.
#include <cmath>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "sql/arguments.hpp"
#include "catalog/catalog.hpp"
#include "guard.hpp"
#include "settings.hpp"
#include "pg_predict/evaluation/metrics.hpp"
#include "catalog/privileges.hpp"

extern "C" {
#include "common/shortest_dec.h"
#include "parser/parse_coerce.h"
#include "utils/json.h"
#include "utils/plancache.h"
}

namespace pg_predict::pg {

namespace {

constexpr long fetch_rows = 10000;      // rows per cursor fetch (the node batches on its own)
constexpr int max_unseen_labels = 100;  // distinct targets no class matches: a wrong column?

// What the scoring query returns, by the model's kind.
enum class Scoring {
    Regression,     // predict(): float8
    Binary,         // predict_proba(): the positive class above the threshold
    Probabilities,  // predict_label() and predict_proba(): a multiclass model
    Labels,         // predict_label(): a classifier without probabilities
};

// Rows read so far, in memory that outlives SPI (the caller's context).
struct Collected {
    int64 rows = 0, null_targets = 0, null_predictions = 0, used = 0;
    int64 capacity = 0;
    int32* truth = NULL;         // classification: label index
    int32* predicted = NULL;     // Probabilities, Labels
    double* target = NULL;       // Regression
    double* prediction = NULL;   // Regression
    double* probabilities = NULL;  // Binary, Probabilities: used × classes
};

// The model's classes, sorted for lookup by text or by number.
struct ClassIndex {
    int count;
    int* by_text;    // class positions ordered by label text (strcmp)
    int* by_number;  // ordered by numeric label; NULL when the labels are not numbers
    const CatalogEntry* entry;
    MemoryContext context;  // where unseen labels are kept
    // Targets no class matches, as text, after the model's labels (index count + i).
    char* unseen[max_unseen_labels];
    int num_unseen;
};

const ClassIndex* sorting_index;  // qsort's comparators read the labels from here

int compare_text_positions(const void* a, const void* b) {
    const CatalogEntry* e = sorting_index->entry;
    return strcmp(e->class_labels[*(const int*)a], e->class_labels[*(const int*)b]);
}

int compare_number_positions(const void* a, const void* b) {
    double x = sorting_index->entry->classes[*(const int*)a], y = sorting_index->entry->classes[*(const int*)b];
    return x < y ? -1 : x > y ? 1 : 0;
}

ClassIndex* make_class_index(const CatalogEntry* entry) {
    ClassIndex* index = (ClassIndex*)palloc0(sizeof(ClassIndex));
    index->entry = entry;
    index->context = CurrentMemoryContext;
    index->count = entry->num_classes;
    index->by_text = (int*)palloc(sizeof(int) * Max(entry->num_classes, 1));
    for (int c = 0; c < entry->num_classes; c++) index->by_text[c] = c;
    sorting_index = index;
    qsort(index->by_text, entry->num_classes, sizeof(int), compare_text_positions);
    if (entry->classes != NULL) {
        index->by_number = (int*)palloc(sizeof(int) * Max(entry->num_classes, 1));
        memcpy(index->by_number, index->by_text, sizeof(int) * entry->num_classes);
        qsort(index->by_number, entry->num_classes, sizeof(int), compare_number_positions);
    }
    sorting_index = NULL;
    return index;
}

int find_text(const ClassIndex* index, const char* label) {
    int lo = 0, hi = index->count - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2, position = index->by_text[mid];
        int order = strcmp(index->entry->class_labels[position], label);
        if (order == 0) return position;
        if (order < 0) lo = mid + 1; else hi = mid - 1;
    }
    return -1;
}

int find_number(const ClassIndex* index, double label) {
    int lo = 0, hi = index->count - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2, position = index->by_number[mid];
        double value = index->entry->classes[position];
        if (value == label) return position;
        if (value < label) lo = mid + 1; else hi = mid - 1;
    }
    return -1;
}

// The index of a target the model has no class for: after the model's classes, one per
// distinct text (copied into the index's context).
int unseen_index(ClassIndex* index, const char* label, const char* target) {
    for (int u = 0; u < index->num_unseen; u++)
        if (strcmp(index->unseen[u], label) == 0) return index->count + u;
    if (index->num_unseen == max_unseen_labels)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("target column \"%s\" has more than %d values that are not classes of model \"%s\"",
                               target, max_unseen_labels, index->entry->name),
                        errhint("Is \"%s\" the column the model predicts? Its classes are in the models view.", target)));
    index->unseen[index->num_unseen] = MemoryContextStrdup(index->context, label);
    return index->count + index->num_unseen++;
}

void grow(Collected* c, Scoring scoring, int classes) {
    if (c->used < c->capacity) return;
    int64 capacity = c->capacity == 0 ? 1024 : c->capacity * 2;
    auto resize = [&](void* old, size_t element) {
        return old == NULL ? MemoryContextAllocHuge(CurrentMemoryContext, capacity * element)
                           : repalloc_huge(old, capacity * element);
    };
    if (scoring == Scoring::Regression) {
        c->target = (double*)resize(c->target, sizeof(double));
        c->prediction = (double*)resize(c->prediction, sizeof(double));
    } else {
        c->truth = (int32*)resize(c->truth, sizeof(int32));
        if (scoring != Scoring::Binary) c->predicted = (int32*)resize(c->predicted, sizeof(int32));
        if (scoring != Scoring::Labels)
            c->probabilities = (double*)resize(c->probabilities, sizeof(double) * classes);
    }
    c->capacity = capacity;
}

// Errors unless the model is one evaluate_model() can measure, and the threshold fits it.
Scoring scoring_for(const CatalogEntry* entry, double threshold) {
    if (entry->transformer)
        ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                        errmsg("model \"%s\" is a transformer (its pipeline ends in %s); evaluate_model() needs a model that predicts",
                               entry->name, entry->objective)));
    if (entry->num_outputs > 1)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("model \"%s\" predicts %d outputs per row; evaluate_model() measures single-output models",
                               entry->name, entry->num_outputs),
                        errhint("Compare predict_outputs() with the targets in SQL.")));
    if (std::isnan(threshold) || threshold < 0 || threshold > 1)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("threshold must be between 0 and 1, not %g", threshold)));
    Scoring scoring = !entry->classification         ? Scoring::Regression
                      : !entry->has_probabilities    ? Scoring::Labels
                      : entry->num_classes == 2      ? Scoring::Binary
                                                     : Scoring::Probabilities;
    if (scoring != Scoring::Binary && threshold != 0.5)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("threshold applies to binary classifiers with probabilities; model \"%s\" is %s", entry->name,
                               scoring == Scoring::Regression ? "a regressor"
                               : scoring == Scoring::Labels   ? "a classifier without probabilities"
                                                              : "a multiclass classifier"),
                        errhint("Leave threshold out (its default 0.5 is ignored for such models).")));
    return scoring;
}

bool is_numeric_type(Oid type) { return TypeCategory(getBaseType(type)) == TYPCATEGORY_NUMERIC; }

// The query's columns, checked for the target before anything runs: its type, or an error
// that names the columns there are.
Oid target_type(const char* query, const char* target) {
    StringInfoData sql;
    initStringInfo(&sql);
    appendStringInfo(&sql, "SELECT * FROM (\n%s\n) q", query);
    SPIPlanPtr plan = SPI_prepare(sql.data, 0, NULL);
    if (plan == NULL)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
                        errmsg("evaluate_model(): could not prepare the query: %s", SPI_result_code_string(SPI_result))));
    List* sources = SPI_plan_get_plan_sources(plan);
    if (list_length(sources) != 1 || ((CachedPlanSource*)linitial(sources))->resultDesc == NULL)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("evaluate_model() needs one SELECT query")));
    TupleDesc desc = ((CachedPlanSource*)linitial(sources))->resultDesc;
    int attno = SPI_fnumber(desc, target);
    if (attno <= 0) {
        StringInfoData columns;
        initStringInfo(&columns);
        for (int i = 0; i < desc->natts; i++)
            appendStringInfo(&columns, "%s%s", i > 0 ? ", " : "", quote_identifier(NameStr(TupleDescAttr(desc, i)->attname)));
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                        errmsg("target column \"%s\" is not a column of the query", target),
                        errdetail("The query's columns: %s.", columns.data),
                        errhint("target names the column as the query returns it (case-sensitive, not an expression).")));
    }
    Oid type = TupleDescAttr(desc, attno - 1)->atttypid;
    SPI_freeplan(plan);
    return type;
}

// The scoring query: the model's calls over q and the target, with the model name a literal
// so the planner hook batches the calls.
char* scoring_query(const char* schema, const char* name, const char* query, const char* target, Scoring scoring,
                    const char* target_cast) {
    const char* s = quote_identifier(schema);
    const char* model = quote_literal_cstr(name);
    StringInfoData sql;
    initStringInfo(&sql);
    appendStringInfoString(&sql, "SELECT ");
    switch (scoring) {
        case Scoring::Regression: appendStringInfo(&sql, "%s.predict(%s, q)", s, model); break;
        case Scoring::Binary: appendStringInfo(&sql, "NULL::text, %s.predict_proba(%s, q)", s, model); break;
        case Scoring::Probabilities:
            appendStringInfo(&sql, "%s.predict_label(%s, q), %s.predict_proba(%s, q)", s, model, s, model);
            break;
        case Scoring::Labels: appendStringInfo(&sql, "%s.predict_label(%s, q), NULL::float8[]", s, model); break;
    }
    appendStringInfo(&sql, ", (q.%s)%s FROM (\n%s\n) q", quote_identifier(target), target_cast, query);
    return sql.data;
}

// The user's query without trailing semicolons and blanks (it becomes a subquery).
char* trimmed_query(const char* query) {
    char* copy = query_without_terminator(query);
    if (copy[0] == '\0')
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("evaluate_model() needs a query, not an empty string")));
    return copy;
}

// One evaluation: what the model is, how targets are matched, what was read so far.
struct Evaluation {
    const CatalogEntry* entry;
    const char* target;
    Scoring scoring;
    int classes;         // the model's (0 for a regressor)
    bool by_number;      // targets read as float8 and matched to numeric labels
    ClassIndex* index;   // a classifier's classes
    double threshold;
    MemoryContext context;  // where the collected rows live (the caller's)
    Collected rows;
};

// Reads one row of the scoring query: counts NULLs, keeps the target and what was predicted.
// Runs in a per-fetch context; what is kept goes to e->context.
void read_row(Evaluation* e, HeapTuple row, TupleDesc desc) {
    Collected* c = &e->rows;
    c->rows++;
    bool target_null, label_null, proba_null;
    Datum truth = SPI_getbinval(row, desc, e->scoring == Scoring::Regression ? 2 : 3, &target_null);
    if (target_null) c->null_targets++;
    if (e->scoring == Scoring::Regression) {
        Datum value = SPI_getbinval(row, desc, 1, &proba_null);
        if (proba_null) c->null_predictions++;
        if (target_null || proba_null) return;
        MemoryContext old = MemoryContextSwitchTo(e->context);
        grow(c, e->scoring, e->classes);
        MemoryContextSwitchTo(old);
        c->target[c->used] = DatumGetFloat8(truth);
        c->prediction[c->used++] = DatumGetFloat8(value);
        return;
    }
    Datum label = SPI_getbinval(row, desc, 1, &label_null);
    Datum proba = SPI_getbinval(row, desc, 2, &proba_null);
    bool missing = e->scoring == Scoring::Binary ? proba_null
                   : e->scoring == Scoring::Labels ? label_null
                                                   : label_null || proba_null;
    if (missing) c->null_predictions++;
    if (target_null || missing) return;
    MemoryContext old = MemoryContextSwitchTo(e->context);
    grow(c, e->scoring, e->classes);
    MemoryContextSwitchTo(old);
    int truth_index;
    if (e->by_number) {
        double value = DatumGetFloat8(truth);
        truth_index = find_number(e->index, value);
        if (truth_index < 0) truth_index = unseen_index(e->index, double_to_shortest_decimal(value), e->target);
    } else {
        char* truth_text = TextDatumGetCString(truth);
        truth_index = find_text(e->index, truth_text);
        if (truth_index < 0) truth_index = unseen_index(e->index, truth_text, e->target);
    }
    c->truth[c->used] = truth_index;
    if (e->scoring != Scoring::Binary) {
        char* label_text = TextDatumGetCString(label);
        int p = find_text(e->index, label_text);
        if (p < 0)
            elog(ERROR, "evaluate_model(): model \"%s\" predicted \"%s\", not one of its classes", e->entry->name,
                 label_text);
        c->predicted[c->used] = p;
    }
    if (e->scoring != Scoring::Labels) {
        ArrayType* array = DatumGetArrayTypeP(proba);
        if (ARR_NDIM(array) != 1 || ARR_HASNULL(array) || ArrayGetNItems(ARR_NDIM(array), ARR_DIMS(array)) != e->classes)
            elog(ERROR, "evaluate_model(): predict_proba() of model \"%s\" gave no %d probabilities", e->entry->name,
                 e->classes);
        memcpy(&c->probabilities[c->used * e->classes], ARR_DATA_PTR(array), sizeof(double) * e->classes);
    }
    c->used++;
}

// Runs the scoring query in a cursor and reads every row.
void read_query(Evaluation* e, const char* sql) {
    SPIPlanPtr plan = SPI_prepare_cursor(sql, 0, NULL, CURSOR_OPT_NO_SCROLL);
    if (plan == NULL)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
                        errmsg("evaluate_model(): could not prepare the query: %s", SPI_result_code_string(SPI_result))));
    Portal portal = SPI_cursor_open(NULL, plan, NULL, NULL, false);
    MemoryContext per_fetch = AllocSetContextCreate(e->context, "evaluate_model fetch", ALLOCSET_DEFAULT_SIZES);
    for (;;) {
        SPI_cursor_fetch(portal, true, fetch_rows);
        if (SPI_processed == 0) break;
        MemoryContext old = MemoryContextSwitchTo(per_fetch);
        for (uint64 r = 0; r < SPI_processed; r++) read_row(e, SPI_tuptable->vals[r], SPI_tuptable->tupdesc);
        MemoryContextSwitchTo(old);
        MemoryContextReset(per_fetch);
        SPI_freetuptable(SPI_tuptable);
        CHECK_FOR_INTERRUPTS();
    }
    SPI_cursor_close(portal);
    MemoryContextDelete(per_fetch);
}

// Errors unless every row had a target and a prediction, and there was a row.
void check_rows(const Evaluation* e) {
    const Collected* c = &e->rows;
    if (c->rows == 0)
        ereport(ERROR, (errcode(ERRCODE_NO_DATA_FOUND), errmsg("evaluate_model(): the query returned no rows")));
    if (c->null_targets > 0)
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                        errmsg("target column \"%s\" is NULL in " INT64_FORMAT " of " INT64_FORMAT " rows", e->target,
                               c->null_targets, c->rows),
                        errhint("evaluate_model() skips no rows: filter them out (WHERE %s IS NOT NULL) or fill them in.",
                                quote_identifier(e->target))));
    if (c->null_predictions > 0)
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                        errmsg("model \"%s\" predicts NULL for " INT64_FORMAT " of " INT64_FORMAT " rows", e->entry->name,
                               c->null_predictions, c->rows),
                        errdetail("A feature the model cannot do without is NULL there (it defines no missing value)."),
                        errhint("evaluate_model() skips no rows: filter them out or fill the features in.")));
}

// The metrics of the rows read, as JSON text in e->context.
char* metrics_text(const Evaluation* e) {
    const Collected* c = &e->rows;
    char* rendered = guarded([&] {
        namespace ev = pg_predict::evaluation;
        std::string text;
        if (e->scoring == Scoring::Regression) {
            text = ev::render(ev::regression_metrics(std::vector<double>(c->target, c->target + c->used),
                                                     std::vector<double>(c->prediction, c->prediction + c->used)));
        } else {
            ev::ClassificationInput in;
            for (int k = 0; k < e->classes; k++) in.labels.emplace_back(e->entry->class_labels[k]);
            for (int u = 0; u < e->index->num_unseen; u++) in.labels.emplace_back(e->index->unseen[u]);
            in.model_classes = e->classes;
            in.truth.assign(c->truth, c->truth + c->used);
            if (c->predicted != NULL) in.predicted.assign(c->predicted, c->predicted + c->used);
            if (c->probabilities != NULL)
                in.probabilities.assign(c->probabilities, c->probabilities + c->used * e->classes);
            if (e->scoring == Scoring::Binary) in.threshold = e->threshold;
            text = ev::render(ev::classification_metrics(in));
        }
        char* copy = strdup(text.c_str());
        if (copy == NULL) throw std::bad_alloc();
        return copy;
    });
    // Copy out of malloc'd memory before anything that may raise an error.
    char* metrics = (char*)MemoryContextStrdup(e->context, rendered);
    free(rendered);
    return metrics;
}

// The metrics document, with the model's name and version in front.
Datum metrics_document(const CatalogEntry* entry, const char* metrics, bool cascade) {
    StringInfoData doc;
    initStringInfo(&doc);
    appendStringInfoString(&doc, "{\"model\": ");
    escape_json(&doc, entry->name);
    // Scored through the version's cascade (pg_predict.cascades): said, since its labels are approximate.
    if (cascade) appendStringInfoString(&doc, ", \"scored_by\": \"cascade\"");
    appendStringInfo(&doc, ", \"version\": %d, %s", entry->version, metrics + 1);  // the metrics' '{' dropped
    return DirectFunctionCall1(jsonb_in, CStringGetDatum(doc.data));
}

}  // namespace

}  // namespace pg_predict::pg

using namespace pg_predict::pg;

extern "C" {

PG_PREDICT_SQL_FUNCTION(pg_predict_evaluate_model);

Datum pg_predict_evaluate_model(PG_FUNCTION_ARGS) {
    char* name = required_text_arg(fcinfo, 0, "model name");
    char* query = trimmed_query(required_text_arg(fcinfo, 1, "query"));
    char* target = required_text_arg(fcinfo, 2, "target");
    if (PG_ARGISNULL(3))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("threshold must not be NULL")));
    double threshold = PG_GETARG_FLOAT8(3);

    Evaluation e{};
    CatalogEntry* entry = catalog_lookup(name, false);
    check_model_usage(entry);
    e.entry = entry;
    e.target = target;
    e.threshold = threshold;
    e.scoring = scoring_for(entry, threshold);
    // With pg_predict.cascades on, the labels a query gets are the cascade's: measured as such
    // (labels only, since probabilities stay the model's), and said in the result.
    char* cascade = cascades_enabled && entry->classification ? catalog_cascade(entry->id) : NULL;
    if (cascade != NULL) {
        if (threshold != 0.5)
            ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                            errmsg("evaluate_model(): model \"%s\" is scored through its cascade, which gives labels, "
                                   "not probabilities for a threshold", name),
                            errhint("SET pg_predict.cascades = off to evaluate the model's probabilities.")));
        e.scoring = Scoring::Labels;
    }
    e.classes = entry->classification ? entry->num_classes : 0;
    e.index = entry->classification ? make_class_index(entry) : NULL;
    e.context = CurrentMemoryContext;
    char* schema = get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid));

    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "evaluate_model(): SPI_connect failed");
    Oid type = target_type(query, target);
    bool numeric_target = is_numeric_type(type);
    if (e.scoring == Scoring::Regression && !numeric_target)
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                        errmsg("target column \"%s\" is of type %s; model \"%s\" is a regressor and needs a numeric target",
                               target, format_type_be(type), name)));
    // Numbers compare with numeric labels as numbers, and so do booleans (false 0, true 1: a
    // boolean column as the target of a 0/1 model); everything else compares as text.
    bool boolean_target = getBaseType(type) == BOOLOID;
    e.by_number = e.scoring == Scoring::Regression ||
                  ((numeric_target || boolean_target) && e.index->by_number != NULL);
    const char* cast = !e.by_number ? "::text" : boolean_target ? "::int::float8" : "::float8";
    read_query(&e, scoring_query(schema, name, query, target, e.scoring, cast));
    check_rows(&e);
    char* metrics = metrics_text(&e);
    SPI_finish();
    PG_RETURN_DATUM(metrics_document(entry, metrics, cascade != NULL));
}

}  // extern "C"
