// Op tensor, compiled (compiler/tensor_featurizers.cpp) against the spec's own evaluation
// (spec/tensor_steps.cpp): every function, over rows with NaN, ±inf, zeros and ties, operands
// that read columns in any order, constants only, or both. The program computes in float64 and
// returns float32, so the two agree to float32 rounding; NaN where the other has NaN.
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "pg_predict/common/error.hpp"
#include "pg_predict/compiler/compile.hpp"
#include "pg_predict/runtime/api.hpp"
#include "pg_predict/spec/pipeline.hpp"
#include "pg_predict/spec/steps.hpp"
#include "program_ids.hpp"

namespace pg_predict {
namespace {

using nlohmann::json;

constexpr int kColumns = 6;

// A transformer over kColumns inputs whose one step is `step`.
spec::Pipeline transformer(const json& params) {
    spec::Pipeline p;
    p.task = spec::Task::Transform;
    p.source_format = "test";
    p.features.assign(kColumns, "");
    spec::Step s;
    s.op = spec::Op::Tensor;
    s.params = params;
    p.steps = {s};
    std::vector<int32_t> vocab(kColumns, -1);
    const int32_t width = spec::check_steps(p.steps, vocab, "steps");
    p.model.num_features = width;
    p.model.num_groups = width;
    p.model.base_margin.assign(static_cast<size_t>(width), 0.0f);
    spec::validate(p);
    return p;
}

std::vector<float> rows() {
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> x = {0, 0, 0, 0, 0, 0,  1, 1, 1, 1, 1, 1,  nan, 1, 2, nan, -inf, inf,
                            -2, 3, -2, 3, 0.5f, -0.5f,  inf, inf, -inf, 1, 0, -1};
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    for (int r = 0; r < 40; ++r)
        for (int c = 0; c < kColumns; ++c) x.push_back(r % 7 == 0 ? std::round(normal(rng)) : normal(rng));
    return x;
}

void expect_compiled_equals_spec(const json& params) {
    SCOPED_TRACE(params.dump());
    const spec::Pipeline p = transformer(params);
    const std::vector<float> x = rows();
    const int64_t n = static_cast<int64_t>(x.size()) / kColumns;
    const int width = p.output_width();
    std::vector<float> want(static_cast<size_t>(n * width)), got(want.size(), -12345.0f);
    spec::reference_predict(p, x.data(), n, want.data());
    const std::string bytes = compiler::compile(p, compiler::Strategy::Auto);
    runtime::Program* prog = runtime::load_program(testing::next_program_id(), bytes.data(), bytes.size());
    runtime::run_program(prog, x.data(), n, kColumns, got.data());
    runtime::release_program(prog);
    for (size_t i = 0; i < want.size(); ++i) {
        if (std::isnan(want[i])) {
            EXPECT_TRUE(std::isnan(got[i])) << "entry " << i << ": " << got[i];
            continue;
        }
        const double tol = 1e-6 * std::max(1.0, std::fabs(static_cast<double>(want[i])));
        if (std::isinf(want[i])) EXPECT_EQ(got[i], want[i]) << "entry " << i;
        else EXPECT_NEAR(got[i], want[i], tol) << "entry " << i;
    }
}

TEST(TensorStep, EveryBinaryFunctionOnColumnsAndConstants) {
    for (const spec::TensorFunction& f : spec::tensor_functions()) {
        if (f.family != spec::TensorFamily::Binary) continue;
        // Columns against columns (reordered, repeated), then a column against constants.
        expect_compiled_equals_spec({{"function", f.name}, {"operands", {{0, 1, 2, 5, 4}, {3, 3, 5, 0, 1}}}});
        expect_compiled_equals_spec({{"function", f.name}, {"operands", {{0, 1, 2}, {6, 7, 8}}},
                                     {"constants", {0.5, -1.0, 0.0}}});
        expect_compiled_equals_spec({{"function", f.name}, {"operands", {{6, 7}, {1, 2}}}, {"constants", {2.0, 0.0}}});
    }
}

TEST(TensorStep, WhereWithComputedAndConstantBranches) {
    expect_compiled_equals_spec({{"function", "where"}, {"operands", {{0, 1, 2}, {3, 4, 5}, {6, 6, 1}}}, {"constants", {7.5}}});
}

TEST(TensorStep, EveryReductionAndSoftmaxOverGroups) {
    for (const spec::TensorFunction& f : spec::tensor_functions()) {
        if (f.family != spec::TensorFamily::Reduce && f.family != spec::TensorFamily::Grouped) continue;
        expect_compiled_equals_spec({{"function", f.name}, {"operands", {{0, 1, 2, 3, 4, 5}}}, {"group", 3}});
        expect_compiled_equals_spec({{"function", f.name}, {"operands", {{5, 0, 4, 1}}}, {"group", 2}});
        expect_compiled_equals_spec({{"function", f.name}, {"operands", {{2, 3}}}, {"group", 1}});
    }
}

TEST(TensorStep, TakeByComputedIndices) {
    // Indices read from columns: NaN, infinities, fractions, negatives (from the end) and out of
    // range (NaN) among them; candidates from columns and constants.
    expect_compiled_equals_spec({{"function", "take"}, {"operands", {{0, 1, 2}, {3, 4, 5, 4, 5, 6, 3, 3, 7}}},
                                 {"constants", {0.5, -2.0}}, {"group", 3}});
    expect_compiled_equals_spec({{"function", "take"}, {"operands", {{6, 7}, {0, 1, 2, 3}}}, {"constants", {1.0, -1.0}},
                                 {"group", 2}});
}

TEST(TensorStep, PairwiseCouplingCompiledAndAsLibsvm) {
    // Any numbers, NaN and infinities included, compiled as the spec evaluates them.
    expect_compiled_equals_spec({{"function", "pairwise_coupling"}, {"operands", {{6, 0, 1, 2, 6, 3, 4, 5, 6}}},
                                 {"constants", {0.0}}, {"group", 3}});
    expect_compiled_equals_spec({{"function", "pairwise_coupling"}, {"operands", {{6, 0, 1, 6, 6, 2, 3, 6}}},
                                 {"constants", {0.0}}, {"group", 2}});
    // Consistent pairwise probabilities r_ij = p_i / (p_i + p_j) give back p, within libsvm's
    // stopping tolerance 0.005 / k.
    const double want[3] = {0.5, 0.3, 0.2};
    double r[9] = {0}, got[3];
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            if (i != j) r[i * 3 + j] = want[i] / (want[i] + want[j]);
    spec::pairwise_coupling(r, 3, got);
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(got[i], want[i], 0.005 / 3);
    EXPECT_NEAR(got[0] + got[1] + got[2], 1.0, 1e-12);
    const double two[4] = {0.0, 0.8, 0.2, 0.0};
    spec::pairwise_coupling(two, 2, got);
    EXPECT_NEAR(got[0], 0.8, 0.005 / 2);
    const double with_nan[4] = {0.0, NAN, NAN, 0.0};
    spec::pairwise_coupling(with_nan, 2, got);
    EXPECT_TRUE(std::isnan(got[0]) && std::isnan(got[1]));
}

TEST(TensorStep, MalformedStepsAreRefused) {
    auto refused = [](const json& params, const std::string& says) {
        try {
            transformer(params);
            ADD_FAILURE() << "accepted " << params.dump();
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
        }
    };
    refused({{"function", "frobnicate"}, {"operands", {{0}, {1}}}}, "not known");
    refused({{"function", "add"}, {"operands", {{0}}}}, "takes 2 operands");
    refused({{"function", "add"}, {"operands", {{0, 1}, {2}}}}, "equal lengths");
    refused({{"function", "add"}, {"operands", {{0}, {6}}}}, "beyond");
    refused({{"function", "add"}, {"operands", {{0}, {-1}}}}, "entry indices");
    refused({{"function", "reduce_max"}, {"operands", {{0, 1, 2}}}, {"group", 2}}, "does not divide");
    refused({{"function", "reduce_max"}, {"operands", {{0, 1}}}, {"group", 0}}, "positive integer");
    refused({{"function", "reduce_max"}, {"operands", {{0, 1}}}, {"group", 1e300}}, "positive integer");
    refused({{"function", "mul"}, {"operands", {{0}, {1}}}, {"group", 1}}, "take a group");
    refused({{"function", "pairwise_coupling"}, {"operands", {{0, 1, 2}}}, {"group", 2}}, "k x k entries");
    refused({{"function", "take"}, {"operands", {{0, 1}, {2, 3, 4}}}, {"group", 2}}, "candidates for each index");
    refused({{"function", "pairwise_coupling"}, {"operands", {{0}}}, {"group", 1}}, "k x k entries");
}

}  // namespace
}  // namespace pg_predict
