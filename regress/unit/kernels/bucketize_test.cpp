// The native bucketize (kernels/bucketize.hpp): the counts of the spec's own definition (a
// linear count of edges below each value) on both sides, with ties, ±inf, NaN, repeated and
// missing edges; the same values as torch.searchsorted (the op's form off the CPU); the op's checks.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "pg_predict/kernels/bucketize.hpp"

namespace pg_predict {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

struct Case {
    int64_t rows, columns, stride;
    std::vector<double> x, edges;  // edges: columns × stride, +inf padded
    std::vector<int64_t> counts;
};

// Column c has kCounts[c % 10] edges (some repeated); values are drawn from the edges themselves (ties),
// between them, ±inf and NaN.
Case make_case(int64_t rows, int64_t columns, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> nd(0.0, 2.0);
    Case c{rows, columns, 300, {}, {}, {}};
    c.edges.assign(columns * c.stride, kInf);
    for (int64_t col = 0; col < columns; ++col) {
        // 0-7 edges, a block exactly (16), a block and one (17), 40, and 300 (19 blocks)
        static const int64_t kCounts[] = {0, 1, 2, 3, 5, 7, 16, 17, 40, 300};
        const int64_t n = kCounts[col % 10];
        std::vector<double> e;
        for (int64_t i = 0; i < n; ++i) e.push_back(i > 0 && rng() % 4 == 0 ? e.back() : std::round(nd(rng) * 4) / 4);
        std::sort(e.begin(), e.end());
        std::copy(e.begin(), e.end(), c.edges.begin() + col * c.stride);
        c.counts.push_back(n);
    }
    for (int64_t i = 0; i < rows * columns; ++i) {
        const int64_t col = i % columns;
        switch (rng() % 6) {
        case 0: c.x.push_back(c.counts[col] ? c.edges[col * c.stride + rng() % c.counts[col]] : 0.0); break;
        case 1: c.x.push_back(rng() % 2 ? kInf : -kInf); break;
        case 2: c.x.push_back(kNan); break;
        default: c.x.push_back(std::round(nd(rng) * 8) / 8);
        }
    }
    return c;
}

std::vector<double> reference(const Case& c, bool right) {
    std::vector<double> out(c.x.size());
    for (int64_t i = 0; i < c.rows; ++i)
        for (int64_t col = 0; col < c.columns; ++col) {
            const double v = c.x[i * c.columns + col];
            double n = 0;
            for (int64_t k = 0; k < c.counts[col]; ++k) {
                const double e = c.edges[col * c.stride + k];
                n += (right ? e <= v : e < v) ? 1 : 0;
            }
            out[i * c.columns + col] = std::isnan(v) ? v : n;
        }
    return out;
}

void expect_same(const std::vector<double>& want, const double* got, const char* what) {
    for (size_t i = 0; i < want.size(); ++i) {
        if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(got[i])) << what << " at " << i;
        else EXPECT_EQ(want[i], got[i]) << what << " at " << i;
    }
}

TEST(Bucketize, EveryPathCountsTheEdgesBelowEachValueOnBothSides) {
    for (int64_t rows : {1, 5, 700, 1500})
        for (int64_t columns : {1, 10, 28}) {
            const Case c = make_case(rows, columns, static_cast<uint32_t>(rows * 100 + columns));
            for (bool right : {false, true})
                for (kernels::Isa isa : kernels::available_isas()) {
                    std::vector<double> out(c.x.size(), -1.0);
                    kernels::bucketize(c.x.data(), rows, columns, c.edges.data(), c.stride, c.counts.data(), right,
                                       out.data(), isa);
                    expect_same(reference(c, right), out.data(), kernels::isa_name(isa));
                }
        }
}

TEST(Bucketize, TorchOpMatchesSearchsorted) {
    const Case c = make_case(300, 19, 7);
    const auto opts = at::TensorOptions().dtype(at::kDouble);
    const at::Tensor x = at::from_blob(const_cast<double*>(c.x.data()), {c.rows, c.columns}, opts).clone();
    const at::Tensor edges = at::from_blob(const_cast<double*>(c.edges.data()), {c.columns, c.stride}, opts).clone();
    const at::Tensor counts =
        at::from_blob(const_cast<int64_t*>(c.counts.data()), {c.columns}, at::TensorOptions().dtype(at::kLong)).clone();
    const auto op = c10::Dispatcher::singleton()
                        .findSchemaOrThrow("pg_predict::bucketize", "")
                        .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, bool)>();
    for (bool right : {false, true}) {
        const at::Tensor got = op.call(x, edges, counts, right).contiguous();
        at::Tensor n = at::searchsorted(edges, x.t().contiguous(), false, right).t().to(at::kDouble);
        if (right) n = at::minimum(n, counts.to(at::kDouble));
        const at::Tensor want = at::where(at::isnan(x), x, n).contiguous();
        expect_same(std::vector<double>(want.data_ptr<double>(), want.data_ptr<double>() + want.numel()),
                    got.data_ptr<double>(), "op");
    }
    // A float32 batch is widened, not refused.
    EXPECT_EQ(op.call(x.to(at::kFloat), edges, counts, false).scalar_type(), at::kDouble);
    EXPECT_THROW(op.call(x.narrow(1, 0, 5), edges, counts, false), c10::Error);           // columns differ
    EXPECT_THROW(op.call(x, edges, counts.narrow(0, 0, 5), false), c10::Error);           // counts too short
    EXPECT_THROW(op.call(x, edges, counts + c.stride, false), c10::Error);                // more edges than stored
    EXPECT_THROW(op.call(x, edges, counts.to(at::kInt), false), c10::Error);              // counts not int64
}

}  // namespace
}  // namespace pg_predict
