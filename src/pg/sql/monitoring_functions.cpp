// profile_model(name, query, version) and model_drift(name, query, baseline, options): what a
// query's rows look like to a model, and how far they are from a baseline (docs/monitoring.md).
//
// Both read the columns the model reads (its columns_read, by name, each once) and its output,
// through one query:
//     SELECT q."<column>", ..., <schema>.predict('<name pinned to the version>', q) FROM (<query>) q
// so the output is scored by the normal path (a PredictBatch node). A DestReceiver copies each
// row's values from the executor's slot into plain arrays, and every 10,000 rows hands them to
// monitoring::Profiler or monitoring::DriftCheck inside guarded(): nothing but reading happens
// per row on the PostgreSQL side.
#include <cmath>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/catalog.hpp"
#include "catalog/privileges.hpp"
#include "features.hpp"
#include "guard.hpp"
#include "pg_predict/monitoring/drift.hpp"
#include "pg_predict/monitoring/profile.hpp"
#include "sql/arguments.hpp"
#include "sql/monitoring.hpp"

extern "C" {
#include "funcapi.h"
#include "utils/lsyscache.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/plancache.h"
#include "utils/typcache.h"
}

// No C++ object with a destructor may live in frames that call PostgreSQL (ereport longjmps):
// the monitoring objects are created, fed and read inside guarded() only.

namespace pg_predict::pg {

namespace {

using monitoring::ColumnKind;
using monitoring::ColumnSpec;

constexpr int64 kBatchRows = 10000;  // rows handed to the statistics at once

// The columns a profile or a drift check reads: the model's inputs by name, then its output.
struct Monitored {
    const CatalogEntry* entry;
    const char* function;  // for messages
    int inputs;
    const char** names;
    bool* numeric;
    bool has_output;
    bool output_numeric;
    bool output_probability;  // the second class's probability (a binary classifier)
};

Monitored monitored_columns(const CatalogEntry* entry, const char* function) {
    Monitored m{};
    m.entry = entry;
    m.function = function;
    m.names = (const char**)palloc(sizeof(char*) * Max(entry->num_features, 1));
    m.numeric = (bool*)palloc(sizeof(bool) * (entry->num_features + 1));
    for (int f = 0; f < entry->num_features; f++) {
        if (entry->is_unused[f]) continue;
        const char* column = entry->columns[f];
        if (column == NULL || column[0] == '\0')
            ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                            errmsg("%s: model \"%s\" reads its features by position, not from named columns",
                                   function, entry->name),
                            errdetail("Profiles and drift are kept per column the model reads.")));
        bool seen = false;
        for (int i = 0; i < m.inputs; i++) seen = seen || strcmp(m.names[i], column) == 0;
        if (seen) continue;
        m.names[m.inputs] = column;
        m.numeric[m.inputs] = !entry->is_text[f];
        m.inputs++;
    }
    // (a transformer has none; a multi-output model's several values are not profiled)
    m.has_output = !entry->transformer && entry->num_outputs <= 1;
    // The output: a regressor's value; a binary classifier's probability of its second class (what
    // moves first); another classifier's label (categorical).
    m.output_probability = entry->classification && entry->has_probabilities && entry->num_classes == 2;
    m.output_numeric = !entry->classification || m.output_probability;
    if (m.has_output) m.numeric[m.inputs] = m.output_numeric;
    return m;
}

// Called inside guarded() only.
std::vector<ColumnSpec> column_specs(const Monitored& m) {
    std::vector<ColumnSpec> specs;
    for (int i = 0; i < m.inputs; i++)
        specs.push_back({m.names[i], m.numeric[i] ? ColumnKind::Numeric : ColumnKind::Categorical});
    if (m.has_output) specs.push_back({"output", m.output_numeric ? ColumnKind::Numeric : ColumnKind::Categorical});
    return specs;
}

