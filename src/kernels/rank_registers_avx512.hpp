// A row's rank words in AVX-512 registers, and the rank word of each lane's node feature: one
// permute for up to 32 features, two and a blend for up to 64, a gather from memory beyond.
// Shared by the block walk (tree_ensemble_avx512.cpp) and the one-row walk (one_row_avx512.cpp);
// include it only from files compiled with -mavx512f/bw/dq/vl.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace pg_predict::kernels::detail {
namespace {

// FW: the row's rank-word stride (32, 64 or 128 features).
template <int FW>
struct RankRegisters {
    __m512i r[FW == 128 ? 1 : FW / 16];
    const uint32_t* row;
    void load(const uint32_t* q) {  // q: FW words, 64-byte aligned
        row = q;
        if constexpr (FW <= 64)
            for (int i = 0; i < FW / 16; ++i) r[i] = _mm512_load_si512(q + 16 * i);
    }
    // rank word of feature (w & 0x7F) per lane
    __m512i lookup(__m512i w) const {
        if constexpr (FW == 32) {
            return _mm512_permutex2var_epi32(r[0], w, r[1]);
        } else if constexpr (FW == 64) {
            const __m512i lo = _mm512_permutex2var_epi32(r[0], w, r[1]);
            const __m512i hi = _mm512_permutex2var_epi32(r[2], w, r[3]);
            return _mm512_mask_blend_epi32(_mm512_test_epi32_mask(w, _mm512_set1_epi32(32)), lo, hi);
        } else {
            return _mm512_i32gather_epi32(_mm512_and_si512(w, _mm512_set1_epi32(0x7F)), row, 4);
        }
    }
};

}  // namespace
}  // namespace pg_predict::kernels::detail
