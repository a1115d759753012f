// A model as one query sees it: its catalog entry (version fixed by the query's snapshot) and
// its loaded program, held for as long as the memory context it was bound in lives.
#pragma once

#include "catalog/catalog.hpp"
#include "plan/predict_calls.hpp"

namespace pg_predict::runtime {
struct Program;
struct TextEncoder;
struct TextProjection;
}

namespace pg_predict::pg {

// A cascade's own projections of the model's text vectorizers (exec/cascade.cpp), computed from
// the same terms as the model's whenever a text feature is read while `side` is set: per
// feature, the projection of the vectorizer at that first slot (or NULL), its width and where
// its values start in a side row.
struct CascadeText {
    runtime::TextProjection** projection;
    int* width_of;
    int* column;
    int width;    // side values a row
    float* side;  // the row being read's side values; NULL: none wanted
};

struct BoundModel {
    CatalogEntry* entry;
    runtime::Program* program;          // on the CPU
    runtime::Program* gpu_program;      // its copy on the GPU, once program_for asked for it
    MemoryContext context;              // where it was bound: references are released with it
    int output_width;
    int proba_width;    // the columns predict_proba() returns: output_width, or the classes
    int label_offset;   // where the columns predict() takes the argmax of begin
    runtime::TextEncoder* text_encoder;  // NULL unless the model has text inputs
    CascadeText* cascade_text;           // set while a cascade with text inputs scores it (NULL: none)
    Datum* label_texts;  // a classifier's labels as text datums, built once: predict_label()
    ModelOutput output;  // which program: the stored one, or decision_function / score_samples
    // Predicate pruning: the bounds the program is specialized for (BatchInput::pruned_bounds),
    // set before load_bound_program; NULL for the stored program.
    const char* pruned_bounds;
    // load_bound_program read the program from the catalog or mapped another backend's image
    // from shared memory (false: this backend's cache had it).
    bool loaded_from_catalog;
};

// Errors unless predict_proba() can score with this model (a classifier with probabilities).
void check_predict_proba(const CatalogEntry* entry);
// Errors unless a call of `kind` can use this model: predict() / predict_proba() need a model
// that predicts, transform() a pipeline that ends in a transformer, decision_function() and
// score_samples() a scikit-learn estimator (which ones: compiler/outputs.cpp, when the program is
// compiled). Cheap: the catalog entry only; at plan time and when a call site binds.
void check_call(const CatalogEntry* entry, PredictCallKind kind);

// Errors unless predict() can score with this model: a classifier whose labels are text
// (strings, booleans) has no float8 prediction, only predict_label().
void check_predict(const CatalogEntry* entry);

// Errors unless a call of `kind` gives every value the model predicts: a multi-output model
// (several values per row) is scored by predict_outputs() only.
void check_outputs(const CatalogEntry* entry, PredictCallKind kind);

// Errors unless predict_label() can score with this model (a classifier).
void check_predict_label(const CatalogEntry* entry);

// Model version `id`'s text encoder (dictionaries and vectorizers), from the backend's cache or
// built from the catalog, released when `context` is reset or deleted.
runtime::TextEncoder* acquire_text_encoder(int64 id, MemoryContext context);

// Looks the model up, takes the program from the backend's cache or loads it from the
// catalog, and releases it when `context` is reset or deleted.
BoundModel* bind_model(const char* name, MemoryContext context, ModelOutput output = ModelOutput::Stored);

// bind_model in two steps: the catalog entry and the usage check (cheap: at executor start),
// then the program (loading it can take a while: when the first batch needs it). Until
// load_bound_program ran, program is NULL and the widths are 0.
BoundModel* bind_model_entry(const char* name, MemoryContext context, ModelOutput output = ModelOutput::Stored);
void load_bound_program(BoundModel* model);

// The program to run: the CPU one, or (gpu) its copy on the GPU, moved there on first use
// (once per backend; the copy stays cached) and released with the model's context.
runtime::Program* program_for(BoundModel* model, bool gpu);

// Whether a model output row holds NaN: an input was missing where the model defines no
// missing value (no imputer, no default direction). predict() then returns NULL, as docs/design.md
// says, rather than a label picked from NaN scores.
bool output_is_missing(const float* output_row, int width);

// predict_outputs()'s float8[] for one output row: a regressor's value per output, or a
// single-output classifier's label alone (palloc'd in the current memory context).
Datum outputs_from_output(const BoundModel* model, const float* output_row);

// predict_contributions()'s float8[] for one output row: each input's contribution then the
// bias, as a flat array for one group and [group][input + bias] for several.
Datum contributions_from_output(const BoundModel* model, const float* output_row);

// The value predict() returns for one output row: the label of the most probable class for a
// classifier (the first on ties, as numpy's argmax; the largest decision value when the
// program gives decision values after the probabilities), the value for a regressor.
double prediction_from_output(const BoundModel* model, const float* output_row);

// The value predict_label() returns for one output row: the text of the class predict() picks
// (a datum of model->label_texts, not copied).
Datum label_from_output(const BoundModel* model, const float* output_row);

// What a call of `kind` returns for one output row: *isnull where the model gave NaN (but for
// transform(), which keeps it); arrays palloc'd in the current memory context; predict_label's
// text is a datum of model->label_texts, not copied.
Datum call_result(const BoundModel* model, PredictCallKind kind, const float* output_row, bool* isnull);

}  // namespace pg_predict::pg
