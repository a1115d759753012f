// Linear regression (closed form; L2 as Ridge's alpha) and logistic regression (L2 as
// scikit-learn's C, L-BFGS) with libtorch in float64, after a mean imputation of NULLs (the
// document's SimpleImputer, so NULLs at predict time are imputed the same way). What they fit is
// what scikit-learn's LinearRegression / Ridge / LogisticRegression(lbfgs) fit on the same rows:
// the problems have one solution, which both solve to their tolerance.
#include <cmath>
#include <string>
#include <vector>

#include <torch/nn/functional/loss.h>
#include <torch/optim/lbfgs.h>

#include "pg_predict/common/interrupt.hpp"
#include "trainer_internal.hpp"

namespace pg_predict::training {

namespace {

using nlohmann::json;

torch::Tensor as_tensor(std::vector<double>& x, int64_t rows, int64_t cols) {
    return torch::from_blob(x.data(), {rows, cols}, torch::kFloat64);
}

std::vector<double> to_vector(const torch::Tensor& t) {
    torch::Tensor c = t.contiguous().to(torch::kFloat64);
    return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

// The column means over the training rows, NULLs left out (SimpleImputer(strategy="mean")).
std::vector<double> column_means(const Dataset& d, const Matrix& m) {
    std::vector<double> sum(m.cols, 0.0);
    std::vector<int64_t> count(m.cols, 0);
    for (int64_t r = 0; r < m.rows; ++r)
        for (int64_t c = 0; c < m.cols; ++c) {
            double v = m.x64[r * m.cols + c];
            if (!std::isnan(v)) sum[c] += v, ++count[c];
        }
    std::vector<double> mean(m.cols);
    for (int64_t c = 0; c < m.cols; ++c) {
        if (count[c] == 0) {
            // The expanded column c of a numeric query column: find its name for the message.
            std::string name;
            int64_t at = 0;
            for (size_t f = 0; f < d.features.size() && name.empty(); ++f) {
                int64_t width = d.features[f].kind == ColumnKind::Text ? static_cast<int64_t>(d.categories[f].values.size()) : 1;
                if (c < at + width) name = d.features[f].name;
                at += width;
            }
            invalid("column \"" + name + "\" is NULL in every training row: a linear model cannot impute it");
        }
        mean[c] = sum[c] / static_cast<double>(count[c]);
    }
    return mean;
}

void impute(Matrix& m, const std::vector<double>& mean) {
    for (int64_t r = 0; r < m.rows; ++r)
        for (int64_t c = 0; c < m.cols; ++c) {
            double& v = m.x64[r * m.cols + c];
            if (std::isnan(v)) v = mean[c];
        }
}

// Closed form: on centered columns, lstsq (the minimum-norm solution, scipy's gelsd as
// LinearRegression uses) without L2, the normal equations with alpha on the diagonal (Ridge's
// cholesky solver) with it; the intercept from the means.
std::pair<std::vector<double>, double> fit_least_squares(torch::Tensor x, torch::Tensor y, double alpha) {
    torch::Tensor x_mean = x.mean(0), y_mean = y.mean();
    torch::Tensor xc = x - x_mean, yc = (y - y_mean).unsqueeze(1);
    torch::Tensor w;
    if (alpha == 0) {
        w = std::get<0>(torch::linalg_lstsq(xc, yc, c10::nullopt, "gelsd")).squeeze(1);
    } else {
        torch::Tensor a = torch::matmul(xc.t(), xc);
        a.diagonal().add_(alpha);
        w = torch::linalg_solve(a, torch::matmul(xc.t(), yc), true).squeeze(1);
    }
    double b = (y_mean - torch::dot(x_mean, w)).item<double>();
    return {to_vector(w), b};
}

// L-BFGS on C·Σ loss + ½‖W‖² (scikit-learn's objective, the intercept unpenalized), divided by
// C·n, over standardized columns with the penalty rescaled to match (the same minimum, a better
// conditioned problem). Binary: one margin row, multinomial: one per class.
std::pair<std::vector<double>, std::vector<double>> fit_logistic(torch::Tensor x, const std::vector<float>& labels,
                                                                  int num_classes, double C, int max_iter, double tol) {
    const int64_t n = x.size(0), f = x.size(1);
    torch::Tensor mean = x.mean(0);
    torch::Tensor scale = x.std(0, /*unbiased=*/false);
    scale = torch::where(scale > 0, scale, torch::ones_like(scale));
    torch::Tensor xs = (x - mean) / scale;
    torch::Tensor y = torch::from_blob(const_cast<float*>(labels.data()), {n}, torch::kFloat32).to(torch::kFloat64);
    const int64_t k = num_classes == 2 ? 1 : num_classes;
    torch::Tensor w = torch::zeros({k, f}, torch::kFloat64).requires_grad_(true);
    torch::Tensor b = torch::zeros({k}, torch::kFloat64).requires_grad_(true);
    const double penalty = 0.5 / (C * static_cast<double>(n));
    torch::Tensor inv_scale2 = (1.0 / (scale * scale)).unsqueeze(0);
    torch::Tensor targets = y.to(torch::kLong);
    torch::optim::LBFGS optimizer({w, b}, torch::optim::LBFGSOptions(1.0)
                                              .max_iter(20)
                                              .tolerance_grad(tol)
                                              .tolerance_change(1e-15)
                                              .history_size(20)
                                              .line_search_fn("strong_wolfe"));
    double grad_norm = INFINITY;
    auto closure = [&] {
        optimizer.zero_grad();
        torch::Tensor z = torch::addmm(b, xs, w.t());
        torch::Tensor loss = k == 1 ? torch::binary_cross_entropy_with_logits(z.squeeze(1), y)
                                    : torch::nn::functional::cross_entropy(z, targets);
        loss = loss + penalty * (w * w * inv_scale2).sum();
        loss.backward();
        grad_norm = std::max(w.grad().abs().max().item<double>(), b.grad().abs().max().item<double>());
        return loss;
    };
    for (int done = 0; done < max_iter; done += 20) {
        check_interrupts();
        optimizer.step(closure);
        if (grad_norm <= tol) break;
    }
    torch::NoGradGuard no_grad;
    if (!std::isfinite(grad_norm) || !torch::isfinite(w).all().item<bool>() || !torch::isfinite(b).all().item<bool>())
        invalid("logistic regression: L-BFGS did not reach finite coefficients (a C too large for separable rows?)");
    torch::Tensor coef = w / scale.unsqueeze(0);
    torch::Tensor intercept = b - torch::matmul(coef, mean);
    return {to_vector(coef), to_vector(intercept)};
}

}  // namespace

Fitted fit_linear(const Dataset& d, const Labels& labels, Matrix& train, Matrix& test) {
    torch::NoGradGuard outer;  // re-enabled for the optimizer below
    const std::vector<double> mean = column_means(d, train);
    impute(train, mean);
    impute(test, mean);
    Fitted fitted;
    fitted.extra_steps.push_back({{"type", "SimpleImputer"}, {"statistics", mean}});
    torch::Tensor x = as_tensor(train.x64, train.rows, train.cols);
    torch::Tensor x_test = as_tensor(test.x64, test.rows, test.cols);
    const json& h = d.hyperparams;
    if (d.algorithm == Algorithm::Linear) {
        const double alpha = h.value("alpha", 0.0);
        std::vector<double> yd(d.train.y.begin(), d.train.y.end());  // the target in float64
        torch::Tensor y = torch::from_blob(yd.data(), {static_cast<int64_t>(yd.size())}, torch::kFloat64);
        auto [coef, intercept] = fit_least_squares(x, y, alpha);
        fitted.model_step = {{"type", alpha == 0 ? "LinearRegression" : "Ridge"}, {"coef", coef}, {"intercept", intercept}};
        if (test.rows > 0) {
            torch::Tensor w = torch::from_blob(coef.data(), {static_cast<int64_t>(coef.size())}, torch::kFloat64);
            fitted.test.values = to_vector(torch::mv(x_test, w) + intercept);
        }
        return fitted;
    }
    torch::AutoGradMode grad(true);
    auto [coef, intercept] = fit_logistic(x, labels.train, labels.num_classes, h.value("C", 1.0), h.value("max_iter", 1000),
                                          h.value("tol", 1e-10));
    const int64_t k = static_cast<int64_t>(intercept.size());
    json rows = json::array();
    for (int64_t r = 0; r < k; ++r)
        rows.push_back(std::vector<double>(coef.begin() + r * train.cols, coef.begin() + (r + 1) * train.cols));
    fitted.model_step = {{"type", "LogisticRegression"}, {"coef", rows}, {"intercept", intercept},
                         {"multi_class", k == 1 ? "ovr" : "multinomial"}, {"loss", "log"}};
    if (test.rows > 0) {
        torch::NoGradGuard no_grad;
        torch::Tensor w = torch::from_blob(coef.data(), {k, train.cols}, torch::kFloat64);
        torch::Tensor bias = torch::from_blob(intercept.data(), {k}, torch::kFloat64);
        torch::Tensor z = torch::addmm(bias, x_test, w.t());
        torch::Tensor p = k == 1 ? torch::cat({1 - torch::sigmoid(z), torch::sigmoid(z)}, 1) : torch::softmax(z, 1);
        fitted.test.values = to_vector(p);
        fitted.test.width = static_cast<int>(p.size(1));
    }
    return fitted;
}

}  // namespace pg_predict::training
