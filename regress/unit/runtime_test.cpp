// The runtime's cache (reference counts, LRU eviction of idle programs) and its errors.
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "pg_predict/common/error.hpp"
#include "pg_predict/compiler/compile.hpp"
#include "pg_predict/runtime/api.hpp"
#include "tree_gen.hpp"

namespace pg_predict {
namespace {

const std::string& small_program() {
    static const std::string bytes = [] {
        std::mt19937 rng(1);
        auto p = testing::make_pipeline(spec::Task::Regression, spec::PostTransform::Identity, 1, 3,
                                        spec::Comparison::Less);
        testing::add_trees(p, rng, 3, testing::TreeShape{2, 0.0, true});
        return compiler::compile(p, compiler::Strategy::TreeTraversal);
    }();
    return bytes;
}

ErrorCategory category_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.category();
    }
    ADD_FAILURE() << "no pg_predict::Error thrown";
    return ErrorCategory::Internal;
}

TEST(RuntimeCache, AcquireReturnsTheSameProgramAndCounts) {
    const std::string& bytes = small_program();
    runtime::Program* a = runtime::load_program(100, bytes.data(), bytes.size());
    runtime::Program* b = runtime::acquire_cached_program(100);
    EXPECT_EQ(a, b);
    EXPECT_EQ(runtime::load_program(100, bytes.data(), bytes.size()), a);
    runtime::release_program(a);
    runtime::release_program(b);
    runtime::release_program(a);
    EXPECT_EQ(runtime::acquire_cached_program(999999), nullptr);
    EXPECT_EQ(category_of([&] { runtime::release_program(a); }), ErrorCategory::Internal);
}

TEST(RuntimeCache, EvictsLeastRecentlyUsedIdlePrograms) {
    const std::string& bytes = small_program();
    runtime::Program* held = runtime::load_program(200, bytes.data(), bytes.size());
    for (int64_t id = 201; id <= 230; ++id)
        runtime::release_program(runtime::load_program(id, bytes.data(), bytes.size()));
    // The held one survives although it is the oldest; of the idle ones the newest stay.
    runtime::Program* again = runtime::acquire_cached_program(200);
    EXPECT_EQ(again, held);
    runtime::release_program(again);
    EXPECT_EQ(runtime::acquire_cached_program(201), nullptr);
    EXPECT_EQ(runtime::acquire_cached_program(214), nullptr);
    for (int64_t id = 216; id <= 230; ++id) {
        runtime::Program* p = runtime::acquire_cached_program(id);
        EXPECT_NE(p, nullptr) << id;
        runtime::release_program(p);
    }
    // Still usable after all that churn.
    float x[3] = {0.f, 1.f, 2.f}, out[1];
    runtime::run_program(held, x, 1, 3, out);
    runtime::release_program(held);
}

TEST(RuntimeErrors, GarbageBytesAreARuntimeError) {
    const std::string garbage = "this is not a TorchScript archive";
    EXPECT_EQ(category_of([&] { runtime::load_program(300, garbage.data(), garbage.size()); }),
              ErrorCategory::Runtime);
    EXPECT_EQ(runtime::acquire_cached_program(300), nullptr);
    const std::string cut = small_program().substr(0, small_program().size() / 2);
    EXPECT_EQ(category_of([&] { runtime::load_program(301, cut.data(), cut.size()); }),
              ErrorCategory::Runtime);
}

TEST(RuntimeErrors, WrongColumnCountIsInvalidParameter) {
    const std::string& bytes = small_program();
    runtime::Program* p = runtime::load_program(400, bytes.data(), bytes.size());
    std::vector<float> x(8, 0.0f), out(2);
    EXPECT_EQ(category_of([&] { runtime::run_program(p, x.data(), 2, 4, out.data()); }),
              ErrorCategory::InvalidParameter);
    runtime::run_program(p, x.data(), 0, 3, out.data());  // an empty batch is fine
    runtime::release_program(p);
}

TEST(RuntimeThreads, RequestIsValidatedAndApplied) {
    EXPECT_EQ(category_of([] { runtime::set_num_threads(0); }), ErrorCategory::InvalidParameter);
    runtime::set_num_threads(1);
    const std::string& bytes = small_program();
    runtime::Program* p = runtime::load_program(500, bytes.data(), bytes.size());
    float x[6] = {0, 1, 2, 3, 4, 5}, out[2];
    runtime::run_program(p, x, 2, 3, out);
    runtime::set_num_threads(2);
    runtime::run_program(p, x, 2, 3, out);
    runtime::release_program(p);
}

}  // namespace
}  // namespace pg_predict
