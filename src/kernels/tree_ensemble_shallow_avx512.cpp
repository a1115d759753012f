// AVX-512 scoring of shallow ensembles (perfect layout, depth ≤ 4, ≤ 64 features) without ranks.
// Each block's trees fit in registers whole, so the deep path's per-row rank search (a gather
// per step of a binary search, per feature) costs more than the trees: the 100-tree depth-3
// model spent more time ranking its rows than scoring them. Here a float becomes an int32 that
// orders like the float (-0 folded into +0, NaN above everything), each node compares the
// row's key with its threshold's key, and every level, the leaves included, is picked from
// registers by blends on the decisions taken: no gather, no rank, the same decisions and the
// same sums in the same order as the portable path (bit for bit).
#include "pg_predict/kernels/tree_ensemble.hpp"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
#include <immintrin.h>

// GCC 12 warns about the undefined source operand inside its own intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace pg_predict::kernels::detail {
namespace {

constexpr int kMaxShallowDepth = 4;
constexpr int kMaxShallowFeatures = 64;
constexpr int kRowTile = 64;  // rows per parallel grain

// One block of 16 trees by node position: level l position p at words[2^l - 1 + p] (lane =
// tree), the threshold keys beside them, and the leaves by position.
struct alignas(64) Block {
    __m512i words[15];  // feature | default_left << 7 (and the rank, unused here)
    __m512i keys[15];   // the row goes right iff its key ≥ this (INT_MIN: always)
    __m512i leaves[16];
};

inline int32_t order_key(float x) {
    x += 0.0f;  // -0 → +0
    int32_t b;
    std::memcpy(&b, &x, 4);
    return b >= 0 ? b : b ^ INT32_MAX;
}

inline __m512i order_keys(__m512 x) {
    x = _mm512_add_ps(x, _mm512_setzero_ps());
    const __m512i b = _mm512_castps_si512(x);
    const __m512i k = _mm512_xor_si512(b, _mm512_and_si512(_mm512_srai_epi32(b, 31), _mm512_set1_epi32(INT32_MAX)));
    return _mm512_mask_mov_epi32(k, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), _mm512_set1_epi32(INT32_MAX));
}

// The block table, or false when a node word is not one pack() writes (the rank path then
// scores the model, with its own handling of such words).
bool build_blocks(const PackedView& v, std::vector<Block>& out) {
    const int D = v.depth;
    const int64_t node_words = kLanes * ((int64_t(1) << D) - 1), leaf_words = int64_t(kLanes) << D;
    out.resize(v.units);
    for (int64_t b = 0; b < v.units; ++b) {
        Block& blk = out[b];
        alignas(64) int32_t w[16], k[16];
        alignas(64) float lf[16];
        for (int l = 0; l < kMaxShallowDepth; ++l)
            for (int p = 0; p < (1 << l); ++p) {
                for (int lane = 0; lane < kLanes; ++lane) {
                    int32_t word = 0;
                    if (l < D) word = v.nodes[b * node_words + kLanes * ((1 << l) - 1) + (lane << l) + p];
                    const uint32_t rank = uint32_t(word) >> 8;
                    const int f = word & 0x7F;
                    if (rank == 0) {
                        if (word != 0) return false;
                        k[lane] = INT_MIN;
                    } else {
                        if (f >= v.num_features || rank > uint32_t(v.cut_offset()[f + 1] - v.cut_offset()[f]))
                            return false;
                        const float t = v.cuts[v.cut_offset()[f] + rank - 1];
                        if (t != t) return false;
                        // x < t goes left: right iff x ≥ t; x ≤ t goes left: right iff x > t.
                        k[lane] = order_key(t) + (v.less_equal ? 1 : 0);
                    }
                    w[lane] = word;
                }
                std::memcpy(&blk.words[(1 << l) - 1 + p], w, 64);
                std::memcpy(&blk.keys[(1 << l) - 1 + p], k, 64);
            }
        for (int p = 0; p < 16; ++p) {
            for (int lane = 0; lane < kLanes; ++lane)
                lf[lane] = p < (1 << D) ? v.leaves[b * leaf_words + (int64_t(lane) << D) + p] : 0.0f;
            std::memcpy(&blk.leaves[p], lf, 64);
        }
    }
    return true;
}

