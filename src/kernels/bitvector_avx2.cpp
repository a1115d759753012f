// AVX2 scoring of the bitvector layout (vQS: Lucchese et al., "Exploiting CPU SIMD extensions
// to speed-up document scoring with tree ensembles", SIGIR 2016). Compiled with -mavx2 -mfma;
// only called after the run-time CPU check. One ymm vector = one state word for 8 rows, and a
// pass takes two (16 rows): per entry the rows compare their feature with the threshold at once,
// and the rows that go right clear the entry's bits in that word. A feature's run ends at the
// first entry that none of the 16 fails (thresholds ascend). Exit leaves: the lowest set bit of
// the first non-zero word, found without a loop per row, then one gather of 8 leaves. Same decisions, same float sums
// in tree order as bitvector_portable.cpp and the generic walk: results equal bit for bit.
#include "bitvector.hpp"
#include "pg_predict/kernels/thread_pool.hpp"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

namespace pg_predict::kernels::detail {
namespace {

constexpr int kLanes8 = 8;
constexpr int kV = 2;                      // vectors per pass: each entry is read once for 16 rows
constexpr int kPass = kV * kLanes8;
// Rows transposed together: up to 256 (a block's entries are read from L2 once for all of
// them), fewer for wide rows so that the transposed rows stay within 64 KB.
int64_t row_block(int64_t features) {
    return std::clamp<int64_t>(65536 / (4 * std::max<int64_t>(features, 1)) / kPass * kPass, kPass, 256);
}

// One thread's buffers, 32-byte aligned: the rows transposed (xt[f][r]), the rows' NaN lanes
// per feature and group of 8, the state of one block for a pass of 16 rows, the sums per output
// group.
struct Scratch {
    float* xt;
    uint8_t* nan_lanes;  // [group][f]
    __m256i* state;      // kBitvectorBlockWords × kV
    float* acc;          // [G][rows]
    int64_t rows;        // row_block(F)
    void* mem;
    Scratch(int64_t F, int G) : rows(row_block(F)) {
        const size_t xt_bytes = F * rows * 4, nan_bytes = (rows / kLanes8 * F + 31) / 32 * 32,
                     state_bytes = kBitvectorBlockWords * 32 * kV, acc_bytes = size_t(G) * rows * 4;
        mem = std::aligned_alloc(32, xt_bytes + nan_bytes + state_bytes + acc_bytes + 32);
        if (!mem) throw std::bad_alloc();
        char* p = static_cast<char*>(mem);
        xt = reinterpret_cast<float*>(p);
        nan_lanes = reinterpret_cast<uint8_t*>(p + xt_bytes);
        state = reinterpret_cast<__m256i*>(p + xt_bytes + nan_bytes);
        acc = reinterpret_cast<float*>(p + xt_bytes + nan_bytes + state_bytes);
    }
    ~Scratch() { std::free(mem); }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
};

// Clears, for the rows of xv that go right at each entry of [e0, e1), the entry's bits.
template <bool LessEqual>
inline void fail_nodes(const __m256* xv, const float* thr, const int32_t* entry, int64_t e0, int64_t e1, __m256i* state) {
    constexpr int kRight = LessEqual ? _CMP_GT_OQ : _CMP_GE_OQ;  // NaN: never (its own pass)
    int64_t i = e0;
    auto one = [&](int64_t k) {
        const __m256 t = _mm256_broadcast_ss(thr + k);
        const __m256i clear = _mm256_set1_epi32(entry[2 * k + 1]);
        __m256i* s = state + kV * (entry[2 * k] & INT32_MAX);
        __m256i any = _mm256_setzero_si256();
        for (int j = 0; j < kV; ++j) {
            const __m256i right = _mm256_castps_si256(_mm256_cmp_ps(xv[j], t, kRight));
            _mm256_store_si256(s + j, _mm256_andnot_si256(_mm256_and_si256(right, clear), _mm256_load_si256(s + j)));
            any = _mm256_or_si256(any, right);
        }
        return any;
    };
    for (; i + 4 <= e1; i += 4) {
        one(i);
        one(i + 1);
        one(i + 2);
        const __m256i last = one(i + 3);
        if (_mm256_testz_si256(last, last)) return;  // no row fails a later one either
    }
    for (; i < e1; ++i) {
        const __m256i right = one(i);
        if (_mm256_testz_si256(right, right)) return;
    }
}

// NaN lanes fail the default-right nodes of the feature.
inline void fail_nan(__m256i nan, const int32_t* entry, int64_t e0, int64_t e1, __m256i* state) {
    for (int64_t i = e0; i < e1; ++i) {  // branch-free: the flags are as random as the data
        __m256i* s = state + kV * (entry[2 * i] & INT32_MAX);
        const int32_t bits = entry[2 * i + 1] & (entry[2 * i] >> 31);  // the flag, spread: all or none
        const __m256i clear = _mm256_and_si256(nan, _mm256_set1_epi32(bits));
        _mm256_store_si256(s, _mm256_andnot_si256(clear, _mm256_load_si256(s)));
    }
}

// Index of the lowest set bit of each lane (& 31: a zero word, which a valid model never leaves,
// reads bit 1 of its tree rather than anything outside it). The isolated bit converted to float
// carries its position in the exponent.
inline __m256i lowest_bit(__m256i w) {
    const __m256i low = _mm256_and_si256(w, _mm256_sub_epi32(_mm256_setzero_si256(), w));
    const __m256i exponent = _mm256_srli_epi32(_mm256_castps_si256(_mm256_cvtepi32_ps(low)), 23);
    return _mm256_and_si256(_mm256_sub_epi32(exponent, _mm256_set1_epi32(127)), _mm256_set1_epi32(31));
}

// The 8 rows' leaf values of tree t: its first non-zero word per lane, then the lowest bit.
inline __m256 exit_leaves(const PackedView::Bitvectors& b, int64_t t, const __m256i* state) {
    const int words = b.tree_words[t];
    const __m256i* w = state + kV * b.tree_slot[t];
    __m256i word = _mm256_load_si256(w + kV * (words - 1)), index = _mm256_set1_epi32(32 * (words - 1));
    for (int k = words - 2; k >= 0; --k) {
        const __m256i here = _mm256_load_si256(w + kV * k);
        const __m256i zero = _mm256_cmpeq_epi32(here, _mm256_setzero_si256());
        word = _mm256_blendv_epi8(here, word, zero);
        index = _mm256_blendv_epi8(_mm256_set1_epi32(32 * k), index, zero);
    }
    index = _mm256_add_epi32(_mm256_add_epi32(index, lowest_bit(word)), _mm256_set1_epi32(b.leaf_base[t]));
    return _mm256_i32gather_ps(b.leaves, index, 4);
}

void score_rows(const PackedView& v, const float* x, int64_t n, int64_t cols, float* margins, Scratch& s) {
    const PackedView::Bitvectors& b = v.bits;
    const int64_t F = v.num_features;
    const int G = v.num_groups;
    const int64_t R = s.rows;
    // Transpose (rows past n read 0: their lanes are computed and dropped).
    for (int64_t f = 0; f < F; ++f)
        for (int64_t r = 0; r < R; ++r) s.xt[f * R + r] = r < n ? x[r * cols + f] : 0.0f;
    const int groups = static_cast<int>((n + kPass - 1) / kPass) * kV;  // padded rows read 0
    for (int k = 0; k < groups; ++k)
        for (int64_t f = 0; f < F; ++f) {
            const __m256 xv = _mm256_load_ps(s.xt + f * R + k * kLanes8);
            s.nan_lanes[k * F + f] = static_cast<uint8_t>(_mm256_movemask_ps(_mm256_cmp_ps(xv, xv, _CMP_UNORD_Q)));
        }
    std::fill(s.acc, s.acc + G * R, 0.0f);
    const __m256i ones = _mm256_set1_epi32(-1);
    for (int64_t blk = 0; blk < b.blocks; ++blk) {
        const int32_t* begin = b.entry_begin + blk * F;
        const int64_t t0 = b.block_tree[blk], t1 = b.block_tree[blk + 1];
        for (int k = 0; k < groups; k += kV) {  // kV groups of 8 rows a pass
            for (int32_t w = 0; w < kV * b.block_words[blk]; ++w) _mm256_store_si256(s.state + w, ones);
            for (int64_t f = 0; f < F; ++f) {
                __m256 xv[kV];
                for (int j = 0; j < kV; ++j) xv[j] = _mm256_load_ps(s.xt + f * R + (k + j) * kLanes8);
                if (v.less_equal) fail_nodes<true>(xv, b.threshold, b.entry, begin[f], begin[f + 1], s.state);
                else fail_nodes<false>(xv, b.threshold, b.entry, begin[f], begin[f + 1], s.state);
                for (int j = 0; j < kV; ++j)
                    if (s.nan_lanes[(k + j) * F + f])
                        fail_nan(_mm256_castps_si256(_mm256_cmp_ps(xv[j], xv[j], _CMP_UNORD_Q)), b.entry, begin[f],
                                 begin[f + 1], s.state + j);
            }
            for (int j = 0; j < kV; ++j) {
                if (G == 1) {  // the sum stays in a register
                    float* a = s.acc + (k + j) * kLanes8;
                    __m256 sum = _mm256_load_ps(a);
                    for (int64_t t = t0; t < t1; ++t) sum = _mm256_add_ps(sum, exit_leaves(b, t, s.state + j));
                    _mm256_store_ps(a, sum);
                } else {
                    for (int64_t t = t0; t < t1; ++t) {
                        float* a = s.acc + v.tree_group()[t] * R + (k + j) * kLanes8;
                        _mm256_store_ps(a, _mm256_add_ps(_mm256_load_ps(a), exit_leaves(b, t, s.state + j)));
                    }
                }
            }
        }
    }
    for (int64_t r = 0; r < n; ++r)
        for (int g = 0; g < G; ++g) margins[r * G + g] = s.acc[g * R + r];
}

// Rows per thread's share: at most a row block, and cut so that every thread gets as many. The
// runtime calls a program on chunks of about 10 ms (3 row blocks of a 255-leaf LightGBM model),
// and 3 blocks on 2 threads had one of them idle a third of the time (1.27x from the second).
int64_t share_rows(int64_t rows, int64_t block) {
    const int64_t threads = std::max(1, pool_threads());
    const int64_t blocks = (rows + block - 1) / block;
    const int64_t shares = (blocks + threads - 1) / threads * threads;
    return std::min(block, ((rows + shares - 1) / shares + kPass - 1) / kPass * kPass);
}

void score_bitvector_avx2(const PackedView& v, const float* x, int64_t rows, int64_t cols, float* margins) {
    parallel_for(0, rows, share_rows(rows, row_block(v.num_features)), [&](int64_t begin, int64_t end) {
        Scratch s(v.num_features, v.num_groups);
        for (int64_t r = begin; r < end; r += s.rows)
            score_rows(v, x + r * cols, std::min(s.rows, end - r), cols, margins + r * v.num_groups, s);
    });
}

}  // namespace

PerfectPath bitvector_avx2_path() { return score_bitvector_avx2; }

}  // namespace pg_predict::kernels::detail

#else  // built without AVX2 flags (another architecture)

namespace pg_predict::kernels::detail {
PerfectPath bitvector_avx2_path() { return nullptr; }
}  // namespace pg_predict::kernels::detail

#endif
