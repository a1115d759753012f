// AVX-512 dense projection (compiled with -mavx512f -ffp-contract=off; only called after the
// run-time CPU check). A register tile (output_tiles.hpp) is 4 rows × 16 outputs (two 8-lane
// vectors): per input column two loads of wᵀ, four broadcasts, eight products and eight adds, in
// the order of project.hpp, so the results equal the portable path's.
#include "pg_predict/kernels/project.hpp"

#if defined(__AVX512F__)
#include <immintrin.h>

#include "double_lanes.hpp"
#include "output_tiles.hpp"

namespace pg_predict::kernels::detail {
namespace {

}  // namespace

bool project_avx512_compiled() { return true; }

void project_rows_avx512(const double* x, int64_t begin, int64_t end, int64_t k, const double* wt, int64_t m,
                         const double* offset, double* out) {
    static_assert(kProjectLanes == 2 * Avx512Doubles::kWidth, "a tile is 16 outputs");
    tile_rows<Avx512Doubles>(x, begin, end, k, wt, project_padded(m), m, Project<Avx512Doubles>{offset}, out);
}

}  // namespace pg_predict::kernels::detail

#else  // built without AVX-512 flags (another architecture)

#include "pg_predict/common/error.hpp"

namespace pg_predict::kernels::detail {
bool project_avx512_compiled() { return false; }
void project_rows_avx512(const double*, int64_t, int64_t, int64_t, const double*, int64_t, const double*, double*) {
    fail(ErrorCategory::Internal, "projection kernel: AVX-512 path not compiled");
}
}  // namespace pg_predict::kernels::detail

#endif
