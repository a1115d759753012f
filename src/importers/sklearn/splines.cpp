// scikit-learn's SplineTransformer → spec steps, without an op of its own: per feature, a
// B-spline of degree d is one polynomial per knot interval, so the basis values are
//   Σ_m [x in interval m] · Σ_p c[m][b][p] (x - t_m)^p
// which is a concat of the shifted copies x - t_m and the interval indicators (bucketize +
// one_hot), a monomials step (indicator × shift^p) and a project with the coefficients c
// (Cox–de Boor on polynomials, below). Beyond the knots: "continue" is the outer polynomials
// (bucketize clamps to the first / last interval), "periodic" maps x into the base interval
// first (x - period · floor((x - t_k) / period)), "constant" and "linear" add an indicator of
// x < t_k and of x > t_n times the difference between scikit-learn's value there and the
// outer polynomial, and "error" (scikit-learn raises) makes the row's values NaN there: a
// model after it predicts NULL, transform() returns NaN.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "handlers.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::importers::sklearn {

using nlohmann::json;

namespace {

constexpr size_t kMaxSplineTerms = size_t(1) << 24;

using Poly = std::vector<double>;  // coefficients of u^0, u^1, ... in u = x - t_m

// Per interval m of [t_d, t_n) (n = t.size() - d - 1), the polynomials of the basis functions
// b = m - d .. m that are non-zero there: pieces[m - d][b - (m - d)].
std::vector<std::vector<Poly>> bspline_pieces(const std::vector<double>& t, size_t d) {
    const size_t n = t.size() - d - 1;
    std::vector<std::vector<Poly>> pieces;
    for (size_t m = d; m < n; ++m) {
        // B[j - (m - d)] for j = m - d .. m, at the current degree r.
        std::vector<Poly> B(d + 1, Poly(d + 1, 0.0));
        B[d][0] = 1.0;  // degree 0: only B_m is 1 on [t_m, t_m+1)
        for (size_t r = 1; r <= d; ++r) {
            std::vector<Poly> next(d + 1, Poly(d + 1, 0.0));
            for (size_t i = d - r; i <= d; ++i) {
                const size_t j = m - d + i;
                // (x - t_j) / (t_j+r - t_j) · B_j,r-1 + (t_j+r+1 - x) / (t_j+r+1 - t_j+1) · B_j+1,r-1,
                // with x = u + t_m.
                const double left = t[j + r] - t[j], right = t[j + r + 1] - t[j + 1];
                for (size_t p = 0; p < d; ++p) {
                    if (left > 0) {
                        next[i][p] += B[i][p] * (t[m] - t[j]) / left;
                        next[i][p + 1] += B[i][p] / left;
                    }
                    if (right > 0 && i < d) {
                        next[i][p] += B[i + 1][p] * (t[j + r + 1] - t[m]) / right;
                        next[i][p + 1] -= B[i + 1][p] / right;
                    }
                }
            }
            B = std::move(next);
        }
        pieces.push_back(std::move(B));
    }
    return pieces;
}

double value(const Poly& c, double u) {
    double v = 0.0;
    for (size_t p = c.size(); p-- > 0;) v = v * u + c[p];
    return v;
}

double slope(const Poly& c, double u) {
    double v = 0.0;
    for (size_t p = c.size(); p-- > 1;) v = v * u + static_cast<double>(p) * c[p];
    return v;
}

void add_part(spec::Step& concat, std::vector<int32_t> columns, std::vector<spec::Step> steps) {
    spec::Step::Part part;
    part.columns = std::move(columns);
    part.steps = std::move(steps);
    concat.parts.push_back(std::move(part));
}

spec::Step affine(double scale, double offset) {
    return make_step(spec::Op::Affine, {{"scale", json::array({scale})}, {"offset", json::array({offset})}});
}

// The steps that turn one feature (a vector of width 1) into its n_out basis values.
std::vector<spec::Step> feature_steps(const std::vector<double>& t, size_t d, const std::string& extrapolation,
                                      bool include_bias) {
    const size_t n = t.size() - d - 1;  // basis functions of the BSpline
    const size_t intervals = n - d;
    const bool periodic = extrapolation == "periodic";
    const size_t n_splines = periodic ? n - d : n;  // periodic: b and b + n_splines are one output
    const bool regions = extrapolation == "constant" || extrapolation == "linear" || extrapolation == "error";
    const size_t D = std::max<size_t>(d, 1);  // "linear" needs u^1 also for degree 0
    const auto pieces = bspline_pieces(t, d);
    std::vector<spec::Step> steps;

    if (periodic) {
        // x - period · floor((x - t_d) / period), as numpy's % does; the quotient is rounded, so a
        // whole number of periods could come out a hair below it (60 · (1/55) - 5/55 =
        // 0.9999999999999999) and floor one period short: 1e-9 of a period is added first (no
        // float32 input lies that close below a period's end).
        const double period = t[n] - t[d];
        spec::Step c;
        c.op = spec::Op::Concat;
        add_part(c, {0}, {});
        add_part(c, {0}, {affine(1.0 / period, -t[d] / period + 1e-9),
                          make_step(spec::Op::Elementwise, {{"function", "floor"}})});
        steps.push_back(std::move(c));
        steps.push_back(make_step(spec::Op::Project, {{"matrix", json::array({json::array({1.0, -period})})},
                                                      {"offset", json::array({0.0})}}));
    }
    // [x - t_m per interval | one 0/1 per interval | x < t_d, x > t_n (regions)]
    spec::Step c;
    c.op = spec::Op::Concat;
    Matrix ones(intervals, std::vector<double>{1.0});
    std::vector<double> shifts;
    for (size_t m = d; m < n; ++m) shifts.push_back(-t[m]);
    add_part(c, {0}, {make_step(spec::Op::Project, {{"matrix", spec::matrix_to_json(ones)}, {"offset", spec::numbers_to_json(shifts)}})});
    std::vector<double> inner(t.begin() + static_cast<long>(d) + 1, t.begin() + static_cast<long>(n));
    std::vector<double> which;
    for (size_t i = 0; i < intervals; ++i) which.push_back(static_cast<double>(i));
    add_part(c, {0}, {make_step(spec::Op::Bucketize, {{"edges", json::array({spec::numbers_to_json(inner)})}}),
                      make_step(spec::Op::OneHot, {{"categories", json::array({spec::numbers_to_json(which)})},
                                                   {"drop", json::array({-1})}})});
    if (regions) {
        std::vector<spec::Step> below = {affine(-1.0, 0.0), make_step(spec::Op::Threshold, {{"threshold", -t[d]}})};
        std::vector<spec::Step> above = {make_step(spec::Op::Threshold, {{"threshold", t[n]}})};
        if (extrapolation == "error")  // sqrt(-1) = NaN where outside, sqrt(-0) = 0 inside
            for (auto* s : {&below, &above}) {
                s->push_back(affine(-1.0, 0.0));
                s->push_back(make_step(spec::Op::Elementwise, {{"function", "sqrt"}}));
            }
        add_part(c, {0}, std::move(below));
        add_part(c, {0}, std::move(above));
    }
    steps.push_back(std::move(c));

    // monomials: indicator_i · shift_i^p, then the region rows; project: their coefficients.
    const size_t width = 2 * intervals + (regions ? 2 : 0);
    json powers = json::array();
    Matrix coef(n_splines);
    const auto column = [&](double v, size_t o) { coef[o].push_back(v); };
    const auto row = [&](size_t indicator, size_t shift, size_t p, const std::vector<double>& per_output) {
        std::vector<int32_t> pw(width, 0);
        pw[indicator] = 1;
        if (shift < width) pw[shift] += static_cast<int32_t>(p);
        powers.push_back(pw);
        for (size_t o = 0; o < n_splines; ++o) column(per_output[o], o);
    };
    for (size_t i = 0; i < intervals; ++i)
        for (size_t p = 0; p <= D; ++p) {
            std::vector<double> per(n_splines, 0.0);
            for (size_t k = 0; k <= d && p <= d; ++k) per[(i + k) % n_splines] += pieces[i][k][p];
            row(intervals + i, i, p, per);
        }
    if (regions) {
        const size_t below = 2 * intervals, above = below + 1;
        if (extrapolation == "error") {
            row(below, width, 0, std::vector<double>(n_splines, 1.0));
            row(above, width, 0, std::vector<double>(n_splines, 1.0));
        } else {
            // scikit-learn's value beyond the knots minus the outer polynomial, in the outer
            // interval's u: "constant" keeps the first (last) d splines at their boundary
            // value, "linear" continues the first (last) max(d, 2) ... with their slope there
            // (d = 0: one); the others are 0.
            const bool linear = extrapolation == "linear";
            const size_t kept = linear ? (d <= 1 ? d + 1 : d) : d;
            const double h = t[n] - t[n - 1];  // u of x = t_n in the last interval
            std::vector<std::vector<double>> low(D + 1, std::vector<double>(n_splines, 0.0)), high = low;
            for (size_t o = 0; o < n_splines; ++o) {
                Poly first(D + 1, 0.0), last(D + 1, 0.0);
                if (o <= d) std::copy(pieces[0][o].begin(), pieces[0][o].end(), first.begin());
                if (o + d + 1 >= n_splines) {
                    const size_t k = o - (intervals - 1);
                    std::copy(pieces[intervals - 1][k].begin(), pieces[intervals - 1][k].end(), last.begin());
                }
                Poly want_low(D + 1, 0.0), want_high(D + 1, 0.0);
                if (o < kept) {
                    want_low[0] = value(first, 0.0);
                    if (linear) want_low[1] = slope(first, 0.0);
                }
                if (o + kept >= n_splines) {
                    const double f = value(last, h), fp = linear ? slope(last, h) : 0.0;
                    want_high[0] = f - h * fp;
                    want_high[1] = fp;
                }
                for (size_t p = 0; p <= D; ++p) {
                    low[p][o] = want_low[p] - first[p];
                    high[p][o] = want_high[p] - last[p];
                }
            }
            for (size_t p = 0; p <= D; ++p) row(below, 0, p, low[p]);
            for (size_t p = 0; p <= D; ++p) row(above, intervals - 1, p, high[p]);
        }
    }
    steps.push_back(make_step(spec::Op::Monomials, {{"powers", powers}}));
    if (!include_bias) coef.pop_back();  // scikit-learn drops each feature's last spline
    steps.push_back(make_step(spec::Op::Project, {{"matrix", spec::matrix_to_json(coef)},
                                                  {"offset", spec::numbers_to_json(std::vector<double>(coef.size(), 0.0))}}));
    return steps;
}

}  // namespace

