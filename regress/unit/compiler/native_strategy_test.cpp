// The native strategy end to end: spec → program (packed model in buffers, margin() calls
// ops.pg_predict.tree_ensemble) → bytes → torch::jit::load → scores equal to the reference.
// StrategyTest (strategies_test.cpp) runs the shared cases with it; these are its own.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits.h>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/script.h>

#include "pg_predict/compiler/compile.hpp"
#include "pg_predict/kernels/tree_ensemble.hpp"
#include "pg_predict/runtime/api.hpp"
#include "tree_gen.hpp"
#include "program_ids.hpp"

namespace pg_predict {
namespace {

using compiler::Strategy;
using spec::Comparison;
using spec::PostTransform;
using spec::Task;
using testing::TreeShape;

std::vector<float> run_bytes(const std::string& bytes, const std::vector<float>& x, int64_t rows, int64_t cols) {
    runtime::Program* prog = runtime::load_program(testing::next_program_id(), bytes.data(), bytes.size());
    std::vector<float> out(static_cast<size_t>(rows * runtime::program_output_width(prog)));
    runtime::run_program(prog, x.data(), rows, cols, out.data());
    runtime::release_program(prog);
    return out;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    int bad = 0;
    for (size_t i = 0; i < want.size() && bad < 5; ++i)
        if (!(std::fabs(got[i] - want[i]) <= 1e-5f * std::max(1.0f, std::fabs(want[i])))) {
            ++bad;
            ADD_FAILURE() << what << ": [" << i << "] got " << got[i] << ", reference " << want[i];
        }
}

void expect_matches_reference(const spec::Pipeline& p, int64_t rows, uint32_t seed, const std::string& what) {
    std::mt19937 rng(seed);
    const std::vector<float> x = testing::random_inputs(rng, rows, p.model.num_features);
    std::vector<float> want(static_cast<size_t>(rows * p.output_width()));
    spec::reference_predict(p, x.data(), rows, want.data());
    expect_close(run_bytes(compiler::compile(p, Strategy::Native), x, rows, p.model.num_features), want, what);
}

TEST(NativeStrategy, ProgramCallsTheNativeOpOverItsOwnBuffers) {
    std::mt19937 rng(1);
    auto p = testing::make_pipeline(Task::Regression, PostTransform::Identity, 1, 6, Comparison::Less);
    testing::add_trees(p, rng, 20, TreeShape{6, 0.3, true});
    const std::string bytes = compiler::compile(p, Strategy::Native);
    std::istringstream in(bytes);
    torch::jit::Module m = torch::jit::load(in, torch::kCPU);
    int calls = 0;
    for (const torch::jit::Node* node : m.get_method("margin").graph()->nodes())
        calls += node->kind() == c10::Symbol::fromQualString("pg_predict::tree_ensemble");
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(m.attr("native_nodes").toTensor().scalar_type(), at::kInt);
    EXPECT_EQ(m.attr("native_aux").toTensor().scalar_type(), at::kInt);
    EXPECT_EQ(m.attr("native_meta").toTensor().scalar_type(), at::kLong);
    EXPECT_EQ(m.attr("native_leaves").toTensor().scalar_type(), at::kFloat);
    EXPECT_EQ(m.attr("num_features").toInt(), 6);
}

TEST(NativeStrategy, MarginsAreTheKernelsPlusBaseMargin) {
    // Identity link: the program's output is exactly the kernel's margins + base margin.
    std::mt19937 rng(2);
    auto p = testing::make_pipeline(Task::Classification, PostTransform::Identity, 3, 11, Comparison::LessEqual);
    testing::add_trees(p, rng, 45, TreeShape{7, 0.3, true});
    const int64_t rows = 777;
    const std::vector<float> x = testing::random_inputs(rng, rows, 11);
    const kernels::PackedEnsemble packed = kernels::pack(p.model);
    std::vector<float> margins(rows * 3);
    kernels::score(kernels::make_view(packed), x.data(), rows, 11, margins.data());
    for (int64_t r = 0; r < rows; ++r)
        for (int g = 0; g < 3; ++g) margins[r * 3 + g] += p.model.base_margin[g];
    const std::vector<float> got = run_bytes(compiler::compile(p, Strategy::Native), x, rows, 11);
    EXPECT_EQ(got, margins);
}

TEST(NativeStrategy, DeepTreesUseTheGenericLayout) {
    for (Comparison cmp : {Comparison::Less, Comparison::LessEqual}) {
        std::mt19937 rng(3);
        auto p = testing::make_pipeline(Task::Classification, PostTransform::Softmax, 3, 9, cmp);
        testing::add_trees(p, rng, 30, TreeShape{kernels::kMaxPerfectDepth + 4, 0.3, true});
        ASSERT_GT(p.model.max_depth(), kernels::kMaxPerfectDepth);
        ASSERT_EQ(kernels::pack(p.model).meta[kernels::kMetaLayout], int64_t(kernels::Layout::Generic));
        expect_matches_reference(p, 2500, 31, "deep");
    }
}

TEST(NativeStrategy, WideModelsUseTheBitvectorLayout) {
    std::mt19937 rng(4);
    auto p = testing::make_pipeline(Task::Classification, PostTransform::Logistic, 1, 200, Comparison::Less);
    testing::add_trees(p, rng, 40, TreeShape{6, 0.25, true});
    // A build without the layout (PG_PREDICT_BITVECTOR=OFF) packs them generic, with the same results.
    const auto layout = kernels::bitvector_built() ? kernels::Layout::Bitvector : kernels::Layout::Generic;
    ASSERT_EQ(kernels::pack(p.model).meta[kernels::kMetaLayout], int64_t(layout));
    expect_matches_reference(p, 1200, 41, "wide");
}

TEST(NativeStrategy, PerfectLayoutBothComparisonsManyRowsAndThreads) {
    for (Comparison cmp : {Comparison::Less, Comparison::LessEqual}) {
        std::mt19937 rng(5);
        auto p = testing::make_pipeline(Task::Classification, PostTransform::Softmax, 4, 28, cmp);
        // nearly full trees (too many leaves for the bitvector layout)
        testing::add_trees(p, rng, 4 * 37, TreeShape{kernels::kMaxPerfectDepth, 0.1, true});
        ASSERT_EQ(kernels::pack(p.model).meta[kernels::kMetaLayout], int64_t(kernels::Layout::Perfect));
        runtime::set_num_threads(2);
        expect_matches_reference(p, 20011, 51, "perfect, 2 threads");
        runtime::set_num_threads(1);
        expect_matches_reference(p, 1001, 52, "perfect, 1 thread");
    }
}

// Fresh process: the parent compiles a program and its expected outputs into files, then runs
// this binary again with only the child test selected; the child loads the bytes with
// torch::jit::load (runtime::load_program) in a process that never compiled anything.
const char* kChildEnv = "PG_PREDICT_NATIVE_CHILD_DIR";

void write_file(const std::string& path, const void* data, size_t n) {
    std::ofstream out(path, std::ios::binary);
    out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
    ASSERT_TRUE(out.good()) << path;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(NativeStrategy, SavedProgramLoadsInAFreshProcess) {
    std::mt19937 rng(6);
    auto p = testing::make_pipeline(Task::Classification, PostTransform::Logistic, 1, 10, Comparison::Less);
    testing::add_trees(p, rng, 50, TreeShape{8, 0.3, true});
    const int64_t rows = 500;
    const std::vector<float> x = testing::random_inputs(rng, rows, 10);
    std::vector<float> want(rows * 2);
    spec::reference_predict(p, x.data(), rows, want.data());
    const std::string bytes = compiler::compile(p, Strategy::Native);

    char dir_template[] = "/tmp/pg_predict_native_XXXXXX";
    ASSERT_NE(mkdtemp(dir_template), nullptr);
    const std::string dir = dir_template;
    write_file(dir + "/program.pt", bytes.data(), bytes.size());
    write_file(dir + "/x.f32", x.data(), x.size() * sizeof(float));
    write_file(dir + "/want.f32", want.data(), want.size() * sizeof(float));

    char exe[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    ASSERT_GT(n, 0);
    exe[n] = '\0';
    const std::string cmd = std::string(kChildEnv) + "='" + dir + "' '" + exe +
                            "' --gtest_filter=NativeStrategyChild.LoadAndRun > '" + dir + "/child.log' 2>&1";
    const int rc = std::system(cmd.c_str());
    EXPECT_EQ(rc, 0) << read_file(dir + "/child.log");
    EXPECT_NE(read_file(dir + "/child.log").find("[  PASSED  ] 1 test"), std::string::npos)
        << read_file(dir + "/child.log");
    for (const char* f : {"program.pt", "x.f32", "want.f32", "child.log"}) std::remove((dir + "/" + f).c_str());
    rmdir(dir.c_str());
}

TEST(NativeStrategyChild, LoadAndRun) {
    const char* dir = std::getenv(kChildEnv);
    if (dir == nullptr) GTEST_SKIP() << "runs as the child of SavedProgramLoadsInAFreshProcess";
    const std::string bytes = read_file(std::string(dir) + "/program.pt");
    const std::string xs = read_file(std::string(dir) + "/x.f32"), ws = read_file(std::string(dir) + "/want.f32");
    std::vector<float> x(xs.size() / 4), want(ws.size() / 4);
    std::memcpy(x.data(), xs.data(), xs.size());
    std::memcpy(want.data(), ws.data(), ws.size());
    ASSERT_FALSE(bytes.empty());
    expect_close(run_bytes(bytes, x, static_cast<int64_t>(x.size() / 10), 10), want, "fresh process");
}

}  // namespace
}  // namespace pg_predict
