// Bounds on a tree ensemble's margin, for the early exit of threshold and top-K queries
// (issue 15 §2): after some trees, a row's margin lies between the partial sum plus the
// smallest leaves of the trees left and the partial sum plus their largest leaves. A row whose
// bounds fall outside the interval its query needs stops there; one whose bounds lie inside
// it is certain to pass.
//
// The screen decides rows only; it never produces a score. The trees run here in another
// order (largest leaf spread first, so the bounds tighten fast) and are summed per stage, so
// its partial sums differ from the scoring kernel's in the last bits; every bound is widened by
// a rounding allowance that covers any summation order, and a row that must be scored goes
// through the model's own program afterwards.
#pragma once

#include <cstdint>
#include <vector>

#include "pg_predict/kernels/tree_ensemble.hpp"

namespace pg_predict::kernels {

// One-group ensembles (binary classifiers, regressors) re-packed by leaf spread, cut into
// stages of growing size. Built once per program.
struct StagedEnsemble {
    PackedEnsemble packed;              // the reordered trees (padding trees dropped)
    std::vector<PackedView> stages;     // consecutive units of `packed`
    std::vector<std::vector<int32_t>> stage_aux;  // generic layout: each stage's own aux
    std::vector<int64_t> stage_trees;   // trees in each stage
    std::vector<double> remaining_min;  // after stage s: sum of the smallest leaf of every later tree
    std::vector<double> remaining_max;  //                 ... of the largest leaf
    double rounding = 0;                // allowance for float32 summation in any order
    int64_t trees = 0;                  // trees of the ensemble (without padding)
};

// Whether `view` can be staged (one output group); the stages stop once they hold about half
// the trees, since a row still undecided then is cheaper to score whole.
bool can_stage(const PackedView& view);
StagedEnsemble stage(const PackedView& view);

// What the screen says of a row.
enum Verdict : uint8_t { kOutside = 0, kUndecided = 1, kInside = 2 };

struct ScreenCounts {
    int64_t rows = 0;          // rows screened
    int64_t tree_visits = 0;   // trees evaluated, summed over rows
    int64_t stage_rows = 0;    // rows entering a stage, summed over stages (each ranks its features)
    int64_t outside = 0;
    int64_t inside = 0;
    int64_t early = 0;         // rows decided (outside or inside) before every tree was walked
};

struct Interval {
    double lower, upper;  // either may be infinite; lower > upper: empty
};

// For rows [0, rows) of x (float32, row-major, cols = num_features): whether the margin (the
// sum of the leaves, before any base margin) is certain to lie outside `outside_of`, certain to
// lie inside `inside_of` (callers pass a wider and a narrower interval to allow for their own
// rounding), or neither. NaN inputs follow the trees' default directions as in scoring; a
// non-finite bound leaves the row undecided.
void screen(const StagedEnsemble&, const float* x, int64_t rows, int64_t cols, Interval outside_of,
            Interval inside_of, uint8_t* verdict, ScreenCounts* counts);

}  // namespace pg_predict::kernels
