// Dead-column removal (feature-selection push-down): liveness says which columns each step's
// consumers read; every step is rewritten to carry only those, so a selector at the end of a
// 50-column featurizer chain makes the whole chain (and the scan) 5 columns wide.
#include <algorithm>
#include <numeric>
#include <utility>

#include "pg_predict/common/interrupt.hpp"
#include "pg_predict/common/error.hpp"
#include "pg_predict/optimizer/passes.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::optimizer {

namespace {

using spec::Step;
using nlohmann::json;

size_t count(const Mask& m) { return static_cast<size_t>(std::count(m.begin(), m.end(), true)); }

// Position of column c among the present ones.
int32_t compact(const Mask& present, int32_t c) {
    if (!present[c]) fail(ErrorCategory::Internal, "optimizer: a needed column was removed upstream");
    return static_cast<int32_t>(std::count(present.begin(), present.begin() + c, true));
}

template <typename T>
std::vector<T> keep(const std::vector<T>& v, const Mask& m) {
    std::vector<T> out;
    for (size_t i = 0; i < v.size(); ++i)
        if (m[i]) out.push_back(v[i]);
    return out;
}

std::vector<Step> shrink_steps(const std::vector<Step>& steps, const std::vector<int32_t>& in_vocab,
                               const Mask& present, const Mask& live_out, Mask& out_present,
                               const std::string& where, std::vector<std::string>& changes, LivenessMemo& memo);

// The liveness of a list of steps, from the memo the top-level analysis filled.
const std::vector<Mask>& liveness_of(const std::vector<Step>& steps, const std::vector<int32_t>& in_vocab,
                                     const Mask& live_out, LivenessMemo& memo) {
    auto it = memo.find(&steps);
    if (it == memo.end()) it = memo.emplace(&steps, steps_liveness(steps, in_vocab, live_out, &memo)).first;
    return it->second;
}

// One step rewritten to read the `present` columns of its input (compacted) and give at least
// the `live` ones of its output: the rewritten step in `r`, the output columns it gives in
// `out`. Each family of ops has its member function; run() picks it.
struct StepShrink {
    StepShrink(const Step& s, const std::vector<int32_t>& in_vocab, const Mask& present, const Mask& live, Mask& out,
               std::string where, std::vector<std::string>& changes, LivenessMemo& memo)
        : s(s), in_vocab(in_vocab), present(present), live(live), out(out), where(std::move(where)),
          changes(changes), memo(memo) {}

    const Step& s;
    const std::vector<int32_t>& in_vocab;
    const Mask& present;
    const Mask& live;
    Mask& out;
    const std::string where;
    std::vector<std::string>& changes;
    LivenessMemo& memo;
    const size_t w = in_vocab.size();
    const size_t kept = count(present);
    Step r;  // not a copy of s: a concat's parts are rebuilt below, not copied level by level

    void note(size_t from, size_t to, const char* what) {
        if (from != to)
            changes.push_back(where + " " + spec::op_name(s.op) + ": " + std::to_string(from) + " -> " + std::to_string(to) + " " + what);
    }

    // Per-column parameters: keep the present columns' entries.
    void columnwise_params() {
        for (const char* key : {"scale", "offset", "statistics", "edges", "categories", "lambdas", "quantiles"}) {
            if (!s.params.contains(key)) continue;
            json shrunk = json::array();
            for (size_t c = 0; c < w; ++c)
                if (present[c]) shrunk.push_back(s.params[key][c]);
            r.params[key] = shrunk;
        }
        columnwise();
    }

    void columnwise() {
        out = present;
        note(w, kept, "columns");
    }

    // A category nobody reads is dropped from the list; a listed-but-dropped category
    // (drop = d) is left out too, since matching nothing gives the same zeros.
    void one_hot() {
        const auto cats = spec::param_matrix(s, "categories", where);
        const auto drop = spec::param_ints(s, "drop", where);
        std::vector<std::vector<double>> new_cats;
        std::vector<int32_t> new_drop;
        out.clear();
        size_t o = 0;
        for (size_t c = 0; c < w; ++c) {
            const size_t block = cats[c].size() - (drop[c] >= 0 ? 1 : 0);
            if (!present[c]) {
                out.insert(out.end(), block, false);
                o += block;
                continue;
            }
            if (block == 0) {  // nothing to shrink: keep the column as it was
                new_cats.push_back(cats[c]);
                new_drop.push_back(drop[c]);
                continue;
            }
            new_cats.push_back(one_hot_live_categories(cats[c], drop[c], o));
            new_drop.push_back(-1);
        }
        r.params["categories"] = spec::matrix_to_json(new_cats);
        r.params["drop"] = new_drop;
        note(live.size(), count(out), "outputs");
    }

