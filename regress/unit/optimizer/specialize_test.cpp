// Specialization for a query's value sets (optimizer/specialize.hpp): on random ensembles and
// random bounds (at thresholds, between them, just off them in float64, with and without
// missing values), every row the bounds allow gets bit for bit the unspecialized pipeline's
// outputs, from the reference evaluator and from every compiled strategy, with the inputs the
// specialized pipeline no longer reads zeroed as the PredictBatch node fills them.
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pg_predict/compiler/compile.hpp"
#include "pg_predict/compiler/strategy.hpp"
#include "pg_predict/optimizer/optimize.hpp"
#include "pg_predict/optimizer/specialize.hpp"
#include "pg_predict/runtime/api.hpp"
#include "pg_predict/spec/steps.hpp"
#include "tree_gen.hpp"

namespace pg_predict {
namespace {

using optimizer::ValueSet;
using nlohmann::json;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A random value set over the grid of tree_gen.hpp: a constant (on the grid, between grid
// points, or a float64 just off a float32 threshold), a bound from one or both sides, or NULL.
ValueSet random_set(std::mt19937& rng) {
    std::uniform_int_distribution<int> kind(0, 7);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    auto point = [&] {
        const double g = testing::grid_value(rng);
        switch (std::uniform_int_distribution<int>(0, 3)(rng)) {
            case 0: return g;
            case 1: return g + 0.125;                       // between grid points
            case 2: return std::nextafter(g, 10.0);         // rounds to g in float32
            default: return std::nextafter(g, -10.0);
        }
    };
    ValueSet s;
    switch (kind(rng)) {
        case 0: case 1: s.lo = s.hi = point(); s.missing = false; break;            // x = c
        case 2: s.lo = point(); s.missing = false; break;                            // x >= c (int column)
        case 3: s.lo = point(); s.missing = true; break;                             // x >= c (float: NaN too)
        case 4: s.hi = point(); s.missing = false; break;                            // x <= c
        case 5: s.lo = point(); s.hi = s.lo + 0.25 * std::uniform_int_distribution<int>(0, 4)(rng);
                s.missing = false; break;                                            // BETWEEN
        case 6: s.values = false; s.missing = true; break;                           // IS NULL
        default: s.hi = point(); s.missing = u(rng) < 0.5; break;
    }
    return s;
}

// One value of set s (as float64, the SQL value), NaN for a missing one.
double sample(std::mt19937& rng, const ValueSet& s) {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    if (!s.values || (s.missing && u(rng) < 0.15)) return kNaN;
    const double lo = std::isinf(s.lo) ? -3.0 : s.lo, hi = std::isinf(s.hi) ? 3.0 : s.hi;
    if (lo > hi) return s.lo;  // an unbounded side beyond the grid
    const double r = u(rng);
    if (r < 0.2) return std::isinf(s.lo) ? (u(rng) < 0.1 ? s.lo : lo) : s.lo;
    if (r < 0.4) return std::isinf(s.hi) ? (u(rng) < 0.1 ? s.hi : hi) : s.hi;
    if (r < 0.7) {  // a grid point inside
        for (int tries = 0; tries < 8; ++tries) {
            const double g = testing::grid_value(rng);
            if (g >= lo && g <= hi) return g;
        }
    }
    return lo + (hi - lo) * u(rng);
}

std::vector<float> reference(const spec::Pipeline& p, const std::vector<float>& x, int64_t rows) {
    std::vector<float> out(static_cast<size_t>(rows * p.output_width()));
    spec::reference_predict(p, x.data(), rows, out.data());
    return out;
}

std::vector<float> compiled(const spec::Pipeline& p, compiler::Strategy s, const std::vector<float>& x, int64_t rows) {
    static int64_t id = int64_t(9) << 40;
    const std::string bytes = compiler::compile(p, s);
    runtime::Program* prog = runtime::load_program(++id, bytes.data(), bytes.size());
    std::vector<float> out(static_cast<size_t>(rows * p.output_width()));
    runtime::run_program(prog, x.data(), rows, p.input_width(), out.data());
    runtime::release_program(prog);
    return out;
}

// Bit for bit (NaN matches NaN).
void expect_identical(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < want.size(); ++i) {
        if (std::isnan(want[i]) && std::isnan(got[i])) continue;
        EXPECT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
            << what << " [" << i << "] got " << got[i] << " want " << want[i];
    }
}

// Rows the sets allow (as float32, the way a float32 batch rounds them), specialization, and
// the comparison: reference and every strategy that compiles the pipeline.
optimizer::Specialization check(const spec::Pipeline& p, const std::map<int32_t, ValueSet>& sets, std::mt19937& rng,
                                const std::vector<compiler::Strategy>& strategies) {
    const int w = p.input_width();
    const int64_t rows = 300;
    std::vector<float> x = testing::random_inputs(rng, rows, w);
    for (const auto& [input, set] : sets)
        for (int64_t r = 0; r < rows; ++r) x[r * w + input] = static_cast<float>(sample(rng, set));
    if (!p.steps.empty()) x = testing::finite(std::move(x));
    const optimizer::Specialization s = optimizer::specialize(p, sets);
    std::vector<float> zeroed = x;
    for (int32_t f : s.unused_inputs)
        for (int64_t r = 0; r < rows; ++r) zeroed[r * w + f] = 0.0f;
    EXPECT_EQ(s.pipeline.input_width(), w);
    expect_identical(reference(s.pipeline, zeroed, rows), reference(p, x, rows), "reference");
    for (compiler::Strategy strategy : strategies)
        expect_identical(compiled(s.pipeline, strategy, zeroed, rows), compiled(p, strategy, x, rows),
                         std::string("strategy ") + compiler::strategy_name(strategy));
    return s;
}

// One node on input 0: below 1 (under the pipeline's comparison) goes left to 10, else right to
// 20, and so does NaN (default_left 0).
spec::Tree one_split() {
    spec::Tree t;
    t.left = {1, -1, -1};
    t.right = {2, -1, -1};
    t.feature = {0, 0, 0};
    t.threshold = {1.0f, 0, 0};
    t.default_left = {0, 0, 0};
    t.value = {0, 10.0f, 20.0f};
    return t;
}

const std::vector<compiler::Strategy> kTreeStrategies = {
    compiler::Strategy::Gemm, compiler::Strategy::TreeTraversal, compiler::Strategy::PerfectTreeTraversal,
    compiler::Strategy::Native};

TEST(Specialize, RandomEnsemblesKeepEveryAllowedRowsOutput) {
    std::mt19937 rng(15);
    int changed = 0;
    for (int round = 0; round < 24; ++round) {
        const spec::Comparison cmp = round % 2 ? spec::Comparison::Less : spec::Comparison::LessEqual;
        const int groups = round % 3 == 0 ? 3 : 1;
        spec::Pipeline p = testing::make_pipeline(
            spec::Task::Classification, groups == 1 ? spec::PostTransform::Logistic : spec::PostTransform::Softmax,
            groups, 4, cmp);
        testing::TreeShape shape;
        shape.max_depth = 3 + round % 4;
        testing::add_trees(p, rng, 12, shape);
        // Without a rule for a missing value (scikit-learn's trees): a NULL voids the row.
        if (round % 3 == 1) p.model.inputs_without_missing_rule = p.model.read_inputs();
        spec::validate(p);
        std::map<int32_t, ValueSet> sets;
        const int bounded = 1 + round % 3;
        for (int k = 0; k < bounded; ++k) sets[std::uniform_int_distribution<int>(0, 3)(rng)] = random_set(rng);
        const auto s = check(p, sets, rng, round % 4 == 0 ? kTreeStrategies : std::vector<compiler::Strategy>{
                                                                                   compiler::Strategy::Native});
        EXPECT_EQ(s.trees, 12);
        EXPECT_EQ(s.pipeline.model.trees.size(), 12u);  // trees stay: sums keep their order
        EXPECT_LE(s.nodes_after, s.nodes_before);
        changed += s.changed;
    }
    EXPECT_GT(changed, 12);  // most random bounds decide something
}

TEST(Specialize, ConstantFeatureIsNotReadAnyMore) {
    spec::Pipeline p = testing::make_pipeline(spec::Task::Regression, spec::PostTransform::Identity, 1, 3,
                                              spec::Comparison::Less);
    std::mt19937 rng(3);
    testing::TreeShape shape;
    testing::add_trees(p, rng, 20, shape);
    spec::validate(p);
    ValueSet zero;
    zero.lo = zero.hi = 0.3;
    zero.missing = false;
    const auto s = check(p, {{1, zero}}, rng, kTreeStrategies);
    EXPECT_TRUE(s.changed);
    EXPECT_LT(s.nodes_after, s.nodes_before);
    EXPECT_EQ(s.unused_inputs, (std::vector<int32_t>{1}));
}

TEST(Specialize, WithoutAMissingRuleANullInputIsStillRead) {
    // One node on x: x <= 1 goes left, NaN would go right; but NaN has no rule here (the row
    // has no prediction), so under `x IS NULL` the node is decided and x must stay read.
    spec::Pipeline p = testing::make_pipeline(spec::Task::Regression, spec::PostTransform::Identity, 1, 2,
                                              spec::Comparison::LessEqual);
    p.model.trees = {one_split()};
    p.model.inputs_without_missing_rule = {0};
    spec::validate(p);
    ValueSet null;
    null.values = false;
    std::mt19937 rng(6);
    const auto s = check(p, {{0, null}}, rng, kTreeStrategies);
    EXPECT_TRUE(s.changed);
    EXPECT_EQ(s.nodes_after, 1);
    EXPECT_EQ(s.unused_inputs, (std::vector<int32_t>{1}));  // x is read: its NULL voids the row
    EXPECT_EQ(s.pipeline.model.inputs_without_missing_rule, (std::vector<int32_t>{0}));
    const std::vector<float> row = {std::numeric_limits<float>::quiet_NaN(), 0.0f};
    EXPECT_TRUE(std::isnan(reference(s.pipeline, row, 1)[0]));
    // Under `x <= 0.5` (no NULL) the input voids nothing: it is no longer read at all.
    ValueSet below;
    below.hi = 0.5;
    below.missing = false;
    const auto b = check(p, {{0, below}}, rng, kTreeStrategies);
    EXPECT_EQ(b.unused_inputs, (std::vector<int32_t>{0, 1}));
}

TEST(Specialize, NothingDecidedLeavesThePipeline) {
    spec::Pipeline p = testing::make_pipeline(spec::Task::Regression, spec::PostTransform::Identity, 1, 2,
                                              spec::Comparison::Less);
    std::mt19937 rng(4);
    testing::add_trees(p, rng, 5, testing::TreeShape{});
    spec::validate(p);
    ValueSet any_number;  // x >= -inf on a float column: every value, NaN too
    any_number.lo = -std::numeric_limits<double>::infinity();
    const auto s = optimizer::specialize(p, {{0, any_number}});
    EXPECT_FALSE(s.changed);
    EXPECT_EQ(s.nodes_after, s.nodes_before);
    EXPECT_EQ(spec::to_json(s.pipeline), spec::to_json(p));
}

TEST(Specialize, MissingTakesTheDefaultDirection) {
    // One node: x < 1 goes left, NaN goes right (default_left 0).
    spec::Pipeline p = testing::make_pipeline(spec::Task::Regression, spec::PostTransform::Identity, 1, 1,
                                              spec::Comparison::Less);
    p.model.trees = {one_split()};
    spec::validate(p);
    ValueSet below;  // x <= 0.5 excludes NULL: left
    below.hi = 0.5;
    below.missing = false;
    EXPECT_EQ(optimizer::specialize(p, {{0, below}}).pipeline.model.trees[0].value, (std::vector<float>{10.0f}));
    below.missing = true;  // NULL may come (x <= 0.5 OR x IS NULL is not pruned, but a set may say so)
    EXPECT_FALSE(optimizer::specialize(p, {{0, below}}).changed);
    ValueSet null;
    null.values = false;
    EXPECT_EQ(optimizer::specialize(p, {{0, null}}).pipeline.model.trees[0].value, (std::vector<float>{20.0f}));
    // x >= 1 - 1e-12 in float64 rounds to 1.0f: right, not "both".
    ValueSet near;
    near.lo = std::nextafter(1.0, 0.0);
    near.missing = false;
    EXPECT_FALSE(optimizer::specialize(p, {{0, near}}).changed);
    near.lo = 1.0;
    EXPECT_EQ(optimizer::specialize(p, {{0, near}}).pipeline.model.trees[0].value, (std::vector<float>{20.0f}));
    // x < 1 + ulp in float64 (x <= 1.0000000000000002) may be 1.0f: not decided.
    ValueSet up;
    up.hi = std::nextafter(1.0, 2.0);
    up.missing = false;
    EXPECT_FALSE(optimizer::specialize(p, {{0, up}}).changed);
}

// A text input one-hot encoded before the trees (a scikit-learn pipeline), a bucketized
// column (LightGBM's ranks) and a scaled one: fixing the text value folds its one-hot columns
// to constants, so the trees' splits on them are decided and the text input is not read.
spec::Pipeline featurized_pipeline(std::mt19937& rng, spec::Comparison cmp) {
    spec::Pipeline p = testing::make_pipeline(spec::Task::Regression, spec::PostTransform::Identity, 1, 4, cmp);
    spec::Step ohe;
    ohe.op = spec::Op::OneHot;
    ohe.params = {{"categories", {{0.0, 1.0, 2.0, 3.0}}}, {"drop", {-1}}};
    spec::Step rank;
    rank.op = spec::Op::Bucketize;
    rank.params = {{"edges", {{-1.0, 0.0, 0.5, 1.25}}}, {"side", "left"}};
    spec::Step scale;
    scale.op = spec::Op::Affine;
    scale.params = {{"scale", {0.5}}, {"offset", {-0.25}}};
    spec::Step concat;
    concat.op = spec::Op::Concat;
    concat.params = json::object();
    concat.parts = {{{3}, {ohe}}, {{0}, {rank}}, {{1}, {scale}}, {{2}, {}}};
    p.steps = {concat};
    p.text_inputs = {{3, {"basic", "plus", "pro", "team"}, false}};
    p.model.num_features = 7;  // 4 one-hot, the rank, the scaled and the raw column
    testing::TreeShape shape;
    shape.max_depth = 5;
    testing::add_trees(p, rng, 30, shape);
    for (spec::Tree& t : p.model.trees)  // one-hot splits at 0.5, ranks at integers
        for (size_t n = 0; n < t.size(); ++n)
            if (!t.is_leaf(n) && t.feature[n] < 4) t.threshold[n] = 0.5f;
            else if (!t.is_leaf(n) && t.feature[n] == 4) t.threshold[n] = std::round(t.threshold[n] + 2.0f);
    spec::validate(p);
    return optimizer::optimize(p);
}

TEST(Specialize, FixedTextValueFoldsItsOneHotColumns) {
    std::mt19937 rng(21);
    for (spec::Comparison cmp : {spec::Comparison::Less, spec::Comparison::LessEqual}) {
        const spec::Pipeline p = featurized_pipeline(rng, cmp);
        for (const char* value : {"pro", "basic", "enterprise"}) {
            const int32_t index = optimizer::text_value_index(p, 3, value);
            EXPECT_EQ(index, std::string(value) == "enterprise" ? -1 : std::string(value) == "pro" ? 2 : 0);
            ValueSet fixed;
            fixed.lo = fixed.hi = index;
            fixed.missing = false;
            const auto s = check(p, {{3, fixed}}, rng, kTreeStrategies);
            EXPECT_TRUE(s.changed);
            EXPECT_LT(s.nodes_after, s.nodes_before);
            EXPECT_NE(std::find(s.unused_inputs.begin(), s.unused_inputs.end(), 3), s.unused_inputs.end()) << value;
        }
        // Ranks and the scaled column, bounded; the text input free.
        for (int round = 0; round < 12; ++round) {
            std::map<int32_t, ValueSet> sets;
            sets[0] = random_set(rng);
            sets[1] = random_set(rng);
            check(p, sets, rng, {compiler::Strategy::Native, compiler::Strategy::TreeTraversal});
        }
    }
}

TEST(Specialize, FixedTextValueFoldsItsOrdinalCode) {
    // An ordinal-encoded text input (scikit-learn's OrdinalEncoder before HistGradientBoosting):
    // a fixed value, an unknown one and NULL each give one code, so the splits on it are decided.
    std::mt19937 rng(31);
    spec::Pipeline p = testing::make_pipeline(spec::Task::Regression, spec::PostTransform::Identity, 1, 2,
                                              spec::Comparison::LessEqual);
    spec::Step ordinal;
    ordinal.op = spec::Op::Ordinal;
    ordinal.params = {{"categories", {{0.0, 1.0, 2.0, 3.0}}}, {"unknown_value", -1.0}, {"missing_value", kNaN}};
    spec::Step concat;
    concat.op = spec::Op::Concat;
    concat.params = json::object();
    concat.parts = {{{0}, {ordinal}}, {{1}, {}}};
    p.steps = {concat};
    p.text_inputs = {{0, {"basic", "plus", "pro", "team"}, false}};
    testing::TreeShape shape;
    shape.max_depth = 5;
    testing::add_trees(p, rng, 25, shape);
    for (spec::Tree& t : p.model.trees)  // codes -1..3 split between integers
        for (size_t n = 0; n < t.size(); ++n)
            if (!t.is_leaf(n) && t.feature[n] == 0) t.threshold[n] = std::floor(t.threshold[n] * 2.0f) + 0.5f;
    spec::validate(p);
    const spec::Pipeline q = optimizer::optimize(p);
    for (double index : {2.0, 0.0, -1.0}) {
        ValueSet fixed;
        fixed.lo = fixed.hi = index;
        fixed.missing = false;
        const auto s = check(q, {{0, fixed}}, rng, kTreeStrategies);
        EXPECT_TRUE(s.changed) << index;
        EXPECT_EQ(s.unused_inputs, (std::vector<int32_t>{0})) << index;
    }
    ValueSet null;
    null.values = false;
    const auto s = check(q, {{0, null}}, rng, {compiler::Strategy::Native});
    EXPECT_TRUE(s.changed);
}

TEST(Specialize, UnknownTextIsAnErrorForStrictEncoders) {
    std::mt19937 rng(5);
    spec::Pipeline p = featurized_pipeline(rng, spec::Comparison::Less);
    p.text_inputs[0].unknown_is_error = true;
    EXPECT_EQ(optimizer::text_value_index(p, 3, "enterprise"), -2);
    EXPECT_EQ(optimizer::text_value_index(p, 3, "team"), 3);
    EXPECT_EQ(optimizer::text_value_index(p, 0, "team"), -2);  // not a text input
}

}  // namespace
}  // namespace pg_predict
