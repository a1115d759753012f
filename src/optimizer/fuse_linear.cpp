// Algebraic fusion: adjacent linear maps become one. Each rewrite is exact for NaN: a NaN in
// input column c makes every output that reads c NaN before and after (NaN * 0 is NaN, and
// the fused weight of c is a product with c's own scale or matrix column).
#include <cmath>

#include "pg_predict/common/interrupt.hpp"
#include "pg_predict/optimizer/passes.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::optimizer {

namespace {

using spec::Step;
using Matrix = std::vector<std::vector<double>>;
using nlohmann::json;

struct Affine {
    std::vector<double> scale, offset;
};
Affine affine_of(const Step& s) {
    return {spec::param_vector(s, "scale", "affine"), spec::param_vector(s, "offset", "affine")};
}

// y = x · Mᵀ + b: the form of project and of the linear estimator.
struct Linear {
    Matrix m;
    std::vector<double> b;
};
Linear project_of(const Step& s) {
    return {spec::param_matrix(s, "matrix", "project"), spec::param_vector(s, "offset", "project")};
}

// Whether folding makes a weight zero that multiplied an input before: a zero scale under a
// nonzero weight (the product drops a NaN that x * 0 + o passed on; BLAS may skip zero
// weights, and a later liveness pass would call the input unread).
bool fold_zeroes_a_weight(const Linear& l, const Affine& a, size_t from) {
    for (size_t r = 0; r < l.m.size(); ++r)
        for (size_t j = 0; j < a.scale.size(); ++j)
            if (a.scale[j] == 0.0 && l.m[r][from + j] != 0.0) return true;
    return false;
}

bool compose_zeroes_a_weight(const Linear& outer, const Linear& inner, const Linear& fused) {
    for (size_t r = 0; r < fused.m.size(); ++r)
        for (size_t c = 0; c < fused.m[r].size(); ++c) {
            if (fused.m[r][c] != 0.0) continue;
            for (size_t k = 0; k < inner.m.size(); ++k)
                if (outer.m[r][k] != 0.0 && inner.m[k][c] != 0.0) return true;
        }
    return false;
}

// Fusion reorders floating-point sums, so it must not turn a model whose huge terms cancel
// (collinear one-hot columns and an intercept of 1e16 fitted by LinearRegression) into one
// that rounds differently by whole units: fuse only while every weight and the folded
// intercept stay below 2^32, where double rounding stays under 1e-6.
constexpr double kSafeMagnitude = 4294967296.0;

bool fold_is_exact_enough(const Linear& l, const Affine& a, size_t from) {
    for (size_t r = 0; r < l.m.size(); ++r) {
        double folded = std::fabs(l.b[r]);
        for (size_t j = 0; j < a.scale.size(); ++j) {
            if (std::fabs(l.m[r][from + j]) > kSafeMagnitude) return false;
            folded += std::fabs(l.m[r][from + j] * a.offset[j]);
        }
        if (folded > kSafeMagnitude) return false;
    }
    return !fold_zeroes_a_weight(l, a, from);
}

bool compose_is_exact_enough(const Linear& outer, const Linear& inner, const Linear& fused) {
    for (const Linear* l : {&outer, &inner})
        for (const auto& row : l->m)
            for (double v : row)
                if (std::fabs(v) > kSafeMagnitude) return false;
    for (size_t r = 0; r < outer.m.size(); ++r) {
        double folded = std::fabs(outer.b[r]);
        for (size_t k = 0; k < inner.b.size(); ++k) folded += std::fabs(outer.m[r][k] * inner.b[k]);
        if (folded > kSafeMagnitude) return false;
    }
    return !compose_zeroes_a_weight(outer, inner, fused);
}

// M (x * s + o) + b = (M diag s) x + (M o + b), on the columns [from, from + s.size()).
void fold_affine(Linear& l, const Affine& a, size_t from) {
    for (size_t r = 0; r < l.m.size(); ++r)
        for (size_t j = 0; j < a.scale.size(); ++j) {
            l.b[r] += l.m[r][from + j] * a.offset[j];
            l.m[r][from + j] *= a.scale[j];
        }
}

// Outer (Inner x + c) + d = (Outer Inner) x + (Outer c + d).
Linear compose(const Linear& outer, const Linear& inner) {
    const size_t w = inner.m.empty() ? 0 : inner.m[0].size();
    Linear out{Matrix(outer.m.size(), std::vector<double>(w, 0.0)), outer.b};
    for (size_t r = 0; r < outer.m.size(); ++r)
        for (size_t k = 0; k < inner.m.size(); ++k) {
            const double o = outer.m[r][k];
            out.b[r] += o * inner.b[k];
            for (size_t c = 0; c < w; ++c) out.m[r][c] += o * inner.m[k][c];
        }
    return out;
}

Step project_step(const Linear& l) {
    Step s;
    s.op = spec::Op::Project;
    s.params = {{"matrix", spec::matrix_to_json(l.m)}, {"offset", spec::numbers_to_json(l.b)}};
    return s;
}

// Fuses adjacent pairs within one list of steps (and inside concat parts).
std::vector<Step> fuse_steps(std::vector<Step> steps, const std::string& where, std::vector<std::string>& changes) {
    check_interrupts();  // per step: nested compositions can be deep
    for (size_t i = 0; i < steps.size(); ++i) {
        if (steps[i].op != spec::Op::Concat) continue;
        for (size_t p = 0; p < steps[i].parts.size(); ++p)
            steps[i].parts[p].steps = fuse_steps(steps[i].parts[p].steps,
                                                 where + "[" + std::to_string(i) + "].parts[" + std::to_string(p) + "].steps",
                                                 changes);
    }
    size_t i = 0;
    while (i + 1 < steps.size()) {
        const std::string at = where + "[" + std::to_string(i) + "]";
        const Step& a = steps[i];
        const Step& b = steps[i + 1];
        Step fused;
        bool done = false;
        if (a.op == spec::Op::Affine && b.op == spec::Op::Affine) {
            // (x s1 + o1) s2 + o2 = x (s1 s2) + (o1 s2 + o2)
            Affine x = affine_of(a), y = affine_of(b);
            for (size_t c = 0; c < x.scale.size(); ++c) {
                x.offset[c] = x.offset[c] * y.scale[c] + y.offset[c];
                x.scale[c] *= y.scale[c];
            }
            fused.op = spec::Op::Affine;
            fused.params = {{"scale", spec::numbers_to_json(x.scale)}, {"offset", spec::numbers_to_json(x.offset)}};
            done = true;
        } else if (a.op == spec::Op::Affine && b.op == spec::Op::Project) {
            Linear l = project_of(b);
            const Affine x = affine_of(a);
            if (fold_is_exact_enough(l, x, 0)) {
                fold_affine(l, x, 0);
                fused = project_step(l);
                done = true;
            }
        } else if (a.op == spec::Op::Project && b.op == spec::Op::Project) {
            const Linear inner = project_of(a), outer = project_of(b);
            const size_t w = inner.m.empty() ? 0 : inner.m[0].size(), k1 = inner.m.size(), k2 = outer.m.size();
            if (k2 * w <= k1 * w + k2 * k1) {  // only when the product is no more work
                const Linear l = compose(outer, inner);
                if (compose_is_exact_enough(outer, inner, l)) {
                    fused = project_step(l);
                    done = true;
                }
            }
        }
        if (done) {
            changes.push_back(at + " " + spec::op_name(a.op) + " + " + spec::op_name(b.op) + ": fused into one " +
                              spec::op_name(fused.op));
            steps[i] = std::move(fused);
            steps.erase(steps.begin() + i + 1);
        } else {
            ++i;
        }
    }
    return steps;
}

// The step list's outputs feed a linear estimator: fold what ends the list into it.
bool fuse_into_estimator(spec::Pipeline& p, std::vector<std::string>& changes) {
    if (p.estimator.op != spec::Op::Linear || p.steps.empty()) return false;
    Linear est{spec::param_matrix(p.estimator, "coef", "estimator"), spec::param_vector(p.estimator, "intercept", "estimator")};
    Step& last = p.steps.back();
    const std::string at = "steps[" + std::to_string(p.steps.size() - 1) + "]";
    bool changed = false;
    if (last.op == spec::Op::Affine) {
        const Affine a = affine_of(last);
        if (!fold_is_exact_enough(est, a, 0)) return false;
        fold_affine(est, a, 0);
        changes.push_back(at + " affine + estimator linear: fused into the linear model");
        p.steps.pop_back();
        changed = true;
    } else if (last.op == spec::Op::Project) {
        const Linear inner = project_of(last);
        const Linear fused = compose(est, inner);
        if (!compose_is_exact_enough(est, inner, fused)) return false;
        est = fused;
        changes.push_back(at + " project + estimator linear: fused into the linear model");
        p.steps.pop_back();
        changed = true;
    } else if (last.op == spec::Op::Concat) {
        // Each part's trailing affine scales its own block of coefficients.
        const std::vector<int32_t> in = step_vocabs(std::vector<Step>(p.steps.begin(), p.steps.end() - 1),
                                                    input_vocab(p)).back();
        size_t from = 0;
        for (size_t k = 0; k < last.parts.size(); ++k) {
            Step::Part& part = last.parts[k];
            std::vector<int32_t> sub;
            for (int32_t c : part.columns) sub.push_back(in[c]);
            const size_t width = step_vocabs(part.steps, sub).back().size();
            if (!part.steps.empty() && part.steps.back().op == spec::Op::Affine &&
                fold_is_exact_enough(est, affine_of(part.steps.back()), from)) {
                fold_affine(est, affine_of(part.steps.back()), from);
                part.steps.pop_back();
                changes.push_back(at + ".parts[" + std::to_string(k) + "] trailing affine: fused into the linear model");
                changed = true;
            }
            from += width;
        }
    }
    if (changed) {
        p.estimator.params["coef"] = spec::matrix_to_json(est.m);
        p.estimator.params["intercept"] = spec::numbers_to_json(est.b);
        p.model.num_features = static_cast<int32_t>(est.m[0].size());
    }
    return changed;
}

}  // namespace

spec::Pipeline fuse_linear(const spec::Pipeline& in, std::vector<std::string>& changes) {
    spec::Pipeline p = in;
    p.steps = fuse_steps(p.steps, "steps", changes);
    while (fuse_into_estimator(p, changes)) p.steps = fuse_steps(p.steps, "steps", changes);
    return p;
}

}  // namespace pg_predict::optimizer
