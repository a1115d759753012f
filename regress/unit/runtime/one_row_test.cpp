// The per-row path's shortcut (runtime/one_row.cpp, kernels/one_row*.cpp): for every program it
// takes, one row scored without torch must equal, bit for bit, the same row through the
// TorchScript program (run_program with one row), and the raw margins must equal what the
// batched kernel gives that row inside a batch. Random ensembles over inputs with NaN and ±inf,
// every elementwise link, both comparisons, the three rank-lookup widths (≤ 32, ≤ 64, ≤ 128
// features), stumps and deep trees, the generic layout; with the AVX-512 walk and the portable one.
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

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

struct Case {
    const char* name;
    Task task;
    PostTransform link;
    int groups, features, trees, depth;
    Comparison cmp;
};

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Scores random rows one at a time both ways and compares them with each other and the batch.
void check_case(const Case& c, bool portable) {
    std::mt19937 rng(static_cast<uint32_t>(c.features * 131 + c.depth * 7 + c.groups));
    auto p = testing::make_pipeline(c.task, c.link, c.groups, c.features, c.cmp);
    testing::add_trees(p, rng, c.trees, TreeShape{c.depth, 0.3, true});
    const std::string bytes = compiler::compile(p, Strategy::Native);
    runtime::Program* prog = runtime::load_program(testing::next_program_id(), bytes.data(), bytes.size());
    ASSERT_TRUE(runtime::program_scores_one_row(prog)) << c.name;
    const int width = runtime::program_output_width(prog);
    const int64_t rows = 200;
    const std::vector<float> x = testing::random_inputs(rng, rows, c.features);
    std::vector<float> batch(static_cast<size_t>(rows * width));
    runtime::run_program(prog, x.data(), rows, c.features, batch.data());
    if (portable) kernels::set_process_isa(kernels::Isa::Portable);
    int bad = 0;
    for (int64_t r = 0; r < rows && bad < 5; ++r) {
        std::vector<float> one(width), interpreted(width);
        runtime::run_one_row(prog, x.data() + r * c.features, one.data());
        runtime::run_program(prog, x.data() + r * c.features, 1, c.features, interpreted.data());
        for (int k = 0; k < width; ++k) {
            // Identity: the margins themselves, equal to the batch's for any row of it.
            const bool vs_batch = c.link == PostTransform::Identity;
            const float want = vs_batch ? batch[r * width + k] : interpreted[k];
            if (!same_bits(one[k], interpreted[k]) || !same_bits(one[k], want)) {
                ++bad;
                ADD_FAILURE() << c.name << (portable ? " (portable)" : "") << ": row " << r << " column " << k
                              << ": one row " << one[k] << ", program " << interpreted[k] << ", batch "
                              << batch[r * width + k];
            }
        }
    }
    if (portable) kernels::set_process_isa(kernels::Isa::Auto);
    runtime::release_program(prog);
}

const Case kCases[] = {
    {"binary logistic, 28 features, 500 trees of depth 8", Task::Classification, PostTransform::Logistic, 1, 28, 500, 8,
     Comparison::Less},
    {"stump", Task::Classification, PostTransform::Logistic, 1, 28, 1, 1, Comparison::Less},
    {"regression, 40 features, <=", Task::Regression, PostTransform::Identity, 1, 40, 100, 6, Comparison::LessEqual},
    {"regression, 100 features", Task::Regression, PostTransform::Identity, 1, 100, 60, 5, Comparison::Less},
    {"three groups, raw margins", Task::Classification, PostTransform::Identity, 3, 10, 90, 4, Comparison::Less},
    {"three groups, a sigmoid each", Task::Classification, PostTransform::Logistic, 3, 10, 90, 4, Comparison::Less},
    {"two-sided decision", Task::Classification, PostTransform::TwoSided, 1, 8, 40, 7, Comparison::LessEqual},
    {"complement", Task::Classification, PostTransform::Complement, 1, 8, 40, 3, Comparison::LessEqual},
    {"deep trees: generic layout", Task::Regression, PostTransform::Identity, 1, 12, 20, 14, Comparison::Less},
};

TEST(OneRow, EqualsTheProgramBitForBit) {
    for (const Case& c : kCases) check_case(c, false);
}

TEST(OneRow, PortableWalkEqualsTheProgramBitForBit) {
    for (const Case& c : kCases) check_case(c, true);
}

// Softmax and exp (ATen's vectorized exp, which std::exp does not match bit for bit), and
// programs of the other strategies, are not taken.
TEST(OneRow, SoftmaxExpAndOtherStrategiesStayOnTheInterpreter) {
    std::mt19937 rng(3);
    auto p = testing::make_pipeline(Task::Classification, PostTransform::Softmax, 3, 6, Comparison::Less);
    testing::add_trees(p, rng, 30, TreeShape{4, 0.3, true});
    for (Strategy s : {Strategy::Native, Strategy::PerfectTreeTraversal}) {
        const std::string bytes = compiler::compile(p, s);
        runtime::Program* prog = runtime::load_program(testing::next_program_id(), bytes.data(), bytes.size());
        EXPECT_FALSE(runtime::program_scores_one_row(prog)) << compiler::strategy_name(s);
        runtime::release_program(prog);
    }
    auto poisson = testing::make_pipeline(Task::Regression, PostTransform::Exp, 1, 6, Comparison::Less);
    testing::add_trees(poisson, rng, 10, TreeShape{4, 0.3, true});
    const std::string exp_bytes = compiler::compile(poisson, Strategy::Native);
    runtime::Program* exp_prog = runtime::load_program(testing::next_program_id(), exp_bytes.data(), exp_bytes.size());
    EXPECT_FALSE(runtime::program_scores_one_row(exp_prog));
    runtime::release_program(exp_prog);
    p.transform = PostTransform::Identity;
    p.task = Task::Regression;
    p.classes.clear();
    p.model.num_groups = 1;
    p.model.base_margin.resize(1);
    for (spec::Tree& t : p.model.trees) t.group = 0;
    const std::string traversal = compiler::compile(p, Strategy::TreeTraversal);
    runtime::Program* prog = runtime::load_program(testing::next_program_id(), traversal.data(), traversal.size());
    EXPECT_FALSE(runtime::program_scores_one_row(prog));
    runtime::release_program(prog);
}

}  // namespace
}  // namespace pg_predict
