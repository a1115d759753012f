// Specialization of a pipeline for the value sets a query allows its inputs
// (optimizer/specialize.hpp). Two parts: the value sets are carried forward through the steps
// to the trees' input columns (an over-approximation: a set may only grow), then each tree is
// rebuilt from its root, following the taken child wherever every allowed value (missing
// included) takes the same one.
//
// The trees compare float32 (or, after float64 featurizers, float64) values with float32
// thresholds. Rounding to float32 is monotone, so a node is decided only by tests that hold in
// both precisions: with x in [lo, hi] and threshold t, "x < t for all" is f32(hi) < t (which
// implies hi < t), "x >= t for all" is lo >= t (which implies f32(lo) >= t); the same for <=.
#include "pg_predict/optimizer/specialize.hpp"

#include <algorithm>
#include <cmath>

#include "pg_predict/common/error.hpp"
#include "pg_predict/common/interrupt.hpp"
#include "pg_predict/optimizer/optimize.hpp"
#include "pg_predict/optimizer/passes.hpp"
#include "pg_predict/optimizer/unused_inputs.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::optimizer {

namespace {

using spec::Step;
using Sets = std::vector<ValueSet>;

constexpr double kInf = std::numeric_limits<double>::infinity();

double f32(double v) { return static_cast<double>(static_cast<float>(v)); }

ValueSet constant(double v) {
    ValueSet s;
    s.lo = s.hi = v;
    s.missing = false;
    return s;
}

Sets through_steps(const std::vector<Step>& steps, const std::vector<int32_t>& in_vocab, Sets in);

// One-hot output "x matches c": 1 possible when c may be matched, 0 unless it surely is.
ValueSet one_hot_output(const ValueSet& in, double c) {
    bool one, zero;
    if (std::isnan(c)) {
        one = in.missing;
        zero = in.values;
    } else {
        // Matched in float64 or in float32 (a float32 program): either precision may match.
        one = in.values && ((in.lo <= c && c <= in.hi) || (f32(in.lo) <= f32(c) && f32(c) <= f32(in.hi)));
        const bool surely = in.is_constant() && in.lo == c && f32(in.lo) == f32(c);
        zero = !surely;
    }
    ValueSet out;
    out.missing = false;
    out.values = one || zero;
    out.lo = zero ? 0.0 : 1.0;
    out.hi = one ? 1.0 : 0.0;
    return out;
}

// The count of edges below x (side left) or at most x (side right), in float64 and in float32,
// whichever is smaller (lower) or larger (upper).
double bucket(const std::vector<double>& edges, bool right, double x, bool upper) {
    auto count = [&](bool single) {
        double n = 0;
        for (double e : edges) {
            const double a = single ? f32(e) : e, b = single ? f32(x) : x;
            n += (right ? a <= b : a < b) ? 1.0 : 0.0;
        }
        return n;
    };
    const double d = count(false), s = count(true);
    return upper ? std::max(d, s) : std::min(d, s);
}

// Each column's set through f(c, its set): the ops whose output column c reads input column c
// alone (one set per column, so `in` is as wide as the step's input).
template <typename F>
Sets per_column(const Sets& in, F f) {
    Sets out;
    for (size_t c = 0; c < in.size(); ++c) out.push_back(f(c, in[c]));
    return out;
}

Sets through_concat(const Step& s, const std::vector<int32_t>& in_vocab, const Sets& in) {
    Sets out;
    for (const Step::Part& part : s.parts) {
        std::vector<int32_t> sub_vocab;
        Sets sub;
        for (int32_t c : part.columns) {
            sub_vocab.push_back(in_vocab[c]);
            sub.push_back(in[c]);
        }
        const Sets part_out = through_steps(part.steps, sub_vocab, sub);
        out.insert(out.end(), part_out.begin(), part_out.end());
    }
    return out;
}

Sets through_one_hot(const Step& s, const Sets& in, const std::string& where) {
    Sets out;
    const auto cats = spec::param_matrix(s, "categories", where);
    const auto drop = spec::param_ints(s, "drop", where);
    for (size_t c = 0; c < in.size(); ++c)
        for (size_t k = 0; k < cats[c].size(); ++k)
            if (static_cast<int32_t>(k) != drop[c]) out.push_back(one_hot_output(in[c], cats[c][k]));
    return out;
}

Sets through_bucketize(const Step& s, const Sets& in, const std::string& where) {
    const auto edges = spec::param_matrix(s, "edges", where);
    const bool right = spec::bucketize_counts_equal(s, where);
    return per_column(in, [&](size_t c, ValueSet v) {  // NaN stays NaN
        if (v.values) {
            v.lo = bucket(edges[c], right, v.lo, false);
            v.hi = bucket(edges[c], right, v.hi, true);
        }
        return v;
    });
}

Sets through_impute(const Step& s, const Sets& in, const std::string& where) {
    const auto statistics = spec::param_vector(s, "statistics", where);
    const double marker = spec::missing_marker(s, where);
    return per_column(in, [&](size_t c, ValueSet v) {
        const bool replaced = v.missing || (!std::isnan(marker) && v.values && v.lo <= marker && marker <= v.hi);
        if (replaced && std::isnan(statistics[c])) {
            v.missing = true;
        } else if (replaced) {
            // The replaced values stay in the set: a superset is always safe.
            v.lo = v.values ? std::min(v.lo, statistics[c]) : statistics[c];
            v.hi = v.values ? std::max(v.hi, statistics[c]) : statistics[c];
            v.values = true;
            v.missing = false;
        }
        return v;
    });
}

// x * scale + offset, widened by a margin far beyond float32 rounding: the program may
// compute it in either precision, fused or not.
Sets through_affine(const Step& s, const Sets& in, const std::string& where) {
    const auto scale = spec::param_vector(s, "scale", where);
    const auto offset = spec::param_vector(s, "offset", where);
    return per_column(in, [&](size_t c, ValueSet v) {
        const double a = v.lo * scale[c] + offset[c], b = v.hi * scale[c] + offset[c];
        if (!v.values) return v;
        if (std::isnan(a) || std::isnan(b) || std::isinf(scale[c]) || std::isinf(offset[c]))
            return ValueSet{};  // inf * 0 and the like: anything
        const double margin = 1e-5 * (std::max(std::fabs(a), std::fabs(b)) + std::fabs(offset[c])) + 1e-30;
        v.lo = std::min(a, b) - margin;
        v.hi = std::max(a, b) + margin;
        return v;
    });
}

Sets through_elementwise(const Step& s, const Sets& in, const std::string& where) {
    const std::string f = s.params.value("function", "");
    return per_column(in, [&](size_t, ValueSet v) {
        // Monotone and NaN-preserving (XGBoost's categories): the bounds go through as they are.
        if (f == "float32" || f == "floor") {
            if (v.values) {
                v.lo = spec::apply_elementwise(f, v.lo);
                v.hi = spec::apply_elementwise(f, v.hi);
            }
            return v;
        }
        if (f != "zero_as_missing") return ValueSet{};
        const double z = 2 * spec::kLightgbmZero;
        if (v.values && v.lo <= z && v.hi >= -z) v.missing = true;
        return v;
    });
}

// Sums of columns (the category sets of LightGBM's and XGBoost's categorical splits are one-hot
// columns summed), by interval arithmetic widened as through_affine; NaN anywhere in a row's
// inputs is NaN out (NaN * 0 included).
Sets through_project(const Step& s, const Sets& in, const std::string& where) {
    const auto matrix = spec::param_matrix(s, "matrix", where);
    const auto offset = spec::param_vector(s, "offset", where);
    Sets out;
    for (size_t r = 0; r < matrix.size(); ++r) {
        ValueSet o = constant(offset[r]);
        double magnitude = std::fabs(offset[r]);
        for (size_t c = 0; c < in.size() && c < matrix[r].size(); ++c) {
            const double m = matrix[r][c];
            o.missing = o.missing || in[c].missing;
            if (!in[c].values) {
                o.values = false;
                continue;
            }
            const double a = m * in[c].lo, b = m * in[c].hi;
            if (m == 0.0) continue;
            if (std::isnan(a) || std::isnan(b) || std::isinf(m)) return Sets(matrix.size(), ValueSet{});
            o.lo += std::min(a, b);
            o.hi += std::max(a, b);
            magnitude += std::max(std::fabs(a), std::fabs(b));
        }
        if (std::isnan(o.lo) || std::isnan(o.hi)) return Sets(matrix.size(), ValueSet{});
        const double margin = 1e-5 * magnitude + 1e-30;
        o.lo -= margin;
        o.hi += margin;
        out.push_back(o);
    }
    return out;
}

// A constant input (or a missing one) has one code; matched in both precisions alike.
Sets through_ordinal(const Step& s, const Sets& in, const std::string& where) {
    const auto cats = spec::param_matrix(s, "categories", where);
    const double unknown = spec::param_number(s, "unknown_value", where);
    const double missing = spec::param_number(s, "missing_value", where);
    return per_column(in, [&](size_t c, const ValueSet& v) {
        bool known = false;
        double code = unknown;
        if (v.is_constant()) {
            known = true;
            for (size_t k = 0; k < cats[c].size(); ++k) {
                const bool exact = v.lo == cats[c][k], single = f32(v.lo) == f32(cats[c][k]);
                known = known && exact == single;
                if (exact) code = static_cast<double>(k);  // the last match, as the op takes it
            }
        } else if (!v.values && v.missing) {
            known = true;
            for (size_t k = 0; k < cats[c].size(); ++k)
                if (std::isnan(cats[c][k])) code = missing;
        }
        ValueSet o;
        if (known && std::isnan(code)) {
            o.values = false;
        } else if (known) {
            o = constant(code);
        }
        return o;
    });
}

// Any value at all, for each output of a step the sets do not follow.
Sets through_unknown(const Step& s, const std::vector<int32_t>& in_vocab, const std::string& where) {
    std::vector<int32_t> v = in_vocab;
    spec::check_step(s, v, where);
    return Sets(v.size(), ValueSet{});
}

// The value sets of one step's outputs from its inputs' sets, by the op's family.
Sets through_step(const Step& s, const std::vector<int32_t>& in_vocab, const Sets& in, const std::string& where) {
    check_interrupts();
    switch (s.op) {
    case spec::Op::Concat: return through_concat(s, in_vocab, in);
    case spec::Op::OneHot: return through_one_hot(s, in, where);
    case spec::Op::Bucketize: return through_bucketize(s, in, where);
    case spec::Op::Impute: return through_impute(s, in, where);
    case spec::Op::Affine: return through_affine(s, in, where);
    case spec::Op::Elementwise: return through_elementwise(s, in, where);
    case spec::Op::Ordinal: return through_ordinal(s, in, where);
    case spec::Op::Threshold: case spec::Op::Clip: case spec::Op::IsMissing:
    case spec::Op::Project: return through_project(s, in, where);
    case spec::Op::Normalize: case spec::Op::Monomials: case spec::Op::Kernel:
    case spec::Op::Neighbors: case spec::Op::Power: case spec::Op::Quantile: case spec::Op::Model: case spec::Op::Tensor:
    case spec::Op::None: case spec::Op::Linear: case spec::Op::TorchScript:
        return through_unknown(s, in_vocab, where);
    }
    fail(ErrorCategory::Internal, "specialize: unknown op");
}

Sets through_steps(const std::vector<Step>& steps, const std::vector<int32_t>& in_vocab, Sets in) {
    const std::vector<std::vector<int32_t>> vocabs = step_vocabs(steps, in_vocab);
    for (size_t i = 0; i < steps.size(); ++i)
        in = through_step(steps[i], vocabs[i], in, "steps[" + std::to_string(i) + "]");
    return in;
}

// Which child every allowed value takes at `node`: -1 when both may be taken. `voids[f]`: a
// missing value of input f has no rule (spec::TreeEnsemble::inputs_without_missing_rule), so
// the row has no margin whichever child it takes, and only the numbers decide.
int32_t decided_child(const spec::Tree& t, size_t node, const Sets& sets, const std::vector<bool>& voids,
                      spec::Comparison cmp) {
    const int32_t f = t.feature[node];
    if (f < 0 || static_cast<size_t>(f) >= sets.size()) return -1;
    const ValueSet& v = sets[f];
    if (!v.values && !v.missing) return -1;  // no row at all: leave it as it is
    const double th = t.threshold[node];
    const bool all_left = cmp == spec::Comparison::Less ? f32(v.hi) < th : v.hi <= th;
    const bool all_right = cmp == spec::Comparison::Less ? v.lo >= th : f32(v.lo) > th;
    const bool missing_left = t.default_left[node] != 0;
    const bool routed = v.missing && !voids[f];  // a missing value that takes a child
    const bool left = (!v.values || all_left) && (!routed || missing_left);
    const bool right = (!v.values || all_right) && (!routed || !missing_left);
    if (left) return t.left[node];
    if (right) return t.right[node];
    return -1;
}

// The tree rebuilt from its root over the nodes an allowed value reaches.
spec::Tree prune_tree(const spec::Tree& t, const Sets& sets, const std::vector<bool>& voids, spec::Comparison cmp) {
    spec::Tree out;
    out.group = t.group;
    const bool cover = t.has_cover(), linear = t.is_linear();
    auto emit = [&](auto& self, int32_t node) -> int32_t {
        while (!t.is_leaf(node)) {
            const int32_t child = decided_child(t, node, sets, voids, cmp);
            if (child < 0) break;
            node = child;
        }
        const int32_t at = static_cast<int32_t>(out.left.size());
        out.left.push_back(-1);
        out.right.push_back(-1);
        out.feature.push_back(t.feature[node]);
        out.threshold.push_back(t.threshold[node]);
        out.default_left.push_back(t.default_left[node]);
        out.value.push_back(t.value[node]);
        if (cover) out.cover.push_back(t.cover[node]);
        if (linear) {
            out.linear_const.push_back(t.linear_const[node]);
            out.linear_feature.push_back(t.linear_feature[node]);
            out.linear_coeff.push_back(t.linear_coeff[node]);
        }
        if (!t.is_leaf(node)) {
            const int32_t l = self(self, t.left[node]);
            const int32_t r = self(self, t.right[node]);
            out.left[at] = l;
            out.right[at] = r;
        }
        return at;
    };
    emit(emit, 0);
    return out;
}

}  // namespace

