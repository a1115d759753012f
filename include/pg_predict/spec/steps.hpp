// The featurizer steps' parameters, shapes and plain (double precision) evaluation, shared by
// validation, the reference evaluator, the compiler and the importers.
//
// The ops and their params (numbers are JSON numbers; NaN and ±inf are the strings "NaN",
// "Infinity", "-Infinity"):
//   affine   {"scale": [w], "offset": [w]}            y = x * scale + offset       (width w → w)
//   impute   {"statistics": [w], "missing_value": m}  y = missing(x) ? statistic : x (w → w)
//            (a text column stays text: its statistic is a vocabulary index); missing(x) is
//            isnan(x), or with a finite m (optional, default NaN: scikit-learn's missing_values
//            = a number) x == m or isnan(x): a NULL stays missing, where scikit-learn raises
//   one_hot  {"categories": [[c, ...] per column], "drop": [d per column]}
//            per column, one 0/1 per category except category d (d = -1: none dropped);
//            x matches c when x == c or both are NaN; no match gives zeros (w → Σ kept)
//   ordinal  {"categories": [[c, ...] per column], "unknown_value": u, "missing_value": m}
//            per column the index of the matching category, m when the matching category is
//            NaN, u when none matches                                          (w → w)
//   elementwise {"function": f}                      y = f(x), numpy's ufunc f per entry (w → w);
//            f is one of elementwise_functions() (numpy names: log1p, sqrt, absolute, rint, ...),
//            NaN in gives NaN out, domain errors give NaN / ±inf as numpy does; also expit
//            (1 / (1 + e^-x)) and relu (max(x, 0)), the activations of scikit-learn's MLPs, and
//            zero_as_missing (NaN where |x| <= kLightgbmZero, LightGBM's missing zeros)
//   threshold {"threshold": t}                        y = x > t ? 1 : 0 (NaN → 0)  (w → w)
//   clip     {"min": a, "max": b}                     y = min(max(x, a), b), a <= b finite, NaN
//            stays NaN (numpy's clip; MinMaxScaler(clip=True))               (w → w)
//   is_missing {"missing_value": m}                   y = missing(x) ? 1 : 0, as impute's (w → w)
//   normalize {"norm": "l1" | "l2" | "max"}          y = x / ‖x‖ over the row (a zero norm
//            leaves the row unchanged; max is the largest |x|)                 (w → w)
//   project  {"matrix": [[w] × k], "offset": [k]}    y = x · matrixᵀ + offset     (w → k)
//   bucketize {"edges": [[e, ...] per column], "side": "right" | "left"}
//            per column the number of edges <= x (side "right", the default: numpy searchsorted
//            side="right"), or < x (side "left": then x <= edges[j] exactly when the count is
//            <= j, LightGBM's split on a double); edges sorted ascending; NaN stays NaN (w → w)
//   monomials {"powers": [[p] × w] × k}               y_k = Π_j x_j ^ powers[k][j], p >= 0
//            integers (x^0 = 1, NaN included)                                   (w → k)
//   kernel   {"support_vectors": [[w] × n], "kernel": k, "gamma": g, "coef0": c, "degree": d}
//            y_r = K(x, sv_r), libsvm's kernels: linear x·s, rbf exp(-g‖x - s‖²),
//            poly (g x·s + c)^d, sigmoid tanh(g x·s + c)                        (w → n)
//   neighbors {"points": [[w] × n], "targets": [[c] × n], "k": k, "p": p >= 1,
//            "weights": "uniform" | "distance"}
//            y = Σ weight_i targets_i / Σ weight_i over the k points nearest to x (Minkowski
//            distance (Σ |x - s|^p)^(1/p) summed directly: 1 manhattan, 2 euclidean, "Infinity"
//            the largest difference (chebyshev)), equal distances taking
//            the lower point index first; weight 1 (uniform) or 1 / d (distance; a row with a
//            zero distance weighs its exact matches 1 and the others 0, as scikit-learn); a row
//            with NaN or ±inf gives NaN; n × w at most kMaxNeighborsValues            (w → c)
//   power    {"method": "yeo-johnson" | "box-cox", "lambdas": [w]}  scikit-learn's PowerTransformer
//            per column with its lambda: yeo-johnson ((x+1)^l - 1)/l for x >= 0 (log1p at l = 0),
//            -((1-x)^(2-l) - 1)/(2-l) below (-log1p(-x) at l = 2); box-cox scipy's
//            expm1(l log x)/l (log x at |l| < 1e-19), NaN for x <= 0 (scikit-learn refuses
//            it); NaN stays NaN                                                 (w → w)
//   quantile {"quantiles": [[n] per column], "references": [n], "output": "uniform" | "normal"}
//            scikit-learn's QuantileTransformer: the mean of numpy's interp over (quantiles,
//            references) from below and from above (equal quantiles), 0 / 1 at the bounds
//            (uniform: x equal to the first / last quantile; normal: within 1e-7 of them or
//            beyond), then for normal the normal quantile function clipped to
//            ±ndtri(1e-7 - eps); n >= 2 ascending; NaN stays NaN                   (w → w)
//   tensor   {"function": f, "operands": [[i, ...] per operand], "constants": [c, ...], "group": k}
//            the ONNX importer's general lowering of a node no other step computes. Each operand
//            lists entries of [x | constants] (i < w: column i of x; w + j: constants[j], which
//            is optional). By f's family (tensor_functions()):
//            binary (add sub mul div pow min max less less_equal greater greater_equal equal
//            and or xor): two operands of n entries, y_i = f(a_i, b_i); comparisons and logic
//            give 1 / 0 (NaN compares false; nonzero is true); min / max keep NaN as numpy (w → n)
//            where: three operands (condition, then, else), y_i = c_i != 0 ? a_i : b_i   (w → n)
//            reduce (reduce_sum mean max min prod log_sum_exp sum_square l1 l2, argmax argmin):
//            one operand of g groups of "group" k consecutive entries, one value per group;
//            argmax / argmin the first index of the extreme, NaN counting as largest     (w → g)
//            softmax / log_softmax: the same groups, each group's softmax            (w → g k)
//            softmax_zero: ONNX ML's SOFTMAX_ZERO post transform, a softmax of each group's
//            entries with |v| > 1e-7; the others become v · exp(-max), about 0       (w → g k)
//            sort_descending / sort_ascending / argsort_*: each group sorted, stable (equal
//            values keep their order; NaN the largest), its values or their indices   (w → g k)
//            take: two operands, n indices and n · k candidates ("group" k): y_i is candidate
//            index_i of entry i's k (a negative index counts from the end; NaN, a fraction or an
//            index out of range gives NaN)                                          (w → n)
//            coupling (pairwise_coupling): one operand of g groups of k × k entries, each a
//            matrix r of pairwise probabilities (r_ij: class i over j; the diagonal unread),
//            "group" k; each group's k class probabilities by libsvm's pairwise coupling
//            (multiclass_probability, Wu, Lin and Weng 2004), as ONNX Runtime's SVMClassifier
//            computes them: 100 iterations at most, stopping within 0.005 / k     (w → g k)
//   concat   parts: each reads `columns` of the input and applies its steps; outputs are
//            concatenated in order
//   model    {"pipeline": <a whole spec, as to_json writes it>, "output": o}  a nested pipeline
//            (an ensemble's member: VotingClassifier, Bagging*, Stacking*) over the step's
//            input (its features are the input's columns; numbers only, no text inputs) and
//            its result: o = "predict" (predict_proba's columns, or a regressor's value),
//            "decision_function" (a linear estimator's margins x · coefᵀ + intercept, one per
//            group) or "label" (one-hot of the predicted class, the first of equal maxima: a
//            column per class; all NaN where the scores have a NaN). Compiled as a submodule
//            of the program                                                   (w → its width)
// and the estimator op:
//   linear   {"coef": [[f] × k], "intercept": [k]}   margin = x · coefᵀ + intercept (f → k)
//   torchscript {"inputs": f, "outputs": k}        a user's TorchScript module (the program is the
//            module; the spec holds its shape only)                             (f → k)
//
// Text inputs arrive as indices into their vocabulary (NaN for NULL, -1 unknown), and may only
// be read by one_hot, ordinal or impute, whose categories for them are vocabulary indices (or NaN).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pg_predict/spec/featurizers.hpp"

