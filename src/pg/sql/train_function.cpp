// train(name, query, target, algorithm, hyperparams, test_size, seed, deploy, exclude): runs the query
// through an SPI cursor in batches, hands each row to the training module (src/training/, the
// torch-free interface include/pg_predict/training/trainer.hpp), and registers what it fits
// through the importer create_model uses (a scikit-learn document), with the test split's
// metrics.
#include <cmath>

#include "sql/arguments.hpp"
#include "sql/monitoring.hpp"
#include "sql/labels.hpp"
#include "catalog/catalog.hpp"
#include "features.hpp"
#include "guard.hpp"
#include "heap_trim.hpp"
#include "pg_predict/runtime/api.hpp"
#include "pg_predict/evaluation/metrics.hpp"
#include "pg_predict/training/trainer.hpp"

extern "C" {
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/plancache.h"
}

namespace pg_predict::pg {

namespace {

namespace training = pg_predict::training;

// Rows fetched from the cursor at a time; interrupts are checked between fetches.
constexpr long kFetchRows = 10000;

DeployChoice deploy_choice(const char* value) {
    if (strcmp(value, "always") == 0) return DeployChoice::always;
    if (strcmp(value, "best") == 0) return DeployChoice::best;
    if (strcmp(value, "never") == 0) return DeployChoice::never;
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                    errmsg("deploy must be 'always', 'best' or 'never', not '%s'", value)));
}

void free_dataset_callback(void* arg) {
    auto** dataset = static_cast<training::Dataset**>(arg);
    training::free_dataset(*dataset);
    *dataset = NULL;
}

void free_trained_callback(void* arg) {
    try {
        delete static_cast<training::Trained*>(arg);
    } catch (...) {
    }
}

void free_built_model_callback(void* arg) {
    try {
        runtime::free_built_model(static_cast<runtime::BuiltModel*>(arg));
    } catch (...) {
    }
}

void on_reset(void (*func)(void*), void* arg) {
    MemoryContextCallback* callback = (MemoryContextCallback*)palloc0(sizeof(MemoryContextCallback));
    callback->func = func;
    callback->arg = arg;
    MemoryContextRegisterResetCallback(CurrentMemoryContext, callback);
}

// What a result column becomes (predict's rules); an error naming it when it is none of them.
training::ColumnKind column_kind(Form_pg_attribute attribute, const char* role) {
    Oid type = attribute->atttypid;
    if (getBaseType(type) == BOOLOID) return training::ColumnKind::Boolean;
    if (converter_for_type(type) != NULL) return training::ColumnKind::Number;
    if (is_text_type(type)) return training::ColumnKind::Text;
    ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                    errmsg("%s column \"%s\" has type %s, which train() cannot use", role,
                           NameStr(attribute->attname), format_type_be(type)),
                    errhint("Columns must be smallint, integer, bigint, real, double precision, numeric, "
                            "boolean or text; cast the column in the query, or leave it out.")));
}

// blank_padded: a char(n) value, whose trailing blanks are dropped as scoring drops them.
training::Cell cell_of(training::ColumnKind kind, FeatureConverter convert, bool blank_padded, Datum value,
                       bool isnull) {
    training::Cell cell = {NAN, NULL, 0};
    if (isnull) return cell;
    if (kind == training::ColumnKind::Text) {
        text* string = DatumGetTextPP(value);
        cell.text = VARDATA_ANY(string);
        cell.length = VARSIZE_ANY_EXHDR(string);
        if (blank_padded) cell.length = (size_t)bpchartruelen(VARDATA_ANY(string), (int)cell.length);
    } else {
        cell.number = convert(value);
    }
    return cell;
}

// Writes the trained model to the catalog: a new model, or a new version of the caller's model
// of that name, deployed as `deploy` says (best: when its test metrics beat the deployed
// version's key metric, evaluation::metrics_better), with its metrics.
// The task of a catalog entry, as the catalog's task column names it.
const char* task_of(const CatalogEntry* entry) {
    return entry->transformer ? "transformer" : entry->classification ? "classification" : "regression";
}