// Picks, per lane, vector number (d[0] d[1] ... d[L-1]) in binary (d[0] most significant) of v.
template <int L>
inline __m512i pick(const __m512i* v, const __mmask16* d) {
    if constexpr (L == 0) {
        return _mm512_load_si512(v);
    } else {
        __m512i u[1 << (L - 1)];
        for (int i = 0; i < (1 << (L - 1)); ++i)
            u[i] = _mm512_mask_blend_epi32(d[L - 1], _mm512_load_si512(v + 2 * i), _mm512_load_si512(v + 2 * i + 1));
        return pick<L - 1>(u, d);
    }
}

template <int FW>
inline __m512i lookup(__m512i w, const __m512i* key) {
    if constexpr (FW == 32) {
        return _mm512_permutex2var_epi32(key[0], w, key[1]);
    } else {
        const __m512i lo = _mm512_permutex2var_epi32(key[0], w, key[1]);
        const __m512i hi = _mm512_permutex2var_epi32(key[2], w, key[3]);
        return _mm512_mask_blend_epi32(_mm512_test_epi32_mask(w, _mm512_set1_epi32(32)), lo, hi);
    }
}

template <int FW, bool NaN, int D, int L>
inline void levels(const Block& b, const __m512i* key, __mmask16* d) {
    if constexpr (L < D) {
        const __m512i w = pick<L>(b.words + (1 << L) - 1, d);
        const __m512i t = pick<L>(b.keys + (1 << L) - 1, d);
        const __m512i x = lookup<FW>(w, key);
        __mmask16 right = _mm512_cmpge_epi32_mask(x, t);
        if constexpr (NaN) {
            // NaN's key is INT_MAX (≥ every threshold: right); default-left nodes send it left.
            const __mmask16 nan = _mm512_cmpeq_epi32_mask(x, _mm512_set1_epi32(INT32_MAX));
            const __mmask16 dl = _mm512_test_epi32_mask(w, _mm512_set1_epi32(0x80));
            right = _kandn_mask16(_kand_mask16(nan, dl), right);
        }
        d[L] = right;
        levels<FW, NaN, D, L + 1>(b, key, d);
    }
}

// R consecutive rows through every block (R = 4: the block's vectors are loaded once for the
// four rows, whose independent chains also fill the pipeline): each group's lane sums into tile[g * 256 + r * 16].
template <int FW, int D, int R>
inline void score_tile_rows(const PackedView& v, const Block* blocks, const float* x, int64_t cols, float* tile) {
    const int F = v.num_features;
    __m512i key[R][FW / 16];
    __mmask16 nan = 0;
    for (int r = 0; r < R; ++r)
        for (int k = 0; k < FW / 16; ++k) {
            const int first = 16 * k;
            const __mmask16 m = first >= F ? 0 : (F - first >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (F - first)) - 1));
            const __m512 xv = _mm512_maskz_loadu_ps(m, x + r * cols + first);
            key[r][k] = order_keys(xv);
            nan |= _mm512_mask_cmp_ps_mask(m, xv, xv, _CMP_UNORD_Q);
        }
    int64_t b = 0;
    while (b < v.units) {
        const int g = v.block_group()[b];
        __m512 sum[R];
        for (int r = 0; r < R; ++r) sum[r] = _mm512_setzero_ps();
        for (; b < v.units && v.block_group()[b] == g; ++b)
            for (int r = 0; r < R; ++r) {
                __mmask16 d[kMaxShallowDepth];
                if (nan) levels<FW, true, D, 0>(blocks[b], key[r], d);
                else levels<FW, false, D, 0>(blocks[b], key[r], d);
                sum[r] = _mm512_add_ps(sum[r], _mm512_castsi512_ps(pick<D>(blocks[b].leaves, d)));
            }
        for (int r = 0; r < R; ++r) _mm512_store_ps(tile + g * 256 + r * 16, sum[r]);
    }
}

