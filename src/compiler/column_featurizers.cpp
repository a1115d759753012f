// The column-by-column featurizer steps in TorchScript: affine, impute, threshold, clip,
// is_missing, bucketize and elementwise, where output column c reads input column c alone
// (featurizer_steps.cpp lists what each op becomes).
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "pg_predict/common/error.hpp"
#include "pg_predict/kernels/bucketize.hpp"
#include "pg_predict/kernels/logistic.hpp"
#include "pg_predict/spec/steps.hpp"
#include "featurizer_emitter.hpp"
#include "program_parts.hpp"

namespace pg_predict::compiler::featurizer {

namespace {

// impute's and is_missing's test of h: NaN, or also equal to the step's finite missing_value.
std::string missing_expr(Emitter& e, const spec::Step& s, const std::string& h, const std::string& pre,
                         const std::string& at) {
    const double m = spec::missing_marker(s, at);
    if (std::isnan(m)) return "torch.isnan(" + h + ")";
    e.parts.buffers.push_back(make_f64(pre + "missing_value", {1}, {m}));
    return "torch.logical_or(torch.isnan(" + h + "), " + h + " == self." + pre + "missing_value)";
}

// TorchScript for numpy's ufunc `f` applied to the float64 tensor `h`.
std::string elementwise_expr(const std::string& f, const std::string& h) {
    static const std::pair<const char*, const char*> kDirect[] = {
        {"absolute", "abs"}, {"fabs", "abs"},     {"negative", "neg"}, {"reciprocal", "reciprocal"},
        {"sqrt", "sqrt"},    {"exp", "exp"},      {"exp2", "exp2"},    {"expm1", "expm1"},
        {"log", "log"},      {"log2", "log2"},    {"log10", "log10"},  {"log1p", "log1p"},
        {"floor", "floor"},  {"ceil", "ceil"},    {"rint", "round"},   {"trunc", "trunc"},
        {"sin", "sin"},      {"cos", "cos"},      {"tan", "tan"},      {"arcsin", "asin"},
        {"arccos", "acos"},  {"arctan", "atan"},  {"sinh", "sinh"},    {"cosh", "cosh"},
        {"tanh", "tanh"},    {"arcsinh", "asinh"}, {"arccosh", "acosh"}, {"arctanh", "atanh"},
        {"erf", "erf"}};
    for (const auto& [name, fn] : kDirect)
        if (f == name) return std::string("torch.") + fn + "(" + h + ")";
    if (f == "expit") {  // not torch.sigmoid: kernels/logistic.hpp
        static_cast<void>(kernels::logistic_op_anchor());
        return "ops.pg_predict.logistic(" + h + ")";
    }
    // NaN stays NaN, as numpy's maximum(x, 0): torch.relu (clamp_min) propagates NaN, and is
    // one op where the explicit where(x > 0 or isnan(x), x, 0) took five (5.6× slower).
    if (f == "relu") return "torch.relu(" + h + ")";
    if (f == "zero_as_missing")
        return "torch.where(torch.abs(" + h + ") <= " + double_literal(spec::kLightgbmZero) + ", torch.full_like(" + h +
               ", float(\"nan\")), " + h + ")";
    if (f == "square") return "(" + h + " * " + h + ")";
    if (f == "float32") return h + ".float().double()";  // featurizers compute in float64
    if (f == "onnx_probit") {  // spec::onnx_probit, term by term
        const std::string x = "(2.0 * " + h + " - 1.0)", l = "torch.log((1.0 - " + x + ") * (1.0 + " + x + "))";
        const std::string v = "(" + double_literal(2.0 / (3.14159 * 0.147)) + " + 0.5 * " + l + ")";
        return "(1.41421356 * torch.where(" + x + " < 0.0, -torch.ones_like(" + h + "), torch.ones_like(" + h +
               ")) * torch.sqrt(-" + v + " + torch.sqrt(" + v + " * " + v + " - " + l + " / 0.147)))";
    }
    // torch.sign(NaN) is 0 on some builds; numpy keeps NaN.
    if (f == "sign") return "torch.where(torch.isnan(" + h + "), " + h + ", torch.sign(" + h + "))";
    if (f == "cbrt")
        return "torch.where(torch.isnan(" + h + "), " + h + ", torch.sign(" + h + ") * torch.pow(torch.abs(" + h +
               "), 1.0 / 3.0))";
    fail(ErrorCategory::Unsupported, "compiler: elementwise function \"" + f + "\" is not supported");
}

}  // namespace

void emit_affine(Emitter& e, const spec::Step& s, const std::string& h, const std::string& out, const std::string& pre,
                 int64_t& width) {
    const std::string at = "step affine";
    e.parts.buffers.push_back(make_f64(pre + "scale", {width}, spec::param_vector(s, "scale", at)));
    e.parts.buffers.push_back(make_f64(pre + "offset", {width}, spec::param_vector(s, "offset", at)));
    e.line(out + " = " + h + " * self." + pre + "scale + self." + pre + "offset");
}

void emit_impute(Emitter& e, const spec::Step& s, const std::string& h, const std::string& out, const std::string& pre,
                 int64_t& width) {
    const std::string at = "step impute";
    e.parts.buffers.push_back(make_f64(pre + "statistics", {width}, spec::param_vector(s, "statistics", at)));
    e.line(out + " = torch.where(" + missing_expr(e, s, h, pre, at) + ", self." + pre + "statistics, " + h + ")");
}

void emit_threshold(Emitter& e, const spec::Step& s, const std::string& h, const std::string& out, const std::string& pre,
                    int64_t& width) {
    const std::string at = "step threshold";
    e.parts.buffers.push_back(make_f64(pre + "threshold", {1}, {spec::param_number(s, "threshold", at)}));
    e.line(out + " = (" + h + " > self." + pre + "threshold).double()");
}

// maximum / minimum keep NaN, as numpy's clip does.
void emit_clip(Emitter& e, const spec::Step& s, const std::string& h, const std::string& out, const std::string& pre,
               int64_t& width) {
    const std::string at = "step clip";
    e.parts.buffers.push_back(make_f64(pre + "clip_min", {1}, {spec::param_number(s, "min", at)}));
    e.parts.buffers.push_back(make_f64(pre + "clip_max", {1}, {spec::param_number(s, "max", at)}));
    e.line(out + " = torch.minimum(torch.maximum(" + h + ", self." + pre + "clip_min), self." + pre + "clip_max)");
}

void emit_is_missing(Emitter& e, const spec::Step& s, const std::string& h, const std::string& out, const std::string& pre,
                     int64_t& width) {
    const std::string at = "step is_missing";
    e.line(out + " = " + missing_expr(e, s, h, pre, at) + ".double()");
}

// One binary search per value, natively (kernels/bucketize.hpp: torch.searchsorted over the
// transposed batch cost LightGBM programs as much as their trees, on one thread). The edges of
// every column are padded with +inf to one length; counts says how many are real.
void emit_bucketize(Emitter& e, const spec::Step& s, const std::string& h, const std::string& out, const std::string& pre,
                    int64_t& width) {
    const std::string at = "step bucketize";
    const auto edges = spec::param_matrix(s, "edges", at);
    const bool right = spec::bucketize_counts_equal(s, at);
    size_t longest = 0;
    for (const auto& c : edges) longest = std::max(longest, c.size());
    if (longest == 0) {
        e.line(out + " = torch.where(torch.isnan(" + h + "), " + h + ", torch.zeros_like(" + h + "))");
        return;
    }
    static_cast<void>(kernels::bucketize_op_anchor());
    const int64_t C = static_cast<int64_t>(edges.size()), K = static_cast<int64_t>(longest);
    std::vector<double> padded;
    std::vector<int64_t> count;
    for (const auto& c : edges) {
        padded.insert(padded.end(), c.begin(), c.end());
        padded.resize(padded.size() + (longest - c.size()), HUGE_VAL);
        count.push_back(static_cast<int64_t>(c.size()));
    }
    e.parts.buffers.push_back(make_f64(pre + "edges", {C, K}, padded));
    e.parts.buffers.push_back(make_i64(pre + "count", {C}, count));
    e.line(out + " = ops.pg_predict.bucketize(" + h + ", self." + pre + "edges, self." + pre + "count, " +
           (right ? "True" : "False") + ")");
}

void emit_elementwise(Emitter& e, const spec::Step& s, const std::string& h, const std::string& out, const std::string& pre,
                      int64_t& width) {
    const auto it = s.params.find("function");
    if (it == s.params.end() || !it->is_string())
        fail(ErrorCategory::InvalidModel, "compiler: elementwise step without a function name");
    if (it->get<std::string>() == "leaky_relu") {
        const double alpha = s.params.contains("alpha") ? spec::param_number(s, "alpha", "step elementwise")
                                                        : spec::kLeakyReluAlpha;
        e.line(out + " = torch.where(" + h + " < 0.0, " + h + " * " + double_literal(alpha) + ", " + h + ")");
        return;
    }
    e.line(out + " = " + elementwise_expr(it->get<std::string>(), h));
}

}  // namespace pg_predict::compiler::featurizer
