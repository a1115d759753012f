// Concat clean-up after pruning: selections that became identities go, and a selection
// followed by a concat becomes that concat reading the original columns.
#include <numeric>

#include "pg_predict/common/interrupt.hpp"
#include "pg_predict/optimizer/passes.hpp"

namespace pg_predict::optimizer {

namespace {

using spec::Step;

bool is_selection(const Step& s) {
    if (s.op != spec::Op::Concat) return false;
    for (const Step::Part& part : s.parts)
        if (!part.steps.empty()) return false;
    return true;
}

// The input column behind each output column of a pure selection.
std::vector<int32_t> selected(const Step& s) {
    std::vector<int32_t> cols;
    for (const Step::Part& part : s.parts) cols.insert(cols.end(), part.columns.begin(), part.columns.end());
    return cols;
}

// A concat of one part reading all w columns in order.
bool reads_all_in_order(const Step& s, size_t w) {
    if (s.op != spec::Op::Concat || s.parts.size() != 1 || s.parts[0].columns.size() != w) return false;
    for (size_t c = 0; c < w; ++c)
        if (s.parts[0].columns[c] != static_cast<int32_t>(c)) return false;
    return true;
}

std::vector<Step> simplify(std::vector<Step> steps, const std::vector<int32_t>& in_vocab, const std::string& where,
                           std::vector<std::string>& changes) {
    check_interrupts();  // per step: nested compositions can be deep
    bool changed = true;
    while (changed) {
        changed = false;
        const std::vector<std::vector<int32_t>> vocabs = step_vocabs(steps, in_vocab);
        for (size_t i = 0; i < steps.size() && !changed; ++i) {
            const std::string at = where + "[" + std::to_string(i) + "]";
            Step& s = steps[i];
            if (reads_all_in_order(s, vocabs[i].size())) {
                std::vector<Step> inner = s.parts[0].steps;
                steps.erase(steps.begin() + i);
                steps.insert(steps.begin() + i, inner.begin(), inner.end());
                changes.push_back(at + " concat: passes its whole input through" +
                                  (inner.empty() ? std::string(", removed") : ", replaced by its part's steps"));
                changed = true;
            } else if (is_selection(s) && i + 1 < steps.size() && steps[i + 1].op == spec::Op::Concat) {
                const std::vector<int32_t> cols = selected(s);
                for (Step::Part& part : steps[i + 1].parts)
                    for (int32_t& c : part.columns) c = cols[c];
                steps.erase(steps.begin() + i);
                changes.push_back(at + " concat: a selection, folded into the concat after it");
                changed = true;
            } else if (s.op == spec::Op::Concat) {
                for (size_t p = 0; p < s.parts.size(); ++p) {
                    std::vector<int32_t> sub;
                    for (int32_t c : s.parts[p].columns) sub.push_back(vocabs[i][c]);
                    s.parts[p].steps = simplify(s.parts[p].steps, sub, at + ".parts[" + std::to_string(p) + "].steps",
                                                changes);
                }
            }
        }
    }
    return steps;
}

}  // namespace

spec::Pipeline simplify_concat(const spec::Pipeline& in, std::vector<std::string>& changes) {
    spec::Pipeline p = in;
    p.steps = simplify(p.steps, input_vocab(p), "steps", changes);
    return p;
}

}  // namespace pg_predict::optimizer
