// scikit-learn pipelines on the C++ side: the importer, the featurizer steps and the linear
// estimator, compiled and run, against reference_predict and against what scikit-learn itself
// predicted (sklearn_fixtures.hpp, written by gen_sklearn_fixtures.py).
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pg_predict/common/error.hpp"
#include "pg_predict/compiler/compile.hpp"
#include "pg_predict/importers/import.hpp"
#include "pg_predict/importers/sklearn.hpp"
#include "pg_predict/runtime/api.hpp"
#include "pg_predict/spec/steps.hpp"
#include "sklearn_fixtures.hpp"
#include "tree_gen.hpp"
#include "program_ids.hpp"

namespace pg_predict {
namespace {

using nlohmann::json;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<float> run_compiled(const spec::Pipeline& p, const std::vector<float>& x, int64_t rows,
                                compiler::Strategy s = compiler::Strategy::Native) {
    const std::string bytes = compiler::compile(p, s);
    runtime::Program* prog = runtime::load_program(testing::next_program_id(), bytes.data(), bytes.size());
    EXPECT_EQ(runtime::program_output_width(prog), p.output_width());
    std::vector<float> out(static_cast<size_t>(rows * p.output_width()), -12345.0f);
    runtime::run_program(prog, x.data(), rows, p.input_width(), out.data());
    runtime::release_program(prog);
    return out;
}

std::vector<float> reference(const spec::Pipeline& p, const std::vector<float>& x, int64_t rows) {
    std::vector<float> out(static_cast<size_t>(rows * p.output_width()));
    spec::reference_predict(p, x.data(), rows, out.data());
    return out;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < want.size(); ++i) {
        if (std::isnan(want[i])) {
            EXPECT_TRUE(std::isnan(got[i])) << what << " [" << i << "]";
            continue;
        }
        if (std::isinf(want[i]) && got[i] == want[i]) continue;
        EXPECT_NEAR(got[i], want[i], 1e-5 * std::max(1.0, std::fabs(want[i]))) << what << " [" << i << "]";
    }
}

void expect_matches_reference(const spec::Pipeline& p, const std::vector<float>& x, const std::string& what,
                              compiler::Strategy s = compiler::Strategy::Native) {
    const int64_t rows = static_cast<int64_t>(x.size()) / p.input_width();
    const std::vector<float> want = reference(p, x, rows);
    expect_close(run_compiled(p, x, rows, s), std::vector<double>(want.begin(), want.end()), what);
}

std::vector<float> random_rows(int64_t rows, int width, uint32_t seed) {
    std::mt19937 rng(seed);
    return testing::finite(testing::random_inputs(rng, rows, width));
}

json doc_with(json inputs, const std::string& task, json steps, json classes = nullptr) {
    json d = {{"format", "sklearn"}, {"version", 1}, {"inputs", inputs}, {"task", task}, {"steps", steps}};
    if (!classes.is_null()) d["classes"] = classes;
    return d;
}

json numeric_inputs(int n) {
    json a = json::array();
    for (int i = 0; i < n; ++i) a.push_back({{"name", "x" + std::to_string(i)}, {"type", "numeric"}});
    return a;
}

json ridge(std::vector<double> coef, double intercept) {
    return {{"type", "Ridge"}, {"coef", coef}, {"intercept", intercept}};
}

template <typename F>
void expect_error(F&& f, ErrorCategory category, const std::vector<std::string>& words) {
    try {
        f();
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(static_cast<int>(e.category()), static_cast<int>(category)) << e.what();
        for (const std::string& w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos)
                                               << "\"" << w << "\" not in: " << e.what();
    }
}

// --- what scikit-learn predicted ---------------------------------------------------------

TEST(SklearnFixtures, MatchScikitLearn) {
    const json fixtures = json::parse(testing::kSklearnFixtures);
    const json& rows = fixtures["rows"];
    for (const json& c : fixtures["cases"]) {
        const std::string name = c["name"];
        SCOPED_TRACE(name);
        EXPECT_EQ(importers::detect_format(c["doc"]), "sklearn");
        const spec::Pipeline p = importers::import_model(c["doc"], "auto");
        ASSERT_EQ(p.input_width(), 4);
        // Fill the batch as the PostgreSQL side does: text as vocabulary index, -1 unknown.
        std::vector<float> x;
        for (const json& r : rows)
            for (int f = 0; f < 4; ++f) {
                const json& v = r[f];
                if (v.is_null()) {
                    x.push_back(kNaN);
                } else if (v.is_string()) {
                    ASSERT_EQ(p.text_inputs.size(), 1u);
                    ASSERT_EQ(p.text_inputs[0].input, f);
                    const auto& vocab = p.text_inputs[0].vocabulary;
                    auto it = std::find(vocab.begin(), vocab.end(), v.get<std::string>());
                    x.push_back(it == vocab.end() ? -1.0f : static_cast<float>(it - vocab.begin()));
                } else {
                    x.push_back(v.get<float>());
                }
            }
        const int64_t n = static_cast<int64_t>(rows.size());
        const std::vector<float> got = run_compiled(p, x, n);
        const std::vector<float> ref = reference(p, x, n);
        if (!p.has_probabilities) {
            // Decision values: their argmax is sklearn's predict.
            const int w = p.output_width();
            for (int64_t r = 0; r < n; ++r) {
                int best = 0;
                for (int k = 1; k < w; ++k)
                    if (got[r * w + k] > got[r * w + best]) best = k;
                EXPECT_EQ(p.classes[best], c["expected"][r][0].get<double>()) << "row " << r;
            }
            continue;
        }
        std::vector<double> want;
        for (const json& r : c["expected"])
            for (const json& v : r) want.push_back(v.get<double>());
        expect_close(got, want, name + " compiled");
        expect_close(ref, want, name + " reference");
    }
}

// --- one op at a time ----------------------------------------------------------------------

TEST(SklearnSteps, ScalersFoldIntoOneAffine) {
    json steps = {{{"type", "StandardScaler"}, {"mean", {1.0, -2.0}}, {"scale", {2.0, 0.5}}},
                  {{"type", "MinMaxScaler"}, {"scale", {0.25, 3.0}}, {"min", {0.1, -1.0}}},
                  {{"type", "MaxAbsScaler"}, {"scale", {4.0, 2.0}}},
                  {{"type", "RobustScaler"}, {"center", nullptr}, {"scale", {1.5, 1.0}}},
                  ridge({1.0, -0.5}, 0.25)};
    const spec::Pipeline p = importers::import_sklearn(doc_with(numeric_inputs(2), "regression", steps));
    ASSERT_EQ(p.steps.size(), 1u);
    EXPECT_STREQ(spec::op_name(p.steps[0].op), "affine");
    EXPECT_STREQ(spec::op_name(p.estimator.op), "linear");
    // Row (3, 1): ((3-1)/2*0.25+0.1)/4/1.5 = 0.0583333, ((1+2)/0.5*3-1)/2 = 8.5.
    std::vector<float> x = {3.0f, 1.0f};
    expect_close(run_compiled(p, x, 1), {0.0583333333 * 1.0 - 0.5 * 8.5 + 0.25}, "folded");
    expect_matches_reference(p, random_rows(300, 2, 1), "scalers");
}

TEST(SklearnSteps, ImputerReplacesNaNAndImputesText) {
    json steps = {{{"type", "SimpleImputer"}, {"statistics", {1.5, "NaN", -2.0}}}, ridge({1.0, 10.0, 100.0}, 0.0)};
    const spec::Pipeline p = importers::import_sklearn(doc_with(numeric_inputs(3), "regression", steps));
    EXPECT_EQ(p.model.num_features, 3);
    std::vector<float> x = {kNaN, 7.0f, kNaN, 2.0f, 7.0f, 0.5f};
    expect_close(run_compiled(p, x, 2), {1.5 + 70.0 - 200.0, 2.0 + 70.0 + 50.0}, "imputed");
    expect_matches_reference(p, random_rows(300, 3, 2), "imputer");

    // A text column: the statistic joins the vocabulary, and NULL becomes its index.
    json inputs = {{{"name", "city"}, {"type", "text"}}};
    json text_steps = {{{"type", "SimpleImputer"}, {"statistics", {"rome"}}},
                       {{"type", "OneHotEncoder"}, {"categories", json::array({json::array({"oslo", "rome"})})},
                        {"handle_unknown", "ignore"}},
                       ridge({1.0, 10.0}, 0.0)};
    const spec::Pipeline t = importers::import_sklearn(doc_with(inputs, "regression", text_steps));
    ASSERT_EQ(t.text_inputs.size(), 1u);
    EXPECT_EQ(t.text_inputs[0].vocabulary, (std::vector<std::string>{"rome", "oslo"}));
    expect_close(run_compiled(t, {kNaN, 1.0f, 0.0f, -1.0f}, 4), {10.0, 1.0, 10.0, 0.0}, "text imputed");
}

TEST(SklearnSteps, FunctionTransformerUfuncsMatchNumpy) {
    const std::vector<float> x = {kNaN, -8.0f, -1.0f, -0.5f, 0.0f, 0.5f, 0.99f, 2.5f, 3.5f, 20.0f};
    const int64_t rows = static_cast<int64_t>(x.size());
    for (const std::string& f : spec::elementwise_functions()) {
        json steps = {{{"type", "FunctionTransformer"}, {"func", f}}, ridge({1.0}, 0.0)};
        const spec::Pipeline p = importers::import_sklearn(doc_with(numeric_inputs(1), "regression", steps));
        ASSERT_EQ(p.steps.size(), 1u);
        EXPECT_STREQ(spec::op_name(p.steps[0].op), "elementwise");
        std::vector<double> want;
        for (float v : x) want.push_back(static_cast<float>(spec::apply_elementwise(f, v)));
        expect_close(run_compiled(p, x, rows), want, f);
        expect_matches_reference(p, x, f + " reference");
    }
    // numpy's values: rint rounds half to even, sign and cbrt keep NaN, cbrt of a negative.
    EXPECT_EQ(spec::apply_elementwise("rint", 2.5), 2.0);
    EXPECT_EQ(spec::apply_elementwise("rint", 3.5), 4.0);
    EXPECT_TRUE(std::isnan(spec::apply_elementwise("sign", NAN)));
    EXPECT_DOUBLE_EQ(spec::apply_elementwise("cbrt", -8.0), -2.0);
    EXPECT_TRUE(std::isnan(spec::apply_elementwise("log", -1.0)));
    // The identity and the refusals.
    const spec::Pipeline id = importers::import_sklearn(
        doc_with(numeric_inputs(1), "regression", {{{"type", "FunctionTransformer"}}, ridge({2.0}, 0.0)}));
    EXPECT_TRUE(id.steps.empty());
    expect_error([] {
        importers::import_sklearn(doc_with(numeric_inputs(1), "regression",
                                           {{{"type", "FunctionTransformer"}, {"func", "gamma"}}, ridge({1.0}, 0.0)}));
    }, ErrorCategory::Unsupported, {"FunctionTransformer", "func", "gamma"});
    expect_error([] {
        importers::import_sklearn(doc_with(numeric_inputs(1), "regression",
                                           {{{"type", "FunctionTransformer"}, {"func", "log"}, {"kw_args", {{"a", 1}}}},
                                            ridge({1.0}, 0.0)}));
    }, ErrorCategory::Unsupported, {"FunctionTransformer", "kw_args"});
}

TEST(SklearnSteps, SelectorsBinarizerNormalizerMissingIndicatorPca) {
    for (const char* norm : {"l1", "l2", "max"}) {
        json steps = {{{"type", "MissingIndicator"}, {"features", {0, 2, 3}}},
                      {{"type", "ColumnSelector"}, {"columns", {2, 0}}},
                      ridge({1.0, 10.0}, 0.5)};
        json fu = {{"type", "FeatureUnion"},
                   {"transformers",
                    {{{"steps", steps}},
                     {{"steps", {{{"type", "SimpleImputer"}, {"statistics", {1.0, 2.0, 3.0, 4.0}}},
                                 {{"type", "Binarizer"}, {"threshold", 0.25}}}}},
                     {{"steps", {{{"type", "SimpleImputer"}, {"statistics", {1.0, 2.0, 3.0, 4.0}}},
                                 {{"type", "Normalizer"}, {"norm", norm}},
                                 {{"type", "PCA"}, {"components", {{0.6, 0.8, 0.0, 0.0}, {0.0, 0.0, 0.8, -0.6}}},
                                  {"mean", {0.1, 0.2, 0.3, 0.4}}, {"whiten", true},
                                  {"explained_variance", {4.0, 0.25}}},
                                 {{"type", "TruncatedSVD"}, {"components", {{1.0, 2.0}, {-1.0, 0.5}}}}}}}}}};
        json doc = doc_with(numeric_inputs(4), "regression",
                            {fu, ridge({1.0, -1.0, 2.0, 0.5, 0.25, 1.5, -2.0, 3.0}, 0.1)});
        doc["steps"][0]["transformers"][0]["steps"] = {{{"type", "MissingIndicator"}, {"features", {0, 2, 3}}},
                                                       {{"type", "ColumnSelector"}, {"columns", {2, 0}}}};
        const spec::Pipeline p = importers::import_sklearn(doc);
        EXPECT_EQ(p.model.num_features, 8);
        expect_matches_reference(p, random_rows(300, 4, 7), norm);
        // One row by hand: x = (NaN, 1, 0, 2); indicator (1, 0, 0) → select (0, 1).
        // Imputed (1, 1, 0, 2): binarized (1, 1, 0, 1).
        std::vector<double> z = {0.0, 1.0, 1.0, 1.0, 0.0, 1.0};
        const double n = std::string(norm) == "l1" ? 4.0 : std::string(norm) == "l2" ? std::sqrt(6.0) : 2.0;
        const double u[4] = {1.0 / n - 0.1, 1.0 / n - 0.2, 0.0 - 0.3, 2.0 / n - 0.4};
        const double p0 = (0.6 * u[0] + 0.8 * u[1]) / 2.0, p1 = (0.8 * u[2] - 0.6 * u[3]) / 0.5;
        z.push_back(p0 + 2.0 * p1);
        z.push_back(-p0 + 0.5 * p1);
        const double coef[8] = {1.0, -1.0, 2.0, 0.5, 0.25, 1.5, -2.0, 3.0};
        double want = 0.1;
        for (size_t i = 0; i < 8; ++i) want += coef[i] * z[i];
        expect_close(run_compiled(p, {kNaN, 1.0f, 0.0f, 2.0f}, 1), {want}, std::string("by hand ") + norm);
    }
    expect_error([] {
        importers::import_sklearn(doc_with(numeric_inputs(1), "regression",
                                           {{{"type", "Normalizer"}, {"norm", "l3"}}, ridge({1.0}, 0.0)}));
    }, ErrorCategory::Unsupported, {"Normalizer", "norm"});
    {
        // missing_values a number: that number is missing, and NaN (NULL) too.
        const spec::Pipeline m = importers::import_sklearn(doc_with(numeric_inputs(1), "regression",
            {{{"type", "MissingIndicator"}, {"features", {0}}, {"missing_values", -1}}, ridge({2.0}, 0.5)}));
        const std::vector<float> x = {-1.0f, kNaN, 0.0f, 3.0f};
        expect_close(run_compiled(m, x, 4), {2.5, 2.5, 0.5, 0.5}, "MissingIndicator(missing_values=-1) compiled");
        const std::vector<float> ref = reference(m, x, 4);
        expect_close(std::vector<float>(ref), {2.5, 2.5, 0.5, 0.5}, "MissingIndicator(missing_values=-1) reference");
    }
    expect_error([] {
        importers::import_sklearn(doc_with(numeric_inputs(1), "regression",
                                           {{{"type", "MissingIndicator"}, {"features", {0}}, {"missing_values", "Infinity"}},
                                            ridge({1.0}, 0.0)}));
    }, ErrorCategory::Unsupported, {"MissingIndicator", "missing_values"});
    expect_error([] {
        importers::import_sklearn(doc_with(numeric_inputs(1), "regression",
                                           {{{"type", "PCA"}, {"components", {{1.0}}}, {"whiten", true},
                                             {"explained_variance", {0.0}}},
                                            ridge({1.0}, 0.0)}));
    }, ErrorCategory::Unsupported, {"PCA", "whiten"});
}

TEST(SklearnSteps, KBinsDiscretizerOrdinalAndOneHot) {
    json bins = {{0.0, 1.0, 2.0, 4.0}, {-1.0, 1.0}};
    const spec::Pipeline ord = importers::import_sklearn(doc_with(
        numeric_inputs(2), "regression",
        {{{"type", "KBinsDiscretizer"}, {"bin_edges", bins}, {"encode", "ordinal"}}, ridge({1.0, 10.0}, 0.0)}));
    // side "right": an edge value goes to the bin above it; outside the edges: the end bins.
    expect_close(run_compiled(ord, {-5.0f, 3.0f, 1.0f, 0.0f, 1.5f, 0.0f, 2.0f, 0.0f, 9.0f, 0.0f}, 5),
                 {0.0, 1.0, 1.0, 2.0, 2.0}, "ordinal");
    expect_matches_reference(ord, random_rows(300, 2, 3), "ordinal reference");
    const spec::Pipeline oh = importers::import_sklearn(doc_with(
        numeric_inputs(2), "regression",
        {{{"type", "KBinsDiscretizer"}, {"bin_edges", bins}, {"encode", "onehot-dense"}},
         ridge({1.0, 2.0, 4.0, 100.0}, 0.0)}));
    EXPECT_EQ(oh.model.num_features, 4);
    expect_close(run_compiled(oh, {1.0f, 0.0f, 2.5f, 0.0f}, 2), {2.0 + 100.0, 4.0 + 100.0}, "onehot");
    expect_matches_reference(oh, random_rows(300, 2, 4), "onehot reference");
    expect_error([&] {
        importers::import_sklearn(doc_with(numeric_inputs(2), "regression",
                                           {{{"type", "KBinsDiscretizer"}, {"bin_edges", bins}, {"encode", "hash"}},
                                            ridge({1.0, 1.0}, 0.0)}));
    }, ErrorCategory::Unsupported, {"KBinsDiscretizer", "encode"});
}

TEST(SklearnSteps, PolynomialFeaturesPowers) {
    // Outputs 1, x0, x1, x0², x0·x1, x1³.
    json powers = {{0, 0}, {1, 0}, {0, 1}, {2, 0}, {1, 1}, {0, 3}};
    const spec::Pipeline p = importers::import_sklearn(doc_with(
        numeric_inputs(2), "regression",
        {{{"type", "PolynomialFeatures"}, {"powers", powers}}, ridge({0.5, 1.0, 2.0, 3.0, 4.0, 5.0}, 0.0)}));
    EXPECT_EQ(p.model.num_features, 6);
    // (-2, 3): 0.5 - 2 + 6 + 12 - 24 + 135.
    expect_close(run_compiled(p, {-2.0f, 3.0f}, 1), {127.5}, "by hand");
    expect_matches_reference(p, random_rows(300, 2, 5), "reference");
    // A NaN column only spoils the monomials that use it.
    const spec::Pipeline q = importers::import_sklearn(doc_with(
        numeric_inputs(2), "regression",
        {{{"type", "PolynomialFeatures"}, {"powers", {{0, 1}, {1, 0}}}},
         {{"type", "SimpleImputer"}, {"statistics", {7.0, 7.0}}}, ridge({1.0, 10.0}, 0.0)}));
    expect_close(run_compiled(q, {kNaN, 2.0f}, 1), {2.0 + 70.0}, "NaN");
    expect_error([&] {
        importers::import_sklearn(doc_with(numeric_inputs(2), "regression",
                                           {{{"type", "PolynomialFeatures"}, {"powers", {{0, -1}}}}, ridge({1.0}, 0.0)}));
    }, ErrorCategory::InvalidModel, {"powers"});
}

TEST(SklearnSteps, OneHotNumericWithNaNCategoryAndDrop) {
    json ohe = {{"type", "OneHotEncoder"},
                {"categories", {{1.0, 2.0, "NaN"}, {0.1, 0.25}}},
                {"handle_unknown", "ignore"},
                {"drop_idx", {0, nullptr}}};
    json steps = {ohe, ridge({1.0, 10.0, 100.0, 1000.0}, 0.0)};
    const spec::Pipeline p = importers::import_sklearn(doc_with(numeric_inputs(2), "regression", steps));
    EXPECT_EQ(p.model.num_features, 4);
    // 0.1 is compared as the float32 the batch holds.
    std::vector<float> x = {2.0f, 0.1f, kNaN, 0.25f, 1.0f, 7.0f, 3.0f, kNaN};
    expect_close(run_compiled(p, x, 4), {1.0 + 100.0, 10.0 + 1000.0, 0.0, 0.0}, "one-hot");
    std::vector<float> grid;
    std::mt19937 rng(3);
    for (int i = 0; i < 400; ++i) {
        const float v[] = {1.0f, 2.0f, kNaN, 0.1f, 0.25f, 5.0f, 0.0f};
        grid.push_back(v[rng() % 7]);
    }
    expect_matches_reference(p, grid, "one-hot grid");
}

// Infrequent categories: per column the frequent ones in order, then one for the infrequent ones
// (with infrequent_if_exist also the unknown values), drop_idx counted in that grouped order.
TEST(SklearnSteps, OneHotInfrequentCategoriesGroupLast) {
    json ohe = {{"type", "OneHotEncoder"},
                {"categories", {{1.0, 2.0, 3.0, 4.0}, {5.0, 6.0, 7.0}}},
                {"infrequent_categories", {{3.0, 4.0}, {6.0}}},
                {"handle_unknown", "infrequent_if_exist"},
                {"drop_idx", {0, nullptr}}};
    // column 0: [2, infrequent] (1 dropped); column 1: [5, 7, infrequent]
    json steps = {ohe, ridge({1.0, 10.0, 100.0, 1000.0, 10000.0}, 0.0)};
    const spec::Pipeline p = importers::import_sklearn(doc_with(numeric_inputs(2), "regression", steps));
    EXPECT_EQ(p.model.num_features, 5);
    std::vector<float> x = {1.0f, 5.0f, 2.0f, 6.0f, 4.0f, 7.0f, 9.0f, 9.0f, 3.0f, kNaN};
    expect_close(run_compiled(p, x, 5), {100.0, 1.0 + 10000.0, 10.0 + 1000.0, 10.0 + 10000.0, 10.0 + 10000.0},
                 "infrequent_if_exist");
    ohe["handle_unknown"] = "ignore";  // unknown values: all zeros, infrequent ones still grouped
    const spec::Pipeline q = importers::import_sklearn(doc_with(numeric_inputs(2), "regression", {ohe, steps[1]}));
    expect_close(run_compiled(q, x, 5), {100.0, 1.0 + 10000.0, 10.0 + 1000.0, 0.0, 10.0}, "ignore");
    expect_matches_reference(q, x, "infrequent reference");
    ohe["infrequent_categories"] = {{3.0, 8.0}, nullptr};
    expect_error([&] { importers::import_sklearn(doc_with(numeric_inputs(2), "regression", {ohe, steps[1]})); },
                 ErrorCategory::InvalidModel, {"infrequent_categories", "not one of the column's categories"});
    ohe["infrequent_categories"] = {{3.0, 4.0}, nullptr};
    ohe["drop_idx"] = {3, nullptr};  // only 3 grouped categories: [1, 2, infrequent]
    expect_error([&] { importers::import_sklearn(doc_with(numeric_inputs(2), "regression", {ohe, steps[1]})); },
                 ErrorCategory::InvalidModel, {"drop_idx"});
}

TEST(SklearnSteps, OrdinalUnknownAndMissing) {
    json enc = {{"type", "OrdinalEncoder"},
                {"categories", {{3.0, 5.0, "NaN"}, {-1.0, 0.0, 1.0}}},
                {"handle_unknown", "use_encoded_value"},
                {"unknown_value", -1},
                {"encoded_missing_value", -2}};
    json steps = {enc, ridge({1.0, 10.0}, 0.0)};
    const spec::Pipeline p = importers::import_sklearn(doc_with(numeric_inputs(2), "regression", steps));
    std::vector<float> x = {5.0f, 1.0f, kNaN, -1.0f, 4.0f, kNaN};
    expect_close(run_compiled(p, x, 3), {1.0 + 20.0, -2.0 + 0.0, -1.0 - 10.0}, "ordinal");
    expect_matches_reference(p, random_rows(300, 2, 4), "ordinal");
}

TEST(SklearnSteps, ColumnTransformerFeatureUnionAndTextInputs) {
    json inputs = {{{"name", "n"}, {"type", "numeric"}}, {{"name", "city"}, {"type", "text"}},
                   {{"name", "m"}, {"type", "numeric"}}};
    json ct = {{"type", "ColumnTransformer"},
               {"transformers",
                {{{"columns", {0, 2}},
                  {"steps", {{{"type", "SimpleImputer"}, {"statistics", {0.0, 1.0}}},
                             {{"type", "StandardScaler"}, {"mean", {1.0, 2.0}}, {"scale", {2.0, 4.0}}}}}},
                 {{"columns", {1}},
                  {"steps", {{{"type", "OneHotEncoder"}, {"categories", {{"b", "a", nullptr}}},
                              {"handle_unknown", "error"}}}}}}},
               {"remainder", {{"columns", {0}}, {"steps", json::array()}}}};
    json fu = {{"type", "FeatureUnion"},
               {"transformers", {{{"steps", json::array()}},
                                 {{"steps", {{{"type", "MaxAbsScaler"}, {"scale", {2, 2, 2, 2, 2, 2}}}}}}}}};
    json steps = {ct, fu,
                  {{"type", "LogisticRegression"},
                   {"coef", {{0.5, -1.0, 2.0, 0.0, 1.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7}}},
                   {"intercept", {0.1}},
                   {"multi_class", "auto"}}};
    const spec::Pipeline p =
        importers::import_sklearn(doc_with(inputs, "classification", steps, json::array({0, 1})));
    ASSERT_EQ(p.text_inputs.size(), 1u);
    EXPECT_EQ(p.text_inputs[0].input, 1);
    EXPECT_EQ(p.text_inputs[0].vocabulary, (std::vector<std::string>{"b", "a"}));
    EXPECT_TRUE(p.text_inputs[0].unknown_is_error);
    EXPECT_EQ(p.model.num_features, 12);
    EXPECT_EQ(p.transform, spec::PostTransform::Logistic);
    std::vector<float> x;
    std::mt19937 rng(5);
    for (int r = 0; r < 300; ++r) {
        std::vector<float> row = random_rows(1, 3, rng());
        const float text[] = {0.0f, 1.0f, -1.0f, kNaN};
        row[1] = text[rng() % 4];
        x.insert(x.end(), row.begin(), row.end());
    }
    expect_matches_reference(p, x, "column transformer");
    // Round trip through the catalog form keeps every step.
    const std::string j = spec::to_json(p);
    EXPECT_EQ(json::parse(j)["format_version"], 2);
    const spec::Pipeline back = spec::from_json(j);
    EXPECT_EQ(spec::to_json(back), j);
    expect_matches_reference(back, x, "column transformer, read back");
}

TEST(SklearnSteps, TreesAfterFeaturizersEveryStrategy) {
    // A scaler and a one-hot encoder in front of a random tree ensemble, built by hand.
    spec::Pipeline p = testing::make_pipeline(spec::Task::Classification, spec::PostTransform::Softmax, 3, 5,
                                              spec::Comparison::LessEqual);
    p.features = {"a", "b", "c"};
    spec::Step ct;
    ct.op = spec::Op::Concat;
    spec::Step scale;
    scale.op = spec::Op::Affine;
    scale.params = {{"scale", {0.5, 2.0}}, {"offset", {0.25, -1.0}}};
    spec::Step ohe;
    ohe.op = spec::Op::OneHot;
    ohe.params = {{"categories", {{-0.25, 0.5, 1.0}}}, {"drop", {-1}}};
    ct.parts = {{{0, 2}, {scale}}, {{1}, {ohe}}};
    p.steps = {ct};
    std::mt19937 rng(6);
    testing::add_trees(p, rng, 30, testing::TreeShape{5, 0.3, true});
    spec::validate(p);
    const std::vector<float> x = random_rows(500, 3, 7);
    for (compiler::Strategy s : {compiler::Strategy::Gemm, compiler::Strategy::TreeTraversal,
                                 compiler::Strategy::PerfectTreeTraversal, compiler::Strategy::Native})
        expect_matches_reference(p, x, compiler::strategy_name(s), s);
    EXPECT_EQ(spec::to_json(spec::from_json(spec::to_json(p))), spec::to_json(p));
}

// --- estimators ----------------------------------------------------------------------------

TEST(SklearnEstimators, ClassifierLinks) {
    const json coef3 = {{0.5, -1.0}, {0.25, 0.75}, {-1.0, 0.1}};
    struct Case {
        json step;
        int classes;
        spec::PostTransform transform;
        bool proba;
    } cases[] = {
        {{{"type", "LogisticRegression"}, {"coef", coef3}, {"intercept", {0.1, 0.2, 0.3}}, {"multi_class", "multinomial"}},
         3, spec::PostTransform::Softmax, true},
        {{{"type", "LogisticRegression"}, {"coef", coef3}, {"intercept", {0.1, 0.2, 0.3}}, {"multi_class", "ovr"}},
         3, spec::PostTransform::Ovr, true},
        {{{"type", "LogisticRegression"}, {"coef", {{0.5, -1.0}}}, {"intercept", {0.1}}, {"multi_class", "multinomial"}},
         2, spec::PostTransform::Logistic, true},
        {{{"type", "SGDClassifier"}, {"coef", coef3}, {"intercept", {0.1, 0.2, 0.3}}, {"loss", "log_loss"}},
         3, spec::PostTransform::Ovr, true},
        {{{"type", "SGDClassifier"}, {"coef", {{0.5, -1.0}}}, {"intercept", {0.1}}, {"loss", "hinge"}},
         2, spec::PostTransform::Identity, false},
        {{{"type", "LinearSVC"}, {"coef", coef3}, {"intercept", {0.1, 0.2, 0.3}}}, 3, spec::PostTransform::Identity, false},
        {{{"type", "Perceptron"}, {"coef", {{0.5, -1.0}}}, {"intercept", {0.1}}}, 2, spec::PostTransform::Identity, false},
        {{{"type", "RidgeClassifier"}, {"coef", {{0.5, -1.0}}}, {"intercept", {0.1}}}, 2, spec::PostTransform::Identity, false},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.step.dump());
        json classes = json::array();
        for (int k = 0; k < c.classes; ++k) classes.push_back(k * 10);
        const spec::Pipeline p =
            importers::import_sklearn(doc_with(numeric_inputs(2), "classification", {c.step}, classes));
        EXPECT_EQ(p.transform, c.transform);
        EXPECT_EQ(p.has_probabilities, c.proba);
        EXPECT_EQ(p.output_width(), c.classes);
        expect_matches_reference(p, random_rows(200, 2, 8), "classifier");
        EXPECT_EQ(spec::to_json(spec::from_json(spec::to_json(p))), spec::to_json(p));
    }
    // Binary multinomial: softmax([-d, d]); d = 0.5*1 - 1*2 + 0.1 = -1.4.
    const spec::Pipeline p = importers::import_sklearn(doc_with(numeric_inputs(2), "classification",
                                                                {cases[2].step}, json::array({0, 1})));
    const double p1 = 1.0 / (1.0 + std::exp(2.8));
    expect_close(run_compiled(p, {1.0f, 2.0f}, 1), {1.0 - p1, p1}, "binary multinomial");
    // Binary decision values: [-d, d].
    const spec::Pipeline svc = importers::import_sklearn(doc_with(numeric_inputs(2), "classification",
                                                                  {cases[6].step}, json::array({0, 1})));
    expect_close(run_compiled(svc, {1.0f, 2.0f}, 1), {1.4, -1.4}, "perceptron");
}

