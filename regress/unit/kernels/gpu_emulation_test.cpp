// The CUDA tree kernel's per-thread code (kernels/tree_ensemble_gpu.hpp), run here on the CPU
// over the grid tree_ensemble_cuda.cu launches: ranks feature-major, one partial sum per (row,
// 16-tree block), then per row the blocks in order. Its margins must match the CPU kernel's
// (same decisions; sums within float rounding), so the layout and indexing are checked on
// machines without a GPU. The real kernel is compared on a GPU by Device.CudaMatchesCpu*.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "pg_predict/kernels/tree_ensemble.hpp"
#include "pg_predict/kernels/tree_ensemble_gpu.hpp"
#include "tree_gen.hpp"

namespace pg_predict {
namespace {

// What the three launches compute, thread by thread.
std::vector<float> emulate(const kernels::PackedView& v, const std::vector<float>& x, int64_t rows) {
    const int F = v.num_features, G = v.num_groups, D = v.depth;
    std::vector<uint32_t> q(static_cast<size_t>(rows * F));
    for (int64_t i = 0; i < rows * F; ++i) {  // ranks_kernel
        const int f = static_cast<int>(i % F);
        const int64_t row = i / F;
        q[f * rows + row] = kernels::gpu::rank_word(v.cuts + v.cut_offset()[f], v.cut_steps()[f], x[i], v.less_equal);
    }
    const int64_t node_words = kernels::kLanes * ((int64_t(1) << D) - 1), leaf_words = int64_t(kernels::kLanes) << D;
    std::vector<float> partial(static_cast<size_t>(v.units * rows));
    for (int64_t b = 0; b < v.units; ++b)  // trees_kernel: blockIdx.y = b
        for (int64_t row = 0; row < rows; ++row)
            partial[b * rows + row] = kernels::gpu::walk_block(
                reinterpret_cast<const uint32_t*>(v.nodes) + b * node_words, v.leaves + b * leaf_words, D,
                q.data() + row, rows, F);
    std::vector<float> margins(static_cast<size_t>(rows * G), 0.0f);
    for (int64_t row = 0; row < rows; ++row)  // reduce_kernel
        for (int64_t b = 0; b < v.units; ++b) margins[row * G + v.block_group()[b]] += partial[b * rows + row];
    return margins;
}

void check(int trees, int depth, int features, int groups, spec::Comparison cmp, uint32_t seed) {
    std::mt19937 rng(seed);
    auto p = testing::make_pipeline(groups > 1 ? spec::Task::Classification : spec::Task::Regression,
                                    spec::PostTransform::Identity, groups, features, cmp);
    testing::add_trees(p, rng, trees, testing::TreeShape{depth, 0.3, true});
    const kernels::PackedEnsemble packed = kernels::pack(p.model);
    const kernels::PackedView v = kernels::make_view(packed);
    ASSERT_EQ(v.layout, kernels::Layout::Perfect);
    const int64_t rows = 517;
    const std::vector<float> x = testing::random_inputs(rng, rows, features);
    std::vector<float> want(static_cast<size_t>(rows * groups));
    kernels::score(v, x.data(), rows, features, want.data(), kernels::Isa::Portable);
    const std::vector<float> got = emulate(v, x, rows);
    const std::string what = std::to_string(trees) + " trees depth " + std::to_string(depth) + ", " +
                             std::to_string(features) + " features, " + std::to_string(groups) + " groups";
    int bad = 0;
    for (size_t i = 0; i < want.size() && bad < 5; ++i)
        if (!(std::fabs(got[i] - want[i]) <= 1e-5f * std::max(1.0f, std::fabs(want[i])))) {
            ++bad;
            ADD_FAILURE() << what << ": [" << i << "] emulated GPU " << got[i] << ", CPU " << want[i];
        }
}

TEST(GpuEmulation, MatchesTheCpuKernel) {
    check(1, 1, 1, 1, spec::Comparison::Less, 1);
    check(37, 4, 7, 1, spec::Comparison::Less, 2);
    check(50, 8, 28, 1, spec::Comparison::LessEqual, 3);
    check(45, 6, 12, 3, spec::Comparison::Less, 4);  // groups: blocks padded per group
    check(20, 12, 128, 2, spec::Comparison::LessEqual, 5);
}

}  // namespace
}  // namespace pg_predict
