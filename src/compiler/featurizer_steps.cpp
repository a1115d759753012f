// Featurizer steps → TorchScript (Hummingbird's "other operators"): each step is one or a few
// tensor ops over the whole batch, in float64 like scikit-learn.
//   affine   h * scale + offset
//   impute   where(isnan(h), statistics, h) (| h == missing_value when the step has one)
//   one_hot  (h's column of each kept category == categories) → 0/1
//   ordinal  the same comparison, then index_add_ of the matches' codes into their columns
//   elementwise  the torch function of the numpy ufunc (sign and cbrt keep NaN explicitly)
//   threshold  (h > t).double();  is_missing  isnan(h).double() (| h == missing_value, as impute)
//   normalize  h / the row's norm (1 where it is 0)
//   project  matmul(h, matrixᵀ) + offset, natively for 8 outputs or more
//   bucketize  searchsorted of each column in its edges (padded with +inf); NaN kept
//   monomials  prod(pow(h[:, None, :], powers), 2) with x^0 = 1
//   kernel   matmul(h, svᵀ), then linear / poly / sigmoid of it; rbf exp(-γ‖x - s‖²) natively
//   neighbors  cdist to the points, a stable sort's first k (natively), the weighted mean of their targets
//   power    both branches of the transform per column (lambdas as buffers), where() picks one
//   quantile  searchsorted of each column in its quantiles from both sides, the two
//            interpolations gathered by torch.take and averaged, the bounds, ndtri for normal
//   concat   each part's columns (select_columns), its steps, cat
//   model    the nested pipeline compiled on its own, a submodule called on h (float32 for a
//            bare tree model, which compares float32 inputs); label: argmax → one-hot
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "pg_predict/common/interrupt.hpp"
#include "pg_predict/common/error.hpp"
#include "pg_predict/compiler/compile.hpp"
#include "pg_predict/kernels/k_nearest.hpp"
#include "pg_predict/kernels/project.hpp"
#include "pg_predict/kernels/rbf.hpp"
#include "pg_predict/spec/steps.hpp"
#include "program_parts.hpp"

namespace pg_predict::compiler {
namespace {

struct Emitter {
    ProgramParts& parts;
    std::string src;
    int vars = 0;
    int bufs = 0;
    int64_t widest = 0;  // the most values per row any intermediate tensor holds

