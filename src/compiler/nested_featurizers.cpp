// The featurizer steps that hold steps, in TorchScript: concat (each part's columns through its
// own steps) and model (a nested pipeline as a submodule) (featurizer_steps.cpp lists what each
// op becomes).
#include <string>
#include <vector>

#include "pg_predict/common/error.hpp"
#include "pg_predict/compiler/compile.hpp"
#include "pg_predict/spec/steps.hpp"
#include "featurizer_emitter.hpp"
#include "program_parts.hpp"

namespace pg_predict::compiler::featurizer {

void emit_concat(Emitter& e, const spec::Step& s, const std::string& h, const std::string& out, const std::string& pre,
                 int64_t& width) {
    std::vector<std::string> outs;
    int64_t total = 0;
    for (size_t i = 0; i < s.parts.size(); ++i) {
        const spec::Step::Part& part = s.parts[i];
        const std::string name = pre + "part" + std::to_string(i);
        std::vector<int64_t> cols(part.columns.begin(), part.columns.end());
        e.parts.buffers.push_back(make_i64(name, {static_cast<int64_t>(cols.size())}, cols));
        const std::string in = e.var();
        e.line(in + " = " + select_columns(h, name, cols));
        int64_t w = static_cast<int64_t>(cols.size());
        std::string r = in;
        for (const spec::Step& sub : part.steps) r = emit_step(e, sub, r, w);
        outs.push_back(r);
        total += w;
    }
    std::string list;
    for (const std::string& o : outs) list += (list.empty() ? "" : ", ") + o;
    e.line(out + " = torch.cat([" + list + "], 1)");
    width = total;
}

void emit_model(Emitter& e, const spec::Step& s, const std::string& h, const std::string& out,
                const std::string& pre, int64_t& width) {
    const std::string at = "step model";
    const spec::Pipeline m = spec::model_pipeline(s, at);
    const std::string output = spec::model_output(s, at);
    const int64_t w = spec::model_width(m, output, at);
    const Strategy strategy = m.estimator.op == spec::Op::None ? choose_strategy(m) : Strategy::TreeTraversal;
    const Output o = output == "decision_function" ? Output::DecisionFunction : Output::Predict;
    const std::string name = pre + "model";
    e.parts.submodules.emplace_back(name, compile(m, strategy, o));
    const bool bare_trees = m.steps.empty() && m.estimator.op == spec::Op::None;
    const std::string r = e.var();
    e.line(r + " = self." + name + ".forward(" + h + (bare_trees ? ".float()" : "") + ").double()");
    if (output == "label") {
        // The predicted class: the argmax of predict_proba (of the decision half when the
        // program also gives decision values), the first of equal maxima; a row the member
        // scores NaN (a k-NN member's NULL) stays NaN rather than becoming a vote.
        const int64_t k = static_cast<int64_t>(m.classes.size());
        const std::string scores = spec::has_decision_columns(m) ? r + "[:, " + std::to_string(k) + ":]" : r;
        const std::string onehot = e.var();
        e.line(onehot + " = torch.zeros_like(" + scores + ").scatter_(1, torch.argmax(" + scores + ", 1, keepdim=True), 1.0)");
        e.line(out + " = torch.where(torch.isnan(" + scores + ").any(1, keepdim=True), torch.full_like(" + onehot +
               ", float(\"nan\")), " + onehot + ")");
    } else {
        e.line(out + " = " + r);
    }
    width = w;
}

}  // namespace pg_predict::compiler::featurizer
