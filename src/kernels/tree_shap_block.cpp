// TreeSHAP over a batch (see kernels/tree_shap.hpp): rows in blocks of 64, transposed so that a
// node's decisions for the block are one 64-bit mask; the portable block evaluation (the
// reference the AVX-512 path matches bit for bit) and the untabled paths both paths share.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "pg_predict/common/error.hpp"
#include "pg_predict/kernels/thread_pool.hpp"
#include "pg_predict/kernels/tree_shap.hpp"

namespace pg_predict::kernels {
namespace detail {

// The untabled paths vectorize well: one clone per x86 ISA, picked once at load time by the CPU.
// Both block evaluations call the same clone, so they agree bit for bit.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SHAP_ISA_CLONES __attribute__((target_clones("arch=skylake-avx512", "avx2", "default")))
#else
#define SHAP_ISA_CLONES
#endif

// XGBoost's ExtendPath / UnwoundPathSum per path over the block's rows: O(d²) per row.
SHAP_ISA_CLONES void shap_untabled_paths(const ShapView& v, const int32_t* tree, ShapBlock& b) {
    constexpr int kB = kShapBlock;
    float* phi_group = b.phi.data() + size_t(tree[4]) * (v.players + 1) * kB;
    for (int32_t q = tree[2]; q < tree[2] + tree[3]; ++q) {
        const int32_t first = v.paths[2 * q], d = v.paths[2 * q + 1];
        const double value = v.path_values[q];
        // One fractions: 1 where the row takes every edge of the element.
        for (int e = 0; e < d; ++e) {
            const int32_t* el = v.elements + 3 * (first + e);
            const uint64_t takes = shap_term(v, b, el[1], el[2]);
            double* one = b.one.data() + size_t(e) * kB;
            for (int r = 0; r < kB; ++r) one[r] = double((takes >> r) & 1u);
        }
        // ExtendPath for the root's dummy element, then each element in order.
        double* w = b.weight.data();
        for (int r = 0; r < kB; ++r) w[r] = 1.0;
        for (int ud = 1; ud <= d; ++ud) {
            const double zero = v.zero_fractions[first + ud - 1];
            const double* one = b.one.data() + size_t(ud - 1) * kB;
            double* top = w + size_t(ud) * kB;
            for (int r = 0; r < kB; ++r) top[r] = 0.0;
            for (int i = ud - 1; i >= 0; --i) {
                const double up = double(i + 1) / (ud + 1), stay = zero * double(ud - i) / (ud + 1);
                double* wi = w + size_t(i) * kB;
                double* wn = w + size_t(i + 1) * kB;
                for (int r = 0; r < kB; ++r) {
                    wn[r] += one[r] * wi[r] * up;
                    wi[r] *= stay;
                }
            }
        }
        // Each element's UnwoundPathSum, for one fraction 1 and 0 (selected per row).
        for (int e = 0; e < d; ++e) {
            const double zero = v.zero_fractions[first + e];
            const double* one = b.one.data() + size_t(e) * kB;
            double total1[kB], next[kB], total0[kB];
            const double* wd = w + size_t(d) * kB;
            for (int r = 0; r < kB; ++r) {
                next[r] = wd[r];
                total1[r] = 0.0;
                total0[r] = 0.0;
            }
            for (int i = d - 1; i >= 0; --i) {
                const double up = double(d + 1) / (i + 1), down = zero * double(d - i) / (d + 1);
                const double back = zero > 0.0 ? double(d + 1) / (zero * (d - i)) : 0.0;
                const double* wi = w + size_t(i) * kB;
                for (int r = 0; r < kB; ++r) {
                    const double tmp = next[r] * up;
                    total1[r] += tmp;
                    next[r] = wi[r] - tmp * down;
                    total0[r] += wi[r] * back;
                }
            }
            float* phi = phi_group + size_t(v.elements[3 * (first + e)]) * kB;
            for (int r = 0; r < b.rows; ++r) {
                const double total = one[r] != 0.0 ? total1[r] : total0[r];
                phi[r] += static_cast<float>(total * (one[r] - zero) * value);
            }
        }
    }
}

namespace {

// Bytes of 0 or 1 → bits (byte i → bit i), and back: 8 rows per 64-bit word (byte i of the
// word being the i-th in memory).
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "bits_of and bytes_of assume a little-endian CPU");
uint64_t bits_of(const uint8_t* bytes) {
    uint64_t word;
    std::memcpy(&word, bytes, 8);
    return (word * 0x0102040810204080ULL) >> 56;
}
uint64_t bytes_of(uint64_t bits) {
    const uint64_t spread = ((bits & 0xFF) * 0x0101010101010101ULL) & 0x8040201008040201ULL;
    return ((spread + 0x7F7F7F7F7F7F7F7FULL) >> 7) & 0x0101010101010101ULL;
}

// A node's decisions for the block's 64 rows (past `rows` too: nobody reads those). Ordered
// compares, so NaN is false, then takes the default direction.
template <bool kLessEqual>
void decisions(const ShapView& v, const int32_t* tree, ShapBlock& b) {
    for (int32_t n = 0; n < tree[1]; ++n) {
        const int32_t col = v.nodes[2 * (tree[0] + n)];
        if (col < 0) continue;
        const float th = v.thresholds[tree[0] + n];
        const float* x = b.x.data() + size_t(col) * kShapBlock;
        alignas(64) uint8_t goes[kShapBlock];
        for (int r = 0; r < kShapBlock; ++r) goes[r] = kLessEqual ? x[r] <= th : x[r] < th;
        uint64_t left = 0;
        for (int r = 0; r < kShapBlock; r += 8) left |= bits_of(goes + r) << r;
        const uint64_t nan = b.nan[size_t(col)];
        b.left[size_t(n)] = v.nodes[2 * (tree[0] + n) + 1] != 0 ? left | nan : left & ~nan;
    }
}

}  // namespace

void shap_tree_portable(const ShapView& v, const int32_t* tree, ShapBlock* blocks, int count) {
    for (int i = 0; i < count; ++i) {
        if (v.less_equal)
            decisions<true>(v, tree, blocks[i]);
        else
            decisions<false>(v, tree, blocks[i]);
    }
    const size_t group = size_t(tree[4]) * (v.players + 1);
    for (int32_t s = tree[5]; s < tree[5] + tree[6]; ++s) {
        const int32_t* st = v.subtrees + 5 * s;
        const int32_t terms = st[1], slots = st[3];
        const float* table = v.tables + st[4];
        for (int i = 0; i < count; ++i) {
            ShapBlock& b = blocks[i];
            // Each row's combination of terms (up to 8 terms: 8 rows' bytes per word), then its
            // row of the table.
            uint32_t index[kShapBlock] = {};
            if (terms <= 8) {
                uint64_t bytes[kShapBlock / 8] = {};
                for (int32_t k = 0; k < terms; ++k) {
                    const int32_t* term = v.terms + 2 * (st[0] + k);
                    const uint64_t rows = shap_term(v, b, term[0], term[1]);
                    for (int w = 0; w < kShapBlock / 8; ++w) bytes[w] |= bytes_of(rows >> (8 * w)) << k;
                }
                for (int r = 0; r < b.rows; ++r) index[r] = uint32_t(bytes[r / 8] >> (8 * (r % 8))) & 0xFFu;
            } else {
                for (int32_t k = 0; k < terms; ++k) {
                    const int32_t* term = v.terms + 2 * (st[0] + k);
                    const uint64_t rows = shap_term(v, b, term[0], term[1]);
                    for (int r = 0; r < b.rows; ++r) index[r] |= uint32_t((rows >> r) & 1u) << k;
                }
            }
            for (int32_t j = 0; j < slots; ++j) {
                float* phi = b.phi.data() + (group + size_t(v.slots[st[2] + j])) * kShapBlock;
                for (int r = 0; r < b.rows; ++r) phi[r] += table[size_t(index[r]) * slots + j];
            }
        }
    }
    for (int i = 0; i < count; ++i) shap_untabled_paths(v, tree, blocks[i]);
}

}  // namespace detail

