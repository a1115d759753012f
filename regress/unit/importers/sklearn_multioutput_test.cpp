// Multi-output regressors on the C++ side: a 2-D coef_, multi-output trees, MultiOutputRegressor
// and RegressorChain documents imported, compiled with every tree strategy and run, against
// values worked out by hand and against reference_predict (tree members among others and in
// chains as op model steps); the spec keeps `outputs` through JSON; inconsistent documents are
// refused naming the estimator.
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
#include "pg_predict/spec/pipeline.hpp"
#include "program_ids.hpp"

namespace pg_predict {
namespace {

using nlohmann::json;

std::vector<float> run_compiled(const spec::Pipeline& p, const std::vector<float>& x, compiler::Strategy s) {
    const int64_t rows = static_cast<int64_t>(x.size()) / p.input_width();
    const std::string bytes = compiler::compile(p, s);
    runtime::Program* prog = runtime::load_program(testing::next_program_id(), bytes.data(), bytes.size());
    EXPECT_EQ(runtime::program_output_width(prog), p.outputs);
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
    for (size_t i = 0; i < want.size(); ++i)
        EXPECT_NEAR(got[i], want[i], 1e-5 * std::max(1.0f, std::fabs(want[i]))) << what << " [" << i << "]";
}

// Every strategy that applies (trees: all four; other models compile one way) and the reference.
void expect_all(const spec::Pipeline& p, const std::vector<float>& x, const std::vector<float>& want,
                const std::string& what) {
    expect_close(reference(p, x), want, what + " reference");
    const bool trees = p.estimator.op == spec::Op::None;
    for (compiler::Strategy s : {compiler::Strategy::Native, compiler::Strategy::Gemm,
                                 compiler::Strategy::TreeTraversal, compiler::Strategy::PerfectTreeTraversal}) {
        expect_close(run_compiled(p, x, s), want, what + " " + compiler::strategy_name(s));
        if (!trees) break;
    }
}

json doc(int inputs, int outputs, json step) {
    json in = json::array();
    for (int i = 0; i < inputs; ++i) in.push_back({{"name", "x" + std::to_string(i)}, {"type", "numeric"}});
    return {{"format", "sklearn"}, {"version", 1}, {"inputs", in}, {"task", "regression"},
            {"outputs", outputs}, {"steps", {step}}};
}

// A tree on feature f: x_f <= t gives `lo`, else `hi` (one value per output).
json stump(int f, double t, const std::vector<double>& lo, const std::vector<double>& hi) {
    json vl = json::array(), vh = json::array(), vr = json::array();
    for (size_t o = 0; o < lo.size(); ++o) {
        vl.push_back({lo[o]});
        vh.push_back({hi[o]});
        vr.push_back({0.0});
    }
    return {{"children_left", {1, -1, -1}}, {"children_right", {2, -1, -1}}, {"feature", {f, -2, -2}},
            {"threshold", {t, -2.0, -2.0}}, {"value", {vr, vl, vh}}};
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

const std::vector<float> kRows = {0.0f, 0.0f, 1.0f, 2.0f, -2.0f, 5.0f};  // 3 rows × 2

TEST(SklearnMultiOutput, LinearTwoTargetsByHand) {
    // y0 = 2 a + b + 1, y1 = -a + 3
    const spec::Pipeline p = importers::import_sklearn(doc(2, 2, {{"type", "Ridge"},
        {"coef", {{2.0, 1.0}, {-1.0, 0.0}}}, {"intercept", {1.0, 3.0}}, {"n_outputs", 2}}));
    EXPECT_EQ(p.outputs, 2);
    EXPECT_EQ(p.output_width(), 2);
    expect_all(p, kRows, {1, 3, 5, 2, 2, 5}, "ridge");
    // The spec's JSON keeps the outputs (the catalog recompiles from it).
    EXPECT_EQ(spec::from_json(spec::to_json(p)).outputs, 2);
}

TEST(SklearnMultiOutput, ForestOfTwoTargetsByHand) {
    // Two trees averaged: (a <= 0.5: (1, 10) else (3, 30)) and (b <= 1: (5, 50) else (7, 70)).
    const spec::Pipeline p = importers::import_sklearn(doc(2, 2, {{"type", "RandomForestRegressor"},
        {"n_classes", 1}, {"n_outputs", 2},
        {"trees", {stump(0, 0.5, {1, 10}, {3, 30}), stump(1, 1.0, {5, 50}, {7, 70})}}}));
    EXPECT_EQ(p.model.num_groups, 2);
    // rows (0, 0): (3, 30); (1, 2): (5, 50); (-2, 5): (4, 40)
    expect_all(p, kRows, {3, 30, 5, 50, 4, 40}, "forest");
}

TEST(SklearnMultiOutput, WrapperOfTreesByHand) {
    const spec::Pipeline p = importers::import_sklearn(doc(2, 2, {{"type", "MultiOutputRegressor"}, {"estimators", {
        {{"type", "DecisionTreeRegressor"}, {"n_classes", 1}, {"n_outputs", 1}, {"trees", {stump(1, 1.0, {5}, {7})}}},
        {{"type", "GradientBoostingRegressor"}, {"n_classes", 1}, {"n_outputs", 1}, {"init", {100.0}},
         {"learning_rate", 0.5}, {"loss", "squared_error"}, {"trees", {{stump(0, 0.5, {2}, {4})}}}}}}}));
    // output 0: b <= 1 → 5 else 7; output 1: 100 + 0.5 (a <= 0.5 → 2 else 4)
    expect_all(p, kRows, {5, 101, 7, 102, 7, 101}, "wrapper of trees");
}

TEST(SklearnMultiOutput, WrapperOfLinearModelsByHand) {
    // output 0 = a - b, output 1 = exp(0.5 a) (a Poisson GLM, log link)
    const spec::Pipeline p = importers::import_sklearn(doc(2, 2, {{"type", "MultiOutputRegressor"}, {"estimators", {
        {{"type", "LinearRegression"}, {"coef", {1.0, -1.0}}, {"intercept", 0.0}},
        {{"type", "PoissonRegressor"}, {"coef", {0.5, 0.0}}, {"intercept", 0.0}, {"link", "log"}}}}}));
    expect_all(p, kRows, {0, 1, -1, std::exp(0.5f), -7, std::exp(-1.0f)}, "wrapper of linear models");
}

TEST(SklearnMultiOutput, ChainByHand) {
    // order [1, 0]: member 0 predicts output 1 = a + 1; member 1 reads [a, b, y1] and predicts
    // output 0 = 10 a + 100 y1 + b.
    const spec::Pipeline p = importers::import_sklearn(doc(2, 2, {{"type", "RegressorChain"}, {"order", {1, 0}},
        {"estimators", {{{"type", "Ridge"}, {"coef", {1.0, 0.0}}, {"intercept", 1.0}},
                        {{"type", "LinearRegression"}, {"coef", {10.0, 1.0, 100.0}}, {"intercept", 0.0}}}}}));
    expect_all(p, kRows, {100, 1, 212, 2, -115, -1}, "chain");
}

TEST(SklearnMultiOutput, RandomForestAgainstReference) {
    // Random deep trees with three outputs: every strategy agrees with the reference evaluator.
    std::mt19937 rng(13);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    const int outputs = 3, features = 4;
    json trees = json::array();
    for (int t = 0; t < 6; ++t) {
        // A full tree of depth 3: nodes 0..6 split, 7..14 leaves, in breadth-first order.
        json left = json::array(), right = json::array(), feature = json::array(), threshold = json::array(),
             value = json::array();
        for (int n = 0; n < 15; ++n) {
            const bool leaf = n >= 7;
            left.push_back(leaf ? -1 : 2 * n + 1);
            right.push_back(leaf ? -1 : 2 * n + 2);
            feature.push_back(leaf ? -2 : static_cast<int>(rng() % features));
            threshold.push_back(leaf ? -2.0 : u(rng));
            json v = json::array();
            for (int o = 0; o < outputs; ++o) v.push_back({leaf ? 10 * u(rng) : 0.0});
            value.push_back(v);
        }
        trees.push_back({{"children_left", left}, {"children_right", right}, {"feature", feature},
                         {"threshold", threshold}, {"value", value}});
    }
    const spec::Pipeline p = importers::import_sklearn(doc(features, outputs, {{"type", "ExtraTreesRegressor"},
        {"n_classes", 1}, {"n_outputs", outputs}, {"trees", trees}}));
    std::vector<float> x(200 * features);
    for (float& v : x) v = static_cast<float>(u(rng));
    const std::vector<float> want = reference(p, x);
    for (compiler::Strategy s : {compiler::Strategy::Native, compiler::Strategy::Gemm,
                                 compiler::Strategy::TreeTraversal, compiler::Strategy::PerfectTreeTraversal})
        expect_close(run_compiled(p, x, s), want, compiler::strategy_name(s));
}

json classifier_doc(json classes, json step) {
    return {{"format", "sklearn"}, {"version", 1}, {"inputs", {{{"name", "a"}, {"type", "numeric"}}}},
            {"task", "classification"}, {"outputs", classes.size()}, {"classes", classes}, {"steps", {step}}};
}

// The program gives a decision value per output: label classes[2k + 1] where it is > 0 (what
// PostgreSQL's side returns); NaN stays NaN (NULL in, NULL out: never the first label).
void expect_labels(const spec::Pipeline& p, const std::vector<float>& got, const std::vector<float>& want) {
    ASSERT_EQ(got.size(), want.size());
    const size_t k = static_cast<size_t>(p.outputs);
    for (size_t i = 0; i < want.size(); ++i) {
        if (std::isnan(want[i])) {
            EXPECT_TRUE(std::isnan(got[i])) << i;
            continue;
        }
        EXPECT_EQ(p.classes[2 * (i % k) + (got[i] > 0.0f ? 1 : 0)], want[i]) << i << ": " << got[i];
    }
}

TEST(SklearnMultiOutput, ClassifierLabelsByHand) {
    constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
    // output 0 in {0, 1}: 1 where a > 0 (logistic); output 1 in {3, 7}: 7 where -a > 0 (LinearSVC);
    // output 2 in {-1, 1}: nearest neighbours of points 0 (-1) and 10 (1), k = 1.
    const spec::Pipeline p = importers::import_sklearn(classifier_doc({{0, 1}, {3, 7}, {-1, 1}},
        {{"type", "MultiOutputClassifier"}, {"estimators", {
            {{"type", "LogisticRegression"}, {"classes", {0, 1}}, {"coef", {{1.0}}}, {"intercept", {0.0}}},
            {{"type", "LinearSVC"}, {"classes", {3, 7}}, {"coef", {{-1.0}}}, {"intercept", {0.0}}},
            {{"type", "KNeighborsClassifier"}, {"classes", {-1, 1}}, {"n_neighbors", 1}, {"p", 2},
             {"weights", "uniform"}, {"fit_X", {{0.0}, {10.0}}}, {"y", {0, 1}}}}}}));
    EXPECT_EQ(p.task, spec::Task::Classification);
    EXPECT_EQ(p.output_width(), 3);
    EXPECT_EQ(p.classes, (std::vector<double>{0, 1, 3, 7, -1, 1}));
    const std::vector<float> x = {2.0f, 0.0f, -3.0f, 6.0f, kNaN};
    const std::vector<float> want = {1, 3, -1, 0, 3, -1, 0, 7, -1, 1, 3, 1, kNaN, kNaN, kNaN};
    for (const std::vector<float>& got : {reference(p, x), run_compiled(p, x, compiler::Strategy::Native)})
        expect_labels(p, got, want);
}

TEST(SklearnMultiOutput, ClassifierChainByHand) {
    // order [1, 0]: output 1 in {3, 7} is 7 where a > 0.5; output 0 reads [a, output 1]: 1 where
    // output 1 > 5.
    const spec::Pipeline p = importers::import_sklearn(classifier_doc({{0, 1}, {3, 7}},
        {{"type", "ClassifierChain"}, {"order", {1, 0}}, {"estimators", {
            {{"type", "LogisticRegression"}, {"classes", {3, 7}}, {"coef", {{1.0}}}, {"intercept", {-0.5}}},
            {{"type", "LogisticRegression"}, {"classes", {0, 1}}, {"coef", {{0.0, 1.0}}}, {"intercept", {-5.0}}}}}}));
    const std::vector<float> x = {0.0f, 1.0f, -2.0f}, want = {0, 3, 1, 7, 0, 3};
    expect_labels(p, reference(p, x), want);
    expect_labels(p, run_compiled(p, x, compiler::Strategy::Native), want);
}

// Tree members of the classifier wrappers: model steps whose d is P(c1) - P(c0).
TEST(SklearnMultiOutput, TreeMembersOfClassifierWrappersByHand) {
    // A forest of one tree on column `f`: x_f <= t gives counts `lo`, else `hi`.
    auto forest = [](json classes, int f, double t, std::vector<double> lo, std::vector<double> hi) {
        return json{{"type", "RandomForestClassifier"}, {"classes", classes}, {"n_classes", 2},
                    {"trees", {{{"children_left", {1, -1, -1}}, {"children_right", {2, -1, -1}},
                                {"feature", {f, -2, -2}}, {"threshold", {t, -2.0, -2.0}},
                                {"value", json::array({json::array({json::array({1.0, 1.0})}),
                                                       json::array({json(lo)}), json::array({json(hi)})})}}}}};
    };
    // MultiOutputClassifier: output 0 in {0, 1} is 1 where a > 0 (logistic); output 1 in {3, 7}
    // is 7 where a > 0.5 (the forest: counts (2, 1) at or below, (1, 3) above).
    const spec::Pipeline p = importers::import_sklearn(classifier_doc({{0, 1}, {3, 7}}, {{"type", "MultiOutputClassifier"},
        {"estimators", {{{"type", "LogisticRegression"}, {"classes", {0, 1}}, {"coef", {{1.0}}}, {"intercept", {0.0}}},
                        forest({3, 7}, 0, 0.5, {2.0, 1.0}, {1.0, 3.0})}}}));
    const std::vector<float> x = {-1.0f, 0.25f, 2.0f};
    const std::vector<float> want = {0, 3, 1, 3, 1, 7};
    expect_labels(p, reference(p, x), want);
    expect_labels(p, run_compiled(p, x, compiler::Strategy::Native), want);
    // ClassifierChain, order [1, 0]: output 1 in {3, 7} is 7 where a > 0.5 (a forest); output 0
    // reads [a, output 1] and is 1 where output 1 > 5 (a forest on column 1), i.e. where a > 0.5.
    const spec::Pipeline chain = importers::import_sklearn(classifier_doc({{0, 1}, {3, 7}}, {{"type", "ClassifierChain"},
        {"order", {1, 0}}, {"estimators", {forest({3, 7}, 0, 0.5, {2.0, 1.0}, {1.0, 3.0}),
                                           forest({0, 1}, 1, 5.0, {4.0, 0.0}, {0.0, 4.0})}}}));
    const std::vector<float> chain_want = {0, 3, 0, 3, 1, 7};
    expect_labels(chain, reference(chain, x), chain_want);
    expect_labels(chain, run_compiled(chain, x, compiler::Strategy::Native), chain_want);
}

TEST(SklearnMultiOutput, TreeClassifierOfBinaryOutputsByHand) {
    // Two trees, two outputs of labels {0, 1} and {3, 7}, counts [nodes × outputs × 2]:
    // tree 1 on a (a <= 0.5: output 0 counts (3, 1), output 1 (0, 2); else (1, 3), (2, 2));
    // tree 2 a leaf: (1, 1), (4, 0). Averaged P(second label): a <= 0.5: (0.375, 0.5) → labels
    // (0, 3) (a tie predicts the first); else (0.625, 0.25) → (1, 3).
    const json tree1 = {{"children_left", {1, -1, -1}}, {"children_right", {2, -1, -1}}, {"feature", {0, -2, -2}},
                        {"threshold", {0.5, -2.0, -2.0}},
                        {"value", {{{4.0, 4.0}, {2.0, 4.0}}, {{3.0, 1.0}, {0.0, 2.0}}, {{1.0, 3.0}, {2.0, 2.0}}}}};
    const json tree2 = {{"children_left", {-1}}, {"children_right", {-1}}, {"feature", {-2}}, {"threshold", {-2.0}},
                        {"value", {{{1.0, 1.0}, {4.0, 0.0}}}}};
    const spec::Pipeline p = importers::import_sklearn(classifier_doc({{0, 1}, {3, 7}},
        {{"type", "RandomForestClassifier"}, {"n_classes", {2, 2}}, {"n_outputs", 2}, {"trees", {tree1, tree2}}}));
    const std::vector<float> x = {0.0f, 1.0f};
    const std::vector<float> want = {0, 3, 1, 3};
    expect_labels(p, reference(p, x), want);
    for (compiler::Strategy s : {compiler::Strategy::Native, compiler::Strategy::Gemm,
                                 compiler::Strategy::TreeTraversal, compiler::Strategy::PerfectTreeTraversal})
        expect_labels(p, run_compiled(p, x, s), want);
}

// A tree member among others, and a chain whose first member is a tree: the tree is an op model
// step whose prediction the later members read.
TEST(SklearnMultiOutput, TreeMembersAsModelStepsByHand) {
    const json tree_member = {{"type", "DecisionTreeRegressor"}, {"n_classes", 1}, {"n_outputs", 1},
                              {"trees", {stump(0, 0.5, {1}, {2})}}};
    // MultiOutputRegressor: (a <= 0.5 ? 1 : 2, a + b)
    const spec::Pipeline mixed = importers::import_sklearn(doc(2, 2, {{"type", "MultiOutputRegressor"},
        {"estimators", {tree_member, {{"type", "Ridge"}, {"coef", {1.0, 1.0}}, {"intercept", 0.0}}}}}));
    // rows (0, 0), (1, 2), (-2, 5)
    expect_all(mixed, kRows, {1, 0, 2, 3, 1, 3}, "tree and ridge");
    // RegressorChain, order [1, 0]: member 0 (the tree) predicts output 1, member 1 reads
    // (a, b, tree) and predicts output 0 = a + b + 10 tree.
    const spec::Pipeline chain = importers::import_sklearn(doc(2, 2, {{"type", "RegressorChain"}, {"order", {1, 0}},
        {"estimators", {tree_member, {{"type", "Ridge"}, {"coef", {1.0, 1.0, 10.0}}, {"intercept", 0.0}}}}}));
    expect_all(chain, kRows, {10, 1, 23, 2, 13, 1}, "chain tree then ridge");
    // A chain of two trees: the second splits on the first's prediction (1 or 2) at 1.5.
    const json second = {{"type", "DecisionTreeRegressor"}, {"n_classes", 1}, {"n_outputs", 1},
                         {"trees", {stump(2, 1.5, {-5}, {5})}}};
    const spec::Pipeline trees = importers::import_sklearn(doc(2, 2, {{"type", "RegressorChain"}, {"order", {0, 1}},
                                                                      {"estimators", {tree_member, second}}}));
    expect_all(trees, kRows, {1, -5, 2, 5, 1, -5}, "chain of trees");
}

TEST(SklearnMultiOutput, Refusals) {
    const json ridge_member = {{"type", "Ridge"}, {"coef", {1.0, 1.0}}, {"intercept", 0.0}};
    // The document's outputs and the model's disagree.
    expect_error([&] { importers::import_sklearn(doc(2, 3, {{"type", "Ridge"}, {"coef", {{1.0, 0.0}, {0.0, 1.0}}},
                                                            {"intercept", {0.0, 0.0}}})); },
                 ErrorCategory::InvalidModel, {"coef", "outputs is 3"});
    expect_error([&] { importers::import_sklearn(doc(2, 2, {{"type", "GradientBoostingRegressor"}, {"n_classes", 1},
                                                            {"init", {0.0}}, {"learning_rate", 0.1},
                                                            {"loss", "squared_error"},
                                                            {"trees", {{stump(0, 0.5, {1}, {2})}}}})); },
                 ErrorCategory::Unsupported, {"GradientBoostingRegressor", "predicts 1 value(s) per row"});
    expect_error([&] { importers::import_sklearn(doc(2, 3, {{"type", "RegressorChain"}, {"order", {0, 1, 1}},
                                                            {"estimators", {ridge_member, ridge_member, ridge_member}}})); },
                 ErrorCategory::InvalidModel, {"order", "repeats output 1"});
    expect_error([&] { importers::import_sklearn(doc(2, 3, {{"type", "MultiOutputRegressor"},
                                                            {"estimators", {ridge_member, ridge_member}}})); },
                 ErrorCategory::InvalidModel, {"estimators", "2 members", "outputs is 3"});
    // Classifiers: a single-output classifier in a multi-output document, members of other
    // labels than the document's, an output of three labels.
    const json logistic = {{"type", "LogisticRegression"}, {"classes", {0, 1}}, {"coef", {{1.0}}}, {"intercept", {0.0}}};
    expect_error([&] { importers::import_sklearn(classifier_doc({{0, 1}, {0, 1}}, logistic)); },
                 ErrorCategory::Unsupported, {"LogisticRegression", "single-output classifier"});
    expect_error([&] { importers::import_sklearn(classifier_doc({{0, 1}, {3, 7}}, {{"type", "MultiOutputClassifier"},
                                                                                 {"estimators", {logistic, logistic}}})); },
                 ErrorCategory::InvalidModel, {"classes", "differ from the document's"});
    const json forest = {{"type", "RandomForestClassifier"}, {"classes", {0, 1}}, {"n_classes", 2},
                         {"trees", {{{"children_left", {1, -1, -1}}, {"children_right", {2, -1, -1}},
                                     {"feature", {0, -2, -2}}, {"threshold", {0.5, -2.0, -2.0}},
                                     {"value", {{{1.0, 1.0}}, {{1.0, 0.0}}, {{0.0, 1.0}}}}}}}};
    expect_error([&] { importers::import_sklearn(classifier_doc({{0, 1}, {0, 1}}, {{"type", "RandomForestClassifier"},
                                                                                {"n_classes", {2, 3}}, {"trees", {forest["trees"][0]}}})); },
                 ErrorCategory::Unsupported, {"RandomForestClassifier", "an output of 3 classes"});
    expect_error([&] { importers::import_sklearn(classifier_doc({{0, 1}, {0, 1, 2}}, {{"type", "MultiOutputClassifier"},
                                                                                    {"estimators", {logistic, logistic}}})); },
                 ErrorCategory::Unsupported, {"an output of 3 labels"});
}

}  // namespace
}  // namespace pg_predict
