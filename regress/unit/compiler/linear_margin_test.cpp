// The fused linear margin (kernels/linear_margin.hpp, compiler/fused_margin.cpp): the kernel
// against a plain reference over random terms and inputs (NaN, ±inf, unknown categories, missing
// markers, block and thread tails), torch.addmm's order of sums that the kernel copies, and whole
// programs: a pipeline compiled with the native op gives the bits of the tensor program (the
// gemm strategy keeps it), for float32 and float64 batches, one row or many.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pg_predict/common/error.hpp"
#include "pg_predict/compiler/compile.hpp"
#include "pg_predict/kernels/linear_margin.hpp"
#include "pg_predict/runtime/api.hpp"
#include "pg_predict/spec/steps.hpp"
#include "program_ids.hpp"

namespace pg_predict {
namespace {

using kernels::LinearTerm;
using kernels::LinearTermKind;
using nlohmann::json;
using spec::Step;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// The same bits, or both NaN.
bool same(double a, double b) {
    return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0;
}

// Values that exercise every branch: small integers (categories match them), ±0, NaN, ±inf,
// reals of many magnitudes.
double random_value(std::mt19937& rng) {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    const double p = u(rng);
    if (p < 0.3) return static_cast<double>(std::uniform_int_distribution<int>(-1, 3)(rng));
    if (p < 0.38) return kNaN;
    if (p < 0.40) return u(rng) < 0.5 ? kInf : -kInf;
    if (p < 0.43) return u(rng) < 0.5 ? 0.0 : -0.0;
    return (u(rng) - 0.5) * std::pow(10.0, std::uniform_real_distribution<double>(-3, 3)(rng));
}

// The kernel's definition, term by term and row by row (volatile: no compiler fuses an add).
std::vector<double> reference(const std::vector<double>& x, int64_t rows, int64_t cols,
                              const std::vector<LinearTerm>& terms, double intercept) {
    std::vector<double> out(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
        double acc = 0.0;
        for (const LinearTerm& t : terms) {
            double v = x[r * cols + t.column];
            if (std::isnan(v) || v == t.missing) v = t.statistic;
            double feature = v;
            if (t.kind == LinearTermKind::Scaled) {
                volatile double scaled = v * t.a;
                feature = scaled + t.b;
            } else if (t.kind == LinearTermKind::Indicator) {
                feature = (v == t.a || (std::isnan(v) && std::isnan(t.a))) ? 1.0 : 0.0;
            }
            volatile double product = feature * t.weight;
            acc = acc + product;
        }
        out[r] = acc + intercept;
    }
    return out;
}

std::vector<LinearTerm> random_terms(std::mt19937& rng, int64_t cols, int count) {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::vector<LinearTerm> terms;
    for (int j = 0; j < count; ++j) {
        LinearTerm t;
        t.column = std::uniform_int_distribution<int64_t>(0, cols - 1)(rng);
        t.kind = static_cast<LinearTermKind>(std::uniform_int_distribution<int>(0, 2)(rng));
        t.statistic = u(rng) < 0.3 ? kNaN : static_cast<double>(std::uniform_int_distribution<int>(0, 3)(rng));
        t.missing = u(rng) < 0.7 ? kNaN : 2.0;
        t.a = t.kind == LinearTermKind::Indicator ? (u(rng) < 0.2 ? kNaN : std::floor(u(rng) * 4)) : u(rng) * 4 - 2;
        t.b = u(rng) - 0.5;
        t.weight = u(rng) < 0.1 ? 0.0 : (u(rng) - 0.5) * std::pow(10.0, u(rng) * 4 - 2);
        if (u(rng) < 0.03) t.weight = u(rng) < 0.5 ? kInf : -kInf;  // 0 · inf is NaN, as in the matmul
        terms.push_back(t);
    }
    return terms;
}

TEST(LinearMarginKernel, MatchesTheReferenceBitForBit) {
    std::mt19937 rng(7);
    for (int64_t rows : {0, 1, 2, 127, 128, 129, 300, 9000})  // block and pool-task tails
        for (int64_t cols : {1, 3, 9}) {
            std::vector<double> x(static_cast<size_t>(rows * cols));
            for (double& v : x) v = random_value(rng);
            const std::vector<LinearTerm> terms = random_terms(rng, cols, 1 + static_cast<int>(rng() % 20));
            const double intercept = std::uniform_real_distribution<double>(-3, 3)(rng);
            const std::vector<double> want = reference(x, rows, cols, terms, intercept);
            std::vector<double> got(static_cast<size_t>(rows), -7.0);
            kernels::linear_margin(x.data(), rows, cols, terms, intercept, got.data());
            for (int64_t r = 0; r < rows; ++r)
                ASSERT_TRUE(same(got[r], want[r])) << "rows " << rows << " cols " << cols << " row " << r << ": "
                                                   << got[r] << " vs " << want[r];
            // A float32 batch: each value widened first, as x.double() does.
            std::vector<float> xf(x.begin(), x.end());
            const std::vector<double> widened(xf.begin(), xf.end());
            const std::vector<double> want_f = reference(widened, rows, cols, terms, intercept);
            kernels::linear_margin(xf.data(), rows, cols, terms, intercept, got.data());
            for (int64_t r = 0; r < rows; ++r) ASSERT_TRUE(same(got[r], want_f[r])) << "float32, row " << r;
        }
}

TEST(LinearMarginKernel, PackedTermsRoundTripAndAreChecked) {
    std::mt19937 rng(3);
    const std::vector<LinearTerm> terms = random_terms(rng, 5, 12);
    const std::vector<double> packed = kernels::pack_linear_terms(terms);
    ASSERT_EQ(packed.size(), terms.size() * kernels::kLinearTermFields);
    const std::vector<LinearTerm> back = kernels::unpack_linear_terms(packed.data(), 12, 5);
    for (size_t j = 0; j < terms.size(); ++j) {
        EXPECT_EQ(back[j].column, terms[j].column);
        EXPECT_EQ(back[j].kind, terms[j].kind);
        EXPECT_TRUE(same(back[j].a, terms[j].a) && same(back[j].weight, terms[j].weight));
    }
    std::vector<double> bad = packed;
    bad[0] = 5.0;  // column 5 of 5
    EXPECT_THROW(kernels::unpack_linear_terms(bad.data(), 12, 5), Error);
    bad[0] = 0.5;
    EXPECT_THROW(kernels::unpack_linear_terms(bad.data(), 12, 5), Error);
    bad = packed;
    bad[1] = 3.0;  // no such kind
    EXPECT_THROW(kernels::unpack_linear_terms(bad.data(), 12, 5), Error);
}

// Debian's libtorch (the CPU build) hands addmm to the reference BLAS, whose order of sums the
// kernel copies, so the fused op gives the tensor program's bits. The CUDA flavour links PyTorch's
// own libtorch, whose BLAS blocks the sums: there the two agree to rounding only.
#ifdef PG_PREDICT_WITH_CUDA
constexpr bool kAddmmSumsInOrder = false;
#else
constexpr bool kAddmmSumsInOrder = true;
#endif

// a and b within rounding of a sum whose terms add up to `magnitude` in absolute value.
bool close(double a, double b, double magnitude) {
    if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b)) return same(a, b);
    return std::fabs(a - b) <= 1e-12 * (1.0 + magnitude);
}

