// The column-by-column featurizer steps (spec/steps.hpp documents each op): affine, impute,
// threshold, clip, is_missing, bucketize and elementwise, where output column c is a function of
// input column c alone. Each op's shape check and its double-precision evaluation sit side by
// side; spec/steps.cpp dispatches to them.
#include <cmath>
#include <string>
#include <vector>

#include "pg_predict/common/error.hpp"
#include "pg_predict/spec/steps.hpp"
#include "step_ops.hpp"

namespace pg_predict::spec {

using step_ops::invalid;

bool bucketize_counts_equal(const Step& s, const std::string& where) {
    if (!s.params.is_object()) invalid(where, "op bucketize: params must be an object");
    auto it = s.params.find("side");
    if (it == s.params.end() || *it == "right") return true;
    if (*it == "left") return false;
    invalid(where, "bucketize side must be \"left\" or \"right\", not " + it->dump());
}

const std::vector<std::string>& elementwise_functions() {
    static const std::vector<std::string> names = {
        "absolute", "fabs",    "negative", "sign",    "reciprocal", "square",  "sqrt",    "cbrt",
        "exp",      "exp2",    "expm1",    "log",     "log2",       "log10",   "log1p",   "floor",
        "ceil",     "rint",    "trunc",    "sin",     "cos",        "tan",     "arcsin",  "arccos",
        "arctan",   "sinh",    "cosh",     "tanh",    "arcsinh",    "arccosh", "arctanh",
        // Not numpy's: scipy.special.erf (ONNX Erf), and ONNX LeakyRelu (x < 0: alpha * x; the
        // step's "alpha", 0.01 when absent).
        "erf",      "leaky_relu",
        // ONNX ML's PROBIT post transform, with ONNX Runtime's approximate erfinv (onnx_probit).
        "onnx_probit",
        // Not numpy's: the activations of scikit-learn's MLPs (scipy.special.expit, max(x, 0)),
        // LightGBM's zero_as_missing (|x| <= kZeroThreshold is missing), and float32 (x rounded
        // to float32, as XGBoost reads its inputs before a categorical split truncates them).
        "expit",    "relu",    "zero_as_missing", "float32"};
    return names;
}

bool is_elementwise_function(const std::string& name) {
    for (const std::string& n : elementwise_functions())
        if (n == name) return true;
    return false;
}

double onnx_probit(double p) {
    const double x = 2.0 * p - 1.0, sign = x < 0 ? -1.0 : 1.0;
    const double l = std::log((1.0 - x) * (1.0 + x));
    const double v = 2.0 / (3.14159 * 0.147) + 0.5 * l, v2 = l / 0.147;
    return 1.41421356 * sign * std::sqrt(-v + std::sqrt(v * v - v2));
}

double apply_elementwise(const std::string& f, double x) {
    if (f == "absolute" || f == "fabs") return std::fabs(x);
    if (f == "negative") return -x;
    if (f == "sign") return std::isnan(x) ? x : x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0;
    if (f == "reciprocal") return 1.0 / x;
    if (f == "square") return x * x;
    if (f == "sqrt") return std::sqrt(x);
    if (f == "cbrt") return std::cbrt(x);
    if (f == "exp") return std::exp(x);
    if (f == "exp2") return std::exp2(x);
    if (f == "expm1") return std::expm1(x);
    if (f == "log") return std::log(x);
    if (f == "log2") return std::log2(x);
    if (f == "log10") return std::log10(x);
    if (f == "log1p") return std::log1p(x);
    if (f == "floor") return std::floor(x);
    if (f == "ceil") return std::ceil(x);
    if (f == "rint") return std::nearbyint(x);
    if (f == "trunc") return std::trunc(x);
    if (f == "sin") return std::sin(x);
    if (f == "cos") return std::cos(x);
    if (f == "tan") return std::tan(x);
    if (f == "arcsin") return std::asin(x);
    if (f == "arccos") return std::acos(x);
    if (f == "arctan") return std::atan(x);
    if (f == "sinh") return std::sinh(x);
    if (f == "cosh") return std::cosh(x);
    if (f == "tanh") return std::tanh(x);
    if (f == "arcsinh") return std::asinh(x);
    if (f == "arccosh") return std::acosh(x);
    if (f == "arctanh") return std::atanh(x);
    if (f == "erf") return std::erf(x);
    if (f == "onnx_probit") return onnx_probit(x);
    if (f == "leaky_relu") return x < 0.0 ? kLeakyReluAlpha * x : x;
    if (f == "expit") return 1.0 / (1.0 + std::exp(-x));
    if (f == "relu") return x > 0.0 || std::isnan(x) ? x : 0.0;
    if (f == "float32") return static_cast<double>(static_cast<float>(x));
    if (f == "zero_as_missing") return std::fabs(x) <= kLightgbmZero ? NAN : x;
    fail(ErrorCategory::InvalidModel, "invalid pipeline: elementwise function \"" + f + "\" is not known");
}

}  // namespace pg_predict::spec

