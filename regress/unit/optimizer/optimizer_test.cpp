// The optimizer's passes on hand-made pipelines: each optimized pipeline, evaluated by
// reference_predict and by its compiled program with its unused inputs zeroed (as the
// PredictBatch node fills them), must give what the un-optimized pipeline gives, NaN included.
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pg_predict/compiler/compile.hpp"
#include "pg_predict/optimizer/optimize.hpp"
#include "pg_predict/optimizer/passes.hpp"
#include "pg_predict/optimizer/unused_inputs.hpp"
#include "pg_predict/runtime/api.hpp"
#include "pg_predict/spec/steps.hpp"
#include "tree_gen.hpp"

namespace pg_predict {
namespace {

using nlohmann::json;
using spec::Step;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

spec::Step step(const std::string& op, json params) {
    Step s;
    s.op = spec::op_from_name(op).value();
    s.params = std::move(params);
    return s;
}

Step concat(std::vector<Step::Part> parts) {
    Step s = step("concat", json::object());
    s.parts = std::move(parts);
    return s;
}

// A linear model over the steps' output: binary logistic when coef has one row, else softmax.
spec::Pipeline linear_pipeline(int inputs, std::vector<Step> steps, std::vector<std::vector<double>> coef,
                               std::vector<double> intercept) {
    spec::Pipeline p;
    p.source_format = "test";
    p.task = spec::Task::Classification;
    for (int i = 0; i < inputs; ++i) p.features.push_back("f" + std::to_string(i));
    p.steps = std::move(steps);
    const size_t k = coef.size();
    p.transform = k == 1 ? spec::PostTransform::Logistic : spec::PostTransform::Softmax;
    for (size_t c = 0; c < (k == 1 ? 2 : k); ++c) p.classes.push_back(static_cast<double>(c));
    p.model.num_features = static_cast<int32_t>(coef[0].size());
    p.model.num_groups = static_cast<int32_t>(k);
    p.model.base_margin.assign(k, 0.0f);
    p.estimator = step("linear", json::object());
    json rows = json::array();
    for (const auto& r : coef) rows.push_back(spec::numbers_to_json(r));
    p.estimator.params = {{"coef", rows}, {"intercept", spec::numbers_to_json(intercept)}};
    spec::validate(p);
    return p;
}

// rows × width values in [-2, 2] (some small integers, so categories match), NaN with
// probability 0.1 in the columns `nan_columns` marks.
std::vector<float> random_rows(int64_t rows, int width, const std::vector<bool>& nan_columns, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-2.0f, 2.0f), p(0.0f, 1.0f);
    std::uniform_int_distribution<int> small(0, 3);
    std::vector<float> x(static_cast<size_t>(rows * width));
    for (int64_t r = 0; r < rows; ++r)
        for (int c = 0; c < width; ++c) {
            float v = p(rng) < 0.3f ? static_cast<float>(small(rng)) : u(rng);
            if (nan_columns[c] && p(rng) < 0.1f) v = std::numeric_limits<float>::quiet_NaN();
            x[r * width + c] = v;
        }
    return x;
}

std::vector<float> reference(const spec::Pipeline& p, const std::vector<float>& x, int64_t rows) {
    std::vector<float> out(static_cast<size_t>(rows * p.output_width()));
    spec::reference_predict(p, x.data(), rows, out.data());
    return out;
}

std::vector<float> compiled(const spec::Pipeline& p, const std::vector<float>& x, int64_t rows) {
    static int64_t id = int64_t(7) << 40;
    const std::string bytes = compiler::compile(p, compiler::choose_strategy(p));
    runtime::Program* prog = runtime::load_program(++id, bytes.data(), bytes.size());
    std::vector<float> out(static_cast<size_t>(rows * p.output_width()));
    runtime::run_program(prog, x.data(), rows, p.input_width(), out.data());
    runtime::release_program(prog);
    return out;
}

void expect_same(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < want.size(); ++i) {
        if (std::isnan(want[i])) {
            EXPECT_TRUE(std::isnan(got[i])) << what << " [" << i << "] got " << got[i];
            continue;
        }
        EXPECT_NEAR(got[i], want[i], 1e-5 * std::max(1.0f, std::fabs(want[i]))) << what << " [" << i << "]";
    }
}

