// LinearClassifier / LinearRegressor → a "project" step (the margins), and the post transform:
// NONE keeps the margins (a binary model of one row of coefficients gives [-m, m], as ONNX
// Runtime does), LOGISTIC a per-entry expit (one row: [1 - p, p]), SOFTMAX the softmax link;
// PROBIT and SOFTMAX_ZERO of several margins take the general path (general_post_transform).
#include <string>
#include <vector>

#include "graph.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::importers::onnx_import {

namespace {

using Kind = Value::Kind;
using Matrix = std::vector<std::vector<double>>;

// The [rows × width] coefficients and rows intercepts.
void read_linear(const Node& n, size_t width, Matrix& coef, std::vector<double>& intercept, size_t rows) {
    const std::vector<double> c = n.numbers("coefficients");
    if (width == 0 || c.size() % width != 0 || (rows != 0 && c.size() != rows * width))
        n.bad("has " + std::to_string(c.size()) + " coefficients for an input of " + std::to_string(width) + " columns");
    const size_t k = c.size() / width;
    coef.assign(k, std::vector<double>(width));
    for (size_t r = 0; r < k; ++r)
        for (size_t f = 0; f < width; ++f) coef[r][f] = c[r * width + f];
    intercept = n.numbers("intercepts", false);
    if (intercept.empty()) intercept.assign(k, 0.0);
    if (intercept.size() != k) n.bad("has " + std::to_string(intercept.size()) + " intercepts for " + std::to_string(k) + " rows of coefficients");
}

void linear_classifier(Node& n) {
    const Row& x = n.row_input(0);
    if (x.dims.size() != 1) n.unsupported("a LinearClassifier over a tensor other than [N, F]");
    const ClassLabels labels = read_class_labels(n, "classlabels_ints");
    const std::vector<double>& classes = labels.classes;
    Matrix coef;
    std::vector<double> intercept;
    read_linear(n, x.text.size(), coef, intercept, 0);
    const size_t k = coef.size();
    const bool binary_one_row = k == 1 && classes.size() == 2;
    if (k != classes.size() && !binary_one_row)
        n.bad("has " + std::to_string(k) + " rows of coefficients for " + std::to_string(classes.size()) + " classes");
    const std::string post = n.text("post_transform", "NONE");
    Row margin = then(x, make_step("project", {{"matrix", spec::matrix_to_json(coef)}, {"offset", spec::numbers_to_json(intercept)}}),
                      {static_cast<int64_t>(k)});
    Value scores;
    if (binary_one_row || post == "SOFTMAX") {
        scores.kind = Kind::Scores;
        scores.scores = as_scores(row_value(n.graph, margin), n.where());
        scores.scores.transform = post == "SOFTMAX" ? spec::PostTransform::Softmax
                                  : post == "LOGISTIC" ? spec::PostTransform::Logistic
                                  : post == "NONE" ? spec::PostTransform::TwoSided
                                                   : (n.unsupported("post_transform " + post), spec::PostTransform::Identity);
        if (binary_one_row && post == "SOFTMAX") n.unsupported("SOFTMAX over one row of coefficients");
        scores.scores.columns = static_cast<int32_t>(classes.size());
        scores.probabilities = post != "NONE";
    } else if (post == "NONE") {
        scores = row_value(n.graph, margin);
    } else {  // LOGISTIC, PROBIT, SOFTMAX_ZERO of every margin
        scores = row_value(n.graph, general_post_transform(n, margin, post), post != "PROBIT");
    }
    n.set_output(0, classifier_label(n, scores, labels, "scores"));
    n.set_output(1, scores);
}

void linear_regressor(Node& n) {
    const Row& x = n.row_input(0);
    if (x.dims.size() != 1) n.unsupported("a LinearRegressor over a tensor other than [N, F]");
    const int64_t targets = n.integer("targets", 1);
    if (targets < 1) n.bad("targets must be positive");
    const std::string post = n.text("post_transform", "NONE");
    // ONNX Runtime applies only PROBIT to a single target.
    if (targets == 1 && post != "NONE" && post != "PROBIT")
        n.unsupported("post_transform " + post + " of a LinearRegressor of one target");
    Matrix coef;
    std::vector<double> intercept;
    read_linear(n, x.text.size(), coef, intercept, static_cast<size_t>(targets));
    Value v = row_value(n.graph, general_post_transform(n, then(x, make_step("project", {{"matrix", spec::matrix_to_json(coef)},
                                                                                     {"offset", spec::numbers_to_json(intercept)}}),
                                                           {targets}),
                                                      post));
    v.regression = true;
    n.set_output(0, std::move(v));
}

}  // namespace

void add_linear_ops(std::map<std::string, Handler>& t) {
    t["ai.onnx.ml:LinearClassifier"] = linear_classifier;
    t["ai.onnx.ml:LinearRegressor"] = linear_regressor;
}

}  // namespace pg_predict::importers::onnx_import
