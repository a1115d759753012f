// Scoring through a version's cascade: see exec/cascade.hpp.
#include "exec/cascade.hpp"

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "catalog/catalog.hpp"
#include "exec/model_binding.hpp"
#include "guard.hpp"
#include "settings.hpp"

namespace pg_predict::pg {

struct CascadeScoring {
    runtime::Program* program;  // the small model, reading `features` of the batch as float
    int* features;              // the full model's batch columns it reads
    int num_features;
    int* class_of;              // per small-model output: the full model's class index
    int num_classes;
    double threshold;           // decided: the largest small-model probability >= threshold
    int* read;                  // the full model's read features: a NaN among them is never decided
    int num_read;
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
    if (!cascades_enabled || input->per_row != NULL || input->model == NULL) return;
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
    runtime::Program* program = guarded([&] {
        ParsedCascade parsed = parse_cascade(text);
        for (int f : parsed.features)
            if (f < 0 || f >= F) fail(ErrorCategory::InvalidModel, "the cascade reads a column the model does not have");
        for (int k : parsed.classes)
            if (k < 0 || k >= proba_width) fail(ErrorCategory::InvalidModel, "the cascade gives a class the model does not have");
        runtime::Program* p = small_program(parsed);
        if (runtime::program_output_width(p) != static_cast<int>(parsed.classes.size()) ||
            runtime::program_reads_float64(p)) {
            runtime::release_program(p);
            fail(ErrorCategory::InvalidModel, "the cascade's small model does not fit its classes");
        }
        c->threshold = parsed.threshold;
        c->num_features = static_cast<int>(parsed.features.size());
        c->num_classes = static_cast<int>(parsed.classes.size());
        c->features = (int*)MemoryContextAlloc(context, sizeof(int) * std::max(c->num_features, 1));
        c->class_of = (int*)MemoryContextAlloc(context, sizeof(int) * std::max(c->num_classes, 1));
        std::copy(parsed.features.begin(), parsed.features.end(), c->features);
        std::copy(parsed.classes.begin(), parsed.classes.end(), c->class_of);
        const std::string text = std::to_string(parsed.trees) + " trees on " + parsed.inputs + " inputs, confidence >= ";
        c->description = MemoryContextStrdup(context, text.c_str());
        return p;
    });
    MemoryContextCallback* release = (MemoryContextCallback*)MemoryContextAllocZero(context, sizeof(MemoryContextCallback));
    release->func = release_program_callback;
    release->arg = program;
    MemoryContextRegisterResetCallback(context, release);
    c->program = program;
    c->description = psprintf("%s%.2f", c->description, c->threshold);
    c->read = (int*)MemoryContextAlloc(context, sizeof(int) * Max(F, 1));
    for (int f = 0; f < F; f++)
        if (!entry->is_unused[f]) c->read[c->num_read++] = f;
    input->cascade = c;
    pfree(text);
}

namespace {

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
int64 decide(const CascadeScoring* c, const Feature* x, int64 rows, int F, float* out, int width, int label_offset,
             Feature* packed) {
    int64 undecided = 0;
    for (int64 r = 0; r < rows; r++) {
        const float* p = c->small_out + r * c->num_classes;
        int best = 0;
        for (int k = 1; k < c->num_classes; k++)
            if (p[k] > p[best]) best = k;  // the first of ties, as numpy
        const Feature* row = x + r * F;
        bool sure = p[best] >= c->threshold;
        for (int k = 0; sure && k < c->num_read; k++) sure = !std::isnan(row[c->read[k]]);
        if (sure) {
            float* o = out + r * width;
            for (int k = 0; k < width; k++) o[k] = 0.0f;
            o[label_offset + c->class_of[best]] = 1.0f;
        } else {
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
    if (c == NULL || gpu) return false;
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
    int64 undecided =
        input->x64 != NULL
            ? decide(c, input->x64, rows, F, input->out, width, label_offset, (double*)c->packed_x)
            : decide(c, input->x32, rows, F, input->out, width, label_offset, (float*)c->packed_x);
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