// A new version of a name keeps its task: a numeric target trains a regression unless told
// otherwise, and a silent switch would change what predict() means for every caller and make
// deploy => 'best' compare unlike metrics.
void require_same_task(const char* name, const CatalogEntry* existing, const std::string& task) {
    if (existing == NULL || task == task_of(existing)) return;
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                    errmsg("train() makes a %s, but model \"%s\" is a %s", task.c_str(), name, task_of(existing)),
                    errdetail("A new version of a model keeps its task; predict() of every caller would change "
                              "meaning, and deploy => 'best' would compare unlike metrics."),
                    errhint(strcmp(task_of(existing), "classification") == 0
                                ? "A numeric target trains a regression: for classes pass algorithm => 'logistic', or "
                                  "hyperparams => '{\"objective\": \"binary:logistic\"}' (multi:softprob for more "
                                  "classes), or cast the target to text or boolean. Or train under another name."
                                : "Train under another name, or drop_model('%s') first.",
                            name)));
}

// A new version keeps the type of its name's labels (numbers, boolean or text): a boolean target
// over a name whose labels are {0, 1} made predict() fail for every caller ("predicts text
// labels"). Known from the target column's type, before any row is read.
void require_same_labels(const char* name, const CatalogEntry* existing, const std::string& task,
                         training::ColumnKind target) {
    if (existing == NULL || task != "classification") return;
    const char* before = label_type_of(existing);
    const char* now = target == training::ColumnKind::Number    ? "numeric"
                      : target == training::ColumnKind::Boolean ? "boolean"
                                                                : "text";
    if (before == NULL || strcmp(before, now) == 0) return;
    ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                    errmsg("train() gives model \"%s\" %s labels, but its version %d has %s labels %s", name, now,
                           existing->version, before, labels_text(existing)),
                    errdetail("A new version of a model keeps the type of its labels: predict() of every caller "
                              "would change meaning or fail."),
                    errhint("%s", strcmp(before, "numeric") == 0
                                      ? "Cast the target to a number in the query, e.g. churned::int, or train under "
                                        "another name."
                                      : "Cast the target in the query to the labels' type, or train under another "
                                        "name.")));
}

// The query's columns train() leaves out: each must be one of the query's, and not the target.
bool* excluded_columns(ArrayType* exclude, TupleDesc tupdesc, const char* target) {
    bool* excluded = (bool*)palloc0(sizeof(bool) * Max(tupdesc->natts, 1));
    Datum* elements;
    bool* nulls;
    int count;
    deconstruct_array(exclude, TEXTOID, -1, false, TYPALIGN_INT, &elements, &nulls, &count);
    for (int i = 0; i < count; i++) {
        if (nulls[i]) ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("exclude must not contain NULL")));
        const char* name = TextDatumGetCString(elements[i]);
        if (strcmp(name, target) == 0)
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("exclude names the target column \"%s\"", target)));
        int found = -1;
        for (int a = 0; a < tupdesc->natts; a++)
            if (strcmp(NameStr(TupleDescAttr(tupdesc, a)->attname), name) == 0) found = a;
        if (found < 0)
            ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                            errmsg("excluded column \"%s\" is not in the query's result", name),
                            errhint("exclude names columns the query returns, as they are named there.")));
        excluded[found] = true;
    }
    return excluded;
}

StoredVersion store_trained_model(const char* name, const pg_predict::runtime::BuiltModel* built, Datum source,
                                  const char* metrics_json, DeployChoice deploy) {
    Datum options = DirectFunctionCall1(jsonb_in, CStringGetDatum("{}"));
    return catalog_store(name, built, source, ArtifactKind::Json, options, true, metrics_json, deploy,
                         pg_predict::evaluation::metrics_better);
}

}  // namespace

}  // namespace pg_predict::pg

using namespace pg_predict::pg;