// --- transform, decision_function, score_samples ------------------------------------------

std::vector<float> run_output(const spec::Pipeline& p, compiler::Output output, const std::vector<float>& x,
                              int width) {
    const std::string bytes = compiler::compile(p, compiler::Strategy::Native, output);
    runtime::Program* prog = runtime::load_program(testing::next_program_id(), bytes.data(), bytes.size());
    EXPECT_EQ(runtime::program_output_width(prog), width);
    const int64_t rows = static_cast<int64_t>(x.size()) / p.input_width();
    std::vector<float> out(static_cast<size_t>(rows * width), -12345.0f);
    runtime::run_program(prog, x.data(), rows, p.input_width(), out.data());
    runtime::release_program(prog);
    return out;
}

TEST(SklearnOutputs, TransformerIsItsStepsOutput) {
    const spec::Pipeline t = importers::import_sklearn(doc_with(
        numeric_inputs(2), "transformer",
        {{{"type", "SimpleImputer"}, {"statistics", {2.0, 0.0}}},
         {{"type", "StandardScaler"}, {"mean", {1.0, 2.0}}, {"scale", {2.0, 4.0}}}}));
    EXPECT_EQ(t.task, spec::Task::Transform);
    EXPECT_EQ(t.output_width(), 2);
    // (3 - 1) / 2, (6 - 2) / 4; NaN imputed: (2 - 1) / 2, (0 - 2) / 4
    expect_close(run_compiled(t, {3.0f, 6.0f, kNaN, kNaN}, 2), {1.0, 1.0, 0.5, -0.5}, "transformer");
    expect_matches_reference(t, random_rows(100, 2, 3), "transformer");
    EXPECT_EQ(spec::to_json(spec::from_json(spec::to_json(t))), spec::to_json(t));
    expect_error([&] { compiler::compile(t, compiler::Strategy::Native, compiler::Output::DecisionFunction); },
                 ErrorCategory::Unsupported, {"decision_function", "transform()"});
    // A text column may not reach the output; a transformer document has no model step.
    json text_inputs = {{{"name", "city"}, {"type", "text"}}, {{"name", "x"}, {"type", "numeric"}}};
    expect_error([&] {
        importers::import_sklearn(doc_with(text_inputs, "transformer",
                                           {{{"type", "StandardScaler"}, {"mean", {0.0, 0.0}}, {"scale", {1.0, 1.0}}}}));
    }, ErrorCategory::InvalidModel, {"city"});
    expect_error([&] { importers::import_sklearn(doc_with(numeric_inputs(2), "transformer", {ridge({1.0, 2.0}, 0.5)})); },
                 ErrorCategory::Unsupported, {"Ridge"});
}

