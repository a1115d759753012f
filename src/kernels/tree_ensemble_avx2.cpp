// AVX2 scoring of the perfect layout: not written yet; *_compiled() is false, so Auto never
// picks it and pg_predict.cpu_kernel = avx2 is refused.
#include "pg_predict/common/error.hpp"
#include "pg_predict/kernels/tree_ensemble.hpp"

namespace pg_predict::kernels::detail {
bool avx2_compiled() { return false; }
void score_perfect_avx2(const PackedView&, const float*, int64_t, int64_t, float*) {
    fail(ErrorCategory::Internal, "native tree kernel: AVX2 path not compiled");
}
}  // namespace pg_predict::kernels::detail
