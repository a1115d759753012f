// SplineTransformer: the importer's per-interval polynomials against the cardinal cubic B-spline's
// textbook values (knots 0, 1, ..., 8: B(1) = 1/6, B(2) = 4/6, B(0.5) = 1/48, B(1.5) = 23/48), each
// extrapolation beyond the knots, and the compiled program against the reference evaluator.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pg_predict/common/error.hpp"
#include "pg_predict/compiler/compile.hpp"
#include "pg_predict/importers/sklearn.hpp"
#include "pg_predict/runtime/api.hpp"
#include "pg_predict/spec/pipeline.hpp"

namespace pg_predict {
namespace {

using nlohmann::json;

spec::Pipeline splines(const std::string& extrapolation, bool include_bias = true, int degree = 3) {
    json knots = json::array();
    for (int i = 0; i <= 8; ++i) knots.push_back(i);
    json doc = {{"format", "sklearn"}, {"version", 1}, {"task", "transformer"},
                {"inputs", {{{"name", "x"}, {"type", "numeric"}}}},
                {"steps", {{{"type", "SplineTransformer"}, {"degree", degree}, {"extrapolation", extrapolation},
                            {"include_bias", include_bias}, {"knots", {knots}}}}}};
    return importers::import_sklearn(doc);
}

std::vector<float> run(const spec::Pipeline& p, const std::vector<float>& x) {
    static int64_t id = int64_t(13) << 40;  // program ids of their own
    const std::string bytes = compiler::compile(p, compiler::Strategy::Native);
    runtime::Program* prog = runtime::load_program(++id, bytes.data(), bytes.size());
    std::vector<float> out(x.size() * static_cast<size_t>(p.output_width()));
    runtime::run_program(prog, x.data(), static_cast<int64_t>(x.size()), 1, out.data());
    runtime::release_program(prog);
    std::vector<float> ref(out.size());
    spec::reference_predict(p, x.data(), static_cast<int64_t>(x.size()), ref.data());
    for (size_t i = 0; i < out.size(); ++i) {
        if (std::isnan(ref[i])) EXPECT_TRUE(std::isnan(out[i])) << i;
        else EXPECT_NEAR(out[i], ref[i], 1e-6) << i;
    }
    return out;
}

void expect_row(const std::vector<float>& out, size_t row, const std::vector<double>& want) {
    for (size_t k = 0; k < want.size(); ++k) {
        const float got = out[row * want.size() + k];
        if (std::isnan(want[k])) EXPECT_TRUE(std::isnan(got)) << "row " << row << " spline " << k;
        else EXPECT_NEAR(got, want[k], 1e-6) << "row " << row << " spline " << k;
    }
}

TEST(SklearnSplines, CubicBasisInsideTheKnots) {
    const spec::Pipeline p = splines("constant");
    EXPECT_EQ(p.output_width(), 5);  // 9 knots of degree 3: 5 splines over [3, 5]
    const auto out = run(p, {3.5f, 4.0f, 5.0f, 3.0f});
    expect_row(out, 0, {1 / 48., 23 / 48., 23 / 48., 1 / 48., 0});
    expect_row(out, 1, {0, 1 / 6., 4 / 6., 1 / 6., 0});
    expect_row(out, 2, {0, 0, 1 / 6., 4 / 6., 1 / 6.});  // the last knot is inside
    expect_row(out, 3, {1 / 6., 4 / 6., 1 / 6., 0, 0});
}

TEST(SklearnSplines, BeyondTheKnots) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    // constant: the first / last 3 splines keep their boundary value, the others are 0
    auto out = run(splines("constant"), {10.0f, -1.0f, nan});
    expect_row(out, 0, {0, 0, 1 / 6., 4 / 6., 1 / 6.});
    expect_row(out, 1, {1 / 6., 4 / 6., 1 / 6., 0, 0});
    expect_row(out, 2, {NAN, NAN, NAN, NAN, NAN});
    // linear: value + slope · distance (slopes at 5 of B_2, B_3, B_4: -1/2, 0, 1/2)
    out = run(splines("linear"), {7.0f});
    expect_row(out, 0, {0, 0, 1 / 6. - 1.0, 4 / 6., 1 / 6. + 1.0});
    // continue: the outer polynomials (x = 6, 1 past the end: they still sum to 1)
    out = run(splines("continue"), {6.0f});
    expect_row(out, 0, {0, -1 / 6., 2 / 3., -5 / 6., 4 / 3.});
    // error: NaN beyond the knots, the values inside
    out = run(splines("error"), {5.5f, 4.0f});
    expect_row(out, 0, {NAN, NAN, NAN, NAN, NAN});
    expect_row(out, 1, {0, 1 / 6., 4 / 6., 1 / 6., 0});
    // include_bias = false drops the last spline
    out = run(splines("constant", false), {4.0f});
    expect_row(out, 0, {0, 1 / 6., 4 / 6., 1 / 6.});
}

TEST(SklearnSplines, RefusalsNameTheParameter) {
    try {
        splines("mirror");
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("extrapolation"), std::string::npos) << e.what();
    }
    EXPECT_THROW(splines("constant", true, 4), Error);  // 9 knots are too few for degree 4
}

}  // namespace
}  // namespace pg_predict
