// A model without a rule for a missing value (scikit-learn 1.2's trees other than
// HistGradientBoosting: spec::TreeEnsemble::inputs_without_missing_rule) has no margin for a
// row with a NaN in one of those inputs, so its prediction is NULL. Its TorchScript program
// masks the margins (compiler/missing_rows.cpp); these do the same on the native paths that
// bypass it.
#include <cmath>

#include "program_internal.hpp"

namespace pg_predict::runtime {
namespace {

bool has_nan(const float* row, const std::vector<int32_t>& inputs) {
    bool nan = false;
    for (int32_t c : inputs) nan |= std::isnan(row[c]);
    return nan;
}

// Most batches hold no NaN at all: one contiguous pass, which vectorizes (no branch), says so
// before any row's listed inputs are gathered.
bool any_nan(const float* x, int64_t n) {
    bool nan = false;
    for (int64_t i = 0; i < n; ++i) nan |= x[i] != x[i];
    return nan;
}

}  // namespace

void mask_missing_margins(const Program* p, const float* x, int64_t rows, int64_t cols, float* margins, int groups) {
    if (p->missing_inputs.empty() || !any_nan(x, rows * cols)) return;
    for (int64_t r = 0; r < rows; ++r)
        if (has_nan(x + r * cols, p->missing_inputs))
            for (int g = 0; g < groups; ++g) margins[r * groups + g] = NAN;
}

void undecide_missing_rows(const Program* p, const float* x, int64_t rows, int64_t cols, uint8_t* verdict) {
    if (p->missing_inputs.empty() || !any_nan(x, rows * cols)) return;
    for (int64_t r = 0; r < rows; ++r)
        if (has_nan(x + r * cols, p->missing_inputs)) verdict[r] = kScreenUndecided;
}

}  // namespace pg_predict::runtime
