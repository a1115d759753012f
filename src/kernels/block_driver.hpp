// The block driver of the perfect layout, one template for every path (portable, AVX2, AVX-512,
// NEON): rows in blocks of kBlockRows, each block's rank words computed once, then walked block
// of 16 trees by block, output group by group; a group's 16 lane accumulators are summed in lane
// order 0..15. Every path thus makes the same additions in the same order, which is what keeps
// them bit for bit equal; only the ranking and the walk of one block of trees differ.
//
// An ISA is a traits struct Isa holding only what differs:
//   using RankTables = ...;             // built once per thread from the view (NoRankTables: none)
//   using Widths = FeatureWidths<...>;  // the rank-word strides it is compiled for
//   static constexpr uint32_t kNanWord; // a NaN's rank word as its walk reads it
// and two functions beside it that the driver finds by the scratch's type (BlockScratch<Isa, FW>):
//   compute_ranks(view, tables, x, n, cols, scratch)   // q and has_nan of rows [0, n) of x
//   walk_block(words, leaves, depth, scratch, n)       // acc[r][lane] += leaf, rows [0, n)
// Each ISA file instantiates score_perfect<Isa> itself, so the driver is compiled with that
// file's -m flags. Everything here has internal linkage (an unnamed namespace), so no copy
// compiled with one file's flags can stand in for another file's at link time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

#include "pg_predict/kernels/tree_ensemble.hpp"
#include "pg_predict/kernels/tree_ensemble_gpu.hpp"  // rank_word: every path ranks alike

namespace pg_predict::kernels::detail {
namespace {

constexpr int64_t kBlockRows = 64;  // rows ranked together, then walked block of trees by block
constexpr int kMaxWidth = 128;      // the widest rank-word stride (features ≤ 128)

// The rank-word strides a path is compiled for, narrowest first; wider rows take kMaxWidth.
template <int... W>
struct FeatureWidths {};

// fn(std::integral_constant<int, FW>) for the narrowest FW of `Widths` that holds F features.
template <int W, int... Rest, typename Fn>
void with_width(int features, FeatureWidths<W, Rest...>, Fn&& fn) {
    if (features <= W) return fn(std::integral_constant<int, W>());
    with_width(features, FeatureWidths<Rest...>(), std::forward<Fn>(fn));
}
template <typename Fn>
void with_width(int, FeatureWidths<>, Fn&& fn) {
    fn(std::integral_constant<int, kMaxWidth>());
}

// One thread's buffers for a block of rows: rank words (FW a row, initialised to the ISA's NaN
// word so that the padding past F reads as NaN), lane accumulators and the rows' NaN flags, in
// one 64-byte aligned allocation.
template <class Isa, int FW>
struct BlockScratch {
    uint32_t* q;       // kBlockRows × FW rank words
    float* acc;        // kBlockRows × kLanes
    uint8_t* has_nan;  // kBlockRows
    void* mem;
    BlockScratch() {
        const size_t bytes = kBlockRows * FW * 4 + kBlockRows * kLanes * 4 + kBlockRows;
        mem = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
        if (!mem) throw std::bad_alloc();
        q = static_cast<uint32_t*>(mem);
        acc = reinterpret_cast<float*>(q + kBlockRows * FW);
        has_nan = reinterpret_cast<uint8_t*>(acc + kBlockRows * kLanes);
        for (int64_t i = 0; i < kBlockRows * FW; ++i) q[i] = Isa::kNanWord;
    }
    ~BlockScratch() { std::free(mem); }
    BlockScratch(const BlockScratch&) = delete;
    BlockScratch& operator=(const BlockScratch&) = delete;
};

// Rows [0, n) of a block in groups of K walked together, then the rest one at a time:
// walk(nan, rows, r) with the group's first row r, rows = std::integral_constant<int, K or 1>
// and nan = std::bool_constant, set when a row of the group has a NaN (always for single rows),
// so that a SIMD walk is compiled without its NaN tests for the common groups.
template <int K, class S, class Walk>
inline void in_row_groups(const S& s, int64_t n, Walk&& walk) {
    int64_t r = 0;
    for (; r + K <= n; r += K) {
        bool nan = false;
        for (int k = 0; k < K; ++k) nan |= s.has_nan[r + k] != 0;
        if (nan) walk(std::true_type(), std::integral_constant<int, K>(), r);
        else walk(std::false_type(), std::integral_constant<int, K>(), r);
    }
    for (; r < n; ++r) walk(std::true_type(), std::integral_constant<int, 1>(), r);
}

// The scalar ranks (portable and NEON): gpu::rank_word per row and feature.
struct NoRankTables {
    explicit NoRankTables(const PackedView&) {}
};

template <class Isa, int FW>
void compute_ranks(const PackedView& v, const NoRankTables&, const float* x, int64_t n, int64_t cols,
                   BlockScratch<Isa, FW>& s) {
    for (int64_t r = 0; r < n; ++r) {
        uint8_t nan = 0;
        for (int f = 0; f < v.num_features; ++f) {
            const uint32_t w =
                gpu::rank_word(v.cuts + v.cut_offset()[f], v.cut_steps()[f], x[r * cols + f], v.less_equal);
            s.q[r * FW + f] = w;
            nan |= w == kNanRank;
        }
        s.has_nan[r] = nan;
    }
}

// The scalar paths' traits (portable, NEON): those ranks, one stride for every width.
struct ScalarPath {
    using RankTables = NoRankTables;
    using Widths = FeatureWidths<>;
    static constexpr uint32_t kNanWord = kNanRank;
};

template <class Isa, int FW>
void score_range(const PackedView& v, const float* x, int64_t begin, int64_t end, int64_t cols, float* margins) {
    BlockScratch<Isa, FW> s;
    const typename Isa::RankTables tables(v);
    const int G = v.num_groups, D = v.depth;
    const int64_t node_words = kLanes * ((int64_t(1) << D) - 1), leaf_words = int64_t(kLanes) << D;
    const uint32_t* words = reinterpret_cast<const uint32_t*>(v.nodes);
    for (int64_t r0 = begin; r0 < end; r0 += kBlockRows) {
        const int64_t n = std::min(kBlockRows, end - r0);
        compute_ranks(v, tables, x + r0 * cols, n, cols, s);
        for (int64_t r = 0; r < n; ++r) std::fill(margins + (r0 + r) * G, margins + (r0 + r + 1) * G, 0.0f);
        int64_t b = 0;
        while (b < v.units) {
            const int g = v.block_group()[b];
            std::memset(s.acc, 0, sizeof(float) * kLanes * n);
            for (; b < v.units && v.block_group()[b] == g; ++b)
                walk_block(words + b * node_words, v.leaves + b * leaf_words, D, s, n);
            for (int64_t r = 0; r < n; ++r) {
                float sum = 0.0f;  // lane order 0..15: every path sums alike
                for (int lane = 0; lane < kLanes; ++lane) sum += s.acc[r * kLanes + lane];
                margins[(r0 + r) * G + g] = sum;
            }
        }
    }
}

// Scores rows [0, rows) of x into margins, row blocks spread over the threads.
template <class Isa>
void score_perfect(const PackedView& v, const float* x, int64_t rows, int64_t cols, float* margins) {
    with_width(v.num_features, typename Isa::Widths(), [&](auto fw) {
        constexpr int FW = decltype(fw)::value;
        parallel_for(0, rows, kBlockRows, [&](int64_t begin, int64_t end) {
            score_range<Isa, FW>(v, x, begin, end, cols, margins);
        });
    });
}

}  // namespace
}  // namespace pg_predict::kernels::detail
