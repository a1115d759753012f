// scikit-learn linear models → the "linear" estimator (python/pg_predict/linear.py writes
// them), and the helpers every estimator family shares.
//
// Classifiers without predict_proba in scikit-learn (LinearSVC, Perceptron, RidgeClassifier,
// SGDClassifier with a loss other than log_loss and modified_huber) output decision values
// ([-d, d] when binary): their argmax is sklearn's predict, and has_probabilities is false.
// SGDClassifier(loss="modified_huber") has predict_proba: (clip(d, -1, 1) + 1) / 2, normalized
// over the classes when there are more than two (spec::PostTransform::ModifiedHuber).
//
// Generalized linear models (PoissonRegressor, GammaRegressor, TweedieRegressor) predict the
// inverse link of the linear predictor: exp for the log link, the identity otherwise.
// PLSRegression predicts ((x - x_mean) / x_std) · coefᵀ + intercept (scikit-learn 1.2's
// predict): an affine step before the linear estimator.
#include <cmath>
#include <string>
#include <vector>

#include "handlers.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::importers::sklearn {

using nlohmann::json;
using spec::PostTransform;
using spec::Task;

// --- shared by the estimator families --------------------------------------------------------

spec::Step make_step(spec::Op op, json params) {
    spec::Step s;
    s.op = op;
    s.params = std::move(params);
    return s;
}

Matrix transpose(const Matrix& m) {
    Matrix t(m.empty() ? 0 : m[0].size(), std::vector<double>(m.size()));
    for (size_t r = 0; r < m.size(); ++r)
        for (size_t c = 0; c < m[r].size(); ++c) t[c][r] = m[r][c];
    return t;
}

Matrix finite_matrix(const JsonReader& a, size_t rows, size_t cols) {
    if (!a.is_array() || a.empty()) a.invalid("must be a non-empty array of arrays");
    Matrix m = a.matrix(rows, cols);
    for (size_t r = 0; r < m.size(); ++r)
        for (size_t c = 0; c < m[r].size(); ++c)
            if (!std::isfinite(m[r][c])) a[r][c].invalid("must be a finite number");
    return m;
}

void set_linear(spec::Pipeline& p, const Matrix& coef, const std::vector<double>& intercept, int32_t width) {
    p.model.num_features = width;
    p.model.num_groups = static_cast<int32_t>(coef.size());
    p.model.base_margin.assign(coef.size(), 0.0f);
    p.estimator = make_step(spec::Op::Linear, {{"coef", spec::matrix_to_json(coef)}, {"intercept", spec::numbers_to_json(intercept)}});
}

void need_task(const JsonReader& step, const spec::Pipeline& p, bool classifier) {
    const std::string type = step.string("type");
    if (classifier && p.task != Task::Classification)
        step.invalid("task is regression, but the model " + type + " is a classifier");
    if (!classifier && p.task != Task::Regression)
        step.invalid("task is classification, but the model " + type + " is a regressor");
}

size_t num_classes(const JsonReader& step, const spec::Pipeline& p) {
    need_task(step, p, true);
    return p.classes.size();
}

// --- linear models ---------------------------------------------------------------------------

