// Featurizer steps: parameter readers, shape checks and the double-precision evaluation the
// compiled programs are tested against (spec/steps.hpp lists the ops).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "pg_predict/common/error.hpp"
#include "pg_predict/common/interrupt.hpp"
#include "pg_predict/spec/json_reader.hpp"
#include "pg_predict/spec/limits.hpp"
#include "pg_predict/spec/pipeline.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::spec {

using nlohmann::json;

namespace {

[[noreturn]] void invalid(const std::string& where, const std::string& msg) {
    fail(ErrorCategory::InvalidModel, "invalid pipeline: " + where + ": " + msg);
}

const json& param(const Step& s, const char* key, const std::string& where) {
    if (!s.params.is_object()) invalid(where, std::string("op ") + op_name(s.op) + ": params must be an object");
    auto it = s.params.find(key);
    if (it == s.params.end()) invalid(where, std::string("op ") + op_name(s.op) + ": parameter \"" + key + "\" is missing");
    return *it;
}

bool matches(double x, double c) { return x == c || (std::isnan(x) && std::isnan(c)); }

std::string item(const std::string& where, size_t i) { return where + "[" + std::to_string(i) + "]"; }

int32_t check_categories(const Step& s, const std::vector<int32_t>& vocab, const std::string& where,
                         std::vector<std::vector<double>>& cats) {
    cats = param_matrix(s, "categories", where);
    if (cats.size() != vocab.size())
        invalid(where, std::string("op ") + op_name(s.op) + " has categories for " + std::to_string(cats.size()) +
                           " columns, its input has " + std::to_string(vocab.size()));
    for (size_t c = 0; c < cats.size(); ++c) {
        for (size_t i = 0; i < cats[c].size(); ++i) {
            const double v = cats[c][i];
            if (std::isinf(v)) invalid(where, "column " + std::to_string(c) + " lists an infinite category");
            for (size_t j = 0; j < i; ++j)
                if (matches(v, cats[c][j]))
                    invalid(where, "column " + std::to_string(c) + " lists category " + std::to_string(v) + " twice");
            if (vocab[c] >= 0 && !std::isnan(v) && (v < 0 || v >= vocab[c] || v != std::floor(v)))
                invalid(where, "column " + std::to_string(c) + " reads a text input, category " +
                                   std::to_string(v) + " is no index into its vocabulary of " +
                                   std::to_string(vocab[c]));
        }
    }
    return static_cast<int32_t>(cats.size());
}

// Whether the op may read a text column (the vocabulary indices of a text input).
bool may_read_text(Op op) {
    switch (op) {
        case Op::OneHot: case Op::Ordinal: case Op::Impute: case Op::Concat:
            return true;
        case Op::None: case Op::Affine: case Op::Elementwise: case Op::Threshold: case Op::Clip:
        case Op::IsMissing: case Op::Normalize: case Op::Project: case Op::Bucketize: case Op::Monomials:
        case Op::Kernel: case Op::Neighbors: case Op::Linear: case Op::TorchScript: case Op::Power:
        case Op::Quantile: case Op::Model:
            return false;
    }
    return false;
}

// One row of op kernel: its value against each support vector, as libsvm computes it.
std::vector<double> kernel_row(const Step& s, const std::vector<double>& x, const std::string& at) {
    const auto sv = param_matrix(s, "support_vectors", at);
    const std::string kernel = param(s, "kernel", at).get<std::string>();
    const double gamma = param_number(s, "gamma", at), coef0 = param_number(s, "coef0", at);
    const double degree = param_number(s, "degree", at);
    std::vector<double> y(sv.size());
    for (size_t r = 0; r < sv.size(); ++r) {
        double acc = 0.0;
        for (size_t c = 0; c < x.size(); ++c) {
            const double d = kernel == "rbf" ? x[c] - sv[r][c] : 0.0;
            acc += kernel == "rbf" ? d * d : x[c] * sv[r][c];
        }
        if (kernel == "rbf") y[r] = std::exp(-gamma * acc);
        else if (kernel == "poly") y[r] = std::pow(gamma * acc + coef0, degree);
        else if (kernel == "sigmoid") y[r] = std::tanh(gamma * acc + coef0);
        else y[r] = acc;
    }
    return y;
}


// One row of op neighbors: the weighted mean of the targets of the k nearest points (ties at
// equal distance: the lower point index first, as a stable sort). A row with a NaN or infinite
// value has no nearest points (scikit-learn refuses it): every output is NaN.
// With "radius" r instead of "k": every point at distance <= r (scikit-learn's RadiusNeighbors*),
// and where there is none the "outside" targets (NaN when absent).
std::vector<double> neighbors_row(const Step& s, const std::vector<double>& x, const std::string& at) {
    const auto points = param_matrix(s, "points", at);
    const auto targets = param_matrix(s, "targets", at);
    const bool by_radius = s.params.contains("radius");
    const double radius = by_radius ? param_number(s, "radius", at) : 0.0;
    size_t k = by_radius ? 0 : static_cast<size_t>(param_number(s, "k", at));
    const double p = param_number(s, "p", at);
    const bool by_distance = param(s, "weights", at) == "distance";
    const size_t width = targets.empty() ? 0 : targets[0].size();
    for (double v : x)
        if (!std::isfinite(v)) return std::vector<double>(width, std::nan(""));
    std::vector<double> d(points.size());
    for (size_t r = 0; r < points.size(); ++r) {
        double acc = 0.0;
        for (size_t c = 0; c < x.size(); ++c) {
            const double diff = std::fabs(x[c] - points[r][c]);
            acc = p == 1.0 ? acc + diff : p == 2.0 ? acc + diff * diff : std::isinf(p) ? std::max(acc, diff)
                                                                                        : acc + std::pow(diff, p);
        }
        d[r] = p == 1.0 || std::isinf(p) ? acc : p == 2.0 ? std::sqrt(acc) : std::pow(acc, 1.0 / p);
    }
    std::vector<size_t> order(points.size());
    for (size_t r = 0; r < order.size(); ++r) order[r] = r;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return d[a] < d[b]; });
    if (by_radius) {
        while (k < order.size() && d[order[k]] <= radius) ++k;
        if (k == 0)
            return s.params.contains("outside") ? param_vector(s, "outside", at)
                                                : std::vector<double>(width, std::nan(""));
    }
    // scikit-learn's distance weights: 1 / d, but where a distance is 0 only the exact matches
    // count (weight 1 each).
    const bool exact = by_distance && d[order[0]] == 0.0;
    std::vector<double> y(width, 0.0);
    double total = 0.0;
    for (size_t i = 0; i < k; ++i) {
        const size_t r = order[i];
        const double w = !by_distance ? 1.0 : exact ? (d[r] == 0.0 ? 1.0 : 0.0) : 1.0 / d[r];
        total += w;
        for (size_t c = 0; c < width; ++c) y[c] += w * targets[r][c];
    }
    for (double& v : y) v /= total;
    return y;
}

}  // namespace

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
        // Not numpy's: the activations of scikit-learn's MLPs (scipy.special.expit, max(x, 0)),
        // and LightGBM's zero_as_missing (|x| <= kZeroThreshold is missing).
        "expit",    "relu",    "zero_as_missing"};
    return names;
}