// knots: per feature its BSpline's full knot vector (bsplines_[i].t), degree, extrapolation,
// include_bias.
void spline_transformer(Document& doc, const JsonReader& step, Columns& cols, std::vector<spec::Step>& out) {
    doc.no_text(step, "SplineTransformer", cols);
    const std::string extrapolation =
        string_choice(step, "extrapolation", "constant", {"constant", "linear", "continue", "periodic", "error"});
    const JsonReader degree = step.need("degree");
    if (!degree.value().is_number_integer()) degree.invalid("must be an integer in [0, 5]");
    const auto d = static_cast<size_t>(degree.integer(0, 5));
    const bool include_bias = step.need("include_bias").boolean();
    const JsonReader knots = step.array("knots");
    if (knots.size() != cols.size())
        knots.invalid("has " + std::to_string(knots.size()) + " features, the step reads " + std::to_string(cols.size()));
    spec::Step all;
    all.op = spec::Op::Concat;
    size_t width = 0, terms = 0;
    for (size_t j = 0; j < cols.size(); ++j) {
        const JsonReader kj = knots[j].expect_array();
        const std::vector<double> t = kj.numbers();
        const size_t min_knots = extrapolation == "periodic" ? std::max(2 * d + 2, 3 * d + 1) : 2 * d + 2;
        if (t.size() < min_knots || t.size() > 1002)
            kj.invalid("must hold " + std::to_string(min_knots) + " to 1002 knots");
        for (size_t i = 0; i < t.size(); ++i)
            if (!std::isfinite(t[i]) || (i > 0 && !(t[i] > t[i - 1]))) kj.invalid("must be finite and ascending");
        // The monomials and project matrices grow with the square of the knots: bounded, so a
        // document cannot ask for gigabytes (real models have tens of knots).
        const size_t intervals = t.size() - 2 * d - 1, rows = (intervals + 2) * (std::max<size_t>(d, 1) + 1);
        terms += rows * (2 * intervals + 2 + t.size());
        if (terms > kMaxSplineTerms)
            refuse(step, "so many knots (" + std::to_string(t.size()) + " in feature " + std::to_string(j) +
                             "): their polynomials would take more than " + std::to_string(kMaxSplineTerms) + " terms");
        auto steps = feature_steps(t, d, extrapolation, include_bias);
        const size_t n = t.size() - d - 1;
        width += (extrapolation == "periodic" ? n - d : n) - (include_bias ? 0 : 1);
        add_part(all, {static_cast<int32_t>(j)}, std::move(steps));
    }
    if (width == 0) refuse(step, "no output column (one spline without include_bias)");
    out.push_back(std::move(all));
    cols.assign(width, -1);
}

}  // namespace pg_predict::importers::sklearn
