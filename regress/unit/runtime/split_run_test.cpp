// runtime::run_program scores a program that splits (native trees + base margin + an
// elementwise link, one group) through the kernel and the program's own tail, without the
// TorchScript interpreter. Those scores must be, bit for bit, what the TorchScript program
// itself gives for the same batch: random ensembles, every link, both layouts, inputs with NaN
// and ±inf, batch lengths around the vector widths and the tail's 16384-row calls.
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/script.h>

#include "pg_predict/compiler/compile.hpp"
#include "pg_predict/runtime/api.hpp"
#include "tree_gen.hpp"
#include "program_ids.hpp"

namespace pg_predict {
namespace {

using spec::Comparison;
using spec::PostTransform;
using spec::Task;

struct Case {
    const char* name;
    Task task;
    PostTransform link;
    int features, trees, depth;
    Comparison cmp;
};

const Case kCases[] = {
    {"binary logistic, depth 8", Task::Classification, PostTransform::Logistic, 28, 120, 8, Comparison::Less},
    {"regression, <=", Task::Regression, PostTransform::Identity, 40, 60, 6, Comparison::LessEqual},
    {"two-sided decision", Task::Classification, PostTransform::TwoSided, 8, 40, 7, Comparison::LessEqual},
    {"complement", Task::Classification, PostTransform::Complement, 8, 40, 3, Comparison::Less},
    {"deep trees: generic layout", Task::Classification, PostTransform::Logistic, 12, 20, 14, Comparison::Less},
};

TEST(SplitRun, EqualsTheTorchScriptProgramBitForBit) {
    for (const Case& c : kCases) {
        std::mt19937 rng(static_cast<uint32_t>(c.features * 31 + c.depth));
        auto p = testing::make_pipeline(c.task, c.link, 1, c.features, c.cmp);
        testing::add_trees(p, rng, c.trees, testing::TreeShape{c.depth, 0.3, true});
        const std::string bytes = compiler::compile(p, compiler::Strategy::Native);
        runtime::Program* prog = runtime::load_program(testing::next_program_id(), bytes.data(), bytes.size());
        ASSERT_TRUE(runtime::program_splits(prog)) << c.name;
        std::istringstream in(bytes);
        torch::jit::Module module = torch::jit::load(in, torch::kCPU);
        const int width = runtime::program_output_width(prog);
        for (int64_t rows : {1, 15, 16, 33, 64, 1000, 4096, 20001}) {
            std::vector<float> x = testing::random_inputs(rng, rows, c.features);
            std::vector<float> got(static_cast<size_t>(rows * width));
            runtime::run_program(prog, x.data(), rows, c.features, got.data());
            c10::InferenceMode inference;
            const at::Tensor want =
                module.forward({torch::from_blob(x.data(), {rows, c.features}, torch::kFloat32)}).toTensor().contiguous();
            ASSERT_EQ(want.numel(), rows * width) << c.name;
            EXPECT_EQ(0, std::memcmp(got.data(), want.data_ptr<float>(), sizeof(float) * got.size()))
                << c.name << ": " << rows << " rows differ from the TorchScript program";
        }
        runtime::release_program(prog);
    }
}

}  // namespace
}  // namespace pg_predict