TEST(SklearnOutputs, DecisionFunctionIsTheLinearMargin) {
    // x = [1, 2]: w = [0.5, -1], b = 0.1 → d = -1.4; three classes: [-1.4, 1.95, -0.5]
    const json coef3 = {{0.5, -1.0}, {0.25, 0.75}, {-1.0, 0.1}};
    const json w = {{0.5, -1.0}};
    struct Case {
        json step;
        int classes;
        std::vector<double> want;
    } cases[] = {
        {{{"type", "LogisticRegression"}, {"coef", w}, {"intercept", {0.1}}, {"multi_class", "ovr"}}, 2, {-1.4}},
        {{{"type", "LogisticRegression"}, {"coef", w}, {"intercept", {0.1}}, {"multi_class", "multinomial"}}, 2, {-1.4}},
        {{{"type", "LogisticRegression"}, {"coef", coef3}, {"intercept", {0.1, 0.2, 0.3}}, {"multi_class", "multinomial"}},
         3, {-1.4, 1.95, -0.5}},
        {{{"type", "SGDClassifier"}, {"coef", w}, {"intercept", {0.1}}, {"loss", "hinge"}}, 2, {-1.4}},
        {{{"type", "SGDClassifier"}, {"coef", coef3}, {"intercept", {0.1, 0.2, 0.3}}, {"loss", "modified_huber"}},
         3, {-1.4, 1.95, -0.5}},
        {{{"type", "LinearSVC"}, {"coef", coef3}, {"intercept", {0.1, 0.2, 0.3}}}, 3, {-1.4, 1.95, -0.5}},
        {{{"type", "Perceptron"}, {"coef", w}, {"intercept", {0.1}}}, 2, {-1.4}},
        {{{"type", "RidgeClassifier"}, {"coef", w}, {"intercept", {0.1}}}, 2, {-1.4}},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.step.dump());
        json classes = json::array();
        for (int k = 0; k < c.classes; ++k) classes.push_back(k);
        const spec::Pipeline p =
            importers::import_sklearn(doc_with(numeric_inputs(2), "classification", {c.step}, classes));
        const spec::Pipeline back = spec::from_json(spec::to_json(p));
        expect_close(run_output(back, compiler::Output::DecisionFunction, {1.0f, 2.0f}, static_cast<int>(c.want.size())),
                     c.want, "decision_function");
        expect_error([&] { compiler::compile(p, compiler::Strategy::Native, compiler::Output::ScoreSamples); },
                     ErrorCategory::Unsupported, {"score_samples", c.step["type"].get<std::string>()});
    }
    const spec::Pipeline nb = importers::import_sklearn(doc_with(
        numeric_inputs(2), "classification",
        {{{"type", "GaussianNB"}, {"theta", {{0.0, 0.0}, {1.0, 1.0}}}, {"var", {{1.0, 1.0}, {1.0, 1.0}}},
          {"class_prior", {0.5, 0.5}}}},
        json::array({0, 1})));
    expect_error([&] { compiler::compile(nb, compiler::Strategy::Native, compiler::Output::DecisionFunction); },
                 ErrorCategory::Unsupported, {"decision_function", "GaussianNB"});
}