// The query as a subquery's body; an error when nothing is left.
char* query_body(const char* query, const char* what) {
    char* copy = query_without_terminator(query);
    if (copy[0] == '\0')
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s must not be an empty string", what)));
    return copy;
}

// How each input is read from the query: checked against the query's own columns first, so a
// missing column or a wrong type is an error that names it (not a parser error about q."x").
struct Reading {
    FeatureConverter* convert;  // numeric inputs; NULL for text ones
    bool* blank_padded;
};

Reading check_columns(const Monitored& m, const char* body, const char* what) {
    SPIPlanPtr plan = SPI_prepare(psprintf("SELECT * FROM (%s\n) AS q", body), 0, NULL);
    if (plan == NULL)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: could not prepare %s: %s", m.function, what, SPI_result_code_string(SPI_result))));
    List* sources = SPI_plan_get_plan_sources(plan);
    TupleDesc desc = list_length(sources) == 1 ? ((CachedPlanSource*)linitial(sources))->resultDesc : NULL;
    if (desc == NULL)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s: %s must be one SELECT", m.function, what)));
    Reading r;
    r.convert = (FeatureConverter*)palloc0(sizeof(FeatureConverter) * Max(m.inputs, 1));
    r.blank_padded = (bool*)palloc0(sizeof(bool) * Max(m.inputs, 1));
    for (int i = 0; i < m.inputs; i++) {
        Form_pg_attribute found = NULL;
        for (int a = 0; a < desc->natts && found == NULL; a++) {
            Form_pg_attribute attr = TupleDescAttr(desc, a);
            if (!attr->attisdropped && strcmp(NameStr(attr->attname), m.names[i]) == 0) found = attr;
        }
        if (found == NULL)
            ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                            errmsg("%s: %s has no column \"%s\", which model \"%s\" reads", m.function, what,
                                   m.names[i], m.entry->name),
                            errhint("SELECT columns_read FROM models WHERE name = '%s' lists the columns it reads.",
                                    m.entry->name)));
        if (m.numeric[i]) {
            r.convert[i] = converter_for_type(found->atttypid);
            if (r.convert[i] == NULL)
                ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                                errmsg("%s: column \"%s\" of %s is %s; model \"%s\" reads a number there", m.function,
                                       m.names[i], what, format_type_be(found->atttypid), m.entry->name)));
        } else {
            if (!is_text_type(found->atttypid))
                ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                                errmsg("%s: column \"%s\" of %s is %s; model \"%s\" reads text there", m.function,
                                       m.names[i], what, format_type_be(found->atttypid), m.entry->name)));
            r.blank_padded[i] = is_blank_padded(found->atttypid);
        }
    }
    SPI_freeplan(plan);
    return r;
}

char* reading_query(const Monitored& m, const char* schema, const char* pinned_name, const char* body) {
    StringInfoData sql;
    initStringInfo(&sql);
    appendStringInfoString(&sql, "SELECT ");
    for (int i = 0; i < m.inputs; i++) appendStringInfo(&sql, "%sq.%s", i > 0 ? ", " : "", quote_identifier(m.names[i]));
    if (m.has_output && m.output_probability)
        appendStringInfo(&sql, "%s(%s.predict_proba(%s, q))[2]", m.inputs > 0 ? ", " : "", quote_identifier(schema),
                         quote_literal_cstr(pinned_name));
    else if (m.has_output)
        appendStringInfo(&sql, "%s%s.%s(%s, q)", m.inputs > 0 ? ", " : "", quote_identifier(schema),
                         m.output_numeric ? "predict" : "predict_label", quote_literal_cstr(pinned_name));
    appendStringInfo(&sql, " FROM (%s\n) AS q", body);
    return sql.data;
}

// A batch of rows' values as plain arrays, a column after another: numbers, or text pointers
// into the batch's context.
struct Batch {
    int64 rows;
    int64 stride;  // rows a column has room for
    int columns;
    double* numbers;          // columns x stride
    std::string_view* texts;  // columns x stride
    bool* nulls;              // columns x stride
};

