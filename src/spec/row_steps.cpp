// The featurizer steps whose every output reads the whole row (spec/steps.hpp documents each
// op): normalize, project, monomials, kernel and neighbors. Each op's shape check and its
// double-precision evaluation sit side by side; spec/steps.cpp dispatches to them.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "pg_predict/common/error.hpp"
#include "pg_predict/spec/limits.hpp"
#include "pg_predict/spec/steps.hpp"
#include "step_ops.hpp"

namespace pg_predict::spec::step_ops {

using nlohmann::json;

namespace {

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

// Which points a neighbors step weighs: the k nearest, or (with "radius") every point within
// the radius, with "outside" targets for a row that has none.
void check_neighbors_reach(const Step& s, size_t points, size_t targets, const std::string& at) {
    if (s.params.contains("radius")) {  // every point within the radius instead of the k nearest
        const double r = param_number(s, "radius", at);
        if (!(r >= 0.0) || !std::isfinite(r)) invalid(at, "neighbors radius must be a finite number >= 0");
        if (s.params.contains("outside")) {
            const auto outside = param_vector(s, "outside", at);
            if (outside.size() != targets)
                invalid(at, "neighbors outside must have one value per target column");
            for (double d : outside) if (!std::isfinite(d)) invalid(at, "neighbors outside must be finite");
        }
    } else {
        const double k = param_number(s, "k", at);
        if (!(k >= 1 && k <= static_cast<double>(points) && k == std::floor(k)))
            invalid(at, "neighbors k must be an integer in [1, " + std::to_string(points) + "]");
    }
}

// Each row of `m` row by row: `w` entries ("<row> r has n entries ..."), then every value
// `ok` (else `bad`).
template <typename Ok>
void check_rows(const std::vector<std::vector<double>>& m, size_t w, const std::string& row, Ok ok, const char* bad,
                const std::string& at) {
    for (size_t r = 0; r < m.size(); ++r) {
        check_entries(m[r].size(), w, row + " " + std::to_string(r), at);
        for (double d : m[r]) if (!ok(d)) invalid(at, bad);
    }
}

}  // namespace

void check_normalize(const Step& s, std::vector<int32_t>& vocab, const std::string& at) {
    const json& n = param(s, "norm", at);
    if (n != "l1" && n != "l2" && n != "max") invalid(at, "normalize norm must be \"l1\", \"l2\" or \"max\"");
}

void evaluate_normalize(const Step& s, std::vector<double>& x, const std::string& at) {
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
}

void check_project(const Step& s, std::vector<int32_t>& vocab, const std::string& at) {
    const size_t w = vocab.size();
    const auto m = param_matrix(s, "matrix", at);
    const std::vector<double> off = param_vector(s, "offset", at);
    if (m.size() != off.size())
        invalid(at, "project has " + std::to_string(m.size()) + " matrix rows and " +
                        std::to_string(off.size()) + " offsets");
    for (size_t r = 0; r < m.size(); ++r) {
        check_entries(m[r].size(), w, "project matrix row " + std::to_string(r), at);
        for (double d : m[r]) if (!std::isfinite(d)) invalid(at, "project matrix must be finite");
        if (!std::isfinite(off[r])) invalid(at, "project offset must be finite");
    }
    vocab.assign(m.size(), -1);
}

void evaluate_project(const Step& s, std::vector<double>& x, const std::string& at) {
    const auto m = param_matrix(s, "matrix", at);
    const std::vector<double> off = param_vector(s, "offset", at);
    std::vector<double> y(m.size());
    for (size_t r = 0; r < m.size(); ++r) {
        double acc = 0.0;
        for (size_t c = 0; c < x.size(); ++c) acc += x[c] * m[r][c];
        y[r] = acc + off[r];
    }
    x = std::move(y);
}

void check_monomials(const Step& s, std::vector<int32_t>& vocab, const std::string& at) {
    const size_t w = vocab.size();
    const auto powers = param_matrix(s, "powers", at);
    if (powers.empty()) invalid(at, "monomials has no powers");
    check_rows(powers, w, "monomials powers row", [](double p) { return p >= 0 && p <= 64 && p == std::floor(p); },
               "monomials powers must be integers in [0, 64]", at);
    vocab.assign(powers.size(), -1);
}

void evaluate_monomials(const Step& s, std::vector<double>& x, const std::string& at) {
    const auto powers = param_matrix(s, "powers", at);
    std::vector<double> y(powers.size(), 1.0);
    for (size_t k = 0; k < powers.size(); ++k)
        for (size_t c = 0; c < x.size(); ++c)
            if (powers[k][c] != 0.0) y[k] *= std::pow(x[c], powers[k][c]);
    x = std::move(y);
}

void check_kernel(const Step& s, std::vector<int32_t>& vocab, const std::string& at) {
    const size_t w = vocab.size();
    const auto sv = param_matrix(s, "support_vectors", at);
    if (sv.empty()) invalid(at, "kernel has no support vectors");
    check_rows(sv, w, "kernel support vector", [](double d) { return std::isfinite(d); },
               "kernel support vectors must be finite", at);
    param_choice(s, "kernel", {"linear", "rbf", "poly", "sigmoid"}, "kernel", at);
    for (const char* key : {"gamma", "coef0"})
        if (!std::isfinite(param_number(s, key, at))) invalid(at, std::string("kernel ") + key + " must be finite");
    const double degree = param_number(s, "degree", at);
    if (!(degree >= 0 && degree <= 64 && degree == std::floor(degree)))
        invalid(at, "kernel degree must be an integer in [0, 64]");
    vocab.assign(sv.size(), -1);
}

void evaluate_kernel(const Step& s, std::vector<double>& x, const std::string& at) {
    x = kernel_row(s, x, at);
}

void check_neighbors(const Step& s, std::vector<int32_t>& vocab, const std::string& at) {
    const size_t w = vocab.size();
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
        check_entries(points[r].size(), w, "neighbors point " + std::to_string(r), at);
        for (double d : points[r]) if (!std::isfinite(d)) invalid(at, "neighbors points must be finite");
        if (targets[r].empty() || targets[r].size() != targets[0].size())
            invalid(at, "neighbors target rows must have the same, non-zero width");
        for (double d : targets[r]) if (!std::isfinite(d)) invalid(at, "neighbors targets must be finite");
    }
    check_neighbors_reach(s, points.size(), targets[0].size(), at);
    const double p = param_number(s, "p", at);
    if (!(p >= 1.0)) invalid(at, "neighbors p must be a number >= 1 (Infinity: the largest difference)");
    param_choice(s, "weights", {"uniform", "distance"}, "neighbors weights", at);
    vocab.assign(targets[0].size(), -1);
}

void evaluate_neighbors(const Step& s, std::vector<double>& x, const std::string& at) {
    x = neighbors_row(s, x, at);
}

}  // namespace pg_predict::spec::step_ops