TEST(SklearnEstimators, Regressors) {
    for (const char* type : {"LinearRegression", "Ridge", "Lasso", "ElasticNet", "SGDRegressor", "LinearSVR"}) {
        json step = {{"type", type}, {"coef", {{1.5, -2.0, 0.0}}}, {"intercept", {0.5}}};
        const spec::Pipeline p = importers::import_sklearn(doc_with(numeric_inputs(3), "regression", {step}));
        EXPECT_STREQ(spec::op_name(p.estimator.op), "linear");
        expect_close(run_compiled(p, {1.0f, 2.0f, 3.0f}, 1), {1.5 - 4.0 + 0.5}, type);
        expect_matches_reference(p, random_rows(100, 3, 9), type);
    }
}

// --- errors ------------------------------------------------------------------------------

TEST(SklearnErrors, UnsupportedEstimatorsAndParameters) {
    expect_error([] { importers::import_sklearn(doc_with(numeric_inputs(1), "regression",
                                                         {{{"type", "KernelRidge"}, {"alpha", 1}}})); },
                 ErrorCategory::Unsupported, {"KernelRidge"});
    expect_error([] { importers::import_sklearn(doc_with(numeric_inputs(1), "regression",
                                                         {{{"type", "Binarizer2"}}, ridge({1.0}, 0.0)})); },
                 ErrorCategory::Unsupported, {"Binarizer2"});
    expect_error([] {
        importers::import_sklearn(doc_with(numeric_inputs(1), "regression",
                                           {{{"type", "MinMaxScaler"}, {"scale", {1}}, {"min", {0}}, {"clip", true}},
                                            ridge({1.0}, 0.0)}));
    }, ErrorCategory::InvalidModel, {"feature_range", "is missing"});  // clip needs the range
    expect_error([] {
        importers::import_sklearn(doc_with(numeric_inputs(1), "regression",
                                           {{{"type", "MinMaxScaler"}, {"scale", {1}}, {"min", {0}}, {"clip", true},
                                             {"feature_range", {2, 1}}},
                                            ridge({1.0}, 0.0)}));
    }, ErrorCategory::InvalidModel, {"feature_range", "min < max"});
    {
        // missing_values = 0: zeros and NaN (NULL) take the statistic, 7.
        const spec::Pipeline m = importers::import_sklearn(doc_with(numeric_inputs(1), "regression",
            {{{"type", "SimpleImputer"}, {"statistics", {7}}, {"missing_values", 0}}, ridge({1.0}, 0.0)}));
        const std::vector<float> x = {0.0f, kNaN, 3.0f, -0.5f};
        expect_close(run_compiled(m, x, 4), {7.0, 7.0, 3.0, -0.5}, "SimpleImputer(missing_values=0) compiled");
        const std::vector<float> ref = reference(m, x, 4);
        expect_close(std::vector<float>(ref), {7.0, 7.0, 3.0, -0.5}, "SimpleImputer(missing_values=0) reference");
    }
    expect_error([] {
        importers::import_sklearn(doc_with(numeric_inputs(1), "regression",
                                           {{{"type", "SimpleImputer"}, {"statistics", {1}}, {"missing_values", "-Infinity"}},
                                            ridge({1.0}, 0.0)}));
    }, ErrorCategory::Unsupported, {"SimpleImputer", "missing_values"});
    expect_error([] {  // a text column's missing value is NULL only
        importers::import_sklearn(doc_with(json::array({{{"name", "c"}, {"type", "text"}}}), "regression",
                                           {{{"type", "SimpleImputer"}, {"statistics", {"a"}}, {"missing_values", 0}},
                                            {{"type", "OrdinalEncoder"}, {"categories", {{"a", "b"}}},
                                             {"handle_unknown", "error"}, {"unknown_value", nullptr}},
                                            ridge({1.0}, 0.0)}));
    }, ErrorCategory::Unsupported, {"SimpleImputer", "missing_values", "text input \"c\""});
    expect_error([] {
        importers::import_sklearn(doc_with(numeric_inputs(1), "classification",
                                           {{{"type", "LogisticRegression"}, {"coef", {{1.0}}}, {"intercept", {0}},
                                             {"multi_class", "crammer"}}},
                                           json::array({0, 1})));
    }, ErrorCategory::Unsupported, {"LogisticRegression", "multi_class"});
    expect_error([] {
        importers::import_sklearn(doc_with(numeric_inputs(1), "regression",
                                           {{{"type", "Ridge"}, {"coef", {{1.0}, {2.0}}}, {"intercept", {0, 0}}}}));
    }, ErrorCategory::InvalidModel, {"Ridge", "coef", "has 2 rows, the document's outputs is 1"});  // "outputs": 2 says so
}

