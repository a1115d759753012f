// The CUDA tree kernel's per-thread work (src/kernels/tree_ensemble_cuda.cu) as plain inline
// functions: nvcc compiles them for the device, the host compiler for the unit tests, which run
// the same code over an emulated grid and compare it with the CPU kernel (regress/unit/
// gpu_emulation_test.cpp), so the indexing is checked on machines without a GPU.
// The packed layout is the CPU kernel's (kernels/tree_ensemble.hpp, pack()).
#pragma once

#include <cstdint>

#include "pg_predict/kernels/tree_ensemble.hpp"

#ifdef __CUDACC__
#define PG_PREDICT_HD __host__ __device__ __forceinline__
#else
#define PG_PREDICT_HD inline
#endif

namespace pg_predict::kernels::gpu {

// The rank word of value v among one feature's cuts (2^steps - 1 of them, NaN-padded): how many
// cuts are ≤ v (x < t) or < v (x <= t), << 8 | 0xFF. The CPU kernel ranks with it too, so both
// make the same decisions by construction.
PG_PREDICT_HD uint32_t rank_word(const float* cuts, int steps, float v, bool less_equal) {
    if (v != v) return detail::kNanRank;
    uint32_t base = 0;
    for (int s = steps - 1; s >= 0; --s) {
        const uint32_t cand = base + (uint32_t(1) << s);
        const float u = cuts[cand - 1];
        if (less_equal ? u < v : u <= v) base = cand;
    }
    return base << 8 | 0xFFu;
}

// The sum, lane 0 to 15, of the leaves one row reaches in one 16-tree block of depth D.
// words / leaves: the block's node words and leaves; q_row[f * stride]: the row's rank words
// (feature-major). A feature field ≥ F reads NaN, as the CPU kernel's padding ranks.
PG_PREDICT_HD float walk_block(const uint32_t* words, const float* leaves, int D, const uint32_t* q_row,
                               int64_t stride, int F) {
    float sum = 0.0f;
    for (int lane = 0; lane < kLanes; ++lane) {
        uint32_t idx = lane;
        const uint32_t* level = words;
        for (int l = 0; l < D; ++l) {
            const uint32_t w = level[idx];
            const uint32_t f = w & 0x7F;
            const uint32_t qv = f < uint32_t(F) ? q_row[int64_t(f) * stride] : detail::kNanRank;
            const uint32_t right = (qv >= w) & !(qv == detail::kNanRank && (w & 0x80));
            idx = 2 * idx + right;
            level += kLanes << l;
        }
        sum += leaves[idx];
    }
    return sum;
}

}  // namespace pg_predict::kernels::gpu