// Scores rows [begin, end), 16 at a time: per row, its keys in registers and every block of
// every group; then each group's 16 lane sums of the 16 rows are added up in lane order, a
// vector of rows at a time (the portable path's order, without a chain of 16 scalar adds a row).
template <int FW, int D>
void score_rows(const PackedView& v, const Block* blocks, const float* x, int64_t begin, int64_t end,
                int64_t cols, float* margins) {
    const int G = v.num_groups;
    std::vector<float, std::allocator<float>> sums(size_t(G) * 256 + 16);
    float* tile = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(sums.data()) + 63) & ~uintptr_t(63));
    const __m512i by_row = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                              _mm512_set1_epi32(16));
    for (int64_t r0 = begin; r0 < end; r0 += 16) {
        const int n = int(std::min<int64_t>(16, end - r0));
        int i = 0;
        for (; i + 4 <= n; i += 4) score_tile_rows<FW, D, 4>(v, blocks, x + (r0 + i) * cols, cols, tile + i * 16);
        for (; i < n; ++i) score_tile_rows<FW, D, 1>(v, blocks, x + (r0 + i) * cols, cols, tile + i * 16);
        std::fill(margins + r0 * G, margins + (r0 + n) * G, 0.0f);
        const __mmask16 live = n == 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1);
        int64_t b = 0;
        while (b < v.units) {
            const int g = v.block_group()[b];
            while (b < v.units && v.block_group()[b] == g) ++b;
            __m512 total = _mm512_setzero_ps();  // lane order, as the portable path
            for (int lane = 0; lane < kLanes; ++lane)
                total = _mm512_add_ps(total, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), live, by_row, tile + g * 256 + lane, 4));
            if (G == 1) {
                _mm512_mask_storeu_ps(margins + r0, live, total);
            } else {
                alignas(64) float t[16];
                _mm512_store_ps(t, total);
                for (int i = 0; i < n; ++i) margins[(r0 + i) * G + g] = t[i];
            }
        }
    }
}

bool applies(const PackedView& v) {
    return v.depth >= 1 && v.depth <= kMaxShallowDepth && v.num_features <= kMaxShallowFeatures;
}

}  // namespace

bool score_shallow_avx512(const PackedView& v, const float* x, int64_t rows, int64_t cols, float* margins) {
    if (!applies(v)) return false;
    std::vector<Block> blocks;
    if (!build_blocks(v, blocks)) return false;
    auto run = [&](auto fw, auto depth) {
        constexpr int FW = decltype(fw)::value, D = decltype(depth)::value;
        parallel_for(0, rows, kRowTile, [&](int64_t begin, int64_t end) {
            score_rows<FW, D>(v, blocks.data(), x, begin, end, cols, margins);
        });
    };
    auto by_depth = [&](auto fw) {
        switch (v.depth) {
            case 1: run(fw, std::integral_constant<int, 1>()); break;
            case 2: run(fw, std::integral_constant<int, 2>()); break;
            case 3: run(fw, std::integral_constant<int, 3>()); break;
            default: run(fw, std::integral_constant<int, 4>()); break;
        }
    };
    if (v.num_features <= 32) by_depth(std::integral_constant<int, 32>());
    else by_depth(std::integral_constant<int, 64>());
    return true;
}

}  // namespace pg_predict::kernels::detail

#else  // no AVX-512 flags for this file

namespace pg_predict::kernels::detail {
bool score_shallow_avx512(const PackedView&, const float*, int64_t, int64_t, float*) { return false; }
}  // namespace pg_predict::kernels::detail

#endif
