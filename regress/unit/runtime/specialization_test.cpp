// The runtime's side of predicate pruning (runtime/api.hpp): canonical bounds, the planner's
// summary, and the specialized program, compiled once per (model version, bounds, strategy)
// and scoring the rows the bounds allow bit for bit like the stored program.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pg_predict/compiler/compile.hpp"
#include "pg_predict/compiler/strategy.hpp"
#include "pg_predict/optimizer/optimize.hpp"
#include "pg_predict/runtime/api.hpp"
#include "tree_gen.hpp"

namespace pg_predict {
namespace {

using nlohmann::json;

runtime::InputBound number(int32_t input, double lo, double hi, bool missing) {
    runtime::InputBound b;
    b.input = input;
    b.lo = lo;
    b.hi = hi;
    b.missing = missing;
    return b;
}

runtime::InputBound texts(int32_t input, std::vector<std::string> values) {
    runtime::InputBound b;
    b.input = input;
    b.is_text = true;
    b.texts = std::move(values);
    return b;
}

// Input 0: a text column one-hot encoded (4 values), inputs 1 and 2 numbers; 40 trees split on
// all six columns, the one-hot ones at 0.5.
spec::Pipeline text_pipeline(bool strict) {
    std::mt19937 rng(8);
    spec::Pipeline p = testing::make_pipeline(spec::Task::Regression, spec::PostTransform::Identity, 1, 3,
                                              spec::Comparison::Less);
    spec::Step ohe;
    ohe.op = spec::Op::OneHot;
    ohe.params = {{"categories", {{0.0, 1.0, 2.0, 3.0}}}, {"drop", {-1}}};
    spec::Step concat;
    concat.op = spec::Op::Concat;
    concat.params = json::object();
    concat.parts = {{{0}, {ohe}}, {{1, 2}, {}}};
    p.steps = {concat};
    p.text_inputs = {{0, {"basic", "plus", "pro", "team"}, strict}};
    p.model.num_features = 6;
    testing::TreeShape shape;
    shape.max_depth = 5;
    testing::add_trees(p, rng, 40, shape);
    for (spec::Tree& t : p.model.trees)
        for (size_t n = 0; n < t.size(); ++n)
            if (!t.is_leaf(n) && t.feature[n] < 4) t.threshold[n] = 0.5f;
    spec::validate(p);
    return p;
}

TEST(Pruning, BoundsHaveOneTextForEachSet) {
    const std::string a = runtime::encode_bounds({texts(0, {"pro", "plus", "pro"}), number(2, 1.0, 2.5, false)});
    const std::string b = runtime::encode_bounds({number(2, 1.0, 2.5, false), texts(0, {"plus", "pro"})});
    EXPECT_EQ(a, b);
    // exact numbers: the double just above 1 is another set
    EXPECT_NE(runtime::encode_bounds({number(2, 1.0, 2.5, false)}),
              runtime::encode_bounds({number(2, std::nextafter(1.0, 2.0), 2.5, false)}));
}

TEST(Pruning, SpecializedProgramScoresAllowedRowsLikeTheStoredOne) {
    const spec::Pipeline p = text_pipeline(false);
    const std::string spec_json = spec::to_json(p);
    const int64_t id = int64_t(11) << 40;
    runtime::load_specialization_spec(id, spec_json.data(), spec_json.size());
    ASSERT_TRUE(runtime::specialization_spec_loaded(id));

    const spec::Pipeline optimized = optimizer::optimize(p);
    const std::string stored = compiler::compile(optimized, compiler::Strategy::Native);
    runtime::Program* full = runtime::load_program(id, stored.data(), stored.size());

    for (const std::vector<std::string>& values :
         std::vector<std::vector<std::string>>{{"pro"}, {"basic", "team"}, {"enterprise"}}) {
        const std::string bounds = runtime::encode_bounds({texts(0, values), number(1, -0.5, 1.0, false)});
        const runtime::SpecializationSummary s = runtime::plan_specialization(id, bounds);
        ASSERT_TRUE(s.pruned) << bounds;
        EXPECT_EQ(s.trees, 40);
        EXPECT_LT(s.nodes_after, s.nodes_before);
        const bool text_unread = std::find(s.unused_inputs.begin(), s.unused_inputs.end(), 0) != s.unused_inputs.end();
        EXPECT_EQ(text_unread, values.size() == 1) << bounds;  // two values: the trees still tell them apart

        EXPECT_EQ(runtime::acquire_cached_specialized(id, "native", bounds), nullptr);
        runtime::Program* pruned = runtime::compile_specialized(id, "native", bounds, nullptr, 0);
        EXPECT_EQ(runtime::acquire_cached_specialized(id, "native", bounds), pruned);  // cached
        runtime::release_program(pruned);

        // Rows the bounds allow: the text index is one of the values', input 1 in [-0.5, 1].
        std::mt19937 rng(3);
        const int64_t rows = 256;
        std::vector<float> x = testing::finite(testing::random_inputs(rng, rows, 3)), zeroed;
        for (int64_t r = 0; r < rows; ++r) {
            const std::string& v = values[static_cast<size_t>(r) % values.size()];
            const auto& vocab = p.text_inputs[0].vocabulary;
            const auto at = std::find(vocab.begin(), vocab.end(), v);
            x[r * 3] = at == vocab.end() ? -1.0f : static_cast<float>(at - vocab.begin());
            x[r * 3 + 1] = -0.5f + 0.25f * static_cast<float>(r % 7);
        }
        zeroed = x;
        for (int32_t f : s.unused_inputs)
            for (int64_t r = 0; r < rows; ++r) zeroed[r * 3 + f] = 0.0f;
        std::vector<float> want(rows), got(rows);
        runtime::run_program(full, x.data(), rows, 3, want.data());
        runtime::run_program(pruned, zeroed.data(), rows, 3, got.data());
        for (int64_t r = 0; r < rows; ++r)
            EXPECT_EQ(std::memcmp(&got[r], &want[r], sizeof(float)), 0) << bounds << " row " << r;
        runtime::release_program(pruned);
    }
    runtime::release_program(full);
}

TEST(Pruning, AValueAStrictEncoderRefusesBoundsNothing) {
    const spec::Pipeline p = text_pipeline(true);
    const std::string spec_json = spec::to_json(p);
    const int64_t id = int64_t(12) << 40;
    runtime::load_specialization_spec(id, spec_json.data(), spec_json.size());
    // 'enterprise' is not in the dictionary: rows with it must still fail, so the text input
    // stays read and nothing is decided by it.
    const runtime::SpecializationSummary s = runtime::plan_specialization(id, runtime::encode_bounds({texts(0, {"pro", "enterprise"})}));
    EXPECT_FALSE(s.pruned);
    EXPECT_TRUE(runtime::plan_specialization(id, runtime::encode_bounds({texts(0, {"pro"})})).pruned);
}

}  // namespace
}  // namespace pg_predict
