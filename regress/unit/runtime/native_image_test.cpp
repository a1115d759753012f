// Native images (runtime/native_image.cpp): a program mapped from another program's image, with
// no module, scores every batch (one row, a few, many; float32 and float64) bit for bit as the
// loaded program does; a damaged image is an error, never a read out of bounds; the unmap
// listener hears of every mapped program the cache frees, once.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "pg_predict/common/error.hpp"
#include "pg_predict/compiler/compile.hpp"
#include "pg_predict/runtime/api.hpp"
#include "program_ids.hpp"
#include "tree_gen.hpp"

namespace pg_predict {
namespace {

using compiler::Strategy;
using spec::Comparison;
using spec::PostTransform;
using spec::Task;
using testing::TreeShape;

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(float) * a.size()) == 0;
}

// An image copied to 64-byte aligned memory, as shared memory holds it.
struct AlignedImage {
    explicit AlignedImage(const std::string& image) : length(image.size()) {
        data = static_cast<char*>(std::aligned_alloc(64, (image.size() + 63) / 64 * 64));
        std::memcpy(data, image.data(), image.size());
    }
    ~AlignedImage() { std::free(data); }
    char* data;
    size_t length;
};

std::vector<void*> unmapped;
void note_unmap(void* mapping) noexcept { unmapped.push_back(mapping); }

runtime::Program* load(const spec::Pipeline& p) {
    const std::string bytes = compiler::compile(p, Strategy::Native);
    return runtime::load_program(testing::next_program_id(), bytes.data(), bytes.size());
}

struct Case {
    const char* name;
    Task task;
    PostTransform link;
    int features, trees, depth;
    Comparison cmp;
};

const Case kCases[] = {
    {"binary logistic", Task::Classification, PostTransform::Logistic, 28, 100, 6, Comparison::Less},
    {"regression, <=", Task::Regression, PostTransform::Identity, 40, 50, 5, Comparison::LessEqual},
    {"two-sided", Task::Classification, PostTransform::TwoSided, 8, 40, 7, Comparison::LessEqual},
    {"complement", Task::Classification, PostTransform::Complement, 8, 40, 3, Comparison::LessEqual},
    {"deep trees: generic layout", Task::Regression, PostTransform::Identity, 12, 20, 14, Comparison::Less},
};

TEST(NativeImage, MappedProgramScoresBitForBitWithoutAModule) {
    for (const Case& c : kCases) {
        SCOPED_TRACE(c.name);
        std::mt19937 rng(static_cast<uint32_t>(c.features * 17 + c.depth));
        auto p = testing::make_pipeline(c.task, c.link, 1, c.features, c.cmp);
        testing::add_trees(p, rng, c.trees, TreeShape{c.depth, 0.3, true});
        runtime::Program* loaded = load(p);
        ASSERT_TRUE(runtime::program_maps_natively(loaded));
        std::string image;
        ASSERT_TRUE(runtime::program_native_image(loaded, &image));
        AlignedImage shared(image);
        int mapping = 0;
        runtime::Program* mapped = runtime::map_program(testing::next_program_id(), shared.data, shared.length, &mapping);
        EXPECT_TRUE(runtime::program_is_mapped(mapped));
        EXPECT_FALSE(runtime::program_is_mapped(loaded));
        const int width = runtime::program_output_width(loaded);
        ASSERT_EQ(width, runtime::program_output_width(mapped));
        for (int64_t rows : {int64_t(1), int64_t(7), int64_t(32), int64_t(33), int64_t(5000)}) {
            const std::vector<float> x = testing::random_inputs(rng, rows, c.features);
            std::vector<float> want(rows * width), got(rows * width), few(rows * width);
            runtime::run_program(loaded, x.data(), rows, c.features, want.data());
            runtime::run_program(mapped, x.data(), rows, c.features, got.data());
            runtime::run_rows(mapped, x.data(), rows, c.features, few.data());
            EXPECT_TRUE(same_bits(want, got)) << rows << " rows";
            EXPECT_TRUE(same_bits(want, few)) << rows << " rows through run_rows";
            std::vector<double> x64(x.begin(), x.end());
            for (size_t i = 0; i < x64.size(); i += 3) x64[i] = x64[i] + 1e-9 * (i % 7);  // rounds as the module does
            std::vector<float> want64(rows * width), got64(rows * width);
            runtime::run_program(loaded, x64.data(), rows, c.features, want64.data());
            runtime::run_program(mapped, x64.data(), rows, c.features, got64.data());
            EXPECT_TRUE(same_bits(want64, got64)) << rows << " float64 rows";
        }
        runtime::release_program(mapped);
        runtime::release_program(loaded);
    }
}

