// The torch-free intermediate form of a compiled program: named constant tensors plus
// TorchScript source. Strategy files produce it without including torch (a torch TU costs
// ~25 s and 1.3 GB to compile); module_builder.cpp alone turns it into a torch::jit::Module.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "pg_predict/compiler/compile.hpp"
#include "pg_predict/compiler/strategy.hpp"
#include "pg_predict/kernels/linear_margin.hpp"
#include "pg_predict/spec/pipeline.hpp"

namespace pg_predict::compiler {

enum class DType { Float32, Int64, Int32, Bool, Float64 };

// A constant tensor that becomes a module buffer `self.<name>`. Exactly one of the data
// vectors is filled, matching dtype, with product(shape) elements (row-major).
struct Buffer {
    std::string name;
    DType dtype = DType::Float32;
    std::vector<int64_t> shape;
    std::vector<float> f32;
    std::vector<int64_t> i64;
    std::vector<int32_t> i32;
    std::vector<uint8_t> b8;
    std::vector<double> f64;

    int64_t numel() const;
    int64_t nbytes() const;
};

struct ProgramParts {
    std::vector<Buffer> buffers;
    // TorchScript method definitions. A strategy defines
    //   def margin(self, x: Tensor) -> Tensor      # [N, F] -> [N, num_groups], sum of trees
    // and postprocess adds forward(), which applies chunking, base margin and the link.
    std::string source;
    // Rows per call of margin() (0 = the whole batch at once): bounds the intermediate
    // tensors of strategies whose memory grows with rows × trees × nodes.
    int64_t chunk_rows = 0;
    int64_t num_features = 0;
    int64_t output_width = 0;
    // The program's first step makes the batch float64 (featurizers, linear models): it reads
    // a float64 batch as is, so float8 columns reach it unrounded.
    bool reads_float64 = false;
    // margin() is the native kernel's op over the whole batch (build_native).
    bool native_margin = false;
    // Set by add_postprocess when forward() is just the native margin, the base margin and
    // this link (spec::transform_name): the runtime may then score one row through the kernel
    // itself (runtime/row_shortcut.cpp). Saved as the module attribute "one_row_link".
    std::string one_row_link;
    // The same for from_features() (saved as "from_features_link"): the native margin, the base
    // margin and this link over the featurized rows.
    std::string from_features_link;
    // A linear model fused into ops.pg_predict.linear_margin (linear_models.cpp) whose output is
    // its link alone, in float64 then rounded to float32: the runtime runs the kernel and the
    // link itself (saved as "linear_link"; Identity, Logistic, TwoSided or Complement).
    std::string linear_link;
    // Programs of op model's nested pipelines (name, serialized module): module_builder loads
    // each and registers it as the submodule self.<name>, which the source calls.
    std::vector<std::pair<std::string, std::string>> submodules;
    // What build_featurizers wrote: the source of featurize() (and featurize_rows()) and the
    // names of its buffers. When forward() is from_features(featurize(x)) (set by the file
    // that writes forward), module_builder saves both as the module attributes
    // "featurizer_source" and "featurizer_buffers": models whose featurizers are the same
    // (same source, same buffer contents) then share them in a backend (runtime's
    // shared_featurizer.cpp) and a batch runs them once for all such models (PRETZEL).
    std::string featurizer_source;
    std::vector<std::string> featurizer_buffers;
    bool from_features = false;

