// One row through the native tree kernel, for the per-row path (predict() calls the planner
// cannot batch). score() is built for batches: a 64-row block of rank words to allocate and
// fill, the top levels of every 16-tree block loaded into registers, a thread pool to ask;
// for a single row that setup costs more than the trees. This walks the row through each
// block with one gather a level instead, and allocates nothing.
#pragma once

#include <cstdint>

#include "pg_predict/kernels/tree_ensemble.hpp"

namespace pg_predict::kernels {

// margins[0 .. num_groups) for the row x[0 .. num_features) of a view make_view checked: bit
// for bit what score() gives that row in any batch (each lane sums its trees in block order,
// then the lanes are summed in lane order, as every implementation of score() does).
void score_one_row(const PackedView&, const float* x, float* margins);

namespace detail {
// The AVX-512 walk over the perfect layout (one_row_avx512.cpp), given the row's 128 rank
// words (NaN rank for features ≥ F), and the ranks of features [0, F) of x into q; only
// called after the run-time CPU check.
bool one_row_avx512_compiled();
void walk_one_row_avx512(const PackedView&, const uint32_t* q, float* margins);
void rank_one_row_avx512(const PackedView&, const float* x, uint32_t* q);
}  // namespace detail

}  // namespace pg_predict::kernels
