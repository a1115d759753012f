// The SQL functions: create_model, drop_model, and the per-row predict / predict_proba /
// predict_label path (the batching executor node takes over where the planner can use it).
#include "sql/arguments.hpp"
#include "sql/labels.hpp"
#include "device.hpp"
#include "features.hpp"
#include "guard.hpp"
#include "heap_trim.hpp"
#include "exec/cascade.hpp"
#include "binding/model.hpp"
#include "plan/invalidation.hpp"
#include "catalog/jsonb_text.hpp"
#include "catalog/privileges.hpp"
#include "exec/scoring_marks.hpp"
#include "pg_predict/runtime/api.hpp"
#include "settings.hpp"
#include "catalog/usage_stats.hpp"

extern "C" {
#include "common/hashfn.h"
#include "mb/pg_wchar.h"
}

namespace pg_predict::pg {

namespace {

void free_built_model_callback(void* arg) {
    try {
        runtime::free_built_model(static_cast<runtime::BuiltModel*>(arg));
    } catch (...) {
    }
}

// A boolean of create_model's options (replace, deploy), read here because the catalog write is
// ours; `fallback` when absent.
bool bool_option(Jsonb* options, const char* key, bool fallback) {
    if (!JB_ROOT_IS_OBJECT(options))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("create_model options must be a JSON object")));
    JsonbValue* value = getKeyJsonValueFromContainer(&options->root, key, strlen(key), NULL);
    if (value == NULL || value->type == jbvNull) return fallback;
    if (value->type != jbvBool)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("create_model option \"%s\" must be true or false", key)));
    return value->val.boolean;
}

// What one predict() call site keeps for the whole query: one entry per model name it has
// seen (usually one; one per tenant for predict('store_' || id, t)), each with the model version
// bound on first use and a row reader.
struct CallSiteModel {
    CallSiteModel* next;
    char* name;
    size_t name_length;  // compared before the bytes: no strlen per row
    uint32 hash;         // of the name's bytes
    BoundModel* model;
    RowReader* reader;  // for the last row type seen
    float* x32;         // num_features, for a program that reads float32
    double* x64;        // num_features, for one that reads float64 (runtime::program_reads_float64)
    float* out;         // output_width
    bool gpu;           // score on the GPU (pg_predict.device, decided when bound)
    PredictCallKind kind;   // the call site's function (its program: model_output(kind))
    MemoryContext context;  // holds what is bound to the current version (model, reader, buffers)
    uint64 generation;      // catalog_generation() when bound
    PendingUsage* usage;    // the usage statistics' record of the bound version (check its model_id)
    // The version's cascade (pg_predict.cascades), looked up at the first call with the setting
    // on: as the node scores a label, so does this path.
    CascadeModel* cascade;
    bool cascade_checked;
};

// Binds the version the statement sees, releasing the one bound before (its context's reset
// releases the program). Call sites can outlive a statement (PL/pgSQL keeps simple expressions
// for the transaction), so a call site rebinds when the catalog has changed since.
void bind_call_site_model(CallSiteModel* m) {
    // Read before binding, so an invalidation during it rebinds next time; recorded only once
    // bound, so a failed bind (the model dropped, an error caught by PL/pgSQL) binds again
    // instead of leaving the call site on the memory just reset.
    uint64 generation = catalog_generation();
    m->generation = 0;  // no generation: not bound
    m->model = NULL;
    MemoryContextReset(m->context);
    m->reader = NULL;
    m->x32 = NULL;
    m->x64 = NULL;
    m->cascade = NULL;
    m->cascade_checked = false;
    MemoryContext old = MemoryContextSwitchTo(m->context);
    m->model = bind_model_entry(m->name, m->context, model_output(m->kind));
    check_call(m->model->entry, m->kind);  // also for a new version: a replace may change its kind
    load_bound_program(m->model);
    size_t features = Max(m->model->entry->num_features, 1);
    runtime::Program* program = m->model->program;
    if (guarded([&] { return runtime::program_reads_float64(program); }))
        m->x64 = (double*)palloc0(sizeof(double) * features);
    else
        m->x32 = (float*)palloc0(sizeof(float) * features);
    m->out = (float*)palloc0(sizeof(float) * Max(m->model->output_width, 1));
    MemoryContextSwitchTo(old);
    m->generation = generation;
}

