// scikit-learn nearest neighbours (python/pg_predict/neighbors.py writes them): the fitted
// training rows `fit_X` and their targets go into a "neighbors" step (spec/steps.hpp), whose
// output the identity "linear" estimator passes on. All float64:
//  - KNeighborsClassifier: targets = the one-hot of each row's class index (`y`, scikit-learn's
//    `_y`), so the step gives predict_proba = the weighted class counts / their total; predict
//    = the argmax in classes order (the first of equal counts, as scikit-learn's mode).
//  - KNeighborsRegressor: targets = y (a row of targets per training row when multi-output);
//    the step gives the (weighted) mean of each.
// Minkowski with any p >= 1 (1 manhattan, 2 euclidean, Infinity chebyshev), uniform or distance
// weights; the exporter refuses everything else. fit_X holds at most kMaxNeighborsValues numbers.
// RadiusNeighborsClassifier / Regressor: the same over every training row within `radius`; a row
// with none gets the classifier's outlier label (one-hot: predict_proba 1 for it, as
// scikit-learn) or, without one (scikit-learn raises) and for the regressor (NaN there), NaN:
// NULL in SQL.
#include <string>
#include <vector>

#include "handlers.hpp"
#include "pg_predict/spec/limits.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::importers::sklearn {

using nlohmann::json;

Matrix one_hot_labels(const JsonReader& labels, size_t rows, size_t classes, const char* rows_are) {
    if (labels.size() != rows)
        labels.invalid("has " + std::to_string(labels.size()) + " labels for " + std::to_string(rows) + " " + rows_are);
    Matrix targets(rows, std::vector<double>(classes, 0.0));
    for (size_t r = 0; r < rows; ++r)
        targets[r][static_cast<size_t>(labels[r].integer(0, static_cast<int64_t>(classes) - 1))] = 1.0;
    return targets;
}

void set_identity_estimator(spec::Pipeline& p, size_t width) {
    Matrix identity(width, std::vector<double>(width, 0.0));
    for (size_t i = 0; i < width; ++i) identity[i][i] = 1.0;
    set_linear(p, identity, std::vector<double>(width, 0.0), static_cast<int32_t>(width));
    p.transform = spec::PostTransform::Identity;
}

namespace {

// The neighbors step over `targets` (the k nearest, or with `radius` every row within it, and
// `outside` where there is none), then the identity estimator over its columns.
void set_neighbors(const JsonReader& step, const Matrix& fit_x, const Matrix& targets, spec::Pipeline& p,
                   const json& outside = nullptr) {
    const JsonReader p_reader = step.need("p");
    const double metric_p = p_reader.number();
    if (!(metric_p >= 1)) p_reader.invalid("must be a number >= 1 (Minkowski's p; \"Infinity\": chebyshev)");
    const std::string weights = step.string("weights");
    if (weights != "uniform" && weights != "distance") refuse(step.need("weights"), "weights \"" + weights + "\"");
    json params = {{"points", spec::matrix_to_json(fit_x)}, {"targets", spec::matrix_to_json(targets)}, {"p", spec::number_to_json(metric_p)},
                   {"weights", weights}};
    if (step.string("type").rfind("RadiusNeighbors", 0) == 0) {
        const double r = step.finite("radius");
        if (r < 0) step.need("radius").invalid("must be >= 0");
        params["radius"] = r;
        if (!outside.is_null()) params["outside"] = outside;
    } else {
        params["k"] = step.integer("n_neighbors", 1, static_cast<int64_t>(fit_x.size()));
    }
    p.steps.push_back(make_step(spec::Op::Neighbors, std::move(params)));
    set_identity_estimator(p, targets[0].size());
}

// fit_X, n rows × width, within the size a program may keep.
Matrix read_fit_x(const JsonReader& step, int32_t width) {
    const JsonReader x = step.array("fit_X");
    const int64_t values = static_cast<int64_t>(x.size()) * width;
    if (values > spec::kMaxNeighborsValues)
        x.unsupported(std::to_string(x.size()) + " training rows of " + std::to_string(width) + " values (" +
                      std::to_string(values) + ") are more than the " + std::to_string(spec::kMaxNeighborsValues) +
                      " a nearest-neighbours program may keep");
    return finite_matrix(x, SIZE_MAX, static_cast<size_t>(width));
}

}  // namespace

void k_neighbors_classifier(const JsonReader& step, int32_t width, spec::Pipeline& p) {
    const size_t classes = num_classes(step, p);
    const Matrix fit_x = read_fit_x(step, width);
    const Matrix targets = one_hot_labels(step.array("y"), fit_x.size(), classes, "rows");
    json outside = nullptr;  // RadiusNeighborsClassifier: outlier_label, an index into classes
    if (auto o = step.optional("outlier_label"); o && !o->value().is_null()) {
        std::vector<double> one_hot(classes, 0.0);
        one_hot[static_cast<size_t>(o->integer(0, static_cast<int64_t>(classes) - 1))] = 1.0;
        outside = one_hot;
    }
    set_neighbors(step, fit_x, targets, p, outside);
}

void k_neighbors_regressor(const JsonReader& step, int32_t width, spec::Pipeline& p) {
    need_task(step, p, false);
    const Matrix fit_x = read_fit_x(step, width);
    // y: one target per row, or with several outputs (a 2-D y) a row of them.
    const JsonReader y = step.array("y");
    const size_t outputs = static_cast<size_t>(p.outputs);
    Matrix targets;
    if (outputs == 1) {
        for (double v : y.finite_numbers(fit_x.size())) targets.push_back({v});
    } else {
        targets = finite_matrix(y, fit_x.size(), outputs);
    }
    set_neighbors(step, fit_x, targets, p);
}

}  // namespace pg_predict::importers::sklearn