namespace pg_predict::spec {

// JSON form of a parameter number (non-finite → string).
nlohmann::json number_to_json(double);
nlohmann::json numbers_to_json(const std::vector<double>&);
nlohmann::json matrix_to_json(const std::vector<std::vector<double>>&);  // an array of rows

// Readers; each throws Error(InvalidModel) naming `where` and the key.
double param_number(const nlohmann::json& v, const std::string& field);
double param_number(const Step&, const char* key, const std::string& where);
std::vector<double> param_vector(const Step&, const char* key, const std::string& where);
std::vector<std::vector<double>> param_matrix(const Step&, const char* key, const std::string& where);
std::vector<int32_t> param_ints(const Step&, const char* key, const std::string& where);

// The functions op elementwise knows, and one of them applied to x (throws
// Error(InvalidModel) for an unknown name).
const std::vector<std::string>& elementwise_functions();
bool is_elementwise_function(const std::string& name);
double apply_elementwise(const std::string& name, double x);
// ONNX ML's PROBIT post transform as ONNX Runtime and the ONNX reference compute it ("onnx_probit"):
// sqrt(2) · erfinv(2x - 1) with Winitzki's approximation of erfinv (a = 0.147), within 2e-3 of the
// exact normal quantile.
double onnx_probit(double x);
// ONNX LeakyRelu's default alpha (an elementwise "leaky_relu" step without one).
constexpr double kLeakyReluAlpha = 0.01;
// One value of op quantile: x through one column's `quantiles` and the `references` (above).
double apply_quantile(const std::vector<double>& quantiles, const std::vector<double>& references, bool normal,
                      double x);
// The standard normal quantile function (scipy's ndtri), to double precision.
double normal_quantile(double p);
// One value of op power: `x` transformed with `lambda` by `method` (above).
double apply_power(const std::string& method, double lambda, double x);

// Op tensor's functions, by family (above), and a step's parameters read and checked for type.
enum class TensorFamily { Binary, Where, Reduce, Grouped, Take, Coupling };
struct TensorFunction {
    const char* name;
    TensorFamily family;
};
const std::vector<TensorFunction>& tensor_functions();
const TensorFunction* find_tensor_function(const std::string& name);  // nullptr when unknown
struct TensorStep {
    std::string function;
    TensorFamily family = TensorFamily::Binary;
    std::vector<std::vector<int32_t>> operands;
    std::vector<double> constants;
    int64_t group = 1;
};
TensorStep read_tensor_step(const Step&, const std::string& where);
// A binary tensor function on two numbers.
double apply_binary(const std::string& function, double a, double b);
// A reduce-family tensor function over k numbers (argmax / argmin: the first index of the
// extreme, NaN counting as the largest, as numpy and torch do).
double apply_reduction(const std::string& function, const double* x, size_t k);
// libsvm's multiclass_probability: the k class probabilities p of the k × k pairwise
// probabilities r (row-major; tensor function pairwise_coupling). NaN in r gives NaN.
void pairwise_coupling(const double* r, size_t k, double* p);
// The same with the caller's scratch of k·k + k doubles: a loop over rows allocates nothing.
void pairwise_coupling(const double* r, size_t k, double* p, double* scratch);
// softmax_zero's threshold: entries with |v| at most this are zeros (ONNX Runtime's 0.0000001f).
constexpr double kSoftmaxZero = static_cast<double>(0.0000001f);

// LightGBM's kZeroThreshold (a float32 1e-35 compared as a double): |x| at most this is zero.
constexpr double kLightgbmZero = static_cast<double>(1e-35f);

// The number impute and is_missing treat as missing besides NaN: "missing_value" (finite), or
// NaN when the step has none (NaN only).
double missing_marker(const Step&, const std::string& where);

// Whether a bucketize step counts the edges <= x (side "right", also when absent) rather than
// the edges < x (side "left"); throws Error(InvalidModel) for another side.
bool bucketize_counts_equal(const Step&, const std::string& where);

// Checks a list of steps against the vector it reads and returns the output width.
// `vocab` has one entry per input column: -1 for a number, else the vocabulary size of the
// text input the column carries; on return it describes the output columns. Throws
// Error(InvalidModel) naming the step ("steps[2].parts[0].steps[1]: ...").
int32_t check_steps(const std::vector<Step>& steps, std::vector<int32_t>& vocab, const std::string& where);
// The same for one step (`where` names it).
int32_t check_step(const Step& step, std::vector<int32_t>& vocab, const std::string& where);

// Plain evaluation of the steps on one row.
std::vector<double> apply_steps(const std::vector<Step>& steps, std::vector<double> row);

}  // namespace pg_predict::spec
