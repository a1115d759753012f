#include "binding/model.hpp"

#include "binding/shared_programs.hpp"

#include <cmath>

#include "guard.hpp"
#include "binding/loaded_programs.hpp"
#include "pg_predict/runtime/api.hpp"
#include "catalog/privileges.hpp"
#include "settings.hpp"

namespace pg_predict::pg {

namespace {

void release_text_encoder_callback(void* arg) {
    runtime::release_text_encoder(static_cast<runtime::TextEncoder*>(arg));
}

void release_program_callback(void* arg) {
    // Runs during memory context reset, possibly during abort: must not throw or error.
    try {
        runtime::release_program(static_cast<runtime::Program*>(arg));
    } catch (...) {
    }
}

}  // namespace

runtime::TextEncoder* acquire_text_encoder(int64 id, MemoryContext context) {
    // The version's encoder, kept from an earlier query when this backend has it.
    runtime::TextEncoder* encoder = runtime::find_text_encoder(id);
    MemoryContextCallback* release = (MemoryContextCallback*)palloc0(sizeof(MemoryContextCallback));
    if (encoder == NULL) {
        char* dictionaries = catalog_text_inputs(id);
        size_t length = strlen(dictionaries);
        encoder = guarded([&] {
            runtime::TextEncoder* made = runtime::make_text_encoder(dictionaries, length);
            try {
                runtime::keep_text_encoder(id, made);
            } catch (...) {
                runtime::free_text_encoder(made);
                throw;
            }
            return made;
        });
        pfree(dictionaries);
    }
    release->func = release_text_encoder_callback;
    release->arg = encoder;
    MemoryContextRegisterResetCallback(context, release);
    return encoder;
}

// predict_proba() and predict_label() of a regression model.
static void require_classifier(const CatalogEntry* entry, const char* function) {
    if (!entry->classification)
        ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                        errmsg("model \"%s\" is a regression model; %s needs a classifier", entry->name, function),
                        errhint("Use predict() for the predicted value.")));
}

void check_predict_proba(const CatalogEntry* entry) {
    require_classifier(entry, "predict_proba()");
    if (!entry->has_probabilities) {
        // "as in scikit-learn" only where scikit-learn has no predict_proba either.
        bool none_in_sklearn = false;
        for (const char* cls : {"LinearSVC", "Perceptron", "RidgeClassifier", "SGDClassifier", "KMeans",
                                "MiniBatchKMeans", "IsolationForest", "RidgeClassifierCV"})
            none_in_sklearn |= strcmp(entry->format, "sklearn") == 0 && strcmp(entry->objective, cls) == 0;
        // A VotingClassifier without probabilities votes hard (soft voting averages them).
        const bool hard_voting = strcmp(entry->format, "sklearn") == 0 && strcmp(entry->objective, "VotingClassifier") == 0;
        ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                        errmsg("model \"%s\" does not give class probabilities", entry->name),
                        hard_voting ? errdetail("Its estimator, VotingClassifier with voting='hard', has no "
                                                "predict_proba, as in scikit-learn.") :
                        none_in_sklearn
                            ? errdetail("Its estimator, %s, has only a decision function, as in scikit-learn.",
                                        entry->objective)
                            : errdetail("pg_predict computes no probabilities for its estimator (%s).",
                                        entry->objective),
                        errhint("Use predict() for the class label.")));
    }
}

void check_predict(const CatalogEntry* entry) {
    if (entry->classification && entry->classes == NULL)
        ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                        errmsg("model \"%s\" predicts text labels; predict() returns float8", entry->name),
                        errdetail("Its classes are %s%s%s%s.", entry->num_classes > 0 ? entry->class_labels[0] : "",
                                  entry->num_classes > 1 ? ", " : "", entry->num_classes > 1 ? entry->class_labels[1] : "",
                                  entry->num_classes > 2 ? ", ..." : ""),
                        errhint("Use predict_label() for the label, as text.")));
}

void check_predict_label(const CatalogEntry* entry) { require_classifier(entry, "predict_label()"); }

void check_outputs(const CatalogEntry* entry, PredictCallKind kind) {
    // Never a silent first column: a multi-output model's values come all together.
    // (predict_contributions explains every output: a row of contributions per output.)
    if (entry->num_outputs > 1 && kind != PredictCallKind::PredictOutputs && kind != PredictCallKind::None &&
        kind != PredictCallKind::Contributions)
        ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                        errmsg("model \"%s\" predicts %d outputs per row; %s returns one value", entry->name,
                               entry->num_outputs, call_name(kind)),
                        errdetail("Its estimator, %s, is a multi-output model.", entry->objective),
                        errhint("Use predict_outputs() for the %d values, as a float8[].", entry->num_outputs)));
}

