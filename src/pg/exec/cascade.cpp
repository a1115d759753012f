// Scoring through a version's cascade: see exec/cascade.hpp.
#include "exec/cascade.hpp"

#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "catalog/catalog.hpp"
#include "pg_predict/common/kept_cache.hpp"
#include "features.hpp"
#include "binding/model.hpp"
#include "guard.hpp"
#include "settings.hpp"

extern "C" {
#include "utils/datum.h"
}

namespace pg_predict::pg {

// What every path scores a cascade with: the small program, what it reads, its classes and
// threshold, and scratch for the rows of one run.
struct CascadeModel {
    runtime::Program* program;  // the small model, reading `features` of the full model's row as float
    int* features;              // the full model's feature columns it reads
    int num_features;
    int* class_of;              // per small-model output: the full model's class index
    int num_classes;
    double threshold;           // decided: the largest small-model probability >= threshold
    int* used;                  // the full model's features that are read: a row with a NaN among
    int num_used;               // them (a NULL) is never decided
    bool classification;        // a classifier's cascade (else a regressor's filter: one value)
    const char* description;    // for EXPLAIN: "20 trees on 2 of 8 inputs, confidence >= 0.84"
    const char* filter_description;  // "20 trees on 2 of 8 inputs"
    // The text inputs the small model reads through its own projection of a vectorizer's terms
    // (create_cascade's logistic regression): side values after the model's F columns.
    int side_width;             // side values a row
    int num_text;
    int* text_feature;          // per text input: the vectorizer's first slot
    int* text_column;           // ... its first side value
    int* text_width;
    runtime::TextProjection** text_projection;
    CascadeText hook;           // the same by feature, for read_text_feature (the per-row paths)
    MemoryContext context;      // of the scratch
    int64 rows_allocated;
    float* side;                // rows_allocated x side_width
    size_t feature_bytes;       // of the packed rows' features
    int width_allocated;        // of the packed rows' outputs
    float* small_x;
    float* small_out;
    int64* undecided;
    void* packed_x;             // the undecided rows' full model rows (float or double)
    float* packed_out;
};

struct CascadeScoring {
    CascadeModel* model;
    int* read;                  // the used features filled for every row (the rest are deferred)
    int num_read;
    // Text vectorizers the small model does not read, filled for the undecided rows only (a
    // Columns input): per feature whether it is one, the list, and the values of those read
    // while the child's tuple is current (held: allocated rows x num_deferred).
    bool* deferred;
    int* deferred_list;
    int num_deferred;
    Datum* held;
    bool* held_null;
    int held_rows;
};

namespace {

void release_program_callback(void* arg) { runtime::release_program(static_cast<runtime::Program*>(arg)); }

struct ParsedText {
    int input;
    int column;
    std::string projection;
    runtime::TextProjection* made = nullptr;
};

struct ParsedCascade {
    std::vector<ParsedText> text;
    std::vector<int> features;
    std::vector<int> classes;
    double threshold;
    int64_t program_id;
    int trees;
    std::string document;
    std::string inputs;
    std::string description;          // "20 trees on 2 of 8 inputs"
    std::string cascade_description;  // ... ", confidence >= 0.84" (a classifier's)
};

ParsedCascade parse_cascade(const char* text) {
    const nlohmann::json j = nlohmann::json::parse(text);
    ParsedCascade c;
    c.features = j.at("features").get<std::vector<int>>();
    for (double v : j.at("classes").get<std::vector<double>>()) c.classes.push_back(static_cast<int>(v));
    // A regressor's filter has no threshold (JSON null).
    c.threshold = j.at("threshold").is_number() ? j.at("threshold").get<double>() : 1.0;
    c.program_id = j.at("program_id").get<int64_t>();
    c.trees = j.at("trees").get<int>();
    c.document = j.at("model").dump();
    c.inputs = std::to_string(j.at("inputs").size());
    if (j.contains("importance")) c.inputs += " of " + std::to_string(j.at("importance").size());  // every input's
    c.description = std::to_string(c.trees) + " trees on " + c.inputs + " inputs";
    if (j.at("threshold").is_number()) {
        char threshold[32];
        snprintf(threshold, sizeof(threshold), ", confidence >= %.2f", c.threshold);
        c.cascade_description = c.description + threshold;
    }
    if (j.contains("text"))
        for (const auto& t : j.at("text"))
            c.text.push_back({t.at("input").get<int>(), t.at("column").get<int>(), t.at("projection").dump()});
    return c;
}

// The small model's program, from the backend's cache or built from its document once.
runtime::Program* small_program(const ParsedCascade& c) {
    if (runtime::Program* p = runtime::acquire_cached_program(c.program_id)) return p;
    const Artifact artifact{ArtifactKind::Json, c.document};
    runtime::BuiltModel* built = runtime::build_model(artifact, "sklearn", "{}");
    std::string bytes;
    try {
        bytes = built->program;
    } catch (...) {
        runtime::free_built_model(built);
        throw;
    }
    runtime::free_built_model(built);
    return runtime::load_program(c.program_id, bytes.data(), bytes.size());
}

}  // namespace

namespace {

void delete_parsed(ParsedCascade* p) noexcept {
    for (ParsedText& t : p->text) runtime::free_text_projection(t.made);
    delete p;
}

// A backend's parsed cascades by program id (a rebuilt cascade has a new one): a text cascade's
// document holds its projections' weights (megabytes), parsed once rather than per query.
KeptCache<int64_t, ParsedCascade>& kept_cascades() {
    static KeptCache<int64_t, ParsedCascade> cache(8, delete_parsed);
    return cache;
}

void release_parsed(void* arg) { kept_cascades().release(static_cast<ParsedCascade*>(arg)); }

// The document parsed, its text projections made over the model's vectorizers.
ParsedCascade* parse_document(const char* text, runtime::TextEncoder* encoder) {
    ParsedCascade* p = new ParsedCascade(parse_cascade(text));
    try {
        for (ParsedText& t : p->text) {
            if (encoder == nullptr) fail(ErrorCategory::InvalidModel, "the cascade reads text the model does not");
            t.made = runtime::make_text_projection(encoder, t.input, t.projection.data(), t.projection.size());
            t.projection.clear();
            t.projection.shrink_to_fit();
        }
    } catch (...) {
        delete_parsed(p);
        throw;
    }
    return p;
}

}  // namespace

CascadeModel* cascade_model(const BoundModel* model, MemoryContext context) {
    const CatalogEntry* entry = model->entry;
    if (entry->classification && !entry->has_probabilities) return NULL;
    const bool classification = entry->classification;
    const int64 program_id = catalog_cascade_program_id(entry->id);
    if (program_id == 0) return NULL;
    runtime::TextEncoder* encoder = model->text_encoder;
    ParsedCascade* parsed = guarded([&] { return kept_cascades().acquire(program_id); });
    if (parsed == NULL) {
        char* text = catalog_cascade(entry->id);
        if (text == NULL) return NULL;
        parsed = guarded([&] {
            ParsedCascade* p = parse_document(text, encoder);
            try {
                kept_cascades().keep(p->program_id, p);
            } catch (...) {
                delete_parsed(p);
                throw;
            }
            return p;
        });
        pfree(text);
    }
    MemoryContextCallback* forget = (MemoryContextCallback*)MemoryContextAllocZero(context, sizeof(MemoryContextCallback));
    forget->func = release_parsed;
    forget->arg = parsed;
    MemoryContextRegisterResetCallback(context, forget);
    const int proba_width = model->proba_width;
    const int F = entry->num_features;
    CascadeModel* c = (CascadeModel*)MemoryContextAllocZero(context, sizeof(CascadeModel));
    MemoryContextCallback* release = (MemoryContextCallback*)MemoryContextAllocZero(context, sizeof(MemoryContextCallback));
    // C++ work alone in the guard; PostgreSQL's allocations after it, from the parsed copy.
    runtime::Program* program = guarded([&] {
        int side = 0;  // its text inputs' values: side columns F on
        for (const ParsedText& t : parsed->text) {
            if (t.column != F + side) fail(ErrorCategory::InvalidModel, "the cascade's text columns are out of order");
            side += runtime::text_projection_width(t.made);
        }
        for (int f : parsed->features)
            if (f < 0 || f >= F + side) fail(ErrorCategory::InvalidModel, "the cascade reads a column the model does not have");
        for (int k : parsed->classes)
            if (k < 0 || k >= proba_width)
                fail(ErrorCategory::InvalidModel, "the cascade gives a class the model does not have");
        if (classification == parsed->classes.empty())
            fail(ErrorCategory::InvalidModel, "the cascade's classes do not fit the model");
        runtime::Program* p = small_program(*parsed);
        // A classifier's: one probability per class; a regressor's filter: one value.
        const int width = classification ? static_cast<int>(parsed->classes.size()) : 1;
        if (runtime::program_output_width(p) != width || runtime::program_reads_float64(p)) {
            runtime::release_program(p);
            fail(ErrorCategory::InvalidModel, "the cascade's small model does not fit its classes");
        }
        return p;
    });
    release->func = release_program_callback;
    release->arg = program;
    MemoryContextRegisterResetCallback(context, release);
    c->program = program;
    c->threshold = parsed->threshold;
    c->num_features = (int)parsed->features.size();
    c->num_classes = (int)parsed->classes.size();
    c->features = (int*)MemoryContextAlloc(context, sizeof(int) * Max(c->num_features, 1));
    c->class_of = (int*)MemoryContextAlloc(context, sizeof(int) * Max(c->num_classes, 1));
    for (int k = 0; k < c->num_features; k++) c->features[k] = parsed->features[k];
    for (int k = 0; k < c->num_classes; k++) c->class_of[k] = parsed->classes[k];
    c->classification = classification;
    c->description = pstrdup(classification ? parsed->cascade_description.c_str() : parsed->description.c_str());
    c->filter_description = pstrdup(parsed->description.c_str());
    const int num_text = (int)parsed->text.size();
    c->num_text = num_text;
    c->text_feature = (int*)MemoryContextAlloc(context, sizeof(int) * Max(num_text, 1));
    c->text_column = (int*)MemoryContextAlloc(context, sizeof(int) * Max(num_text, 1));
    c->text_width = (int*)MemoryContextAlloc(context, sizeof(int) * Max(num_text, 1));
    c->text_projection = (runtime::TextProjection**)MemoryContextAlloc(context, sizeof(void*) * Max(num_text, 1));
    c->hook.projection = (runtime::TextProjection**)MemoryContextAllocZero(context, sizeof(void*) * Max(F, 1));
    c->hook.width_of = (int*)MemoryContextAllocZero(context, sizeof(int) * Max(F, 1));
    c->hook.column = (int*)MemoryContextAllocZero(context, sizeof(int) * Max(F, 1));
    for (int t = 0; t < num_text; t++) {
        const ParsedText& p = parsed->text[t];
        c->text_feature[t] = p.input;
        c->text_column[t] = p.column - F;
        c->text_width[t] = runtime::text_projection_width(p.made);
        c->text_projection[t] = p.made;
        c->hook.projection[p.input] = p.made;
        c->hook.width_of[p.input] = c->text_width[t];
        c->hook.column[p.input] = c->text_column[t];
        c->side_width += c->text_width[t];
    }
    c->hook.width = c->side_width;
    c->used = (int*)MemoryContextAlloc(context, sizeof(int) * Max(F, 1));
    for (int f = 0; f < F; f++)
        if (!entry->is_unused[f]) c->used[c->num_used++] = f;
    c->context = context;
    return c;
}

namespace {

// Scratch for `rows` rows of F features of `feature_bytes` each and outputs `width` wide.
void reserve(CascadeModel* c, int64 rows, int F, size_t feature_bytes, int width) {
    if (c->rows_allocated >= rows && c->feature_bytes == feature_bytes && c->width_allocated >= width) return;
    rows = Max(rows, c->rows_allocated);
    width = Max(Max(width, c->width_allocated), 1);
    auto grow = [&](void* old, size_t bytes) {
        return old == NULL ? MemoryContextAllocHuge(c->context, bytes) : repalloc_huge(old, bytes);
    };
    c->small_x = (float*)grow(c->small_x, sizeof(float) * rows * Max(c->num_features, 1));
    c->side = (float*)grow(c->side, sizeof(float) * rows * Max(c->side_width, 1));
    c->small_out = (float*)grow(c->small_out, sizeof(float) * rows * Max(c->num_classes, 1));
    c->undecided = (int64*)grow(c->undecided, sizeof(int64) * rows);
    c->packed_x = grow(c->packed_x, feature_bytes * rows * Max(F, 1));
    c->packed_out = (float*)grow(c->packed_out, sizeof(float) * rows * width);
    c->rows_allocated = rows;
    c->feature_bytes = feature_bytes;
    c->width_allocated = width;
}

// The small model over every row's chosen features (into small_out): the model's batch
// columns, and the side values of its text inputs (in c->side).
template <typename Feature>
void run_small(CascadeModel* c, const Feature* x, int64 rows, int F) {
    const int E = c->side_width;
    for (int64 r = 0; r < rows; r++)
        for (int k = 0; k < c->num_features; k++) {
            const int f = c->features[k];
            c->small_x[r * c->num_features + k] = f < F ? (float)x[r * F + f] : c->side[r * E + (f - F)];
        }
    guarded([&] { runtime::run_rows(c->program, c->small_x, rows, c->num_features, c->small_out); });
}

// The small model's class for row r where it is sure of it (by its probability), else -1.
int sure_class(const CascadeModel* c, int64 r) {
    const float* p = c->small_out + r * c->num_classes;
    int best = 0;
    for (int k = 1; k < c->num_classes; k++)
        if (p[k] > p[best]) best = k;  // the first of ties, as numpy
    return p[best] >= c->threshold ? best : -1;
}

// A decided row's output: the class one-hot, which predict and predict_label read as that class.
void write_class(const CascadeModel* c, int best, float* o, int width, int label_offset) {
    for (int k = 0; k < width; k++) o[k] = 0.0f;
    o[label_offset + c->class_of[best]] = 1.0f;
}

// The full program over the `undecided` packed rows, their outputs copied back into `out`.
template <typename Feature>
void run_full(CascadeModel* c, runtime::Program* full, int64 undecided, int F, float* out, int width) {
    if (undecided == 0) return;
    const Feature* packed = (const Feature*)c->packed_x;
    float* packed_out = c->packed_out;
    guarded([&] {
        if constexpr (std::is_same_v<Feature, float>)
            runtime::run_rows(full, packed, undecided, F, packed_out);  // one undecided row: no TorchScript call
        else
            runtime::run_program(full, packed, undecided, F, packed_out);
    });
    for (int64 u = 0; u < undecided; u++)
        memcpy(out + c->undecided[u] * width, c->packed_out + u * width, sizeof(float) * width);
}

template <typename Feature>
int64 run_rows(CascadeModel* c, const BoundModel* model, runtime::Program* full, const Feature* x, int64 rows,
               float* out) {
    const int F = model->entry->num_features;
    const int width = model->output_width;
    reserve(c, rows, F, sizeof(Feature), width);
    run_small(c, x, rows, F);
    int64 undecided = 0;
    for (int64 r = 0; r < rows; r++) {
        const Feature* row = x + r * F;
        int best = sure_class(c, r);
        for (int k = 0; best >= 0 && k < c->num_used; k++)
            if (std::isnan(row[c->used[k]])) best = -1;
        if (best >= 0) {
            write_class(c, best, out + r * width, width, model->label_offset);
        } else {
            c->undecided[undecided] = r;
            memcpy((Feature*)c->packed_x + undecided * F, row, sizeof(Feature) * F);
            undecided++;
        }
    }
    run_full<Feature>(c, full, undecided, F, out, width);
    return rows - undecided;
}

bool label_outputs_only(const PredictBatchState* state, int i) {
    bool any = false;
    for (int j = 0; j < state->plan->num_outputs; j++) {
        const BatchOutput* output = &state->plan->outputs[j];
        if (output->input != i) continue;
        if (output->kind != PredictCallKind::Predict && output->kind != PredictCallKind::PredictLabel) return false;
        any = true;
    }
    return any;
}

}  // namespace

CascadeModel* cascade_load(const BoundModel* model, const PredictCallKind* kinds, int num_kinds,
                           MemoryContext context) {
    if (!cascades_enabled || num_kinds == 0 || !model->entry->classification) return NULL;
    for (int k = 0; k < num_kinds; k++)
        if (kinds[k] != PredictCallKind::Predict && kinds[k] != PredictCallKind::PredictLabel) return NULL;
    return cascade_model(model, context);
}

int64 cascade_run(CascadeModel* c, const BoundModel* model, runtime::Program* full, const float* x, int64 rows,
                  float* out) {
    return run_rows(c, model, full, x, rows, out);
}

int64 cascade_run(CascadeModel* c, const BoundModel* model, runtime::Program* full, const double* x, int64 rows,
                  float* out) {
    return run_rows(c, model, full, x, rows, out);
}

bool cascade_reads_text(const CascadeModel* c) { return c->num_text > 0; }

void cascade_read_rows(CascadeModel* c, BoundModel* model, int64 rows) {
    reserve(c, rows, model->entry->num_features, c->feature_bytes == 0 ? sizeof(float) : c->feature_bytes,
            model->output_width);
    model->cascade_text = &c->hook;
    c->hook.side = NULL;
}

void cascade_reading_row(CascadeModel* c, BoundModel* model, int64 row) {
    model->cascade_text = &c->hook;
    c->hook.side = c->side_width > 0 ? c->side + row * c->side_width : NULL;
}

void cascade_read_done(CascadeModel* c) { c->hook.side = NULL; }

int cascade_filter_output(const CascadeModel* c, int column) {
    if (!c->classification) return column < 0 ? 0 : -1;
    for (int k = 0; k < c->num_classes; k++)
        if (c->class_of[k] == column) return k;
    return -1;
}

const float* cascade_small_scores(CascadeModel* c, const float* x, int64 rows, int F, int* width) {
    reserve(c, rows, F, sizeof(float), 1);
    run_small(c, x, rows, F);
    *width = c->classification ? c->num_classes : 1;
    return c->small_out;
}

const float* cascade_small_scores(CascadeModel* c, const double* x, int64 rows, int F, int* width) {
    reserve(c, rows, F, sizeof(double), 1);
    run_small(c, x, rows, F);
    *width = c->classification ? c->num_classes : 1;
    return c->small_out;
}

const char* cascade_filter_description(const CascadeModel* c) { return c->filter_description; }

void cascade_activate(PredictBatchState* state, int i) {
    InputState* input = &state->inputs[i];
    input->cascade = NULL;
    // Not where the GPU may score a batch: the fill would have skipped the deferred text.
    if (!cascades_enabled || input->per_row != NULL || input->model == NULL || state->gpu_possible) return;
    // (The early exit never screens a label, so a WHERE or ORDER BY ... LIMIT on one is no reason
    // to leave the cascade out: the per-row path would still use it.)
    if (!input->model->entry->classification || !label_outputs_only(state, i)) return;
    MemoryContext context = state->buffer_context;
    CascadeModel* model = cascade_model(input->model, context);
    if (model == NULL) return;
    const CatalogEntry* entry = input->model->entry;
    const int F = input->num_features;
    CascadeScoring* c = (CascadeScoring*)MemoryContextAllocZero(context, sizeof(CascadeScoring));
    c->model = model;
    // A vectorizer the small model reads none of the slots of: all its slots skipped by the
    // fill, its first slot (which writes them all) filled for the undecided rows.
    c->deferred = (bool*)MemoryContextAllocZero(context, sizeof(bool) * Max(F, 1));
    c->deferred_list = (int*)MemoryContextAlloc(context, sizeof(int) * Max(F, 1));
    runtime::TextEncoder* encoder = input->model->text_encoder;
    if (input->plan->source == FeatureSource::Columns && encoder != NULL)
        for (int f = 0; f < F; f++) {
            const int32* slots = NULL;
            const int k = runtime::text_vectorizer_slots(encoder, f, &slots);
            if (k <= 0 || entry->is_unused[f] || input->convert[f] != NULL) continue;  // not a first slot
            bool small_reads = false;
            for (int s = 0; s < k; s++)
                for (int j = 0; j < model->num_features; j++) small_reads = small_reads || model->features[j] == slots[s];
            if (small_reads) continue;
            for (int s = 0; s < k; s++) c->deferred[slots[s]] = true;
            c->deferred_list[c->num_deferred++] = f;
        }
    c->read = (int*)MemoryContextAlloc(context, sizeof(int) * Max(F, 1));
    for (int f = 0; f < F; f++)
        if (!entry->is_unused[f] && !c->deferred[f]) c->read[c->num_read++] = f;
    input->cascade = c;
}

bool cascade_defers(const InputState* input, int f) { return input->cascade != NULL && input->cascade->deferred[f]; }

void cascade_hold(PredictBatchState* state, InputState* input, int f, int row, Datum value, bool isnull) {
    CascadeScoring* c = input->cascade;
    int slot = 0;
    while (slot < c->num_deferred && c->deferred_list[slot] != f) slot++;
    if (slot == c->num_deferred) return;  // a later slot: its first one holds the text
    if (c->held_rows < state->allocated_rows) {
        const size_t n = (size_t)state->allocated_rows * c->num_deferred;
        c->held = c->held == NULL ? (Datum*)MemoryContextAllocHuge(state->buffer_context, sizeof(Datum) * n)
                                  : (Datum*)repalloc_huge(c->held, sizeof(Datum) * n);
        c->held_null = c->held_null == NULL ? (bool*)MemoryContextAllocHuge(state->buffer_context, n)
                                            : (bool*)repalloc_huge(c->held_null, n);
        c->held_rows = state->allocated_rows;
    }
    const size_t at = (size_t)row * c->num_deferred + slot;
    c->held_null[at] = isnull;
    // The child's tuple changes with the next row: a copy for the batch.
    if (isnull) {
        c->held[at] = (Datum)0;
        return;
    }
    MemoryContext old = MemoryContextSwitchTo(state->batch_context);  // reset with the batch
    c->held[at] = datumCopy(value, false, -1);
    MemoryContextSwitchTo(old);
}

namespace {

// A deferred feature's value for row r: kept with the batch's columns, or held.
void deferred_value(const PredictBatchState* state, const InputState* input, const CascadeScoring* c, int slot,
                    int64 r, Datum* value, bool* isnull) {
    const int f = c->deferred_list[slot];
    if (input->column[f] != 0) {
        const size_t at = (size_t)r * state->row_stride + (input->column[f] - 1);
        *value = state->values[at];
        *isnull = state->nulls[at];
    } else {
        *value = c->held[(size_t)r * c->num_deferred + slot];
        *isnull = c->held_null[(size_t)r * c->num_deferred + slot];
    }
}

// The batch's rows the small model is sure of get their class; the others get their deferred
// text filled and are packed for the full model. Returns how many are undecided.
template <typename Feature>
int64 decide(const PredictBatchState* state, const InputState* input, const CascadeScoring* c, Feature* x,
             int64 rows) {
    CascadeModel* m = c->model;
    const int F = input->num_features;
    int64 undecided = 0;
    for (int64 r = 0; r < rows; r++) {
        Feature* row = x + r * F;
        int best = sure_class(m, r);
        for (int k = 0; best >= 0 && k < c->num_read; k++)
            if (std::isnan(row[c->read[k]])) best = -1;
        for (int k = 0; best >= 0 && k < c->num_deferred; k++) {  // NULL text: the model's rule decides
            Datum value;
            bool isnull;
            deferred_value(state, input, c, k, r, &value, &isnull);
            if (isnull) best = -1;
        }
        if (best >= 0) {
            write_class(m, best, input->out + r * input->width, input->width, input->model->label_offset);
            continue;
        }
        for (int k = 0; k < c->num_deferred; k++) {  // the text the small model did not need
            Datum value;
            bool isnull;
            deferred_value(state, input, c, k, r, &value, &isnull);
            const int f = c->deferred_list[k];
            read_text_feature(input->model, f, value, isnull, input->text_column[f], input->blank_padded[f], row);
        }
        m->undecided[undecided] = r;
        memcpy((Feature*)m->packed_x + undecided * F, row, sizeof(Feature) * F);
        undecided++;
    }
    return undecided;
}

// The small model's text inputs from the text the batch holds for later (a Columns input; a
// row argument's were read with the row, through the hook).
void fill_side(PredictBatchState* state, InputState* input, CascadeScoring* c) {
    CascadeModel* m = c->model;
    if (m->num_text == 0 || input->plan->source != FeatureSource::Columns) return;
    for (int t = 0; t < m->num_text; t++) {
        const int f = m->text_feature[t];
        int slot = 0;
        while (slot < c->num_deferred && c->deferred_list[slot] != f) slot++;
        if (slot == c->num_deferred) elog(ERROR, "pg_predict: a cascade's text input is not held for it");
        for (int64 r = 0; r < state->count; r++) {
            Datum value;
            bool isnull;
            deferred_value(state, input, c, slot, r, &value, &isnull);
            read_text_projected(input->model, f, value, isnull, input->blank_padded[f], m->text_projection[t],
                                m->text_width[t], m->side + r * m->side_width + m->text_column[t]);
        }
    }
}

template <typename Feature>
int64 score_batch_rows(PredictBatchState* state, InputState* input, runtime::Program* full, Feature* x) {
    CascadeModel* m = input->cascade->model;
    const int64 rows = state->count;
    const int F = input->num_features;
    reserve(m, rows, F, sizeof(Feature), input->width);
    // Detoasted text lives with the batch, as the fill's.
    MemoryContext old = MemoryContextSwitchTo(state->batch_context);
    fill_side(state, input, input->cascade);
    run_small(m, x, rows, F);
    const int64 undecided = decide(state, input, input->cascade, x, rows);
    MemoryContextSwitchTo(old);
    run_full<Feature>(m, full, undecided, F, input->out, input->width);
    return undecided;
}

}  // namespace

void cascade_batch_row(PredictBatchState* state, InputState* input, int row) {
    if (input->cascade == NULL || input->cascade->model->num_text == 0) return;
    CascadeModel* m = input->cascade->model;
    reserve(m, state->allocated_rows, input->num_features, input->x64 != NULL ? sizeof(double) : sizeof(float),
            input->width);
    cascade_reading_row(m, input->model, row);
}

void cascade_batch_row_done(InputState* input) {
    if (input->cascade != NULL) cascade_read_done(input->cascade->model);
}

bool cascade_score(PredictBatchState* state, int i, runtime::Program* full, bool gpu) {
    InputState* input = &state->inputs[i];
    if (input->cascade == NULL) return false;
    if (gpu) elog(ERROR, "pg_predict: a cascade on a batch the GPU scores");  // cascade_activate prevents it
    const int64 undecided = input->x64 != NULL ? score_batch_rows(state, input, full, input->x64)
                                               : score_batch_rows(state, input, full, input->x32);
    state->rows_decided += state->count - undecided;
    state->rows_full_model += undecided;
    return true;
}

void cascade_explain(const PredictBatchState* state, int i, const char* suffix, ExplainState* es) {
    const InputState* input = &state->inputs[i];
    char label[64];
    snprintf(label, sizeof(label), "Cascade%s", suffix);
    if (input->cascade != NULL) {
        ExplainPropertyText(label, input->cascade->model->description, es);
        return;
    }
    // Not active: with the setting on and a cascade in the catalog, what would apply or why not.
    const BatchInput* in = &state->plan->inputs[i];
    if (!cascades_enabled || in->named_per_row) return;
    const CatalogEntry* entry =
        input->model != NULL ? input->model->entry : catalog_lookup(unpinned_model_name(in->model), true);
    if (entry == NULL || !entry->classification) return;
    char* text = catalog_cascade(entry->id);
    if (text == NULL) return;
    const char* said;
    if (!label_outputs_only(state, i))
        said = "not used: another call than predict or predict_label reads the model (those stay exact)";
    else if (state->gpu_possible)
        said = "not used: the GPU may score this query";
    else if (es->analyze)
        return;  // scored no batch
    else
        said = pstrdup(guarded([&] { return parse_cascade(text).cascade_description; }).c_str());
    ExplainPropertyText(label, said, es);
}

}  // namespace pg_predict::pg