// A column at a time, so that one column's counters stay in cache.
template <typename Sink>
void feed(Sink* sink, const Batch& b, const bool* numeric) {
    for (int c = 0; c < b.columns; c++) {
        const int64 at = c * b.stride;
        if (numeric[c])
            sink->add_numbers(c, b.numbers + at, b.nulls + at, b.rows);
        else
            sink->add_texts(c, b.texts + at, b.nulls + at, b.rows);
    }
    sink->end_rows(b.rows);
}

// Receives the reading query's rows from the executor, as its slots (no tuple is formed or
// copied), into a batch that it hands to the sink every kBatchRows rows.
struct Receiver {
    DestReceiver pub;  // first: the executor sees a DestReceiver
    const Monitored* m;
    const Reading* reading;
    void* sink;
    void (*flush)(Receiver*);
    Batch b;
    MemoryContext batch_context;  // the batch's texts
};

template <typename Sink>
void flush_to(Receiver* r) {
    if (r->b.rows == 0) return;
    Sink* sink = (Sink*)r->sink;
    const Batch& b = r->b;
    const bool* numeric = r->m->numeric;
    guarded([&] { feed(sink, b, numeric); });
    r->b.rows = 0;
    MemoryContextReset(r->batch_context);
}

bool receive_slot(TupleTableSlot* slot, DestReceiver* self) {
    Receiver* r = (Receiver*)self;
    const Monitored& m = *r->m;
    Batch& b = r->b;
    slot_getallattrs(slot);
    const int64 row = b.rows;
    for (int c = 0; c < b.columns; c++) {
        const int64 at = c * b.stride + row;
        b.nulls[at] = slot->tts_isnull[c];
        if (b.nulls[at]) continue;
        const Datum value = slot->tts_values[c];
        if (c == m.inputs)  // the output
            m.output_numeric ? (void)(b.numbers[at] = DatumGetFloat8(value))
                             : (void)(b.texts[at] = text_bytes_copy(value, false, r->batch_context));
        else if (m.numeric[c])
            b.numbers[at] = r->reading->convert[c](value);
        else
            b.texts[at] = text_bytes_copy(value, r->reading->blank_padded[c], r->batch_context);
    }
    if (++b.rows == b.stride) r->flush(r);
    return true;
}

void receiver_startup(DestReceiver*, int, TupleDesc) {}
void receiver_shutdown(DestReceiver*) {}
void receiver_destroy(DestReceiver*) {}

// Runs the reading query and hands every row to `sink` (a Profiler or a DriftCheck).
template <typename Sink>
void read_rows(const Monitored& m, const Reading& reading, const char* sql, Sink* sink) {
    SPIPlanPtr plan = SPI_prepare(sql, 0, NULL);
    if (plan == NULL)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
                        errmsg("%s: could not prepare the query: %s", m.function, SPI_result_code_string(SPI_result))));
    Receiver* r = (Receiver*)palloc0(sizeof(Receiver));
    r->pub.receiveSlot = receive_slot;
    r->pub.rStartup = receiver_startup;
    r->pub.rShutdown = receiver_shutdown;
    r->pub.rDestroy = receiver_destroy;
    r->pub.mydest = DestNone;
    r->m = &m;
    r->reading = &reading;
    r->sink = sink;
    r->flush = flush_to<Sink>;
    r->b.columns = m.inputs + (m.has_output ? 1 : 0);
    r->b.stride = kBatchRows;
    r->b.numbers = (double*)palloc(sizeof(double) * kBatchRows * Max(r->b.columns, 1));
    r->b.texts = (std::string_view*)palloc(sizeof(std::string_view) * kBatchRows * Max(r->b.columns, 1));
    r->b.nulls = (bool*)palloc(sizeof(bool) * kBatchRows * Max(r->b.columns, 1));
    r->batch_context = AllocSetContextCreate(CurrentMemoryContext, "pg_predict monitoring batch", ALLOCSET_DEFAULT_SIZES);
    SPIExecuteOptions options = {};
    options.read_only = false;  // a snapshot that sees what this statement wrote (train()'s new version)
    options.dest = &r->pub;
    // A SELECT (the query is a FROM item) whose rows went to the receiver: SPI says
    // SPI_OK_UTILITY for a receiver of its own kind.
    int rc = SPI_execute_plan_extended(plan, &options);
    if (rc != SPI_OK_SELECT && rc != SPI_OK_UTILITY)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: the query must be a SELECT (%s)", m.function, SPI_result_code_string(rc))));
    r->flush(r);
    MemoryContextDelete(r->batch_context);
}

