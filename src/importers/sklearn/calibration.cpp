// scikit-learn CalibratedClassifierCV over linear classifiers (python/pg_predict/calibration.py
// writes it), as scikit-learn 1.2's _CalibratedClassifier.predict_proba computes it, member by
// member, then their mean:
//  1. the decision values of every member at once: one project, r columns per member (r = 1
//     when binary, else one per class);
//  2. a calibrator per column: sigmoid p = expit(-(a d + b)) (an affine and expit), or
//     isotonic p = interp(clip(d, x_0, x_last), x, y), a continuous piecewise-linear function
//     written as y_0 + Σ_i (s_i - s_{i-1}) relu(d - x_i) (s_i the slope right of x_i, 0 outside
//     [x_0, x_last]): a project to the knots, relu, a project back;
//  3. more than two classes: each member's p / Σ p, uniform where Σ p = 0 (isotonic can give
//     0 for every class): 1/k is added to every p where the sum is 0, then an l1 normalize;
//  4. the estimator: the members' mean, a one-group P(classes[1]) made [1 - m, m] by the
//     Complement transform when binary.
#include <cmath>
#include <string>
#include <vector>

#include "handlers.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::importers::sklearn {

using nlohmann::json;

namespace {

spec::Step project(const Matrix& matrix, const std::vector<double>& offset) {
    return make_step(spec::Op::Project, {{"matrix", spec::matrix_to_json(matrix)}, {"offset", spec::numbers_to_json(offset)}});
}

spec::Step::Part part_over(size_t first, size_t width) {
    spec::Step::Part part;
    for (size_t j = 0; j < width; ++j) part.columns.push_back(static_cast<int32_t>(first + j));
    return part;
}

// The isotonic calibrator of one column as hinge terms over its knots.
spec::Step::Part isotonic(const JsonReader& cal, size_t column) {
    const JsonReader xv = cal.need("x");
    const std::vector<double> x = xv.finite_numbers();
    const std::vector<double> y = cal.need("y").finite_numbers(x.size());
    if (x.empty()) xv.invalid("must not be empty");
    for (size_t i = 1; i < x.size(); ++i)
        if (!(x[i] > x[i - 1])) xv[i].invalid("must be larger than the threshold before it");
    const size_t t = x.size();
    Matrix knots(t, std::vector<double>(1, 1.0));
    std::vector<double> minus_x(t), slope_change(t);
    double before = 0.0;
    for (size_t i = 0; i < t; ++i) {
        minus_x[i] = -x[i];
        const double slope = i + 1 < t ? (y[i + 1] - y[i]) / (x[i + 1] - x[i]) : 0.0;
        slope_change[i] = slope - before;
        before = slope;
    }
    spec::Step::Part part = part_over(column, 1);
    part.steps.push_back(project(knots, minus_x));
    part.steps.push_back(make_step(spec::Op::Elementwise, {{"function", "relu"}}));
    part.steps.push_back(project({slope_change}, {y[0]}));
    return part;
}

// p / Σ p over k columns, uniform where Σ p = 0.
std::vector<spec::Step> normalized(size_t k) {
    spec::Step sum_is_positive = make_step(spec::Op::Concat, json::object());
    spec::Step::Part total = part_over(0, k);
    total.steps.push_back(project({std::vector<double>(k, 1.0)}, {0.0}));
    total.steps.push_back(make_step(spec::Op::Threshold, {{"threshold", 0.0}}));
    sum_is_positive.parts = {part_over(0, k), total};
    // p_c + (1 - positive) / k
    const double share = 1.0 / static_cast<double>(k);
    Matrix add(k, std::vector<double>(k + 1, 0.0));
    for (size_t c = 0; c < k; ++c) {
        add[c][c] = 1.0;
        add[c][k] = -share;
    }
    return {std::move(sum_is_positive), project(add, std::vector<double>(k, share)),
            make_step(spec::Op::Normalize, {{"norm", "l1"}})};
}

}  // namespace

void calibrated_classifier(const JsonReader& step, int32_t width, spec::Pipeline& p) {
    const size_t k = num_classes(step, p);
    const size_t r = k == 2 ? 1 : k;  // decision columns per member
    const std::string method = step.string("method");
    if (method != "sigmoid" && method != "isotonic") refuse(step, "method \"" + method + "\"");
    const JsonReader members = step.array("members");
    if (members.empty()) members.invalid("must hold at least one calibrated classifier");
    const size_t m = members.size();

    Matrix decision;
    std::vector<double> offset, scale, shift;
    spec::Step calibrated = make_step(spec::Op::Concat, json::object());
    for (size_t j = 0; j < m; ++j) {
        const JsonReader member = members[j];
        const Matrix coef = finite_matrix(member.need("coef"), r, static_cast<size_t>(width));
        const std::vector<double> b = member.need("intercept").finite_numbers(r);
        decision.insert(decision.end(), coef.begin(), coef.end());
        offset.insert(offset.end(), b.begin(), b.end());
        const JsonReader cals = member.array("calibrators");
        if (cals.size() != r) cals.invalid("has " + std::to_string(cals.size()) + " calibrators for " + std::to_string(r) + " decision columns");
        for (size_t c = 0; c < r; ++c) {
            if (method == "sigmoid") {
                scale.push_back(-cals[c].need("a").finite());
                shift.push_back(-cals[c].need("b").finite());
            } else {
                calibrated.parts.push_back(isotonic(cals[c], j * r + c));
            }
        }
    }
    p.steps.push_back(project(decision, offset));
    if (method == "sigmoid") {
        p.steps.push_back(make_step(spec::Op::Affine, {{"scale", spec::numbers_to_json(scale)}, {"offset", spec::numbers_to_json(shift)}}));
        p.steps.push_back(make_step(spec::Op::Elementwise, {{"function", "expit"}}));
    } else {
        p.steps.push_back(std::move(calibrated));
    }
    if (r > 1) {
        spec::Step per_member = make_step(spec::Op::Concat, json::object());
        for (size_t j = 0; j < m; ++j) {
            spec::Step::Part part = part_over(j * r, r);
            part.steps = normalized(r);
            per_member.parts.push_back(std::move(part));
        }
        p.steps.push_back(std::move(per_member));
    }
    Matrix mean(r, std::vector<double>(m * r, 0.0));
    for (size_t c = 0; c < r; ++c)
        for (size_t j = 0; j < m; ++j) mean[c][j * r + c] = 1.0 / static_cast<double>(m);
    set_linear(p, mean, std::vector<double>(r, 0.0), static_cast<int32_t>(m * r));
    p.transform = r == 1 ? spec::PostTransform::Complement : spec::PostTransform::Identity;
}

}  // namespace pg_predict::importers::sklearn