bool is_elementwise_function(const std::string& name) {
    for (const std::string& n : elementwise_functions())
        if (n == name) return true;
    return false;
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
    if (f == "expit") return 1.0 / (1.0 + std::exp(-x));
    if (f == "relu") return x > 0.0 || std::isnan(x) ? x : 0.0;
    if (f == "zero_as_missing") return std::fabs(x) <= kLightgbmZero ? NAN : x;
    fail(ErrorCategory::InvalidModel, "invalid pipeline: elementwise function \"" + f + "\" is not known");
}

double apply_power(const std::string& method, double lambda, double x) {
    constexpr double kEps = 2.220446049250313e-16;  // np.spacing(1.0), scikit-learn's test for 0 and 2
    if (method == "box-cox") {
        if (!(x > 0.0)) return NAN;  // scikit-learn refuses it; NaN stays NaN
        return std::fabs(lambda) < 1e-19 ? std::log(x) : std::expm1(lambda * std::log(x)) / lambda;
    }
    if (x >= 0.0) return std::fabs(lambda) < kEps ? std::log1p(x) : (std::pow(x + 1.0, lambda) - 1.0) / lambda;
    if (std::isnan(x)) return x;
    return std::fabs(lambda - 2.0) > kEps ? -(std::pow(1.0 - x, 2.0 - lambda) - 1.0) / (2.0 - lambda)
                                          : -std::log1p(-x);
}

namespace {

// numpy's interp(x, xp, fp) of a finite x, xp ascending (equal entries allowed): fp at the
// last xp <= x, interpolated towards the next, computed as numpy does.
double numpy_interp(double x, const std::vector<double>& xp, const std::vector<double>& fp) {
    const size_t n = xp.size();
    if (x < xp[0]) return fp[0];
    if (x > xp[n - 1]) return fp[n - 1];
    const size_t j = static_cast<size_t>(std::upper_bound(xp.begin(), xp.end(), x) - xp.begin()) - 1;
    if (j == n - 1 || xp[j] == x) return fp[j];
    const double slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]);
    return slope * (x - xp[j]) + fp[j];
}

}  // namespace