// Optimizes p and checks the result against p on random rows (NaN in `nan_columns`, all
// columns when empty). Returns the optimized pipeline and its report.
spec::Pipeline check_optimized(const spec::Pipeline& p, optimizer::Report* report = nullptr,
                               std::vector<bool> nan_columns = {}) {
    const int w = p.input_width();
    if (nan_columns.empty()) nan_columns.assign(w, true);
    const spec::Pipeline q = optimizer::optimize(p, report);
    EXPECT_EQ(q.input_width(), w);
    const int64_t rows = 400;
    const std::vector<float> x = random_rows(rows, w, nan_columns, 11);
    std::vector<float> zeroed = x;  // the node fills the inputs it does not read with 0
    for (int32_t f : optimizer::unused_inputs(q))
        for (int64_t r = 0; r < rows; ++r) zeroed[r * w + f] = 0.0f;
    const std::vector<float> want = reference(p, x, rows);
    expect_same(reference(q, zeroed, rows), want, "reference of the optimized pipeline");
    // Each pass alone, on the original, keeps the outputs too.
    using Pass = spec::Pipeline (*)(const spec::Pipeline&, std::vector<std::string>&);
    for (Pass pass : {Pass(optimizer::remove_unused_columns), Pass(optimizer::simplify_concat), Pass(optimizer::fuse_linear)}) {
        std::vector<std::string> changes;
        const spec::Pipeline one = pass(p, changes);
        spec::validate(one);
        std::vector<float> z = x;
        for (int32_t f : optimizer::unused_inputs(one))
            for (int64_t r = 0; r < rows; ++r) z[r * w + f] = 0.0f;
        expect_same(reference(one, z, rows), want, "one pass: " + (changes.empty() ? std::string("-") : changes[0]));
    }
    expect_same(compiled(q, zeroed, rows), want, "compiled optimized pipeline");
    // Deterministic, and a fixpoint: optimizing again changes nothing.
    EXPECT_EQ(spec::to_json(optimizer::optimize(p)), spec::to_json(q));
    EXPECT_EQ(spec::to_json(optimizer::optimize(q)), spec::to_json(q));
    return q;
}

std::vector<double> iota(size_t n, double start, double step) {
    std::vector<double> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = start + step * static_cast<double>(i);
    return v;
}

TEST(Optimizer, SelectorAfterScalerReadsOnlyTheSelectedColumns) {
    // StandardScaler over 50 columns, SelectKBest(k=5), LogisticRegression.
    Step scaler = step("affine", {{"scale", iota(50, 0.5, 0.01)}, {"offset", iota(50, -1.0, 0.03)}});
    const std::vector<int32_t> kept = {3, 11, 12, 30, 49};
    Step select = concat({{kept, {}}});
    spec::Pipeline p = linear_pipeline(50, {scaler, select}, {{0.5, -1.25, 2.0, 0.75, -0.5}}, {0.1});
    optimizer::Report report;
    const spec::Pipeline q = check_optimized(p, &report);
    // Left: a selection of the 5 inputs and one linear model (the scaler is folded into it).
    ASSERT_EQ(q.steps.size(), 1u);
    EXPECT_STREQ(spec::op_name(q.steps[0].op), "concat");
    ASSERT_EQ(q.steps[0].parts.size(), 1u);
    EXPECT_EQ(q.steps[0].parts[0].columns, kept);
    EXPECT_TRUE(q.steps[0].parts[0].steps.empty());
    EXPECT_EQ(q.model.num_features, 5);
    const std::vector<int32_t> unused = optimizer::unused_inputs(q);
    EXPECT_EQ(unused.size(), 45u);
    for (int32_t k : kept) EXPECT_EQ(std::count(unused.begin(), unused.end(), k), 0);
    ASSERT_EQ(report.passes.size(), 4u);
    EXPECT_EQ(report.passes[0].pass, "prune_columns");
    EXPECT_FALSE(report.passes[0].changes.empty());
    EXPECT_FALSE(report.passes[2].changes.empty());  // fuse_linear
}

TEST(Optimizer, ImputeBlocksFusionAndAffineFoldsIntoTheModel) {
    Step impute = step("impute", {{"statistics", {0.5, kNaN, -1.0}}});
    Step scaler = step("affine", {{"scale", {2.0, 0.0, -0.5}}, {"offset", {1.0, 3.0, 0.25}}});
    spec::Pipeline p = linear_pipeline(3, {impute, scaler}, {{1.0, 2.0, -3.0}, {0.5, -1.0, 0.0}, {0.0, 0.0, 1.0}},
                                       {0.0, 0.5, -0.5});
    // A zero scale under nonzero weights blocks the fusion: x * 0 + 3 passes NaN on.
    const spec::Pipeline q = check_optimized(p);
    ASSERT_EQ(q.steps.size(), 2u);
    scaler.params["scale"][1] = 4.0;
    p = linear_pipeline(3, {impute, scaler}, {{1.0, 2.0, -3.0}, {0.5, -1.0, 0.0}, {0.0, 0.0, 1.0}}, {0.0, 0.5, -0.5});
    const spec::Pipeline q2 = check_optimized(p);
    ASSERT_EQ(q2.steps.size(), 1u);
    EXPECT_STREQ(spec::op_name(q2.steps[0].op), "impute");  // NaN must still be imputed before the product
}