// The claim the kernel's order rests on: torch.addmm(b, X, w) for one output column is, bit for
// bit, the products summed in order from +0 and then b (the reference BLAS's dgemm). If a
// libtorch or BLAS changes this, this test says so before the programs disagree.
TEST(LinearMarginKernel, AddmmSumsInOrderThenAddsTheIntercept) {
    std::mt19937 rng(11);
    const auto opts = at::TensorOptions().dtype(at::kDouble);
    for (int64_t rows : {1, 5, 700})
        for (int64_t f : {1, 4, 12, 40}) {
            std::vector<double> x(static_cast<size_t>(rows * f)), w(static_cast<size_t>(f));
            for (double& v : x) v = random_value(rng);
            for (double& v : w) v = std::uniform_real_distribution<double>(-50, 50)(rng);
            double b = std::uniform_real_distribution<double>(-100, 100)(rng);
            const at::Tensor m =
                at::addmm(at::full({1}, b, opts), at::from_blob(x.data(), {rows, f}, opts).clone(),
                          at::from_blob(w.data(), {f, 1}, opts).clone()).contiguous();
            for (int64_t r = 0; r < rows; ++r) {
                double acc = 0.0, magnitude = std::fabs(b);
                for (int64_t l = 0; l < f; ++l) {
                    volatile double product = x[r * f + l] * w[l];
                    acc = acc + product;
                    magnitude += std::fabs(product);
                }
                const double got = m.data_ptr<double>()[r];
                if (kAddmmSumsInOrder)
                    ASSERT_TRUE(same(got, acc + b)) << "rows " << rows << " f " << f << " row " << r;
                else
                    ASSERT_TRUE(close(got, acc + b, magnitude)) << "rows " << rows << " f " << f << " row " << r;
            }
        }
}