ArrayType* float8_array(const float* values, int count) {
    Datum* elements = (Datum*)palloc(sizeof(Datum) * Max(count, 1));
    for (int k = 0; k < count; k++) elements[k] = Float8GetDatum((double)values[k]);
    return construct_array(elements, count, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
}

enum class ArgumentKind { Unknown, Row, Array };

// A call site's models by name: a hash table (open addressing, power-of-two size, at most half
// full), so that a name computed per row (one model per tenant) finds its model in O(1). Each
// keeps its program bound for the query. (Unbinding the least recently used beyond 64 was
// tried: 200 tenants interleaved then rebound on almost every row, 1 ms each.)

struct CallSite {
    CallSiteModel* models;  // all of them, newest first
    CallSiteModel** table;
    uint32 table_size;
    uint32 count;
    CallSiteModel* last;    // the previous row's model: runs of one name skip the hash
    ArgumentKind kind;
};

void insert_into_table(CallSite* site, CallSiteModel* m) {
    uint32 i = m->hash & (site->table_size - 1);
    while (site->table[i] != NULL) i = (i + 1) & (site->table_size - 1);
    site->table[i] = m;
}

void add_to_site(CallSite* site, CallSiteModel* m, MemoryContext context) {
    if (2 * (site->count + 1) > site->table_size) {
        site->table_size = site->table_size == 0 ? 16 : 2 * site->table_size;
        if (site->table != NULL) pfree(site->table);
        site->table = (CallSiteModel**)MemoryContextAllocZero(context, sizeof(CallSiteModel*) * site->table_size);
        for (CallSiteModel* other = site->models; other != NULL; other = other->next) insert_into_table(site, other);
    }
    insert_into_table(site, m);
    m->next = site->models;
    site->models = m;
    site->count++;
}

CallSiteModel* find_in_site(const CallSite* site, const char* name, size_t length, uint32 hash) {
    if (site->table_size == 0) return NULL;
    for (uint32 i = hash & (site->table_size - 1); site->table[i] != NULL; i = (i + 1) & (site->table_size - 1)) {
        CallSiteModel* m = site->table[i];
        if (m->hash == hash && m->name_length == length && memcmp(m->name, name, length) == 0) return m;
    }
    return NULL;
}

// The model named by argument 0 (not NULL) at this call site, bound on first use. Compares the
// name's bytes with what is cached, so the per-row path allocates nothing to find it.
CallSiteModel* call_site_model(FunctionCallInfo fcinfo, PredictCallKind kind) {
    text* name_text = PG_GETARG_TEXT_PP(0);
    const char* name_bytes = VARDATA_ANY(name_text);
    size_t name_length = VARSIZE_ANY_EXHDR(name_text);

    FmgrInfo* flinfo = fcinfo->flinfo;
    CallSite* site = (CallSite*)flinfo->fn_extra;
    if (site == NULL) {
        site = (CallSite*)MemoryContextAllocZero(flinfo->fn_mcxt, sizeof(CallSite));
        flinfo->fn_extra = site;
    }
    CallSiteModel* m = site->last;
    if (m == NULL || m->name_length != name_length || memcmp(m->name, name_bytes, name_length) != 0) {
        const uint32 hash = hash_bytes((const unsigned char*)name_bytes, (int)name_length);
        m = find_in_site(site, name_bytes, name_length, hash);
        if (m == NULL) {
            MemoryContext old = MemoryContextSwitchTo(flinfo->fn_mcxt);
            m = (CallSiteModel*)palloc0(sizeof(CallSiteModel));
            m->name = pnstrdup(name_bytes, name_length);
            m->name_length = name_length;
            m->hash = hash;
            m->kind = kind;
            m->context = AllocSetContextCreate(flinfo->fn_mcxt, "pg_predict call site model", ALLOCSET_SMALL_SIZES);
            MemoryContextSwitchTo(old);
            // Bound before it is added: a name that does not exist errors here and leaves
            // nothing behind.
            bind_call_site_model(m);
            old = MemoryContextSwitchTo(flinfo->fn_mcxt);
            // One row is a batch of one: auto keeps it on the CPU unless gpu_min_rows is 1.
            m->gpu = device_setting != DEVICE_CPU && (device_setting == DEVICE_CUDA || gpu_min_rows <= 1) &&
                     gpu_wanted() && claim_gpu_slot();
            add_to_site(site, m, flinfo->fn_mcxt);
            MemoryContextSwitchTo(old);
        }
    }
    if (m->generation != catalog_generation()) bind_call_site_model(m);
    site->last = m;
    return m;
}

ArgumentKind argument_kind(FunctionCallInfo fcinfo) {
    CallSite* site = (CallSite*)fcinfo->flinfo->fn_extra;
    if (site->kind != ArgumentKind::Unknown) return site->kind;
    Oid type = get_fn_expr_argtype(fcinfo->flinfo, 1);
    if (type == InvalidOid) elog(ERROR, "pg_predict: could not determine the argument type");
    if (type_is_rowtype(type))
        site->kind = ArgumentKind::Row;
    else if (OidIsValid(get_element_type(getBaseType(type))))
        site->kind = ArgumentKind::Array;
    else
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                        errmsg("%s needs a row or an array of features, not %s",
                               call_name(predict_call_kind(fcinfo->flinfo->fn_oid)), format_type_be(type)),
                        errhint("Pass the table's row, as in predict('model', t) FROM t, or an "
                                "array such as ARRAY[1.0, 2.0]::real[].")));
    return site->kind;
}

