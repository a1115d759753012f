// AVX2 dense projection (compiled with -mavx2 -ffp-contract=off; only called after the run-time
// CPU check). A register tile (output_tiles.hpp) is 4 rows × 8 outputs (two 4-lane vectors), in
// the order of project.hpp, so the results equal the portable path's.
#include "pg_predict/kernels/project.hpp"

#if defined(__AVX2__)
#include <immintrin.h>

#include <algorithm>

#include "double_lanes.hpp"
#include "output_tiles.hpp"

namespace pg_predict::kernels::detail {
namespace {

}  // namespace

bool project_avx2_compiled() { return true; }

void project_rows_avx2(const double* x, int64_t begin, int64_t end, int64_t k, const double* wt, int64_t m,
                       const double* offset, double* out) {
    tile_rows<Avx2Doubles>(x, begin, end, k, wt, project_padded(m), m, Project<Avx2Doubles>{offset}, out);
}

}  // namespace pg_predict::kernels::detail

#else  // built without AVX2 flags (another architecture)

#include "pg_predict/common/error.hpp"

namespace pg_predict::kernels::detail {
bool project_avx2_compiled() { return false; }
void project_rows_avx2(const double*, int64_t, int64_t, int64_t, const double*, int64_t, const double*, double*) {
    fail(ErrorCategory::Internal, "projection kernel: AVX2 path not compiled");
}
}  // namespace pg_predict::kernels::detail

#endif
