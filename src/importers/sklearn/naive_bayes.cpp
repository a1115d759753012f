// scikit-learn naive Bayes classifiers → featurizer steps + the "linear" estimator + softmax
// (python/pg_predict/naive_bayes.py writes them). All float64, checked against 1.2.1:
//  - MultinomialNB: jll = x · feature_log_probᵀ + class_log_prior; predict_proba =
//    exp(jll - logsumexp(jll)) = softmax(jll) → linear + Softmax.
//  - BernoulliNB: x binarized (x > binarize → 1) unless binarize is null, then
//    jll = x · (log p - log(1 - p))ᵀ + class_log_prior + Σ log(1 - p) → threshold + linear +
//    Softmax.
//  - GaussianNB: jll_i = log prior_i - ½ Σ log(2π var_ij) - ½ Σ (x_j - θ_ij)² / var_ij, a
//    quadratic in x: [x', x'²] (x' = x - c, c the mean of θ over the classes, which keeps the
//    expanded square from cancelling) → affine + concat + linear + Softmax.
#include <cmath>
#include <vector>

#include "handlers.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::importers::sklearn {

using nlohmann::json;

void multinomial_nb(const JsonReader& step, int32_t width, spec::Pipeline& p) {
    const size_t k = num_classes(step, p);
    const Matrix flp = finite_matrix(step.need("feature_log_prob"), k, width);
    set_linear(p, flp, step.need("class_log_prior").finite_numbers(k), width);
    p.transform = spec::PostTransform::Softmax;
}

void bernoulli_nb(const JsonReader& step, int32_t width, spec::Pipeline& p) {
    const size_t k = num_classes(step, p);
    Matrix coef = finite_matrix(step.need("feature_log_prob"), k, width);
    std::vector<double> intercept = step.need("class_log_prior").finite_numbers(k);
    for (size_t i = 0; i < k; ++i)
        for (double& v : coef[i]) {
            const double neg = std::log(1 - std::exp(v));  // as scikit-learn: log(1 - p)
            v -= neg;
            intercept[i] += neg;
        }
    for (size_t i = 0; i < k; ++i)
        for (double v : coef[i])
            if (!std::isfinite(v) || !std::isfinite(intercept[i]))
                refuse(step, "a feature probability of 0 or 1 (alpha = 0)");
    if (auto b = step.optional("binarize"))
        p.steps.push_back(make_step(spec::Op::Threshold, {{"threshold", b->finite()}}));
    set_linear(p, coef, intercept, width);
    p.transform = spec::PostTransform::Softmax;
}

void gaussian_log_likelihoods(const Matrix& theta, const Matrix& var, const std::vector<double>& log_prior,
                              spec::Pipeline& p) {
    const size_t k = theta.size();
    const size_t f = k ? theta[0].size() : 0;
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
        double b = log_prior[i];
        for (size_t j = 0; j < f; ++j) {
            const double v = var[i][j], t = theta[i][j] - center[j];
            b -= 0.5 * std::log(2.0 * M_PI * v) + 0.5 * t * t / v;
            coef[i][j] = t / v;
            coef[i][f + j] = -0.5 / v;
        }
        intercept[i] = b;
    }
    set_linear(p, coef, intercept, static_cast<int32_t>(2 * f));
    p.transform = spec::PostTransform::Softmax;
}

void gaussian_nb(const JsonReader& step, int32_t width, spec::Pipeline& p) {
    const size_t k = num_classes(step, p);
    const size_t f = static_cast<size_t>(width);
    const Matrix theta = finite_matrix(step.need("theta"), k, f);
    const JsonReader varv = step.need("var");
    const Matrix var = finite_matrix(varv, k, f);
    const JsonReader priorv = step.need("class_prior");
    const std::vector<double> prior = priorv.finite_numbers(k);
    std::vector<double> log_prior(k);
    for (size_t i = 0; i < k; ++i) {
        if (!(prior[i] > 0)) priorv[i].invalid("must be positive");
        log_prior[i] = std::log(prior[i]);
        for (size_t j = 0; j < f; ++j)
            if (!(var[i][j] > 0)) varv[i][j].invalid("must be positive");
    }
    gaussian_log_likelihoods(theta, var, log_prior, p);
}

}  // namespace pg_predict::importers::sklearn
