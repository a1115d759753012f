// Liveness: which columns of each vector in a pipeline some output depends on, backwards from
// the estimator. The basis of dead-column removal and of the inputs the scan leaves out.
#include <algorithm>

#include "pg_predict/common/interrupt.hpp"
#include "pg_predict/optimizer/passes.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::optimizer {

namespace {

bool any(const Mask& m) { return std::find(m.begin(), m.end(), true) != m.end(); }


}  // namespace

std::vector<int32_t> input_vocab(const spec::Pipeline& p) {
    std::vector<int32_t> vocab(static_cast<size_t>(p.input_width()), -1);
    for (const spec::TextInput& t : p.text_inputs)
        if (t.input >= 0 && static_cast<size_t>(t.input) < vocab.size())
            vocab[t.input] = static_cast<int32_t>(t.vocabulary.size());
    return vocab;
}

std::vector<std::vector<int32_t>> step_vocabs(const std::vector<spec::Step>& steps, std::vector<int32_t> in) {
    std::vector<std::vector<int32_t>> out{in};
    for (const spec::Step& s : steps) {
        spec::check_step(s, in, "steps");
        out.push_back(in);
    }
    return out;
}

namespace {

// The liveness of each family: which input columns the live outputs of one step read.

// Output column c is a function of input column c alone.
Mask columnwise_needs(const Mask& live_out) { return live_out; }

// Every output reads every input (a zero weight times NaN is still NaN).
Mask whole_row_needs(size_t w) { return Mask(w, true); }

Mask one_hot_needs(const spec::Step& s, size_t w, const Mask& live_out) {
    Mask need(w, false);
    const auto cats = spec::param_matrix(s, "categories", "one_hot");
    const auto drop = spec::param_ints(s, "drop", "one_hot");
    size_t o = 0;
    for (size_t c = 0; c < w; ++c)
        for (size_t k = 0; k < cats[c].size(); ++k)
            if (static_cast<int32_t>(k) != drop[c] && live_out[o++]) need[c] = true;
    return need;
}

// x^0 is 1 for every x, NaN included: a zero power reads nothing.
Mask monomials_needs(const spec::Step& s, size_t w, const Mask& live_out) {
    Mask need(w, false);
    const auto powers = spec::param_matrix(s, "powers", "monomials");
    for (size_t k = 0; k < powers.size(); ++k)
        if (live_out[k])
            for (size_t c = 0; c < w; ++c)
                if (powers[k][c] != 0.0) need[c] = true;
    return need;
}

// Each part's live outputs through its own steps, back to the columns it selects.
Mask concat_needs(const spec::Step& s, const std::vector<int32_t>& in_vocab, const Mask& live_out,
                  LivenessMemo* memo) {
    Mask need(in_vocab.size(), false);
    size_t o = 0;
    for (const spec::Step::Part& part : s.parts) {
        std::vector<int32_t> sub;
        for (int32_t c : part.columns) sub.push_back(in_vocab[c]);
        const std::vector<std::vector<int32_t>> vocabs = step_vocabs(part.steps, sub);
        const size_t width = vocabs.back().size();
        const Mask slice(live_out.begin() + o, live_out.begin() + o + width);
        o += width;
        const Mask sub_need = steps_liveness(part.steps, sub, slice, memo).front();
        for (size_t j = 0; j < part.columns.size(); ++j)
            if (sub_need[j]) need[part.columns[j]] = true;
    }
    return need;
}

Mask needs_by_op(const spec::Step& s, const std::vector<int32_t>& in_vocab, const Mask& live_out,
                 LivenessMemo* memo) {
    const size_t w = in_vocab.size();
    switch (s.op) {
    case spec::Op::Affine: case spec::Op::Impute: case spec::Op::Elementwise: case spec::Op::Threshold:
    case spec::Op::Clip: case spec::Op::IsMissing: case spec::Op::Bucketize: case spec::Op::Ordinal:
    case spec::Op::Power: case spec::Op::Quantile:
        return columnwise_needs(live_out);
    case spec::Op::OneHot: return one_hot_needs(s, w, live_out);
    case spec::Op::Monomials: return monomials_needs(s, w, live_out);
    case spec::Op::Concat: return concat_needs(s, in_vocab, live_out, memo);
    case spec::Op::Normalize: case spec::Op::Project: case spec::Op::Kernel: case spec::Op::Neighbors:
    case spec::Op::None: case spec::Op::Linear: case spec::Op::TorchScript: case spec::Op::Model:
    case spec::Op::Tensor:  // (its operands could say which; not shrunk yet)
        return whole_row_needs(w);
    }
    return whole_row_needs(w);
}

}  // namespace