double normal_quantile(double p) {
    if (std::isnan(p) || p < 0.0 || p > 1.0) return NAN;
    if (p == 0.0) return -HUGE_VAL;
    if (p == 1.0) return HUGE_VAL;
    // Acklam's rational approximation (relative error 1.2e-9), then a Halley step on erfc.
    static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                               1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                               6.680131188771972e+01,  -1.328068155288572e+01};
    static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                               -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
    static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                               3.754408661907416e+00};
    const double low = 0.02425;
    double x;
    if (p < low || p > 1.0 - low) {
        const double q = std::sqrt(-2.0 * std::log(p < low ? p : 1.0 - p));
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
        if (p > low) x = -x;
    } else {
        const double q = p - 0.5, r = q * q;
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
            (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
    }
    for (int i = 0; i < 2; ++i) {
        const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
        const double u = e * std::sqrt(2.0 * M_PI) * std::exp(x * x / 2.0);
        x = x - u / (1.0 + x * u / 2.0);
    }
    return x;
}

double apply_quantile(const std::vector<double>& quantiles, const std::vector<double>& references, bool normal,
                      double x) {
    constexpr double kBounds = 1e-7;  // scikit-learn's BOUNDS_THRESHOLD
    if (std::isnan(x)) return x;
    const double lo = quantiles.front(), hi = quantiles.back();
    double y;
    if (normal ? x - kBounds < lo : x == lo) y = 0.0;
    else if (normal ? x + kBounds > hi : x == hi) y = 1.0;
    else {
        // numpy's interp forwards, and backwards over the negated, reversed knots.
        std::vector<double> nq(quantiles.rbegin(), quantiles.rend()), nr(references.rbegin(), references.rend());
        for (double& v : nq) v = -v;
        for (double& v : nr) v = -v;
        y = 0.5 * (numpy_interp(x, quantiles, references) - numpy_interp(-x, nq, nr));
    }
    if (!normal) return y;
    const double eps = 2.220446049250313e-16;
    const double clip_lo = normal_quantile(kBounds - eps), clip_hi = normal_quantile(1.0 - (kBounds - eps));
    return std::min(std::max(normal_quantile(y), clip_lo), clip_hi);
}

json number_to_json(double d) {
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
    return d;
}

json numbers_to_json(const std::vector<double>& v) {
    json a = json::array();
    for (double d : v) a.push_back(number_to_json(d));
    return a;
}

double param_number(const json& v, const std::string& field) {
    return JsonReader(v, "invalid pipeline", field).number();
}

// The step's parameter `key`, read through the one JSON reader: "invalid pipeline:
// steps[2].scale[3]: must be a number ...".
static JsonReader param_reader(const Step& s, const char* key, const std::string& where) {
    param(s, key, where);  // params an object holding key, or the step's own message
    return JsonReader(s.params, "invalid pipeline", where).need(key);
}

double param_number(const Step& s, const char* key, const std::string& where) {
    return param_reader(s, key, where).number();
}

double missing_marker(const Step& s, const std::string& where) {
    return s.params.is_object() && s.params.contains("missing_value") ? param_number(s, "missing_value", where) : NAN;
}

std::vector<double> param_vector(const Step& s, const char* key, const std::string& where) {
    return param_reader(s, key, where).numbers();
}

std::vector<std::vector<double>> param_matrix(const Step& s, const char* key, const std::string& where) {
    return param_reader(s, key, where).ragged_matrix();
}

std::vector<int32_t> param_ints(const Step& s, const char* key, const std::string& where) {
    return param_reader(s, key, where).integers(INT32_MIN, INT32_MAX);
}