void check_call(const CatalogEntry* entry, PredictCallKind kind) {
    if (kind == PredictCallKind::Transform) {
        if (!entry->transformer)
            ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                            errmsg("model \"%s\" is a %s model; transform() needs a pipeline that ends in a transformer",
                                   entry->name, entry->classification ? "classification" : "regression"),
                            errhint("Use predict() or predict_proba(); register the pipeline's featurizer steps "
                                    "alone to transform with them.")));
        return;
    }
    if (entry->transformer)
        ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                        errmsg("model \"%s\" is a transformer (its pipeline ends in %s); %s needs a model that predicts",
                               entry->name, entry->objective, call_name(kind)),
                        errhint("Use transform() for its output columns.")));
    check_outputs(entry, kind);
    // predict_outputs() of a single-output classifier: predict()'s label, so the same checks.
    if (kind == PredictCallKind::PredictOutputs && entry->classification) check_predict(entry);
    if (kind == PredictCallKind::PredictProba) check_predict_proba(entry);
    if (kind == PredictCallKind::Predict) check_predict(entry);
    if (kind == PredictCallKind::PredictLabel) check_predict_label(entry);
    if (kind == PredictCallKind::Contributions && strcmp(entry->format, "torchscript") == 0)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("predict_contributions is not available for model \"%s\": it is a TorchScript module",
                               entry->name),
                        errdetail("predict_contributions explains tree ensembles and linear models.")));
    if ((kind == PredictCallKind::DecisionFunction || kind == PredictCallKind::ScoreSamples) &&
        strcmp(entry->format, "sklearn") != 0)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("model \"%s\" has no %s: it is a %s model", entry->name, call_name(kind), entry->format),
                        errdetail("decision_function() and score_samples() are scikit-learn's, for the estimators "
                                  "that have them."),
                        errhint("Use predict() or predict_proba().")));
}

BoundModel* bind_model_entry(const char* name, MemoryContext context, ModelOutput output) {
    MemoryContext old = MemoryContextSwitchTo(context);
    BoundModel* model = (BoundModel*)palloc0(sizeof(BoundModel));
    model->output = output;
    model->entry = catalog_lookup(name, false);
    check_model_usage(model->entry);  // once per statement: binding happens once per call site or node
    model->context = context;
    if (model->entry->classification) {
        const CatalogEntry* entry = model->entry;
        model->label_texts = (Datum*)palloc(sizeof(Datum) * Max(entry->num_classes, 1));
        for (int k = 0; k < entry->num_classes; k++) model->label_texts[k] = CStringGetTextDatum(entry->class_labels[k]);
    }
    MemoryContextSwitchTo(old);
    return model;
}

BoundModel* bind_model(const char* name, MemoryContext context, ModelOutput output) {
    BoundModel* model = bind_model_entry(name, context, output);
    load_bound_program(model);
    return model;
}

