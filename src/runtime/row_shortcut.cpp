// The per-row path's shortcut: a program that is a tree ensemble on the native kernel followed
// by the base margin and an elementwise link scores one row here, straight through the kernel,
// without building tensors or running the TorchScript interpreter (which cost ~10 µs a call,
// more than the trees of most models). The arithmetic is the program's own, operation for
// operation, so the output is bit for bit what run_program gives for that one row; the unit
// tests (one_row_test.cpp) hold the two paths to that.
#include <cmath>
#include <cstring>

#include "pg_predict/common/error.hpp"
#include "pg_predict/kernels/logistic.hpp"
#include "pg_predict/kernels/one_row.hpp"
#include "program_internal.hpp"

namespace pg_predict::runtime {

bool one_row_link(const std::string& name, int groups, int output_width, spec::PostTransform* link) {
    // The elementwise links whose one-row arithmetic is plain float32 scalar code, as
    // the compiler's link_source writes them. Not Exp: ATen's exp runs its vectorized (SLEEF)
    // exp over any length, which std::exp does not match bit for bit. Softmax and the links
    // that mix groups stay on the interpreter too.
    for (spec::PostTransform t : {spec::PostTransform::Identity, spec::PostTransform::Logistic,
                                  spec::PostTransform::TwoSided, spec::PostTransform::Complement}) {
        if (name != spec::transform_name(t)) continue;
        const bool two_columns = t == spec::PostTransform::TwoSided || t == spec::PostTransform::Complement ||
                                 (t == spec::PostTransform::Logistic && output_width == 2 * groups);
        if (two_columns ? groups != 1 || output_width != 2 : output_width != groups) return false;
        *link = t;
        return true;
    }
    return false;
}

bool program_scores_one_row(const Program* p) noexcept { return p != nullptr && p->one_row; }

void run_one_row(const Program* p, const float* x, float* out) {
    if (!program_scores_one_row(p)) fail(ErrorCategory::Internal, "run_one_row: not a one-row program");
    score_row_natively(p, x, out);
}

void run_rows(Program* p, const float* x, int64_t rows, int64_t cols, float* out) {
    // (a batch of another width goes to run_program, whose check names the mismatch)
    if (rows > kFewRows || !program_scores_one_row(p) || cols != p->num_features) {
        run_program(p, x, rows, cols, out);
        return;
    }
    const int width = program_output_width(p);
    for (int64_t r = 0; r < rows; r++) score_row_natively(p, x + r * cols, out + r * width);
}

void score_row_natively(const Program* p, const float* x, float* out) {
    const int groups = p->native.num_groups;
    float m[kMaxOneRowGroups];
    kernels::score_one_row(p->native, x, m);
    mask_missing_margins(p, x, 1, p->native.num_features, m, groups);
    for (int g = 0; g < groups; ++g) m[g] = m[g] + p->base_margin[g];
    apply_link(p->link, groups, p->output_width, m, out);
}

template <typename T>
void apply_link(spec::PostTransform link, int groups, int width, const T* m, float* out) {
    // Each line is the operation the program applies, in T, then rounded to float32 (the
    // logistic link is ops.pg_predict.logistic, kernels/logistic.hpp).
    switch (link) {
    case spec::PostTransform::Identity:
        for (int g = 0; g < groups; ++g) out[g] = static_cast<float>(m[g]);
        return;
    case spec::PostTransform::Logistic:
        if (width == 2 * groups) {  // [1 - p, p]
            const T e = kernels::logistic(m[0]);
            out[0] = static_cast<float>(T(1) - e);
            out[1] = static_cast<float>(e);
        } else {
            for (int g = 0; g < groups; ++g) out[g] = static_cast<float>(kernels::logistic(m[g]));
        }
        return;
    case spec::PostTransform::TwoSided:
        out[0] = static_cast<float>(-m[0]);
        out[1] = static_cast<float>(m[0]);
        return;
    case spec::PostTransform::Complement:
        out[0] = static_cast<float>(T(1) - m[0]);
        out[1] = static_cast<float>(m[0]);
        return;
    default:
        fail(ErrorCategory::Internal, "apply_link: unexpected link");
    }
}

template void apply_link<float>(spec::PostTransform, int, int, const float*, float*);
template void apply_link<double>(spec::PostTransform, int, int, const double*, float*);

}  // namespace pg_predict::runtime