    // The categories of one present column whose outputs are live (from live[o] on), their
    // outputs appended to `out`; at least one, so the column keeps an output.
    std::vector<double> one_hot_live_categories(const std::vector<double>& cats, int32_t drop, size_t& o) {
        std::vector<double> keep_cats;
        const size_t start = out.size();
        for (size_t k = 0; k < cats.size(); ++k) {
            if (static_cast<int32_t>(k) == drop) continue;
            const bool is_live = live[o++];
            if (is_live) keep_cats.push_back(cats[k]);
            out.push_back(is_live);
        }
        if (keep_cats.empty()) {  // present but unread: keep one category so it has an output
            const size_t first = drop == 0 ? 1 : 0;
            keep_cats.push_back(cats[first]);
            out[start] = true;
        }
        return keep_cats;
    }

    void monomials() {
        auto powers = spec::param_matrix(s, "powers", where);
        Mask rows = live;
        if (count(rows) == 0) rows[0] = true;
        std::vector<std::vector<double>> new_powers;
        for (size_t k = 0; k < powers.size(); ++k)
            if (rows[k]) new_powers.push_back(keep(powers[k], present));
        r.params["powers"] = spec::matrix_to_json(new_powers);
        out = rows;
        note(powers.size(), new_powers.size(), "monomials");
    }

    void project() {
        if (kept != w) fail(ErrorCategory::Internal, "optimizer: project lost an input column");
        const auto m = spec::param_matrix(s, "matrix", where);
        const auto off = spec::param_vector(s, "offset", where);
        Mask rows = live;
        if (count(rows) == 0) rows[0] = true;
        r.params["matrix"] = spec::matrix_to_json(keep(m, rows));
        r.params["offset"] = spec::numbers_to_json(keep(off, rows));
        out = rows;
        note(m.size(), count(rows), "outputs");
    }

    void concat() {
        out.clear();
        size_t o = 0;
        for (size_t p = 0; p < s.parts.size(); ++p) {
            const Step::Part& part = s.parts[p];
            std::vector<int32_t> sub;
            for (int32_t c : part.columns) sub.push_back(in_vocab[c]);
            const size_t width = step_vocabs(part.steps, sub).back().size();
            const Mask slice(live.begin() + o, live.begin() + o + width);
            o += width;
            const std::string at = where + ".parts[" + std::to_string(p) + "]";
            if (count(slice) == 0) {
                out.insert(out.end(), width, false);
                changes.push_back(at + ": removed (nothing reads its " + std::to_string(width) + " outputs)");
                continue;
            }
            concat_part(part, sub, slice, at);
        }
    }

    // A part something reads: it reads exactly the columns its steps need (concat selects for
    // free), its steps shrunk in turn.
    void concat_part(const Step::Part& part, const std::vector<int32_t>& sub, const Mask& slice,
                     const std::string& at) {
        const Mask need = liveness_of(part.steps, sub, slice, memo).front();
        Step::Part q;
        for (size_t j = 0; j < part.columns.size(); ++j)
            if (need[j]) q.columns.push_back(compact(present, part.columns[j]));
        if (q.columns.size() != part.columns.size())
            changes.push_back(at + ": reads " + std::to_string(q.columns.size()) + " of its " +
                              std::to_string(part.columns.size()) + " columns");
        Mask part_out;
        q.steps = shrink_steps(part.steps, sub, need, slice, part_out, at + ".steps", changes, memo);
        out.insert(out.end(), part_out.begin(), part_out.end());
        r.parts.push_back(std::move(q));
    }

    // Every output reads every column: nothing to shrink.
    void whole_row() {
        if (kept != w)
            fail(ErrorCategory::Internal, std::string("optimizer: op ") + spec::op_name(s.op) + " lost an input column");
        std::vector<int32_t> v = in_vocab;
        spec::check_step(s, v, where);
        out.assign(v.size(), true);
    }