Specialization specialize(const spec::Pipeline& optimized, const std::map<int32_t, ValueSet>& inputs) {
    Specialization r;
    r.pipeline = optimized;
    r.trees = static_cast<int32_t>(optimized.model.trees.size());
    for (const spec::Tree& t : optimized.model.trees) r.nodes_before += static_cast<int64_t>(t.size());
    r.nodes_after = r.nodes_before;
    r.unused_inputs = unused_inputs(optimized);
    if (optimized.task == spec::Task::Transform || optimized.estimator.op != spec::Op::None ||
        optimized.model.trees.empty() || inputs.empty())
        return r;

    Sets sets(static_cast<size_t>(optimized.input_width()));
    for (const auto& [input, set] : inputs)
        if (input >= 0 && static_cast<size_t>(input) < sets.size()) sets[input] = set;
    if (!optimized.steps.empty()) sets = through_steps(optimized.steps, input_vocab(optimized), sets);

    std::vector<bool> voids(sets.size(), false);
    for (int32_t f : optimized.model.inputs_without_missing_rule)
        if (static_cast<size_t>(f) < voids.size()) voids[f] = true;
    spec::Pipeline p = optimized;
    // An input no allowed row leaves missing (a one-hot column of a fixed text) voids no row: it
    // need not stay read for that.
    std::vector<int32_t>& unruled = p.model.inputs_without_missing_rule;
    unruled.erase(std::remove_if(unruled.begin(), unruled.end(),
                                 [&](int32_t f) { return static_cast<size_t>(f) < sets.size() && !sets[f].missing; }),
                  unruled.end());
    int64_t after = 0;
    for (spec::Tree& t : p.model.trees) {
        check_interrupts();
        t = prune_tree(t, sets, voids, p.model.comparison);
        after += static_cast<int64_t>(t.size());
    }
    if (after == r.nodes_before) return r;  // nothing decided: the stored program does as well
    r.pipeline = optimize(p);  // drops the featurizer columns no tree reads any more
    r.nodes_after = after;
    r.unused_inputs = unused_inputs(r.pipeline);
    r.changed = true;
    return r;
}

int32_t text_value_index(const spec::Pipeline& p, int32_t input, const std::string& value) {
    for (const spec::TextInput& t : p.text_inputs) {
        if (t.input != input) continue;
        const auto it = std::find(t.vocabulary.begin(), t.vocabulary.end(), value);
        if (it != t.vocabulary.end()) return static_cast<int32_t>(it - t.vocabulary.begin());
        return t.unknown_is_error ? -2 : t.unknown_is_missing ? kMissingText : -1;
    }
    return -2;
}

}  // namespace pg_predict::optimizer
