// KNeighborsClassifier / KNeighborsRegressor on the C++ side: the importer's "neighbors" step,
// compiled and run, against values worked out by hand (ties, the zero-distance rule, NaN) and
// against reference_predict on random data (both metrics and weights, row chunks).
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pg_predict/common/error.hpp"
#include "pg_predict/compiler/compile.hpp"
#include "pg_predict/importers/sklearn.hpp"
#include "pg_predict/runtime/api.hpp"
#include "pg_predict/spec/limits.hpp"
#include "pg_predict/spec/pipeline.hpp"
#include "pg_predict/spec/steps.hpp"
#include "program_ids.hpp"

namespace pg_predict {
namespace {

using nlohmann::json;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<float> run_compiled(const spec::Pipeline& p, const std::vector<float>& x) {
    const int64_t rows = static_cast<int64_t>(x.size()) / p.input_width();
    const std::string bytes = compiler::compile(p, compiler::Strategy::Native);
    runtime::Program* prog = runtime::load_program(testing::next_program_id(), bytes.data(), bytes.size());
    std::vector<float> out(static_cast<size_t>(rows * p.output_width()), -12345.0f);
    runtime::run_program(prog, x.data(), rows, p.input_width(), out.data());
    runtime::release_program(prog);
    return out;
}

std::vector<float> reference(const spec::Pipeline& p, const std::vector<float>& x) {
    const int64_t rows = static_cast<int64_t>(x.size()) / p.input_width();
    std::vector<float> out(static_cast<size_t>(rows * p.output_width()));
    spec::reference_predict(p, x.data(), rows, out.data());
    return out;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < want.size(); ++i) {
        if (std::isnan(want[i])) {
            EXPECT_TRUE(std::isnan(got[i])) << what << " [" << i << "]";
            continue;
        }
        EXPECT_NEAR(got[i], want[i], 1e-5 * std::max(1.0f, std::fabs(want[i]))) << what << " [" << i << "]";
    }
}

json numeric_inputs(int n) {
    json a = json::array();
    for (int i = 0; i < n; ++i) a.push_back({{"name", "x" + std::to_string(i)}, {"type", "numeric"}});
    return a;
}

json knn_doc(const std::string& type, int width, json fit_x, json y, int k, json p, const std::string& weights,
             json classes = nullptr) {
    json step = {{"type", type}, {"n_neighbors", k}, {"p", p}, {"weights", weights}, {"fit_X", fit_x}, {"y", y}};
    json d = {{"format", "sklearn"}, {"version", 1}, {"inputs", numeric_inputs(width)},
              {"task", classes.is_null() ? "regression" : "classification"}, {"steps", {step}}};
    if (!classes.is_null()) d["classes"] = classes;
    return d;
}

template <typename F>
void expect_error(F&& f, ErrorCategory category, const std::vector<std::string>& words) {
    try {
        f();
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(static_cast<int>(e.category()), static_cast<int>(category)) << e.what();
        for (const std::string& w : words)
            EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << "\"" << w << "\" not in: " << e.what();
    }
}

// Points (0,0) class 0, (1,0) class 1, (0,2) class 1, (3,0) class 0; classes [7, 9].
const json kPoints = {{0.0, 0.0}, {1.0, 0.0}, {0.0, 2.0}, {3.0, 0.0}};
const json kLabels = {0, 1, 1, 0};

TEST(SklearnNeighbors, ClassifierByHand) {
    // Rows: an exact match of point 0; (0.5, 0), equally far (0.5) from points 0 and 1; NaN.
    const std::vector<float> x = {0.0f, 0.0f, 0.5f, 0.0f, kNaN, 1.0f};
    struct Case {
        int k;
        const char* weights;
        std::vector<float> want;  // predict_proba, 3 rows × 2 classes
    };
    const float d2 = 1.0f / std::sqrt(4.25f);  // 1 / distance of (0.5, 0) to (0, 2)
    const Case cases[] = {
        // k = 1: the tie at (0.5, 0) goes to the lower training row, point 0.
        {1, "uniform", {1, 0, 1, 0, kNaN, kNaN}},
        {3, "uniform", {1.0f / 3, 2.0f / 3, 1.0f / 3, 2.0f / 3, kNaN, kNaN}},
        // distance: the exact match alone counts; else 1/d weights (2, 2, d2).
        {3, "distance", {1, 0, 2 / (4 + d2), (2 + d2) / (4 + d2), kNaN, kNaN}},
        // k = 2 at (0.5, 0): [0.5, 0.5], predict takes the first class.
        {2, "uniform", {0.5f, 0.5f, 0.5f, 0.5f, kNaN, kNaN}},
    };
    for (const Case& c : cases) {
        const std::string what = std::to_string(c.k) + " " + c.weights;
        const spec::Pipeline p =
            importers::import_sklearn(knn_doc("KNeighborsClassifier", 2, kPoints, kLabels, c.k, 2, c.weights, {7, 9}));
        ASSERT_EQ(p.steps.size(), 1u);
        EXPECT_STREQ(spec::op_name(p.steps[0].op), "neighbors");
        expect_close(run_compiled(p, x), c.want, what + " compiled");
        expect_close(reference(p, x), c.want, what + " reference");
    }
}

// RadiusNeighbors*: every training row within the radius (<=); none: the outlier label's one-hot
// (or NaN without one, and for the regressor).
TEST(SklearnNeighbors, RadiusByHand) {
    const std::vector<float> x = {0.0f, 0.0f, 0.5f, 0.0f, 5.0f, 5.0f, kNaN, 1.0f};
    auto radius_doc = [](const std::string& type, json y, const std::string& weights, double r, json outlier,
                         json classes) {
        json d = knn_doc(type, 2, kPoints, y, 1, 2, weights, classes);
        d["steps"][0].erase("n_neighbors");
        d["steps"][0]["radius"] = r;
        if (!outlier.is_null()) d["steps"][0]["outlier_label"] = outlier;
        return d;
    };
    struct Case {
        const char* weights;
        json outlier;
        std::vector<float> want;  // predict_proba, 4 rows × 2 classes
    };
    const Case cases[] = {
        // (0, 0): itself and (1, 0) at exactly the radius; (0.5, 0): points 0 and 1; (5, 5): none
        {"uniform", 1, {0.5f, 0.5f, 0.5f, 0.5f, 0, 1, kNaN, kNaN}},
        {"distance", 0, {1, 0, 0.5f, 0.5f, 1, 0, kNaN, kNaN}},
        {"uniform", nullptr, {0.5f, 0.5f, 0.5f, 0.5f, kNaN, kNaN, kNaN, kNaN}},
    };
    for (const Case& c : cases) {
        const std::string what = std::string(c.weights) + " outlier " + c.outlier.dump();
        const spec::Pipeline p = importers::import_sklearn(
            radius_doc("RadiusNeighborsClassifier", kLabels, c.weights, 1.0, c.outlier, {7, 9}));
        expect_close(run_compiled(p, x), c.want, what + " compiled");
        expect_close(reference(p, x), c.want, what + " reference");
    }
    const spec::Pipeline r = importers::import_sklearn(
        radius_doc("RadiusNeighborsRegressor", {1.0, 2.0, 3.0, 4.0}, "uniform", 1.5, nullptr, nullptr));
    const std::vector<float> rows = {0.0f, 0.0f, 2.0f, 0.0f, 9.0f, 9.0f};  // {1, 2}, {2, 4}, none
    expect_close(run_compiled(r, rows), {1.5f, 3.0f, kNaN}, "regressor compiled");
    expect_close(reference(r, rows), {1.5f, 3.0f, kNaN}, "regressor reference");
    expect_error([&] { importers::import_sklearn(radius_doc("RadiusNeighborsClassifier", kLabels, "uniform", 1.0, 2,
                                                            {7, 9})); },
                 ErrorCategory::InvalidModel, {"outlier_label"});
}

TEST(SklearnNeighbors, RegressorManhattanByHand) {
    const json y = {10.0, 20.0, 30.0, 40.0};
    const std::vector<float> x = {1.0f, 1.0f, 3.0f, 0.0f};
    // (1,1): manhattan distances 2, 1, 2, 3 → k = 3: point 1, then points 0 and 2 (tie inside k).
    // (3,0): 3, 2, 5, 0 → points 3, 1, 0; distance weights: only the exact match, point 3.
    const spec::Pipeline uniform =
        importers::import_sklearn(knn_doc("KNeighborsRegressor", 2, kPoints, y, 3, 1, "uniform"));
    expect_close(run_compiled(uniform, x), {20.0f, 70.0f / 3}, "uniform compiled");
    expect_close(reference(uniform, x), {20.0f, 70.0f / 3}, "uniform reference");
    const spec::Pipeline distance =
        importers::import_sklearn(knn_doc("KNeighborsRegressor", 2, kPoints, y, 3, 1, "distance"));
    const float want0 = (10.0f / 2 + 20.0f / 1 + 30.0f / 2) / (0.5f + 1.0f + 0.5f);
    expect_close(run_compiled(distance, x), {want0, 40.0f}, "distance compiled");
    expect_close(reference(distance, x), {want0, 40.0f}, "distance reference");
}

// Random training rows and queries, each metric and weighting; 3000 points make featurize()
// run in row chunks ([rows × points] distances never exist for the whole batch).
TEST(SklearnNeighbors, RandomDataMatchesReference) {
    std::mt19937 rng(11);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (int n : {50, 3000}) {
        json fit_x = json::array(), labels = json::array(), values = json::array();
        for (int i = 0; i < n; ++i) {
            fit_x.push_back({normal(rng), normal(rng), normal(rng)});
            labels.push_back(i % 3);
            values.push_back(normal(rng) * 10);
        }
        std::vector<float> x;
        for (int i = 0; i < 3 * (n == 50 ? 40 : 700); ++i) x.push_back(static_cast<float>(normal(rng)));
        for (const json& p : {json(1), json(2), json(3), json(1.5), json("Infinity")})  // Minkowski's p
            for (const char* weights : {"uniform", "distance"}) {
                const std::string what = std::to_string(n) + " points p=" + p.dump() + " " + weights;
                const spec::Pipeline c = importers::import_sklearn(
                    knn_doc("KNeighborsClassifier", 3, fit_x, labels, 5, p, weights, {0, 1, 2}));
                expect_close(run_compiled(c, x), reference(c, x), what + " classifier");
                const spec::Pipeline r =
                    importers::import_sklearn(knn_doc("KNeighborsRegressor", 3, fit_x, values, 4, p, weights));
                expect_close(run_compiled(r, x), reference(r, x), what + " regressor");
            }
    }
}

TEST(SklearnNeighbors, BadDocumentsAndSteps) {
    auto import = [](const json& d) { return importers::import_sklearn(d); };
    json d = knn_doc("KNeighborsClassifier", 2, kPoints, kLabels, 5, 2, "uniform", {7, 9});
    expect_error([&] { import(d); }, ErrorCategory::InvalidModel, {"KNeighborsClassifier", "n_neighbors"});
    d = knn_doc("KNeighborsClassifier", 2, kPoints, kLabels, 1, 0.5, "uniform", {7, 9});
    expect_error([&] { import(d); }, ErrorCategory::InvalidModel, {"KNeighborsClassifier", "p", ">= 1"});
    d = knn_doc("KNeighborsClassifier", 2, kPoints, kLabels, 1, 2, "gaussian", {7, 9});
    expect_error([&] { import(d); }, ErrorCategory::Unsupported, {"KNeighborsClassifier", "gaussian"});
    d = knn_doc("KNeighborsClassifier", 2, kPoints, {0, 1, 2, 0}, 1, 2, "uniform", {7, 9});
    expect_error([&] { import(d); }, ErrorCategory::InvalidModel, {"KNeighborsClassifier", "y"});
    d = knn_doc("KNeighborsRegressor", 2, kPoints, {1.0, 2.0}, 1, 2, "uniform");
    expect_error([&] { import(d); }, ErrorCategory::InvalidModel, {"KNeighborsRegressor", "y"});
    d = knn_doc("KNeighborsRegressor", 3, kPoints, {1.0, 2.0, 3.0, 4.0}, 1, 2, "uniform");
    expect_error([&] { import(d); }, ErrorCategory::InvalidModel, {"KNeighborsRegressor", "fit_X"});
    // More training values than a program may keep: refused before the rows are read.
    const int width = 1024;
    const int64_t rows = spec::kMaxNeighborsValues / width + 1;
    json many = json::array();
    for (int64_t i = 0; i < rows; ++i) many.push_back(nullptr);
    d = knn_doc("KNeighborsRegressor", width, many, json::array(), 1, 2, "uniform");
    expect_error([&] { import(d); }, ErrorCategory::Unsupported,
                 {"KNeighborsRegressor", "fit_X", std::to_string(rows) + " training rows", "more than"});

    // The step itself, as validate() reads a stored spec.
    const spec::Pipeline p =
        importers::import_sklearn(knn_doc("KNeighborsClassifier", 2, kPoints, kLabels, 3, 2, "distance", {7, 9}));
    spec::Pipeline bad = p;
    bad.steps[0].params["k"] = 9;
    expect_error([&] { spec::validate(bad); }, ErrorCategory::InvalidModel, {"steps[0]", "neighbors k"});
    bad = p;
    bad.steps[0].params["p"] = 0.5;
    expect_error([&] { spec::validate(bad); }, ErrorCategory::InvalidModel, {"steps[0]", "neighbors p"});
    bad = p;
    bad.steps[0].params["weights"] = "gaussian";
    expect_error([&] { spec::validate(bad); }, ErrorCategory::InvalidModel, {"steps[0]", "weights"});
    bad = p;
    bad.steps[0].params["targets"] = {{1.0, 0.0}};
    expect_error([&] { spec::validate(bad); }, ErrorCategory::InvalidModel, {"steps[0]", "target rows"});
    bad = p;
    bad.steps[0].params["points"] = {{0.0}, {1.0}, {2.0}, {3.0}};
    expect_error([&] { spec::validate(bad); }, ErrorCategory::InvalidModel, {"steps[0]", "neighbors point 0"});
    EXPECT_EQ(spec::to_json(spec::from_json(spec::to_json(p))), spec::to_json(p));
}

}  // namespace
}  // namespace pg_predict
