// scikit-learn Gaussian mixtures (python/pg_predict/mixture.py writes them): a classifier over
// the component indices 0..k-1. scikit-learn 1.2's _estimate_weighted_log_prob is, per
// component i with precision Cholesky factor P_i,
//   w_i(x) = log_weight_i + log det P_i - ½ d log 2π - ½ ‖(x - μ_i) P_i‖²
// (log_weight: log weights_ for GaussianMixture, the variational terms for
// BayesianGaussianMixture, computed by the exporter); predict is its argmax and predict_proba
// exp(w - logsumexp(w)), i.e. its softmax.
//  - diag / spherical: P_i is diagonal, the quadratic is GaussianNB's with var = 1 / P_i²
//    (gaussian_log_likelihoods);
//  - full / tied: per component a project x P_i - μ_i P_i (sklearn's own arrangement) and a
//    square, concatenated, summed by the linear estimator with weight -½, then a softmax.
#include <cmath>
#include <string>
#include <vector>

#include "handlers.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::importers::sklearn {

using nlohmann::json;

namespace {

// A Cholesky factor's diagonal must be positive: its log is the log-determinant.
double log_det(const Matrix& chol, const JsonReader& at) {
    double sum = 0.0;
    for (size_t j = 0; j < chol.size(); ++j) {
        if (!(chol[j][j] > 0)) at[j][j].invalid("must have a positive diagonal (a Cholesky factor)");
        sum += std::log(chol[j][j]);
    }
    return sum;
}

void full_covariances(const std::vector<Matrix>& chol, const std::vector<JsonReader>& where,
                      const Matrix& means, const std::vector<double>& log_weight, spec::Pipeline& p) {
    const size_t k = means.size(), d = means[0].size();
    spec::Step parts = make_step(spec::Op::Concat, json::object());
    Matrix coef(k, std::vector<double>(k * d, 0.0));
    std::vector<double> intercept(k);
    for (size_t i = 0; i < k; ++i) {
        const Matrix& c = chol[i];
        std::vector<double> offset(d, 0.0);  // -μ_i P_i
        for (size_t r = 0; r < d; ++r)
            for (size_t j = 0; j < d; ++j) offset[r] -= means[i][j] * c[j][r];
        spec::Step::Part part;
        for (size_t j = 0; j < d; ++j) part.columns.push_back(static_cast<int32_t>(j));
        part.steps.push_back(make_step(spec::Op::Project, {{"matrix", spec::matrix_to_json(transpose(c))},
                                                           {"offset", spec::numbers_to_json(offset)}}));
        part.steps.push_back(make_step(spec::Op::Elementwise, {{"function", "square"}}));
        parts.parts.push_back(std::move(part));
        for (size_t j = 0; j < d; ++j) coef[i][i * d + j] = -0.5;
        intercept[i] = log_weight[i] + log_det(c, where[i]) - 0.5 * static_cast<double>(d) * std::log(2.0 * M_PI);
    }
    p.steps.push_back(std::move(parts));
    set_linear(p, coef, intercept, static_cast<int32_t>(k * d));
    p.transform = spec::PostTransform::Softmax;
}

}  // namespace

void gaussian_mixture(const JsonReader& step, int32_t width, spec::Pipeline& p) {
    const size_t k = num_classes(step, p);
    const size_t d = static_cast<size_t>(width);
    if (d == 0) refuse(step, "a mixture over no features");
    const Matrix means = finite_matrix(step.need("means"), k, d);
    const std::vector<double> log_weight = step.need("log_weights").finite_numbers(k);
    const std::string type = step.string("covariance_type");
    const JsonReader pc = step.need("precisions_cholesky");
    if (type == "diag" || type == "spherical") {
        Matrix factor;
        if (type == "diag") {
            factor = finite_matrix(pc, k, d);
        } else {
            for (double s : pc.finite_numbers(k)) factor.emplace_back(d, s);
        }
        Matrix var(k, std::vector<double>(d));
        for (size_t i = 0; i < k; ++i)
            for (size_t j = 0; j < d; ++j) {
                if (!(factor[i][j] > 0)) (type == "diag" ? pc[i][j] : pc[i]).invalid("must be positive");
                var[i][j] = 1.0 / (factor[i][j] * factor[i][j]);
            }
        gaussian_log_likelihoods(means, var, log_weight, p);
        return;
    }
    std::vector<Matrix> chol;
    std::vector<JsonReader> at;
    if (type == "full") {
        if (!pc.is_array() || pc.size() != k) pc.invalid("must hold one [d × d] factor per component");
        for (size_t i = 0; i < k; ++i) {
            at.push_back(pc[i]);
            chol.push_back(finite_matrix(pc[i], d, d));
        }
    } else if (type == "tied") {
        at.assign(k, pc);
        chol.assign(k, finite_matrix(pc, d, d));
    } else {
        refuse(step, "covariance_type \"" + type + "\"");
    }
    full_covariances(chol, at, means, log_weight, p);
}

}  // namespace pg_predict::importers::sklearn