TEST(SklearnErrors, MalformedDocuments) {
    expect_error([] { importers::import_sklearn(doc_with(numeric_inputs(2), "regression", {ridge({1.0}, 0.0)})); },
                 ErrorCategory::InvalidModel, {"coef", "2 features"});
    expect_error([] {
        importers::import_sklearn(doc_with(numeric_inputs(2), "regression",
                                           {{{"type", "StandardScaler"}, {"mean", {1.0}}, {"scale", {1.0, 1.0}}},
                                            ridge({1.0, 1.0}, 0.0)}));
    }, ErrorCategory::InvalidModel, {"mean"});
    json text_inputs = {{{"name", "city"}, {"type", "text"}}};
    expect_error([&] {
        importers::import_sklearn(doc_with(text_inputs, "regression",
                                           {{{"type", "StandardScaler"}, {"mean", {1.0}}, {"scale", {1.0}}},
                                            ridge({1.0}, 0.0)}));
    }, ErrorCategory::InvalidModel, {"StandardScaler", "city"});
    expect_error([&] { importers::import_sklearn(doc_with(text_inputs, "regression", {ridge({1.0}, 0.0)})); },
                 ErrorCategory::InvalidModel, {"Ridge", "city"});
    expect_error([] {
        importers::import_sklearn(doc_with(numeric_inputs(1), "classification",
                                           {{{"type", "LinearSVC"}, {"coef", {{1.0}, {2.0}}}, {"intercept", {0, 0}}}},
                                           json::array({0, 1, 2})));
    }, ErrorCategory::InvalidModel, {"coef", "3 classes"});
    expect_error([] {
        importers::import_sklearn(doc_with(numeric_inputs(1), "classification",
                                           {ridge({1.0}, 0.0)}, json::array({0, 1})));
    }, ErrorCategory::InvalidModel, {"Ridge", "regressor"});
    expect_error([] {
        importers::import_sklearn(doc_with(numeric_inputs(1), "regression",
                                           {{{"type", "OneHotEncoder"}, {"categories", json::array({json::array({"a", "b"})})}},
                                            ridge({1.0, 1.0}, 0.0)}));
    }, ErrorCategory::InvalidModel, {"categories", "numeric"});
}