TEST(LinearMarginKernel, TorchOpChecksItsInputs) {
    const auto op = c10::Dispatcher::singleton().findSchemaOrThrow("pg_predict::linear_margin", "").typed<
        at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&)>();
    const auto opts = at::TensorOptions().dtype(at::kDouble);
    std::vector<LinearTerm> terms(2);
    terms[0] = {0, LinearTermKind::Number, kNaN, kNaN, 0.0, 0.0, 2.0};
    terms[1] = {2, LinearTermKind::Indicator, 1.0, kNaN, 3.0, 0.0, -1.0};
    std::vector<double> packed = kernels::pack_linear_terms(terms);
    const at::Tensor t = at::from_blob(packed.data(), {2, kernels::kLinearTermFields}, opts).clone();
    const at::Tensor b = at::full({1}, 0.5, opts);
    const at::Tensor x = at::tensor({1.0, 9.0, 3.0, kNaN, 9.0, kNaN}, opts).view({2, 3});
    const at::Tensor m = op.call(x, t, b);
    ASSERT_EQ(m.sizes(), (at::IntArrayRef{2, 1}));
    EXPECT_EQ(m[0][0].item<double>(), 2.0 - 1.0 + 0.5);  // x0 = 1, x2 = 3 is the category
    EXPECT_TRUE(std::isnan(m[1][0].item<double>()));       // x0 NaN without an impute
    EXPECT_EQ(op.call(x.to(at::kFloat), t, b)[0][0].item<double>(), 1.5);
    EXPECT_THROW(op.call(x.narrow(1, 0, 2), t, b), c10::Error);           // term 1 reads column 2
    EXPECT_THROW(op.call(x, t.narrow(1, 0, 6), b), c10::Error);           // fields missing
    EXPECT_THROW(op.call(x, t, at::zeros({2}, opts)), c10::Error);         // two intercepts
    EXPECT_THROW(op.call(x.to(at::kInt), t, b), c10::Error);              // not a float batch
}

// --- whole programs --------------------------------------------------------------------------

Step step(const std::string& op, json params) {
    Step s;
    s.op = spec::op_from_name(op).value();
    s.params = std::move(params);
    return s;
}

struct Built {
    spec::Pipeline pipeline;
    int64_t width = 0;  // features the linear model reads
};

// A random step list of the fused shape over `w` columns: [impute]? [one_hot | affine]?, with
// NaN categories, dropped categories and a finite missing marker now and then; `w` becomes its
// output width.
std::vector<Step> random_part_steps(std::mt19937& rng, size_t& w) {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::vector<Step> steps;
    if (u(rng) < 0.7) {
        std::vector<double> stats(w);
        for (double& s : stats) s = std::floor(u(rng) * 4);
        json params = {{"statistics", spec::numbers_to_json(stats)}};
        if (u(rng) < 0.3) params["missing_value"] = 2.0;
        steps.push_back(step("impute", params));
    }
    const double kind = u(rng);
    if (kind < 0.4) {
        json cats = json::array();
        std::vector<int32_t> drop;
        size_t out = 0;
        for (size_t c = 0; c < w; ++c) {
            std::vector<double> k;
            for (double v = -1.0; v <= 3.0; v += 1.0)
                if (u(rng) < 0.6) k.push_back(v);
            if (u(rng) < 0.2) k.push_back(kNaN);
            if (k.empty()) k.push_back(1.0);
            drop.push_back(u(rng) < 0.3 ? static_cast<int32_t>(rng() % k.size()) : -1);
            out += k.size() - (drop.back() >= 0 ? 1 : 0);
            cats.push_back(spec::numbers_to_json(k));
        }
        if (out == 0) return steps;  // every category dropped: leave the numbers
        steps.push_back(step("one_hot", {{"categories", cats}, {"drop", drop}}));
        w = out;
    } else if (kind < 0.7) {
        std::vector<double> scale(w), offset(w);
        for (double& s : scale) s = u(rng) < 0.1 ? 0.0 : (u(rng) - 0.5) * 8;
        for (double& o : offset) o = u(rng) - 0.5;
        steps.push_back(step("affine", {{"scale", spec::numbers_to_json(scale)}, {"offset", spec::numbers_to_json(offset)}}));
    }
    return steps;
}