namespace {

// A step's output width must stay a vector we can allocate: FeatureUnion parts each read the
// whole input, so unions in a row multiply the width of a small document.
void check_width(size_t width, const std::string& at) {
    if (width > static_cast<size_t>(kMaxStepWidth))
        invalid(at, "outputs more than " + std::to_string(kMaxStepWidth) + " columns");
}

int32_t check_steps_at(const std::vector<Step>& steps, std::vector<int32_t>& vocab, const std::string& where,
                       int nesting);

// A binary classifier without probabilities whose two margins are [-d, d]: its
// decision_function is the second (compiler/outputs.cpp, two_sided_decisions).
bool model_two_sided(const Pipeline& m) {
    return m.task == Task::Classification && m.transform == PostTransform::Identity && !m.has_probabilities &&
           m.classes.size() == 2 && m.model.num_groups == 2;
}

// One row of op model: the nested pipeline's reference on it (see model_output).
std::vector<double> model_row(const Step& s, const std::vector<double>& x, const std::string& at) {
    const Pipeline m = model_pipeline(s, at);
    const std::string output = model_output(s, at);
    if (output == "decision_function") {
        // Only linear estimators (model_width): the steps, then x · coefᵀ + intercept, scaled.
        const std::vector<double> z = apply_steps(m.steps, x);
        const auto coef = param_matrix(m.estimator, "coef", at + ".estimator");
        const std::vector<double> b = param_vector(m.estimator, "intercept", at + ".estimator");
        std::vector<double> y;
        for (size_t g = model_two_sided(m) ? 1 : 0; g < coef.size(); ++g) {
            double acc = b[g];
            for (size_t c = 0; c < z.size(); ++c) acc += z[c] * coef[g][c];
            y.push_back(acc * m.decision_scale);
        }
        return y;
    }
    std::vector<float> out(static_cast<size_t>(m.output_width()));
    reference_predict(m, x.data(), 1, out.data());
    std::vector<double> y(out.begin(), out.end());
    if (output == "predict") return y;
    // label: one-hot of the predicted class, the first of equal maxima (the second half holds
    // the decision values when has_decision_columns).
    const size_t k = m.classes.size();
    const size_t from = y.size() - k;
    size_t best = from;
    for (size_t c = from; c < y.size(); ++c) {
        if (std::isnan(y[c])) return std::vector<double>(k, NAN);  // no label: no vote
        if (y[c] > y[best]) best = c;
    }
    std::vector<double> onehot(k, 0.0);
    onehot[best - from] = 1.0;
    return onehot;
}

// impute's and is_missing's "missing_value": a finite number compared with numbers only (a text
// column carries vocabulary indices).
void check_missing_marker(const Step& s, const std::vector<int32_t>& vocab, const std::string& at) {
    const double m = missing_marker(s, at);
    if (std::isnan(m)) return;
    if (!std::isfinite(m)) invalid(at, std::string(op_name(s.op)) + " missing_value must be finite or NaN");
    for (int32_t v : vocab)
        if (v >= 0) invalid(at, std::string(op_name(s.op)) + " missing_value of a text column must be NaN");
}

void check_one(const Step& s, std::vector<int32_t>& vocab, const std::string& at, int nesting) {
    const size_t w = vocab.size();
    if (s.op != Op::Concat && !s.parts.empty()) invalid(at, std::string("op ") + op_name(s.op) + " has parts; only concat has");
    const bool reads_text = [&] {
        for (int32_t v : vocab) if (v >= 0) return true;
        return false;
    }();
    if (reads_text && !may_read_text(s.op))
        invalid(at, std::string("op ") + op_name(s.op) + " reads a text input; only one_hot, ordinal and impute can");
    switch (s.op) {
    case Op::Affine: {
        for (const char* key : {"scale", "offset"}) {
            std::vector<double> v = param_vector(s, key, at);
            if (v.size() != w)
                invalid(at, std::string("affine ") + key + " has " + std::to_string(v.size()) +
                                " entries for a vector of " + std::to_string(w));
            for (double d : v) if (!std::isfinite(d)) invalid(at, std::string("affine ") + key + " must be finite");
        }
        break;
    }
    case Op::Impute: {
        std::vector<double> v = param_vector(s, "statistics", at);
        if (v.size() != w)
            invalid(at, "impute statistics has " + std::to_string(v.size()) + " entries for a vector of " +
                            std::to_string(w));
        // NaN leaves a missing value missing; a text column's statistic is a vocabulary index.
        for (double d : v) if (std::isinf(d)) invalid(at, "impute statistics must not be infinite");
        check_missing_marker(s, vocab, at);
        for (size_t c = 0; c < w; ++c)
            if (vocab[c] >= 0 && !std::isnan(v[c]) && (v[c] < 0 || v[c] >= vocab[c] || v[c] != std::floor(v[c])))
                invalid(at, "impute statistic of text column " + std::to_string(c) +
                                " is no index into its vocabulary");
        break;
    }
    case Op::OneHot: {
        std::vector<std::vector<double>> cats;
        check_categories(s, vocab, at, cats);
        std::vector<int32_t> drop = param_ints(s, "drop", at);
        if (drop.size() != w)
            invalid(at, "one_hot drop has " + std::to_string(drop.size()) + " entries for " +
                            std::to_string(w) + " columns");
        size_t out = 0;
        for (size_t c = 0; c < w; ++c) {
            if (drop[c] < -1 || drop[c] >= static_cast<int32_t>(cats[c].size()))
                invalid(at, "one_hot drop " + std::to_string(drop[c]) + " of column " + std::to_string(c) +
                                " is not a category index");
            out += cats[c].size() - (drop[c] >= 0 ? 1 : 0);
        }
        vocab.assign(out, -1);
        break;
    }
    case Op::Ordinal: {
        std::vector<std::vector<double>> cats;
        check_categories(s, vocab, at, cats);
        // NaN encodes "no category"; an infinite code is no index.
        for (const char* key : {"unknown_value", "missing_value"})
            if (std::isinf(param_number(s, key, at)))
                invalid(at, std::string("ordinal ") + key + " must not be infinite");
        vocab.assign(w, -1);
        break;
    }
    case Op::Elementwise: {
        const json& f = param(s, "function", at);
        if (!f.is_string() || !is_elementwise_function(f.get<std::string>()))
            invalid(at, "elementwise function " + f.dump() + " is not known");
        break;
    }
    case Op::Threshold: {
        if (!std::isfinite(param_number(s, "threshold", at))) invalid(at, "threshold must be finite");
        break;
    }
    case Op::Clip: {
        const double lo = param_number(s, "min", at), hi = param_number(s, "max", at);
        if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi)
            invalid(at, "clip needs finite min <= max");
        break;
    }
    case Op::IsMissing: {
        check_missing_marker(s, vocab, at);
        break;
    }
    case Op::Normalize: {
        const json& n = param(s, "norm", at);
        if (n != "l1" && n != "l2" && n != "max") invalid(at, "normalize norm must be \"l1\", \"l2\" or \"max\"");
        break;
    }
    case Op::Project: {
        const auto m = param_matrix(s, "matrix", at);
        const std::vector<double> off = param_vector(s, "offset", at);
        if (m.size() != off.size())
            invalid(at, "project has " + std::to_string(m.size()) + " matrix rows and " +
                            std::to_string(off.size()) + " offsets");
        for (size_t r = 0; r < m.size(); ++r) {
            if (m[r].size() != w)
                invalid(at, "project matrix row " + std::to_string(r) + " has " + std::to_string(m[r].size()) +
                                " entries for a vector of " + std::to_string(w));
            for (double d : m[r]) if (!std::isfinite(d)) invalid(at, "project matrix must be finite");
            if (!std::isfinite(off[r])) invalid(at, "project offset must be finite");
        }
        vocab.assign(m.size(), -1);
        break;
    }
    case Op::Bucketize: {
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
        break;
    }
    case Op::Monomials: {
        const auto powers = param_matrix(s, "powers", at);
        if (powers.empty()) invalid(at, "monomials has no powers");
        for (size_t k = 0; k < powers.size(); ++k) {
            if (powers[k].size() != w)
                invalid(at, "monomials powers row " + std::to_string(k) + " has " +
                                std::to_string(powers[k].size()) + " entries for a vector of " + std::to_string(w));
            for (double p : powers[k])
                if (!(p >= 0 && p <= 64 && p == std::floor(p)))
                    invalid(at, "monomials powers must be integers in [0, 64]");
        }
        vocab.assign(powers.size(), -1);
        break;
    }
    case Op::Kernel: {
        const auto sv = param_matrix(s, "support_vectors", at);
        if (sv.empty()) invalid(at, "kernel has no support vectors");
        for (size_t r = 0; r < sv.size(); ++r) {
            if (sv[r].size() != w)
                invalid(at, "kernel support vector " + std::to_string(r) + " has " + std::to_string(sv[r].size()) +
                                " entries for a vector of " + std::to_string(w));
            for (double d : sv[r]) if (!std::isfinite(d)) invalid(at, "kernel support vectors must be finite");
        }
        const json& k = param(s, "kernel", at);
        if (k != "linear" && k != "rbf" && k != "poly" && k != "sigmoid")
            invalid(at, "kernel must be \"linear\", \"rbf\", \"poly\" or \"sigmoid\", not " + k.dump());
        for (const char* key : {"gamma", "coef0"})
            if (!std::isfinite(param_number(s, key, at))) invalid(at, std::string("kernel ") + key + " must be finite");
        const double degree = param_number(s, "degree", at);
        if (!(degree >= 0 && degree <= 64 && degree == std::floor(degree)))
            invalid(at, "kernel degree must be an integer in [0, 64]");
        vocab.assign(sv.size(), -1);
        break;
    }
    case Op::Neighbors: {
        const auto points = param_matrix(s, "points", at);
        const auto targets = param_matrix(s, "targets", at);
        if (points.empty()) invalid(at, "neighbors has no points");
        if (static_cast<int64_t>(points.size()) * static_cast<int64_t>(w) > kMaxNeighborsValues)
            invalid(at, "neighbors has " + std::to_string(points.size()) + " points of " + std::to_string(w) +
                            " values, more than the " + std::to_string(kMaxNeighborsValues) + " a program may keep");
        if (targets.size() != points.size())
            invalid(at, "neighbors has " + std::to_string(points.size()) + " points and " +
                            std::to_string(targets.size()) + " target rows");
        for (size_t r = 0; r < points.size(); ++r) {
            if (points[r].size() != w)
                invalid(at, "neighbors point " + std::to_string(r) + " has " + std::to_string(points[r].size()) +
                                " entries for a vector of " + std::to_string(w));
            for (double d : points[r]) if (!std::isfinite(d)) invalid(at, "neighbors points must be finite");
            if (targets[r].empty() || targets[r].size() != targets[0].size())
                invalid(at, "neighbors target rows must have the same, non-zero width");
            for (double d : targets[r]) if (!std::isfinite(d)) invalid(at, "neighbors targets must be finite");
        }
        if (s.params.contains("radius")) {  // every point within the radius instead of the k nearest
            const double r = param_number(s, "radius", at);
            if (!(r >= 0.0) || !std::isfinite(r)) invalid(at, "neighbors radius must be a finite number >= 0");
            if (s.params.contains("outside")) {
                const auto outside = param_vector(s, "outside", at);
                if (outside.size() != targets[0].size())
                    invalid(at, "neighbors outside must have one value per target column");
                for (double d : outside) if (!std::isfinite(d)) invalid(at, "neighbors outside must be finite");
            }
        } else {
            const double k = param_number(s, "k", at);
            if (!(k >= 1 && k <= static_cast<double>(points.size()) && k == std::floor(k)))
                invalid(at, "neighbors k must be an integer in [1, " + std::to_string(points.size()) + "]");
        }
        const double p = param_number(s, "p", at);
        if (!(p >= 1.0)) invalid(at, "neighbors p must be a number >= 1 (Infinity: the largest difference)");
        const json& weights = param(s, "weights", at);
        if (weights != "uniform" && weights != "distance")
            invalid(at, "neighbors weights must be \"uniform\" or \"distance\", not " + weights.dump());
        vocab.assign(targets[0].size(), -1);
        break;
    }
    case Op::Power: {
        const json& m = param(s, "method", at);
        if (m != "yeo-johnson" && m != "box-cox")
            invalid(at, "power method must be \"yeo-johnson\" or \"box-cox\", not " + m.dump());
        const std::vector<double> lambdas = param_vector(s, "lambdas", at);
        if (lambdas.size() != w)
            invalid(at, "power lambdas has " + std::to_string(lambdas.size()) + " entries for a vector of " +
                            std::to_string(w));
        for (double d : lambdas) if (!std::isfinite(d)) invalid(at, "power lambdas must be finite");
        break;
    }
    case Op::Quantile: {
        const json& o = param(s, "output", at);
        if (o != "uniform" && o != "normal")
            invalid(at, "quantile output must be \"uniform\" or \"normal\", not " + o.dump());
        const std::vector<double> refs = param_vector(s, "references", at);
        const auto quantiles = param_matrix(s, "quantiles", at);
        if (refs.size() < 2) invalid(at, "quantile needs at least 2 references");
        for (size_t i = 0; i < refs.size(); ++i)
            if (!(refs[i] >= 0.0 && refs[i] <= 1.0) || (i > 0 && refs[i] < refs[i - 1]))
                invalid(at, "quantile references must ascend in [0, 1]");
        if (quantiles.size() != w)
            invalid(at, "quantile has quantiles for " + std::to_string(quantiles.size()) + " columns, its input has " +
                            std::to_string(w));
        for (size_t c = 0; c < w; ++c) {
            if (quantiles[c].size() != refs.size())
                invalid(at, "quantile column " + std::to_string(c) + " has " + std::to_string(quantiles[c].size()) +
                                " quantiles for " + std::to_string(refs.size()) + " references");
            for (size_t i = 0; i < quantiles[c].size(); ++i)
                if (!std::isfinite(quantiles[c][i]) || (i > 0 && quantiles[c][i] < quantiles[c][i - 1]))
                    invalid(at, "quantiles of column " + std::to_string(c) + " must be finite and ascending");
        }
        break;
    }
    case Op::Model: {
        if (nesting >= kMaxStepNesting)
            invalid(at, "model nests deeper than " + std::to_string(kMaxStepNesting) + " levels");
        const Pipeline m = model_pipeline(s, at);
        if (static_cast<size_t>(m.input_width()) != w)
            invalid(at, "model reads " + std::to_string(m.input_width()) + " columns, its input has " + std::to_string(w));
        vocab.assign(static_cast<size_t>(model_width(m, model_output(s, at), at)), -1);
        break;
    }
    case Op::Concat: {
        if (s.parts.empty()) invalid(at, "concat has no parts");
        if (nesting >= kMaxStepNesting)
            invalid(at, "concat nests deeper than " + std::to_string(kMaxStepNesting) + " levels");
        std::vector<int32_t> out;
        for (size_t p = 0; p < s.parts.size(); ++p) {
            const Step::Part& part = s.parts[p];
            std::vector<int32_t> sub;
            for (int32_t c : part.columns) {
                if (c < 0 || static_cast<size_t>(c) >= w)
                    invalid(item(at + ".parts", p), "column " + std::to_string(c) + " is outside [0, " +
                                                        std::to_string(w) + ")");
                sub.push_back(vocab[c]);
            }
            check_steps_at(part.steps, sub, item(at + ".parts", p) + ".steps", nesting + 1);
            check_width(out.size() + sub.size(), at);
            out.insert(out.end(), sub.begin(), sub.end());
        }
        vocab = std::move(out);
        break;
    }
    case Op::None: case Op::Linear: case Op::TorchScript: {
        fail(ErrorCategory::Unsupported, "pipeline spec: " + at + ": op \"" + op_name(s.op) + "\" is not a featurizer");
    }
    }
    check_width(vocab.size(), at);
}