// Labels of one type: numbers stay the classes; strings and booleans become class_labels (as
// text, booleans as PostgreSQL writes them) over the column indices, and survive the spec's JSON.
TEST(SklearnClasses, NumbersStringsAndBooleans) {
    const json logreg = {{"type", "LogisticRegression"}, {"coef", {{1.0}, {-1.0}, {0.5}}},
                         {"intercept", {0, 0, 0}}, {"multi_class", "multinomial"}, {"loss", "log"}};
    spec::Pipeline p = importers::import_sklearn(
        doc_with(numeric_inputs(1), "classification", {logreg}, json::array({-3, 7, 12.5})));
    EXPECT_EQ(p.classes, (std::vector<double>{-3, 7, 12.5}));
    EXPECT_TRUE(p.class_labels.empty());
    p = importers::import_sklearn(
        doc_with(numeric_inputs(1), "classification", {logreg}, json::array({"bronze", "gold", "silver"})));
    EXPECT_EQ(p.classes, (std::vector<double>{0, 1, 2}));
    EXPECT_EQ(p.class_labels, (std::vector<std::string>{"bronze", "gold", "silver"}));
    const spec::Pipeline q = spec::from_json(spec::to_json(p));
    EXPECT_EQ(q.class_labels, p.class_labels);
    EXPECT_EQ(q.classes, p.classes);

    const json binary = {{"type", "LogisticRegression"}, {"coef", {{1.0}}}, {"intercept", {0}},
                         {"multi_class", "ovr"}, {"loss", "log"}};
    p = importers::import_sklearn(doc_with(numeric_inputs(1), "classification", {binary}, json::array({false, true})));
    EXPECT_EQ(p.class_labels, (std::vector<std::string>{"false", "true"}));
    EXPECT_EQ(p.classes, (std::vector<double>{0, 1}));
}

TEST(SklearnClasses, RefusedLabelLists) {
    const json binary = {{"type", "LogisticRegression"}, {"coef", {{1.0}}}, {"intercept", {0}},
                         {"multi_class", "ovr"}, {"loss", "log"}};
    const auto import_with = [&](json classes) {
        return [=] { importers::import_sklearn(doc_with(numeric_inputs(1), "classification", {binary}, classes)); };
    };
    expect_error(import_with(json::array({"no", 1})), ErrorCategory::InvalidModel,
                 {"classes[1]", "a number", "a string", "one type"});
    expect_error(import_with(json::array({true, 1})), ErrorCategory::InvalidModel, {"classes[1]", "a boolean"});
    expect_error(import_with(json::array({"no", nullptr})), ErrorCategory::InvalidModel,
                 {"classes[1]", "number, a string or a boolean"});
    expect_error(import_with(json::array({"no", "no"})), ErrorCategory::InvalidModel, {"\"no\"", "twice"});
    expect_error(import_with(json::array({std::string("n\0o", 3), "yes"})), ErrorCategory::InvalidModel,
                 {"NUL"});
    expect_error(import_with(json::array()), ErrorCategory::InvalidModel, {"classes", "at least one"});
    // A spec whose class_labels do not match its classes is refused by validate.
    spec::Pipeline p = importers::import_sklearn(doc_with(numeric_inputs(1), "classification", {binary},
                                                          json::array({"no", "yes"})));
    p.class_labels.pop_back();
    expect_error([&] { spec::validate(p); }, ErrorCategory::InvalidModel, {"class_labels", "1 labels for 2"});
}

TEST(SklearnErrors, ValidateChecksSteps) {
    spec::Pipeline p = importers::import_sklearn(doc_with(
        numeric_inputs(2), "regression",
        {{{"type", "StandardScaler"}, {"mean", {1.0, 2.0}}, {"scale", {1.0, 1.0}}}, ridge({1.0, 1.0}, 0.0)}));
    spec::Pipeline bad = p;
    bad.steps[0].params["scale"] = {1.0};
    expect_error([&] { spec::validate(bad); }, ErrorCategory::InvalidModel, {"steps[0]", "scale"});
    bad = p;
    bad.steps[0].op = spec::Op::Linear;  // an estimator op is no featurizer
    expect_error([&] { spec::validate(bad); }, ErrorCategory::Unsupported, {"steps[0]", "linear"});
    // An op no code knows is refused where the stored spec is read.
    json stored = json::parse(spec::to_json(p));
    stored["steps"][0]["op"] = "frobnicate";
    expect_error([&] { spec::from_json(stored.dump()); }, ErrorCategory::Unsupported, {"steps[0]", "frobnicate"});
    bad = p;
    bad.text_inputs.push_back({0, {"a"}, false});
    expect_error([&] { spec::validate(bad); }, ErrorCategory::InvalidModel, {"text"});
    bad = p;
    bad.estimator.params["intercept"] = {1.0, 2.0};
    expect_error([&] { spec::validate(bad); }, ErrorCategory::InvalidModel, {"intercept"});
}

// --- naive Bayes, k-means, MLP, kernel SVMs (src/importers/sklearn/) -------------------------

json svm_step(const std::string& type, const std::string& kernel, json dual_coef, json intercept) {
    return {{"type", type}, {"kernel", kernel}, {"gamma", 0.5}, {"coef0", 1.0}, {"degree", 3},
            {"support_vectors", {{1.0, 0.0}, {0.0, 2.0}, {-1.0, 1.0}}}, {"dual_coef", dual_coef},
            {"intercept", intercept}};
}

// Thousands of support vectors: featurize() runs in row chunks (featurize_chunk_rows) so the
// [rows × support vectors] kernel values never exist for the whole batch; chunked and whole
// results must both equal the reference, including a last chunk shorter than the others.
TEST(SklearnModels, WideKernelIsFeaturizedInRowChunks) {
    const int64_t n_sv = 3000;
    EXPECT_EQ(compiler::featurize_chunk_rows(3), 0);
    const int64_t chunk = compiler::featurize_chunk_rows(n_sv);
    ASSERT_GT(chunk, 0);
    std::mt19937 rng(7);
    std::normal_distribution<double> normal(0.0, 1.0);
    json sv = json::array(), coef = json::array();
    for (int64_t i = 0; i < n_sv; ++i) {
        sv.push_back({normal(rng), normal(rng)});
        coef.push_back(normal(rng));
    }
    json step = svm_step("SVR", "rbf", {coef}, {0.25});
    step["support_vectors"] = sv;
    const spec::Pipeline p = importers::import_sklearn(doc_with(numeric_inputs(2), "regression", {step}));
    const int64_t rows = 3 * chunk + 5;
    expect_matches_reference(p, random_rows(rows, 2, 22), "chunked rbf");
    expect_matches_reference(p, random_rows(chunk, 2, 23), "one chunk");
}

TEST(SklearnModels, KernelOpByHand) {
    const std::vector<std::vector<double>> sv = {{1.0, 0.0}, {0.0, 2.0}, {-1.0, 1.0}};
    const std::vector<double> coef = {0.5, -1.0, 2.0};
    const std::vector<float> x = {0.5f, -1.5f, 2.0f, 1.0f, kNaN, 0.0f};
    for (const std::string kernel : {"linear", "rbf", "poly", "sigmoid"}) {
        const spec::Pipeline p = importers::import_sklearn(
            doc_with(numeric_inputs(2), "regression", {svm_step("SVR", kernel, {coef}, {0.25})}));
        ASSERT_EQ(p.steps.size(), 1u);
        EXPECT_STREQ(spec::op_name(p.steps[0].op), "kernel");
        std::vector<double> want;
        for (size_t r = 0; r < 3; ++r) {
            double y = 0.25;
            for (size_t s = 0; s < sv.size(); ++s) {
                double dot = 0.0, d2 = 0.0;
                for (size_t c = 0; c < 2; ++c) {
                    dot += x[r * 2 + c] * sv[s][c];
                    d2 += (x[r * 2 + c] - sv[s][c]) * (x[r * 2 + c] - sv[s][c]);
                }
                const double k = kernel == "linear" ? dot : kernel == "rbf" ? std::exp(-0.5 * d2)
                                 : kernel == "poly" ? std::pow(0.5 * dot + 1.0, 3) : std::tanh(0.5 * dot + 1.0);
                y += coef[s] * k;
            }
            want.push_back(y);
        }
        expect_close(run_compiled(p, x, 3), want, kernel);
        expect_matches_reference(p, random_rows(100, 2, 21), kernel + " reference");
    }
}