    Step run() {
        check_interrupts();  // per step: nested compositions can be deep
        r.op = s.op;
        r.params = s.params;
        switch (s.op) {
        case spec::Op::Affine: case spec::Op::Impute: case spec::Op::Bucketize: case spec::Op::Ordinal:
        case spec::Op::Power: case spec::Op::Quantile:
            columnwise_params(); break;
        case spec::Op::Elementwise: case spec::Op::Threshold: case spec::Op::Clip: case spec::Op::IsMissing:
            columnwise(); break;
        case spec::Op::OneHot: one_hot(); break;
        case spec::Op::Monomials: monomials(); break;
        case spec::Op::Project: project(); break;
        case spec::Op::Concat: concat(); break;
        case spec::Op::Normalize: case spec::Op::Kernel: case spec::Op::Neighbors: case spec::Op::None:
        case spec::Op::Linear: case spec::Op::TorchScript: case spec::Op::Model: case spec::Op::Tensor:
            whole_row(); break;
        }
        return std::move(r);
    }
};

std::vector<Step> shrink_steps(const std::vector<Step>& steps, const std::vector<int32_t>& in_vocab,
                               const Mask& present, const Mask& live_out, Mask& out_present,
                               const std::string& where, std::vector<std::string>& changes, LivenessMemo& memo) {
    const std::vector<std::vector<int32_t>> vocabs = step_vocabs(steps, in_vocab);
    const std::vector<Mask> live = liveness_of(steps, in_vocab, live_out, memo);
    std::vector<Step> out;
    Mask p = present;
    for (size_t i = 0; i < steps.size(); ++i) {
        Mask next;
        out.push_back(StepShrink(steps[i], vocabs[i], p, live[i + 1], next, where + "[" + std::to_string(i) + "]",
                                 changes, memo).run());
        p = std::move(next);
    }
    out_present = std::move(p);
    return out;
}

// A linear estimator's coefficients of the present columns.
void shrink_linear_estimator(spec::Pipeline& p, const Mask& present) {
    const auto coef = spec::param_matrix(p.estimator, "coef", "estimator");
    std::vector<std::vector<double>> shrunk;
    for (const auto& row : coef) shrunk.push_back(keep(row, present));
    p.estimator.params["coef"] = spec::matrix_to_json(shrunk);
}

// The trees' split and linear-leaf features, and the inputs without a missing-value rule,
// renumbered among the present columns.
void shrink_tree_ensemble(spec::Pipeline& p, const Mask& present) {
    for (spec::Tree& t : p.model.trees)
        for (size_t n = 0; n < t.size(); ++n)
            if (!t.is_leaf(n)) t.feature[n] = compact(present, t.feature[n]);
    for (spec::Tree& t : p.model.trees)
        for (auto& features : t.linear_feature)
            for (int32_t& f : features) f = compact(present, f);
    for (int32_t& f : p.model.inputs_without_missing_rule) f = compact(present, f);
}

// The estimator rewritten to read only the `present` columns of its input.
void shrink_estimator(spec::Pipeline& p, const Mask& present, std::vector<std::string>& changes) {
    const size_t w = present.size(), kept = count(present);
    if (kept == w) return;
    switch (p.estimator.op) {
    case spec::Op::Linear: shrink_linear_estimator(p, present); break;
    case spec::Op::None: shrink_tree_ensemble(p, present); break;
    case spec::Op::Affine: case spec::Op::Impute: case spec::Op::OneHot: case spec::Op::Ordinal:
    case spec::Op::Elementwise: case spec::Op::Threshold: case spec::Op::Clip: case spec::Op::IsMissing:
    case spec::Op::Normalize: case spec::Op::Project: case spec::Op::Bucketize: case spec::Op::Monomials:
    case spec::Op::Kernel: case spec::Op::Neighbors: case spec::Op::Concat: case spec::Op::TorchScript:
    case spec::Op::Power: case spec::Op::Quantile: case spec::Op::Model: case spec::Op::Tensor:
        fail(ErrorCategory::Internal,
             std::string("optimizer: estimator ") + spec::op_name(p.estimator.op) + " lost an input column");
    }
    p.model.num_features = static_cast<int32_t>(kept);
    changes.push_back("estimator " +
                      std::string(p.estimator.op == spec::Op::None ? "tree_ensemble" : spec::op_name(p.estimator.op)) +
                      ": " + std::to_string(w) + " -> " + std::to_string(kept) + " inputs");
}

}  // namespace

spec::Pipeline remove_unused_columns(const spec::Pipeline& in, std::vector<std::string>& changes) {
    if (in.steps.empty()) return in;  // a bare model: nothing inside to shrink
    spec::Pipeline p = in;
    const std::vector<int32_t> vocab = input_vocab(p);
    Mask est = estimator_needs(p);
    if (count(est) == 0 && !est.empty()) est[0] = true;  // keep the chain non-empty
    LivenessMemo memo;
    const std::vector<Mask> live = steps_liveness(p.steps, vocab, est, &memo);
    const Mask& need = live.front();
    const size_t w = vocab.size(), read = count(need);

    Mask present(w, true);
    std::vector<spec::Step> front;
    if (read < w && p.steps.front().op != spec::Op::Concat) {
        // The first step works column by column and cannot skip its input's columns itself:
        // select the live ones in front of it.
        spec::Step select;
        select.op = spec::Op::Concat;
        select.params = json::object();
        spec::Step::Part part;
        for (size_t c = 0; c < w; ++c)
            if (need[c]) part.columns.push_back(static_cast<int32_t>(c));
        select.parts.push_back(std::move(part));
        front.push_back(std::move(select));
        present = need;
        changes.push_back("inserted a selection of the " + std::to_string(read) + " read inputs of " +
                          std::to_string(w));
    }
    Mask out;
    std::vector<spec::Step> steps = shrink_steps(p.steps, vocab, present, est, out, "steps", changes, memo);
    shrink_estimator(p, out, changes);
    front.insert(front.end(), steps.begin(), steps.end());
    p.steps = std::move(front);
    if (read < w)
        changes.push_back("inputs read: " + std::to_string(read) + " of " + std::to_string(w));
    return p;
}

}  // namespace pg_predict::optimizer