    std::string var() { return "h" + std::to_string(vars++); }
    void note_width(int64_t w) { widest = std::max(widest, w); }
    std::string prefix() { return "fz" + std::to_string(bufs++) + "_"; }
    void line(const std::string& s) { src += "    " + s + "\n"; }
};

// Projections to this many outputs or more run natively: the kernel's lanes are the outputs, so
// fewer leave most of them idle (reference BLAS's dgemm is as fast there).
constexpr int64_t kNativeProjectOutputs = 8;

int64_t size_of(const std::vector<double>& v) { return static_cast<int64_t>(v.size()); }

// impute's and is_missing's test of h: NaN, or also equal to the step's finite missing_value.
std::string missing_expr(Emitter& e, const spec::Step& s, const std::string& h, const std::string& pre,
                         const std::string& at) {
    const double m = spec::missing_marker(s, at);
    if (std::isnan(m)) return "torch.isnan(" + h + ")";
    e.parts.buffers.push_back(make_f64(pre + "missing_value", {1}, {m}));
    return "torch.logical_or(torch.isnan(" + h + "), " + h + " == self." + pre + "missing_value)";
}

// Columns `cols` of the [N, W] tensor `in` (their indices in the 1-D int64 buffer `index`): a
// slice where they are an ascending run (a view, no copy), else a gather with the index
// broadcast over the rows. Not index_select along dim 1: ATen copies that one element per
// memcpy call (1.6 ms vs 0.4 ms for 15 columns of a 4096-row float64 batch, torch 1.13).
std::string select_columns(const std::string& in, const std::string& index, const std::vector<int64_t>& cols) {
    bool run = !cols.empty();
    for (size_t i = 1; i < cols.size() && run; ++i) run = cols[i] == cols[i - 1] + 1;
    if (run) return in + "[:, " + std::to_string(cols.front()) + ":" + std::to_string(cols.back() + 1) + "]";
    return "torch.gather(" + in + ", 1, self." + index + ".unsqueeze(0).expand(" + in + ".size(0), " +
           std::to_string(cols.size()) + "))";
}

// The comparison of each (column, category) pair shared by one_hot and ordinal: a bool [N, K]
// expression in `eq`. `keep(c, k)` chooses the pairs.
template <typename Keep>
std::string emit_matches(Emitter& e, const std::string& in, const std::vector<std::vector<double>>& cats,
                         const std::string& pre, Keep keep, std::vector<int64_t>& column_of,
                         std::vector<double>& value) {
    std::vector<uint8_t> is_nan;
    bool any_nan = false;
    for (size_t c = 0; c < cats.size(); ++c)
        for (size_t k = 0; k < cats[c].size(); ++k) {
            if (!keep(c, k)) continue;
            column_of.push_back(static_cast<int64_t>(c));
            const bool nan = std::isnan(cats[c][k]);
            value.push_back(cats[c][k]);  // NaN equals nothing: only the isnan test matches it
            is_nan.push_back(nan ? 1 : 0);
            any_nan = any_nan || nan;
        }
    const int64_t K = static_cast<int64_t>(column_of.size());
    e.parts.buffers.push_back(make_i64(pre + "column", {K}, column_of));
    e.parts.buffers.push_back(make_f64(pre + "category", {K}, value));
    const std::string v = e.var(), eq = e.var();
    e.line(v + " = " + select_columns(in, pre + "column", column_of));
    std::string expr = "(" + v + " == self." + pre + "category)";
    if (any_nan) {
        e.parts.buffers.push_back(make_bool(pre + "nan", {K}, is_nan));
        expr = "torch.logical_or(" + expr + ", torch.logical_and(torch.isnan(" + v + "), self." + pre + "nan))";
    }
    e.line(eq + " = " + expr);
    return eq;
}

// A double as a TorchScript float literal that reads back exactly.
std::string double_literal(double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
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
        {"tanh", "tanh"},    {"arcsinh", "asinh"}, {"arccosh", "acosh"}, {"arctanh", "atanh"}};
    for (const auto& [name, fn] : kDirect)
        if (f == name) return std::string("torch.") + fn + "(" + h + ")";
    if (f == "expit") return "torch.sigmoid(" + h + ")";
    // NaN stays NaN, as numpy's maximum(x, 0): torch.relu (clamp_min) propagates NaN, and is
    // one op where the explicit where(x > 0 or isnan(x), x, 0) took five (5.6× slower).
    if (f == "relu") return "torch.relu(" + h + ")";
    if (f == "zero_as_missing")
        return "torch.where(torch.abs(" + h + ") <= " + double_literal(spec::kLightgbmZero) + ", torch.full_like(" + h +
               ", float(\"nan\")), " + h + ")";
    if (f == "square") return "(" + h + " * " + h + ")";
    // torch.sign(NaN) is 0 on some builds; numpy keeps NaN.
    if (f == "sign") return "torch.where(torch.isnan(" + h + "), " + h + ", torch.sign(" + h + "))";
    if (f == "cbrt")
        return "torch.where(torch.isnan(" + h + "), " + h + ", torch.sign(" + h + ") * torch.pow(torch.abs(" + h +
               "), 1.0 / 3.0))";
    fail(ErrorCategory::Unsupported, "compiler: elementwise function \"" + f + "\" is not supported");
}

// K = kernel(h, support vectors) [N × n].
void emit_kernel(Emitter& e, const spec::Step& s, const std::string& h, const std::string& out,
                 const std::string& pre, int64_t& width) {
    const std::string at = "step kernel";
    const auto sv = spec::param_matrix(s, "support_vectors", at);
    const auto it = s.params.find("kernel");
    const std::string kernel = it != s.params.end() && it->is_string() ? it->get<std::string>() : "";
    const int64_t n = static_cast<int64_t>(sv.size());
    if (kernel == "rbf") {
        // ‖x - s‖² summed directly, as libsvm's predict does (the form ‖x‖² + ‖s‖² - 2 x·s
        // cancels digits), with exp, in one native pass (kernels/rbf.hpp): cdist, square and
        // exp in torch took 4x its time for 2054 support vectors, mostly in cdist. An
        // infinite x is infinitely far from every (finite) support vector: K = exp(-inf) = 0.
        static_cast<void>(kernels::rbf_op_anchor());
        const double gamma = spec::param_number(s, "gamma", at);
        if (!std::isfinite(gamma)) fail(ErrorCategory::InvalidModel, at + ": gamma must be a finite number");
        const int64_t padded = kernels::rbf_padded(n);
        std::vector<double> svt(static_cast<size_t>(width * padded), 0.0);
        for (int64_t j = 0; j < n; ++j) {
            if (static_cast<int64_t>(sv[j].size()) != width)
                fail(ErrorCategory::InvalidModel, at + ": a support vector has " + std::to_string(sv[j].size()) +
                                                      " values, the input " + std::to_string(width));
            for (int64_t f = 0; f < width; ++f) svt[f * padded + j] = sv[j][f];
        }
        e.parts.buffers.push_back(make_f64(pre + "svt", {width, padded}, svt));
        e.line(out + " = ops.pg_predict.rbf_kernel(" + h + ", self." + pre + "svt, " + std::to_string(n) +
               ", " + double_literal(gamma) + ")");
        width = n;
        return;
    }
    std::vector<double> flat;
    for (const auto& row : sv) flat.insert(flat.end(), row.begin(), row.end());
    e.parts.buffers.push_back(make_f64(pre + "sv", {n, width}, flat));
    e.parts.buffers.push_back(make_f64(pre + "gamma", {1}, {spec::param_number(s, "gamma", at)}));
    e.parts.buffers.push_back(make_f64(pre + "coef0", {1}, {spec::param_number(s, "coef0", at)}));
    e.parts.buffers.push_back(make_f64(pre + "degree", {1}, {spec::param_number(s, "degree", at)}));
    const std::string g = "self." + pre + "gamma", c0 = "self." + pre + "coef0";
    const std::string dot = e.var();
    e.line(dot + " = torch.matmul(" + h + ", self." + pre + "sv.t())");
    if (kernel == "linear") {
        e.line(out + " = " + dot);
    } else if (kernel == "poly") {
        e.line(out + " = torch.pow(" + dot + " * " + g + " + " + c0 + ", self." + pre + "degree)");
    } else if (kernel == "sigmoid") {
        e.line(out + " = torch.tanh(" + dot + " * " + g + " + " + c0 + ")");
    } else {
        fail(ErrorCategory::InvalidModel, "compiler: kernel \"" + kernel + "\" is not known");
    }
    width = n;
}

// The weighted mean of the targets of the k nearest points [N × C] (spec/steps.hpp: op
// neighbors). The distances are summed directly (cdist without the matmul form, which cancels
// digits and would move ties); a stable sort takes the lower point index first among equal
// distances, as the reference does (topk's order among ties is unspecified).
void emit_neighbors(Emitter& e, const spec::Step& s, const std::string& h, const std::string& out,
                    const std::string& pre, int64_t& width) {
    const std::string at = "step neighbors";
    const auto points = spec::param_matrix(s, "points", at);
    const auto targets = spec::param_matrix(s, "targets", at);
    const int64_t n = static_cast<int64_t>(points.size());
    const int64_t c = targets.empty() ? 0 : static_cast<int64_t>(targets[0].size());
    const bool by_radius = s.params.contains("radius");
    const double p = spec::param_number(s, "p", at);
    const auto weights = s.params.find("weights");
    const bool by_distance = weights != s.params.end() && *weights == "distance";
    std::vector<double> flat;
    for (const auto& row : points) flat.insert(flat.end(), row.begin(), row.end());
    e.parts.buffers.push_back(make_f64(pre + "points", {n, width}, flat));
    flat.clear();
    for (const auto& row : targets) flat.insert(flat.end(), row.begin(), row.end());
    e.parts.buffers.push_back(make_f64(pre + "targets", {n, c}, flat));
    const std::string d = e.var(), dk = e.var(), ik = e.var(), t = e.var(), w = e.var();
    e.note_width(n);
    // compute_mode 2: donot_use_mm_for_euclid_dist (TorchScript takes the int)
    // Minkowski's p as a float literal (cdist's p = inf is the largest difference).
    const std::string p_literal = std::isinf(p) ? std::string("float(\"inf\")") : "float(" + double_literal(p) + ")";
    e.line(d + " = torch.cdist(" + h + ", self." + pre + "points, " + p_literal + ", 2)");
    const std::string mean = e.var();
    if (by_radius) {
        // Every point within the radius, weighted; no point: the "outside" targets (or NaN).
        const std::string in = e.var(), total = e.var(), empty = e.var();
        e.parts.buffers.push_back(make_f64(pre + "radius", {1}, {spec::param_number(s, "radius", at)}));
        e.line(in + " = " + d + " <= self." + pre + "radius");
        if (by_distance) {
            const std::string zero = e.var();
            e.line(zero + " = (" + d + " == 0.0)");
            e.line(w + " = torch.where(" + zero + ".any(1, keepdim=True), " + zero + ".double(), torch.where(" + in +
                   ", 1.0 / " + d + ", torch.zeros_like(" + d + ")))");
        } else {
            e.line(w + " = " + in + ".double()");
        }
        e.line(total + " = " + w + ".sum(1, keepdim=True)");
        e.line(empty + " = " + total + " == 0.0");
        e.line(mean + " = torch.mm(" + w + ", self." + pre + "targets) / torch.where(" + empty + ", torch.ones_like(" +
               total + "), " + total + ")");
        std::vector<double> outside(static_cast<size_t>(c), NAN);
        if (s.params.contains("outside")) outside = spec::param_vector(s, "outside", at);
        e.parts.buffers.push_back(make_f64(pre + "outside", {1, c}, outside));
        e.line(mean + " = torch.where(" + empty + ", self." + pre + "outside.expand_as(" + mean + "), " + mean + ")");
    } else {
        const std::string k = std::to_string(static_cast<int64_t>(spec::param_number(s, "k", at)));
        e.note_width(static_cast<int64_t>(spec::param_number(s, "k", at)) * c);  // the gathered targets
        // The first k of a stable sort, without sorting (kernels/k_nearest.hpp): the full sort
        // of 10,000 distances a row cost as much as computing them.
        static_cast<void>(kernels::k_nearest_op_anchor());
        e.line(dk + ", " + ik + " = ops.pg_predict.k_nearest(" + d + ", " + k + ")");
        e.line(t + " = self." + pre + "targets.index_select(0, " + ik + ".view(-1)).view(" + ik + ".size(0), " + k +
               ", " + std::to_string(c) + ")");
        if (by_distance) {
            // scikit-learn: 1 / d, but a row with a zero distance counts only its exact matches.
            const std::string zero = e.var();
            e.line(zero + " = (" + dk + " == 0.0)");
            e.line(w + " = torch.where(" + zero + ".any(1, keepdim=True), " + zero + ".double(), 1.0 / " + dk + ")");
        } else {
            e.line(w + " = torch.ones_like(" + dk + ")");
        }
        e.line(mean + " = torch.bmm(" + w + ".unsqueeze(1), " + t + ").squeeze(1) / " + w + ".sum(1, keepdim=True)");
    }
    // A row with NaN or ±inf has no nearest points (scikit-learn refuses it): NaN out.
    e.line(out + " = torch.where(torch.isfinite(" + h + ").all(1, keepdim=True), " + mean + ", torch.full_like(" +
           mean + ", float(\"nan\")))");
    width = c;
}

// op power: the branches of scikit-learn's formula computed over the whole batch, the lambda of
// each column a buffer (a lambda that selects the log form gets a safe 1 in the division).
void emit_power(Emitter& e, const spec::Step& s, const std::string& h, const std::string& out,
                const std::string& pre, int64_t width) {
    const std::string at = "step power";
    const std::string method = s.params.at("method").get<std::string>();
    const std::vector<double> lambdas = spec::param_vector(s, "lambdas", at);
    constexpr double kEps = 2.220446049250313e-16;  // np.spacing(1.0)
    // A branch per sign: its exponent (safe where the log form applies) and whether it is the log.
    auto branch = [&](const std::string& name, double shift, double sign, double tolerance, bool log_below) {
        std::vector<double> exponent;
        std::vector<uint8_t> is_log;
        for (double l : lambdas) {
            const double x = shift + sign * l;
            const bool log = log_below ? std::fabs(x) < tolerance : std::fabs(x) <= tolerance;
            exponent.push_back(log ? 1.0 : x);
            is_log.push_back(log ? 1 : 0);
        }
        e.parts.buffers.push_back(make_f64(pre + name, {width}, exponent));
        e.parts.buffers.push_back(make_bool(pre + name + "_log", {width}, is_log));
    };
    const std::string p = e.var(), n = e.var();
    if (method == "box-cox") {
        branch("lambda", 0.0, 1.0, 1e-19, true);
        const std::string l = e.var(), lam = "self." + pre + "lambda";
        e.line(l + " = torch.log(" + h + ")");
        e.line(p + " = torch.where(" + lam + "_log, " + l + ", torch.expm1(" + lam + " * " + l + ") / " + lam + ")");
        // scikit-learn refuses x <= 0; NaN stays NaN.
        e.line(out + " = torch.where(" + h + " > 0.0, " + p + ", torch.full_like(" + h + ", float(\"nan\")))");
        return;
    }
    branch("pos", 0.0, 1.0, kEps, true);   // x >= 0: lambda, log1p where |lambda| < eps
    branch("neg", 2.0, -1.0, kEps, false);  // x < 0: 2 - lambda, log1p where |lambda - 2| <= eps
    const std::string pos = "self." + pre + "pos", neg = "self." + pre + "neg";
    e.line(p + " = torch.where(" + pos + "_log, torch.log1p(" + h + "), (torch.pow(" + h + " + 1.0, " + pos +
           ") - 1.0) / " + pos + ")");
    e.line(n + " = torch.where(" + neg + "_log, -torch.log1p(-" + h + "), -(torch.pow(1.0 - " + h + ", " + neg +
           ") - 1.0) / " + neg + ")");
    e.line(out + " = torch.where(" + h + " >= 0.0, " + p + ", " + n + ")");  // NaN: n, which is NaN
}

// op quantile: numpy's interp from below (the last quantile <= x, searchsorted right) and
// from above (the first quantile >= x, searchsorted left), each a gather of a segment's start,
// slope and value from [C, n] buffers; values outside the quantiles and at the last one take
// the end reference, as numpy's interp does.
void emit_quantile(Emitter& e, const spec::Step& s, const std::string& h, const std::string& out,
                   const std::string& pre, int64_t width) {
    const std::string at = "step quantile";
    const auto quantiles = spec::param_matrix(s, "quantiles", at);
    const std::vector<double> refs = spec::param_vector(s, "references", at);
    const bool normal = s.params.at("output") == "normal";
    const int64_t n = static_cast<int64_t>(refs.size());
    std::vector<double> xp, fp, slope, lo, hi;
    std::vector<int64_t> off;
    for (int64_t c = 0; c < width; ++c) {
        const std::vector<double>& q = quantiles[static_cast<size_t>(c)];
        xp.insert(xp.end(), q.begin(), q.end());
        fp.insert(fp.end(), refs.begin(), refs.end());
        for (int64_t j = 0; j + 1 < n; ++j) slope.push_back((refs[j + 1] - refs[j]) / (q[j + 1] - q[j]));
        slope.push_back(0.0);
        lo.push_back(q.front());
        hi.push_back(q.back());
        off.push_back(c * n);
    }
    e.parts.buffers.push_back(make_f64(pre + "xp", {width, n}, xp));
    e.parts.buffers.push_back(make_f64(pre + "fp", {width, n}, fp));
    e.parts.buffers.push_back(make_f64(pre + "slope", {width, n}, slope));
    e.parts.buffers.push_back(make_f64(pre + "lo", {width}, lo));
    e.parts.buffers.push_back(make_f64(pre + "hi", {width}, hi));
    e.parts.buffers.push_back(make_i64(pre + "off", {width}, off));
    e.note_width(width * 8);  // the index and gathered temporaries
    const std::string self = "self." + pre;
    const std::string xt = e.var(), j = e.var(), k = e.var(), up = e.var(), dn = e.var(), y = e.var();
    const std::string first = double_literal(refs.front()), last = double_literal(refs.back());
    const std::string n2 = std::to_string(n - 2), n1 = std::to_string(n - 1);
    e.line(xt + " = " + h + ".t().contiguous()");
    e.line(j + " = torch.clamp(torch.searchsorted(" + self + "xp, " + xt + ", right=True).t() - 1, 0, " + n2 + ") + " +
           self + "off");
    e.line(k + " = torch.clamp(torch.searchsorted(" + self + "xp, " + xt + ", right=False).t(), 1, " + n1 + ") + " +
           self + "off");
    e.line(up + " = torch.take(" + self + "slope, " + j + ") * (" + h + " - torch.take(" + self + "xp, " + j +
           ")) + torch.take(" + self + "fp, " + j + ")");
    e.line(up + " = torch.where(" + h + " < " + self + "lo, torch.full_like(" + h + ", " + first + "), torch.where(" +
           h + " >= " + self + "hi, torch.full_like(" + h + ", " + last + "), " + up + "))");
    e.line(dn + " = torch.take(" + self + "slope, " + k + " - 1) * (" + h + " - torch.take(" + self + "xp, " + k +
           ")) + torch.take(" + self + "fp, " + k + ")");
    e.line(dn + " = torch.where(" + h + " <= " + self + "lo, torch.full_like(" + h + ", " + first + "), torch.where(" +
           h + " > " + self + "hi, torch.full_like(" + h + ", " + last + "), " + dn + "))");
    e.line(y + " = 0.5 * (" + up + " + " + dn + ")");
    const std::string bound = double_literal(1e-7);  // scikit-learn's BOUNDS_THRESHOLD
    const std::string at_hi = normal ? h + " + " + bound + " > " + self + "hi" : h + " == " + self + "hi";
    const std::string at_lo = normal ? h + " - " + bound + " < " + self + "lo" : h + " == " + self + "lo";
    e.line(y + " = torch.where(" + at_hi + ", torch.ones_like(" + h + "), " + y + ")");
    e.line(y + " = torch.where(" + at_lo + ", torch.zeros_like(" + h + "), " + y + ")");
    if (normal) {
        const double eps = 2.220446049250313e-16;
        // ndtri: erfinv's estimate, then one Halley step on erfc (exact in the tails, where
        // 2y - 1 has lost y's digits); TorchScript compiled here has no torch.special.
        const std::string q = e.var(), r = e.var(), u = e.var();
        e.line(q + " = torch.erfinv(2.0 * " + y + " - 1.0) * " + double_literal(std::sqrt(2.0)));
        e.line(r + " = 0.5 * torch.erfc(-" + q + " / " + double_literal(std::sqrt(2.0)) + ") - " + y);
        e.line(u + " = " + r + " * " + double_literal(std::sqrt(2.0 * M_PI)) + " * torch.exp(" + q + " * " + q + " / 2.0)");
        e.line(q + " = torch.where(torch.isfinite(" + q + "), " + q + " - " + u + " / (1.0 + " + q + " * " + u +
               " / 2.0), " + q + ")");
        e.line(y + " = torch.clamp(" + q + ", " + double_literal(spec::normal_quantile(1e-7 - eps)) + ", " +
               double_literal(spec::normal_quantile(1.0 - (1e-7 - eps))) + ")");
    }
    e.line(out + " = torch.where(torch.isnan(" + h + "), " + h + ", " + y + ")");
}

void emit_model(Emitter& e, const spec::Step& s, const std::string& h, const std::string& out,
                const std::string& pre, int64_t& width) {
    const std::string at = "step model";
    const spec::Pipeline m = spec::model_pipeline(s, at);
    const std::string output = spec::model_output(s, at);
    const int64_t w = spec::model_width(m, output, at);
    const Strategy strategy = m.estimator.op == spec::Op::None ? choose_strategy(m) : Strategy::TreeTraversal;
    const Output o = output == "decision_function" ? Output::DecisionFunction : Output::Predict;
    const std::string name = pre + "model";
    e.parts.submodules.emplace_back(name, compile(m, strategy, o));
    const bool bare_trees = m.steps.empty() && m.estimator.op == spec::Op::None;
    const std::string r = e.var();
    e.line(r + " = self." + name + ".forward(" + h + (bare_trees ? ".float()" : "") + ").double()");
    if (output == "label") {
        // The predicted class: the argmax of predict_proba (of the decision half when the
        // program also gives decision values), the first of equal maxima; a row the member
        // scores NaN (a k-NN member's NULL) stays NaN rather than becoming a vote.
        const int64_t k = static_cast<int64_t>(m.classes.size());
        const std::string scores = spec::has_decision_columns(m) ? r + "[:, " + std::to_string(k) + ":]" : r;
        const std::string onehot = e.var();
        e.line(onehot + " = torch.zeros_like(" + scores + ").scatter_(1, torch.argmax(" + scores + ", 1, keepdim=True), 1.0)");
        e.line(out + " = torch.where(torch.isnan(" + scores + ").any(1, keepdim=True), torch.full_like(" + onehot +
               ", float(\"nan\")), " + onehot + ")");
    } else {
        e.line(out + " = " + r);
    }
    width = w;
}

std::string emit_step(Emitter& e, const spec::Step& s, const std::string& h, int64_t& width) {
    check_interrupts();  // per step: nested compositions can be deep
    const std::string at = std::string("step ") + spec::op_name(s.op);
    const std::string pre = e.prefix();
    const std::string out = e.var();
    switch (s.op) {
    case spec::Op::Affine: {
        e.parts.buffers.push_back(make_f64(pre + "scale", {width}, spec::param_vector(s, "scale", at)));
        e.parts.buffers.push_back(make_f64(pre + "offset", {width}, spec::param_vector(s, "offset", at)));
        e.line(out + " = " + h + " * self." + pre + "scale + self." + pre + "offset");
        break;
    }
    case spec::Op::Impute: {
        e.parts.buffers.push_back(make_f64(pre + "statistics", {width}, spec::param_vector(s, "statistics", at)));
        e.line(out + " = torch.where(" + missing_expr(e, s, h, pre, at) + ", self." + pre + "statistics, " + h + ")");
        break;
    }
    case spec::Op::OneHot: {
        const auto cats = spec::param_matrix(s, "categories", at);
        const std::vector<int32_t> drop = spec::param_ints(s, "drop", at);
        std::vector<int64_t> column_of;
        std::vector<double> value;
        const std::string eq = emit_matches(
            e, h, cats, pre, [&](size_t c, size_t k) { return static_cast<int32_t>(k) != drop[c]; }, column_of,
            value);
        e.line(out + " = " + eq + ".double()");
        width = static_cast<int64_t>(column_of.size());
        break;
    }
    case spec::Op::Ordinal: {
        const auto cats = spec::param_matrix(s, "categories", at);
        const double unknown = spec::param_number(s, "unknown_value", at);
        const double missing = spec::param_number(s, "missing_value", at);
        std::vector<int64_t> column_of;
        std::vector<double> value, code;
        for (const auto& col : cats)
            for (size_t k = 0; k < col.size(); ++k) code.push_back(std::isnan(col[k]) ? missing : double(k));
        const std::string eq = emit_matches(e, h, cats, pre, [](size_t, size_t) { return true; }, column_of, value);
        e.parts.buffers.push_back(make_f64(pre + "code", {size_of(code)}, code));
        e.parts.buffers.push_back(make_f64(pre + "unknown", {width}, std::vector<double>(width, unknown)));
        const std::string v = "h" + std::to_string(e.vars - 2);  // emit_matches' selected values
        const std::string hit = e.var(), codes = e.var();
        e.line(hit + " = " + h + ".new_zeros([" + h + ".size(0), " + std::to_string(width) +
               "]).index_add_(1, self." + pre + "column, " + eq + ".double())");
        e.line(codes + " = " + h + ".new_zeros([" + h + ".size(0), " + std::to_string(width) +
               "]).index_add_(1, self." + pre + "column, torch.where(" + eq + ", self." + pre + "code.expand_as(" +
               v + "), torch.zeros_like(" + v + ")))");
        e.line(out + " = torch.where(" + hit + " > 0.0, " + codes + ", self." + pre + "unknown)");
        break;
    }
    case spec::Op::Elementwise: {
        const auto it = s.params.find("function");
        if (it == s.params.end() || !it->is_string())
            fail(ErrorCategory::InvalidModel, "compiler: elementwise step without a function name");
        e.line(out + " = " + elementwise_expr(it->get<std::string>(), h));
        break;
    }
    case spec::Op::Threshold: {
        e.parts.buffers.push_back(make_f64(pre + "threshold", {1}, {spec::param_number(s, "threshold", at)}));
        e.line(out + " = (" + h + " > self." + pre + "threshold).double()");
        break;
    }
    case spec::Op::Clip: {
        // maximum / minimum keep NaN, as numpy's clip does.
        e.parts.buffers.push_back(make_f64(pre + "clip_min", {1}, {spec::param_number(s, "min", at)}));
        e.parts.buffers.push_back(make_f64(pre + "clip_max", {1}, {spec::param_number(s, "max", at)}));
        e.line(out + " = torch.minimum(torch.maximum(" + h + ", self." + pre + "clip_min), self." + pre + "clip_max)");
        break;
    }
    case spec::Op::IsMissing: {
        e.line(out + " = " + missing_expr(e, s, h, pre, at) + ".double()");
        break;
    }
    case spec::Op::Normalize: {
        const auto it = s.params.find("norm");
        const std::string norm = it != s.params.end() && it->is_string() ? it->get<std::string>() : "";
        const std::string n = e.var();
        if (norm == "l1") e.line(n + " = torch.sum(torch.abs(" + h + "), [1], True)");
        else if (norm == "l2") e.line(n + " = torch.sqrt(torch.sum(" + h + " * " + h + ", [1], True))");
        else if (norm == "max") e.line(n + " = torch.amax(torch.abs(" + h + "), [1], True)");
        else fail(ErrorCategory::InvalidModel, "compiler: normalize norm \"" + norm + "\" is not known");
        e.line(out + " = " + h + " / torch.where(" + n + " == 0.0, torch.ones_like(" + n + "), " + n + ")");
        break;
    }
    case spec::Op::Project: {
        const auto m = spec::param_matrix(s, "matrix", at);
        const std::vector<double> off = spec::param_vector(s, "offset", at);
        const int64_t k = static_cast<int64_t>(m.size());
        e.parts.buffers.push_back(make_f64(pre + "offset", {k}, off));
        if (k >= kNativeProjectOutputs) {
            // The native kernel (kernels/project.hpp): the same sums as the reference BLAS's
            // dgemm that torch.matmul calls here (an MLP's model time: 1.08 -> 0.30 s on 200k rows).
            static_cast<void>(kernels::project_op_anchor());
            const int64_t padded = kernels::project_padded(k);
            std::vector<double> wt(static_cast<size_t>(width * padded), 0.0);
            for (int64_t j = 0; j < k; ++j) {
                if (static_cast<int64_t>(m[j].size()) != width)
                    fail(ErrorCategory::InvalidModel, at + ": a row of the matrix has " + std::to_string(m[j].size()) +
                                                          " values, the input " + std::to_string(width));
                for (int64_t l = 0; l < width; ++l) wt[l * padded + j] = m[j][l];
            }
            e.parts.buffers.push_back(make_f64(pre + "wt", {width, padded}, wt));
            e.line(out + " = ops.pg_predict.project(" + h + ", self." + pre + "wt, " + std::to_string(k) + ", self." +
                   pre + "offset)");
        } else {
            std::vector<double> flat;
            for (const auto& row : m) flat.insert(flat.end(), row.begin(), row.end());
            e.parts.buffers.push_back(make_f64(pre + "matrix", {k, width}, flat));
            e.line(out + " = torch.matmul(" + h + ", self." + pre + "matrix.t()) + self." + pre + "offset");
        }
        width = k;
        break;
    }
    case spec::Op::Bucketize: {
        // One binary search per value: the edges of every column padded with +inf to one
        // length (a pad is never < x; for side right, x = +inf counts the pads and the count
        // is cut back to the column's edges).
        const auto edges = spec::param_matrix(s, "edges", at);
        const bool right = spec::bucketize_counts_equal(s, at);
        size_t longest = 0;
        for (const auto& c : edges) longest = std::max(longest, c.size());
        const std::string counts = e.var();
        if (longest == 0) {
            e.line(counts + " = torch.zeros_like(" + h + ")");
        } else {
            const int64_t C = static_cast<int64_t>(edges.size()), K = static_cast<int64_t>(longest);
            std::vector<double> padded, count;
            for (const auto& c : edges) {
                padded.insert(padded.end(), c.begin(), c.end());
                padded.resize(padded.size() + (longest - c.size()), HUGE_VAL);
                count.push_back(static_cast<double>(c.size()));
            }
            e.parts.buffers.push_back(make_f64(pre + "edges", {C, K}, padded));
            e.line(counts + " = torch.searchsorted(self." + pre + "edges, " + h + ".t().contiguous(), right=" +
                   (right ? "True" : "False") + ").t().double()");
            if (right) {
                e.parts.buffers.push_back(make_f64(pre + "count", {C}, count));
                e.line(counts + " = torch.minimum(" + counts + ", self." + pre + "count)");
            }
        }
        e.line(out + " = torch.where(torch.isnan(" + h + "), " + h + ", " + counts + ")");
        break;
    }
    case spec::Op::Monomials: {
        const auto powers = spec::param_matrix(s, "powers", at);
        const int64_t k = static_cast<int64_t>(powers.size());
        std::vector<double> flat;
        for (const auto& row : powers) flat.insert(flat.end(), row.begin(), row.end());
        e.parts.buffers.push_back(make_f64(pre + "powers", {k, width}, flat));
        e.note_width(k * width);  // pow over [N, k, width]
        e.line(out + " = torch.prod(torch.pow(" + h + ".unsqueeze(1), self." + pre + "powers), 2)");
        width = k;
        break;
    }
    case spec::Op::Kernel: {
        emit_kernel(e, s, h, out, pre, width);
        break;
    }
    case spec::Op::Neighbors: {
        emit_neighbors(e, s, h, out, pre, width);
        break;
    }
    case spec::Op::Power: {
        emit_power(e, s, h, out, pre, width);
        break;
    }
    case spec::Op::Quantile: {
        emit_quantile(e, s, h, out, pre, width);
        break;
    }
    case spec::Op::Model: {
        emit_model(e, s, h, out, pre, width);
        break;
    }
    case spec::Op::Concat: {
        std::vector<std::string> outs;
        int64_t total = 0;
        for (size_t i = 0; i < s.parts.size(); ++i) {
            const spec::Step::Part& part = s.parts[i];
            const std::string name = pre + "part" + std::to_string(i);
            std::vector<int64_t> cols(part.columns.begin(), part.columns.end());
            e.parts.buffers.push_back(make_i64(name, {static_cast<int64_t>(cols.size())}, cols));
            const std::string in = e.var();
            e.line(in + " = " + select_columns(h, name, cols));
            int64_t w = static_cast<int64_t>(cols.size());
            std::string r = in;
            for (const spec::Step& sub : part.steps) r = emit_step(e, sub, r, w);
            outs.push_back(r);
            total += w;
        }
        std::string list;
        for (const std::string& o : outs) list += (list.empty() ? "" : ", ") + o;
        e.line(out + " = torch.cat([" + list + "], 1)");
        width = total;
        break;
    }
    case spec::Op::None: case spec::Op::Linear: case spec::Op::TorchScript: {
        fail(ErrorCategory::Unsupported,
             std::string("compiler: featurizer op \"") + spec::op_name(s.op) + "\" is not supported");
    }
    }
    e.note_width(width);
    return out;
}

}  // namespace