TEST(Optimizer, ChainsOfAffineAndProjectCollapse) {
    Step a1 = step("affine", {{"scale", {2.0, -1.0, 0.5, 3.0}}, {"offset", {1.0, 0.0, -2.0, 0.5}}});
    Step a2 = step("affine", {{"scale", {0.25, 4.0, 1.0, -1.0}}, {"offset", {0.0, 1.0, 1.0, 1.0}}});
    Step proj = step("project", {{"matrix", {{1.0, 0.5, 0.0, -1.0}, {0.0, 2.0, 1.0, 0.5}}}, {"offset", {0.1, -0.2}}});
    Step proj2 = step("project", {{"matrix", {{1.0, -1.0}}}, {"offset", {0.3}}});
    Step tail = step("elementwise", {{"function", "tanh"}});
    spec::Pipeline p = linear_pipeline(4, {a1, a2, proj, proj2, tail}, {{1.5}}, {0.2});
    const spec::Pipeline q = check_optimized(p);
    ASSERT_EQ(q.steps.size(), 2u);
    EXPECT_STREQ(spec::op_name(q.steps[0].op), "project");
    EXPECT_STREQ(spec::op_name(q.steps[1].op), "elementwise");
    // project then the linear model fuse into the model
    spec::Pipeline pl = linear_pipeline(4, {a1, proj}, {{1.0, -2.0}, {0.5, 0.5}}, {0.0, 1.0});
    const spec::Pipeline ql = check_optimized(pl);
    EXPECT_TRUE(ql.steps.empty());
    EXPECT_EQ(ql.model.num_features, 4);
}

TEST(Optimizer, ZeroWeightsAreIgnoredInputs) {
    Step scaler = step("affine", {{"scale", {1.0, 2.0, 3.0, 4.0, 5.0, 6.0}}, {"offset", iota(6, 0.0, 1.0)}});
    spec::Pipeline p = linear_pipeline(6, {scaler}, {{1.0, 0.0, 2.0, -1.0, 0.0, 0.5}, {0.0, 0.0, 1.0, 1.0, 0.0, 0.0}},
                                       {0.0, 0.0});
    // NaN only where the model reads: a NaN in an ignored column is not read at all.
    const spec::Pipeline q = check_optimized(p, nullptr, {true, false, true, true, false, true});
    EXPECT_EQ(optimizer::unused_inputs(q), (std::vector<int32_t>{1, 4}));
    EXPECT_EQ(q.model.num_features, 4);
    // A bare linear model keeps its shape; its zero-weight inputs are just not fetched.
    spec::Pipeline bare = linear_pipeline(3, {}, {{0.0, 1.0, 0.0}}, {0.0});
    EXPECT_EQ(spec::to_json(optimizer::optimize(bare)), spec::to_json(bare));
    EXPECT_EQ(optimizer::unused_inputs(bare), (std::vector<int32_t>{0, 2}));
}

TEST(Optimizer, ColumnTransformerPartsShrink) {
    // num: impute + scale on 0..2; cat: one-hot of 3; pass: 4, 5; dead: input 6.
    Step num_impute = step("impute", {{"statistics", {0.0, 1.0, 2.0}}});
    Step num_scale = step("affine", {{"scale", {0.5, 2.0, -1.0}}, {"offset", {0.1, 0.2, 0.3}}});
    Step ohe = step("one_hot", {{"categories", {{1.0, 2.0, 3.0, kNaN}}}, {"drop", {0}}});
    Step ct = concat({{{0, 1, 2}, {num_impute, num_scale}}, {{3}, {ohe}}, {{4, 5}, {}}});
    // outputs: num 0..2, ohe (2.0, 3.0, NaN) 3..5, pass 6..7; category 3.0 and input 5 unread
    spec::Pipeline p = linear_pipeline(7, {ct}, {{1.0, -1.0, 0.5, 2.0, 0.0, -1.5, 0.25, 0.0}}, {0.3});
    optimizer::Report report;
    const spec::Pipeline q = check_optimized(p, &report, {true, true, true, true, true, false, false});
    EXPECT_EQ(optimizer::unused_inputs(q), (std::vector<int32_t>{5, 6}));
    ASSERT_EQ(q.steps.size(), 1u);
    const Step& c = q.steps[0];
    ASSERT_EQ(c.parts.size(), 3u);
    ASSERT_EQ(c.parts[0].steps.size(), 1u);  // the scaler went into the coefficients
    EXPECT_STREQ(spec::op_name(c.parts[0].steps[0].op), "impute");
    EXPECT_EQ(c.parts[1].steps[0].params["categories"][0].size(), 2u);
    EXPECT_EQ(c.parts[2].columns, (std::vector<int32_t>{4}));
    EXPECT_EQ(q.model.num_features, 6);
}

