// The program cache's bounds: bytes (pg_predict.cache_size) and versions (programs of a
// replaced or dropped model are freed when idle).
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "pg_predict/compiler/compile.hpp"
#include "pg_predict/runtime/api.hpp"
#include "pg_predict/spec/pipeline.hpp"
#include "tree_gen.hpp"

namespace pg_predict {
namespace {

const spec::Pipeline& pipeline() {
    static const spec::Pipeline p = [] {
        std::mt19937 rng(5);
        auto p = testing::make_pipeline(spec::Task::Regression, spec::PostTransform::Identity, 1, 3,
                                        spec::Comparison::Less);
        testing::add_trees(p, rng, 20, testing::TreeShape{3, 0.0, true});
        return p;
    }();
    return p;
}

const std::string& program_bytes() {
    static const std::string bytes = compiler::compile(pipeline(), compiler::Strategy::TreeTraversal);
    return bytes;
}

bool cached(int64_t id) {
    runtime::Program* p = runtime::acquire_cached_program(id);
    runtime::release_program(p);
    return p != nullptr;
}

struct CacheLimit {
    explicit CacheLimit(size_t bytes) { runtime::set_cache_limit(bytes); }
    ~CacheLimit() { runtime::set_cache_limit(size_t(128) << 20); }
};

TEST(CacheBound, IdleProgramsBeyondTheByteLimitAreFreedOldestFirst) {
    const std::string& bytes = program_bytes();
    runtime::set_cache_limit(0);  // frees what other tests left idle
    const size_t one = bytes.size() + (64 << 10);  // what a program counts (cache.cpp)
    CacheLimit limit(2 * one);
    for (int64_t id = 5001; id <= 5005; ++id)
        runtime::release_program(runtime::load_program(id, bytes.data(), bytes.size()));
    EXPECT_LE(runtime::cached_program_bytes(), 2 * one);
    EXPECT_FALSE(cached(5001));
    EXPECT_FALSE(cached(5003));
    EXPECT_TRUE(cached(5004));
    EXPECT_TRUE(cached(5005));
}

TEST(CacheBound, ProgramsInUseSurviveALimitOfZero) {
    const std::string& bytes = program_bytes();
    CacheLimit limit(0);
    runtime::Program* held = runtime::load_program(5101, bytes.data(), bytes.size());
    runtime::release_program(runtime::load_program(5102, bytes.data(), bytes.size()));
    EXPECT_FALSE(cached(5102));
    runtime::Program* again = runtime::acquire_cached_program(5101);
    EXPECT_EQ(again, held);
    float x[3] = {0.f, 1.f, 2.f}, out[1];
    runtime::run_program(held, x, 1, 3, out);
    runtime::release_program(again);
    runtime::release_program(held);  // the last reference: freed now
    EXPECT_EQ(runtime::acquire_cached_program(5101), nullptr);
}

TEST(CacheBound, ReplacedAndDroppedVersionsAreFreed) {
    const std::string& bytes = program_bytes();
    runtime::Program* v1 = runtime::load_program(5201, bytes.data(), bytes.size());
    runtime::note_model_version("m", 5201);
    // Replaced while a query still uses v1: v1 stays until released.
    runtime::Program* v2 = runtime::load_program(5202, bytes.data(), bytes.size());
    runtime::note_model_version("m", 5202);
    EXPECT_TRUE(cached(5201));
    runtime::release_program(v1);
    EXPECT_FALSE(cached(5201));
    EXPECT_TRUE(cached(5202));
    // Another model's programs are untouched; dropping "m" frees v2 once idle.
    runtime::release_program(runtime::load_program(5301, bytes.data(), bytes.size()));
    runtime::note_model_version("other", 5301);
    runtime::forget_model("m");
    EXPECT_TRUE(cached(5202));  // still held
    runtime::release_program(v2);
    EXPECT_FALSE(cached(5202));
    EXPECT_TRUE(cached(5301));
}

// What the model_stats view shows of a backend's programs: one record per id with its
// programs and bytes, and one call of the listener after each change, none without one.
int listener_calls = 0;
void count_call() noexcept { ++listener_calls; }

struct Listening {
    Listening() {
        listener_calls = 0;
        runtime::set_cache_listener(count_call);
    }
    ~Listening() { runtime::set_cache_listener(nullptr); }
};

std::vector<runtime::CachedModel> cached_now() {
    std::vector<runtime::CachedModel> models(runtime::kMaxCachedPrograms);
    models.resize(runtime::cached_models(models.data(), models.size()));
    return models;
}

const runtime::CachedModel* find(const std::vector<runtime::CachedModel>& models, int64_t id) {
    for (const auto& m : models)
        if (m.id == id) return &m;
    return nullptr;
}

TEST(CacheBound, TheListenerHearsEveryChangeAndCachedModelsSumsAnIdsPrograms) {
    const std::string& bytes = program_bytes();
    const std::string json = spec::to_json(pipeline());
    {
        CacheLimit none(0);  // the next release frees what other tests left idle, and itself
        runtime::release_program(runtime::load_program(5400, bytes.data(), bytes.size()));
    }
    ASSERT_EQ(runtime::cached_program_count(), 0u);
    Listening listening;
    runtime::Program* stored = runtime::load_program(5401, bytes.data(), bytes.size());
    EXPECT_EQ(listener_calls, 1);
    runtime::Program* again = runtime::load_program(5401, bytes.data(), bytes.size());  // cached
    runtime::release_program(again);
    EXPECT_EQ(listener_calls, 1);
    runtime::Program* variant = runtime::compile_variant(5401, "gemm", json.data(), json.size());
    runtime::release_program(runtime::load_program(5402, bytes.data(), bytes.size()));
    EXPECT_EQ(listener_calls, 3);

    std::vector<runtime::CachedModel> models = cached_now();
    ASSERT_EQ(models.size(), 2u);
    const runtime::CachedModel* both = find(models, 5401);
    ASSERT_NE(both, nullptr);
    EXPECT_EQ(both->programs, 2);
    EXPECT_EQ(static_cast<size_t>(both->bytes), runtime::cached_program_bytes() - find(models, 5402)->bytes);
    EXPECT_EQ(find(models, 5402)->bytes, static_cast<int64_t>(bytes.size() + (64 << 10)));
    // A capacity smaller than the ids: that many records, none past it.
    runtime::CachedModel one[1];
    EXPECT_EQ(runtime::cached_models(one, 1), 1u);

    // Freed: the release that frees a program over the limit is heard, a release that frees
    // nothing is not.
    CacheLimit zero(0);
    runtime::release_program(variant);  // freed, and 5402 with it (idle, over the limit)
    EXPECT_EQ(listener_calls, 4);
    runtime::Program* held = runtime::acquire_cached_program(5401);
    runtime::release_program(held);  // still held by `stored`: nothing freed
    EXPECT_EQ(listener_calls, 4);
    runtime::release_program(stored);
    EXPECT_EQ(listener_calls, 5);
    EXPECT_TRUE(cached_now().empty());
}

}  // namespace
}  // namespace pg_predict
