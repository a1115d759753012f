// scikit-learn naive Bayes, k-means, multi-layer perceptrons and kernel SVMs (the last step of
// a `format = "sklearn"` document, src/spec/SKLEARN_FORMAT.md) → featurizer steps appended to
// pipeline.steps plus a "linear" estimator. Checked against scikit-learn 1.2.1.
//
// What scikit-learn computes, and how it is expressed here (all float64):
//  - MultinomialNB: jll = x · feature_log_probᵀ + class_log_prior; predict_proba =
//    exp(jll - logsumexp(jll)) = softmax(jll) → linear + Softmax.
//  - BernoulliNB: x binarized (x > binarize → 1) unless binarize is null, then
//    jll = x · (log p - log(1 - p))ᵀ + class_log_prior + Σ log(1 - p) → threshold + linear +
//    Softmax.
//  - GaussianNB: jll_i = log prior_i - ½ Σ log(2π var_ij) - ½ Σ (x_j - θ_ij)² / var_ij, a
//    quadratic in x: [x', x'²] (x' = x - c, c the mean of θ over the classes, which keeps the
//    expanded square from cancelling) → affine + concat + linear + Softmax.
//  - KMeans / MiniBatchKMeans: predict = argmin ‖x - c‖² = argmax 2 x·c - ‖c‖² → linear over
//    the classes 0..k-1 without probabilities.
//  - MLPClassifier / MLPRegressor: each hidden layer a "project" step (Wᵀ, b) and its
//    activation (identity, tanh, relu, expit); the output layer the linear estimator with
//    Logistic (binary: one output p, [1 - p, p]; predict p > 0.5, ties class 0), Softmax
//    (multiclass) or Identity (regression).
//  - SVC / NuSVC: libsvm's one-vs-one vote. "kernel" step → K [N × n_sv]; per class pair
//    (i, j), i < j, in libsvm's order: d = Σ_{sv ∈ i} coef[j-1][sv] K + Σ_{sv ∈ j} coef[i][sv] K
//    + intercept[p] (a "project" step; intercept = -rho, libsvm's own sign, also for binary
//    models); d > 0 votes i, else j ("threshold" step, then a linear estimator that counts
//    each class's votes). The argmax of the votes takes the lowest index on a tie, as libsvm.
//    No probabilities: predict_proba of probability=True models (Platt scaling + pairwise
//    coupling) is not supported.
//  - SVR / NuSVR: "kernel" step, then linear with coef = dual_coef[0], intercept[0].
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pg_predict/common/error.hpp"
#include "pg_predict/importers/sklearn.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::importers {

namespace {

using nlohmann::json;
using Matrix = std::vector<std::vector<double>>;
using spec::PostTransform;
using spec::Task;

// Field access: every complaint names the estimator and the JSON path.
struct Reader {
    const json& step;
    std::string type;
    std::string path;

    [[noreturn]] void bad(const std::string& field, const std::string& what) const {
        fail(ErrorCategory::InvalidModel, "scikit-learn export: " + field + " " + what);
    }
    [[noreturn]] void unsupported(const std::string& what) const {
        fail(ErrorCategory::Unsupported, "scikit-learn: " + type + ": " + what + " is not supported");
    }
    std::string at(const std::string& key) const { return path + "." + key; }
    static std::string item(const std::string& p, size_t i) { return p + "[" + std::to_string(i) + "]"; }