void load_bound_program(BoundModel* model) {
    track_loaded_programs();  // before the runtime's cache first changes in this backend
    const char* name = model->entry->name;
    MemoryContext context = model->context;
    MemoryContext old = MemoryContextSwitchTo(context);
    int64 id = model->entry->id;
    // Allocated before the program is acquired, so nothing can fail between acquiring the
    // reference and registering its release.
    MemoryContextCallback* callback = (MemoryContextCallback*)palloc0(sizeof(MemoryContextCallback));

    // pg_predict.strategy, when set, recompiles the model's spec with that strategy (once per
    // backend); otherwise the program compiled at create_model runs.
    const char* strategy = strategy_setting;
    // A TorchScript model's program is the user's module: there is nothing to recompile.
    bool variant = strcmp(strategy, "auto") != 0 && strcmp(strategy, model->entry->strategy) != 0 &&
                   strcmp(model->entry->format, "torchscript") != 0;
    runtime::Program* program;
    bool share = false;
    if (model->output != ModelOutput::Stored) {
        // decision_function / score_samples: the spec compiled with that tail, once per backend.
        runtime::Output output = model->output == ModelOutput::DecisionFunction ? runtime::Output::DecisionFunction
                                 : model->output == ModelOutput::ScoreSamples   ? runtime::Output::ScoreSamples
                                                                                : runtime::Output::Contributions;
        // With pg_predict.strategy at auto, the strategy the model was compiled with.
        const char* with = strcmp(strategy, "auto") == 0 ? model->entry->strategy : strategy;
        program = guarded([&] { return runtime::acquire_cached_output(id, output, with); });
        if (program == nullptr) {
            model->loaded_from_catalog = true;  // compiled from its spec
            char* spec = catalog_spec(id);
            size_t length = strlen(spec);
            program = guarded([&] { return runtime::compile_output(id, output, with, spec, length); });
            pfree(spec);
        }
    } else if (model->pruned_bounds != NULL) {
        // Specialized for the query's WHERE clause (plan/predicate_specialization.hpp), with the strategy
        // the stored program has (or pg_predict.strategy's): once per backend per bounds.
        const char* with = strcmp(strategy, "auto") == 0 ? model->entry->strategy : strategy;
        const char* bounds = model->pruned_bounds;
        program = guarded([&] { return runtime::acquire_cached_specialized(id, with, bounds); });
        if (program == nullptr) {
            model->loaded_from_catalog = true;  // compiled from its spec
            char* spec = guarded([&] { return runtime::specialization_spec_loaded(id); }) ? NULL : catalog_spec(id);
            size_t length = spec != NULL ? strlen(spec) : 0;
            program = guarded([&] { return runtime::compile_specialized(id, with, bounds, spec, length); });
            if (spec != NULL) pfree(spec);
        }
    } else if (variant) {
        program = guarded([&] { return runtime::acquire_cached_variant(id, strategy); });
        if (program == nullptr) {
            model->loaded_from_catalog = true;  // compiled from its spec
            char* spec = catalog_spec(id);
            size_t length = strlen(spec);
            program = guarded([&] { return runtime::compile_variant(id, strategy, spec, length); });
            pfree(spec);
        }
    } else {
        program = guarded([&] { return runtime::acquire_cached_program(id); });
        // Another backend's image in shared memory: mapped, nothing deserialized.
        if (program == nullptr) {
            program = map_shared_program(id);
            model->loaded_from_catalog = true;  // counted as a load: it was not in this backend's cache
        }
        if (program == nullptr) {
            bytea* bytes = catalog_program(id);
            const char* data = VARDATA_ANY(bytes);
            size_t length = VARSIZE_ANY_EXHDR(bytes);
            program = guarded([&] { return runtime::load_program(id, data, length); });
            pfree(bytes);
            share = true;
        }
    }
    callback->func = release_program_callback;
    callback->arg = program;
    MemoryContextRegisterResetCallback(context, callback);
    if (share) share_program(id, program);  // for the other backends
    // Frees this backend's idle programs of the model's other versions.
    guarded([&] { runtime::note_model_version(name, id); });
    model->program = program;
    runtime::name_program_inputs(program, name, model->entry->columns, model->entry->num_features);
    model->output_width = guarded([&] { return runtime::program_output_width(program); });
    if (model->entry->has_text) model->text_encoder = acquire_text_encoder(id, context);
    // A classifier's program gives one column per class or, where predict is not the argmax
    // of the probabilities (scikit-learn's SGDClassifier(loss="modified_huber") with more than
    // two classes: clipping ties them), the probabilities followed by one decision value per class.
    model->proba_width = model->output_width;
    model->label_offset = 0;
    if (model->output != ModelOutput::Stored) {
        // decision values or scores: every column is the result
    } else if (model->entry->num_outputs > 1) {
        // a value per output; a multi-output classifier lists two labels for each
        if (model->output_width != model->entry->num_outputs ||
            (model->entry->classification && model->entry->num_classes != 2 * model->entry->num_outputs))
            ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                            errmsg("model \"%s\" gives %d outputs but lists %d outputs and %d classes", name,
                                   model->output_width, model->entry->num_outputs, model->entry->num_classes)));
    } else if (model->entry->classification && model->output_width == 2 * model->entry->num_classes) {
        model->proba_width = model->entry->num_classes;
        model->label_offset = model->entry->num_classes;
    } else if (model->entry->classification && model->output_width != model->entry->num_classes)
        ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                        errmsg("model \"%s\" gives %d outputs but lists %d classes", name,
                               model->output_width, model->entry->num_classes)));
    MemoryContextSwitchTo(old);
}

runtime::Program* program_for(BoundModel* model, bool gpu) {
    // TreeSHAP has no CUDA kernel: contributions run on the CPU whatever pg_predict.device says.
    if (!gpu || model->output == ModelOutput::Contributions) return model->program;
    if (model->gpu_program != NULL) return model->gpu_program;
    // Allocated first, so nothing can fail between acquiring and registering the release.
    MemoryContextCallback* callback =
        (MemoryContextCallback*)MemoryContextAllocZero(model->context, sizeof(MemoryContextCallback));
    runtime::Program* cpu = model->program;
    if (guarded([&] { return runtime::program_is_mapped(cpu); })) {
        // Mapped from shared memory: the GPU copy is made from the stored program's module.
        bytea* bytes = catalog_program(model->entry->id);
        const char* data = VARDATA_ANY(bytes);
        size_t length = VARSIZE_ANY_EXHDR(bytes);
        guarded([&] { runtime::attach_module(cpu, data, length); });
        pfree(bytes);
    }
    runtime::Program* on_gpu =
        guarded([&] { return runtime::acquire_on_device(cpu, runtime::Device::Cuda); });
    callback->func = release_program_callback;
    callback->arg = on_gpu;
    MemoryContextRegisterResetCallback(model->context, callback);
    model->gpu_program = on_gpu;
    return on_gpu;
}

