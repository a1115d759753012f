// The featurizer steps that reshape each column's distribution (spec/steps.hpp documents each
// op): power (scikit-learn's PowerTransformer) and quantile (its QuantileTransformer), with
// the scalar functions the compiler and the importers share. Each op's shape check and its
// double-precision evaluation sit side by side; spec/steps.cpp dispatches to them.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "pg_predict/common/error.hpp"
#include "pg_predict/spec/steps.hpp"
#include "step_ops.hpp"

namespace pg_predict::spec {

using step_ops::invalid;

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

}  // namespace pg_predict::spec

namespace pg_predict::spec::step_ops {

using nlohmann::json;

void check_power(const Step& s, std::vector<int32_t>& vocab, const std::string& at) {
    const size_t w = vocab.size();
    param_choice(s, "method", {"yeo-johnson", "box-cox"}, "power method", at);
    const std::vector<double> lambdas = param_vector(s, "lambdas", at);
    check_entries(lambdas.size(), w, "power lambdas", at);
    for (double d : lambdas) if (!std::isfinite(d)) invalid(at, "power lambdas must be finite");
}

void evaluate_power(const Step& s, std::vector<double>& x, const std::string& at) {
    const std::string method = param(s, "method", at).get<std::string>();
    const std::vector<double> lambdas = param_vector(s, "lambdas", at);
    for (size_t c = 0; c < x.size(); ++c) x[c] = apply_power(method, lambdas[c], x[c]);
}

void check_quantile(const Step& s, std::vector<int32_t>& vocab, const std::string& at) {
    const size_t w = vocab.size();
    param_choice(s, "output", {"uniform", "normal"}, "quantile output", at);
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
}

void evaluate_quantile(const Step& s, std::vector<double>& x, const std::string& at) {
    const auto quantiles = param_matrix(s, "quantiles", at);
    const std::vector<double> refs = param_vector(s, "references", at);
    const bool normal = param(s, "output", at) == "normal";
    for (size_t c = 0; c < x.size(); ++c) x[c] = apply_quantile(quantiles[c], refs, normal, x[c]);
}

}  // namespace pg_predict::spec::step_ops