    const json* find(const char* key) const {
        auto it = step.find(key);
        return it == step.end() || it->is_null() ? nullptr : &*it;
    }
    const json& need(const char* key) const {
        const json* v = find(key);
        if (v == nullptr) bad(at(key), "is missing");
        return *v;
    }
    std::string text(const char* key) const {
        const json& v = need(key);
        if (!v.is_string()) bad(at(key), "must be a string");
        return v.get<std::string>();
    }
    double number(const json& v, const std::string& field) const {
        if (v.is_number()) {
            const double d = v.get<double>();
            if (std::isfinite(d)) return d;
        }
        bad(field, "must be a finite number");
    }
    double number(const char* key) const { return number(need(key), at(key)); }
    std::vector<double> vector(const json& a, const std::string& field, size_t want = SIZE_MAX) const {
        if (!a.is_array()) bad(field, "must be an array");
        if (want != SIZE_MAX && a.size() != want)
            bad(field, "has " + std::to_string(a.size()) + " entries, expected " + std::to_string(want));
        std::vector<double> out;
        for (size_t i = 0; i < a.size(); ++i) out.push_back(number(a[i], item(field, i)));
        return out;
    }
    std::vector<double> vector(const char* key, size_t want = SIZE_MAX) const {
        return vector(need(key), at(key), want);
    }
    // rows × cols (cols = SIZE_MAX: any, but the same for every row).
    Matrix matrix(const json& a, const std::string& field, size_t rows, size_t cols) const {
        if (!a.is_array() || a.empty()) bad(field, "must be a non-empty array of arrays");
        if (rows != SIZE_MAX && a.size() != rows)
            bad(field, "has " + std::to_string(a.size()) + " rows, expected " + std::to_string(rows));
        Matrix m;
        for (size_t r = 0; r < a.size(); ++r) {
            m.push_back(vector(a[r], item(field, r), cols));
            cols = m.back().size();
        }
        return m;
    }
    Matrix matrix(const char* key, size_t rows, size_t cols) const { return matrix(need(key), at(key), rows, cols); }
};

spec::Step make_step(spec::Op op, json params) {
    spec::Step s;
    s.op = op;
    s.params = std::move(params);
    return s;
}

json matrix_json(const Matrix& m) {
    json rows = json::array();
    for (const auto& r : m) rows.push_back(spec::numbers_to_json(r));
    return rows;
}

Matrix transpose(const Matrix& m) {
    Matrix t(m.empty() ? 0 : m[0].size(), std::vector<double>(m.size()));
    for (size_t r = 0; r < m.size(); ++r)
        for (size_t c = 0; c < m[r].size(); ++c) t[c][r] = m[r][c];
    return t;
}

void set_linear(spec::Pipeline& p, const Matrix& coef, const std::vector<double>& intercept, int32_t width) {
    p.model.num_features = width;
    p.model.num_groups = static_cast<int32_t>(coef.size());
    p.model.base_margin.assign(coef.size(), 0.0f);
    p.estimator = make_step(spec::Op::Linear, {{"coef", matrix_json(coef)}, {"intercept", spec::numbers_to_json(intercept)}});
}

void need_task(const Reader& r, const spec::Pipeline& p, bool classifier) {
    if (classifier && p.task != Task::Classification)
        r.bad("task", "is regression, but the model " + r.type + " is a classifier");
    if (!classifier && p.task != Task::Regression)
        r.bad("task", "is classification, but the model " + r.type + " is a regressor");
}

size_t num_classes(const Reader& r, const spec::Pipeline& p) {
    need_task(r, p, true);
    return p.classes.size();
}

// --- naive Bayes -----------------------------------------------------------------------------

void multinomial_nb(const Reader& r, spec::Pipeline& p, int32_t width) {
    const size_t k = num_classes(r, p);
    const Matrix flp = r.matrix("feature_log_prob", k, width);
    set_linear(p, flp, r.vector("class_log_prior", k), width);
    p.transform = PostTransform::Softmax;
}

void bernoulli_nb(const Reader& r, spec::Pipeline& p, int32_t width) {
    const size_t k = num_classes(r, p);
    Matrix coef = r.matrix("feature_log_prob", k, width);
    std::vector<double> intercept = r.vector("class_log_prior", k);
    for (size_t i = 0; i < k; ++i)
        for (double& v : coef[i]) {
            const double neg = std::log(1 - std::exp(v));  // as scikit-learn: log(1 - p)
            v -= neg;
            intercept[i] += neg;
        }
    for (size_t i = 0; i < k; ++i)
        for (double v : coef[i])
            if (!std::isfinite(v) || !std::isfinite(intercept[i]))
                r.unsupported("a feature probability of 0 or 1 (alpha = 0)");
    if (const json* b = r.find("binarize"))
        p.steps.push_back(make_step(spec::Op::Threshold, {{"threshold", r.number(*b, r.at("binarize"))}}));
    set_linear(p, coef, intercept, width);
    p.transform = PostTransform::Softmax;
}

void gaussian_nb(const Reader& r, spec::Pipeline& p, int32_t width) {
    const size_t k = num_classes(r, p);
    const size_t f = static_cast<size_t>(width);
    Matrix theta = r.matrix("theta", k, f);
    const Matrix var = r.matrix("var", k, f);
    const std::vector<double> prior = r.vector("class_prior", k);
    std::vector<double> center(f, 0.0), minus(f);
    for (size_t j = 0; j < f; ++j) {
        for (size_t i = 0; i < k; ++i) center[j] += theta[i][j] / static_cast<double>(k);
        minus[j] = -center[j];
    }
    p.steps.push_back(make_step(spec::Op::Affine, {{"scale", spec::numbers_to_json(std::vector<double>(f, 1.0))},
                                           {"offset", spec::numbers_to_json(minus)}}));
    spec::Step both = make_step(spec::Op::Concat, json::object());
    spec::Step::Part x, square;
    for (size_t j = 0; j < f; ++j) x.columns.push_back(static_cast<int32_t>(j));
    square.columns = x.columns;
    square.steps.push_back(make_step(spec::Op::Elementwise, {{"function", "square"}}));
    both.parts = {x, square};
    p.steps.push_back(std::move(both));

    Matrix coef(k, std::vector<double>(2 * f));
    std::vector<double> intercept(k);
    for (size_t i = 0; i < k; ++i) {
        if (!(prior[i] > 0)) r.bad(Reader::item(r.at("class_prior"), i), "must be positive");
        double b = std::log(prior[i]);
        for (size_t j = 0; j < f; ++j) {
            const double v = var[i][j], t = theta[i][j] - center[j];
            if (!(v > 0)) r.bad(Reader::item(Reader::item(r.at("var"), i), j), "must be positive");
            b -= 0.5 * std::log(2.0 * M_PI * v) + 0.5 * t * t / v;
            coef[i][j] = t / v;
            coef[i][f + j] = -0.5 / v;
        }
        intercept[i] = b;
    }
    set_linear(p, coef, intercept, static_cast<int32_t>(2 * f));
    p.transform = PostTransform::Softmax;
}

// --- k-means ---------------------------------------------------------------------------------

void kmeans(const Reader& r, spec::Pipeline& p, int32_t width) {
    const size_t k = num_classes(r, p);
    Matrix coef = r.matrix("cluster_centers", k, width);
    for (size_t i = 0; i < k; ++i)
        if (p.classes[i] != static_cast<double>(i))
            r.bad("classes", "must be the cluster indices 0.." + std::to_string(k - 1) + " for " + r.type);
    std::vector<double> intercept(k, 0.0);
    for (size_t i = 0; i < k; ++i)
        for (double& c : coef[i]) {
            intercept[i] -= c * c;
            c *= 2.0;
        }
    set_linear(p, coef, intercept, width);
    p.transform = PostTransform::Identity;
    p.has_probabilities = false;
}

// --- multi-layer perceptrons -----------------------------------------------------------------

void mlp(const Reader& r, spec::Pipeline& p, int32_t width, bool classifier) {
    need_task(r, p, classifier);
    const std::string activation = r.text("activation");
    const char* function = activation == "tanh" ? "tanh" : activation == "relu" ? "relu"
                           : activation == "logistic" ? "expit" : nullptr;
    if (function == nullptr && activation != "identity") r.unsupported("activation \"" + activation + "\"");
    const json& coefs = r.need("coefs");
    const json& intercepts = r.need("intercepts");
    if (!coefs.is_array() || coefs.empty()) r.bad(r.at("coefs"), "must be a non-empty array of layers");
    if (!intercepts.is_array() || intercepts.size() != coefs.size())
        r.bad(r.at("intercepts"), "must hold one array per layer of coefs");
    size_t in = static_cast<size_t>(width);
    for (size_t l = 0; l < coefs.size(); ++l) {
        const std::string cp = Reader::item(r.at("coefs"), l);
        const Matrix w = transpose(r.matrix(coefs[l], cp, in, SIZE_MAX));  // [out × in]
        const std::vector<double> b = r.vector(intercepts[l], Reader::item(r.at("intercepts"), l), w.size());
        if (l + 1 < coefs.size()) {
            p.steps.push_back(make_step(spec::Op::Project, {{"matrix", matrix_json(w)}, {"offset", spec::numbers_to_json(b)}}));
            if (function != nullptr) p.steps.push_back(make_step(spec::Op::Elementwise, {{"function", function}}));
        } else {
            set_linear(p, w, b, static_cast<int32_t>(in));
        }
        in = w.size();
    }
    const std::string out = r.text("out_activation");
    const size_t outputs = in;
    if (!classifier) {
        if (out != "identity") r.bad(r.at("out_activation"), "must be identity for a regressor");
        if (outputs != 1) r.unsupported("multi-output regression (" + std::to_string(outputs) + " outputs)");
        p.transform = PostTransform::Identity;
    } else if (out == "logistic") {
        if (outputs != 1 || p.classes.size() != 2)
            r.unsupported("multilabel classification (" + std::to_string(outputs) + " logistic outputs)");
        p.transform = PostTransform::Logistic;
    } else if (out == "softmax") {
        if (outputs != p.classes.size())
            r.bad(r.at("coefs"), "ends in " + std::to_string(outputs) + " outputs for " +
                                     std::to_string(p.classes.size()) + " classes");
        p.transform = PostTransform::Softmax;
    } else {
        r.bad(r.at("out_activation"), "must be logistic or softmax for a classifier, not \"" + out + "\"");
    }
}

// --- kernel SVMs -----------------------------------------------------------------------------

// The kernel step; returns the number of support vectors.
size_t push_kernel(const Reader& r, spec::Pipeline& p, int32_t width) {
    const std::string kernel = r.text("kernel");
    if (kernel != "linear" && kernel != "rbf" && kernel != "poly" && kernel != "sigmoid")
        r.unsupported("kernel \"" + kernel + "\"");
    const Matrix sv = r.matrix("support_vectors", SIZE_MAX, width);
    const json& degree = r.need("degree");
    if (!degree.is_number_integer() || degree.get<int64_t>() < 0 || degree.get<int64_t>() > 64)
        r.bad(r.at("degree"), "must be an integer in [0, 64]");
    p.steps.push_back(make_step(spec::Op::Kernel, {{"support_vectors", matrix_json(sv)},
                                           {"kernel", kernel},
                                           {"gamma", r.number("gamma")},
                                           {"coef0", r.number("coef0")},
                                           {"degree", degree.get<int64_t>()}}));
    return sv.size();
}

void svc(const Reader& r, spec::Pipeline& p, int32_t width) {
    const size_t k = num_classes(r, p);
    const json& ns = r.need("n_support");
    if (!ns.is_array() || ns.size() != k) r.bad(r.at("n_support"), "must hold one count per class");
    std::vector<size_t> start{0};
    for (size_t i = 0; i < k; ++i) {
        if (!ns[i].is_number_integer() || ns[i].get<int64_t>() < 0)
            r.bad(Reader::item(r.at("n_support"), i), "must be a non-negative integer");
        start.push_back(start.back() + ns[i].get<size_t>());
    }
    const size_t n = push_kernel(r, p, width);
    if (start.back() != n)
        r.bad(r.at("n_support"), "adds up to " + std::to_string(start.back()) + ", there are " + std::to_string(n) +
                                     " support vectors");
    const Matrix coef = r.matrix("dual_coef", k - 1, n);
    const size_t pairs = k * (k - 1) / 2;
    const std::vector<double> intercept = r.vector("intercept", pairs);

    // libsvm's decision per pair (i, j), i < j, and each class's vote for it.
    Matrix decision(pairs, std::vector<double>(n, 0.0));
    Matrix votes(k, std::vector<double>(pairs, 0.0));
    std::vector<double> base(k, 0.0);
    size_t q = 0;
    for (size_t i = 0; i < k; ++i)
        for (size_t j = i + 1; j < k; ++j, ++q) {
            for (size_t s = start[i]; s < start[i + 1]; ++s) decision[q][s] = coef[j - 1][s];
            for (size_t s = start[j]; s < start[j + 1]; ++s) decision[q][s] = coef[i][s];
            votes[i][q] = 1.0;   // bit = d > 0 → a vote for i
            votes[j][q] = -1.0;  // 1 - bit → a vote for j
            base[j] += 1.0;
        }
    p.steps.push_back(make_step(spec::Op::Project, {{"matrix", matrix_json(decision)}, {"offset", spec::numbers_to_json(intercept)}}));
    p.steps.push_back(make_step(spec::Op::Threshold, {{"threshold", 0.0}}));
    set_linear(p, votes, base, static_cast<int32_t>(pairs));
    p.transform = PostTransform::Identity;
    p.has_probabilities = false;
}

void svr(const Reader& r, spec::Pipeline& p, int32_t width) {
    need_task(r, p, false);
    const size_t n = push_kernel(r, p, width);
    set_linear(p, r.matrix("dual_coef", 1, n), r.vector("intercept", 1), static_cast<int32_t>(n));
    p.transform = PostTransform::Identity;
}

}  // namespace

bool import_sklearn_other_model(const json& step, const std::string& path, int32_t num_features, spec::Pipeline& p) {
    const std::string type = step.value("type", "");
    const Reader r{step, type, path};
    if (type == "MultinomialNB") multinomial_nb(r, p, num_features);
    else if (type == "BernoulliNB") bernoulli_nb(r, p, num_features);
    else if (type == "GaussianNB") gaussian_nb(r, p, num_features);
    else if (type == "KMeans" || type == "MiniBatchKMeans") kmeans(r, p, num_features);
    else if (type == "MLPClassifier") mlp(r, p, num_features, true);
    else if (type == "MLPRegressor") mlp(r, p, num_features, false);
    else if (type == "SVC" || type == "NuSVC") svc(r, p, num_features);
    else if (type == "SVR" || type == "NuSVR") svr(r, p, num_features);
    else return false;
    return true;
}

}  // namespace pg_predict::importers
