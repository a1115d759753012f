// Which row function a dense kernel (rbf.cpp, project.cpp) runs: the AVX-512 or AVX2 one where
// resolve_isa picks that path and this build compiled its file, else the portable one (no NEON
// paths yet: the portable one there).
#pragma once

#include "pg_predict/kernels/tree_ensemble.hpp"

namespace pg_predict::kernels::detail {

// A dense kernel's row function: rows [begin, end) of x, the kernel's own arguments after.
template <typename... Args>
using RowsFn = void (*)(const double* x, int64_t begin, int64_t end, Args...);

template <typename... Args>
struct RowPath {
    bool compiled;
    RowsFn<Args...> rows;
};

template <typename T>
struct Same {
    using type = T;
};

// Rows [0, rows) of x in chunks of `chunk` over the threads, with the row function `isa` picks.
template <typename... Args>
void run_rows(Isa isa, int64_t rows, int64_t chunk, RowsFn<Args...> portable, RowPath<Args...> avx2,
              RowPath<Args...> avx512, const double* x, typename Same<Args>::type... args) {
    RowsFn<Args...> fn = portable;
    switch (resolve_isa(isa)) {
    case Isa::Avx512:
        if (avx512.compiled) fn = avx512.rows;
        break;
    case Isa::Avx2:
        if (avx2.compiled) fn = avx2.rows;
        break;
    case Isa::Auto:
    case Isa::Portable:
    case Isa::Neon: break;
    }
    parallel_for(0, rows, chunk, [&](int64_t begin, int64_t end) { fn(x, begin, end, args...); });
}

}  // namespace pg_predict::kernels::detail