// The profile of `body`'s rows (JSON text, palloc'd in the current context); *rows: how many.
char* profile_rows(const Monitored& m, const char* schema, const char* pinned_name, const char* body, const char* what,
                   int64* rows) {
    Reading reading = check_columns(m, body, what);
    char* sql = reading_query(m, schema, pinned_name, body);
    monitoring::Profiler* profiler = guarded([&] { return new monitoring::Profiler(column_specs(m)); });
    PG_TRY();
    {
        read_rows(m, reading, sql, profiler);
    }
    PG_CATCH();
    {
        delete profiler;
        PG_RE_THROW();
    }
    PG_END_TRY();
    *rows = profiler->rows();
    std::string* document = guarded([&] { return new std::string(profiler->document()); });
    delete profiler;
    char* text = pstrdup(document->c_str());
    delete document;
    return text;
}

const char* function_schema(FunctionCallInfo fcinfo) {
    return get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid));
}

void put_result(ReturnSetInfo* rsinfo, const monitoring::DriftRow& row) {
    Datum values[7];
    bool nulls[7] = {false, false, false, false, false, false, false};
    values[0] = CStringGetTextDatum(row.feature.c_str());
    values[1] = CStringGetTextDatum(row.kind.c_str());
    values[2] = CStringGetTextDatum(row.statistic.c_str());
    values[3] = Float8GetDatum(row.value);
    nulls[3] = std::isnan(row.value);  // no rows on one side
    values[4] = Float8GetDatum(row.threshold);
    values[5] = BoolGetDatum(row.anomaly);
    values[6] = DirectFunctionCall1(jsonb_in, CStringGetDatum(row.detail.c_str()));
    tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

// Profiles `body`'s rows for version `entry` and stores the profile with it; returns what was
// stored (JSON text).
char* store_profile(const CatalogEntry* entry, const char* body, const char* schema, const char* function) {
    const char* name = entry->name;
    Monitored m = monitored_columns(entry, function);
    MemoryContext caller = CurrentMemoryContext;
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "pg_predict: SPI_connect failed");
    int64 rows = 0;
    char* profile = profile_rows(m, schema, pin_model_version(name, entry->id), body, "the query", &rows);
    profile = MemoryContextStrdup(caller, profile);
    SPI_finish();
    if (rows == 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s: the query returned no rows", function),
                        errdetail("A profile describes rows; model \"%s\" keeps the profile it had.", name)));
    char* stored = catalog_set_profile(name, entry->id, entry->version, profile, body);
    if (stored == NULL)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("%s: version %d of model \"%s\" was dropped meanwhile", function, entry->version, name)));
    return stored;
}

}  // namespace

void profile_trained_version(const char* name, int version, const char* query, Oid function) {
    CatalogEntry* entry =
        catalog_lookup(pin_model_version(name, catalog_version_id(name, version)), false, GetLatestSnapshot());
    store_profile(entry, query_body(query, "query"), get_namespace_name(get_func_namespace(function)), "train()");
}