    int64_t total_bytes() const;
};

// Programs whose constant tensors exceed this are refused rather than built.
constexpr int64_t kMaxProgramBytes = int64_t(1) << 30;

// --- strategies: each fills `parts` with buffers and a margin() method -------------------
void build_gemm(const spec::TreeEnsemble&, ProgramParts& parts);
void build_tree_traversal(const spec::TreeEnsemble&, ProgramParts& parts);
void build_perfect_tree_traversal(const spec::TreeEnsemble&, ProgramParts& parts);
// Packs the ensemble for the native kernel into buffers; margin() calls
// ops.pg_predict.tree_ensemble (module_builder defines the source with a resolver for `ops`).
void build_native(const spec::TreeEnsemble&, ProgramParts& parts);

// --- shared pieces -----------------------------------------------------------------------
// A buffer of T (float, int64_t, int32_t, uint8_t for Bool, double; instantiated in parts.cpp);
// throws Error(Internal) when data does not hold product(shape) elements.
template <typename T>
Buffer make_buffer(std::string name, std::vector<int64_t> shape, std::vector<T> data);
// The same under the names the strategies use.
inline constexpr auto& make_f32 = make_buffer<float>;
inline constexpr auto& make_i64 = make_buffer<int64_t>;
inline constexpr auto& make_i32 = make_buffer<int32_t>;
inline constexpr auto& make_bool = make_buffer<uint8_t>;
inline constexpr auto& make_f64 = make_buffer<double>;

// --- featurizers and non-tree estimators (featurizer_steps.cpp and its family files, linear_models.cpp) -------------------
// Defines featurize(self, x: Tensor) -> Tensor: the pipeline's steps over the float32 input
// [N, input_width], computed in float64 (as scikit-learn does) → [N, model.num_features]
// float64. With no steps it is x.double().
// When an intermediate is wide (kernel values, many one-hot columns, ...), featurize() runs
// featurize_rows() over row chunks so no temporary exceeds ~1 MB.
void build_featurizers(const spec::Pipeline&, ProgramParts& parts);
// The whole forward() of a pipeline whose estimator is "linear": featurize, addmm and the link
// in float64, cast to float32 at the end. With `strategy` auto or native, a one-output model
// over the featurizers linear_margin_terms accepts takes the fused native op on the CPU.
void build_linear(const spec::Pipeline&, ProgramParts& parts, Output output, Strategy strategy);
// Whether the pipeline's steps are the shape kernels::linear_margin computes (fused_margin.cpp:
// a concat of parts, each an optional impute then an optional one_hot or affine), and then its
// terms with `coef` (one output's weights) as their weights.
bool linear_margin_terms(const spec::Pipeline&, const std::vector<double>& coef,
                         std::vector<kernels::LinearTerm>& terms);
// decision_function of SVC / NuSVC (svc_decision.cpp): the pairwise decision values before the
// one-vs-one vote, as scikit-learn shapes them.
void build_svc_decision(const spec::Pipeline&, ProgramParts& parts);
// predict_contributions (contributions.cpp): the whole forward() of a tree ensemble (TreeSHAP)
// or linear model; check_contributions refuses (Unsupported, naming why) what it cannot explain.
void build_contributions(const spec::Pipeline&, ProgramParts& parts);
void check_contributions(const spec::Pipeline&);
int contributions_width(const spec::Pipeline&);
// The rows whose margin has no value (missing_rows.cpp): a TorchScript expression over the trees'
// input `x` for a [N, 1] bool mask of the rows with a NaN in one of the ensemble's
// inputs_without_missing_rule, or "" where it lists none. Adds the buffer "missing_inputs" (the
// list, int64), which the runtime's native paths read too (runtime/missing_rows.cpp).
std::string missing_rows_mask(const spec::TreeEnsemble&, ProgramParts& parts);
// Whether the pipeline is scikit-learn's SVC or NuSVC (outputs.cpp).
bool is_svc(const spec::Pipeline&);
// The whole forward() of a transformer (Task::Transform): the featurized columns.
void build_transformer(const spec::Pipeline&, ProgramParts& parts);

// TorchScript lines that reduce `per_tree` [N, T] (one leaf value per tree) into `margin`
// [N, G]; adds the tree → group buffer to `parts` when there is more than one group.
std::string reduce_trees_source(const spec::TreeEnsemble&, ProgramParts& parts,
                                const std::string& indent);

// How split tests are written. When every internal threshold is finite, missing values are
// folded into the inputs instead of tested per node: margin() first builds
//   xa = [x with NaN → -inf | x with NaN → +inf]   ([N, 2F])
// and a node reads column f (NaN goes left) or F + f (NaN goes right), which turns
// where(isnan(v), default_left, v < t) into plain v < t — two fewer gathers per level.
// Otherwise (an infinite or NaN threshold) xa = x and the default is looked up per node.
struct SplitCode {
    spec::Comparison comparison = spec::Comparison::Less;
    bool folded = false;
    int64_t num_features = 0;
};
SplitCode split_code(const spec::TreeEnsemble&);

// The input column a node reads.
int64_t split_column(const SplitCode&, int32_t feature, bool default_left);
// `indent` + "xa = ..." line.
std::string inputs_source(const SplitCode&, const std::string& indent);
// Boolean expressions over values `v`, thresholds `t` and (unfolded only) default-left flags
// `d`; exactly the reference's decisions.
std::string go_left_expr(const SplitCode&, const std::string& v, const std::string& t,
                         const std::string& d);
std::string go_right_expr(const SplitCode&, const std::string& v, const std::string& t,
                          const std::string& d);

// `table`[idx] for an [n, T] index tensor (index_select: faster than take or gather here).
std::string lookup_expr(const std::string& table, const std::string& idx, int64_t trees);

// Rows per margin() call that keep [rows × trees] intermediates cache-sized.
int64_t traversal_chunk_rows(int64_t trees);

// Adds forward(): margin over row chunks, + base margin, post transform.
void add_postprocess(const spec::Pipeline&, ProgramParts& parts, Output output);

// Throws Error(InvalidParameter) if constants of `bytes` exceed kMaxProgramBytes. Strategies
// call it with their estimate before allocating anything.
void check_program_bytes(int64_t bytes, Strategy);

// TorchScript lines applying the pipeline's link to the margins `m` (float32 for trees,
// float64 for linear models) into `r`: shared by add_postprocess and build_linear.
std::string link_source(const spec::Pipeline&);
// The same for decision_function / score_samples (outputs.cpp; Output::Predict: link_source).
// The margin `m` has its base margin added, except for an isolation forest's scores.
std::string output_source(const spec::Pipeline&, Output output);
// The columns that output gives (Output::Predict: spec::transformed_width).
int output_width(const spec::Pipeline&, Output output);
// Whether forward() adds the base margin to the margin before output_source.
bool adds_base_margin(const spec::Pipeline&, Output output);

// The TorchScript line that sets `to` to the featurized `from` as the float32 trees read, an
// error (kFloat32OverflowMarker) where a value is beyond float32, as scikit-learn raises there
// (ops.pg_predict.float32_for_trees; the inputs themselves are finite: the server refuses
// ±Infinity).
std::string trees_read_float32(const std::string& to, const std::string& from);

// Torch side (module_builder.cpp): build the module and serialize it.
std::string build_module(const ProgramParts&);

}  // namespace pg_predict::compiler
