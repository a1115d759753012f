// The torch-free interface between PostgreSQL (src/pg/) and everything that uses libtorch.
// Every function may throw pg_predict::Error; src/pg calls them inside its guard only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pg_predict/common/artifact.hpp"

namespace pg_predict::runtime {

// Everything create_model stores about one model.
struct BuiltModel {
    std::string format;                 // the detected source format
    std::string spec_json;              // spec::to_json of the imported pipeline
    std::string program;                // serialized TorchScript module
    std::string strategy;               // compiler::strategy_name of the strategy used
    std::string task;                   // "regression" | "classification"
    std::vector<double> classes;        // classification labels, output column order
    std::vector<std::string> class_labels;  // text labels (spec::Pipeline's); empty: numeric
    std::vector<std::string> features;  // the model's feature names, input order
    std::vector<std::string> columns;   // the column each feature reads (options.columns)
    std::string summary_json;           // {"objective", "trees", "depth", "features", ...}
    std::vector<int32_t> text_features; // inputs read as text (dictionary-encoded or vectorized), ascending
    std::vector<int32_t> unused_features;  // inputs the model never reads, ascending
    std::string text_inputs_json;       // their dictionaries, for make_text_encoder
};

// Import, validate and compile a model artifact. `options_json` is the create_model options
// object minus what the PostgreSQL side consumes itself ("replace"): "features" (names for a
// model without them), "columns" ({feature: column}), "strategy" (auto | gemm |
// tree_traversal | perfect_tree_traversal | native). Unknown options are an error.
BuiltModel* build_model(const Artifact& artifact, const std::string& format, const std::string& options_json);
void free_built_model(BuiltModel*);
// Whether build_model would import `artifact` as a TorchScript module (format "torchscript", or
// "auto" and the bytes are one): that runs the user's code, which only privileged roles may
// (PostgreSQL's side checks before calling build_model). Cheap: looks at the zip directory.
bool imports_torchscript(const Artifact& artifact, const std::string& format);

// A loaded program. Programs are cached per backend by catalog row id (a new id for every
// create or replace), so a backend loads each version once.
struct Program;

// The cached program for `id`, with its reference count raised, or nullptr.
Program* acquire_cached_program(int64_t id);
// Load program bytes, cache them under `id`, return them with a reference held.
Program* load_program(int64_t id, const void* bytes, size_t length);
void release_program(Program*);

// The same model compiled with another strategy (the pg_predict.strategy setting overrides the
// one chosen at create_model). Cached per backend under (id, strategy) like the programs above;
// `strategy` is a compiler::strategy_name other than "auto".
Program* acquire_cached_variant(int64_t id, const char* strategy);
// Compile spec_json (the catalog's spec column) with `strategy`, cache and return it with a
// reference held. Throws Error(InvalidParameter) for an unknown strategy or one that does not
// fit the model (e.g. GEMM over 1 GiB).
Program* compile_variant(int64_t id, const char* strategy, const char* spec_json, size_t length);

// A model's other results (compiler::Output): scikit-learn's decision_function and
// score_samples, and predict_contributions (compiled from the spec as imported, without the
// optimizer, so that its columns are the inputs' own). The program is the model's spec compiled with that tail, on first use per
// backend, cached like a variant under (id, output, strategy); `strategy` may be "auto" (the
// model's own choice). Throws Error(Unsupported) naming the estimator when it has no such result.
enum class Output { DecisionFunction, ScoreSamples, Contributions };
Program* acquire_cached_output(int64_t id, Output output, const char* strategy);
Program* compile_output(int64_t id, Output output, const char* strategy, const char* spec_json, size_t length);

// The cache is bounded in bytes (pg_predict.cache_size; a program counts its serialized size,
// which is about what its tensors take once loaded): beyond it the least recently used idle
// programs are freed. Programs in use are never freed, so the cache may exceed it while a
// query holds them. Only records the number (safe in the postmaster); applied on the next
// insert or release.
void set_cache_limit(size_t bytes) noexcept;
size_t cached_program_bytes();
// What the cache counts for one program (its serialized size and a constant overhead).
size_t program_bytes(const Program*) noexcept;
size_t cached_program_count();

// What the cache holds of one model version (catalog row id): its programs (the stored one,
// strategy variants, decision_function / score_samples programs, GPU copies) and the bytes the
// cache counts for them. The cache keeps up to 65536 programs within pg_predict.cache_size (a
// model per tenant); cached_models reports at most kMaxCachedPrograms of them (the slots in
// shared memory that the model_stats view reads have that many records per backend).
constexpr size_t kMaxCachedPrograms = 1024;
struct CachedModel {
    int64_t id;
    int32_t programs;
    int64_t bytes;
};
// Fills `out` with one record per id in the cache (at most `capacity`); returns how many.
// Never allocates or throws.
size_t cached_models(CachedModel* out, size_t capacity) noexcept;
// Called after every change of what the cache holds (a program loaded, compiled, copied to the
// GPU or freed), from inside the runtime: it must not throw, and src/pg's listener must not
// raise a PostgreSQL error (it copies cached_models() into shared memory). nullptr: none.
using CacheListener = void (*)() noexcept;
void set_cache_listener(CacheListener listener) noexcept;

// bind_model tells the cache which catalog row is a model's current version after every
// lookup: the idle programs of the model's other versions (replaced, in this backend or
// another) are freed at once; nobody can bind them any more without a new lookup, and a
// snapshot that still sees an old version just loads it again.
void note_model_version(const char* name, int64_t id);
// drop_model: frees the idle programs of every version of `name`.
void forget_model(const char* name);

// Programs that run whole natively, without the TorchScript interpreter: those whose featurizer
// is one bucketize of their inputs before the trees (LightGBM's), and linear models fused into
// one kernel call with their link (scikit-learn's scale / impute / one-hot pipelines before a
// linear or logistic regression). A one-row call costs a few microseconds instead of 40-60.
// Off (tests only), such programs run their module as the others do; mapped ones (below) have
// none and stay native.
void set_native_programs(bool on) noexcept;

// Programs shared between backends (src/pg keeps one native image per model version in shared
// memory). A program that is the native kernel, its base margin and an elementwise link, with
// one group, on float32 inputs or after one bucketize, or a fused linear model (program_maps_natively), writes its image; another backend maps
// the image instead of loading the TorchScript archive: no module, nothing deserialized, views
// into the image. The image must stay mapped and unchanged until the unmap listener is told.
bool program_maps_natively(const Program*) noexcept;
bool program_native_image(const Program*, std::string* image);
// The image's length (0 when the program has none), and the image written to `out`, that
// many bytes, 64-byte aligned: straight into shared memory, nothing allocated, nothing thrown.
size_t native_image_length(const Program*) noexcept;
void write_native_image(const Program*, void* out) noexcept;
// Cached under (id, "") like load_program's, with a reference held; `mapping` is what the
// unmap listener is given when the cache frees the program. Error(InvalidModel) for a damaged
// image (nothing cached then, and the listener is not told).
Program* map_program(int64_t id, const void* image, size_t length, void* mapping);
using UnmapListener = void (*)(void* mapping) noexcept;
void set_unmap_listener(UnmapListener listener) noexcept;
// Whether the program was mapped and has no module (what needs one, a copy on the GPU,
// attach_module first: it loads the stored program's bytes beside the mapped views).
bool program_is_mapped(const Program*) noexcept;
void attach_module(Program*, const void* bytes, size_t length);

int program_output_width(const Program*);
// The columns a batch must have.
int64_t program_input_width(const Program*);
// Whether the program computes in float64 from its first step (featurizers, linear models,
// SVMs, ...): then give run_program a float64 batch, and float8 columns reach it unrounded.
// Tree models read float32 (their thresholds are float32).
bool program_reads_float64(const Program*);

// Where a program runs. A program loaded or compiled above is on the CPU.
enum class Device { Cpu, Cuda };

// Why CUDA cannot be used by this backend, or nullptr when it can: the library was built
// without CUDA (PG_PREDICT_CUDA=OFF), or no GPU is visible. The first call asks the CUDA
// driver, so call it in a backend, never in the postmaster.
const char* cuda_unavailable_reason();

// `program` placed on `device`, with a reference held (release it like the others). Cpu gives
// `program` itself; Cuda a copy moved to GPU 0 once per backend and cached beside it under
// (id, strategy, device). Throws Error(Unsupported) naming the reason when CUDA is unusable.
Program* acquire_on_device(Program* program, Device device);
Device program_device(const Program*);

// Host memory for the feature batches of a query that may score on the GPU, zeroed:
// page-locked (pinned) when CUDA is usable, so run_program copies it to the GPU directly
// instead of staging it; ordinary memory otherwise. Give it back with free_batch_buffer.
float* alloc_batch_buffer(size_t floats);
void free_batch_buffer(float*) noexcept;

// Run the program over a row-major rows × cols float32 batch; out gets rows × output_width.
// x and out are host memory for every device: a CUDA program stages the batch through pinned
// host buffers of its own and copies the outputs back before returning.
void run_program(Program*, const float* x, int64_t rows, int64_t cols, float* out);
// Names the model and its inputs (the row's columns, in the batch's order) for the errors that
// name an input: a featurized value beyond float32 (OutOfRange). The first call sets them.
void name_program_inputs(Program*, const char* model, const char* const* inputs, int count) noexcept;
// The same over a float64 batch (for program_reads_float64 programs; others get it rounded to
// float32 first).
void run_program(Program*, const double* x, int64_t rows, int64_t cols, float* out);

// Programs whose featurizer steps are the same (PRETZEL; runtime/shared_featurizer.cpp): models
// trained alike over one fitted ColumnTransformer, or the same train() encoding. Their
// featurizer is held once per backend, and program_featurizer names it (nullptr: the program
// shares none: no featurizer, a nested model, a GPU copy, a program compiled before).
const void* program_featurizer(const Program*) noexcept;
// The programs[i] share one featurizer; x holds rows[0] rows for programs[0], then rows[1] for
// programs[1], ... (float64, cols columns). Runs the featurizer once over all of them, then
// each program's rest over its rows: out gets rows[0] × output_width(programs[0]) values, then
// programs[1]'s, ...
void run_sharing_featurizer(Program* const* programs, const int64_t* rows, size_t count, const double* x,
                            int64_t cols, float* out);

// The per-row path's shortcut: whether run_one_row can score the program (a tree ensemble on
// the native kernel, no featurizers, an elementwise link; not GPU copies, nor programs stored
// before the compiler marked them with "one_row_link"), and one float32 row through it
// without torch: out gets output_width values, bit for bit what run_program gives for a
// batch of that one row.
bool program_scores_one_row(const Program*) noexcept;
void run_one_row(const Program*, const float* x, float* out);
// run_program over a float32 batch, where a batch of at most kFewRows rows (a one-row
// statement's, a small group) goes a row at a time through run_one_row if the program has it:
// the same bits, without a TorchScript call (20-60 µs) that would be most of such a statement.
constexpr int64_t kFewRows = 32;
void run_rows(Program*, const float* x, int64_t rows, int64_t cols, float* out);

// Dictionary encoding of text inputs: the model sees a text value as its index in the input's
// vocabulary (-1 when it is not there). Built once per model per query from
// BuiltModel::text_inputs_json; the lookups hash the bytes and never allocate or throw.
struct TextEncoder;
TextEncoder* make_text_encoder(const char* text_inputs_json, size_t length);
void free_text_encoder(TextEncoder*) noexcept;
// A backend keeps the encoders of the last few model versions it used (a vocabulary of 10^6
// terms takes a second to build): find_text_encoder gives model version `id`'s, or nullptr;
// keep_text_encoder hands a new one to the cache; both count a use that release_text_encoder
// ends. A version's text inputs never change, so the id is the key.
TextEncoder* find_text_encoder(int64_t id) noexcept;
void keep_text_encoder(int64_t id, TextEncoder*);
void release_text_encoder(TextEncoder*) noexcept;
int32_t encode_text(const TextEncoder*, int32_t input, const char* value, size_t length) noexcept;
// Whether a value missing from the vocabulary is an error (the encoder's handle_unknown).
bool unknown_text_is_error(const TextEncoder*, int32_t input) noexcept;
// Whether it is a missing value (NaN) rather than -1 (XGBoost's categories).
bool unknown_text_is_missing(const TextEncoder*, int32_t input) noexcept;
// Text read by a scikit-learn vectorizer (spec::TextVectorizer): at the vectorizer's first slot
// this gives its K slots (and `slots` points at them), at a later slot 0 (written with the
// first), and -1 where no vectorizer writes (a dictionary input).
int32_t text_vectorizer_slots(const TextEncoder*, int32_t input, const int32_t** slots) noexcept;
// The vectorizer at first slot `input` on one text value: its K projected values into out.
// Throws Error(InvalidParameter) for bytes that are not UTF-8.
void vectorize_text(TextEncoder*, int32_t input, const char* value, size_t length, double* out);
// A cascade's own projection of a model's vectorizer (create_cascade's small model reads the
// vectorizer's terms through its own weights): {"width", "term_begin", "column", "weight",
// "offset"} over the vectorizer at first slot `input`'s terms. Throws Error(InvalidModel).
struct TextProjection;
TextProjection* make_text_projection(const TextEncoder*, int32_t input, const char* json, size_t length);
void free_text_projection(TextProjection*) noexcept;
int32_t text_projection_width(const TextProjection*) noexcept;
// The vectorizer at first slot `input` on one text value, once: its K projected values into
// `out` (unless null) and p's into `extra`.
void vectorize_text_twice(TextEncoder*, int32_t input, const char* value, size_t length, double* out,
                          const TextProjection* p, double* extra);
// Its row as term indices and values (what create_cascade trains on), and its number of terms.
void vectorize_text_sparse(TextEncoder*, int32_t input, const char* value, size_t length,
                           std::vector<int64_t>& index, std::vector<double>& values);
int64_t text_vectorizer_width(const TextEncoder*, int32_t input) noexcept;
// Whether a vectorizer writes input `slot` (any of its slots).
bool is_vectorizer_slot(const TextEncoder*, int32_t slot) noexcept;
// explain_prediction's terms: the terms of one text value by |contribution| to input `slot` (a
// vectorizer's slot: the term's value in the row times its weight there), at most `top`, as a
// JSON array [{"term", "value", "attribution"}] (a hashed term is named "#index"); malloc'd,
// the caller free()s it. Throws Error(InvalidParameter) for bytes that are not UTF-8.
char* explain_text(TextEncoder*, int32_t slot, const char* value, size_t length, int32_t top);

// explain_model's body: a JSON object with the spec as stored (imported) and as compiled
// (optimizer::optimize), what each optimizer pass did, and the input columns read and not read.
// `columns` names the column of each input, `unused` lists the inputs the scan leaves out (the
// catalog's unused_features). The result is malloc'd; the caller free()s it.
char* explain_model(const char* name, const char* spec_json, size_t length,
                    const std::vector<std::string>& columns, const std::vector<int32_t>& unused);

// Gives the free pages of the C heap back to the system (glibc's malloc_trim). The backend keeps
// up to 64 MB it freed and serves blocks up to 32 MB from its heap, so that scoring does not
// fault in fresh pages for every op (program.cpp); but create_model frees hundreds of MB of
// JSON, spec and catalog tuples at once, and without this a backend's private memory crept up
// by 2 MB per create / drop cycle of a 2000-tree model. A few ms; call it after such work, never
// per batch. Never throws.
void release_free_memory() noexcept;

// The early exit of threshold and top-K queries (issue 15 §2, kernels/tree_bounds.hpp).
// Whether output column `column` of the program is a monotone function of one tree-ensemble
// margin that screen_rows can bound: a program_scores_one_row program with one output group
// (binary classifiers, regressors; not softmax, not featurizers, not GPU copies).
bool program_screens_column(const Program*, int column) noexcept;
struct ScreenStats {
    int64_t rows = 0;         // rows screened
    int64_t tree_visits = 0;  // trees the screen evaluated, over all rows
    int64_t outside = 0;      // rows certain to fall outside the interval
    int64_t inside = 0;       // rows certain to fall inside it
    int64_t early = 0;        // of those, rows decided before every tree was walked
    int64_t trees = 0;        // trees of the model
    int64_t stage_rows = 0;   // rows entering a stage of the screen, summed over its stages
    double rank_trees = 0;    // what turning one row's features into ranks costs, in tree visits
};
// What screen_rows says of a row.
enum ScreenVerdict : uint8_t { kScreenOutside = 0, kScreenUndecided = 1, kScreenInside = 2 };
// For rows [0, rows) of a float32 batch: verdict[r] = kScreenOutside when output `column` of row
// r, as run_program computes it, is certain to lie outside [lower, upper]; kScreenInside when it
// is certain to lie strictly inside it; kScreenUndecided otherwise (score the row). Either end may be infinite. Allowances for
// float32 rounding make both answers conservative. Builds the staged trees on first use.
void screen_rows(Program*, const float* x, int64_t rows, int64_t cols, int column, double lower, double upper,
                 uint8_t* verdict, ScreenStats* stats);
// The outputs of the rows of a batch whose verdict is kScreenUndecided, bit for bit what
// run_program gives them in that batch, into their rows of `out` (rows × output_width; other
// rows are left as they are): the kernel scores only those rows, then the base margin and the
// link are applied as the program applies them (ops.pg_predict.logistic: the same bits at every
// position of a batch, kernels/logistic.hpp).
void score_undecided_rows(Program*, const float* x, int64_t rows, int64_t cols, const uint8_t* verdict, float* out);

// A batch in two halves, so the trees can be walked on the background thread while the
// backend reads the next batch (kernels/background.hpp; src/exec/overlap.cpp). Only for
// programs that program_splits: a program_scores_one_row program with one output group, on the
// CPU, reading float32. start_background_kernel hands the kernel's margins (rows floats) to the
// background thread on pg_predict.threads - 1 threads and returns (false: the thread is busy,
// nothing started); x and margins must live until finish_background_kernel, which waits (the
// calling thread joins the kernel's row blocks), rethrows its error and returns the kernel's
// time in ms. abandon_background_kernel
// waits and drops the error (for unwinding). run_program_tail then gives out (rows ×
// output_width) from the margins, bit for bit what run_program gives for the batch.
bool program_splits(const Program*) noexcept;
bool start_background_kernel(const Program*, const float* x, int64_t rows, int64_t cols, float* margins);
double finish_background_kernel();
void abandon_background_kernel() noexcept;
void run_program_tail(Program*, float* margins, int64_t rows, float* out);

// The native tree kernel's path (pg_predict.cpu_kernel): "auto", "avx512", "avx2", "neon" or
// "portable". The CPU is probed once per process; none of these touch torch (the postmaster
// may call them) or throw.
// Whether this build and CPU can run `name` ("auto": always; an unknown name: false).
bool cpu_kernel_available(const char* name) noexcept;
// The paths this build and CPU can run, e.g. "portable, avx512" (a static string).
const char* available_cpu_kernels() noexcept;
// Makes `name` the path of every later native-kernel call in this process; an unavailable or
// unknown name leaves the current one (the setting's check hook refuses those first).
void set_cpu_kernel(const char* name) noexcept;

// pg_predict.bitvector_layout: whether the native kernel scores with the bitvector (QuickScorer)
// layout where a model has it, and whether this build has it at all (PG_PREDICT_BITVECTOR).
void set_bitvector_layout(bool on) noexcept;
bool bitvector_layout_built() noexcept;
// The path a native-strategy model of this shape scores with now: for the perfect layout the one
// "auto" (or the setting) resolves to; "bitvector (avx2)" or "bitvector (portable)" for the
// bitvector layout (leaf-wise and deep trees); "generic" for the scalar loop over explicit
// nodes. layout: the summary's ("" for a model stored before it was recorded: then by shape).
const char* native_cpu_kernel(int depth, int num_features, const char* layout) noexcept;

// Intra-op threads for this backend; applied lazily before the next run, never in the
// postmaster.
void set_num_threads(int threads);

// Predicate-based pruning (issue 15 §3; optimizer/specialize.hpp). What a query's WHERE clause
// guarantees about one input of the rows it scores: a number in [lo, hi] (when `values`) or
// missing (when `missing`), as the model reads it; or, for a text input, the values it may
// have (`=`, `IN`), looked up in the input's vocabulary here.
struct InputBound {
    int32_t input = 0;
    double lo = 0, hi = 0;
    bool values = true;
    bool missing = true;
    bool is_text = false;
    std::vector<std::string> texts;
};
// A canonical text of the bounds (exact numbers, ordered by input): the plan keeps it, and it
// keys the specialized programs.
std::string encode_bounds(const std::vector<InputBound>& bounds);

// What specializing model `id` for `bounds` does, for the planner and EXPLAIN: whether any tree
// node was decided (else the stored program serves), the node counts, and the inputs the
// specialized program does not read (the scan leaves their columns out). Load the model's spec
// first (once per backend per version: kept for the last few). Results are kept per backend.
struct SpecializationSummary {
    bool pruned = false;
    int32_t trees = 0;
    int64_t nodes_before = 0;
    int64_t nodes_after = 0;
    std::vector<int32_t> unused_inputs;
};
bool specialization_spec_loaded(int64_t id);
void load_specialization_spec(int64_t id, const char* spec_json, size_t length);
SpecializationSummary plan_specialization(int64_t id, const std::string& bounds);

// The program of model `id` specialized for `bounds`, compiled with `strategy` (the model's
// own, or pg_predict.strategy's), cached per backend under (id, strategy, bounds) like a variant.
Program* acquire_cached_specialized(int64_t id, const char* strategy, const std::string& bounds);
Program* compile_specialized(int64_t id, const char* strategy, const std::string& bounds, const char* spec_json,
                        size_t length);

}  // namespace pg_predict::runtime
