// AVX2 scoring of the perfect layout (compiled with -mavx2 -mfma -mbmi2; only called after the
// run-time CPU check). A block of 16 trees is two 8-lane halves; one ymm vector = one row in 8
// trees. Same decisions and summation order as the portable path, so the results are identical.
//   * AVX2 has no unsigned compare: rank words and node words are compared with the sign bit
//     flipped (both sides), which orders them as unsigned;
//   * the row's rank words for ≤ 32 features are read with vpermd from up to four vectors (no
//     gather), selected by bits 3 and 4 of the feature; wider rows gather;
//   * the top kTop levels' node words come from position-major copies of the block made once
//     per block and row block, picked by a tree of blends on the decisions already taken;
//   * below, one 8-lane gather per level fetches the node word, and one gathers the leaf.
// A walk is a chain of dependent gathers and permutes, so 2 rows × 2 halves are walked together.
// The row blocks, groups and sums are block_driver.hpp's; this file holds the AVX2 walk and ranks.
#include "pg_predict/kernels/tree_ensemble.hpp"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 inside its gather intrinsics
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <algorithm>

#include "block_driver.hpp"
#include "splitters.hpp"
#include "with_depth.hpp"

namespace pg_predict::kernels::detail {
namespace {

constexpr int kTop = 4;             // levels whose node words come from blends, not gathers
constexpr int kHalf = 8;            // lanes per vector
constexpr int kRows = 4;            // rows walked together (2 × kRows independent chains)
constexpr uint32_t kSign = 0x80000000u;

inline __m256i splat(uint32_t v) { return _mm256_set1_epi32(static_cast<int>(v)); }

// The first 4 steps of each feature's rank search come from two registers of splitters.
using Splitters = detail::Splitters<4>;

// The AVX2 path for block_driver.hpp: rank words are kept sign-flipped (see go_left).
struct Avx2 {
    using RankTables = Splitters;
    using Widths = FeatureWidths<8, 16, 32>;
    static constexpr uint32_t kNanWord = kNanRank ^ kSign;
};
template <int FW>
using Scratch = BlockScratch<Avx2, FW>;

inline __m256i select(__m256i if_clear, __m256i if_set, __m256i sign_mask) {
    return _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(if_clear), _mm256_castsi256_ps(if_set),
                                                _mm256_castsi256_ps(sign_mask)));
}

// The rank word of feature (w & 0x7F) per lane, from the row's FW rank words.
template <int FW>
inline __m256i lookup(__m256i w, const uint32_t* row) {
    const __m256i* r = reinterpret_cast<const __m256i*>(row);
    if constexpr (FW <= 8) {
        return _mm256_permutevar8x32_epi32(_mm256_load_si256(r), w);
    } else if constexpr (FW <= 32) {
        const __m256i bit3 = _mm256_slli_epi32(w, 28);  // feature bit 3 → sign: blendv's selector
        const __m256i ab = select(_mm256_permutevar8x32_epi32(_mm256_load_si256(r), w),
                                  _mm256_permutevar8x32_epi32(_mm256_load_si256(r + 1), w), bit3);
        if constexpr (FW <= 16) {
            return ab;
        } else {
            const __m256i cd = select(_mm256_permutevar8x32_epi32(_mm256_load_si256(r + 2), w),
                                      _mm256_permutevar8x32_epi32(_mm256_load_si256(r + 3), w), bit3);
            return select(ab, cd, _mm256_slli_epi32(w, 27));
        }
    } else {
        return _mm256_i32gather_epi32(reinterpret_cast<const int*>(row), _mm256_and_si256(w, splat(0x7F)), 4);
    }
}

// All-ones in the lanes that go left at node words w (sign-flipped) for a row's rank words.
template <int FW, bool NaN>
inline __m256i go_left(__m256i w, const uint32_t* row) {
    const __m256i v = lookup<FW>(w, row);
    const __m256i left = _mm256_cmpgt_epi32(w, v);  // rank < word, as unsigned
    if constexpr (!NaN) {
        return left;
    } else {
        // NaN's rank word is all ones (≥ every word: right); default-left nodes send it left.
        const __m256i nan = _mm256_cmpeq_epi32(v, splat(kNanRank ^ kSign));
        const __m256i dl = _mm256_cmpeq_epi32(_mm256_and_si256(w, splat(0x80)), splat(0x80));
        return _mm256_or_si256(left, _mm256_and_si256(nan, dl));
    }
}

