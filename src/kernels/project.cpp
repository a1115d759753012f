// The dense projection (kernels/project.hpp): dispatch and the portable path. Compiled with
// -ffp-contract=off like the SIMD files, so no compiler fuses the product into the add.
#include "pg_predict/kernels/project.hpp"

#include "row_paths.hpp"

namespace pg_predict::kernels {
namespace {

constexpr int64_t kChunkRows = 64;

void rows_portable(const double* x, int64_t begin, int64_t end, int64_t k, const double* wt, int64_t m,
                   const double* offset, double* out) {
    const int64_t padded = project_padded(m);
    for (int64_t i = begin; i < end; ++i)
        for (int64_t j = 0; j < m; ++j) {
            double acc = 0.0;
            for (int64_t l = 0; l < k; ++l) {
                const double product = x[i * k + l] * wt[l * padded + j];
                acc = acc + product;
            }
            out[i * m + j] = acc + offset[j];
        }
}

}  // namespace

int64_t project_padded(int64_t m) { return (m + kProjectLanes - 1) / kProjectLanes * kProjectLanes; }

void project(const double* x, int64_t rows, int64_t k, const double* wt, int64_t m, const double* offset,
             double* out, Isa isa) {
    if (rows <= 0 || m <= 0) return;
    detail::run_rows(isa, rows, kChunkRows, rows_portable, {detail::project_avx2_compiled(), detail::project_rows_avx2},
                     {detail::project_avx512_compiled(), detail::project_rows_avx512}, x, k, wt, m, offset, out);
}

}  // namespace pg_predict::kernels