// Reads argument 1 of the call into the call site's features, then (read: the time now) runs the program.
void read_and_run(FunctionCallInfo fcinfo, CallSiteModel* m, instr_time* read) {
    if (cascades_enabled && !m->cascade_checked) {
        m->cascade = cascade_load(m->model, &m->kind, 1, m->context);
        m->cascade_checked = true;
    }
    CascadeModel* cascade = cascades_enabled ? m->cascade : NULL;
    // A cascade's text inputs are projected from the same terms as the row is read.
    const bool text = cascade != NULL && cascade_reads_text(cascade);
    if (text) {
        cascade_read_rows(cascade, m->model, 1);
        cascade_reading_row(cascade, m->model, 0);
    }
    if (argument_kind(fcinfo) == ArgumentKind::Row) {
        HeapTupleHeader row = PG_GETARG_HEAPTUPLEHEADER(1);
        Oid type_id = HeapTupleHeaderGetTypeId(row);
        int32 typmod = HeapTupleHeaderGetTypMod(row);
        if (m->reader == NULL || m->reader->type_id != type_id || m->reader->typmod != typmod)
            m->reader = make_row_reader(m->model, type_id, typmod, m->context);
        if (m->x64 != NULL)
            read_row(m->model, m->reader, row, m->x64);
        else
            read_row(m->model, m->reader, row, m->x32);
    } else if (m->x64 != NULL) {
        read_array(m->model, PG_GETARG_ARRAYTYPE_P(1), m->x64);
    } else {
        read_array(m->model, PG_GETARG_ARRAYTYPE_P(1), m->x32);
    }
    if (text) cascade_read_done(cascade);
    runtime::Program* program = program_for(m->model, m->gpu);
    int64 cols = m->model->entry->num_features;
    float* out = m->out;
    if (read != NULL) INSTR_TIME_SET_CURRENT(*read);
    if (cascade != NULL) {
        if (m->x64 != NULL)
            cascade_run(cascade, m->model, program, m->x64, 1, out);
        else
            cascade_run(cascade, m->model, program, m->x32, 1, out);
        return;
    }
    guarded([&] {
        if (m->x64 != NULL)
            runtime::run_program(program, m->x64, 1, cols, out);
        else
            runtime::run_rows(program, m->x32, 1, cols, out);  // no torch: see runtime/row_shortcut.cpp
    });
}

// Scores argument 1 of the call with the model named by argument 0; false if either is NULL.
// Counted in the backend's usage record of the version (usage_stats.hpp: no shared memory per
// row); an error while the row is read or the program runs counts against the version through
// its mark (scoring_marks.hpp: no PG_TRY per row).
bool score_one(FunctionCallInfo fcinfo, PredictCallKind kind, CallSiteModel** scored) {
    // A NULL name (a tenant column that is NULL) scores nothing: the result is NULL, as for a
    // NULL row.
    if (PG_ARGISNULL(0)) return false;
    CallSiteModel* m = call_site_model(fcinfo, kind);
    *scored = m;
    if (PG_ARGISNULL(1)) return false;
    const CatalogEntry* entry = m->model->entry;
    if (m->usage == NULL || m->usage->model_id != entry->id) m->usage = pending_usage(entry);
    const bool timed = time_next_call(m->usage);
    instr_time start, read, done;
    if (timed) INSTR_TIME_SET_CURRENT(start);
    mark_scoring(m->usage);
    read_and_run(fcinfo, m, timed ? &read : NULL);  // one call site: inlined here
    unmark_scoring();
    if (!timed) {
        count_row_call(m->usage);
        return true;
    }
    INSTR_TIME_SET_CURRENT(done);
    count_timed_row_call(m->usage, start, read, done);
    return true;
}