TEST(NativeImage, ProgramsThatNeedTheirModuleHaveNoImage) {
    std::mt19937 rng(5);
    auto groups = testing::make_pipeline(Task::Classification, PostTransform::Logistic, 3, 10, Comparison::Less);
    testing::add_trees(groups, rng, 30, TreeShape{4, 0.3, true});
    runtime::Program* loaded = load(groups);
    std::string image;
    EXPECT_FALSE(runtime::program_maps_natively(loaded));
    EXPECT_FALSE(runtime::program_native_image(loaded, &image));
    runtime::release_program(loaded);
}

TEST(NativeImage, DamagedImagesAreErrors) {
    std::mt19937 rng(9);
    auto p = testing::make_pipeline(Task::Classification, PostTransform::Logistic, 1, 10, Comparison::Less);
    testing::add_trees(p, rng, 20, TreeShape{5, 0.3, true});
    runtime::Program* loaded = load(p);
    std::string image;
    ASSERT_TRUE(runtime::program_native_image(loaded, &image));
    runtime::release_program(loaded);
    auto expect_damaged = [&](std::string bad, size_t length, const char* what) {
        AlignedImage shared(bad);
        const int64_t id = testing::next_program_id();
        try {
            runtime::map_program(id, shared.data, length, nullptr);
            ADD_FAILURE() << what << ": mapped";
        } catch (const Error& e) {
            EXPECT_EQ(e.category(), ErrorCategory::InvalidModel) << what;
        }
        EXPECT_EQ(runtime::acquire_cached_program(id), nullptr) << what << ": cached";
    };
    expect_damaged(image, image.size() - 64, "truncated");
    std::string magic = image;
    magic[0] = 'X';
    expect_damaged(magic, magic.size(), "magic");
    // Every 4-byte word past the header set to a huge value in turn: an error or the same
    // program, never a crash (make_view validates every index the kernels follow).
    for (size_t at = 192; at + 4 <= image.size(); at += 4 * 13) {
        std::string bad = image;
        const int32_t huge = 0x3fffffff;
        std::memcpy(&bad[at], &huge, sizeof huge);
        AlignedImage shared(bad);
        try {
            runtime::Program* q = runtime::map_program(testing::next_program_id(), shared.data, shared.length, nullptr);
            std::vector<float> x = testing::random_inputs(rng, 64, 10), out(64 * 2);
            runtime::run_program(q, x.data(), 64, 10, out.data());
            runtime::release_program(q);
        } catch (const Error& e) {
            EXPECT_EQ(e.category(), ErrorCategory::InvalidModel) << "word at " << at;
        }
    }
}

TEST(NativeImage, TheUnmapListenerHearsOfEveryFreedMappedProgramOnce) {
    std::mt19937 rng(11);
    auto p = testing::make_pipeline(Task::Regression, PostTransform::Identity, 1, 6, Comparison::Less);
    testing::add_trees(p, rng, 10, TreeShape{3, 0.3, true});
    runtime::Program* loaded = load(p);
    std::string image;
    ASSERT_TRUE(runtime::program_native_image(loaded, &image));
    runtime::release_program(loaded);
    AlignedImage shared(image);
    runtime::set_unmap_listener(note_unmap);
    unmapped.clear();
    int first = 0, second = 0;
    const int64_t id = testing::next_program_id();
    runtime::Program* a = runtime::map_program(id, shared.data, shared.length, &first);
    runtime::note_model_version("native image model", id);
    runtime::Program* b = runtime::map_program(testing::next_program_id(), shared.data, shared.length, &second);
    runtime::release_program(a);
    EXPECT_TRUE(unmapped.empty());  // idle, still cached
    runtime::forget_model("native image model");
    ASSERT_EQ(unmapped.size(), 1u);
    EXPECT_EQ(unmapped[0], &first);
    runtime::release_program(b);
    runtime::set_unmap_listener(nullptr);
}

}  // namespace
}  // namespace pg_predict

