// The register tiling that the RBF and projection SIMD paths share (rbf_<isa>.cpp,
// project_<isa>.cpp): rows [begin, end) against m outputs, in tiles of 4 rows × 2 vectors of
// outputs (the last rows one at a time). Per inner index the tile loads its 2 vectors of the
// padded, transposed right-hand side once and broadcasts each row's value, so the 8
// accumulators stay in registers; output tiles are the outer loop, so their k × 2 vectors stay
// in L1 over the rows.
//
// L is an ISA's lanes of doubles (double_lanes.hpp); Op is the kernel (Project, Rbf below):
//   Vec accumulate(Vec acc, Vec x, Vec c)         // acc after one inner index
//   auto finish(int64_t j, int64_t valid)          // f(acc, half): the output vector of a half
// Each SIMD file instantiates tile_rows in itself, so it is compiled with that file's -m flags;
// everything here has internal linkage.
#pragma once

#include <algorithm>
#include <cstdint>

namespace pg_predict::kernels::detail {
namespace {

constexpr int kTileRows = 4;

// Rows i0 .. i0 + R - 1, outputs j .. j + 2·L::kWidth - 1. Out of line: inlined into the row
// loop, the kernel's constants (exp's) get hoisted out of it and the accumulators spill.
template <class L, int R, class Op>
__attribute__((noinline)) void tile(const double* x, int64_t i0, int64_t k, const double* ct, int64_t padded, int64_t j, int64_t m,
                 const Op& op, double* out) {
    using Vec = typename L::Vec;
    Vec acc[R][2];
    // Unrolled so the accumulators stay in registers (a loop over r spills them to the stack).
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = L::broadcast(0.0);
    for (int64_t l = 0; l < k; ++l) {
        const Vec c0 = L::load(ct + l * padded + j);
        const Vec c1 = L::load(ct + l * padded + j + L::kWidth);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
            const Vec xv = L::broadcast(x[(i0 + r) * k + l]);
            acc[r][0] = op.accumulate(acc[r][0], xv, c0);
            acc[r][1] = op.accumulate(acc[r][1], xv, c1);
        }
    }
    const int64_t valid = std::min<int64_t>(2 * L::kWidth, m - j);
    const auto finish = op.finish(j, valid);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) L::store_first(out + (i0 + r) * m + j, finish(acc[r][0], 0), finish(acc[r][1], 1), valid);
}

// out[i][j] for rows [begin, end) and outputs [0, m); ct is k × padded (padded ≥ m, a multiple
// of 2·L::kWidth).
template <class L, class Op>
void tile_rows(const double* x, int64_t begin, int64_t end, int64_t k, const double* ct, int64_t padded, int64_t m,
               const Op& op, double* out) {
    for (int64_t j = 0; j < m; j += 2 * L::kWidth) {
        int64_t i = begin;
        for (; i + kTileRows <= end; i += kTileRows) tile<L, kTileRows>(x, i, k, ct, padded, j, m, op, out);
        for (; i < end; ++i) tile<L, 1>(x, i, k, ct, padded, j, m, op, out);
    }
}

// The projection's lane: the sum of products in input order, never fused (project_<isa>.cpp are
// compiled with -ffp-contract=off), then + offset.
template <class L>
struct Project {
    using Vec = typename L::Vec;
    const double* offset;
    Vec accumulate(Vec acc, Vec x, Vec w) const { return acc + x * w; }
    auto finish(int64_t j, int64_t valid) const {
        Vec b[2];
        L::load_first(offset + j, valid, b);
        return [b0 = b[0], b1 = b[1]](Vec acc, int half) { return acc + (half ? b1 : b0); };
    }
};

// The RBF kernel's lane: (x - s)² summed by FMAs, then exp(-γ·sum). L adds to its lanes
// fmadd and exp, the latter rbf_math.hpp's operations lane by lane (rbf_<isa>.cpp).
template <class L>
struct Rbf {
    using Vec = typename L::Vec;
    Vec neg_gamma;
    Vec accumulate(Vec acc, Vec x, Vec sv) const {
        const Vec d = x - sv;
        return L::fmadd(d, d, acc);
    }
    auto finish(int64_t, int64_t) const {
        return [g = neg_gamma](Vec acc, int) { return L::exp(g * acc); };
    }
};

}  // namespace
}  // namespace pg_predict::kernels::detail
