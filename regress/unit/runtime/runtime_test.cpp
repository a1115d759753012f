// The runtime's cache (reference counts, LRU eviction of idle programs) and its errors.
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "pg_predict/common/error.hpp"
#include "pg_predict/compiler/compile.hpp"
#include "pg_predict/runtime/api.hpp"
#include "pg_predict/spec/pipeline.hpp"
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
    // Room for 16 programs: the held one and the 15 newest idle ones.
    runtime::set_cache_limit(16 * runtime::program_bytes(held));
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
    runtime::set_cache_limit(size_t(128) << 20);  // pg_predict.cache_size's default
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

// Variants: the same model compiled with another strategy, cached under (id, strategy).
spec::Pipeline variant_pipeline() {
    std::mt19937 rng(2);
    auto p = testing::make_pipeline(spec::Task::Classification, spec::PostTransform::Softmax, 3, 5,
                                    spec::Comparison::LessEqual);
    testing::add_trees(p, rng, 12, testing::TreeShape{4, 0.2, true});
    return p;
}

const std::string& variant_spec() {
    static const std::string json = spec::to_json(variant_pipeline());
    return json;
}

TEST(RuntimeVariants, CompiledPerStrategyScoredLikeTheReferenceAndCached) {
    const spec::Pipeline p = variant_pipeline();
    std::mt19937 rng(3);
    const int64_t rows = 300;
    const std::vector<float> x = testing::random_inputs(rng, rows, 5);
    std::vector<float> want(rows * 3);
    spec::reference_predict(p, x.data(), rows, want.data());

    const std::string& json = variant_spec();
    const int64_t id = 800;
    runtime::Program* stored = runtime::load_program(id, small_program().data(), small_program().size());
    for (const char* s : {"gemm", "tree_traversal", "perfect_tree_traversal", "native"}) {
        EXPECT_EQ(runtime::acquire_cached_variant(id, s), nullptr) << s;
        runtime::Program* v = runtime::compile_variant(id, s, json.data(), json.size());
        ASSERT_NE(v, nullptr);
        EXPECT_NE(v, stored) << s;
        EXPECT_EQ(runtime::program_output_width(v), 3);
        std::vector<float> got(rows * 3);
        runtime::run_program(v, x.data(), rows, 5, got.data());
        for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << s << " " << i;
        // A hit: the same program, one more reference; compiling again is a hit as well.
        runtime::Program* again = runtime::acquire_cached_variant(id, s);
        EXPECT_EQ(again, v) << s;
        EXPECT_EQ(runtime::compile_variant(id, s, json.data(), json.size()), v) << s;
        runtime::release_program(again);
        runtime::release_program(v);
        runtime::release_program(v);
        EXPECT_EQ(category_of([&] { runtime::release_program(v); }), ErrorCategory::Internal) << s;
    }
    // Stored program and variants do not shadow each other.
    runtime::Program* same = runtime::acquire_cached_program(id);
    EXPECT_EQ(same, stored);
    runtime::release_program(same);
    runtime::release_program(stored);
    runtime::Program* n = runtime::acquire_cached_variant(id, "native");
    EXPECT_NE(n, nullptr);
    EXPECT_NE(n, stored);
    runtime::release_program(n);
    EXPECT_EQ(runtime::acquire_cached_variant(id + 1, "native"), nullptr);
}

TEST(RuntimeVariants, AutoUnknownAndBadSpecAreErrors) {
    const std::string& json = variant_spec();
    for (const char* s : {"auto", "fast", ""}) {
        EXPECT_EQ(category_of([&] { runtime::acquire_cached_variant(810, s); }), ErrorCategory::InvalidParameter) << s;
        EXPECT_EQ(category_of([&] { runtime::compile_variant(810, s, json.data(), json.size()); }),
                  ErrorCategory::InvalidParameter)
            << s;
    }
    EXPECT_EQ(category_of([&] { runtime::acquire_cached_variant(810, nullptr); }), ErrorCategory::InvalidParameter);
    const std::string bad = "{\"model\": 1";
    EXPECT_EQ(category_of([&] { runtime::compile_variant(811, "native", bad.data(), bad.size()); }),
              ErrorCategory::InvalidModel);
    EXPECT_EQ(runtime::acquire_cached_variant(811, "native"), nullptr);
    // The length bounds the spec: a cut one is malformed, not read past.
    EXPECT_EQ(category_of([&] { runtime::compile_variant(812, "native", json.data(), json.size() / 2); }),
              ErrorCategory::InvalidModel);

    // A strategy that does not fit the model: GEMM over 1 GiB.
    std::mt19937 rng(4);
    auto big = testing::make_pipeline(spec::Task::Regression, spec::PostTransform::Identity, 1, 4,
                                      spec::Comparison::Less);
    testing::add_trees(big, rng, 100, testing::TreeShape{11, 0.0, true});  // GEMM: 1.6 GiB
    const std::string big_json = spec::to_json(big);
    EXPECT_EQ(category_of([&] { runtime::compile_variant(813, "gemm", big_json.data(), big_json.size()); }),
              ErrorCategory::InvalidParameter);
    runtime::Program* ok = runtime::compile_variant(813, "native", big_json.data(), big_json.size());
    runtime::release_program(ok);
}

TEST(RuntimeVariants, ShareTheLruWithStoredPrograms) {
    const std::string& json = variant_spec();
    const std::string& bytes = small_program();
    runtime::Program* held = runtime::compile_variant(900, "native", json.data(), json.size());
    // Room for the held one and the 15 newest idle entries (8 stored programs, 7 variants).
    runtime::Program* stored = runtime::load_program(898, bytes.data(), bytes.size());
    runtime::Program* variant = runtime::compile_variant(899, "tree_traversal", json.data(), json.size());
    runtime::set_cache_limit(runtime::program_bytes(held) + 8 * runtime::program_bytes(stored) +
                             7 * runtime::program_bytes(variant));
    runtime::release_program(stored);
    runtime::release_program(variant);
    // 30 idle entries, variants and stored programs interleaved.
    for (int64_t id = 901; id <= 930; ++id) {
        runtime::release_program(id % 2 ? runtime::compile_variant(id, "tree_traversal", json.data(), json.size())
                                        : runtime::load_program(id, bytes.data(), bytes.size()));
    }
    auto cached = [&](int64_t id) {
        runtime::Program* p = id % 2 ? runtime::acquire_cached_variant(id, "tree_traversal")
                                     : runtime::acquire_cached_program(id);
        runtime::release_program(p);
        return p != nullptr;
    };
    EXPECT_EQ(runtime::acquire_cached_variant(900, "native"), held);  // held: never evicted
    runtime::release_program(held);
    EXPECT_FALSE(cached(901));
    EXPECT_FALSE(cached(914));
    for (int64_t id = 916; id <= 930; ++id) EXPECT_TRUE(cached(id)) << id;
    std::vector<float> x(5, 0.5f), out(3);
    runtime::run_program(held, x.data(), 1, 5, out.data());
    runtime::release_program(held);
    runtime::set_cache_limit(size_t(128) << 20);  // pg_predict.cache_size's default
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
