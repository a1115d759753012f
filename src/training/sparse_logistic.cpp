// A logistic regression over sparse rows: see training/sparse_logistic.hpp. Full-batch L-BFGS
// on scikit-learn's objective (C x the summed log loss + half the squared weights, the intercept
// unpenalized), divided by C: the optimum scikit-learn's lbfgs finds, without a dense matrix.
#include "pg_predict/training/sparse_logistic.hpp"

#include <algorithm>
#include <cmath>
#include <deque>

#include "pg_predict/common/error.hpp"

namespace pg_predict::training {

namespace {

constexpr int kMemory = 10;           // L-BFGS's pairs
constexpr double kTolerance = 1e-6;   // stop when the gradient's largest entry is this small (relative)

struct Objective {
    const SparseRows& x;
    const std::vector<int32_t>& label;
    int K;
    int64_t width;
    double l2;

    // The loss at p (weights then biases) and its gradient into g.
    double operator()(const std::vector<double>& p, std::vector<double>& g) const {
        const size_t W = static_cast<size_t>(width) * K;
        std::fill(g.begin(), g.end(), 0.0);
        double loss = 0.0;
        std::vector<double> margin(K), grad(K);
        for (int64_t r = 0; r < x.rows(); r++) {
            for (int k = 0; k < K; k++) margin[k] = p[W + k];
            for (int64_t j = x.begin[r]; j < x.begin[r + 1]; j++)
                for (int k = 0; k < K; k++) margin[k] += p[x.index[j] * K + k] * x.value[j];
            if (K == 1) {
                const double z = margin[0], y = label[r] == 1 ? 1.0 : 0.0;
                // log(1 + e^z) - y z, stably
                loss += (z > 0 ? z + std::log1p(std::exp(-z)) : std::log1p(std::exp(z))) - y * z;
                grad[0] = 1.0 / (1.0 + std::exp(-z)) - y;
            } else {
                const double top = *std::max_element(margin.begin(), margin.end());
                double sum = 0.0;
                for (int k = 0; k < K; k++) sum += (grad[k] = std::exp(margin[k] - top));
                loss += std::log(sum) + top - margin[label[r]];
                for (int k = 0; k < K; k++) grad[k] = grad[k] / sum - (label[r] == k ? 1.0 : 0.0);
            }
            for (int k = 0; k < K; k++) g[W + k] += grad[k];
            for (int64_t j = x.begin[r]; j < x.begin[r + 1]; j++)
                for (int k = 0; k < K; k++) g[x.index[j] * K + k] += grad[k] * x.value[j];
        }
        for (size_t i = 0; i < W; i++) {
            loss += 0.5 * l2 * p[i] * p[i];
            g[i] += l2 * p[i];
        }
        return loss;
    }
};

double dot(const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0.0;
    for (size_t i = 0; i < a.size(); i++) s += a[i] * b[i];
    return s;
}

}  // namespace

void sparse_logistic_margins(const SparseLogistic& m, const int64_t* index, const float* value, int64_t n,
                             double* out) {
    const int K = m.outputs;
    for (int k = 0; k < K; k++) out[k] = m.bias[k];
    for (int64_t j = 0; j < n; j++) {
        const double* w = m.weight.data() + index[j] * K;
        for (int k = 0; k < K; k++) out[k] += w[k] * value[j];
    }
}

SparseLogistic fit_sparse_logistic(const SparseRows& x, const std::vector<int32_t>& label, int classes, int64_t width,
                                   int iterations, double l2, uint64_t /*seed*/) {
    if (classes < 2) fail(ErrorCategory::InvalidParameter, "a logistic regression needs two classes or more");
    if (static_cast<int64_t>(label.size()) != x.rows()) fail(ErrorCategory::Internal, "labels do not fit the rows");
    const int K = classes == 2 ? 1 : classes;
    const Objective f{x, label, K, width, l2};
    const size_t n = static_cast<size_t>(width) * K + K;
    std::vector<double> p(n, 0.0), g(n), p_next(n), g_next(n), d(n);
    double loss = f(p, g);
    std::deque<std::pair<std::vector<double>, std::vector<double>>> pairs;  // (s, y)
    std::deque<double> rho;
    const double g0 = std::max(1e-12, *std::max_element(g.begin(), g.end(), [](double a, double b) {
        return std::abs(a) < std::abs(b);
    }));
    for (int it = 0; it < iterations; it++) {
        // The two-loop recursion: d = -H g.
        d = g;
        std::vector<double> alpha(pairs.size());
        for (size_t i = pairs.size(); i-- > 0;) {
            alpha[i] = rho[i] * dot(pairs[i].first, d);
            for (size_t j = 0; j < n; j++) d[j] -= alpha[i] * pairs[i].second[j];
        }
        if (!pairs.empty()) {
            const double scale = dot(pairs.back().first, pairs.back().second) / dot(pairs.back().second, pairs.back().second);
            for (double& v : d) v *= scale;
        }
        for (size_t i = 0; i < pairs.size(); i++) {
            const double beta = rho[i] * dot(pairs[i].second, d);
            for (size_t j = 0; j < n; j++) d[j] += pairs[i].first[j] * (alpha[i] - beta);
        }
        for (double& v : d) v = -v;
        double slope = dot(g, d);
        if (slope >= 0) {  // not a descent direction: start again from the gradient
            pairs.clear();
            rho.clear();
            for (size_t j = 0; j < n; j++) d[j] = -g[j];
            slope = dot(g, d);
        }
        // Backtracking until the loss falls enough (Armijo).
        double step = pairs.empty() ? 1.0 / std::max(1.0, std::sqrt(dot(g, g))) : 1.0;
        double next = 0.0;
        for (int tries = 0;; tries++) {
            for (size_t j = 0; j < n; j++) p_next[j] = p[j] + step * d[j];
            next = f(p_next, g_next);
            if (next <= loss + 1e-4 * step * slope || tries == 30) break;
            step *= 0.5;
        }
        std::vector<double> s(n), y(n);
        for (size_t j = 0; j < n; j++) {
            s[j] = p_next[j] - p[j];
            y[j] = g_next[j] - g[j];
        }
        const double sy = dot(s, y);
        if (sy > 1e-12) {
            pairs.emplace_back(std::move(s), std::move(y));
            rho.push_back(1.0 / sy);
            if (pairs.size() > kMemory) {
                pairs.pop_front();
                rho.pop_front();
            }
        }
        p.swap(p_next);
        g.swap(g_next);
        const bool flat = std::abs(loss - next) <= 1e-10 * std::max(1.0, std::abs(loss));
        loss = next;
        double largest = 0.0;
        for (double v : g) largest = std::max(largest, std::abs(v));
        if (largest <= kTolerance * g0 || flat) break;
    }
    SparseLogistic m;
    m.outputs = K;
    m.weight.assign(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(n - K));
    m.bias.assign(p.end() - K, p.end());
    return m;
}

}  // namespace pg_predict::training
