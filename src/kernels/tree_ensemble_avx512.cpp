// AVX-512 scoring of the perfect layout (compiled with -mavx512f/bw/dq/vl; only called after
// the run-time CPU check). One 16-lane vector = the same row in 16 trees of a block:
//   * the row's feature ranks live in registers (2 or 4 zmm for ≤ 32 / ≤ 64 features), so
//     "x[feature of the node]" is one vpermt2d instead of a gather;
//   * the top 3 levels' node words come from registers: level l of the block is 2^l vectors,
//     picked by a tree of blends on the decisions already taken (no gather);
//   * the walk is compiled per depth and fully unrolled, 8 rows at a time, so indices, masks
//     and ranks stay in registers and 8 independent gathers are in flight;
//   * a node test is one unsigned compare of rank words (see tree_ensemble.hpp);
//   * below, one 32-bit gather per level fetches the node word; one more gathers the leaf.
// The row blocks, groups and sums are block_driver.hpp's; this file holds the AVX-512 walk and
// ranks.
#include "pg_predict/kernels/tree_ensemble.hpp"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
#include <immintrin.h>

// GCC 12 warns about the undefined source operand inside its own gather intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "block_driver.hpp"
#include "rank_registers_avx512.hpp"
#include "splitters.hpp"
#include "with_depth.hpp"

namespace pg_predict::kernels {
namespace detail {
namespace {

static_assert(kBlockRows % 16 == 0, "rows are ranked 16 at a time");
// Levels whose node words come from registers by blends (7 vectors); below, gathers. With the
// walk unrolled at a compile-time depth and 8 rows in flight, a gather is cheaper than the
// blends and spills of a fourth or fifth register level (measured: 500 trees of depth 8,
// 1.28 s per 1M rows with 4 levels + 16 L1 blends and 4 rows, 0.78 s like this).
constexpr int kTop = 3;
constexpr int kRowsInFlight = 8; // level 4 by blends from L1 instead of a gather

// The first 5 steps of each feature's rank search come from two registers of splitters.
using Splitters = detail::Splitters<5>;

// The AVX-512 path for block_driver.hpp.
struct Avx512 {
    using RankTables = Splitters;
    using Widths = FeatureWidths<32, 64>;
    static constexpr uint32_t kNanWord = kNanRank;
};
template <int FW>
using Scratch = BlockScratch<Avx512, FW>;

// Ranks of rows [0, n) of x (row-major, `cols` wide) for every feature, 16 rows per vector:
// a branch-free binary search over the feature's NaN-padded cut table, its first steps from
// the splitters in registers and the rest by gathers.
template <int kQStride>
void compute_ranks(const PackedView& v, const Splitters& sp, const float* x, int64_t n, int64_t cols,
                   Scratch<kQStride>& s) {
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i row_off = _mm512_mullo_epi32(lane, _mm512_set1_epi32(static_cast<int>(cols)));
    const __m512i q_off = _mm512_mullo_epi32(lane, _mm512_set1_epi32(kQStride));
    const __m512i all_ones = _mm512_set1_epi32(-1), low_ff = _mm512_set1_epi32(0xFF), one = _mm512_set1_epi32(1);
    const int pred = v.less_equal ? _CMP_LT_OQ : _CMP_LE_OQ;  // cut < x, or cut ≤ x
    auto passed = [pred](__m512 u, __m512 xv) {
        return pred == _CMP_LT_OQ ? _mm512_cmp_ps_mask(u, xv, _CMP_LT_OQ) : _mm512_cmp_ps_mask(u, xv, _CMP_LE_OQ);
    };
    for (int64_t r0 = 0; r0 < n; r0 += 16) {
        const __mmask16 live = n - r0 >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - r0)) - 1);
        __mmask16 nan_rows = 0;
        const float* xr = x + r0 * cols;
        for (int f = 0; f < v.num_features; ++f) {
            const __m512 xv = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), live, row_off, xr + f, 4);
            const float* cuts = v.cuts + v.cut_offset()[f];
            const int k = v.cut_steps()[f];
            const __m512 s0 = _mm512_load_ps(sp.of(f)), s1 = _mm512_load_ps(sp.of(f) + 16);
            __m512i base = _mm512_setzero_si512(), node = _mm512_setzero_si512();
            int st = k - 1;
            for (; st >= 0 && st >= k - Splitters::kProbeSteps; --st) {
                const __m512 u = _mm512_permutex2var_ps(s0, node, s1);
                const __mmask16 m = passed(u, xv);
                base = _mm512_mask_add_epi32(base, m, base, _mm512_set1_epi32(1 << st));
                node = _mm512_add_epi32(_mm512_add_epi32(node, node), _mm512_mask_add_epi32(one, m, one, one));
            }
            for (; st >= 0; --st) {
                const __m512i cand = _mm512_add_epi32(base, _mm512_set1_epi32(1 << st));
                const __m512 u = _mm512_i32gather_ps(cand, cuts - 1, 4);
                base = _mm512_mask_mov_epi32(base, passed(u, xv), cand);
            }
            __m512i qv = _mm512_or_si512(_mm512_slli_epi32(base, 8), low_ff);
            const __mmask16 nan = _mm512_cmp_ps_mask(xv, xv, _CMP_UNORD_Q);
            qv = _mm512_mask_mov_epi32(qv, nan, all_ones);
            nan_rows |= nan;
            _mm512_mask_i32scatter_epi32(s.q + r0 * kQStride + f, live, q_off, qv, 4);
        }
        for (int i = 0; i < 16 && r0 + i < n; ++i) s.has_nan[r0 + i] = (nan_rows >> i) & 1;
    }
}

