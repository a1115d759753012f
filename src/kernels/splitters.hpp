// The first probes of each feature's rank search (a branch-free binary search over the
// feature's NaN-padded cut table, as gpu::rank_word does it), laid out so a SIMD path can take
// those steps from registers with permutes instead of gathers.
//
// Probe (2^j - 1) + i of step j is cuts[i·2^(st+1) + 2^st - 1], st = steps - 1 - j: breadth-first
// order, so after each step the probe's index is node = 2·node + 1 (cut ≥ x) or + 2 (cut < x).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "pg_predict/kernels/tree_ensemble.hpp"

namespace pg_predict::kernels::detail {

template <int kSteps>
struct Splitters {
    static constexpr int kProbeSteps = kSteps;
    static constexpr int kWidth = 1 << kSteps;  // floats per feature (2^kSteps - 1 probes, 0-padded)
    float* table;                                // F × kWidth, 64-byte aligned

    explicit Splitters(const PackedView& v) {
        const size_t bytes = sizeof(float) * kWidth * std::max(1, v.num_features);
        table = static_cast<float*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
        if (!table) throw std::bad_alloc();
        for (int f = 0; f < v.num_features; ++f) {
            const float* cuts = v.cuts + v.cut_offset()[f];
            const int k = v.cut_steps()[f];
            float* out = table + kWidth * f;
            std::fill(out, out + kWidth, 0.0f);
            for (int j = 0, first = 0; j < std::min(k, kSteps); first += 1 << j, ++j) {
                const int st = k - 1 - j;
                for (int64_t i = 0; i < (int64_t(1) << j); ++i)
                    out[first + i] = cuts[(i << (st + 1)) + (int64_t(1) << st) - 1];
            }
        }
    }
    ~Splitters() { std::free(table); }
    Splitters(const Splitters&) = delete;
    Splitters& operator=(const Splitters&) = delete;

    const float* of(int feature) const { return table + kWidth * feature; }
};

}  // namespace pg_predict::kernels::detail