Mask step_needs(const spec::Step& s, const std::vector<int32_t>& in_vocab, const Mask& live_out, LivenessMemo* memo) {
    check_interrupts();  // per step: nested compositions can be deep
    const size_t w = in_vocab.size();
    if (!any(live_out)) return Mask(w, false);
    Mask need = needs_by_op(s, in_vocab, live_out, memo);
    if (!any(need) && w > 0) need[0] = true;
    return need;
}

std::vector<Mask> steps_liveness(const std::vector<spec::Step>& steps, const std::vector<int32_t>& in_vocab,
                                 const Mask& live_out, LivenessMemo* memo) {
    const std::vector<std::vector<int32_t>> vocabs = step_vocabs(steps, in_vocab);
    std::vector<Mask> live(steps.size() + 1);
    live[steps.size()] = live_out;
    for (size_t i = steps.size(); i-- > 0;) live[i] = step_needs(steps[i], vocabs[i], live[i + 1], memo);
    if (memo != nullptr) (*memo)[&steps] = live;
    return live;
}

namespace {

// The inputs with a non-zero weight in some row of a linear estimator's coefficients.
Mask linear_estimator_needs(const spec::Pipeline& p, size_t w) {
    Mask need(w, false);
    for (const std::vector<double>& row : spec::param_matrix(p.estimator, "coef", "estimator"))
        for (size_t f = 0; f < w && f < row.size(); ++f)
            if (row[f] != 0.0) need[f] = true;
    return need;
}

// The inputs some split, or some linear leaf, of the tree ensemble reads, and those whose missing
// value voids the row (an input every split on which a query's bounds decided is still read).
Mask tree_ensemble_needs(const spec::Pipeline& p, size_t w) {
    Mask need(w, false);
    for (int32_t f : p.model.read_inputs())
        if (f >= 0 && static_cast<size_t>(f) < w) need[f] = true;
    for (int32_t f : p.model.inputs_without_missing_rule)
        if (f >= 0 && static_cast<size_t>(f) < w) need[f] = true;
    return need;
}

}  // namespace

Mask estimator_needs(const spec::Pipeline& p) {
    const size_t w = static_cast<size_t>(std::max(0, p.model.num_features));
    if (p.task == spec::Task::Transform) return Mask(w, true);  // every output column is the result
    switch (p.estimator.op) {
    case spec::Op::Linear: return linear_estimator_needs(p, w);
    case spec::Op::None: return tree_ensemble_needs(p, w);
    case spec::Op::Affine: case spec::Op::Impute: case spec::Op::OneHot: case spec::Op::Ordinal:
    case spec::Op::Elementwise: case spec::Op::Threshold: case spec::Op::Clip: case spec::Op::IsMissing:
    case spec::Op::Normalize: case spec::Op::Project: case spec::Op::Bucketize: case spec::Op::Monomials:
    case spec::Op::Kernel: case spec::Op::Neighbors: case spec::Op::Concat: case spec::Op::TorchScript:
    case spec::Op::Power: case spec::Op::Quantile: case spec::Op::Model: case spec::Op::Tensor:
        return whole_row_needs(w);  // reads every input
    }
    return whole_row_needs(w);
}

}  // namespace pg_predict::optimizer