int32_t check_steps_at(const std::vector<Step>& steps, std::vector<int32_t>& vocab, const std::string& where,
                       int nesting) {
    for (size_t i = 0; i < steps.size(); ++i) {
        check_interrupts();  // per step: nested compositions can be deep
        check_one(steps[i], vocab, item(where, i), nesting);
    }
    return static_cast<int32_t>(vocab.size());
}

}  // namespace

int32_t check_steps(const std::vector<Step>& steps, std::vector<int32_t>& vocab, const std::string& where) {
    return check_steps_at(steps, vocab, where, 0);
}

int32_t check_step(const Step& step, std::vector<int32_t>& vocab, const std::string& where) {
    check_one(step, vocab, where, 0);
    return static_cast<int32_t>(vocab.size());
}

std::vector<double> apply_steps(const std::vector<Step>& steps, std::vector<double> x) {
    for (const Step& s : steps) {
        const std::string at = std::string("step ") + op_name(s.op);
        switch (s.op) {
        case Op::Affine: {
            const std::vector<double> scale = param_vector(s, "scale", at), offset = param_vector(s, "offset", at);
            for (size_t c = 0; c < x.size(); ++c) x[c] = x[c] * scale[c] + offset[c];
            break;
        }
        case Op::Impute: {
            const std::vector<double> stat = param_vector(s, "statistics", at);
            const double m = missing_marker(s, at);
            for (size_t c = 0; c < x.size(); ++c)
                if (std::isnan(x[c]) || x[c] == m) x[c] = stat[c];
            break;
        }
        case Op::OneHot: {
            const auto cats = param_matrix(s, "categories", at);
            const std::vector<int32_t> drop = param_ints(s, "drop", at);
            std::vector<double> y;
            for (size_t c = 0; c < x.size(); ++c)
                for (size_t k = 0; k < cats[c].size(); ++k)
                    if (static_cast<int32_t>(k) != drop[c]) y.push_back(matches(x[c], cats[c][k]) ? 1.0 : 0.0);
            x = std::move(y);
            break;
        }
        case Op::Ordinal: {
            const auto cats = param_matrix(s, "categories", at);
            const double unknown = param_number(s, "unknown_value", at);
            const double missing = param_number(s, "missing_value", at);
            for (size_t c = 0; c < x.size(); ++c) {
                double code = unknown;
                for (size_t k = 0; k < cats[c].size(); ++k)
                    if (matches(x[c], cats[c][k])) code = std::isnan(cats[c][k]) ? missing : static_cast<double>(k);
                x[c] = code;
            }
            break;
        }
        case Op::Elementwise: {
            const std::string f = param(s, "function", at).get<std::string>();
            for (double& v : x) v = apply_elementwise(f, v);
            break;
        }
        case Op::Threshold: {
            const double t = param_number(s, "threshold", at);
            for (double& v : x) v = v > t ? 1.0 : 0.0;
            break;
        }
        case Op::Clip: {
            const double lo = param_number(s, "min", at), hi = param_number(s, "max", at);
            for (double& v : x) v = v < lo ? lo : v > hi ? hi : v;  // NaN stays NaN
            break;
        }
        case Op::IsMissing: {
            const double m = missing_marker(s, at);
            for (double& v : x) v = std::isnan(v) || v == m ? 1.0 : 0.0;
            break;
        }
        case Op::Normalize: {
            const std::string norm = param(s, "norm", at).get<std::string>();
            double n = 0.0;
            for (double v : x) {
                if (norm == "l1") n += std::fabs(v);
                else if (norm == "l2") n += v * v;
                else n = std::isnan(v) || std::isnan(n) ? NAN : std::max(n, std::fabs(v));
            }
            if (norm == "l2") n = std::sqrt(n);
            if (n == 0.0) n = 1.0;
            for (double& v : x) v /= n;
            break;
        }
        case Op::Project: {
            const auto m = param_matrix(s, "matrix", at);
            const std::vector<double> off = param_vector(s, "offset", at);
            std::vector<double> y(m.size());
            for (size_t r = 0; r < m.size(); ++r) {
                double acc = 0.0;
                for (size_t c = 0; c < x.size(); ++c) acc += x[c] * m[r][c];
                y[r] = acc + off[r];
            }
            x = std::move(y);
            break;
        }
        case Op::Bucketize: {
            const auto edges = param_matrix(s, "edges", at);
            const bool right = bucketize_counts_equal(s, at);
            for (size_t c = 0; c < x.size(); ++c) {
                if (std::isnan(x[c])) continue;
                double n = 0.0;
                for (double e : edges[c]) n += (right ? e <= x[c] : e < x[c]) ? 1.0 : 0.0;
                x[c] = n;
            }
            break;
        }
        case Op::Monomials: {
            const auto powers = param_matrix(s, "powers", at);
            std::vector<double> y(powers.size(), 1.0);
            for (size_t k = 0; k < powers.size(); ++k)
                for (size_t c = 0; c < x.size(); ++c)
                    if (powers[k][c] != 0.0) y[k] *= std::pow(x[c], powers[k][c]);
            x = std::move(y);
            break;
        }
        case Op::Kernel: {
            x = kernel_row(s, x, at);
            break;
        }
        case Op::Neighbors: {
            x = neighbors_row(s, x, at);
            break;
        }
        case Op::Power: {
            const std::string method = param(s, "method", at).get<std::string>();
            const std::vector<double> lambdas = param_vector(s, "lambdas", at);
            for (size_t c = 0; c < x.size(); ++c) x[c] = apply_power(method, lambdas[c], x[c]);
            break;
        }
        case Op::Quantile: {
            const auto quantiles = param_matrix(s, "quantiles", at);
            const std::vector<double> refs = param_vector(s, "references", at);
            const bool normal = param(s, "output", at) == "normal";
            for (size_t c = 0; c < x.size(); ++c) x[c] = apply_quantile(quantiles[c], refs, normal, x[c]);
            break;
        }
        case Op::Concat: {
            std::vector<double> y;
            for (const Step::Part& part : s.parts) {
                std::vector<double> sub;
                for (int32_t c : part.columns) sub.push_back(x[c]);
                sub = apply_steps(part.steps, std::move(sub));
                y.insert(y.end(), sub.begin(), sub.end());
            }
            x = std::move(y);
            break;
        }
        case Op::Model: {
            x = model_row(s, x, at);
            break;
        }
        case Op::None: case Op::Linear: case Op::TorchScript: {
            fail(ErrorCategory::Unsupported, std::string("reference: op \"") + op_name(s.op) + "\" is not a featurizer");
        }
        }
    }
    return x;
}

