// TreeSHAP's block evaluation with AVX-512 (compiled with -mavx512f/bw/dq/vl; only called after
// the run-time CPU check). The same arithmetic as shap_tree_portable, rows as the SIMD lanes:
//   * a node's decisions for 16 rows are one compare into a mask (the block's 64 rows: 4);
//   * a term's rows are ANDs of those 64-bit masks; the block's table indices are built as bytes
//     (or 16-bit words), one masked OR per term for all 64 rows;
//   * two slots' table reads for 8 rows are one 64-bit gather, sorted back into rows by a permute,
//     and added to the slots' players in the same order as the portable loop, so every row's
//     float32 sums are the same bits.
#include "pg_predict/kernels/tree_shap.hpp"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
#include <immintrin.h>

// GCC 12 warns about the undefined source operand inside its own gather intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace pg_predict::kernels::detail {

namespace {

template <bool kLessEqual>
void decisions(const ShapView& v, const int32_t* tree, int vectors, ShapBlock& b) {
    for (int32_t n = 0; n < tree[1]; ++n) {
        const int32_t col = v.nodes[2 * (tree[0] + n)];
        if (col < 0) continue;
        const __m512 th = _mm512_set1_ps(v.thresholds[tree[0] + n]);
        const float* x = b.x.data() + size_t(col) * kShapBlock;
        // Ordered compares: NaN is false here, then takes the default direction below.
        const auto goes_left = [&](int j) {
            const __m512 xv = _mm512_loadu_ps(x + 16 * j);
            return kLessEqual ? _mm512_cmp_ps_mask(xv, th, _CMP_LE_OQ) : _mm512_cmp_ps_mask(xv, th, _CMP_LT_OQ);
        };
        uint64_t left = 0;
        if (vectors == 4) {
            left = _cvtmask64_u64(_mm512_kunpackd(_mm512_kunpackw(goes_left(3), goes_left(2)),
                                                  _mm512_kunpackw(goes_left(1), goes_left(0))));
        } else {
            for (int j = 0; j < vectors; ++j) left |= uint64_t(goes_left(j)) << (16 * j);
        }
        const uint64_t nan = b.nan[size_t(col)];
        b.left[size_t(n)] = v.nodes[2 * (tree[0] + n) + 1] != 0 ? left | nan : left & ~nan;
    }
}

template <bool kLessEqual>
void one_tree(const ShapView& v, const int32_t* tree, ShapBlock* blocks, int count) {
    for (int i = 0; i < count; ++i) decisions<kLessEqual>(v, tree, (blocks[i].rows + 15) / 16, blocks[i]);
    const size_t group = size_t(tree[4]) * (v.players + 1);
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    for (int32_t s = tree[5]; s < tree[5] + tree[6]; ++s) {
        const int32_t* st = v.subtrees + 5 * s;
        const int32_t terms = st[1], slots = st[3];
        const float* table = v.tables + st[4];
        const __m512i stride = _mm512_set1_epi32(slots);
        for (int i = 0; i < count; ++i) {
            ShapBlock& b = blocks[i];
            const int vectors = (b.rows + 15) / 16;
            // Each row's combination of terms: one masked OR per term over the 64 rows as bytes
            // (up to 8 terms) or as 16-bit words, then widened and scaled to the table's rows.
            __m512i index[kShapBlock / 16];
            if (terms <= 8) {
                __m512i bytes = _mm512_setzero_si512();
                for (int32_t k = 0; k < terms; ++k) {
                    const int32_t* term = v.terms + 2 * (st[0] + k);
                    const __mmask64 rows = _cvtu64_mask64(shap_term(v, b, term[0], term[1]));
                    bytes = _mm512_or_si512(bytes, _mm512_maskz_set1_epi8(rows, char(1 << k)));
                }
                index[0] = _mm512_cvtepu8_epi32(_mm512_castsi512_si128(bytes));
                index[1] = _mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(bytes, 1));
                index[2] = _mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(bytes, 2));
                index[3] = _mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(bytes, 3));
            } else {
                __m512i low = _mm512_setzero_si512(), high = _mm512_setzero_si512();
                for (int32_t k = 0; k < terms; ++k) {
                    const int32_t* term = v.terms + 2 * (st[0] + k);
                    const uint64_t rows = shap_term(v, b, term[0], term[1]);
                    const __m512i bit = _mm512_set1_epi16(short(1 << k));
                    low = _mm512_or_si512(low, _mm512_maskz_mov_epi16(__mmask32(rows), bit));
                    high = _mm512_or_si512(high, _mm512_maskz_mov_epi16(__mmask32(rows >> 32), bit));
                }
                index[0] = _mm512_cvtepu16_epi32(_mm512_castsi512_si256(low));
                index[1] = _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(low, 1));
                index[2] = _mm512_cvtepu16_epi32(_mm512_castsi512_si256(high));
                index[3] = _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(high, 1));
            }
            for (int j = 0; j < vectors; ++j) index[j] = _mm512_mullo_epi32(index[j], stride);
            // Two slots at a time: one 64-bit read per row brings both (half the loads of two
            // 32-bit gathers), then a permute apiece sorts them back into rows.
            int32_t q = 0;
            for (; q + 1 < slots; q += 2) {
                float* phi0 = b.phi.data() + (group + size_t(v.slots[st[2] + q])) * kShapBlock;
                float* phi1 = b.phi.data() + (group + size_t(v.slots[st[2] + q + 1])) * kShapBlock;
                for (int j = 0; j < vectors; ++j) {
                    const __m512 low = _mm512_castpd_ps(
                        _mm512_i32gather_pd(_mm512_castsi512_si256(index[j]), table + q, 4));
                    const __m512 high = _mm512_castpd_ps(
                        _mm512_i32gather_pd(_mm512_extracti32x8_epi32(index[j], 1), table + q, 4));
                    const __m512 first = _mm512_permutex2var_ps(low, even, high);
                    const __m512 second = _mm512_permutex2var_ps(low, odd, high);
                    _mm512_storeu_ps(phi0 + 16 * j, _mm512_add_ps(_mm512_loadu_ps(phi0 + 16 * j), first));
                    _mm512_storeu_ps(phi1 + 16 * j, _mm512_add_ps(_mm512_loadu_ps(phi1 + 16 * j), second));
                }
            }
            if (q < slots) {
                float* phi = b.phi.data() + (group + size_t(v.slots[st[2] + q])) * kShapBlock;
                for (int j = 0; j < vectors; ++j) {
                    const __m512 read = _mm512_i32gather_ps(index[j], table + q, 4);
                    _mm512_storeu_ps(phi + 16 * j, _mm512_add_ps(_mm512_loadu_ps(phi + 16 * j), read));
                }
            }
        }
    }
    for (int i = 0; i < count; ++i) shap_untabled_paths(v, tree, blocks[i]);
}

}  // namespace

bool shap_avx512_compiled() { return true; }

void shap_tree_avx512(const ShapView& v, const int32_t* tree, ShapBlock* blocks, int count) {
    if (v.less_equal)
        one_tree<true>(v, tree, blocks, count);
    else
        one_tree<false>(v, tree, blocks, count);
}

}  // namespace pg_predict::kernels::detail

#else

#include "pg_predict/common/error.hpp"

namespace pg_predict::kernels::detail {
bool shap_avx512_compiled() { return false; }
void shap_tree_avx512(const ShapView&, const int32_t*, ShapBlock*, int) {
    fail(ErrorCategory::Unsupported, "tree_shap: this build has no AVX-512 path");
}
}  // namespace pg_predict::kernels::detail

#endif