// The word of the left child where `left` is set, else the right child's.
inline __m256i blend(__m256i right_word, __m256i left_word, __m256i left) {
    return select(right_word, left_word, left);
}

// idx = 2·idx + (went right)
inline __m256i step(__m256i idx, __m256i left) {
    return _mm256_add_epi32(_mm256_add_epi32(idx, idx), _mm256_add_epi32(left, splat(1)));
}

// One block of 16 trees (two halves of 8) for K rows: acc[k][16] += leaves. The 2K chains (K rows
// × 2 halves) are independent, so their latencies overlap. top: the block's position-major
// vectors of levels 0..3, 16 per half.
template <int FW, bool NaN, int K, int D>
inline void walk(const uint32_t* words, const float* leaves, const __m256i* top, const uint32_t* q, float* acc) {
    constexpr int C = 2 * K;  // chain c: row c / 2, half c % 2
    __m256i idx[C], d0[C], d1[C], d2[C];
    auto row = [&](int c) { return q + (c / 2) * FW; };
    auto tv = [&](int c, int i) { return _mm256_load_si256(top + 16 * (c % 2) + i); };
    // Levels 0..3: the node word is picked from the position-major vectors by blends on the
    // decisions already taken (dN: all-ones where level N went left).
    _Pragma("GCC unroll 16") for (int c = 0; c < C; ++c) {
        idx[c] = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), splat((c % 2) * kHalf));
        if constexpr (D == 0) continue;  // single-leaf trees: the leaf is the lane's
        d0[c] = go_left<FW, NaN>(tv(c, 0), row(c));
        idx[c] = step(idx[c], d0[c]);
    }
    if constexpr (D > 1)
        _Pragma("GCC unroll 16") for (int c = 0; c < C; ++c) {
            d1[c] = go_left<FW, NaN>(blend(tv(c, 2), tv(c, 1), d0[c]), row(c));
            idx[c] = step(idx[c], d1[c]);
        }
    if constexpr (D > 2)
        _Pragma("GCC unroll 16") for (int c = 0; c < C; ++c) {
            const __m256i a = blend(tv(c, 4), tv(c, 3), d1[c]), b = blend(tv(c, 6), tv(c, 5), d1[c]);
            d2[c] = go_left<FW, NaN>(blend(b, a, d0[c]), row(c));
            idx[c] = step(idx[c], d2[c]);
        }
    if constexpr (kTop > 3 && D > 3)
        _Pragma("GCC unroll 16") for (int c = 0; c < C; ++c) {
            __m256i e[4];
            for (int i = 0; i < 4; ++i) e[i] = blend(tv(c, 8 + 2 * i), tv(c, 7 + 2 * i), d2[c]);
            const __m256i ab = blend(e[1], e[0], d1[c]), ce = blend(e[3], e[2], d1[c]);
            idx[c] = step(idx[c], go_left<FW, NaN>(blend(ce, ab, d0[c]), row(c)));
        }
    const int top_levels = std::min(D, kTop);
    const int* level = reinterpret_cast<const int*>(words) + kLanes * ((1 << top_levels) - 1);
    _Pragma("GCC unroll 16") for (int l = top_levels; l < D; ++l) {
        _Pragma("GCC unroll 16") for (int c = 0; c < C; ++c) {
            const __m256i w = _mm256_xor_si256(_mm256_i32gather_epi32(level, idx[c], 4), splat(kSign));
            idx[c] = step(idx[c], go_left<FW, NaN>(w, row(c)));
        }
        level += kLanes << l;
    }
    _Pragma("GCC unroll 16") for (int c = 0; c < C; ++c) {
        float* a = acc + (c / 2) * kLanes + (c % 2) * kHalf;
        _mm256_store_ps(a, _mm256_add_ps(_mm256_load_ps(a), _mm256_i32gather_ps(leaves, idx[c], 4)));
    }
}

template <int FW, int D>
void block_rows(const uint32_t* words, const float* leaves, Scratch<FW>& s, int64_t n) {
    // Position-major copies of levels 0..kTop-1, sign-flipped: vector (2^l - 1 + p) of half h
    // holds position p of level l for trees 8h..8h+7.
    alignas(32) uint32_t top_words[2 * 16 * kHalf];
    const int top_levels = std::min(D, kTop);
    for (int h = 0; h < 2; ++h)
        for (int l = 0; l < top_levels; ++l)
            for (int p = 0; p < (1 << l); ++p)
                for (int t = 0; t < kHalf; ++t)
                    top_words[(h * 16 + (1 << l) - 1 + p) * kHalf + t] =
                        words[kLanes * ((1 << l) - 1) + ((h * kHalf + t) << l) + p] ^ kSign;
    const __m256i* top = reinterpret_cast<const __m256i*>(top_words);
    in_row_groups<kRows>(s, n, [&](auto nan, auto rows, int64_t r) {
        walk<FW, decltype(nan)::value, decltype(rows)::value, D>(words, leaves, top, s.q + r * FW, s.acc + r * kLanes);
    });
}