TEST(Optimizer, DeadPartsAndMonomialsGo) {
    // part 0 nothing reads; part 1 monomials of (1, 2) where the model ignores x2's terms
    Step mono = step("monomials", {{"powers", {{0, 0}, {1, 0}, {0, 1}, {2, 0}, {1, 1}}}});
    Step ct = concat({{{0}, {step("elementwise", {{"function", "exp"}})}}, {{1, 2}, {mono}}});
    spec::Pipeline p = linear_pipeline(3, {ct}, {{0.0, 0.5, 1.0, 0.0, -0.5, 0.0}}, {0.0});
    const spec::Pipeline q = check_optimized(p, nullptr, {false, true, false});
    EXPECT_EQ(optimizer::unused_inputs(q), (std::vector<int32_t>{0, 2}));
    EXPECT_EQ(q.model.num_features, 3);  // 1, x1, x1^2
}

TEST(Optimizer, RowWiseOpsNeedAllTheirInputs) {
    Step norm = step("normalize", {{"norm", "l2"}});
    spec::Pipeline p = linear_pipeline(4, {norm}, {{1.0, 0.0, 0.0, 2.0}}, {0.0});
    const spec::Pipeline q = check_optimized(p);
    EXPECT_TRUE(optimizer::unused_inputs(q).empty());
    // An op the optimizer does not know (e.g. a kernel added later) is treated the same way.
    const optimizer::Mask need = optimizer::step_needs(step("kernel", json::object()), {-1, -1, -1}, {true, false});
    EXPECT_EQ(need, (optimizer::Mask{true, true, true}));
    EXPECT_EQ(optimizer::step_needs(step("kernel", json::object()), {-1, -1}, {false, false}),
              (optimizer::Mask{false, false}));
}

TEST(Optimizer, TreesAfterFeaturizersGetRenumberedFeatures) {
    spec::Pipeline p = testing::make_pipeline(spec::Task::Regression, spec::PostTransform::Identity, 1, 4,
                                              spec::Comparison::LessEqual);
    p.features = {"a", "b", "c", "d"};
    p.steps = {step("affine", {{"scale", {0.5, 2.0, 1.0, -1.0}}, {"offset", {0.25, -1.0, 0.0, 3.0}}})};
    std::mt19937 rng(3);
    testing::add_trees(p, rng, 20, testing::TreeShape{4, 0.3, true});
    for (spec::Tree& t : p.model.trees)
        for (int32_t& f : t.feature) f = f % 2 == 0 ? 1 : 3;
    spec::validate(p);
    const spec::Pipeline q = check_optimized(p);
    EXPECT_EQ(optimizer::unused_inputs(q), (std::vector<int32_t>{0, 2}));
    EXPECT_EQ(q.model.num_features, 2);
    // A bare ensemble is left as it is; its unsplit features are not fetched.
    spec::Pipeline bare = p;
    bare.steps.clear();
    EXPECT_EQ(spec::to_json(optimizer::optimize(bare)), spec::to_json(bare));
    EXPECT_EQ(optimizer::unused_inputs(bare), (std::vector<int32_t>{0, 2}));
}

TEST(Optimizer, TextInputsKeepTheirIndices) {
    // A one-hot of a text input (2) and of a number (0); input 1 is dropped by the selector.
    Step ohe = step("one_hot", {{"categories", {{0.0, 1.0}, {0.0, 1.0, 2.0}}}, {"drop", {-1, -1}}});
    Step ct = concat({{{0, 2}, {ohe}}});
    spec::Pipeline p = linear_pipeline(3, {ct}, {{1.0, 0.0, 0.5, -0.5, 2.0}}, {0.0});
    p.text_inputs = {{2, {"x", "y", "z"}, false}};
    spec::validate(p);
    const spec::Pipeline q = check_optimized(p);
    EXPECT_EQ(optimizer::unused_inputs(q), (std::vector<int32_t>{1}));
    EXPECT_EQ(q.text_inputs[0].input, 2);
}

}  // namespace
}  // namespace pg_predict

namespace pg_predict {
namespace {

TEST(Optimizer, IllConditionedModelsAreNotFused) {
    // Huge weights that cancel against the intercept: folding the offsets in would round by units.
    Step scaler = step("affine", {{"scale", {1.0, 0.5}}, {"offset", {-3.5, 1.0}}});
    spec::Pipeline p = linear_pipeline(2, {scaler}, {{2.7e14, 1.0}}, {-1.26e16});
    const spec::Pipeline q = optimizer::optimize(p);
    ASSERT_EQ(q.steps.size(), 1u);
    EXPECT_STREQ(spec::op_name(q.steps[0].op), "affine");
}

}  // namespace
}  // namespace pg_predict