spec::Pipeline random_pipeline(std::mt19937& rng, int inputs, bool with_concat, bool regression) {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    spec::Pipeline p;
    p.source_format = "test";
    for (int i = 0; i < inputs; ++i) p.features.push_back("f" + std::to_string(i));
    size_t width = 0;
    if (with_concat) {
        Step ct;
        ct.op = spec::Op::Concat;
        ct.params = json::object();
        for (int parts = 1 + static_cast<int>(rng() % 3); parts > 0; --parts) {
            Step::Part part;
            for (int c = 1 + static_cast<int>(rng() % 3); c > 0; --c) part.columns.push_back(static_cast<int32_t>(rng() % inputs));
            size_t w = part.columns.size();
            part.steps = random_part_steps(rng, w);
            width += w;
            ct.parts.push_back(std::move(part));
        }
        p.steps.push_back(std::move(ct));
    } else {
        width = static_cast<size_t>(inputs);
        p.steps = random_part_steps(rng, width);
    }
    std::vector<double> coef(width);
    for (double& c : coef) c = u(rng) < 0.1 ? 0.0 : (u(rng) - 0.5) * 6;
    if (regression) {
        p.task = spec::Task::Regression;
        p.transform = spec::PostTransform::Identity;
    } else {
        p.task = spec::Task::Classification;
        p.transform = spec::PostTransform::Logistic;
        p.classes = {0.0, 1.0};
    }
    p.model.num_features = static_cast<int32_t>(width);
    p.model.num_groups = 1;
    p.model.base_margin.assign(1, 0.0f);
    p.estimator = step("linear", {{"coef", json::array({spec::numbers_to_json(coef)})},
                                  {"intercept", spec::numbers_to_json({u(rng) * 2 - 1})}});
    spec::validate(p);
    return p;
}

template <typename T>
std::vector<float> run(const std::string& bytes, const std::vector<T>& x, int64_t rows, int64_t cols, int width) {
    runtime::Program* prog = runtime::load_program(testing::next_program_id(), bytes.data(), bytes.size());
    std::vector<float> out(static_cast<size_t>(rows * width), -12345.0f);
    runtime::run_program(prog, x.data(), rows, cols, out.data());
    runtime::release_program(prog);
    return out;
}

// The program's buffer of terms (its code is stored deflated; the buffer names are not).
bool uses_op(const std::string& bytes) { return bytes.find("linear_terms") != std::string::npos; }

TEST(LinearMarginProgram, GivesTheTensorProgramsBits) {
    std::mt19937 rng(2024);
    for (int trial = 0; trial < 60; ++trial) {
        const int inputs = 1 + static_cast<int>(rng() % 6);
        const bool regression = trial % 3 == 0;
        const spec::Pipeline p = random_pipeline(rng, inputs, trial % 4 != 0, regression);
        {
            const std::string native = compiler::compile(p, compiler::Strategy::Native);
            const std::string tensor = compiler::compile(p, compiler::Strategy::Gemm);
            ASSERT_TRUE(uses_op(native)) << spec::to_json(p);
            ASSERT_FALSE(uses_op(tensor));
            const int width = p.output_width();
            for (int64_t rows : {1, 7, 5000}) {
                std::vector<double> xd(static_cast<size_t>(rows * inputs));
                for (double& v : xd) v = random_value(rng);
                const std::vector<float> xf(xd.begin(), xd.end());
                const std::vector<float> want_f = run(tensor, xf, rows, inputs, width);
                const std::vector<float> got_f = run(native, xf, rows, inputs, width);
                const std::vector<float> want_d = run(tensor, xd, rows, inputs, width);
                const std::vector<float> got_d = run(native, xd, rows, inputs, width);
                // Where addmm blocks its sums (kAddmmSumsInOrder), the float32 results may differ
                // by a rounding of the margin.
                const auto agree = [](float a, float b) {
                    return kAddmmSumsInOrder ? same(a, b) : close(a, b, 1e6 * std::max(1.0f, std::fabs(b)));
                };
                for (size_t i = 0; i < want_f.size(); ++i) {
                    ASSERT_TRUE(agree(got_f[i], want_f[i])) << "float32 batch, value " << i << ": " << got_f[i]
                                                            << " vs " << want_f[i] << "\n" << spec::to_json(p);
                    ASSERT_TRUE(agree(got_d[i], want_d[i])) << "float64 batch, value " << i << ": " << got_d[i]
                                                            << " vs " << want_d[i] << "\n" << spec::to_json(p);
                }
            }
        }
    }
}