TEST(SklearnModels, SvcVotesLikeLibsvm) {
    // 3 classes, one support vector each, linear kernel: K = x · sv. Pairs (0,1), (0,2), (1,2):
    // d01 = c[0][0] K0 + c[0][1] K1 + b0, d02 = c[1][0] K0 + c[0][2] K2 + b1,
    // d12 = c[1][1] K1 + c[1][2] K2 + b2.
    json step = svm_step("SVC", "linear", {{1.0, -1.0, -1.0}, {1.0, 1.0, -1.0}}, {0.0, 0.0, 0.0});
    step["n_support"] = {1, 1, 1};
    const spec::Pipeline p =
        importers::import_sklearn(doc_with(numeric_inputs(2), "classification", {step}, {5, 6, 7}));
    EXPECT_FALSE(p.has_probabilities);
    // x = (1, 0): K = (1, 0, -1): d01 = 1 > 0 → 0; d02 = 1 + 1 = 2 → 0; d12 = 0 + 1 = 1 → 1.
    // Votes (2, 1, 0). x = (0, 0): every d = 0 → the second class of each pair: (0, 1, 2).
    // x = (-1, 0): K = (-1, 0, 1): d01 = -1 → 1; d02 = -1 - 1 → 2; d12 = -1 → 2: (0, 1, 2).
    expect_close(run_compiled(p, {1.0f, 0.0f, 0.0f, 0.0f, -1.0f, 0.0f}, 3), {2, 1, 0, 0, 1, 2, 0, 1, 2}, "votes");
    expect_matches_reference(p, random_rows(100, 2, 22), "svc reference");
    expect_error([&] {
        json bad = step;
        bad["n_support"] = {1, 1, 2};
        importers::import_sklearn(doc_with(numeric_inputs(2), "classification", {bad}, {5, 6, 7}));
    }, ErrorCategory::InvalidModel, {"n_support", "support vectors"});
    expect_error([&] {
        json bad = step;
        bad["kernel"] = "precomputed";
        importers::import_sklearn(doc_with(numeric_inputs(2), "classification", {bad}, {5, 6, 7}));
    }, ErrorCategory::Unsupported, {"SVC", "precomputed"});
}

TEST(SklearnOutputs, SvcDecisionFunctionShapes) {
    // SvcVotesLikeLibsvm's model at x = (1, 0): d01 = 1, d02 = 2, d12 = 1, votes (2, 1, 0).
    // ovr: c = (d01 + d02, -d01 + d12, -d02 - d12) = (3, 0, -3), votes + c / (3 (|c| + 1)).
    json step = svm_step("SVC", "linear", {{1.0, -1.0, -1.0}, {1.0, 1.0, -1.0}}, {0.0, 0.0, 0.0});
    step["n_support"] = {1, 1, 1};
    auto with_shape = [&](const char* shape) {
        json st = step;
        if (shape != nullptr) st["decision_function_shape"] = shape;
        return spec::from_json(spec::to_json(
            importers::import_sklearn(doc_with(numeric_inputs(2), "classification", {st}, {5, 6, 7}))));
    };
    expect_close(run_output(with_shape("ovo"), compiler::Output::DecisionFunction, {1.0f, 0.0f}, 3), {1, 2, 1}, "ovo");
    expect_close(run_output(with_shape("ovr"), compiler::Output::DecisionFunction, {1.0f, 0.0f}, 3),
                 {2.25, 1.0, -0.25}, "ovr");
    expect_error([&] { compiler::compile(with_shape(nullptr), compiler::Strategy::Native, compiler::Output::DecisionFunction); },
                 ErrorCategory::Unsupported, {"SVC", "decision_function_shape"});
    expect_error([&] { with_shape("ovx"); }, ErrorCategory::InvalidModel, {"decision_function_shape"});
}

TEST(SklearnModels, NaiveBayesKMeansMlp) {
    // MultinomialNB: softmax(x · flpᵀ + prior).
    json mnb = {{"type", "MultinomialNB"}, {"feature_log_prob", {{-0.5, -1.0}, {-2.0, -0.1}}},
                {"class_log_prior", {-0.7, -0.69}}};
    spec::Pipeline p = importers::import_sklearn(doc_with(numeric_inputs(2), "classification", {mnb}, {0, 1}));
    const double j0 = -0.5 * 2 - 1.0 * 3 - 0.7, j1 = -2.0 * 2 - 0.1 * 3 - 0.69;
    const double p1 = 1.0 / (1.0 + std::exp(j0 - j1));
    expect_close(run_compiled(p, {2.0f, 3.0f}, 1), {1.0 - p1, p1}, "multinomial");
    // GaussianNB: one feature, two classes.
    json gnb = {{"type", "GaussianNB"}, {"theta", {{0.0}, {2.0}}}, {"var", {{1.0}, {4.0}}}, {"class_prior", {0.25, 0.75}}};
    p = importers::import_sklearn(doc_with(numeric_inputs(1), "classification", {gnb}, {0, 1}));
    const double g0 = std::log(0.25) - 0.5 * std::log(2 * M_PI) - 0.5 * 1.0;
    const double g1 = std::log(0.75) - 0.5 * std::log(2 * M_PI * 4.0) - 0.5 * 1.0 / 4.0;
    const double q1 = 1.0 / (1.0 + std::exp(g0 - g1));
    expect_close(run_compiled(p, {1.0f}, 1), {1.0 - q1, q1}, "gaussian");
    expect_matches_reference(p, random_rows(100, 1, 23), "gaussian reference");
    // BernoulliNB with binarize: a threshold step first.
    json bnb = {{"type", "BernoulliNB"}, {"feature_log_prob", {{-0.5, -1.0}, {-2.0, -0.1}}},
                {"class_log_prior", {-0.7, -0.69}}, {"binarize", 0.5}};
    p = importers::import_sklearn(doc_with(numeric_inputs(2), "classification", {bnb}, {0, 1}));
    EXPECT_STREQ(spec::op_name(p.steps.at(0).op), "threshold");
    expect_matches_reference(p, random_rows(100, 2, 24), "bernoulli reference");
    // KMeans: scores 2 x·c - ‖c‖², no probabilities, classes 0..k-1.
    json km = {{"type", "KMeans"}, {"cluster_centers", {{0.0, 0.0}, {3.0, 3.0}}}};
    p = importers::import_sklearn(doc_with(numeric_inputs(2), "classification", {km}, {0, 1}));
    EXPECT_FALSE(p.has_probabilities);
    expect_close(run_compiled(p, {1.0f, 2.0f}, 1), {0.0, 2 * 9.0 - 18.0}, "kmeans");
    expect_error([&] { importers::import_sklearn(doc_with(numeric_inputs(2), "classification", {km}, {1, 2})); },
                 ErrorCategory::InvalidModel, {"cluster indices"});
    // MLP: relu hidden layer, logistic output.
    json mlp = {{"type", "MLPClassifier"}, {"activation", "relu"}, {"out_activation", "logistic"},
                {"coefs", {{{1.0, -1.0}, {0.5, 2.0}}, {{1.0}, {-1.0}}}}, {"intercepts", {{0.0, 0.5}, {0.25}}}};
    p = importers::import_sklearn(doc_with(numeric_inputs(2), "classification", {mlp}, {0, 1}));
    // x = (1, 1): hidden (1.5, 1.5) → relu → 1.5 - 1.5 + 0.25; x = (1, -1): (0.5, -2.5) → (0.5, 0) → 0.75.
    auto sig = [](double m) { return 1.0 / (1.0 + std::exp(-m)); };
    expect_close(run_compiled(p, {1.0f, 1.0f, 1.0f, -1.0f}, 2),
                 {1 - sig(0.25), sig(0.25), 1 - sig(0.75), sig(0.75)}, "mlp");
    expect_matches_reference(p, random_rows(100, 2, 25), "mlp reference");
    for (const char* act : {"tanh", "logistic", "identity"}) {
        mlp["activation"] = act;
        p = importers::import_sklearn(doc_with(numeric_inputs(2), "classification", {mlp}, {0, 1}));
        expect_matches_reference(p, random_rows(100, 2, 26), act);
    }
    mlp["coefs"][1] = {{1.0, 0.0}, {-1.0, 1.0}};
    mlp["intercepts"][1] = {0.25, 0.0};
    expect_error([&] { importers::import_sklearn(doc_with(numeric_inputs(2), "classification", {mlp}, {0, 1})); },
                 ErrorCategory::Unsupported, {"MLPClassifier", "multilabel"});
    EXPECT_EQ(spec::apply_elementwise("relu", -2.0), 0.0);
    EXPECT_TRUE(std::isnan(spec::apply_elementwise("relu", NAN)));
    EXPECT_DOUBLE_EQ(spec::apply_elementwise("expit", 0.0), 0.5);
}

