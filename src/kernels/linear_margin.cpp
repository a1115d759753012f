// The fused linear margin (kernels/linear_margin.hpp). Compiled with -ffp-contract=off: no
// compiler may fuse a product into its add, or the bits would differ from the tensor program's.
//
// Rows go in blocks: per term, its column is copied out of the row-major batch (widened to
// float64), then one vectorized pass over the block with the term's kind decided once adds the
// term into the block's sums.
#include "pg_predict/kernels/linear_margin.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "pg_predict/common/error.hpp"
#include "pg_predict/kernels/tree_ensemble.hpp"  // detail::parallel_for

namespace pg_predict::kernels {
namespace {

constexpr int64_t kBlockRows = 128;
constexpr int64_t kSmallBlockRows = 8;  // one row or a few (the per-row path): not 128 lanes of work
constexpr int64_t kGrainRows = 4096;  // rows per task of the pool: a term costs a nanosecond a row

// One term over a block's values v of its column (B of them, the tail past the rows zero):
// impute (NaN, or the step's finite missing value; NaN when there is none, which equals
// nothing), then the number, its scaling or the one-hot indicator, times the weight, into acc.
// Fixed trip counts, no branches on the values: the compiler vectorizes each loop.
template <int64_t B>
void add_term(const LinearTerm& t, const double* __restrict v, double* __restrict acc) {
    const double statistic = t.statistic, missing = t.missing, a = t.a, b = t.b, w = t.weight;
    switch (t.kind) {
    case LinearTermKind::Number:
        for (int64_t i = 0; i < B; ++i) {
            const double x = (std::isnan(v[i]) | (v[i] == missing)) ? statistic : v[i];
            acc[i] = acc[i] + x * w;
        }
        break;
    case LinearTermKind::Scaled:
        for (int64_t i = 0; i < B; ++i) {
            const double x = (std::isnan(v[i]) | (v[i] == missing)) ? statistic : v[i];
            const double scaled = x * a + b;  // two roundings: -ffp-contract=off
            acc[i] = acc[i] + scaled * w;
        }
        break;
    case LinearTermKind::Indicator: {
        // hit · w is w for a hit (1 · w) and 0 · w otherwise (±0, NaN for an infinite w): picked
        // rather than multiplied, the same bits. The NaN category matches NaN only.
        const double miss_w = 0.0 * w;
        if (std::isnan(a)) {
            for (int64_t i = 0; i < B; ++i) {
                const double x = (std::isnan(v[i]) | (v[i] == missing)) ? statistic : v[i];
                acc[i] = acc[i] + (std::isnan(x) ? w : miss_w);
            }
        } else {
            for (int64_t i = 0; i < B; ++i) {
                const double x = (std::isnan(v[i]) | (v[i] == missing)) ? statistic : v[i];
                acc[i] = acc[i] + (x == a ? w : miss_w);
            }
        }
        break;
    }
    }
}

template <int64_t B, typename T>
void block(const T* x, int64_t n, int64_t cols, const LinearTerm* terms, int64_t count, double intercept,
           double* out) {
    alignas(64) double acc[B];
    alignas(64) double v[B];
    for (int64_t i = 0; i < B; ++i) acc[i] = 0.0;
    for (int64_t i = n; i < B; ++i) v[i] = 0.0;
    for (int64_t j = 0; j < count; ++j) {
        if (j == 0 || terms[j].column != terms[j - 1].column) {  // a one-hot column's terms share it
            const T* col = x + terms[j].column;
            for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>(col[i * cols]);  // as x.double()
        }
        add_term<B>(terms[j], v, acc);
    }
    for (int64_t i = 0; i < n; ++i) out[i] = acc[i] + intercept;
}

template <typename T>
void run(const T* x, int64_t rows, int64_t cols, const std::vector<LinearTerm>& terms, double intercept,
         double* out) {
    if (rows <= 0) return;
    const int64_t count = static_cast<int64_t>(terms.size());
    detail::parallel_for(0, rows, kGrainRows, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; r += kBlockRows) {
            const int64_t n = std::min(kBlockRows, end - r);
            if (n <= kSmallBlockRows)
                block<kSmallBlockRows>(x + r * cols, n, cols, terms.data(), count, intercept, out + r);
            else
                block<kBlockRows>(x + r * cols, n, cols, terms.data(), count, intercept, out + r);
        }
    });
}

}  // namespace

std::vector<double> pack_linear_terms(const std::vector<LinearTerm>& terms) {
    std::vector<double> packed;
    packed.reserve(terms.size() * kLinearTermFields);
    for (const LinearTerm& t : terms) {
        packed.insert(packed.end(), {static_cast<double>(t.column), static_cast<double>(t.kind), t.statistic,
                                     t.missing, t.a, t.b, t.weight});
    }
    return packed;
}

std::vector<LinearTerm> unpack_linear_terms(const double* packed, int64_t count, int64_t columns) {
    std::vector<LinearTerm> terms(static_cast<size_t>(count));
    for (int64_t j = 0; j < count; ++j) {
        const double* f = packed + j * kLinearTermFields;
        if (!(f[0] >= 0.0 && f[0] < static_cast<double>(columns) && f[0] == std::floor(f[0])))
            fail(ErrorCategory::InvalidModel, "linear_margin: term " + std::to_string(j) + " reads column " +
                                                  std::to_string(f[0]) + " of a batch of " +
                                                  std::to_string(columns) + " columns");
        if (!(f[1] == 0.0 || f[1] == 1.0 || f[1] == 2.0))
            fail(ErrorCategory::InvalidModel, "linear_margin: term " + std::to_string(j) + " has unknown kind " +
                                                  std::to_string(f[1]));
        terms[j] = {static_cast<int64_t>(f[0]), static_cast<LinearTermKind>(static_cast<int64_t>(f[1])),
                    f[2], f[3], f[4], f[5], f[6]};
    }
    return terms;
}

void linear_margin(const float* x, int64_t rows, int64_t cols, const std::vector<LinearTerm>& terms,
                   double intercept, double* out) {
    run(x, rows, cols, terms, intercept, out);
}

void linear_margin(const double* x, int64_t rows, int64_t cols, const std::vector<LinearTerm>& terms,
                   double intercept, double* out) {
    run(x, rows, cols, terms, intercept, out);
}

}  // namespace pg_predict::kernels
