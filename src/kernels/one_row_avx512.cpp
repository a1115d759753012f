// AVX-512 walk of one row through the perfect layout (compiled with -mavx512f/bw/dq/vl; only
// called after the run-time CPU check). One vector = the row in the 16 trees of a block: one
// gather of node words a level (level 0 is a plain load), one of leaves, four blocks at a time;
// the row's rank words stay in registers for up to 64 features (a permute finds a node's
// feature).
#include "pg_predict/kernels/one_row.hpp"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
#include <immintrin.h>

// GCC 12 warns about the undefined source operand inside its own gather intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <type_traits>

#include "rank_registers_avx512.hpp"

namespace pg_predict::kernels::detail {
namespace {

// The leaves the row reaches in blocks [b, b + K): K independent walks interleaved, so that
// their gathers overlap instead of each level waiting for the one before.
template <int FW, int K>
inline void walk_blocks(const PackedView& v, const RankRegisters<FW>& ranks, int64_t b, __m512* leaf) {
    const int D = v.depth;
    const int64_t node_words = kLanes * ((int64_t(1) << D) - 1), leaf_words = int64_t(kLanes) << D;
    const __m512i nan_rank = _mm512_set1_epi32(-1), default_left = _mm512_set1_epi32(0x80);
    const uint32_t* level[K];
    __m512i idx[K];
    for (int k = 0; k < K; ++k) {
        level[k] = reinterpret_cast<const uint32_t*>(v.nodes) + (b + k) * node_words;
        idx[k] = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    }
    for (int l = 0; l < D; ++l) {
        for (int k = 0; k < K; ++k) {
            const __m512i w = l == 0 ? _mm512_loadu_si512(level[k]) : _mm512_i32gather_epi32(idx[k], level[k], 4);
            const __m512i qv = ranks.lookup(w);
            // Right when rank ≥ threshold rank, except NaN (all ones) at a default-left node.
            const __mmask16 right = _kandn_mask16(
                _kand_mask16(_mm512_cmpeq_epi32_mask(qv, nan_rank), _mm512_test_epi32_mask(w, default_left)),
                _mm512_cmpge_epu32_mask(qv, w));
            idx[k] = _mm512_add_epi32(idx[k], idx[k]);
            idx[k] = _mm512_mask_sub_epi32(idx[k], right, idx[k], nan_rank);  // + 1 where right
            level[k] += kLanes << l;
        }
    }
    for (int k = 0; k < K; ++k) leaf[k] = _mm512_i32gather_ps(idx[k], v.leaves + (b + k) * leaf_words, 4);
}

template <int FW>
void walk(const PackedView& v, const uint32_t* q, float* margins) {
    constexpr int K = 4;
    RankRegisters<FW> ranks;
    ranks.load(q);
    int64_t b = 0;
    while (b < v.units) {
        const int g = v.block_group()[b];
        int64_t end = b;
        while (end < v.units && v.block_group()[end] == g) ++end;
        __m512 acc = _mm512_setzero_ps();
        __m512 leaf[K];
        for (; b + K <= end; b += K) {
            walk_blocks<FW, K>(v, ranks, b, leaf);
            for (int k = 0; k < K; ++k) acc = _mm512_add_ps(acc, leaf[k]);  // block order, as score()
        }
        for (; b < end; ++b) {
            walk_blocks<FW, 1>(v, ranks, b, leaf);
            acc = _mm512_add_ps(acc, leaf[0]);
        }
        alignas(64) float lanes[kLanes];
        _mm512_store_ps(lanes, acc);
        float sum = 0.0f;  // lane order, as score()
        for (int i = 0; i < kLanes; ++i) sum += lanes[i];
        margins[g] = sum;
    }
}

}  // namespace

bool one_row_avx512_compiled() { return true; }

void rank_one_row_avx512(const PackedView& v, const float* x, uint32_t* q) {
    // gpu::rank_word's binary search, 16 features at a time: a lane takes part in step s while
    // s < its feature's steps, so each lane makes exactly the scalar search's comparisons.
    const int F = v.num_features;
    for (int f0 = 0; f0 < F; f0 += kLanes) {
        const int n = F - f0 < kLanes ? F - f0 : kLanes;
        const __mmask16 live = n == kLanes ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1);
        const __m512 xv = _mm512_maskz_loadu_ps(live, x + f0);
        const __m512i first_cut = _mm512_maskz_loadu_epi32(live, v.cut_offset() + f0);
        const __m512i steps = _mm512_maskz_loadu_epi32(live, v.cut_steps() + f0);
        int max_steps = 0;
        for (int i = 0; i < n; ++i) max_steps = v.cut_steps()[f0 + i] > max_steps ? v.cut_steps()[f0 + i] : max_steps;
        __m512i base = _mm512_setzero_si512();
        for (int s = max_steps - 1; s >= 0; --s) {
            const __mmask16 active = _mm512_mask_cmpgt_epi32_mask(live, steps, _mm512_set1_epi32(s));
            const __m512i cand = _mm512_add_epi32(base, _mm512_set1_epi32(1 << s));
            const __m512i at = _mm512_sub_epi32(_mm512_add_epi32(first_cut, cand), _mm512_set1_epi32(1));
            const __m512 u = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), active, at, v.cuts, 4);
            const __mmask16 below = v.less_equal ? _mm512_mask_cmp_ps_mask(active, u, xv, _CMP_LT_OQ)
                                                 : _mm512_mask_cmp_ps_mask(active, u, xv, _CMP_LE_OQ);
            base = _mm512_mask_mov_epi32(base, below, cand);
        }
        __m512i qv = _mm512_or_si512(_mm512_slli_epi32(base, 8), _mm512_set1_epi32(0xFF));
        qv = _mm512_mask_mov_epi32(qv, _mm512_cmp_ps_mask(xv, xv, _CMP_UNORD_Q), _mm512_set1_epi32(-1));
        _mm512_mask_storeu_epi32(q + f0, live, qv);
    }
}

void walk_one_row_avx512(const PackedView& v, const uint32_t* q, float* margins) {
    if (v.num_features <= 32) walk<32>(v, q, margins);
    else if (v.num_features <= 64) walk<64>(v, q, margins);
    else walk<128>(v, q, margins);
}

}  // namespace pg_predict::kernels::detail

#else  // no AVX-512 flags for this file (e.g. another architecture)

#include "pg_predict/common/error.hpp"

namespace pg_predict::kernels::detail {
bool one_row_avx512_compiled() { return false; }
void walk_one_row_avx512(const PackedView&, const uint32_t*, float*) {
    fail(ErrorCategory::Internal, "native tree kernel: AVX-512 one-row walk not compiled");
}
void rank_one_row_avx512(const PackedView&, const float*, uint32_t*) {
    fail(ErrorCategory::Internal, "native tree kernel: AVX-512 one-row ranks not compiled");
}
}  // namespace pg_predict::kernels::detail

#endif
