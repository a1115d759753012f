// The native tree kernel against spec::reference_predict: same decisions (margins within
// 1e-5), on random ensembles of every shape, both comparisons, NaN / ±inf / inputs equal to
// thresholds, row counts that are not multiples of any block size, the AVX-512 and the
// portable paths (and the two agree bit for bit), and the generic (deep-tree) layout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "pg_predict/common/error.hpp"
#include "pg_predict/kernels/tree_ensemble.hpp"
#include "pg_predict/spec/pipeline.hpp"
#include "tree_gen.hpp"

namespace pg_predict {
namespace {

using kernels::Isa;
using testing::TreeShape;

// Raw margins (sum of leaves per group, no base margin) by walking the trees in tree order:
// the reference pipeline with Identity transform minus its base margin.
std::vector<float> reference_margins(const spec::Pipeline& p, const std::vector<float>& x, int64_t rows) {
    spec::Pipeline q = p;
    q.task = spec::Task::Regression;
    q.transform = spec::PostTransform::Identity;
    q.model.base_margin.assign(q.model.num_groups, 0.0f);
    if (q.model.num_groups > 1) {  // output_width() of a regression is 1: score group by group
        std::vector<float> out(static_cast<size_t>(rows * p.model.num_groups));
        for (int g = 0; g < p.model.num_groups; ++g) {
            spec::Pipeline one = q;
            one.model.num_groups = 1;
            one.model.base_margin = {0.0f};
            one.model.trees.clear();
            for (const spec::Tree& t : q.model.trees)
                if (t.group == g) {
                    one.model.trees.push_back(t);
                    one.model.trees.back().group = 0;
                }
            std::vector<float> col(static_cast<size_t>(rows));
            spec::reference_predict(one, x.data(), rows, col.data());
            for (int64_t r = 0; r < rows; ++r) out[r * p.model.num_groups + g] = col[r];
        }
        return out;
    }
    std::vector<float> out(static_cast<size_t>(rows));
    spec::reference_predict(q, x.data(), rows, out.data());
    return out;
}

std::vector<float> native_margins(const spec::Pipeline& p, const std::vector<float>& x, int64_t rows,
                                  Isa isa, bool allow_perfect = true) {
    const kernels::PackedEnsemble packed = kernels::pack(p.model, allow_perfect);
    const kernels::PackedView view = kernels::make_view(packed);
    std::vector<float> out(static_cast<size_t>(rows * p.model.num_groups), -12345.0f);
    kernels::score(view, x.data(), rows, p.model.num_features, out.data(), isa);
    return out;
}

void expect_close(const std::vector<float>& want, const std::vector<float>& got, const char* what) {
    ASSERT_EQ(want.size(), got.size()) << what;
    int bad = 0;
    for (size_t i = 0; i < want.size() && bad < 5; ++i) {
        const float tol = 1e-5f * std::max(1.0f, std::fabs(want[i]));
        if (!(std::fabs(want[i] - got[i]) <= tol)) {
            ADD_FAILURE() << what << ": element " << i << " want " << want[i] << " got " << got[i];
            ++bad;
        }
    }
}

std::vector<Isa> isas() { return kernels::available_isas(); }

struct Case {
    int depth;
    int trees;
    int groups;
    int features;
    spec::Comparison cmp;
    double leaf_probability;
};

void run_case(const Case& c, unsigned seed) {
    std::mt19937 rng(seed);
    spec::Pipeline p = testing::make_pipeline(spec::Task::Regression, spec::PostTransform::Identity, c.groups,
                                              c.features, c.cmp);
    TreeShape shape;
    shape.max_depth = c.depth;
    shape.leaf_probability = c.leaf_probability;
    testing::add_trees(p, rng, c.trees, shape);
    for (int64_t rows : {1, 15, 16, 17, 63, 65, 1000}) {
        const std::vector<float> x = testing::random_inputs(rng, rows, c.features);
        const std::vector<float> want = reference_margins(p, x, rows);
        std::vector<float> first;
        for (Isa isa : isas()) {
            const std::vector<float> got = native_margins(p, x, rows, isa);
            SCOPED_TRACE(::testing::Message() << "depth " << c.depth << " trees " << c.trees << " groups "
                                              << c.groups << " features " << c.features << " rows " << rows
                                              << " isa " << kernels::isa_name(isa));
            expect_close(want, got, "perfect layout");
            if (first.empty()) first = got;
            else EXPECT_EQ(first, got) << "the SIMD and portable paths differ";
        }
        expect_close(want, native_margins(p, x, rows, Isa::Portable, false), "bitvector or generic layout");
    }
}

TEST(NativeKernel, DepthsAndShapes) {
    unsigned seed = 1;
    for (int depth = 0; depth <= 12; ++depth)
        for (spec::Comparison cmp : {spec::Comparison::Less, spec::Comparison::LessEqual})
            run_case({depth, depth >= 11 ? 5 : 37, 1, 7, cmp, 0.3}, seed++);
}

TEST(NativeKernel, MultiGroupAndFeatureWidths) {
    unsigned seed = 100;
    for (int features : {1, 16, 32, 33, 64, 65, 128})
        for (int groups : {1, 3})
            run_case({6, 40, groups, features, spec::Comparison::Less, 0.2}, seed++);
    run_case({5, 2, 4, 9, spec::Comparison::LessEqual, 0.2}, seed++);  // groups without trees
}

TEST(NativeKernel, BalancedAndSingleLeafTrees) {
    run_case({8, 33, 1, 28, spec::Comparison::Less, 0.0}, 7);
    run_case({3, 50, 2, 5, spec::Comparison::LessEqual, 0.9}, 8);
}

TEST(NativeKernel, RowsWithoutNaN) {
    std::mt19937 rng(11);
    spec::Pipeline p = testing::make_pipeline(spec::Task::Regression, spec::PostTransform::Identity, 1, 20,
                                              spec::Comparison::Less);
    TreeShape shape;
    shape.max_depth = 8;
    testing::add_trees(p, rng, 70, shape);
    const int64_t rows = 333;
    std::vector<float> x = testing::random_inputs(rng, rows, 20);
    for (float& v : x)
        if (std::isnan(v)) v = testing::grid_value(rng);
    x[5 * 20 + 3] = std::numeric_limits<float>::quiet_NaN();  // one row with one NaN among clean ones
    const std::vector<float> want = reference_margins(p, x, rows);
    for (Isa isa : isas()) expect_close(want, native_margins(p, x, rows, isa), kernels::isa_name(isa));
}

TEST(NativeKernel, DeepTreesUseTheGenericLayout) {
    std::mt19937 rng(12);
    spec::Pipeline p = testing::make_pipeline(spec::Task::Regression, spec::PostTransform::Identity, 2, 6,
                                              spec::Comparison::LessEqual);
    TreeShape shape;
    shape.max_depth = 20;
    shape.leaf_probability = 0.45;
    testing::add_trees(p, rng, 9, shape);
    shape.leaf_probability = 0.0;  // one full tree of depth 9: 512 leaves, past the bitvector layout's 256
    shape.max_depth = 9;
    testing::add_trees(p, rng, 1, shape);
    const kernels::PackedEnsemble packed = kernels::pack(p.model);
    EXPECT_EQ(packed.meta[kernels::kMetaLayout], static_cast<int64_t>(kernels::Layout::Generic));
    const int64_t rows = 257;
    const std::vector<float> x = testing::random_inputs(rng, rows, 6);
    expect_close(reference_margins(p, x, rows), native_margins(p, x, rows, Isa::Auto), "generic");
}

TEST(NativeKernel, NegativeZeroAndInfiniteThresholds) {
    spec::Pipeline p = testing::make_pipeline(spec::Task::Regression, spec::PostTransform::Identity, 1, 2,
                                              spec::Comparison::Less);
    const float inf = std::numeric_limits<float>::infinity();
    for (float thr : {-0.0f, 0.0f, inf, -inf, 1e-45f})
        for (spec::Comparison cmp : {spec::Comparison::Less, spec::Comparison::LessEqual}) {
            p.model.comparison = cmp;
            p.model.trees.clear();
            spec::Tree t;
            t.left = {1, -1, -1};
            t.right = {2, -1, -1};
            t.feature = {1, 0, 0};
            t.threshold = {thr, 0, 0};
            t.default_left = {1, 0, 0};
            t.value = {0, 1.0f, 2.0f};
            p.model.trees.push_back(t);
            std::vector<float> x;
            for (float v : {-0.0f, 0.0f, inf, -inf, 1e-45f, -1e-45f, std::numeric_limits<float>::quiet_NaN()})
                x.insert(x.end(), {0.0f, v});
            const int64_t rows = static_cast<int64_t>(x.size() / 2);
            for (Isa isa : isas()) expect_close(reference_margins(p, x, rows), native_margins(p, x, rows, isa), "edge");
        }
}

// Every path this machine runs against the portable one, bit for bit (not within a tolerance):
// feature counts on both sides of the 32 / 64 / 128 register layouts, < and <=, one and three
// groups, rows with NaN and ±inf (random_inputs) and rows without, shallow ensembles (AVX-512
// scores depth ≤ 4 without ranks) and deep ones.
TEST(NativeKernel, EveryPathIsBitIdenticalToPortable) {
    unsigned seed = 500;
    for (int depth : {2, 4, 7})
    for (int features : {31, 32, 33, 63, 64, 65, 127, 128})
        for (spec::Comparison cmp : {spec::Comparison::Less, spec::Comparison::LessEqual})
            for (int groups : {1, 3}) {
                std::mt19937 rng(seed++);
                spec::Pipeline p = testing::make_pipeline(spec::Task::Regression, spec::PostTransform::Identity,
                                                          groups, features, cmp);
                TreeShape shape;
                shape.max_depth = depth;
                shape.leaf_probability = 0.15;
                testing::add_trees(p, rng, 53, shape);
                const int64_t rows = 130;
                std::vector<float> x = testing::random_inputs(rng, rows, features);
                for (int64_t r = 0; r < rows; r += 2)  // every other row without NaN
                    for (int f = 0; f < features; ++f)
                        if (std::isnan(x[r * features + f])) x[r * features + f] = testing::grid_value(rng);
                const std::vector<float> portable = native_margins(p, x, rows, Isa::Portable);
                for (Isa isa : isas()) {
                    const std::vector<float> got = native_margins(p, x, rows, isa);
                    ASSERT_EQ(portable.size(), got.size());
                    EXPECT_EQ(0, std::memcmp(portable.data(), got.data(), got.size() * sizeof(float)))
                        << kernels::isa_name(isa) << " depth " << depth << " features " << features << " groups " << groups
                        << (cmp == spec::Comparison::Less ? " <" : " <=");
                }
            }
}

// pg_predict.cpu_kernel's core: auto resolves to the widest available path, an unavailable one
// is refused and leaves the process-wide choice as it was.
TEST(NativeKernel, ProcessWideChoice) {
    const std::vector<Isa> have = isas();
    ASSERT_FALSE(have.empty());
    EXPECT_EQ(Isa::Portable, have.front());
    const Isa widest = kernels::resolve_isa(Isa::Auto);
    EXPECT_NE(Isa::Auto, widest);
    for (Isa isa : {Isa::Avx512, Isa::Avx2, Isa::Neon, Isa::Portable})
        if (std::find(have.begin(), have.end(), isa) != have.end()) {
            EXPECT_EQ(isa, widest) << "auto must pick the widest path";
            break;
        }
    EXPECT_EQ(Isa::Auto, kernels::process_isa());
    for (Isa isa : {Isa::Portable, Isa::Avx2, Isa::Avx512, Isa::Neon}) {
        const bool available = std::find(have.begin(), have.end(), isa) != have.end();
        kernels::set_process_isa(Isa::Portable);
        if (available) {
            kernels::set_process_isa(isa);
            EXPECT_EQ(isa, kernels::process_isa());
        } else {
            EXPECT_THROW(kernels::set_process_isa(isa), pg_predict::Error) << kernels::isa_name(isa);
            EXPECT_EQ(Isa::Portable, kernels::process_isa());
        }
    }
    // x86 has no NEON and ARM no AVX: some path is always missing
    EXPECT_LT(have.size(), 4u);
    kernels::set_process_isa(Isa::Auto);
    Isa parsed;
    EXPECT_FALSE(kernels::parse_isa("sse4", &parsed));
    for (Isa isa : {Isa::Auto, Isa::Portable, Isa::Avx2, Isa::Avx512, Isa::Neon}) {
        ASSERT_TRUE(kernels::parse_isa(kernels::isa_name(isa), &parsed));
        EXPECT_EQ(isa, parsed);
    }
}

TEST(NativeKernel, RejectsBadPackedArrays) {
    std::mt19937 rng(13);
    spec::Pipeline p = testing::make_pipeline(spec::Task::Regression, spec::PostTransform::Identity, 1, 4,
                                              spec::Comparison::Less);
    testing::add_trees(p, rng, 3, TreeShape{});
    kernels::PackedEnsemble packed = kernels::pack(p.model);
    packed.nodes.pop_back();
    EXPECT_THROW(kernels::make_view(packed), pg_predict::Error);
    kernels::PackedEnsemble generic = kernels::pack(p.model, false);
    generic.nodes[2] = 0;  // a child pointing back at the root
    EXPECT_THROW(kernels::make_view(generic), pg_predict::Error);
    const kernels::PackedView ok = kernels::make_view(kernels::pack(p.model));
    std::vector<float> x(5 * 3), out(5);
    EXPECT_THROW(kernels::score(ok, x.data(), 5, 3, out.data()), pg_predict::Error);  // 3 columns for 4 features
}

}  // namespace
}  // namespace pg_predict
