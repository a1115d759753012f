// Device placement in the runtime: a CPU placement is the program itself; CUDA is refused with
// its reason where it cannot be used; where it can (a CUDA build on a GPU machine), every
// strategy, the native kernel included, gives the CPU's decisions (sums within 1e-5).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "pg_predict/common/error.hpp"
#include "pg_predict/compiler/compile.hpp"
#include "pg_predict/runtime/api.hpp"
#include "tree_gen.hpp"
#include "program_ids.hpp"

namespace pg_predict {
namespace {

using compiler::Strategy;

spec::Pipeline model(int trees, int depth, int features, int groups, uint32_t seed) {
    std::mt19937 rng(seed);
    auto p = testing::make_pipeline(groups > 1 ? spec::Task::Classification : spec::Task::Regression,
                                    groups > 1 ? spec::PostTransform::Softmax : spec::PostTransform::Identity,
                                    groups, features, spec::Comparison::Less);
    testing::add_trees(p, rng, trees, testing::TreeShape{depth, 0.2, true});
    return p;
}

TEST(Device, CpuPlacementIsTheProgramItself) {
    const std::string bytes = compiler::compile(model(5, 3, 4, 1, 1), Strategy::TreeTraversal);
    runtime::Program* p = runtime::load_program(testing::next_program_id(), bytes.data(), bytes.size());
    runtime::Program* same = runtime::acquire_on_device(p, runtime::Device::Cpu);
    EXPECT_EQ(same, p);
    EXPECT_EQ(runtime::program_device(same), runtime::Device::Cpu);
    runtime::release_program(same);
    runtime::release_program(p);
}

TEST(Device, CudaUnavailableIsUnsupportedWithItsReason) {
    const char* why = runtime::cuda_unavailable_reason();
    if (why == nullptr) GTEST_SKIP() << "a CUDA GPU is usable here";
    EXPECT_NE(std::string(why), "");
    const std::string bytes = compiler::compile(model(5, 3, 4, 1, 2), Strategy::TreeTraversal);
    runtime::Program* p = runtime::load_program(testing::next_program_id(), bytes.data(), bytes.size());
    try {
        runtime::acquire_on_device(p, runtime::Device::Cuda);
        ADD_FAILURE() << "acquire_on_device(Cuda) succeeded without CUDA";
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), ErrorCategory::Unsupported);
        EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
    // The CPU program is untouched and still runs.
    std::vector<float> x = {0.f, 1.f, 2.f, 3.f}, out(1);
    runtime::run_program(p, x.data(), 1, 4, out.data());
    runtime::release_program(p);
}

TEST(Device, BatchBuffersAreZeroedAndUsable) {
    const std::string bytes = compiler::compile(model(5, 3, 4, 1, 3), Strategy::Native);
    runtime::Program* p = runtime::load_program(testing::next_program_id(), bytes.data(), bytes.size());
    float* x = runtime::alloc_batch_buffer(4 * 100);
    for (int i = 0; i < 400; ++i) EXPECT_EQ(x[i], 0.0f);
    std::vector<float> plain(400), a(100), b(100);
    for (int i = 0; i < 400; ++i) plain[i] = x[i] = static_cast<float>(i % 7) * 0.25f;
    runtime::run_program(p, x, 100, 4, a.data());
    runtime::run_program(p, plain.data(), 100, 4, b.data());
    EXPECT_EQ(a, b);
    runtime::free_batch_buffer(x);
    runtime::free_batch_buffer(nullptr);  // unknown pointers are ignored
    runtime::release_program(p);
}

// Every strategy on the GPU against the same program on the CPU, over batches with NaNs.
TEST(Device, CudaMatchesCpuForEveryStrategy) {
    if (const char* why = runtime::cuda_unavailable_reason()) {
        std::printf("SKIP Device.CudaMatchesCpuForEveryStrategy: %s\n", why);
        GTEST_SKIP() << why;
    }
    struct Case { int trees, depth, features, groups; };
    for (const Case c : {Case{100, 6, 20, 1}, Case{40, 8, 10, 3}, Case{30, 14, 8, 1}}) {
        const spec::Pipeline p = model(c.trees, c.depth, c.features, c.groups, 7);
        for (Strategy s : {Strategy::Gemm, Strategy::TreeTraversal, Strategy::PerfectTreeTraversal,
                           Strategy::Native}) {
            std::string bytes;
            try {
                bytes = compiler::compile(p, s);
            } catch (const Error&) {
                continue;  // strategy does not fit this model (e.g. GEMM too big)
            }
            const std::string what = std::string(compiler::strategy_name(s)) + " depth " + std::to_string(c.depth);
            std::mt19937 rng(11);
            for (int64_t rows : {int64_t(1), int64_t(1000), int64_t(70001)}) {
                std::vector<float> x = testing::random_inputs(rng, rows, c.features);
                runtime::Program* cpu = runtime::load_program(testing::next_program_id(), bytes.data(), bytes.size());
                runtime::Program* gpu = runtime::acquire_on_device(cpu, runtime::Device::Cuda);
                EXPECT_EQ(runtime::program_device(gpu), runtime::Device::Cuda);
                const int width = runtime::program_output_width(cpu);
                std::vector<float> want(rows * width), got(rows * width);
                runtime::run_program(cpu, x.data(), rows, c.features, want.data());
                runtime::run_program(gpu, x.data(), rows, c.features, got.data());  // staged
                float* pinned = runtime::alloc_batch_buffer(x.size());
                std::copy(x.begin(), x.end(), pinned);
                std::vector<float> direct(got.size());
                runtime::run_program(gpu, pinned, rows, c.features, direct.data());  // read in place
                runtime::free_batch_buffer(pinned);
                EXPECT_TRUE(std::equal(got.begin(), got.end(), direct.begin(),
                                       [](float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); }))
                    << what << ": a pinned batch scores differently from a staged one";
                int bad = 0;
                for (size_t i = 0; i < want.size() && bad < 5; ++i)
                    if (!(std::fabs(got[i] - want[i]) <= 1e-5f * std::max(1.0f, std::fabs(want[i])) ||
                          (std::isnan(got[i]) && std::isnan(want[i])))) {
                        ++bad;
                        ADD_FAILURE() << what << " rows " << rows << ": [" << i << "] gpu " << got[i]
                                      << ", cpu " << want[i];
                    }
                runtime::release_program(gpu);
                runtime::release_program(cpu);
            }
        }
    }
}

}  // namespace
}  // namespace pg_predict
