#include "pg_predict/kernels/one_row.hpp"

#include <algorithm>

#include "pg_predict/kernels/tree_ensemble_gpu.hpp"  // rank_word: ranks as every other path

namespace pg_predict::kernels {
namespace {

constexpr int kRankWords = 128;  // the perfect layout's feature field is 7 bits

void walk_one_row_portable(const PackedView& v, const uint32_t* q, float* margins) {
    const int D = v.depth;
    const int64_t node_words = kLanes * ((int64_t(1) << D) - 1), leaf_words = int64_t(kLanes) << D;
    int64_t b = 0;
    while (b < v.units) {
        const int g = v.block_group()[b];
        float acc[kLanes] = {};
        for (; b < v.units && v.block_group()[b] == g; ++b) {
            const uint32_t* words = reinterpret_cast<const uint32_t*>(v.nodes) + b * node_words;
            const float* leaves = v.leaves + b * leaf_words;
            for (int lane = 0; lane < kLanes; ++lane) {
                uint32_t idx = lane;
                const uint32_t* level = words;
                for (int l = 0; l < D; ++l) {
                    const uint32_t w = level[idx];
                    const uint32_t qv = q[w & 0x7F];
                    const uint32_t right = (qv >= w) & !(qv == detail::kNanRank && (w & 0x80));
                    idx = 2 * idx + right;
                    level += kLanes << l;
                }
                acc[lane] += leaves[idx];
            }
        }
        float sum = 0.0f;  // lane order, as score()
        for (int lane = 0; lane < kLanes; ++lane) sum += acc[lane];
        margins[g] = sum;
    }
}

}  // namespace

void score_one_row(const PackedView& v, const float* x, float* margins) {
    if (v.layout != Layout::Perfect) return score(v, x, 1, v.num_features, margins);
    // pg_predict.cpu_kernel governs this path too: AVX-512 only where the batched path would use it.
    const bool avx512 = resolve_isa(process_isa()) == Isa::Avx512 && detail::one_row_avx512_compiled();
    alignas(64) uint32_t q[kRankWords];
    std::fill(q, q + kRankWords, detail::kNanRank);
    if (avx512) {
        detail::rank_one_row_avx512(v, x, q);
    } else {
        for (int f = 0; f < v.num_features; ++f)
            q[f] = gpu::rank_word(v.cuts + v.cut_offset()[f], v.cut_steps()[f], x[f], v.less_equal);
    }
    std::fill(margins, margins + v.num_groups, 0.0f);  // a group without blocks scores 0
    if (avx512) return detail::walk_one_row_avx512(v, q, margins);
    walk_one_row_portable(v, q, margins);
}

}  // namespace pg_predict::kernels
