// What the runtime's files share: the Program record (torch-free; the loaded module sits
// behind an opaque pointer owned by program.cpp) and the pending thread request.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pg_predict/kernels/linear_margin.hpp"
#include "pg_predict/kernels/tree_bounds.hpp"
#include "pg_predict/kernels/tree_ensemble.hpp"
#include "pg_predict/runtime/api.hpp"
#include "pg_predict/spec/pipeline.hpp"

namespace pg_predict::runtime {

struct LoadedModule;  // defined in program.cpp, the runtime's only torch file

struct Program {
    int64_t id = 0;
    std::string strategy;    // "" for the stored program, else the variant's strategy name
    Device device = Device::Cpu;
    int refs = 0;
    uint64_t last_used = 0;  // cache clock tick, for LRU eviction
    // The cache's list of idle programs (refs == 0), least recently released first.
    Program* idle_prev = nullptr;
    Program* idle_next = nullptr;
    bool idle = false;
    int64_t num_features = 0;
    int output_width = 0;
    // For errors that name an input (name_program_inputs): the model and its input columns.
    std::string model_name;
    std::vector<std::string> input_names;
    bool reads_float64 = false;  // the batch may be float64 (programs built before: float32)
    bool native_ops = false;     // calls torch.ops.pg_predict.* (those run on pg_predict's pool)
    double ns_per_row = 0;   // measured cost of a row, sizes the row chunks (program.cpp)
    size_t bytes = 0;        // what the cache counts against pg_predict.cache_size
    size_t shared_bytes = 0; // its featurizer's buffers, held once for programs sharing them
    LoadedModule* module = nullptr;
    // row_shortcut.cpp: set at load for a program that is the native kernel, the base margin and
    // an elementwise link (its "one_row_link" attribute); views into the module's buffers.
    bool one_row = false;
    // The same for the rest of a program after its featurizer (its "from_features_link"
    // attribute): run_sharing_featurizer scores featurized rows through the kernel itself.
    bool native_rest = false;
    // A featurizer that is one bucketize of the batch (LightGBM's programs: the compiler's
    // emit_bucketize) runs natively (run_bucketized), so with native_rest the program needs no
    // interpreter at all. Views into the module's buffers (or a mapped image).
    bool bucketizes = false;
    const double* bucket_edges = nullptr;  // num_features × bucket_stride, each padded with +inf
    const int64_t* bucket_counts = nullptr;  // num_features: the real edges of each column
    int64_t bucket_stride = 0;
    bool bucket_right = false;
    // A linear model fused into one ops.pg_predict.linear_margin call and its link (the
    // module's "linear_link" attribute: scikit-learn's scale / impute / one-hot pipelines before
    // a linear or logistic regression) runs whole natively (run_linear). `link` is its link;
    // linear_packed views the module's (or a mapped image's) terms, linear_terms unpacks them.
    bool linear = false;
    const double* linear_packed = nullptr;
    int64_t linear_count = 0;
    std::vector<kernels::LinearTerm> linear_terms;
    double linear_intercept = 0.0;
    // The trees' inputs where a missing value has no rule (the module's buffer "missing_inputs",
    // compiler/missing_rows.cpp): each native path gives a row with a NaN in one of them a NaN
    // margin, as forward() does (missing_rows.cpp). Empty for most models.
    std::vector<int32_t> missing_inputs;
    kernels::PackedView native;
    // The packed ensemble's header (make_view's meta), beside `native`: what native_image.cpp
    // writes out with its arrays.
    const int64_t* native_meta = nullptr;
    int64_t native_meta_size = 0;
    // The arrays' whole lengths (nodes, leaves, cuts, aux): make_view narrows `native` to the
    // part it reads (the generic part of a bitvector packing, for one), the image keeps all.
    int64_t native_lengths[4] = {0, 0, 0, 0};
    const void* native_arrays[4] = {nullptr, nullptr, nullptr, nullptr};
    // native_image.cpp: a program mapped from its native image (another backend's load, in
    // shared memory) has no module; `mapping` is handed to the unmap listener when it is freed.
    bool mapped = false;
    void* mapping = nullptr;
    const float* base_margin = nullptr;
    spec::PostTransform link = spec::PostTransform::Identity;
    // screen.cpp: the one-row program's trees staged for the early exit, on first use.
    std::unique_ptr<kernels::StagedEnsemble> staged;
};

// row_shortcut.cpp: the links run_one_row applies itself (output_width decides [1 - p, p]); false
// for the others, which keep a program on the interpreter.
constexpr int kMaxOneRowGroups = 64;
bool one_row_link(const std::string& name, int groups, int output_width, spec::PostTransform* link);
// One row (of the kernel's inputs) through p->native, the base margin and the link; run_one_row
// without its check (native_rest programs use it on featurized rows).
void score_row_natively(const Program* p, const float* x, float* out);

// row_shortcut.cpp: one row's link over its margins m (groups values, in float32 for trees or
// float64 for linear programs), written as the program's float32 outputs (width of them).
template <typename T>
void apply_link(spec::PostTransform link, int groups, int width, const T* m, float* out);

// missing_rows.cpp: the margins (`groups` per row) of the rows of x with a NaN in one of
// p->missing_inputs become NaN; the screen's verdict on such a row is "undecided", so it is
// scored.
void mask_missing_margins(const Program* p, const float* x, int64_t rows, int64_t cols, float* margins, int groups);
void undecide_missing_rows(const Program* p, const float* x, int64_t rows, int64_t cols, uint8_t* verdict);

// program.cpp: deserialize bytes (Error(Runtime) on failure) / free a loaded module.
LoadedModule* load_module(const void* bytes, size_t length, Program& shape);
void free_module(LoadedModule*);
// A copy of a CPU module on `device` (Error(Runtime) on failure); the original is untouched.
LoadedModule* copy_module_to_device(const LoadedModule*, Device);

// program.cpp: a bucketizes program's batch (float64 rows) natively: bucketize, the kernel, the
// base margin and the link; what its TorchScript forward computes, bit for bit.
void run_bucketized(Program* p, const double* x, int64_t rows, int64_t cols, float* out);
// A linear program's batch (float32 or float64 rows) natively: the kernel, then the link in
// float64 rounded to float32; what its TorchScript forward computes, bit for bit.
void run_linear(Program* p, const float* x, int64_t rows, int64_t cols, float* out);
void run_linear(Program* p, const double* x, int64_t rows, int64_t cols, float* out);
// Whether run_program takes run_bucketized and run_linear for such programs (on; the unit tests
// turn it off to compare with the interpreter). Mapped programs have no module: always native.
extern bool native_programs;
// Whether p runs whole natively now (bucketizes or linear, on the CPU).
bool runs_natively(const Program* p) noexcept;

// native_image.cpp: p's native part from a native image (program_native_image's), viewed in
// place; Error(InvalidModel) when the image is damaged.
void read_native_image(const void* image, size_t length, Program& p);

// threads.cpp: the thread count asked for since the last call, or 0 if none.
int take_thread_request();

}  // namespace pg_predict::runtime