namespace pg_predict {
namespace {

TEST(Optimizer, SelectionFoldsIntoTheConcatAfterIt) {
    Step select = concat({{{0, 2, 3, 5}, {}}});
    Step ct = concat({{{3}, {step("affine", {{"scale", {2.0}}, {"offset", {1.0}}})}},
                      {{1, 0}, {step("elementwise", {{"function", "square"}})}}});
    spec::Pipeline p = linear_pipeline(6, {select, ct}, {{1.0, -1.0, 0.5}}, {0.0});
    const spec::Pipeline q = check_optimized(p);
    ASSERT_EQ(q.steps.size(), 1u);
    EXPECT_EQ(q.steps[0].parts[0].columns, (std::vector<int32_t>{5}));
    EXPECT_EQ(q.steps[0].parts[1].columns, (std::vector<int32_t>{2, 0}));
    EXPECT_EQ(optimizer::unused_inputs(q), (std::vector<int32_t>{1, 3, 4}));
}

TEST(Optimizer, OneHotColumnsNobodyReadsKeepOneCategory) {
    // normalize gives all its columns, so the one-hot gets column 1 although nothing reads it.
    Step norm = step("normalize", {{"norm", "max"}});
    Step ohe = step("one_hot", {{"categories", {{0.0, 1.0}, {0.0, 1.0, -1.0}, {1.0}}}, {"drop", {-1, 1, -1}}});
    spec::Pipeline p = linear_pipeline(3, {norm, ohe}, {{1.0, -1.0, 0.0, 0.0, 2.0}}, {0.5});
    const spec::Pipeline q = check_optimized(p);
    ASSERT_EQ(q.steps.size(), 2u);
    EXPECT_EQ(q.steps[1].params["categories"][1].size(), 1u);
    EXPECT_EQ(q.model.num_features, 4);
}

}  // namespace
}  // namespace pg_predict

