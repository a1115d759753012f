// common/interrupt.hpp: a pending interrupt stops the thread pool, a program run and
// create_model's work with Error(Cancelled); without one nothing changes.
#include <atomic>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "pg_predict/common/error.hpp"
#include "pg_predict/common/interrupt.hpp"
#include "pg_predict/compiler/compile.hpp"
#include "pg_predict/kernels/thread_pool.hpp"
#include "pg_predict/runtime/api.hpp"
#include "pg_predict/spec/pipeline.hpp"
#include "tree_gen.hpp"

namespace pg_predict {
namespace {

std::atomic<bool> pending{false};
bool probe() noexcept { return pending.load(); }

// Installs the probe for one test and leaves nothing pending behind.
struct ProbeInstalled {
    ProbeInstalled() {
        pending = false;
        set_interrupt_probe(&probe);
    }
    ~ProbeInstalled() {
        set_interrupt_probe(nullptr);
        pending = false;
    }
};

bool throws_cancelled(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.category() == ErrorCategory::Cancelled;
    }
    return false;
}

TEST(Interrupt, NothingIsPendingWithoutAProbe) {
    set_interrupt_probe(nullptr);
    pending = true;
    EXPECT_FALSE(interrupt_pending());
    EXPECT_NO_THROW(check_interrupts());
    pending = false;
}

TEST(Interrupt, ThreadPoolStopsTakingChunks) {
    ProbeInstalled installed;
    for (int threads : {1, 2, 4}) {
        std::atomic<int64_t> done{0};
        // The interrupt arrives while chunk 10 runs: no chunk starts after the others see it.
        EXPECT_TRUE(throws_cancelled([&] {
            kernels::run_parallel(threads, 0, 100000, 1, [&](int64_t begin, int64_t) {
                if (begin == 10) pending = true;
                done.fetch_add(1);
            });
        })) << threads << " threads";
        EXPECT_LT(done.load(), 100) << threads << " threads";
        pending = false;
        // And without it every chunk runs.
        done = 0;
        kernels::run_parallel(threads, 0, 1000, 1, [&](int64_t, int64_t) { done.fetch_add(1); });
        EXPECT_EQ(done.load(), 1000);
    }
}

std::string tree_program(compiler::Strategy strategy) {
    std::mt19937 rng(3);
    auto p = testing::make_pipeline(spec::Task::Regression, spec::PostTransform::Identity, 1, 4,
                                    spec::Comparison::Less);
    testing::add_trees(p, rng, 50, testing::TreeShape{4, 0.0, true});
    return compiler::compile(p, strategy);
}

TEST(Interrupt, ProgramRunsStopWithCancelled) {
    ProbeInstalled installed;
    int64_t id = 7000;
    for (auto strategy : {compiler::Strategy::Native, compiler::Strategy::Gemm,
                          compiler::Strategy::TreeTraversal}) {
        const std::string bytes = tree_program(strategy);
        runtime::Program* program = runtime::load_program(++id, bytes.data(), bytes.size());
        const int64_t rows = 20000;
        std::vector<float> x(rows * 4, 0.5f), out(rows);
        runtime::run_program(program, x.data(), rows, 4, out.data());  // runs without
        pending = true;
        EXPECT_TRUE(throws_cancelled([&] { runtime::run_program(program, x.data(), rows, 4, out.data()); }))
            << compiler::strategy_name(strategy);
        std::vector<double> x64(rows * 4, 0.5);
        EXPECT_TRUE(throws_cancelled([&] { runtime::run_program(program, x64.data(), rows, 4, out.data()); }))
            << compiler::strategy_name(strategy);
        pending = false;
        runtime::run_program(program, x.data(), rows, 4, out.data());  // and again after it
        runtime::release_program(program);
    }
}

TEST(Interrupt, BuildModelStopsWithCancelled) {
    ProbeInstalled installed;
    const std::string doc =
        R"({"format": "sklearn", "version": 1, "inputs": [{"name": "a", "type": "numeric"}],
            "task": "regression",
            "steps": [{"type": "LinearRegression", "coef": [2.0], "intercept": 1.0}]})";
    runtime::free_built_model(runtime::build_model(Artifact{ArtifactKind::Json, doc}, "sklearn", "{}"));
    pending = true;
    EXPECT_TRUE(throws_cancelled([&] { runtime::build_model(Artifact{ArtifactKind::Json, doc}, "sklearn", "{}"); }));
}

}  // namespace
}  // namespace pg_predict