// Lanes that go right at node words w.
template <int FW, bool NaN>
inline __mmask16 go_right(__m512i w, const RankRegisters<FW>& q) {
    const __m512i v = q.lookup(w);
    const __mmask16 ge = _mm512_cmpge_epu32_mask(v, w);
    if constexpr (!NaN) {
        return ge;
    } else {
        // NaN's rank word is all ones (≥ every word: right); default-left nodes send it left.
        const __mmask16 nan = _mm512_cmpeq_epi32_mask(v, _mm512_set1_epi32(-1));
        const __mmask16 dl = _mm512_test_epi32_mask(w, _mm512_set1_epi32(0x80));
        return _kandn_mask16(_kand_mask16(nan, dl), ge);
    }
}

inline __m512i step(__m512i idx, __mmask16 right) {
    idx = _mm512_add_epi32(idx, idx);
    return _mm512_mask_sub_epi32(idx, right, idx, _mm512_set1_epi32(-1));
}

// One block of 16 trees over K rows: acc[r] += leaf values. The K rows are interleaved so the
// gathers of independent rows overlap; D is a constant so the walk unrolls into registers.
template <int FW, bool NaN, int K, int D>
inline void rows_k(const uint32_t* words, const float* leaves, const __m512i* lv, const uint32_t* q,
                   float* acc) {
    constexpr int kQStride = FW;
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    RankRegisters<FW> rr[K];
    __m512i idx[K];
    __mmask16 d0[K], d1[K], d2[K];
    _Pragma("GCC unroll 16") for (int k = 0; k < K; ++k) {
        rr[k].load(q + k * kQStride);
        idx[k] = lane;
    }
    if (D > 0) {
        _Pragma("GCC unroll 16") for (int k = 0; k < K; ++k) {
            d0[k] = go_right<FW, NaN>(lv[0], rr[k]);
            idx[k] = step(idx[k], d0[k]);
        }
    }
    if (D > 1) {
        _Pragma("GCC unroll 16") for (int k = 0; k < K; ++k) {
            const __m512i w = _mm512_mask_blend_epi32(d0[k], lv[1], lv[2]);
            d1[k] = go_right<FW, NaN>(w, rr[k]);
            idx[k] = step(idx[k], d1[k]);
        }
    }
    if (D > 2) {
        _Pragma("GCC unroll 16") for (int k = 0; k < K; ++k) {
            const __m512i a = _mm512_mask_blend_epi32(d1[k], lv[3], lv[4]);
            const __m512i b = _mm512_mask_blend_epi32(d1[k], lv[5], lv[6]);
            const __m512i w = _mm512_mask_blend_epi32(d0[k], a, b);
            d2[k] = go_right<FW, NaN>(w, rr[k]);
            idx[k] = step(idx[k], d2[k]);
        }
    }
    const uint32_t* level = words + kLanes * ((1 << kTop) - 1);
    _Pragma("GCC unroll 16") for (int l = kTop; l < D; ++l) {
        _Pragma("GCC unroll 16") for (int k = 0; k < K; ++k) {
            const __m512i w = _mm512_i32gather_epi32(idx[k], level, 4);
            idx[k] = step(idx[k], go_right<FW, NaN>(w, rr[k]));
        }
        level += kLanes << l;
    }
    _Pragma("GCC unroll 16") for (int k = 0; k < K; ++k) {
        const __m512 leaf = _mm512_i32gather_ps(idx[k], leaves, 4);
        float* a = acc + k * kLanes;
        _mm512_store_ps(a, _mm512_add_ps(_mm512_load_ps(a), leaf));
    }
}

template <int FW, int D>
void block_rows(const uint32_t* words, const float* leaves, const Scratch<FW>& s, int64_t n) {
    constexpr int kQStride = FW;
    // Node words of the top levels (2^kTop - 1 vectors, zeros below depth D).
    constexpr int kTopVectors = (1 << kTop) - 1;
    __m512i lv[kTopVectors];
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int l = 0, i = 0; l < kTop; ++l)
        for (int p = 0; p < (1 << l); ++p, ++i)
            // Level l vector p holds position p of all 16 trees: word[16·(2^l-1) + lane·2^l + p].
            lv[i] = l >= D ? _mm512_setzero_si512()
                           : _mm512_i32gather_epi32(_mm512_add_epi32(_mm512_slli_epi32(lane, l), _mm512_set1_epi32(p)),
                                                    words + kLanes * ((1 << l) - 1), 4);
    in_row_groups<kRowsInFlight>(s, n, [&](auto nan, auto rows, int64_t r) {
        rows_k<FW, decltype(nan)::value, decltype(rows)::value, D>(words, leaves, lv, s.q + r * kQStride,
                                                                   s.acc + r * kLanes);
    });
}

template <int FW>
void walk_block(const uint32_t* words, const float* leaves, int depth, const Scratch<FW>& s, int64_t n) {
    with_depth(depth, [&](auto d) { block_rows<FW, decltype(d)::value>(words, leaves, s, n); });
}

}  // namespace

PerfectPath avx512_path() {
    return [](const PackedView& v, const float* x, int64_t rows, int64_t cols, float* margins) {
        if (!score_shallow_avx512(v, x, rows, cols, margins)) score_perfect<Avx512>(v, x, rows, cols, margins);
    };
}

}  // namespace detail
}  // namespace pg_predict::kernels

#else  // no AVX-512 flags for this file (e.g. another architecture)

namespace pg_predict::kernels::detail {
PerfectPath avx512_path() { return nullptr; }
}  // namespace pg_predict::kernels::detail

#endif
