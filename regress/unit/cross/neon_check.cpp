// Cross-checks the NEON kernel against the portable one, bit for bit, on random ensembles:
// depths 0..12, both comparisons, 1 and 3 groups, feature counts around the 32 / 64 / 128
// boundaries, rows with NaN and ±inf, row counts that are not multiples of any block. Built for
// AArch64 and run under qemu by scripts/check-neon.sh; the kernel files are torch-free, so only
// the row-block parallelism (defined in the torch TU) is replaced by a serial loop here.
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "pg_predict/kernels/tree_ensemble.hpp"
#include "pg_predict/spec/pipeline.hpp"
#include "../tree_gen.hpp"

namespace pg_predict::kernels::detail {
void parallel_for(int64_t begin, int64_t end, int64_t, const std::function<void(int64_t, int64_t)>& fn) {
    fn(begin, end);
}
}  // namespace pg_predict::kernels::detail

namespace {

using namespace pg_predict;

std::vector<float> margins(const kernels::PackedView& view, const std::vector<float>& x, int64_t rows,
                           kernels::Isa isa) {
    std::vector<float> out(static_cast<size_t>(rows * view.num_groups), -12345.0f);
    kernels::score(view, x.data(), rows, view.num_features, out.data(), isa);
    return out;
}

}  // namespace

int main() {
    if (!kernels::detail::neon_path() || kernels::resolve_isa(kernels::Isa::Auto) != kernels::Isa::Neon) {
        std::printf("FAIL: the NEON path is not compiled in or not what auto picks\n");
        return 1;
    }
    int cases = 0, failures = 0;
    unsigned seed = 1;
    for (int depth = 0; depth <= 12; ++depth)
        for (int features : {1, 7, 31, 32, 33, 63, 64, 65, 127, 128})
            for (int groups : {1, 3})
                for (spec::Comparison cmp : {spec::Comparison::Less, spec::Comparison::LessEqual}) {
                    if (depth >= 10 && features != 33) continue;  // keep the run short under qemu
                    std::mt19937 rng(seed++);
                    spec::Pipeline p = testing::make_pipeline(spec::Task::Regression, spec::PostTransform::Identity,
                                                              groups, features, cmp);
                    testing::TreeShape shape;
                    shape.max_depth = depth;
                    shape.leaf_probability = 0.2;
                    testing::add_trees(p, rng, depth >= 10 ? 20 : 37, shape);
                    const kernels::PackedEnsemble packed = kernels::pack(p.model);
                    const kernels::PackedView view = kernels::make_view(packed);
                    if (view.layout != kernels::Layout::Perfect) {
                        std::printf("FAIL: depth %d features %d packed generic\n", depth, features);
                        return 1;
                    }
                    for (int64_t rows : {1, 17, 65, 200}) {
                        const std::vector<float> x = testing::random_inputs(rng, rows, features);
                        const std::vector<float> want = margins(view, x, rows, kernels::Isa::Portable);
                        const std::vector<float> got = margins(view, x, rows, kernels::Isa::Neon);
                        ++cases;
                        if (std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) != 0) {
                            ++failures;
                            for (size_t i = 0; i < want.size(); ++i)
                                if (std::memcmp(&want[i], &got[i], sizeof(float)) != 0) {
                                    std::printf("FAIL: depth %d features %d groups %d %s rows %lld: element %zu "
                                                "portable %.9g neon %.9g\n",
                                                depth, features, groups, cmp == spec::Comparison::Less ? "<" : "<=",
                                                static_cast<long long>(rows), i, want[i], got[i]);
                                    break;
                                }
                        }
                    }
                }
    std::printf("%d cases, %d differ from the portable path\n", cases, failures);
    return failures == 0 ? 0 : 1;
}