namespace {

// coef: [f] or [k][f], each row as wide as the model's input.
Matrix coef_rows(const JsonReader& step, const spec::Pipeline& p) {
    const JsonReader coef = step.array("coef");
    Matrix rows;
    if (!coef.empty() && coef.value()[0].is_array()) rows = coef.ragged_matrix();
    else rows.push_back(coef.numbers());
    for (size_t r = 0; r < rows.size(); ++r)
        if (rows[r].size() != static_cast<size_t>(p.model.num_features))
            coef.invalid("row " + std::to_string(r) + " has " + std::to_string(rows[r].size()) +
                         " coefficients, the model reads " + std::to_string(p.model.num_features) + " features");
    return rows;
}

std::vector<double> intercepts(const JsonReader& step, size_t k) {
    const auto v = step.optional("intercept");
    std::vector<double> out;
    if (!v) out.assign(k, 0.0);
    else if (v->is_array()) out = v->numbers();
    else out.assign(1, v->number());
    if (out.size() != k)
        v->invalid("has " + std::to_string(out.size()) + " entries for " + std::to_string(k) + " coef rows");
    return out;
}

enum class Output { Probabilities, ModifiedHuber, Decisions };

void linear_classifier(const JsonReader& step, spec::Pipeline& p, Output output, const std::string& multi_class) {
    need_task(step, p, true);
    Matrix coef = coef_rows(step, p);
    const size_t k = coef.size();
    std::vector<double> b = intercepts(step, k);
    const size_t n = p.classes.size();
    if (k == 1 ? n != 2 : k != n)
        step.need("coef").invalid("has " + std::to_string(k) + " rows for " + std::to_string(n) +
                                  " classes (one row when binary, else one per class)");
    switch (output) {
        case Output::ModifiedHuber:
            // predict is the sign (binary) or the argmax of the decision values, which the
            // transform keeps next to the probabilities when there are more than two classes.
            p.transform = PostTransform::ModifiedHuber;
            break;
        case Output::Decisions:
            // Decision values; a binary model's d becomes [-d, d] so that argmax is sklearn's
            // predict (d > 0 → classes[1], ties → classes[0]).
            if (k == 1) {
                std::vector<double> neg(coef[0]);
                for (double& d : neg) d = -d;
                coef.insert(coef.begin(), std::move(neg));
                b = {-b[0], b[0]};
            }
            p.has_probabilities = false;
            p.transform = PostTransform::Identity;
            break;
        case Output::Probabilities:
            if (k == 1) {
                // Binary: ovr gives [1 - σ(d), σ(d)]; multinomial softmax([-d, d]) = σ(±2d).
                if (multi_class == "multinomial") {
                    for (double& d : coef[0]) d *= 2.0;
                    b[0] *= 2.0;
                    p.decision_scale = 0.5;  // decision_function is d itself
                }
                p.transform = PostTransform::Logistic;
            } else {
                p.transform = multi_class == "multinomial" ? PostTransform::Softmax : PostTransform::Ovr;
            }
            break;
    }
    set_linear(p, coef, b, p.model.num_features);
}

}  // namespace

void linear_regressor(const JsonReader& step, int32_t num_features, spec::Pipeline& p) {
    need_task(step, p, false);
    Matrix coef = coef_rows(step, p);
    // A multi-output model (2-D coef_, one row per target): one margin per output.
    if (coef.size() != static_cast<size_t>(p.outputs))
        step.need("coef").invalid("has " + std::to_string(coef.size()) + " rows, the document's outputs is " +
                                  std::to_string(p.outputs));
    set_linear(p, coef, intercepts(step, coef.size()), num_features);
    p.transform = PostTransform::Identity;
}

void glm_regressor(const JsonReader& step, int32_t num_features, spec::Pipeline& p) {
    const std::string link = step.string("link");
    if (link != "log" && link != "identity") refuse(step, "link \"" + link + "\"");
    if (p.outputs != 1) refuse(step, "several outputs (scikit-learn fits one target)");
    linear_regressor(step, num_features, p);
    if (link == "log") p.transform = PostTransform::Exp;
}

void pls_regression(const JsonReader& step, int32_t num_features, spec::Pipeline& p) {
    const size_t f = static_cast<size_t>(num_features);
    const std::vector<double> mean = step.need("x_mean").finite_numbers(f);
    const JsonReader stdv = step.need("x_std");
    const std::vector<double> sd = stdv.finite_numbers(f);
    std::vector<double> scale(f), offset(f);
    for (size_t j = 0; j < f; ++j) {
        if (sd[j] == 0) stdv[j].invalid("must not be 0");
        scale[j] = 1.0 / sd[j];
        offset[j] = -mean[j] / sd[j];
    }
    p.steps.push_back(make_step(spec::Op::Affine, {{"scale", spec::numbers_to_json(scale)},
                                                   {"offset", spec::numbers_to_json(offset)}}));
    linear_regressor(step, num_features, p);
}

void logistic_regression(const JsonReader& step, int32_t, spec::Pipeline& p) {
    const JsonReader coef = step.array("coef");
    const bool binary = coef.empty() || !coef.value()[0].is_array() || coef.size() == 1;
    std::string multi = step.string("multi_class", "auto");
    if (multi == "auto")
        multi = binary || step.string("solver", "lbfgs") == "liblinear" ? "ovr" : "multinomial";
    if (multi != "ovr" && multi != "multinomial") refuse(step, "parameter multi_class = \"" + multi + "\"");
    linear_classifier(step, p, Output::Probabilities, multi);
}

void sgd_classifier(const JsonReader& step, int32_t, spec::Pipeline& p) {
    const std::string loss = step.string("loss", "hinge");
    const Output output = loss == "modified_huber"                 ? Output::ModifiedHuber
                          : loss == "log_loss" || loss == "log" ? Output::Probabilities
                                                                   : Output::Decisions;
    linear_classifier(step, p, output, "ovr");
}

void decision_classifier(const JsonReader& step, int32_t, spec::Pipeline& p) {
    linear_classifier(step, p, Output::Decisions, "ovr");
}

}  // namespace pg_predict::importers::sklearn
