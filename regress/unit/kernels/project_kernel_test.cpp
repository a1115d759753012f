// The dense projection (kernels/project.hpp): on every path the bits of the reference BLAS's
// order of sums (each product rounded, added in order, then the offset), the values of
// torch.matmul(x, wᵀ) + offset, the edge shapes, and the op's checks.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "pg_predict/kernels/project.hpp"

namespace pg_predict {
namespace {

using kernels::Isa;

struct Case {
    int64_t rows, k, m;
    std::vector<double> x, w, wt, offset;  // w row-major m × k; wt the kernel's padded layout
};

Case make_case(int64_t rows, int64_t k, int64_t m, uint32_t seed) {
    Case c{rows, k, m, {}, {}, {}, {}};
    std::mt19937 rng(seed);
    std::normal_distribution<double> nd(0.0, 3.0);
    c.x.resize(rows * k);
    c.w.resize(m * k);
    c.offset.resize(m);
    for (auto& v : c.x) v = nd(rng);
    for (auto& v : c.w) v = nd(rng);
    for (auto& v : c.offset) v = nd(rng);
    const int64_t padded = kernels::project_padded(m);
    c.wt.assign(k * padded, 0.0);
    for (int64_t j = 0; j < m; ++j)
        for (int64_t l = 0; l < k; ++l) c.wt[l * padded + j] = c.w[j * k + l];
    return c;
}

std::vector<double> run(const Case& c, Isa isa) {
    std::vector<double> out(c.rows * c.m, -1.0);
    kernels::project(c.x.data(), c.rows, c.k, c.wt.data(), c.m, c.offset.data(), out.data(), isa);
    return out;
}

// The reference dgemm's sums: each product rounded (volatile: no compiler may fuse it into the
// add), added in order; then the offset.
std::vector<double> sequential_reference(const Case& c) {
    std::vector<double> out(c.rows * c.m);
    for (int64_t i = 0; i < c.rows; ++i)
        for (int64_t j = 0; j < c.m; ++j) {
            double acc = 0.0;
            for (int64_t l = 0; l < c.k; ++l) {
                volatile double product = c.x[i * c.k + l] * c.w[j * c.k + l];
                acc = acc + product;
            }
            out[i * c.m + j] = acc + c.offset[j];
        }
    return out;
}

// What torch.matmul + offset gives (the program's form where the kernel does not run).
std::vector<double> torch_reference(const Case& c) {
    const auto opts = at::TensorOptions().dtype(at::kDouble);
    const at::Tensor x = at::from_blob(const_cast<double*>(c.x.data()), {c.rows, c.k}, opts);
    const at::Tensor w = at::from_blob(const_cast<double*>(c.w.data()), {c.m, c.k}, opts);
    const at::Tensor b = at::from_blob(const_cast<double*>(c.offset.data()), {c.m}, opts);
    const at::Tensor y = (at::matmul(x, w.t()) + b).contiguous();
    return std::vector<double>(y.data_ptr<double>(), y.data_ptr<double>() + y.numel());
}

TEST(ProjectKernel, EveryPathGivesTheSequentialSumsBits) {
    for (int64_t rows : {1, 3, 4, 9, 70})
        for (int64_t k : {1, 7, 22, 100})
            for (int64_t m : {1, 8, 15, 16, 17, 100}) {
                Case c = make_case(rows, k, m, static_cast<uint32_t>(rows * 10000 + k * 100 + m));
                c.x[0] = std::numeric_limits<double>::quiet_NaN();
                if (rows > 1) c.x[k] = std::numeric_limits<double>::infinity();
                const std::vector<double> want = sequential_reference(c);
                const std::vector<double> torch_values = torch_reference(c);
                for (size_t i = 0; i < want.size(); ++i) {
                    if (std::isnan(want[i])) continue;
                    if (std::isinf(want[i])) EXPECT_EQ(torch_values[i], want[i]);
                    else EXPECT_NEAR(torch_values[i], want[i], 1e-12 * (1.0 + std::fabs(want[i])));
                }
                for (Isa isa : kernels::available_isas()) {
                    const std::vector<double> got = run(c, isa);
                    ASSERT_EQ(got.size(), want.size());
                    for (size_t i = 0; i < got.size(); ++i) {
                        if (std::isnan(want[i])) {
                            EXPECT_TRUE(std::isnan(got[i])) << kernels::isa_name(isa) << " at " << i;
                        } else {
                            EXPECT_EQ(got[i], want[i]) << kernels::isa_name(isa) << " rows " << rows << " k " << k
                                                       << " m " << m << " at " << i;
                        }
                    }
                }
            }
}

TEST(ProjectKernel, TorchOp) {
    const Case c = make_case(33, 10, 20, 9);
    const auto op = c10::Dispatcher::singleton().findSchemaOrThrow("pg_predict::project", "").typed<
        at::Tensor(const at::Tensor&, const at::Tensor&, int64_t, const at::Tensor&)>();
    const auto opts = at::TensorOptions().dtype(at::kDouble);
    const at::Tensor x = at::from_blob(const_cast<double*>(c.x.data()), {c.rows, c.k}, opts).clone();
    const at::Tensor wt = at::from_blob(const_cast<double*>(c.wt.data()), {c.k, kernels::project_padded(c.m)}, opts).clone();
    const at::Tensor b = at::from_blob(const_cast<double*>(c.offset.data()), {c.m}, opts).clone();
    const std::vector<double> want = sequential_reference(c);
    const at::Tensor got = op.call(x, wt, c.m, b).contiguous();
    EXPECT_EQ(std::memcmp(got.data_ptr<double>(), want.data(), want.size() * sizeof(double)), 0);
    EXPECT_THROW(op.call(x, wt, c.m + 16, b), c10::Error);               // wt too narrow for m
    EXPECT_THROW(op.call(x.narrow(1, 0, 9), wt, c.m, b), c10::Error);    // columns differ
    EXPECT_THROW(op.call(x, wt, c.m, b.narrow(0, 0, 5)), c10::Error);    // offset too short
}

}  // namespace
}  // namespace pg_predict