extern "C" {

PG_PREDICT_SQL_FUNCTION(pg_predict_profile_model);
PG_PREDICT_SQL_FUNCTION(pg_predict_model_drift);

Datum pg_predict_profile_model(PG_FUNCTION_ARGS) {
    prevent_catalog_change("profile_model()");
    char* name = required_text_arg(fcinfo, 0, "model name");
    char* body = query_body(required_text_arg(fcinfo, 1, "query"), "query");
    CatalogEntry* entry = catalog_lookup(name, false);
    if (!PG_ARGISNULL(2))
        entry = catalog_lookup(pin_model_version(name, catalog_version_id(name, required_version_arg(fcinfo, 2))), false);
    check_model_owner(name, entry->owner);
    char* stored = store_profile(entry, body, function_schema(fcinfo), "profile_model()");
    PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(stored)));
}

Datum pg_predict_model_drift(PG_FUNCTION_ARGS) {
    char* name = required_text_arg(fcinfo, 0, "model name");
    char* body = query_body(required_text_arg(fcinfo, 1, "query"), "query");
    char* baseline_body = PG_ARGISNULL(2) ? NULL : query_body(text_to_cstring(PG_GETARG_TEXT_PP(2)), "baseline");
    if (PG_ARGISNULL(3)) ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("options must not be NULL")));
    Jsonb* options_jsonb = PG_GETARG_JSONB_P(3);
    char* options = JsonbToCString(NULL, &options_jsonb->root, VARSIZE(options_jsonb));
    CatalogEntry* entry = catalog_lookup(name, false);
    check_model_usage(entry);
    Monitored m = monitored_columns(entry, "model_drift()");
    // options' "output": false leaves the output out (its row and its scoring)
    JsonbValue key;
    key.type = jbvString;
    key.val.string.val = (char*)"output";
    key.val.string.len = 6;
    JsonbValue* output = JB_ROOT_IS_OBJECT(options_jsonb)
                             ? findJsonbValueFromContainer(&options_jsonb->root, JB_FOBJECT, &key) : NULL;
    if (output != NULL && output->type == jbvBool && !output->val.boolean) m.has_output = false;
    char* pinned = pin_model_version(name, entry->id);
    const char* schema = function_schema(fcinfo);

    char* baseline = NULL;
    if (baseline_body == NULL) {
        baseline = catalog_profile(entry->id);
        if (baseline == NULL)
            ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                            errmsg("model_drift(): version %d of model \"%s\" has no profile", entry->version, name),
                            errhint("profile_model('%s', 'SELECT ... the rows it learned from') takes one, or give "
                                    "model_drift a baseline query.", name)));
    }
    InitMaterializedSRF(fcinfo, 0);
    ReturnSetInfo* rsinfo = (ReturnSetInfo*)fcinfo->resultinfo;
    MemoryContext caller = CurrentMemoryContext;
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "pg_predict: SPI_connect failed");
    // The query's columns and the options are checked before any row is read.
    Reading reading = check_columns(m, body, "the query");
    guarded([&] { monitoring::check_drift_options(options, column_specs(m)); });
    if (baseline_body != NULL) {
        int64 rows = 0;
        baseline = profile_rows(m, schema, pinned, baseline_body, "the baseline query", &rows);
    }
    monitoring::DriftCheck* check = guarded([&] {
        return new monitoring::DriftCheck(baseline, column_specs(m), options);
    });
    std::vector<monitoring::DriftRow>* results = NULL;
    PG_TRY();
    {
        read_rows(m, reading, reading_query(m, schema, pinned, body), check);
    }
    PG_CATCH();
    {
        delete check;
        PG_RE_THROW();
    }
    PG_END_TRY();
    results = guarded([&] { return new std::vector<monitoring::DriftRow>(check->results()); });
    delete check;
    SPI_finish();
    MemoryContext old = MemoryContextSwitchTo(caller);
    PG_TRY();
    {
        for (const monitoring::DriftRow& row : *results) put_result(rsinfo, row);
    }
    PG_CATCH();
    {
        delete results;
        PG_RE_THROW();
    }
    PG_END_TRY();
    MemoryContextSwitchTo(old);
    delete results;
    return (Datum)0;
}

}  // extern "C"

}  // namespace pg_predict::pg
