// The fused RBF kernel matrix (kernels/rbf.hpp): every path gives the portable path's bits, the
// values are exp(-γ‖x - s‖²) to within an ulp or two, the edge values are exact, and the
// TorchScript op agrees with torch's own cdist / exp.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "pg_predict/kernels/rbf.hpp"

namespace pg_predict {
namespace {

using kernels::Isa;

struct Case {
    int64_t rows, cols, n;
    std::vector<double> x, sv, svt;  // sv row-major n × cols; svt the kernel's padded layout
};

Case make_case(int64_t rows, int64_t cols, int64_t n, uint32_t seed) {
    Case c{rows, cols, n, {}, {}, {}};
    std::mt19937 rng(seed);
    std::normal_distribution<double> nd(0.0, 2.0);
    c.x.resize(rows * cols);
    c.sv.resize(n * cols);
    for (auto& v : c.x) v = nd(rng);
    for (auto& v : c.sv) v = nd(rng);
    const int64_t padded = kernels::rbf_padded(n);
    c.svt.assign(cols * padded, 0.0);
    for (int64_t j = 0; j < n; ++j)
        for (int64_t f = 0; f < cols; ++f) c.svt[f * padded + j] = c.sv[j * cols + f];
    return c;
}

std::vector<double> run(const Case& c, double gamma, Isa isa) {
    std::vector<double> out(c.rows * c.n, -1.0);
    kernels::rbf_kernel(c.x.data(), c.rows, c.cols, c.svt.data(), c.n, gamma, out.data(), isa);
    return out;
}

TEST(RbfKernel, EveryPathIsBitIdenticalToPortable) {
    for (int64_t rows : {1, 3, 4, 9, 64})
        for (int64_t cols : {1, 5, 22})
            for (int64_t n : {1, 7, 8, 16, 17, 33}) {
                Case c = make_case(rows, cols, n, static_cast<uint32_t>(rows * 1000 + cols * 10 + n));
                c.x[0] = std::numeric_limits<double>::quiet_NaN();
                if (rows > 1) c.x[cols] = std::numeric_limits<double>::infinity();
                if (rows > 2) c.x[2 * cols] = 1e200;
                const std::vector<double> ref = run(c, 0.37, Isa::Portable);
                for (Isa isa : kernels::available_isas()) {
                    const std::vector<double> got = run(c, 0.37, isa);
                    EXPECT_EQ(std::memcmp(ref.data(), got.data(), ref.size() * sizeof(double)), 0)
                        << kernels::isa_name(isa) << " rows " << rows << " cols " << cols << " n " << n;
                }
            }
}

TEST(RbfKernel, ValuesAreExpOfTheScaledSquaredDistance) {
    const Case c = make_case(37, 11, 45, 7);
    for (double gamma : {1e-3, 0.05, 1.0, 40.0}) {
        const std::vector<double> got = run(c, gamma, Isa::Auto);
        for (int64_t i = 0; i < c.rows; ++i)
            for (int64_t j = 0; j < c.n; ++j) {
                long double d = 0;
                for (int64_t f = 0; f < c.cols; ++f) {
                    const long double diff = static_cast<long double>(c.x[i * c.cols + f]) - c.sv[j * c.cols + f];
                    d += diff * diff;
                }
                const long double want = std::exp(-static_cast<long double>(gamma) * d);
                const double k = got[i * c.n + j];
                // an ulp or two of the distance, times γ·d, plus exp's own ulp
                const long double tol = want * (4e-16L * (1 + gamma * d)) + 1e-320L;
                EXPECT_LE(std::fabs(static_cast<long double>(k) - want), tol)
                    << "gamma " << gamma << " row " << i << " sv " << j;
            }
    }
}

TEST(RbfKernel, EdgeValues) {
    Case c = make_case(4, 2, 3, 11);
    c.x = {c.sv[0], c.sv[1],                                     // on the first support vector
           std::numeric_limits<double>::infinity(), 0.0,        // infinitely far
           std::numeric_limits<double>::quiet_NaN(), 0.0,       // unknown
           c.sv[0] + 30.0, c.sv[1]};                            // exp(-900γ) underflows to 0
    for (Isa isa : kernels::available_isas()) {
        const std::vector<double> k = run(c, 1.0, isa);
        EXPECT_EQ(k[0], 1.0) << kernels::isa_name(isa);
        for (int j = 0; j < 3; ++j) {
            EXPECT_EQ(k[3 + j], 0.0) << kernels::isa_name(isa);
            EXPECT_TRUE(std::isnan(k[6 + j])) << kernels::isa_name(isa);
        }
        EXPECT_EQ(k[9], 0.0) << kernels::isa_name(isa);
    }
    // The subnormal range is rounded once, like exp's.
    for (double d : {709.0, 720.5, 740.0, 744.4, 745.1}) {
        Case s = make_case(1, 1, 1, 3);
        s.x = {std::sqrt(d)};
        s.svt[0] = 0.0;
        for (Isa isa : kernels::available_isas())
            EXPECT_EQ(run(s, 1.0, isa)[0], std::exp(-(s.x[0] * s.x[0]))) << kernels::isa_name(isa) << " d " << d;
    }
}

TEST(RbfKernel, TorchOpMatchesCdist) {
    const Case c = make_case(50, 6, 21, 5);
    const auto op = c10::Dispatcher::singleton().findSchemaOrThrow("pg_predict::rbf_kernel", "").typed<
        at::Tensor(const at::Tensor&, const at::Tensor&, int64_t, double)>();
    const auto opts = at::TensorOptions().dtype(at::kDouble);
    const at::Tensor x = at::from_blob(const_cast<double*>(c.x.data()), {c.rows, c.cols}, opts).clone();
    const at::Tensor sv = at::from_blob(const_cast<double*>(c.sv.data()), {c.n, c.cols}, opts).clone();
    const at::Tensor svt =
        at::from_blob(const_cast<double*>(c.svt.data()), {c.cols, kernels::rbf_padded(c.n)}, opts).clone();
    const at::Tensor d = at::cdist(x, sv, 2.0, 2);
    EXPECT_TRUE(at::allclose(op.call(x, svt, c.n, 0.2), at::exp(d * d * -0.2), 1e-13, 0.0));
    const at::Tensor xf = x.to(at::kFloat);  // float input is widened
    const at::Tensor df = at::cdist(xf.to(at::kDouble), sv, 2.0, 2);
    EXPECT_TRUE(at::allclose(op.call(xf, svt, c.n, 0.2), at::exp(df * df * -0.2), 1e-13, 0.0));
    EXPECT_THROW(op.call(x, svt, c.n + 16, 0.2), c10::Error);            // svt too narrow for n
    EXPECT_THROW(op.call(x.narrow(1, 0, 5), svt, c.n, 0.2), c10::Error);  // columns differ
}

}  // namespace
}  // namespace pg_predict