Pipeline model_pipeline(const Step& s, const std::string& where) {
    const json& nested = param(s, "pipeline", where);
    if (!nested.is_object()) invalid(where, "model pipeline must be a JSON object");
    Pipeline m = from_json(nested.dump());
    if (!m.text_inputs.empty()) invalid(where, "a model's pipeline reads numbers only, not text inputs");
    if (m.task == Task::Transform) invalid(where, "a model's pipeline must end in an estimator");
    return m;
}

std::string model_output(const Step& s, const std::string& where) {
    const json& o = param(s, "output", where);
    if (o != "predict" && o != "decision_function" && o != "label")
        invalid(where, "model output must be \"predict\", \"decision_function\" or \"label\", not " + o.dump());
    return o.get<std::string>();
}

int32_t model_width(const Pipeline& m, const std::string& output, const std::string& where) {
    if (output == "predict") return m.output_width();
    if (m.task != Task::Classification) invalid(where, "model output \"" + output + "\" needs a classifier");
    if (output == "label") return static_cast<int32_t>(m.classes.size());
    if (m.estimator.op != Op::Linear) invalid(where, "model output \"decision_function\" needs a linear estimator");
    if (m.objective == "SVC" || m.objective == "NuSVC") invalid(where, "model output \"decision_function\" of an SVC");
    return model_two_sided(m) ? 1 : m.model.num_groups;
}

}  // namespace pg_predict::spec
