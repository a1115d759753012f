// The k smallest distances of each row of a distance matrix and their columns, in the order a
// stable ascending sort gives (equal distances: the lower column first; NaN after every number),
// i.e. exactly torch.sort(d, dim=1, stable=True) cut to k columns, without sorting the row: a
// bounded heap of the k best seen, which a later equal distance never enters. For k-NN over
// thousands of training rows the full sort cost as much as the distances.
#pragma once

#include <cstdint>

namespace pg_predict::kernels {

// d: rows × n, row-major; 1 <= k <= n. dk: rows × k, ik: rows × k (column indices), overwritten.
// Runs over row blocks on torch's intra-op thread count in pg_predict's own pool; throws
// Error(Cancelled) on an interrupt.
void k_nearest(const double* d, int64_t rows, int64_t n, int64_t k, double* dk, int64_t* ik);

// Defined beside the registration of torch.ops.pg_predict.k_nearest; the compiler references it
// so a static link keeps the registrar.
int k_nearest_op_anchor();

}  // namespace pg_predict::kernels