extern "C" {

PG_PREDICT_SQL_FUNCTION(pg_predict_train);

Datum pg_predict_train(PG_FUNCTION_ARGS) {
    prevent_catalog_change("train()");  // before the query runs
    char* name = required_text_arg(fcinfo, 0, "model name");
    check_model_name(name);
    char* query = required_text_arg(fcinfo, 1, "query");
    char* target = required_text_arg(fcinfo, 2, "target");
    char* algorithm = required_text_arg(fcinfo, 3, "algorithm");
    if (PG_ARGISNULL(4))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("hyperparams must not be NULL")));
    Jsonb* hyperparams = PG_GETARG_JSONB_P(4);
    char* hyperparams_json = JsonbToCString(NULL, &hyperparams->root, VARSIZE(hyperparams));
    if (PG_ARGISNULL(5) || PG_ARGISNULL(6))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("test_size and seed must not be NULL")));
    double test_size = PG_GETARG_FLOAT8(5);
    int64 seed = PG_GETARG_INT64(6);
    // XGBoost's default nthread: the backend's scoring threads (hyperparams' nthread overrides).
    int threads = atoi(GetConfigOption("pg_predict.threads", false, false));
    DeployChoice deploy = deploy_choice(required_text_arg(fcinfo, 7, "deploy"));
    if (PG_ARGISNULL(8))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("exclude must not be NULL"),
                        errhint("Pass '{}' to use every column but the target.")));
    ArrayType* exclude = PG_GETARG_ARRAYTYPE_P(8);

    // Only the owner trains over an existing model: checked before any work, and again by the
    // catalog write under a row lock.
    CatalogEntry* existing = catalog_lookup(name, true);
    if (existing != NULL) check_model_owner(name, existing->owner);

    trim_heap_at_transaction_end();  // the rows' and the model's memory, also when it fails
    MemoryContext call_context = CurrentMemoryContext;
    training::Dataset** dataset = (training::Dataset**)palloc0(sizeof(training::Dataset*));
    on_reset(free_dataset_callback, dataset);

    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "pg_predict: SPI_connect failed");
    SPIPlanPtr plan = SPI_prepare(query, 0, NULL);
    if (plan == NULL)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("train() could not prepare its query: %s", SPI_result_code_string(SPI_result))));
    if (!SPI_is_cursor_plan(plan))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("train()'s query must be one statement that returns rows (a SELECT)")));
    // A data-modifying statement that returns rows (DELETE ... RETURNING) is a cursor plan too:
    // name it before the read-only cursor would fail with "not allowed in a non-volatile function".
    ListCell* plan_source;
    foreach (plan_source, SPI_plan_get_plan_sources(plan)) {
        CommandTag tag = ((CachedPlanSource*)lfirst(plan_source))->commandTag;
        if (tag != CMDTAG_SELECT)
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("train()'s query must be a SELECT, not %s", GetCommandTagName(tag)),
                            errdetail("train() reads its training rows and changes no data."),
                            errhint("Run the %s first, then train() on a SELECT of the rows.", GetCommandTagName(tag))));
    }
    Portal portal = SPI_cursor_open(NULL, plan, NULL, NULL, true);
    TupleDesc tupdesc = portal->tupDesc;

    // The target and the feature columns (every other column), by name.
    int natts = tupdesc->natts;
    int target_attr = -1;
    for (int a = 0; a < natts; a++) {
        Form_pg_attribute attribute = TupleDescAttr(tupdesc, a);
        for (int b = 0; b < a; b++)
            if (strcmp(NameStr(attribute->attname), NameStr(TupleDescAttr(tupdesc, b)->attname)) == 0)
                ereport(ERROR, (errcode(ERRCODE_DUPLICATE_COLUMN),
                                errmsg("train()'s query returns two columns named \"%s\"", NameStr(attribute->attname)),
                                errhint("Features are read by name: give each column its own name (AS ...).")));
        if (strcmp(NameStr(attribute->attname), target) == 0) target_attr = a;
    }
    if (target_attr < 0)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                        errmsg("target column \"%s\" is not in the query's result", target),
                        errhint("The query must return the target beside the feature columns.")));
    training::ColumnKind target_kind = column_kind(TupleDescAttr(tupdesc, target_attr), "target");
    bool* excluded = excluded_columns(exclude, tupdesc, target);
    int num_features = 0;
    for (int a = 0; a < natts; a++) num_features += a != target_attr && !excluded[a];
    training::ColumnKind* kinds = (training::ColumnKind*)palloc(sizeof(training::ColumnKind) * Max(num_features, 1));
    FeatureConverter* converters = (FeatureConverter*)palloc(sizeof(FeatureConverter) * Max(natts, 1));
    bool* padded = (bool*)palloc(sizeof(bool) * Max(natts, 1));
    int* attrs = (int*)palloc(sizeof(int) * Max(num_features, 1));
    for (int a = 0, f = 0; a < natts; a++) {
        converters[a] = converter_for_type(TupleDescAttr(tupdesc, a)->atttypid);
        padded[a] = is_blank_padded(TupleDescAttr(tupdesc, a)->atttypid);
        if (a == target_attr || excluded[a]) continue;
        kinds[f] = column_kind(TupleDescAttr(tupdesc, a), "feature");
        attrs[f++] = a;
    }
    {
        // The request, names and kinds become C++ objects inside the guard only (no destructor
        // may be skipped by an ereport in this frame).
        *dataset = guarded([&] {
            training::Request request{algorithm, hyperparams_json, target, target_kind, test_size, seed, Max(threads, 1)};
            std::vector<training::Column> columns;
            for (int f = 0; f < num_features; f++)
                columns.push_back({NameStr(TupleDescAttr(tupdesc, attrs[f])->attname), kinds[f]});
            return training::new_dataset(request, std::move(columns));
        });
    }
    // The task is known from the request: refuse a switch before any row is read or fitted.
    require_same_task(name, existing, training::task_name(*dataset));
    require_same_labels(name, existing, training::task_name(*dataset), target_kind);

    // The rows, a batch at a time; a batch's detoasted values go with its memory context.
    MemoryContext batch_context = AllocSetContextCreate(CurrentMemoryContext, "pg_predict train batch",
                                                        ALLOCSET_DEFAULT_SIZES);
    Datum* values = (Datum*)palloc(sizeof(Datum) * Max(natts, 1));
    bool* nulls = (bool*)palloc(sizeof(bool) * Max(natts, 1));
    training::Cell* cells = (training::Cell*)palloc(sizeof(training::Cell) * Max(num_features, 1));
    int64 row = 0;
    for (;;) {
        CHECK_FOR_INTERRUPTS();
        SPI_cursor_fetch(portal, true, kFetchRows);
        uint64 fetched = SPI_processed;
        if (fetched == 0) break;
        MemoryContext spi = MemoryContextSwitchTo(batch_context);
        for (uint64 i = 0; i < fetched; i++, row++) {
            heap_deform_tuple(SPI_tuptable->vals[i], tupdesc, values, nulls);
            if (nulls[target_attr])
                ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                                errmsg("target column \"%s\" is NULL in row %lld of the query", target, (long long)row + 1),
                                errhint("Leave such rows out: WHERE %s IS NOT NULL.", quote_identifier(target))));
            for (int f = 0; f < num_features; f++)
                cells[f] = cell_of(kinds[f], converters[attrs[f]], padded[attrs[f]], values[attrs[f]], nulls[attrs[f]]);
            training::Cell target_cell =
                cell_of(target_kind, converters[target_attr], padded[target_attr], values[target_attr], false);
            training::Dataset* d = *dataset;
            guarded([&] { training::add_row(d, cells, target_cell); });
        }
        MemoryContextSwitchTo(spi);
        MemoryContextReset(batch_context);
        SPI_freetuptable(SPI_tuptable);
    }
    SPI_cursor_close(portal);
    SPI_finish();
    MemoryContextSwitchTo(call_context);

    // Fit, then free the rows before the model is compiled.
    training::Dataset* d = *dataset;
    training::Trained* trained = guarded([&] { return new training::Trained(training::train(d)); });
    on_reset(free_trained_callback, trained);
    free_dataset_callback(dataset);

    pg_predict::Artifact artifact{pg_predict::ArtifactKind::Json, {}};
    artifact.bytes = trained->document_json;
    pg_predict::runtime::BuiltModel* built = guarded([&] { return pg_predict::runtime::build_model(artifact, "sklearn", "{}"); });
    on_reset(free_built_model_callback, built);
    require_same_task(name, existing, built->task);  // what was built, to be sure
    Datum source = DirectFunctionCall1(jsonb_in, CStringGetDatum(trained->document_json.c_str()));
    const char* metrics = trained->metrics_json == "{}" ? NULL : trained->metrics_json.c_str();
    StoredVersion stored = store_trained_model(name, built, source, metrics, deploy);
    // This backend's programs of the version no longer deployed are garbage now.
    if (existing != NULL && stored.deployed) guarded([&] { pg_predict::runtime::forget_model(name); });
    if (stored.deployed) notice_cascade_not_carried(name, existing, stored.version);
    // The rows it learned from, profiled for model_drift (the query runs once more). Not on a
    // Citus cluster: the profile scores the rows with the new version, which Citus's workers,
    // reading the catalog in their own transactions, cannot see before this one commits.
    if (catalog_has_profiles() && !catalog_is_citus_reference_table())
        profile_trained_version(name, stored.version, query, fcinfo->flinfo->fn_oid);
    else if (catalog_has_profiles())
        ereport(NOTICE, (errmsg("train() did not profile its rows: the catalog is a Citus reference table"),
                         errhint("Once this transaction commits, profile_model('%s', <the query>, %d) takes the profile.",
                                 name, stored.version)));
    StringInfoData summary;
    initStringInfo(&summary);
    appendStringInfoString(&summary, "{\"name\": ");
    escape_json(&summary, name);
    appendStringInfo(&summary, ", \"version\": %d, \"deployed\": %s, %s", stored.version,
                     stored.deployed ? "true" : "false", trained->summary_json.c_str() + 1);
    PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(summary.data)));
}

}  // extern "C"
