// with_depth(D, fn) calls fn(std::integral_constant<int, D>) for a run-time tree depth
// 0..kMaxPerfectDepth, so a SIMD walk can be compiled per depth and fully unrolled (its
// indices and masks then stay in registers instead of arrays on the stack).
#pragma once

#include <type_traits>
#include <utility>

#include "pg_predict/kernels/tree_ensemble.hpp"

namespace pg_predict::kernels::detail {

template <int D = 0, typename Fn>
inline void with_depth(int depth, Fn&& fn) {
    static_assert(D <= kMaxPerfectDepth);
    if constexpr (D == kMaxPerfectDepth) {
        fn(std::integral_constant<int, D>());
    } else {
        if (depth <= D) return fn(std::integral_constant<int, D>());
        with_depth<D + 1>(depth, std::forward<Fn>(fn));
    }
}

}  // namespace pg_predict::kernels::detail
