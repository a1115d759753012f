// A build without the bitvector layout (cmake -DPG_PREDICT_BITVECTOR=OFF; docs/design.md, "A
// patent on one kernel"): bitvector_pack.cpp, bitvector_portable.cpp and bitvector_avx2.cpp are
// left out, and these stand in for them. No ensemble is eligible, so none is packed with the
// layout; a program stored by a build with it is narrowed to its generic part at load
// (narrow_bitvectors) and never reaches the scoring entry points.
#ifdef PG_PREDICT_NO_BITVECTOR
#include "bitvector.hpp"

#include "pg_predict/common/error.hpp"

namespace pg_predict::kernels::detail {

bool bitvector_eligible(const spec::TreeEnsemble&) { return false; }

bool bitvector_cheaper(const spec::TreeEnsemble&) { return false; }

void pack_bitvectors(const spec::TreeEnsemble&, PackedEnsemble&) {
    fail(ErrorCategory::Internal, "this build has no bitvector layout");
}

void check_bitvectors(const int64_t*, int64_t, PackedView&) {
    fail(ErrorCategory::Internal, "this build has no bitvector layout");
}

void score_bitvector_portable(const PackedView&, const float*, int64_t, int64_t, float*) {
    fail(ErrorCategory::Internal, "this build has no bitvector layout");
}

PerfectPath bitvector_avx2_path() { return nullptr; }

}  // namespace pg_predict::kernels::detail
#endif