// create_model(name, model jsonb | text | bytea, format, options): the artifact's bytes go to
// the importers as given (jsonb as its JSON text), and the catalog keeps the value as given.
Datum create_model(FunctionCallInfo fcinfo, pg_predict::ArtifactKind kind) {
    prevent_catalog_change("create_model()");  // before any import or compile work
    char* name = required_text_arg(fcinfo, 0, "model name");
    check_model_name(name);
    if (PG_ARGISNULL(1))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("model must not be NULL")));
    Datum source = PG_GETARG_DATUM(1);
    const char* format = PG_ARGISNULL(2) ? "auto" : text_to_cstring(PG_GETARG_TEXT_PP(2));
    Datum options_datum = PG_ARGISNULL(3) ? DirectFunctionCall1(jsonb_in, CStringGetDatum("{}"))
                                          : PG_GETARG_DATUM(3);
    Jsonb* options = DatumGetJsonbP(options_datum);
    bool replace = bool_option(options, "replace", false);
    // An existing name gets a new version (0.6.0), deployed unless options say "deploy": false.
    bool versions = catalog_has_versions();
    bool deploy = bool_option(options, "deploy", true);
    if (!versions && !deploy)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("create_model option \"deploy\" needs pg_predict's 0.6.0 catalog (versions)"),
                        errhint("Run ALTER EXTENSION pg_predict UPDATE.")));

    // Fail fast, before the expensive compile, on a name that exists (before versions) or a model
    // we may not add to; catalog_store checks again under a row lock.
    CatalogEntry* existing = catalog_lookup(name, true);
    if (existing != NULL) {
        if (!replace && !versions)
            ereport(ERROR, (errcode(ERRCODE_DUPLICATE_OBJECT),
                            errmsg("model \"%s\" already exists", name),
                            errhint("Pass options => '{\"replace\": true}' to replace it, or drop_model() it first.")));
        check_model_owner(name, existing->owner);
    }

    trim_heap_at_transaction_end();  // the import's memory, also when it fails
    char* json_text = NULL;
    pg_predict::Artifact in{kind, {}};
    if (kind == pg_predict::ArtifactKind::Json) {
        Jsonb* model = DatumGetJsonbP(source);
        json_text = jsonb_to_text(model);  // JsonbToCString's text, with interrupt checks
        in.bytes = json_text;
    } else {
        // text and bytea alike: the bytes as given (detoasted, not copied again)
        struct varlena* value = PG_DETOAST_DATUM_PACKED(source);
        source = PointerGetDatum(value);
        in.bytes = std::string_view(VARDATA_ANY(value), VARSIZE_ANY_EXHDR(value));
    }
    // The importers read JSON and text as UTF-8: a database in another encoding converts them
    // (SQL_ASCII has nothing to convert from).
    const int encoding = GetDatabaseEncoding();
    const bool convert = encoding != PG_UTF8 && encoding != PG_SQL_ASCII;
    if (convert && kind != pg_predict::ArtifactKind::Binary) {
        const char* utf8 = pg_server_to_any(in.bytes.data(), (int)in.bytes.size(), PG_UTF8);
        if (utf8 != in.bytes.data()) in.bytes = std::string_view(utf8, strlen(utf8));
    }
    // Importing TorchScript runs the module's code: only privileged roles, checked before.
    if (guarded([&] { return pg_predict::runtime::imports_torchscript(in, format); })) check_torchscript_import();

    char* options_text = JsonbToCString(NULL, &options->root, VARSIZE(options));
    if (convert) options_text = pg_server_to_any(options_text, (int)strlen(options_text), PG_UTF8);
    MemoryContextCallback* callback = (MemoryContextCallback*)palloc0(sizeof(MemoryContextCallback));
    pg_predict::runtime::BuiltModel* built =
        guarded([&] { return pg_predict::runtime::build_model(in, format, options_text); });
    callback->func = free_built_model_callback;
    callback->arg = built;
    MemoryContextRegisterResetCallback(CurrentMemoryContext, callback);
    if (json_text != NULL) pfree(json_text);

    // A model that names no columns (an ONNX graph of one [N, F] input) reads arrays only: say so
    // now, not at the first predict(name, row).
    bool unnamed = !built->columns.empty();
    for (const std::string& c : built->columns) unnamed = unnamed && c.empty();
    if (unnamed)
        ereport(NOTICE, (errmsg("model \"%s\" has no feature names: predict(name, row) cannot read a row's columns", name),
                         errhint("Score arrays in the model's input order, or register it again as a new version "
                                 "with options => '{\"features\": [\"column\", ...]}'.")));
    StoredVersion stored = catalog_store(name, built, source, kind, options_datum, replace, NULL,
                                         deploy ? DeployChoice::always : DeployChoice::never);
    warn_on_changed_meaning(name, existing, built, stored.version);  // create_model may; it says so
    // This backend's programs of the version deployed before are garbage now (other backends
    // free theirs when they next look the model up: runtime::note_model_version).
    if (existing != NULL && stored.deployed) guarded([&] { pg_predict::runtime::forget_model(name); });
    if (stored.deployed) notice_cascade_not_carried(name, existing, stored.version);
    PG_RETURN_INT32(stored.version);  // 0.8.0 returns it; void before
}

}  // namespace

}  // namespace pg_predict::pg

