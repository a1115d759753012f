// NEON scoring of the perfect layout: not written yet; *_compiled() is false, so Auto never
// picks it and pg_predict.cpu_kernel = neon is refused.
#include "pg_predict/common/error.hpp"
#include "pg_predict/kernels/tree_ensemble.hpp"

namespace pg_predict::kernels::detail {
bool neon_compiled() { return false; }
void score_perfect_neon(const PackedView&, const float*, int64_t, int64_t, float*) {
    fail(ErrorCategory::Internal, "native tree kernel: NEON path not compiled");
}
}  // namespace pg_predict::kernels::detail
