// The featurizer steps that hold steps (spec/steps.hpp documents each op): concat, whose parts
// read chosen columns and apply their own steps, and model, a whole nested pipeline (an
// ensemble's member). Each op's shape check and its double-precision evaluation sit side by
// side; spec/steps.cpp dispatches to them.
#include <cmath>
#include <string>
#include <vector>

#include "pg_predict/common/error.hpp"
#include "pg_predict/spec/limits.hpp"
#include "pg_predict/spec/pipeline.hpp"
#include "pg_predict/spec/steps.hpp"
#include "step_ops.hpp"

namespace pg_predict::spec::step_ops {

using nlohmann::json;

namespace {

// A binary classifier without probabilities whose two margins are [-d, d]: its
// decision_function is the second (compiler/outputs.cpp, two_sided_decisions).
bool model_two_sided(const Pipeline& m) {
    return m.task == Task::Classification && m.transform == PostTransform::Identity && !m.has_probabilities &&
           m.classes.size() == 2 && m.model.num_groups == 2;
}

// One row of op model: the nested pipeline's reference on it (see model_output).
std::vector<double> model_row(const Step& s, const std::vector<double>& x, const std::string& at) {
    const Pipeline m = model_pipeline(s, at);
    const std::string output = model_output(s, at);
    if (output == "decision_function") {
        // Only linear estimators (model_width): the steps, then x · coefᵀ + intercept, scaled.
        const std::vector<double> z = apply_steps(m.steps, x);
        const auto coef = param_matrix(m.estimator, "coef", at + ".estimator");
        const std::vector<double> b = param_vector(m.estimator, "intercept", at + ".estimator");
        std::vector<double> y;
        for (size_t g = model_two_sided(m) ? 1 : 0; g < coef.size(); ++g) {
            double acc = b[g];
            for (size_t c = 0; c < z.size(); ++c) acc += z[c] * coef[g][c];
            y.push_back(acc * m.decision_scale);
        }
        return y;
    }
    std::vector<float> out(static_cast<size_t>(m.output_width()));
    reference_predict(m, x.data(), 1, out.data());
    std::vector<double> y(out.begin(), out.end());
    if (output == "predict") return y;
    // label: one-hot of the predicted class, the first of equal maxima (the second half holds
    // the decision values when has_decision_columns).
    const size_t k = m.classes.size();
    const size_t from = y.size() - k;
    size_t best = from;
    for (size_t c = from; c < y.size(); ++c) {
        if (std::isnan(y[c])) return std::vector<double>(k, NAN);  // no label: no vote
        if (y[c] > y[best]) best = c;
    }
    std::vector<double> onehot(k, 0.0);
    onehot[best - from] = 1.0;
    return onehot;
}

}  // namespace

void check_concat(const Step& s, std::vector<int32_t>& vocab, const std::string& at, int nesting) {
    const size_t w = vocab.size();
    if (s.parts.empty()) invalid(at, "concat has no parts");
    if (nesting >= kMaxStepNesting)
        invalid(at, "concat nests deeper than " + std::to_string(kMaxStepNesting) + " levels");
    std::vector<int32_t> out;
    for (size_t p = 0; p < s.parts.size(); ++p) {
        const Step::Part& part = s.parts[p];
        std::vector<int32_t> sub;
        for (int32_t c : part.columns) {
            if (c < 0 || static_cast<size_t>(c) >= w)
                invalid(item(at + ".parts", p), "column " + std::to_string(c) + " is outside [0, " +
                                                    std::to_string(w) + ")");
            sub.push_back(vocab[c]);
        }
        check_nested(part.steps, sub, item(at + ".parts", p) + ".steps", nesting + 1);
        check_width(out.size() + sub.size(), at);
        out.insert(out.end(), sub.begin(), sub.end());
    }
    vocab = std::move(out);
}

void evaluate_concat(const Step& s, std::vector<double>& x, const std::string& at) {
    std::vector<double> y;
    for (const Step::Part& part : s.parts) {
        std::vector<double> sub;
        for (int32_t c : part.columns) sub.push_back(x[c]);
        sub = apply_steps(part.steps, std::move(sub));
        y.insert(y.end(), sub.begin(), sub.end());
    }
    x = std::move(y);
}

void check_model(const Step& s, std::vector<int32_t>& vocab, const std::string& at, int nesting) {
    const size_t w = vocab.size();
    if (nesting >= kMaxStepNesting)
        invalid(at, "model nests deeper than " + std::to_string(kMaxStepNesting) + " levels");
    const Pipeline m = model_pipeline(s, at);
    if (static_cast<size_t>(m.input_width()) != w)
        invalid(at, "model reads " + std::to_string(m.input_width()) + " columns, its input has " + std::to_string(w));
    vocab.assign(static_cast<size_t>(model_width(m, model_output(s, at), at)), -1);
}

void evaluate_model(const Step& s, std::vector<double>& x, const std::string& at) {
    x = model_row(s, x, at);
}

}  // namespace pg_predict::spec::step_ops

namespace pg_predict::spec {

using nlohmann::json;
using step_ops::invalid;
using step_ops::model_two_sided;
using step_ops::param;

Pipeline model_pipeline(const Step& s, const std::string& where) {
    const json& nested = param(s, "pipeline", where);
    if (!nested.is_object()) invalid(where, "model pipeline must be a JSON object");
    Pipeline m = from_json(nested.dump());
    if (!m.text_inputs.empty()) invalid(where, "a model's pipeline reads numbers only, not text inputs");
    if (m.task == Task::Transform) invalid(where, "a model's pipeline must end in an estimator");
    return m;
}

std::string model_output(const Step& s, const std::string& where) {
    return step_ops::param_choice(s, "output", {"predict", "decision_function", "label"}, "model output", where)
        .get<std::string>();
}

int32_t model_width(const Pipeline& m, const std::string& output, const std::string& where) {
    if (output == "predict") return m.output_width();
    if (m.task != Task::Classification) invalid(where, "model output \"" + output + "\" needs a classifier");
    if (output == "label") return static_cast<int32_t>(m.classes.size());
    if (m.estimator.op != Op::Linear) invalid(where, "model output \"decision_function\" needs a linear estimator");
    if (m.objective == "SVC" || m.objective == "NuSVC") invalid(where, "model output \"decision_function\" of an SVC");
    return model_two_sided(m) ? 1 : m.model.num_groups;
}

}  // namespace pg_predict::spec