TEST(SklearnModels, ValidateChecksKernelStep) {
    spec::Pipeline p = importers::import_sklearn(
        doc_with(numeric_inputs(2), "regression", {svm_step("SVR", "rbf", {{1.0, 1.0, 1.0}}, {0.0})}));
    spec::Pipeline bad = p;
    bad.steps[0].params["kernel"] = "cubic";
    expect_error([&] { spec::validate(bad); }, ErrorCategory::InvalidModel, {"steps[0]", "kernel", "cubic"});
    bad = p;
    bad.steps[0].params["support_vectors"] = {{1.0}, {2.0}, {3.0}};
    expect_error([&] { spec::validate(bad); }, ErrorCategory::InvalidModel, {"steps[0]", "support vector"});
    bad = p;
    bad.steps[0].params["degree"] = 2.5;
    expect_error([&] { spec::validate(bad); }, ErrorCategory::InvalidModel, {"degree"});
    EXPECT_EQ(spec::to_json(spec::from_json(spec::to_json(p))), spec::to_json(p));
}

TEST(SklearnModels, GeneralizedLinearAndPls) {
    // Log link: exp(x · coef + b); identity link: the linear predictor.
    json glm = {{"type", "PoissonRegressor"}, {"coef", {0.5, -0.25}}, {"intercept", 0.1}, {"link", "log"}};
    spec::Pipeline p = importers::import_sklearn(doc_with(numeric_inputs(2), "regression", {glm}));
    expect_close(run_compiled(p, {1.0f, 2.0f}, 1), {std::exp(0.5 - 0.5 + 0.1)}, "poisson");
    expect_matches_reference(p, random_rows(100, 2, 31), "poisson reference");
    glm["type"] = "TweedieRegressor";
    glm["link"] = "identity";
    p = importers::import_sklearn(doc_with(numeric_inputs(2), "regression", {glm}));
    expect_close(run_compiled(p, {1.0f, 2.0f}, 1), {0.1}, "tweedie identity");
    glm["link"] = "logit";
    expect_error([&] { importers::import_sklearn(doc_with(numeric_inputs(2), "regression", {glm})); },
                 ErrorCategory::Unsupported, {"TweedieRegressor", "link \"logit\""});
    // PLSRegression: ((x - mean) / std) · coef + b.
    json pls = {{"type", "PLSRegression"}, {"x_mean", {1.0, -2.0}}, {"x_std", {2.0, 0.5}},
                {"coef", {3.0, 1.0}}, {"intercept", 4.0}};
    p = importers::import_sklearn(doc_with(numeric_inputs(2), "regression", {pls}));
    expect_close(run_compiled(p, {5.0f, -1.0f}, 1), {(5.0 - 1.0) / 2.0 * 3.0 + (-1.0 + 2.0) / 0.5 + 4.0}, "pls");
    pls["x_std"] = {2.0, 0.0};
    expect_error([&] { importers::import_sklearn(doc_with(numeric_inputs(2), "regression", {pls})); },
                 ErrorCategory::InvalidModel, {"PLSRegression", "x_std", "must not be 0"});
}

TEST(SklearnModels, GaussianMixtures) {
    // One feature, two components: w_i = log_weight_i + log P_i - ½ log 2π - ½ ((x - μ_i) P_i)².
    const double x = 0.7;
    auto w = [&](double lw, double mu, double prec_chol) {
        const double y = (x - mu) * prec_chol;
        return lw + std::log(prec_chol) - 0.5 * std::log(2 * M_PI) - 0.5 * y * y;
    };
    const double w0 = w(std::log(0.3), 0.0, 1.0), w1 = w(std::log(0.7), 2.0, 0.5);
    const double p1 = 1.0 / (1.0 + std::exp(w0 - w1));
    const json kinds[] = {
        {{"covariance_type", "full"}, {"precisions_cholesky", {{{1.0}}, {{0.5}}}}},
        {{"covariance_type", "diag"}, {"precisions_cholesky", {{1.0}, {0.5}}}},
        {{"covariance_type", "spherical"}, {"precisions_cholesky", {1.0, 0.5}}},
    };
    for (const json& kind : kinds) {
        json gm = {{"type", "GaussianMixture"}, {"means", {{0.0}, {2.0}}}, {"log_weights", {std::log(0.3), std::log(0.7)}}};
        gm.update(kind);
        const std::string what = kind["covariance_type"].get<std::string>();
        const spec::Pipeline p = importers::import_sklearn(doc_with(numeric_inputs(1), "classification", {gm}, {0, 1}));
        expect_close(run_compiled(p, {static_cast<float>(x)}, 1), {1.0 - p1, p1}, what);
        expect_matches_reference(p, random_rows(50, 1, 32), what + " reference");
    }
    // tied: one factor for both components.
    json tied = {{"type", "BayesianGaussianMixture"}, {"means", {{0.0}, {2.0}}}, {"log_weights", {std::log(0.3), std::log(0.7)}},
                 {"covariance_type", "tied"}, {"precisions_cholesky", {{0.5}}}};
    const double t0 = w(std::log(0.3), 0.0, 0.5), t1 = w(std::log(0.7), 2.0, 0.5);
    const double q1 = 1.0 / (1.0 + std::exp(t0 - t1));
    spec::Pipeline p = importers::import_sklearn(doc_with(numeric_inputs(1), "classification", {tied}, {0, 1}));
    expect_close(run_compiled(p, {static_cast<float>(x)}, 1), {1.0 - q1, q1}, "tied");
    tied["covariance_type"] = "banded";
    expect_error([&] { importers::import_sklearn(doc_with(numeric_inputs(1), "classification", {tied}, {0, 1})); },
                 ErrorCategory::Unsupported, {"BayesianGaussianMixture", "covariance_type \"banded\""});
    tied["covariance_type"] = "tied";
    tied["precisions_cholesky"] = {{-0.5}};
    expect_error([&] { importers::import_sklearn(doc_with(numeric_inputs(1), "classification", {tied}, {0, 1})); },
                 ErrorCategory::InvalidModel, {"precisions_cholesky", "positive diagonal"});
}

TEST(SklearnModels, CalibratedClassifier) {
    // Binary, two members (sigmoid): the mean of expit(-(a d + b)) of each member's d.
    json member0 = {{"coef", {{1.0, -1.0}}}, {"intercept", {0.5}}, {"calibrators", {{{"a", -2.0}, {"b", 0.25}}}}};
    json member1 = {{"coef", {{0.5, 0.5}}}, {"intercept", {0.0}}, {"calibrators", {{{"a", -1.0}, {"b", -0.5}}}}};
    json cal = {{"type", "CalibratedClassifierCV"}, {"method", "sigmoid"}, {"members", {member0, member1}}};
    spec::Pipeline p = importers::import_sklearn(doc_with(numeric_inputs(2), "classification", {cal}, {0, 1}));
    auto expit = [](double m) { return 1.0 / (1.0 + std::exp(-m)); };
    const double d0 = 2.0 - 1.0 + 0.5, d1 = 1.0 + 0.5;
    const double pm = 0.5 * (expit(-(-2.0 * d0 + 0.25)) + expit(-(-1.0 * d1 - 0.5)));
    expect_close(run_compiled(p, {2.0f, 1.0f}, 1), {1.0 - pm, pm}, "sigmoid");
    expect_matches_reference(p, random_rows(50, 2, 33), "sigmoid reference");
    // Isotonic, three classes, one member: clipped interpolation, then p / Σ p (uniform at Σ p = 0).
    json iso = {{"x", {0.0, 1.0, 3.0}}, {"y", {0.0, 0.5, 1.0}}};
    json member = {{"coef", {{1.0}, {1.0}, {0.0}}}, {"intercept", {0.0, 1.0, -5.0}}, {"calibrators", {iso, iso, iso}}};
    cal = {{"type", "CalibratedClassifierCV"}, {"method", "isotonic"}, {"members", {member}}};
    p = importers::import_sklearn(doc_with(numeric_inputs(1), "classification", {cal}, {0, 1, 2}));
    // x = 0.5: d = (0.5, 1.5, -5) → (0.25, 0.625, 0); x = 2: d = (2, 3, -5) → (0.75, 1, 0);
    // x = -2: every p is 0 → uniform; x = 9: d = (9, 10, -5) → clipped (1, 1, 0).
    expect_close(run_compiled(p, {0.5f, 2.0f, -2.0f, 9.0f}, 4),
                 {0.25 / 0.875, 0.625 / 0.875, 0.0, 0.75 / 1.75, 1.0 / 1.75, 0.0, 1.0 / 3, 1.0 / 3, 1.0 / 3,
                  0.5, 0.5, 0.0},
                 "isotonic");
    expect_matches_reference(p, random_rows(50, 1, 34), "isotonic reference");
    cal["method"] = "beta";
    expect_error([&] { importers::import_sklearn(doc_with(numeric_inputs(1), "classification", {cal}, {0, 1, 2})); },
                 ErrorCategory::Unsupported, {"CalibratedClassifierCV", "method \"beta\""});
    cal["method"] = "isotonic";
    cal["members"][0]["calibrators"] = {iso};
    expect_error([&] { importers::import_sklearn(doc_with(numeric_inputs(1), "classification", {cal}, {0, 1, 2})); },
                 ErrorCategory::InvalidModel, {"calibrators", "1 calibrators for 3"});
}

}  // namespace
}  // namespace pg_predict
