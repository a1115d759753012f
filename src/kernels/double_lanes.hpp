// Vectors of doubles for output_tiles.hpp, one traits struct per ISA, each defined only where
// its file's flags enable it (included from rbf_<isa>.cpp and project_<isa>.cpp):
//   using Vec; kWidth lanes; load(p) (unaligned), broadcast(x), and for the first valid
//   (≤ 2·kWidth) lanes of a pair of vectors:
//   store_first(o, v0, v1, valid) to o, load_first(p, valid, v) from p (the other lanes 0).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace pg_predict::kernels::detail {
namespace {

#if defined(__AVX512F__)
struct Avx512Doubles {
    using Vec = __m512d;
    static constexpr int kWidth = 8;
    static Vec load(const double* p) { return _mm512_loadu_pd(p); }
    static Vec broadcast(double x) { return _mm512_set1_pd(x); }
    // Lanes [0, n) of a vector, n clamped to [0, 8].
    static __mmask8 first(int64_t n) { return n >= 8 ? 0xFF : n <= 0 ? 0 : static_cast<__mmask8>((1u << n) - 1); }
    static void store_first(double* o, Vec v0, Vec v1, int64_t valid) {
        _mm512_mask_storeu_pd(o, first(valid), v0);
        _mm512_mask_storeu_pd(o + 8, first(valid - 8), v1);
    }
    static void load_first(const double* p, int64_t valid, Vec v[2]) {
        v[0] = _mm512_maskz_loadu_pd(first(valid), p);
        v[1] = _mm512_maskz_loadu_pd(first(valid - 8), p + 8);
    }
};
#elif defined(__AVX2__)
struct Avx2Doubles {
    using Vec = __m256d;
    static constexpr int kWidth = 4;
    // AVX2 has no masked loads and stores of doubles: the lanes pass through a buffer.
    static void load_first(const double* p, int64_t valid, Vec v[2]) {
        alignas(32) double b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        std::copy(p, p + valid, b);
        v[0] = _mm256_load_pd(b);
        v[1] = _mm256_load_pd(b + 4);
    }
    static void store_first(double* o, Vec v0, Vec v1, int64_t valid) {
        if (valid == 8) {
            _mm256_storeu_pd(o, v0);
            _mm256_storeu_pd(o + 4, v1);
        } else {  // the last outputs: only the valid lanes
            alignas(32) double buf[8];
            _mm256_store_pd(buf, v0);
            _mm256_store_pd(buf + 4, v1);
            std::copy(buf, buf + valid, o);
        }
    }
    static Vec load(const double* p) { return _mm256_loadu_pd(p); }
    static Vec broadcast(double x) { return _mm256_set1_pd(x); }
};
#endif

}  // namespace
}  // namespace pg_predict::kernels::detail
