// Scoring through a version's cascade: see exec/cascade.hpp.
#include "exec/cascade.hpp"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "catalog/catalog.hpp"
#include "features.hpp"
#include "exec/model_binding.hpp"
#include "guard.hpp"
#include "settings.hpp"

extern "C" {
#include "utils/datum.h"
}

namespace pg_predict::pg {

struct CascadeScoring {
    runtime::Program* program;  // the small model, reading `features` of the batch as float
    int* features;              // the full model's batch columns it reads
    int num_features;
    int* class_of;              // per small-model output: the full model's class index
    int num_classes;
    double threshold;           // decided: the largest small-model probability >= threshold
    int* read;                  // the full model's read features filled for every row: a NaN among
    int num_read;               // them is never decided
    // Text vectorizers the small model does not read, filled for the undecided rows only (a
    // Columns input): per feature whether it is one, the list, and the values of those read
    // while the child's tuple is current (held: allocated rows x num_deferred).
    bool* deferred;
    int* deferred_list;
    int num_deferred;
    Datum* held;
    bool* held_null;
    int held_rows;
    const char* description;    // for EXPLAIN
    int rows_allocated;         // of the scratch buffers below
    float* small_x;
    float* small_out;
    int64* undecided;
    void* packed_x;             // the undecided rows' full batch rows (float or double)
    float* packed_out;
};

namespace {

void release_program_callback(void* arg) { runtime::release_program(static_cast<runtime::Program*>(arg)); }

struct ParsedCascade {
    runtime::Program* program = nullptr;
    std::string description;
    std::vector<int> features;
    std::vector<int> classes;
    double threshold;
    int64_t program_id;
    int trees;
    std::string document;
    std::string inputs;
};

ParsedCascade parse_cascade(const char* text) {
    const nlohmann::json j = nlohmann::json::parse(text);
    ParsedCascade c;
    c.features = j.at("features").get<std::vector<int>>();
    for (double v : j.at("classes").get<std::vector<double>>()) c.classes.push_back(static_cast<int>(v));
    c.threshold = j.at("threshold").get<double>();
    c.program_id = j.at("program_id").get<int64_t>();
    c.trees = j.at("trees").get<int>();
    c.document = j.at("model").dump();
    c.inputs = std::to_string(j.at("inputs").size());
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

void cascade_activate(PredictBatchState* state, int i) {
    InputState* input = &state->inputs[i];
    input->cascade = NULL;
    // Not where the GPU may score a batch: the fill would have skipped the deferred text.
    if (!cascades_enabled || input->per_row != NULL || input->model == NULL || state->gpu_possible) return;
    const CatalogEntry* entry = input->model->entry;
    if (!entry->classification || !entry->has_probabilities || !label_outputs_only(state, i)) return;
    const EarlyExitPlan* early = &state->plan->early_exit;
    if (early->output >= 0 && state->plan->outputs[early->output].input == i) return;
    char* text = catalog_cascade(entry->id);
    if (text == NULL) return;
    const int proba_width = input->model->proba_width;
    const int F = input->num_features;
    MemoryContext context = state->buffer_context;
    CascadeScoring* c = (CascadeScoring*)MemoryContextAllocZero(context, sizeof(CascadeScoring));
    MemoryContextCallback* release = (MemoryContextCallback*)MemoryContextAllocZero(context, sizeof(MemoryContextCallback));
    MemoryContextCallback* forget = (MemoryContextCallback*)MemoryContextAllocZero(context, sizeof(MemoryContextCallback));
    // C++ work alone in the guard; PostgreSQL's allocations after it, from the parsed copy.
    ParsedCascade* parsed = guarded([&] {
        ParsedCascade* p = new ParsedCascade(parse_cascade(text));
        try {
            for (int f : p->features)
                if (f < 0 || f >= F) fail(ErrorCategory::InvalidModel, "the cascade reads a column the model does not have");
            for (int k : p->classes)
                if (k < 0 || k >= proba_width)
                    fail(ErrorCategory::InvalidModel, "the cascade gives a class the model does not have");
            p->program = small_program(*p);
            if (runtime::program_output_width(p->program) != static_cast<int>(p->classes.size()) ||
                runtime::program_reads_float64(p->program)) {
                runtime::release_program(p->program);
                fail(ErrorCategory::InvalidModel, "the cascade's small model does not fit its classes");
            }
            p->description = std::to_string(p->trees) + " trees on " + p->inputs + " inputs, confidence >= ";
        } catch (...) {
            delete p;
            throw;
        }
        return p;
    });
    release->func = release_program_callback;
    release->arg = parsed->program;
    MemoryContextRegisterResetCallback(context, release);
    forget->func = [](void* arg) { delete static_cast<ParsedCascade*>(arg); };
    forget->arg = parsed;
    MemoryContextRegisterResetCallback(context, forget);
    c->program = parsed->program;
    c->threshold = parsed->threshold;
    c->num_features = (int)parsed->features.size();
    c->num_classes = (int)parsed->classes.size();
    c->features = (int*)MemoryContextAlloc(context, sizeof(int) * Max(c->num_features, 1));
    c->class_of = (int*)MemoryContextAlloc(context, sizeof(int) * Max(c->num_classes, 1));
    for (int k = 0; k < c->num_features; k++) c->features[k] = parsed->features[k];
    for (int k = 0; k < c->num_classes; k++) c->class_of[k] = parsed->classes[k];
    c->description = MemoryContextStrdup(context, parsed->description.c_str());
    c->description = psprintf("%s%.2f", c->description, c->threshold);
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
                for (int j = 0; j < c->num_features; j++) small_reads = small_reads || c->features[j] == slots[s];
            if (small_reads) continue;
            for (int s = 0; s < k; s++) c->deferred[slots[s]] = true;
            c->deferred_list[c->num_deferred++] = f;
        }
    c->read = (int*)MemoryContextAlloc(context, sizeof(int) * Max(F, 1));
    for (int f = 0; f < F; f++)
        if (!entry->is_unused[f] && !c->deferred[f]) c->read[c->num_read++] = f;
    input->cascade = c;
    pfree(text);
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

void reserve(PredictBatchState* state, InputState* input, CascadeScoring* c) {
    const int rows = state->allocated_rows;
    if (c->rows_allocated >= rows) return;
    MemoryContext context = state->buffer_context;
    const size_t feature = input->x64 != NULL ? sizeof(double) : sizeof(float);
    auto grow = [&](void* old, size_t bytes) {
        return old == NULL ? MemoryContextAllocHuge(context, bytes) : repalloc_huge(old, bytes);
    };
    c->small_x = (float*)grow(c->small_x, sizeof(float) * rows * Max(c->num_features, 1));
    c->small_out = (float*)grow(c->small_out, sizeof(float) * rows * c->num_classes);
    c->undecided = (int64*)grow(c->undecided, sizeof(int64) * rows);
    c->packed_x = grow(c->packed_x, feature * rows * Max(input->num_features, 1));
    c->packed_out = (float*)grow(c->packed_out, sizeof(float) * rows * Max(input->width, 1));
    c->rows_allocated = rows;
}

// Decides the rows the small model is sure of (their outputs: the class one-hot, which predict
// and predict_label read as that class), packs the others. Returns how many are undecided.
template <typename Feature>
int64 decide(const PredictBatchState* state, const InputState* input, const CascadeScoring* c, Feature* x, int64 rows,
             int F, float* out, int width, int label_offset, Feature* packed) {
    int64 undecided = 0;
    for (int64 r = 0; r < rows; r++) {
        const float* p = c->small_out + r * c->num_classes;
        int best = 0;
        for (int k = 1; k < c->num_classes; k++)
            if (p[k] > p[best]) best = k;  // the first of ties, as numpy
        Feature* row = x + r * F;
        bool sure = p[best] >= c->threshold;
        for (int k = 0; sure && k < c->num_read; k++) sure = !std::isnan(row[c->read[k]]);
        for (int k = 0; sure && k < c->num_deferred; k++) {  // NULL text: the model's rule decides
            Datum value;
            bool isnull;
            deferred_value(state, input, c, k, r, &value, &isnull);
            sure = !isnull;
        }
        if (sure) {
            float* o = out + r * width;
            for (int k = 0; k < width; k++) o[k] = 0.0f;
            o[label_offset + c->class_of[best]] = 1.0f;
        } else {
            for (int k = 0; k < c->num_deferred; k++) {  // the text the small model did not need
                Datum value;
                bool isnull;
                deferred_value(state, input, c, k, r, &value, &isnull);
                const int f = c->deferred_list[k];
                read_text_feature(input->model, f, value, isnull, input->text_column[f], input->blank_padded[f], row);
            }
            c->undecided[undecided] = r;
            memcpy(packed + undecided * F, row, sizeof(Feature) * F);
            undecided++;
        }
    }
    return undecided;
}

}  // namespace

bool cascade_score(PredictBatchState* state, int i, runtime::Program* full, bool gpu) {
    InputState* input = &state->inputs[i];
    CascadeScoring* c = input->cascade;
    if (c == NULL) return false;
    if (gpu) elog(ERROR, "pg_predict: a cascade on a batch the GPU scores");  // cascade_activate prevents it
    reserve(state, input, c);
    const int64 rows = state->count;
    const int F = input->num_features;
    for (int64 r = 0; r < rows; r++)
        for (int k = 0; k < c->num_features; k++)
            c->small_x[r * c->num_features + k] = input->x64 != NULL ? (float)input->x64[r * F + c->features[k]]
                                                                     : input->x32[r * F + c->features[k]];
    guarded([&] { runtime::run_program(c->program, c->small_x, rows, c->num_features, c->small_out); });
    const int width = input->width;
    const int label_offset = input->model->label_offset;
    // Detoasted text lives with the batch, as the fill's.
    MemoryContext old = MemoryContextSwitchTo(state->batch_context);
    int64 undecided =
        input->x64 != NULL
            ? decide(state, input, c, input->x64, rows, F, input->out, width, label_offset, (double*)c->packed_x)
            : decide(state, input, c, input->x32, rows, F, input->out, width, label_offset, (float*)c->packed_x);
    MemoryContextSwitchTo(old);
    if (undecided > 0) {
        const void* packed = c->packed_x;
        float* packed_out = c->packed_out;
        const bool float64 = input->x64 != NULL;
        guarded([&] {
            if (float64)
                runtime::run_program(full, (const double*)packed, undecided, F, packed_out);
            else
                runtime::run_program(full, (const float*)packed, undecided, F, packed_out);
        });
        for (int64 u = 0; u < undecided; u++)
            memcpy(input->out + c->undecided[u] * width, c->packed_out + u * width, sizeof(float) * width);
    }
    state->rows_decided += rows - undecided;
    state->rows_full_model += undecided;
    return true;
}

void cascade_explain(const PredictBatchState* state, int i, const char* suffix, ExplainState* es) {
    const InputState* input = &state->inputs[i];
    if (input->cascade == NULL) return;
    char label[64];
    snprintf(label, sizeof(label), "Cascade%s", suffix);
    ExplainPropertyText(label, input->cascade->description, es);
}

}  // namespace pg_predict::pg