namespace pg_predict {
namespace {

// --- random pipelines ---------------------------------------------------------------------

struct Gen {
    std::mt19937 rng;
    double real(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); }
    int integer(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
    bool chance(double p) { return real(0.0, 1.0) < p; }
    double weight() { return chance(0.35) ? 0.0 : std::round(real(-2.0, 2.0) * 8.0) / 8.0; }

    std::vector<double> categories() {
        std::vector<double> all = {0.0, 1.0, 2.0, 3.0, kNaN}, out;
        for (double c : all)
            if (chance(0.6)) out.push_back(c);
        if (out.empty()) out.push_back(1.0);
        return out;
    }

    // One random step over a vector of width w (numbers only); sets w to its output width.
    Step random_step(size_t& w, int depth) {
        switch (integer(0, depth > 0 ? 10 : 11)) {
        case 0: {
            std::vector<double> s(w), o(w);
            for (size_t c = 0; c < w; ++c) s[c] = chance(0.1) ? 0.0 : real(-2.0, 2.0), o[c] = real(-1.0, 1.0);
            return step("affine", {{"scale", s}, {"offset", o}});
        }
        case 1: {
            json stats = json::array();
            for (size_t c = 0; c < w; ++c) stats.push_back(spec::number_to_json(chance(0.2) ? kNaN : real(-1.0, 1.0)));
            if (chance(0.3)) return step("impute", {{"statistics", stats}, {"missing_value", double(integer(0, 3))}});
            return step("impute", {{"statistics", stats}});
        }
        case 2: {
            if (chance(0.3)) {  // PowerTransformer; lambdas 0 and 2 take yeo-johnson's log forms
                std::vector<double> lambdas(w);
                for (double& l : lambdas) l = chance(0.2) ? 2.0 * integer(0, 1) : real(-1.5, 2.5);
                return step("power", {{"method", chance(0.5) ? "box-cox" : "yeo-johnson"},
                                      {"lambdas", spec::numbers_to_json(lambdas)}});
            }
            if (chance(0.3)) {  // QuantileTransformer; repeated quantiles (a constant column) included
                const int n = integer(2, 5);
                std::vector<double> refs;
                for (int i = 0; i < n; ++i) refs.push_back(static_cast<double>(i) / (n - 1));
                json quantiles = json::array();
                for (size_t c = 0; c < w; ++c) {
                    std::vector<double> q;
                    for (int i = 0; i < n; ++i) q.push_back(chance(0.3) && !q.empty() ? q.back() : real(-2.0, 2.0));
                    std::sort(q.begin(), q.end());
                    quantiles.push_back(q);
                }
                return step("quantile", {{"quantiles", quantiles}, {"references", refs},
                                         {"output", chance(0.5) ? "normal" : "uniform"}});
            }
            return step("elementwise", {{"function", chance(0.5) ? "tanh" : "absolute"}});
        }
        case 3: return step("threshold", {{"threshold", real(-1.0, 1.0)}});
        case 4:  // scikit-learn's missing_values = a number: that value is missing, and NaN
            if (chance(0.3)) return step("is_missing", {{"missing_value", double(integer(0, 3))}});
            return step("is_missing", json::object());
        case 5: {
            json edges = json::array();
            for (size_t c = 0; c < w; ++c) {
                std::vector<double> e;
                for (int i = integer(0, 3); i > 0; --i) e.push_back(real(-2.0, 2.0));
                std::sort(e.begin(), e.end());
                edges.push_back(e);
            }
            return step("bucketize", {{"edges", edges}});
        }
        case 6: {
            json cats = json::array();
            std::vector<int32_t> drop;
            size_t out = 0;
            for (size_t c = 0; c < w; ++c) {
                const std::vector<double> k = categories();
                cats.push_back(spec::numbers_to_json(k));
                drop.push_back(chance(0.3) ? integer(0, static_cast<int>(k.size()) - 1) : -1);
                out += k.size() - (drop.back() >= 0 ? 1 : 0);
            }
            if (out == 0) return step("is_missing", json::object());
            w = out;
            return step("one_hot", {{"categories", cats}, {"drop", drop}});
        }
        case 7: {
            json cats = json::array();
            for (size_t c = 0; c < w; ++c) cats.push_back(spec::numbers_to_json(categories()));
            return step("ordinal", {{"categories", cats}, {"unknown_value", -1.0}, {"missing_value", 7.0}});
        }
        case 8: return step("normalize", {{"norm", std::vector<std::string>{"l1", "l2", "max"}[integer(0, 2)]}});
        case 9: {
            const size_t k = static_cast<size_t>(integer(1, 4));
            std::vector<std::vector<double>> m(k, std::vector<double>(w));
            std::vector<double> off(k);
            for (size_t r = 0; r < k; ++r) {
                for (double& v : m[r]) v = weight();
                off[r] = real(-1.0, 1.0);
            }
            w = k;
            json rows = json::array();
            for (const auto& r : m) rows.push_back(spec::numbers_to_json(r));
            return step("project", {{"matrix", rows}, {"offset", spec::numbers_to_json(off)}});
        }
        case 10: {
            const size_t k = static_cast<size_t>(integer(1, 5));
            json powers = json::array();
            for (size_t r = 0; r < k; ++r) {
                std::vector<double> p(w, 0.0);
                for (int i = integer(0, 2); i > 0; --i) p[integer(0, static_cast<int>(w) - 1)] += 1.0;
                powers.push_back(p);
            }
            w = k;
            return step("monomials", {{"powers", powers}});
        }
        default: {  // concat of 1-3 parts, each some columns and up to 2 steps
            std::vector<Step::Part> parts;
            size_t out = 0;
            for (int p = integer(1, 3); p > 0; --p) {
                Step::Part part;
                for (int c = integer(1, 3); c > 0; --c) part.columns.push_back(integer(0, static_cast<int>(w) - 1));
                size_t pw = part.columns.size();
                for (int s = integer(0, 2); s > 0; --s) part.steps.push_back(random_step(pw, depth + 1));
                out += pw;
                parts.push_back(std::move(part));
            }
            w = out;
            return concat(std::move(parts));
        }
        }
    }
};

TEST(Optimizer, RandomPipelinesKeepTheirOutputs) {
    Gen g{std::mt19937(2024)};
    int checked = 0, changed = 0;
    for (int i = 0; i < 300; ++i) {
        const int inputs = g.integer(2, 6);
        size_t w = static_cast<size_t>(inputs);
        std::vector<Step> steps;
        for (int s = g.integer(1, 4); s > 0 && w <= 24; --s) steps.push_back(g.random_step(w, 0));
        if (w > 24) continue;
        spec::Pipeline p;
        // A zero weight is an ignored input: a NaN there is the one documented difference, so
        // models with zero weights are checked on NaN-free rows.
        bool nan_inputs = true;
        if (g.chance(0.6)) {
            const size_t k = g.chance(0.5) ? 1 : 3;
            nan_inputs = g.chance(0.5);
            std::vector<std::vector<double>> coef(k, std::vector<double>(w));
            for (auto& row : coef)
                for (double& v : row) v = nan_inputs ? (g.chance(0.5) ? 1.0 : -1.0) * g.real(0.25, 2.0) : g.weight();
            p = linear_pipeline(inputs, steps, coef, std::vector<double>(k, 0.25));
        } else {
            p = testing::make_pipeline(spec::Task::Regression, spec::PostTransform::Identity, 1,
                                       static_cast<int>(w), spec::Comparison::LessEqual);
            p.features.clear();
            for (int f = 0; f < inputs; ++f) p.features.push_back("f" + std::to_string(f));
            p.steps = steps;
            testing::add_trees(p, g.rng, 5, testing::TreeShape{3, 0.3, true});
            for (spec::Tree& t : p.model.trees)
                for (int32_t& f : t.feature) f = f % 3 == 0 ? f : f / 3 * 3;  // leave some unsplit
            spec::validate(p);
        }
        SCOPED_TRACE("pipeline " + std::to_string(i) + ": " + spec::to_json(p));
        spec::Pipeline q;
        try {
            q = optimizer::optimize(p);
        } catch (const std::exception& e) {
            ADD_FAILURE() << e.what();
            break;
        }
        if (spec::to_json(q) != spec::to_json(p)) ++changed;
        const int64_t rows = 200;
        const std::vector<float> x = random_rows(rows, inputs, std::vector<bool>(inputs, nan_inputs), 100 + i);
        std::vector<float> z = x;  // the node gives 0 for the inputs it does not read
        for (int32_t f : optimizer::unused_inputs(q))
            for (int64_t r = 0; r < rows; ++r) z[r * inputs + f] = 0.0f;
        const std::vector<float> want = reference(p, z, rows);
        expect_same(reference(q, z, rows), want, "reference");
        expect_same(compiled(q, z, rows), want, "compiled");
        // Without NaN, zeroing the unread inputs changes nothing in the original either.
        const std::vector<float> clean = random_rows(rows, inputs, std::vector<bool>(inputs, false), 900 + i);
        std::vector<float> clean_z = clean;
        for (int32_t f : optimizer::unused_inputs(q))
            for (int64_t r = 0; r < rows; ++r) clean_z[r * inputs + f] = 0.0f;
        expect_same(reference(p, clean_z, rows), reference(p, clean, rows), "unread inputs");
        // (No fixpoint check here: a project fused into the model can leave a zero weight
        // where the project had a zero column, which a second run would prune.)
        ++checked;
        if (HasFailure()) break;
    }
    EXPECT_GT(checked, 200);
    EXPECT_GT(changed, 100);
}

// A neighbors step (nearest neighbours' vote) after random featurizers: it reads every column
// it is given, so the steps before it keep theirs; optimized and compiled pipelines give the
// reference's outputs, NaN rows included.
TEST(Optimizer, NeighborsAfterRandomStepsKeepTheirOutputs) {
    Gen g{std::mt19937(77)};
    int checked = 0;
    for (int i = 0; i < 60; ++i) {
        const int inputs = g.integer(2, 5);
        size_t w = static_cast<size_t>(inputs);
        std::vector<Step> steps;
        for (int s = g.integer(0, 2); s > 0 && w <= 12; --s) steps.push_back(g.random_step(w, 0));
        if (w > 12) continue;
        const int n = g.integer(1, 30), c = g.integer(1, 3);
        json points = json::array(), targets = json::array();
        for (int r = 0; r < n; ++r) {
            std::vector<double> pt(w), tg(static_cast<size_t>(c));
            for (double& v : pt) v = g.real(-2.0, 2.0);
            for (double& v : tg) v = g.real(-5.0, 5.0);
            points.push_back(pt);
            targets.push_back(tg);
        }
        steps.push_back(step("neighbors", {{"points", points}, {"targets", targets}, {"k", g.integer(1, n)},
                                           {"p", g.integer(1, 2)},
                                           {"weights", g.chance(0.5) ? "uniform" : "distance"}}));
        std::vector<std::vector<double>> coef(1, std::vector<double>(static_cast<size_t>(c)));
        for (double& v : coef[0]) v = g.real(0.25, 2.0);
        const spec::Pipeline p = linear_pipeline(inputs, steps, coef, {0.5});
        SCOPED_TRACE("pipeline " + std::to_string(i) + ": " + spec::to_json(p));
        const spec::Pipeline q = optimizer::optimize(p);
        const int64_t rows = 100;
        const std::vector<float> x = random_rows(rows, inputs, std::vector<bool>(inputs, true), 300 + i);
        const std::vector<float> want = reference(p, x, rows);
        expect_same(reference(q, x, rows), want, "reference");
        expect_same(compiled(q, x, rows), want, "compiled");
        ++checked;
        if (HasFailure()) break;
    }
    EXPECT_GT(checked, 40);
}

// Op model (an ensemble's member): nested pipelines, trees and linear ones with random steps,
// each reading some of the columns, their predict_proba, one-hot labels or decision values
// combined by a linear model: the optimized and compiled pipelines give the reference's
// outputs, NaN rows included.
TEST(Optimizer, ModelStepsOfEnsemblesKeepTheirOutputs) {
    Gen g{std::mt19937(4242)};
    int checked = 0;
    for (int i = 0; i < 25; ++i) {
        const int inputs = g.integer(2, 5);
        std::vector<Step::Part> parts;
        size_t width = 0;
        for (int m = g.integer(1, 3); m > 0; --m) {
            Step::Part part;
            for (int c = 0; c < inputs; ++c)
                if (g.chance(0.7) || part.columns.empty()) part.columns.push_back(c);
            const int w = static_cast<int>(part.columns.size());
            spec::Pipeline member;
            std::string output = "predict";
            if (g.chance(0.5)) {  // a binary forest: P(class 1) from trees, [1 - p, p]
                member = testing::make_pipeline(spec::Task::Classification, spec::PostTransform::Logistic, 1, w,
                                                spec::Comparison::LessEqual);
                member.classes = {0.0, 1.0};
                testing::add_trees(member, g.rng, 4, testing::TreeShape{3, 0.3, true});
                if (g.chance(0.5)) output = "label";
            } else {  // a softmax or logistic regression after random steps
                size_t sw = static_cast<size_t>(w);
                std::vector<Step> steps;
                for (int s = g.integer(0, 2); s > 0 && sw <= 12; --s) steps.push_back(g.random_step(sw, 0));
                if (sw > 12) continue;
                const size_t k = g.chance(0.5) ? 1 : 3;
                std::vector<std::vector<double>> coef(k, std::vector<double>(sw));
                for (auto& row : coef)
                    for (double& v : row) v = (g.chance(0.5) ? 1.0 : -1.0) * g.real(0.25, 2.0);
                member = linear_pipeline(w, steps, coef, std::vector<double>(k, 0.1));
                member.source_format = "sklearn";  // a class whose decision_function is its margin
                member.objective = "LogisticRegression";
                output = g.chance(0.3) ? "label" : g.chance(0.5) ? "decision_function" : "predict";
            }
            spec::validate(member);
            Step model = step("model", {{"pipeline", json::parse(spec::to_json(member))}, {"output", output}});
            std::vector<int32_t> vocab(part.columns.size(), -1);
            width += static_cast<size_t>(spec::check_step(model, vocab, "member"));
            part.steps.push_back(std::move(model));
            parts.push_back(std::move(part));
        }
        if (parts.empty()) continue;
        std::vector<std::vector<double>> coef(3, std::vector<double>(width));
        for (auto& row : coef)
            for (double& v : row) v = g.real(-2.0, 2.0);
        const spec::Pipeline p = linear_pipeline(inputs, {concat(std::move(parts))}, coef, {0.0, 0.1, 0.2});
        SCOPED_TRACE("pipeline " + std::to_string(i) + ": " + spec::to_json(p));
        const spec::Pipeline q = optimizer::optimize(p);
        const int64_t rows = 100;
        const std::vector<float> x = random_rows(rows, inputs, std::vector<bool>(inputs, true), 500 + i);
        const std::vector<float> want = reference(p, x, rows);
        expect_same(reference(q, x, rows), want, "reference");
        expect_same(compiled(q, x, rows), want, "compiled");
        expect_same(compiled(q, std::vector<float>(x.begin(), x.begin() + inputs), 1),
                    std::vector<float>(want.begin(), want.begin() + 3), "compiled, one row");
        ++checked;
        if (HasFailure()) break;
    }
    EXPECT_GT(checked, 15);
}

// A member is optimized as it would be alone: its scaler folds into its linear model.
TEST(Optimizer, EnsembleMembersAreOptimizedAlone) {
    const spec::Pipeline member = linear_pipeline(
        2, {step("affine", {{"scale", {2.0, 0.5}}, {"offset", {1.0, -1.0}}})}, {{1.0, -3.0}}, {0.5});
    const spec::Pipeline p = linear_pipeline(
        2, {concat({Step::Part{{0, 1}, {step("model", {{"pipeline", json::parse(spec::to_json(member))},
                                                       {"output", "predict"}})}}})},
        {{1.0, -1.0}}, {0.0});
    optimizer::Report report;
    const spec::Pipeline q = check_optimized(p, &report);
    ASSERT_FALSE(report.passes.empty());
    EXPECT_EQ(report.passes[0].pass, "optimize_members");
    std::vector<const Step*> models;
    for (const Step& s : q.steps) {
        if (s.op == spec::Op::Model) models.push_back(&s);
        for (const Step::Part& part : s.parts)
            for (const Step& sub : part.steps)
                if (sub.op == spec::Op::Model) models.push_back(&sub);
    }
    ASSERT_EQ(models.size(), 1u);
    EXPECT_TRUE(spec::model_pipeline(*models[0], "member").steps.empty());
}

}  // namespace
}  // namespace pg_predict