using namespace pg_predict::pg;

extern "C" {

PG_PREDICT_SQL_FUNCTION(pg_predict_create_model);
PG_PREDICT_SQL_FUNCTION(pg_predict_create_model_text);
PG_PREDICT_SQL_FUNCTION(pg_predict_create_model_bytea);
PG_PREDICT_SQL_FUNCTION(pg_predict_drop_model);
PG_PREDICT_SQL_FUNCTION(pg_predict_drop_model_version);
PG_PREDICT_SQL_FUNCTION(pg_predict_deploy_model);
PG_PREDICT_SQL_FUNCTION(pg_predict_rollback_model);
PG_PREDICT_SQL_FUNCTION(pg_predict_predict);
PG_PREDICT_SQL_FUNCTION(pg_predict_predict_proba);
PG_PREDICT_SQL_FUNCTION(pg_predict_predict_label);
PG_PREDICT_SQL_FUNCTION(pg_predict_transform);
PG_PREDICT_SQL_FUNCTION(pg_predict_decision_function);
PG_PREDICT_SQL_FUNCTION(pg_predict_score_samples);
PG_PREDICT_SQL_FUNCTION(pg_predict_predict_outputs);
PG_PREDICT_SQL_FUNCTION(pg_predict_predict_contributions);

Datum pg_predict_create_model(PG_FUNCTION_ARGS) { return create_model(fcinfo, pg_predict::ArtifactKind::Json); }

Datum pg_predict_create_model_text(PG_FUNCTION_ARGS) { return create_model(fcinfo, pg_predict::ArtifactKind::Text); }

Datum pg_predict_create_model_bytea(PG_FUNCTION_ARGS) {
    return create_model(fcinfo, pg_predict::ArtifactKind::Binary);
}

Datum pg_predict_drop_model(PG_FUNCTION_ARGS) {
    prevent_catalog_change("drop_model()");
    char* name = required_text_arg(fcinfo, 0, "model name");
    int removed = catalog_delete(name);
    guarded([&] { pg_predict::runtime::forget_model(name); });
    trim_heap_at_transaction_end();
    PG_RETURN_INT32(removed);  // 0.8.0 returns it; void before
}

// drop_model(name, version), deploy_model(name, version), rollback_model(name): the deployed
// version changes (or a staged one goes); this backend frees the programs it kept of the name.
Datum pg_predict_drop_model_version(PG_FUNCTION_ARGS) {
    prevent_catalog_change("drop_model()");
    char* name = required_text_arg(fcinfo, 0, "model name");
    int remaining = catalog_delete_version(name, required_version_arg(fcinfo, 1));
    guarded([&] { pg_predict::runtime::forget_model(name); });
    trim_heap_at_transaction_end();
    PG_RETURN_INT32(remaining);
}

Datum pg_predict_deploy_model(PG_FUNCTION_ARGS) {
    prevent_catalog_change("deploy_model()");
    char* name = required_text_arg(fcinfo, 0, "model name");
    int version = required_version_arg(fcinfo, 1);
    catalog_deploy(name, version);
    guarded([&] { pg_predict::runtime::forget_model(name); });
    PG_RETURN_INT32(version);
}

Datum pg_predict_rollback_model(PG_FUNCTION_ARGS) {
    prevent_catalog_change("rollback_model()");
    char* name = required_text_arg(fcinfo, 0, "model name");
    int version = catalog_rollback(name);
    guarded([&] { pg_predict::runtime::forget_model(name); });
    PG_RETURN_INT32(version);
}

Datum pg_predict_predict(PG_FUNCTION_ARGS) {
    CallSiteModel* m;
    if (!score_one(fcinfo, PredictCallKind::Predict, &m) || output_is_missing(m->out, m->model->output_width)) PG_RETURN_NULL();
    PG_RETURN_FLOAT8(prediction_from_output(m->model, m->out));
}

Datum pg_predict_predict_proba(PG_FUNCTION_ARGS) {
    CallSiteModel* m;
    if (!score_one(fcinfo, PredictCallKind::PredictProba, &m) || output_is_missing(m->out, m->model->output_width))
        PG_RETURN_NULL();
    PG_RETURN_ARRAYTYPE_P(float8_array(m->out, m->model->proba_width));
}

// transform(name, row): the pipeline's output columns. A NaN the featurizers pass on (a scaler
// over a NULL, as scikit-learn's scalers pass NaN) stays NaN in its element.
Datum pg_predict_transform(PG_FUNCTION_ARGS) {
    CallSiteModel* m;
    if (!score_one(fcinfo, PredictCallKind::Transform, &m)) PG_RETURN_NULL();
    PG_RETURN_ARRAYTYPE_P(float8_array(m->out, m->model->output_width));
}

// decision_function(name, row): one value per margin (one for a binary model), as scikit-learn's
// decision_function gives them for the row.
Datum pg_predict_decision_function(PG_FUNCTION_ARGS) {
    CallSiteModel* m;
    if (!score_one(fcinfo, PredictCallKind::DecisionFunction, &m) || output_is_missing(m->out, m->model->output_width))
        PG_RETURN_NULL();
    PG_RETURN_ARRAYTYPE_P(float8_array(m->out, m->model->output_width));
}

Datum pg_predict_score_samples(PG_FUNCTION_ARGS) {
    CallSiteModel* m;
    if (!score_one(fcinfo, PredictCallKind::ScoreSamples, &m) || output_is_missing(m->out, m->model->output_width))
        PG_RETURN_NULL();
    PG_RETURN_FLOAT8((double)m->out[0]);
}

// predict_outputs(name, row): every value predict gives for the row, as scikit-learn's predict
// gives a multi-output model's row (one value per output); NULL where one of them is missing.
Datum pg_predict_predict_outputs(PG_FUNCTION_ARGS) {
    CallSiteModel* m;
    if (!score_one(fcinfo, PredictCallKind::PredictOutputs, &m) || output_is_missing(m->out, m->model->output_width))
        PG_RETURN_NULL();
    PG_RETURN_DATUM(outputs_from_output(m->model, m->out));
}

// predict_contributions(name, row): each input's share of the raw score and the bias (see
// compiler/contributions.cpp); NULL where the model gives NaN (a NULL no imputer fills).
Datum pg_predict_predict_contributions(PG_FUNCTION_ARGS) {
    CallSiteModel* m;
    if (!score_one(fcinfo, PredictCallKind::Contributions, &m) || output_is_missing(m->out, m->model->output_width))
        PG_RETURN_NULL();
    PG_RETURN_DATUM(contributions_from_output(m->model, m->out));
}

Datum pg_predict_predict_label(PG_FUNCTION_ARGS) {
    CallSiteModel* m;
    if (!score_one(fcinfo, PredictCallKind::PredictLabel, &m) || output_is_missing(m->out, m->model->output_width))
        PG_RETURN_NULL();
    // A copy (a memcpy of the prepared text): the call site's model, and its datums, are
    // released when a replace makes it rebind, and a caller may still hold the previous result.
    PG_RETURN_TEXT_P(DatumGetTextPCopy(label_from_output(m->model, m->out)));
}

}  // extern "C"
