// The early exit's screen (kernels/tree_bounds.cpp, runtime/screen.cpp): a row it calls
// outside an interval has its program output outside it, a row it calls inside has it strictly
// inside, for every monotone output column of a one-group program, both layouts, both
// comparisons, inputs with NaN and ±inf, and intervals at and between the outputs that occur.
// And it decides most rows of a selective interval (the point of it).
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "pg_predict/compiler/compile.hpp"
#include "pg_predict/kernels/tree_bounds.hpp"
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
    int features, trees, depth;
    Comparison cmp;
};

const Case kCases[] = {
    {"binary logistic, 500 trees of depth 8", Task::Classification, PostTransform::Logistic, 28, 500, 8, Comparison::Less},
    {"regression, <=", Task::Regression, PostTransform::Identity, 40, 100, 6, Comparison::LessEqual},
    {"two-sided decision", Task::Classification, PostTransform::TwoSided, 8, 40, 7, Comparison::LessEqual},
    {"complement", Task::Classification, PostTransform::Complement, 8, 40, 3, Comparison::Less},
    {"deep trees: generic layout", Task::Regression, PostTransform::Identity, 12, 60, 14, Comparison::Less},
    {"stump", Task::Classification, PostTransform::Logistic, 4, 1, 1, Comparison::Less},
};

void check_case(const Case& c) {
    std::mt19937 rng(static_cast<uint32_t>(c.features * 31 + c.depth));
    auto p = testing::make_pipeline(c.task, c.link, 1, c.features, c.cmp);
    testing::add_trees(p, rng, c.trees, TreeShape{c.depth, 0.3, true});
    // Leaves shrink along the ensemble, as boosting's do (a learning rate, smaller residuals).
    for (size_t t = 0; t < p.model.trees.size(); ++t)
        for (float& v : p.model.trees[t].value) v *= static_cast<float>(std::pow(0.97, double(t)));
    const std::string bytes = compiler::compile(p, Strategy::Native);
    runtime::Program* prog = runtime::load_program(testing::next_program_id(), bytes.data(), bytes.size());
    const int width = runtime::program_output_width(prog);
    const int64_t rows = 3000;
    const std::vector<float> x = testing::random_inputs(rng, rows, c.features);
    std::vector<float> out(static_cast<size_t>(rows * width));
    runtime::run_program(prog, x.data(), rows, c.features, out.data());
    std::vector<uint8_t> verdict(rows);
    for (int column = 0; column < width; ++column) {
        ASSERT_TRUE(runtime::program_screens_column(prog, column)) << c.name;
        std::vector<double> values;
        for (int64_t r = 0; r < rows; ++r) values.push_back(out[r * width + column]);
        std::vector<double> sorted = values;
        std::sort(sorted.begin(), sorted.end());
        auto at = [&](double q) { return sorted[static_cast<size_t>(q * (rows - 1))]; };
        const double inf = INFINITY;
        const std::vector<std::pair<double, double>> intervals = {
            {at(0.97), inf}, {-inf, at(0.03)}, {at(0.4), at(0.6)}, {at(0.5), at(0.5)},
            {std::nextafter(at(0.9), inf), inf}, {at(0.0), at(1.0)}, {-inf, inf}, {at(0.99) + 1e-9, at(0.2)}};
        for (const auto& [lo, hi] : intervals) {
            runtime::ScreenStats stats;
            runtime::screen_rows(prog, x.data(), rows, c.features, column, lo, hi, verdict.data(), &stats);
            int64_t outside = 0, bad = 0;
            for (int64_t r = 0; r < rows && bad < 5; ++r) {
                const double v = values[r];
                if (verdict[r] == kernels::kOutside && v >= lo && v <= hi) ++bad;
                if (verdict[r] == kernels::kInside && !(v > lo && v < hi)) ++bad;
                if (bad) ADD_FAILURE() << c.name << " column " << column << " [" << lo << ", " << hi << "]: row " << r
                                       << " value " << v << " verdict " << int(verdict[r]);
                outside += verdict[r] == kernels::kOutside;
            }
            EXPECT_EQ(stats.rows, rows);
            EXPECT_EQ(stats.outside, outside);
            // Rows stopped early are decided rows that saved trees: when none did, every decided
            // row had every tree.
            EXPECT_LE(stats.early, stats.outside + stats.inside);
            if (stats.early == 0) EXPECT_GE(stats.tree_visits, (stats.outside + stats.inside) * stats.trees);
            if (c.trees <= 32) EXPECT_EQ(stats.early, 0) << c.name << ": one stage holds every tree";
            // A 3 % tail: most rows are decided by the screen (trees random, so not all).
            if (hi == inf && lo == at(0.97) && c.trees >= 100)
                EXPECT_GT(outside, rows / 2) << c.name << " column " << column;
        }
    }
    runtime::release_program(prog);
}

TEST(TreeBounds, VerdictsHoldForEveryRow) {
    for (const Case& c : kCases) check_case(c);
}

TEST(TreeBounds, PortableAndWidestPathsAgree) {
    kernels::set_process_isa(kernels::Isa::Portable);
    check_case(kCases[0]);
    kernels::set_process_isa(kernels::Isa::Auto);
}

// Softmax and exp have no screen: program_screens_column says so.
TEST(TreeBounds, OnlyMonotoneOneGroupPrograms) {
    std::mt19937 rng(5);
    auto softmax = testing::make_pipeline(Task::Classification, PostTransform::Softmax, 3, 6, Comparison::Less);
    testing::add_trees(softmax, rng, 30, TreeShape{4, 0.3, true});
    auto poisson = testing::make_pipeline(Task::Regression, PostTransform::Exp, 1, 6, Comparison::Less);
    testing::add_trees(poisson, rng, 10, TreeShape{4, 0.3, true});
    for (auto* p : {&softmax, &poisson}) {
        const std::string bytes = compiler::compile(*p, Strategy::Native);
        runtime::Program* prog = runtime::load_program(testing::next_program_id(), bytes.data(), bytes.size());
        EXPECT_FALSE(runtime::program_screens_column(prog, 0));
        runtime::release_program(prog);
    }
}

}  // namespace
}  // namespace pg_predict