void build_featurizers(const spec::Pipeline& p, ProgramParts& parts) {
    parts.reads_float64 = true;  // featurize() starts with x.double()
    Emitter e{parts, "", 0, 0};
    std::string h = "x.double()";
    int64_t width = p.input_width();
    e.note_width(width);
    if (!p.steps.empty()) {
        e.line("h = x.double()");
        h = "h";
        for (const spec::Step& s : p.steps) h = emit_step(e, s, h, width);
    }
    if (width != p.model.num_features)
        fail(ErrorCategory::Internal, "compiler: the featurizers give " + std::to_string(width) +
                                          " columns, the model reads " + std::to_string(p.model.num_features));
    const int64_t chunk = featurize_chunk_rows(e.widest);
    if (chunk == 0) {
        parts.source += "def featurize(self, x: Tensor) -> Tensor:\n" + e.src + "    return " + h + "\n";
        return;
    }
    // Wide intermediates (a kernel over thousands of support vectors, an MLP's hidden layer,
    // ...): featurize a few rows at a time. Temporaries of megabytes are mapped and unmapped
    // for every op, and the page faults dominate: measured here, an RBF SVC with 4830 support
    // vectors ran 40× and an MLP with 100 hidden units 28× slower than in 1 MB chunks.
    const std::string c = std::to_string(chunk);
    parts.source += "def featurize_rows(self, x: Tensor) -> Tensor:\n" + e.src + "    return " + h + "\n";
    parts.source += "def featurize(self, x: Tensor) -> Tensor:\n"
                    "    n = x.size(0)\n"
                    "    if n <= " + c + ":\n"
                    "        return self.featurize_rows(x)\n"
                    "    outs: List[Tensor] = []\n"
                    "    for start in range(0, n, " + c + "):\n"
                    "        outs.append(self.featurize_rows(x.narrow(0, start, min(" + c + ", n - start))))\n"
                    "    return torch.cat(outs, 0)\n";
}

int64_t featurize_chunk_rows(int64_t widest) {
    constexpr int64_t kMaxElements = int64_t(1) << 17;  // 1 MB of float64 per intermediate
    constexpr int64_t kTypicalBatch = 4096;
    if (widest * kTypicalBatch <= kMaxElements) return 0;  // the whole batch stays small
    return std::max<int64_t>(16, kMaxElements / std::max<int64_t>(1, widest));
}

}  // namespace pg_predict::compiler