bool output_is_missing(const float* output_row, int width) {
    for (int k = 0; k < width; k++)
        if (std::isnan(output_row[k])) return true;
    return false;
}

namespace {

// The column of the predicted class: the argmax (the first on ties, as numpy's).
int predicted_class(const BoundModel* model, const float* output_row) {
    const float* scores = output_row + model->label_offset;
    int best = 0;
    for (int k = 1; k < model->output_width - model->label_offset; k++)
        if (scores[k] > scores[best]) best = k;
    return best;
}

}  // namespace

Datum outputs_from_output(const BoundModel* model, const float* output_row) {
    // A single-output classifier gives its label; a regressor every column; a multi-output
    // classifier's program one decision value per output k: its label classes[2k + 1] where
    // the value is > 0, else classes[2k] (the catalog lists two labels per output).
    const CatalogEntry* entry = model->entry;
    const bool single_label = entry->classification && entry->num_outputs == 1;
    const int width = single_label ? 1 : model->output_width;
    Datum* elements = (Datum*)palloc(sizeof(Datum) * width);
    for (int k = 0; k < width; k++) {
        double value = output_row[k];
        if (single_label) value = prediction_from_output(model, output_row);
        else if (entry->classification) value = entry->classes[2 * k + (output_row[k] > 0.0f ? 1 : 0)];
        elements[k] = Float8GetDatum(value);
    }
    return PointerGetDatum(construct_array(elements, width, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

Datum contributions_from_output(const BoundModel* model, const float* output_row) {
    // Per group the inputs and the bias; one group gives a flat array, several a 2-D one.
    const int per_group = model->entry->num_features + 1;
    const int width = model->output_width;
    if (per_group < 1 || width % per_group != 0)
        ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                        errmsg("model \"%s\" gives %d contributions for %d features", model->entry->name, width,
                               per_group - 1)));
    Datum* elements = (Datum*)palloc(sizeof(Datum) * Max(width, 1));
    for (int k = 0; k < width; k++) elements[k] = Float8GetDatum((double)output_row[k]);
    int groups = width / per_group;
    int dims[2] = {groups, per_group}, lbs[2] = {1, 1};
    if (groups == 1)
        return PointerGetDatum(construct_array(elements, width, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
    return PointerGetDatum(
        construct_md_array(elements, NULL, 2, dims, lbs, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

double prediction_from_output(const BoundModel* model, const float* output_row) {
    const CatalogEntry* entry = model->entry;
    if (!entry->classification) return output_row[0];
    int best = predicted_class(model, output_row);
    return best < entry->num_classes ? entry->classes[best] : best;
}

Datum label_from_output(const BoundModel* model, const float* output_row) {
    // load_bound_program checked that the program gives a column per class.
    return model->label_texts[predicted_class(model, output_row)];
}

Datum call_result(const BoundModel* model, PredictCallKind kind, const float* scores, bool* isnull) {
    const int width = model->output_width;
    // transform() keeps a NaN its featurizers pass on, as scikit-learn's transform does.
    *isnull = kind != PredictCallKind::Transform && output_is_missing(scores, width);
    if (*isnull) return (Datum)0;
    switch (kind) {
        case PredictCallKind::Predict: return Float8GetDatum(prediction_from_output(model, scores));
        case PredictCallKind::PredictLabel: return label_from_output(model, scores);
        case PredictCallKind::ScoreSamples: return Float8GetDatum((double)scores[0]);
        case PredictCallKind::PredictOutputs: return outputs_from_output(model, scores);
        case PredictCallKind::Contributions: return contributions_from_output(model, scores);
        case PredictCallKind::PredictProba: case PredictCallKind::Transform: case PredictCallKind::DecisionFunction:
        case PredictCallKind::None: break;
    }
    // predict_proba: the probabilities; transform, decision_function: every column
    const int count = kind == PredictCallKind::PredictProba ? model->proba_width : width;
    Datum* elements = (Datum*)palloc(sizeof(Datum) * Max(count, 1));
    for (int k = 0; k < count; k++) elements[k] = Float8GetDatum((double)scores[k]);
    return PointerGetDatum(construct_array(elements, count, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

}  // namespace pg_predict::pg