// Rank words (sign-flipped) of rows [0, n) of x for every feature, 8 rows per vector: the rank
// search of gpu::rank_word, its first steps by permutes of the splitters and the rest by gathers.
template <int FW>
void compute_ranks(const PackedView& v, const Splitters& sp, const float* x, int64_t n, int64_t cols, Scratch<FW>& s) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i row_off = _mm256_mullo_epi32(lane, splat(static_cast<uint32_t>(cols)));
    const __m256i one = splat(1);
    const int pred = v.less_equal ? _CMP_LT_OQ : _CMP_LE_OQ;  // cut < x, or cut ≤ x
    auto passed = [pred](__m256 u, __m256 xv) {
        return _mm256_castps_si256(pred == _CMP_LT_OQ ? _mm256_cmp_ps(u, xv, _CMP_LT_OQ) : _mm256_cmp_ps(u, xv, _CMP_LE_OQ));
    };
    alignas(32) uint32_t out[kHalf];
    for (int64_t r0 = 0; r0 < n; r0 += kHalf) {
        const int live = static_cast<int>(std::min<int64_t>(kHalf, n - r0));
        const __m256i live_mask = _mm256_cmpgt_epi32(splat(live), lane);
        __m256i nan_rows = _mm256_setzero_si256();
        const float* xr = x + r0 * cols;
        for (int f = 0; f < v.num_features; ++f) {
            const __m256 xv = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), xr + f, row_off,
                                                       _mm256_castsi256_ps(live_mask), 4);
            const float* cuts = v.cuts + v.cut_offset()[f];
            const int k = v.cut_steps()[f];
            const __m256 s0 = _mm256_load_ps(sp.of(f)), s1 = _mm256_load_ps(sp.of(f) + kHalf);
            __m256i base = _mm256_setzero_si256(), node = _mm256_setzero_si256();
            int st = k - 1;
            for (; st >= 0 && st >= k - Splitters::kProbeSteps; --st) {
                const __m256 u = _mm256_blendv_ps(_mm256_permutevar8x32_ps(s0, node), _mm256_permutevar8x32_ps(s1, node),
                                                  _mm256_castsi256_ps(_mm256_slli_epi32(node, 28)));
                const __m256i m = passed(u, xv);  // all ones where the row goes past the probe
                base = _mm256_add_epi32(base, _mm256_and_si256(m, splat(1u << st)));
                node = _mm256_sub_epi32(_mm256_add_epi32(_mm256_add_epi32(node, node), one), m);
            }
            for (; st >= 0; --st) {
                const __m256i cand = _mm256_add_epi32(base, splat(1u << st));
                const __m256 u = _mm256_i32gather_ps(cuts - 1, cand, 4);
                base = select(base, cand, passed(u, xv));
            }
            const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(xv, xv, _CMP_UNORD_Q));
            nan_rows = _mm256_or_si256(nan_rows, nan);
            const __m256i word = _mm256_or_si256(_mm256_slli_epi32(base, 8), splat(0xFF));
            _mm256_store_si256(reinterpret_cast<__m256i*>(out),
                               _mm256_xor_si256(select(word, splat(kNanRank), nan), splat(kSign)));
            for (int i = 0; i < live; ++i) s.q[(r0 + i) * FW + f] = out[i];
        }
        const int nan_bits = _mm256_movemask_ps(_mm256_castsi256_ps(nan_rows));
        for (int i = 0; i < live; ++i) s.has_nan[r0 + i] = (nan_bits >> i) & 1;
    }
}

template <int FW>
void walk_block(const uint32_t* words, const float* leaves, int depth, Scratch<FW>& s, int64_t n) {
    with_depth(depth, [&](auto d) { block_rows<FW, decltype(d)::value>(words, leaves, s, n); });
}

}  // namespace

PerfectPath avx2_path() { return score_perfect<Avx2>; }

}  // namespace pg_predict::kernels::detail

#else  // built without AVX2 flags (another architecture)

namespace pg_predict::kernels::detail {
PerfectPath avx2_path() { return nullptr; }
}  // namespace pg_predict::kernels::detail

#endif