namespace pg_predict::spec::step_ops {

using nlohmann::json;

namespace {

// impute's and is_missing's "missing_value": a finite number compared with numbers only (a text
// column carries vocabulary indices).
void check_missing_marker(const Step& s, const std::vector<int32_t>& vocab, const std::string& at) {
    const double m = missing_marker(s, at);
    if (std::isnan(m)) return;
    if (!std::isfinite(m)) invalid(at, std::string(op_name(s.op)) + " missing_value must be finite or NaN");
    for (int32_t v : vocab)
        if (v >= 0) invalid(at, std::string(op_name(s.op)) + " missing_value of a text column must be NaN");
}

}  // namespace

void check_affine(const Step& s, std::vector<int32_t>& vocab, const std::string& at) {
    const size_t w = vocab.size();
    for (const char* key : {"scale", "offset"}) {
        std::vector<double> v = param_vector(s, key, at);
        check_entries(v.size(), w, std::string("affine ") + key, at);
        for (double d : v) if (!std::isfinite(d)) invalid(at, std::string("affine ") + key + " must be finite");
    }
}

void evaluate_affine(const Step& s, std::vector<double>& x, const std::string& at) {
    const std::vector<double> scale = param_vector(s, "scale", at), offset = param_vector(s, "offset", at);
    for (size_t c = 0; c < x.size(); ++c) x[c] = x[c] * scale[c] + offset[c];
}

void check_impute(const Step& s, std::vector<int32_t>& vocab, const std::string& at) {
    const size_t w = vocab.size();
    std::vector<double> v = param_vector(s, "statistics", at);
    check_entries(v.size(), w, "impute statistics", at);
    // NaN leaves a missing value missing; a text column's statistic is a vocabulary index.
    for (double d : v) if (std::isinf(d)) invalid(at, "impute statistics must not be infinite");
    check_missing_marker(s, vocab, at);
    for (size_t c = 0; c < w; ++c)
        if (vocab[c] >= 0 && !std::isnan(v[c]) && (v[c] < 0 || v[c] >= vocab[c] || v[c] != std::floor(v[c])))
            invalid(at, "impute statistic of text column " + std::to_string(c) +
                            " is no index into its vocabulary");
}

void evaluate_impute(const Step& s, std::vector<double>& x, const std::string& at) {
    const std::vector<double> stat = param_vector(s, "statistics", at);
    const double m = missing_marker(s, at);
    for (size_t c = 0; c < x.size(); ++c)
        if (std::isnan(x[c]) || x[c] == m) x[c] = stat[c];
}

void check_threshold(const Step& s, std::vector<int32_t>& vocab, const std::string& at) {
    if (!std::isfinite(param_number(s, "threshold", at))) invalid(at, "threshold must be finite");
}

void evaluate_threshold(const Step& s, std::vector<double>& x, const std::string& at) {
    const double t = param_number(s, "threshold", at);
    for (double& v : x) v = v > t ? 1.0 : 0.0;
}

void check_clip(const Step& s, std::vector<int32_t>& vocab, const std::string& at) {
    const double lo = param_number(s, "min", at), hi = param_number(s, "max", at);
    if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi)
        invalid(at, "clip needs finite min <= max");
}

void evaluate_clip(const Step& s, std::vector<double>& x, const std::string& at) {
    const double lo = param_number(s, "min", at), hi = param_number(s, "max", at);
    for (double& v : x) v = v < lo ? lo : v > hi ? hi : v;  // NaN stays NaN
}

void check_is_missing(const Step& s, std::vector<int32_t>& vocab, const std::string& at) {
    check_missing_marker(s, vocab, at);
}

void evaluate_is_missing(const Step& s, std::vector<double>& x, const std::string& at) {
    const double m = missing_marker(s, at);
    for (double& v : x) v = std::isnan(v) || v == m ? 1.0 : 0.0;
}

void check_bucketize(const Step& s, std::vector<int32_t>& vocab, const std::string& at) {
    const size_t w = vocab.size();
    const auto edges = param_matrix(s, "edges", at);
    bucketize_counts_equal(s, at);  // checks "side"
    if (edges.size() != w)
        invalid(at, "bucketize has edges for " + std::to_string(edges.size()) + " columns, its input has " +
                        std::to_string(w));
    for (size_t c = 0; c < w; ++c)
        for (size_t i = 0; i < edges[c].size(); ++i)
            if (std::isnan(edges[c][i]) || (i > 0 && edges[c][i] < edges[c][i - 1]))
                invalid(at, "bucketize edges of column " + std::to_string(c) +
                                " must be numbers in ascending order");
}

void evaluate_bucketize(const Step& s, std::vector<double>& x, const std::string& at) {
    const auto edges = param_matrix(s, "edges", at);
    const bool right = bucketize_counts_equal(s, at);
    for (size_t c = 0; c < x.size(); ++c) {
        if (std::isnan(x[c])) continue;
        double n = 0.0;
        for (double e : edges[c]) n += (right ? e <= x[c] : e < x[c]) ? 1.0 : 0.0;
        x[c] = n;
    }
}

double leaky_relu_alpha(const Step& s, const std::string& at) {
    return s.params.contains("alpha") ? param_number(s, "alpha", at) : kLeakyReluAlpha;
}

void check_elementwise(const Step& s, std::vector<int32_t>& vocab, const std::string& at) {
    const json& f = param(s, "function", at);
    if (!f.is_string() || !is_elementwise_function(f.get<std::string>()))
        invalid(at, "elementwise function " + f.dump() + " is not known");
    if (s.params.contains("alpha") && f.get<std::string>() != "leaky_relu")
        invalid(at, "only the elementwise function \"leaky_relu\" takes an \"alpha\"");
    if (f.get<std::string>() == "leaky_relu" && !std::isfinite(leaky_relu_alpha(s, at)))
        invalid(at, "leaky_relu's alpha must be finite");
}

void evaluate_elementwise(const Step& s, std::vector<double>& x, const std::string& at) {
    const std::string f = param(s, "function", at).get<std::string>();
    if (f == "leaky_relu") {
        const double alpha = leaky_relu_alpha(s, at);
        for (double& v : x) v = v < 0.0 ? alpha * v : v;
        return;
    }
    for (double& v : x) v = apply_elementwise(f, v);
}

}  // namespace pg_predict::spec::step_ops
