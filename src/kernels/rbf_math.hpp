// The arithmetic every RBF path shares (kernels/rbf.hpp): the constants of exp's reduction and
// polynomial, and the scalar reference that the SIMD files repeat lane by lane.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace pg_predict::kernels::rbf_math {

// exp(x) for x ≤ 0 (the RBF kernel's -γ‖x - s‖²): below kFloor the result is 0 in double.
constexpr double kFloor = -746.0;
constexpr double kLog2e = 1.4426950408889634074;
// ln 2 split so that k · kLn2Hi is exact for the |k| ≤ 1077 used here (Cody and Waite).
constexpr double kLn2Hi = 6.93147180369123816490e-01;
constexpr double kLn2Lo = 1.90821492927058770002e-10;
// 1/i! for i = 0..13: on |r| ≤ ln2/2 the degree-13 Taylor remainder is 4e-18 relative.
constexpr double kTaylor[14] = {1.0,
                                1.0,
                                1.0 / 2,
                                1.0 / 6,
                                1.0 / 24,
                                1.0 / 120,
                                1.0 / 720,
                                1.0 / 5040,
                                1.0 / 40320,
                                1.0 / 362880,
                                1.0 / 3628800,
                                1.0 / 39916800,
                                1.0 / 479001600,
                                1.0 / 6227020800.0};

// 2^k for an integral k in [-1022, 1023], as a double's exponent bits.
inline double pow2(double k) {
    const int64_t bits = (static_cast<int64_t>(k) + 1023) << 52;
    double out;
    std::memcpy(&out, &bits, sizeof out);
    return out;
}

// The scalar reference: the SIMD paths do these operations in this order. The scale 2^k is
// applied in two halves so a subnormal result is rounded once, like scalbn's.
inline double exp_nonpositive(double x) {
    if (std::isnan(x)) return x;
    if (x < kFloor) x = kFloor;
    const double k = std::nearbyint(x * kLog2e);
    double r = std::fma(-k, kLn2Hi, x);
    r = std::fma(-k, kLn2Lo, r);
    double p = kTaylor[13];
    for (int i = 12; i >= 0; --i) p = std::fma(p, r, kTaylor[i]);
    const double k1 = std::floor(k * 0.5);
    return p * pow2(k1) * pow2(k - k1);
}

}  // namespace pg_predict::kernels::rbf_math