namespace pg_predict {
namespace {

std::string lightgbm_fixture(const std::string& name) {
    std::ifstream in(std::string(PG_PREDICT_FIXTURES) + "/lightgbm/" + name + ".model.txt", std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// Random float64 rows over [-3, 3], a NaN now and then, and values on the edges themselves.
std::vector<double> random_rows(std::mt19937& rng, int64_t rows, int64_t cols) {
    std::uniform_real_distribution<double> value(-3.0, 3.0);
    std::uniform_int_distribution<int> pick(0, 19);
    std::vector<double> x(static_cast<size_t>(rows * cols));
    for (double& v : x) {
        const int k = pick(rng);
        v = k == 0 ? std::nan("") : k == 1 ? std::round(value(rng)) : value(rng);
    }
    return x;
}

// LightGBM's programs (one bucketize, then the trees): natively, mapped or not, bit for bit as
// the TorchScript program; the fixtures with an elementwise link and one group are mapped.
TEST(NativeImage, LightgbmProgramsRunNativelyBitForBit) {
    int mapped_count = 0;
    for (const char* name : {"binary", "regression", "no_missing", "zero_as_missing", "deep", "huber", "stump",
                             "categorical", "multiclass", "poisson", "cross_entropy", "rf", "dart"}) {
        SCOPED_TRACE(name);
        runtime::BuiltModel* m = runtime::build_model(Artifact{ArtifactKind::Text, lightgbm_fixture(name)}, "auto", "{}");
        runtime::Program* loaded = runtime::load_program(testing::next_program_id(), m->program.data(), m->program.size());
        runtime::free_built_model(m);
        const int width = runtime::program_output_width(loaded);
        std::string image;
        runtime::Program* mapped = nullptr;
        std::unique_ptr<AlignedImage> shared;
        if (runtime::program_native_image(loaded, &image)) {
            shared = std::make_unique<AlignedImage>(image);
            mapped = runtime::map_program(testing::next_program_id(), shared->data, shared->length, nullptr);
            ++mapped_count;
        }
        std::mt19937 rng(42);
        const int64_t features = static_cast<int64_t>(runtime::program_input_width(loaded));
        for (int64_t rows : {int64_t(1), int64_t(5), int64_t(32), int64_t(33), int64_t(3000)}) {
            const std::vector<double> x = random_rows(rng, rows, features);
            std::vector<float> interpreted(rows * width), native(rows * width), from_image(rows * width);
            runtime::set_native_programs(false);
            runtime::run_program(loaded, x.data(), rows, features, interpreted.data());
            runtime::set_native_programs(true);
            runtime::run_program(loaded, x.data(), rows, features, native.data());
            EXPECT_TRUE(same_bits(interpreted, native)) << rows << " rows";
            if (mapped == nullptr) continue;
            runtime::run_program(mapped, x.data(), rows, features, from_image.data());
            EXPECT_TRUE(same_bits(interpreted, from_image)) << rows << " rows, mapped";
            const std::vector<float> x32(x.begin(), x.end());
            std::vector<float> want32(rows * width), got32(rows * width);
            runtime::set_native_programs(false);
            runtime::run_program(loaded, x32.data(), rows, features, want32.data());
            runtime::set_native_programs(true);
            runtime::run_rows(mapped, x32.data(), rows, features, got32.data());
            EXPECT_TRUE(same_bits(want32, got32)) << rows << " float32 rows, mapped";
        }
        if (mapped != nullptr) runtime::release_program(mapped);
        runtime::release_program(loaded);
    }
    EXPECT_GE(mapped_count, 6);  // binary, regression, no_missing, zero_as_missing, deep, huber, stump at least
}

}  // namespace
}  // namespace pg_predict

#include <nlohmann/json.hpp>

#include "sklearn_fixtures.hpp"

namespace pg_predict {
namespace {

// scikit-learn's scale / impute / encode pipelines before a linear model with one output: fused
// into one linear_margin call, run natively with their link, mapped or not, bit for bit as the
// TorchScript program. Inputs as the server gives them: numbers with NaN, and the text column as
// its dictionary code (or NaN), some codes unknown.
TEST(NativeImage, FusedLinearProgramsRunNativelyBitForBit) {
    using json = nlohmann::json;
    std::vector<std::string> linear;
    json fixtures = json::parse(testing::kSklearnFixtures);
    // A binary logistic regression over the one-hot columns (one group, the logistic link and
    // [1 - p, p]): the multinomial fixture's coefficients, fitted as scikit-learn's default.
    for (const json& c : json(fixtures["cases"]))
        if (c["name"] == "logreg_binary_multinomial") {
            json binary = c;
            binary["name"] = "logreg_binary_onehot";
            binary["doc"]["steps"][1]["multi_class"] = "auto";
            fixtures["cases"].push_back(binary);
        }
    for (const json& c : fixtures["cases"]) {
        const std::string name = c["name"];
        SCOPED_TRACE(name);
        runtime::BuiltModel* m = runtime::build_model(Artifact{ArtifactKind::Json, c["doc"].dump()}, "sklearn", "{}");
        runtime::Program* loaded = runtime::load_program(testing::next_program_id(), m->program.data(), m->program.size());
        runtime::free_built_model(m);
        std::string image;
        if (!runtime::program_native_image(loaded, &image)) {
            runtime::release_program(loaded);
            continue;
        }
        linear.push_back(name);
        AlignedImage shared(image);
        runtime::Program* mapped = runtime::map_program(testing::next_program_id(), shared.data, shared.length, nullptr);
        const int width = runtime::program_output_width(loaded);
        const int64_t cols = runtime::program_input_width(loaded);
        std::mt19937 rng(7);
        std::uniform_int_distribution<int> code(-1, 4), pick(0, 9);
        std::uniform_real_distribution<double> value(-4.0, 10.0);
        for (int64_t rows : {int64_t(1), int64_t(9), int64_t(32), int64_t(33), int64_t(2000)}) {
            std::vector<double> x(static_cast<size_t>(rows * cols));
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t k = 0; k < cols; ++k) {
                    double& v = x[r * cols + k];
                    v = k == 2 || k == 3 ? static_cast<double>(code(rng)) : value(rng);
                    if (pick(rng) == 0) v = std::nan("");
                    if (k == 3 && pick(rng) < 5) v = std::vector<double>{1.0, 2.0, 5.0}[pick(rng) % 3];
                }
            std::vector<float> interpreted(rows * width), native(rows * width), from_image(rows * width);
            runtime::set_native_programs(false);
            runtime::run_program(loaded, x.data(), rows, cols, interpreted.data());
            runtime::set_native_programs(true);
            runtime::run_program(loaded, x.data(), rows, cols, native.data());
            runtime::run_program(mapped, x.data(), rows, cols, from_image.data());
            EXPECT_TRUE(same_bits(interpreted, native)) << rows << " rows";
            EXPECT_TRUE(same_bits(interpreted, from_image)) << rows << " rows, mapped";
        }
        runtime::release_program(mapped);
        runtime::release_program(loaded);
    }
    // The others: several groups, an ordinal encoder, LinearSVC's decision without fused terms.
    EXPECT_EQ(linear, (std::vector<std::string>{"ridge", "logreg_binary_onehot"}));
}

}  // namespace
}  // namespace pg_predict
