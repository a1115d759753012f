// The k nearest columns (kernels/k_nearest.hpp): exactly torch.sort(d, dim=1, stable=True) cut to
// k columns, ties, infinities and NaN included, and the op's checks.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <cmath>
#include <limits>
#include <random>
#include <tuple>

#include "pg_predict/kernels/k_nearest.hpp"

namespace pg_predict {
namespace {

using Op = std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, int64_t);

void expect_like_stable_sort(const at::Tensor& d, int64_t k) {
    const auto op = c10::Dispatcher::singleton().findSchemaOrThrow("pg_predict::k_nearest", "").typed<Op>();
    const auto [dk, ik] = op.call(d, k);
    const auto [sorted, order] = at::sort(d, /*stable=*/true, /*dim=*/1, /*descending=*/false);
    ASSERT_TRUE(at::equal(ik, order.narrow(1, 0, k))) << "k " << k;
    // The values, NaN where NaN.
    const at::Tensor want = sorted.narrow(1, 0, k);
    ASSERT_TRUE(at::equal(at::isnan(dk), at::isnan(want))) << "k " << k;
    ASSERT_TRUE(at::equal(at::nan_to_num(dk, 0.0), at::nan_to_num(want, 0.0))) << "k " << k;
}

TEST(KNearest, EqualsTheStableSortsFirstK) {
    std::mt19937 rng(3);
    for (int64_t n : {1, 2, 7, 64, 1000})
        for (int64_t rows : {1, 5, 40}) {
            // Few distinct values, so most rows hold ties across the k-th place.
            at::Tensor d = at::randint(0, 6, {rows, n}, at::TensorOptions().dtype(at::kDouble));
            if (rows > 2) {
                d[1].fill_(std::numeric_limits<double>::infinity());     // an infinite query row
                d[2].fill_(std::numeric_limits<double>::quiet_NaN());    // a NaN query row
            }
            if (rows > 3 && n > 3) d[3][n / 2] = std::numeric_limits<double>::quiet_NaN();  // one NaN
            for (int64_t k : {int64_t{1}, std::min<int64_t>(3, n), std::min<int64_t>(5, n), n})
                expect_like_stable_sort(d, k);
            expect_like_stable_sort(at::rand({rows, n}, at::TensorOptions().dtype(at::kDouble)),
                                    std::min<int64_t>(4, n));
        }
}

TEST(KNearest, RefusesABadK) {
    const auto op = c10::Dispatcher::singleton().findSchemaOrThrow("pg_predict::k_nearest", "").typed<Op>();
    const at::Tensor d = at::rand({3, 4}, at::TensorOptions().dtype(at::kDouble));
    EXPECT_THROW(op.call(d, 0), c10::Error);
    EXPECT_THROW(op.call(d, 5), c10::Error);
    EXPECT_THROW(op.call(d.view(-1), 2), c10::Error);
}

}  // namespace
}  // namespace pg_predict
