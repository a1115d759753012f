// The early exit's program side: which outputs of a one-row program are monotone in its
// margin, and the interval of margins that gives an output in [lower, upper].
//
// A one-row program's column c is a + s·g(z) with z = margin + base margin, computed in float32
// (run_one_row lists the arithmetic): g is the identity or the logistic function, s = ±1 and
// a ∈ {0, 1}. So an interval of outputs is an interval of z, and of margins. Each step widens
// the interval it hands on (for "certainly outside") or narrows it (for "certainly inside") by
// more than the float32 rounding of that step.
#include <algorithm>
#include <cmath>
#include <limits>

#include "pg_predict/common/error.hpp"
#include "program_internal.hpp"

namespace pg_predict::runtime {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// screen_rows hands the kernel's verdicts on as they are.
static_assert(int(kScreenOutside) == int(kernels::kOutside) && int(kScreenUndecided) == int(kernels::kUndecided) &&
              int(kScreenInside) == int(kernels::kInside));

struct ColumnForm {
    double a, s;
    bool logistic;
};

bool column_form(const Program* p, int column, ColumnForm* form) {
    if (p == nullptr || !p->one_row || p->native.num_groups != 1 || column < 0 || column >= p->output_width)
        return false;
    const bool second = column == 1;  // two-column outputs: column 0 is the complement
    switch (p->link) {
    case spec::PostTransform::Identity: *form = {0, 1, false}; return true;
    case spec::PostTransform::Logistic:
        *form = p->output_width == 2 && !second ? ColumnForm{1, -1, true} : ColumnForm{0, 1, true};
        return true;
    case spec::PostTransform::TwoSided: *form = second ? ColumnForm{0, 1, false} : ColumnForm{0, -1, false}; return true;
    case spec::PostTransform::Complement: *form = second ? ColumnForm{0, 1, false} : ColumnForm{1, -1, false}; return true;
    default: return false;
    }
}

// More than float32 rounding of a value near v (2^-24 relative) and of ATen's sigmoid.
double allowance(double v) { return std::isfinite(v) ? 1e-6 * std::fmax(1.0, std::fabs(v)) : 0.0; }

double inverse(bool logistic, double g) {
    if (!logistic) return g;
    if (g <= 0) return -kInf;
    if (g >= 1) return kInf;
    return std::log(g) - std::log1p(-g);
}

// Margins whose column value may lie in [lower, upper] (widen > 0) or surely does (widen < 0).
kernels::Interval margins_for(const Program* p, const ColumnForm& f, double lower, double upper, double widen) {
    lower -= widen * allowance(lower);
    upper += widen * allowance(upper);
    double gl = (lower - f.a) / f.s, gu = (upper - f.a) / f.s;
    if (f.s < 0) std::swap(gl, gu);
    double zl = inverse(f.logistic, gl), zu = inverse(f.logistic, gu);
    zl -= widen * allowance(zl);
    zu += widen * allowance(zu);
    const double base = p->base_margin[0];
    return {zl - base, zu - base};
}

}  // namespace

bool program_screens_column(const Program* p, int column) noexcept {
    ColumnForm form;
    return column_form(p, column, &form) && kernels::can_stage(p->native);
}

void screen_rows(Program* p, const float* x, int64_t rows, int64_t cols, int column, double lower, double upper,
                 uint8_t* verdict, ScreenStats* stats) {
    ColumnForm form;
    if (!column_form(p, column, &form) || !kernels::can_stage(p->native))
        fail(ErrorCategory::Internal, "screen_rows: the program's output cannot be bounded");
    if (cols != p->num_features) fail(ErrorCategory::Internal, "screen_rows: batch width does not match the program");
    if (!p->staged) p->staged = std::make_unique<kernels::StagedEnsemble>(kernels::stage(p->native));
    if (std::isnan(lower) || std::isnan(upper)) fail(ErrorCategory::Internal, "screen_rows: NaN bound");
    kernels::ScreenCounts counts;
    kernels::screen(*p->staged, x, rows, cols, margins_for(p, form, lower, upper, 1.0),
                    margins_for(p, form, lower, upper, -1.0), verdict, &counts);
    undecide_missing_rows(p, x, rows, cols, verdict);  // no margin to bound: scored, NULL
    stats->rows += counts.rows;
    stats->tree_visits += counts.tree_visits;
    stats->outside += counts.outside;
    stats->inside += counts.inside;
    stats->early += counts.early;
    stats->trees = p->staged->trees;
    stats->stage_rows += counts.stage_rows;
    // A rank is a binary search of ~8 steps per feature; a tree visit one step per level.
    stats->rank_trees = 8.0 * p->native.num_features / std::max(1, p->native.depth);
}

}  // namespace pg_predict::runtime
