// Spec step "bucketize" natively: each value's count of its column's edges below it (side
// left: edges < x; side right: edges <= x), NaN kept. LightGBM programs start with it (their
// trees split on these ranks, so float8 columns stay exact), and torch.searchsorted over a
// transposed batch took as long as the trees and ran on one thread; this runs on the scoring
// pool, with compares that do not branch on the data (bucketize_blocks.hpp).
#pragma once

#include <cstdint>

#include "pg_predict/kernels/tree_ensemble.hpp"  // Isa

namespace pg_predict::kernels {

// x: rows × columns, row-major; out: the same shape, overwritten (out may not alias x).
// Column c's edges are edges[c * stride, c * stride + counts[c]), ascending, no NaN.
// Every path gives the same counts. Runs over row blocks on torch's intra-op thread count;
// throws Error(Cancelled) on an interrupt.
void bucketize(const double* x, int64_t rows, int64_t columns, const double* edges, int64_t stride,
               const int64_t* counts, bool right, double* out, Isa isa);

// Defined beside the registration of torch.ops.pg_predict.bucketize; the compiler references it
// so a static link keeps the registrar.
int bucketize_op_anchor();

}  // namespace pg_predict::kernels