// On a GPU the program takes its tensor branch (the op is CPU only): the CPU's values within
// rounding. Skipped where CUDA is not usable (the CPU build, a machine without a GPU).
TEST(LinearMarginProgram, CudaTakesTheTensorBranch) {
    if (const char* why = runtime::cuda_unavailable_reason()) GTEST_SKIP() << why;
    std::mt19937 rng(99);
    for (int trial = 0; trial < 8; ++trial) {
        const int inputs = 2 + trial % 4;
        const spec::Pipeline p = random_pipeline(rng, inputs, trial % 2 == 0, trial % 3 == 0);
        const std::string bytes = compiler::compile(p, compiler::Strategy::Native);
        ASSERT_TRUE(uses_op(bytes));
        const int64_t rows = 3000;
        std::vector<float> x(static_cast<size_t>(rows * inputs));
        for (float& v : x) v = static_cast<float>(random_value(rng));
        runtime::Program* cpu = runtime::load_program(testing::next_program_id(), bytes.data(), bytes.size());
        runtime::Program* gpu = runtime::acquire_on_device(cpu, runtime::Device::Cuda);
        const int width = p.output_width();
        std::vector<float> want(static_cast<size_t>(rows * width)), got(want.size());
        runtime::run_program(cpu, x.data(), rows, inputs, want.data());
        runtime::run_program(gpu, x.data(), rows, inputs, got.data());
        for (size_t i = 0; i < want.size(); ++i)
            ASSERT_TRUE(same(got[i], want[i]) || std::fabs(got[i] - want[i]) <= 1e-5f * std::max(1.0f, std::fabs(want[i])))
                << "value " << i << ": gpu " << got[i] << ", cpu " << want[i] << "\n" << spec::to_json(p);
        runtime::release_program(gpu);
        runtime::release_program(cpu);
    }
}

TEST(LinearMarginProgram, OtherShapesKeepTheTensorProgram) {
    std::mt19937 rng(5);
    spec::Pipeline p = random_pipeline(rng, 3, false, false);
    // a step the kernel does not know
    p.steps = {step("normalize", {{"norm", "l2"}})};
    p.model.num_features = 3;
    p.estimator.params["coef"] = json::array({spec::numbers_to_json({1.0, 2.0, 3.0})});
    spec::validate(p);
    EXPECT_FALSE(uses_op(compiler::compile(p, compiler::Strategy::Native)));
    // two steps after the impute
    p.steps = {step("affine", {{"scale", {1.0, 2.0, 3.0}}, {"offset", {0.0, 0.0, 0.0}}}),
               step("affine", {{"scale", {1.0, 2.0, 3.0}}, {"offset", {0.0, 0.0, 0.0}}})};
    spec::validate(p);
    EXPECT_FALSE(uses_op(compiler::compile(p, compiler::Strategy::Native)));
    // the same model with one affine takes the op
    p.steps.pop_back();
    EXPECT_TRUE(uses_op(compiler::compile(p, compiler::Strategy::Native)));
    // more than one output: softmax over three groups
    p.transform = spec::PostTransform::Softmax;
    p.classes = {0.0, 1.0, 2.0};
    p.model.num_groups = 3;
    p.model.base_margin.assign(3, 0.0f);
    p.estimator.params = {{"coef", json::array({spec::numbers_to_json({1.0, 2.0, 3.0}),
                                                spec::numbers_to_json({0.0, 2.0, 3.0}),
                                                spec::numbers_to_json({1.0, 0.0, 3.0})})},
                          {"intercept", {0.0, 1.0, 2.0}}};
    spec::validate(p);
    EXPECT_FALSE(uses_op(compiler::compile(p, compiler::Strategy::Native)));
}

}  // namespace
}  // namespace pg_predict