void tree_shap(const ShapView& v, const float* x, int64_t rows, int64_t cols, float* out, int threads, Isa isa,
               const float* bias) {
    if (cols != v.columns)
        fail(ErrorCategory::InvalidModel, "tree_shap: the batch has " + std::to_string(cols) +
                                              " columns, the model reads " + std::to_string(v.columns));
    const bool simd = resolve_isa(isa) == Isa::Avx512 && detail::shap_avx512_compiled();
    constexpr int kB = detail::kShapBlock;
    const int64_t width = int64_t(v.groups) * (v.players + 1);
    // Chunks of a few ms: about 2M steps (a node decision, a term, a table read, a path's d²).
    int64_t work = 1;
    for (int64_t t = 0; t < v.num_trees; ++t) {
        const int32_t* tr = v.trees + 7 * t;
        work += tr[1];
        for (int32_t s = tr[5]; s < tr[5] + tr[6]; ++s) work += v.subtrees[5 * s + 1] + v.subtrees[5 * s + 3];
        for (int32_t q = tr[2]; q < tr[2] + tr[3]; ++q)
            work += int64_t(v.paths[2 * q + 1] + 1) * (v.paths[2 * q + 1] + 1);
    }
    const int64_t blocks = (rows + kB - 1) / kB;
    const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 21) / (work * kB));
    // Blocks go through the trees together, a panel at a time: a tree's tables are read from
    // memory once per panel, then from cache for each of its blocks.
    // 16 blocks (1024 rows), fewer where their inputs and contributions would pass 4 MB
    // (thousands of columns).
    const int64_t panel_blocks = std::clamp<int64_t>((int64_t(1) << 22) / ((width + cols) * kB * 4), 1, 16);
    const int64_t panels = (blocks + panel_blocks - 1) / panel_blocks;
    const auto tree_fn = simd ? detail::shap_tree_avx512 : detail::shap_tree_portable;
    run_parallel(std::max(1, threads), 0, panels, std::max<int64_t>(1, grain / panel_blocks),
                 [&](int64_t begin, int64_t end) {
        std::vector<detail::ShapBlock> panel(size_t(std::min<int64_t>(panel_blocks, blocks - begin * panel_blocks)));
        for (detail::ShapBlock& b : panel) {
            b.x.assign(size_t(cols) * kB, 0.0f);
            b.nan.assign(size_t(cols), 0);
            b.left.assign(size_t(std::max(1, v.max_nodes)), 0);
            b.phi.assign(size_t(width) * kB, 0.0f);
            b.one.assign(size_t(std::max(1, v.max_elements)) * kB, 0.0);
            b.weight.assign(size_t(v.max_elements + 1) * kB, 0.0);
        }
        for (int64_t p = begin; p < end; ++p) {
            const int64_t first_block = p * panel_blocks;
            const size_t count = size_t(std::min<int64_t>(panel_blocks, blocks - first_block));
            for (size_t i = 0; i < count; ++i) {
                detail::ShapBlock& b = panel[i];
                const int64_t row0 = (first_block + int64_t(i)) * kB;
                b.rows = static_cast<int>(std::min<int64_t>(kB, rows - row0));
                for (int64_t c = 0; c < cols; ++c) {
                    float* column = b.x.data() + size_t(c) * kB;
                    uint64_t nan = 0;
                    for (int r = 0; r < b.rows; ++r) {
                        column[r] = x[(row0 + r) * cols + c];
                        nan |= uint64_t(std::isnan(column[r])) << r;
                    }
                    for (int r = b.rows; r < kB; ++r) column[r] = 0.0f;
                    b.nan[size_t(c)] = nan;
                }
                std::fill(b.phi.begin(), b.phi.end(), 0.0f);
            }
            for (int64_t t = 0; t < v.num_trees; ++t) tree_fn(v, v.trees + 7 * t, panel.data(), int(count));
            for (size_t i = 0; i < count; ++i) {
                const detail::ShapBlock& b = panel[i];
                const int64_t row0 = (first_block + int64_t(i)) * kB;
                for (int r = 0; r < b.rows; ++r)
                    for (int64_t k = 0; k < width; ++k)
                        out[(row0 + r) * width + k] = b.phi[size_t(k) * kB + r] + (bias ? bias[k] : 0.0f);
            }
        }
    });
}

}  // namespace pg_predict::kernels
