// scikit-learn MLPClassifier / MLPRegressor (python/pg_predict/neural.py writes them): each
// hidden layer a "project" step (Wᵀ, b) and its activation (identity, tanh, relu, expit); the
// output layer the linear estimator with Logistic (binary: one output p, [1 - p, p]; predict
// p > 0.5, ties class 0), Softmax (multiclass) or Identity (regression). All float64.
#include <string>
#include <vector>

#include "handlers.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::importers::sklearn {

namespace {

void mlp(const JsonReader& step, int32_t width, spec::Pipeline& p, bool classifier) {
    need_task(step, p, classifier);
    const std::string activation = step.string("activation");
    const char* function = activation == "tanh"       ? "tanh"
                           : activation == "relu"     ? "relu"
                           : activation == "logistic" ? "expit"
                                                      : nullptr;
    if (function == nullptr && activation != "identity") refuse(step, "activation \"" + activation + "\"");
    const JsonReader coefs = step.need("coefs");
    const JsonReader intercepts = step.need("intercepts");
    if (!coefs.is_array() || coefs.empty()) coefs.invalid("must be a non-empty array of layers");
    if (!intercepts.is_array() || intercepts.size() != coefs.size())
        intercepts.invalid("must hold one array per layer of coefs");
    size_t in = static_cast<size_t>(width);
    for (size_t l = 0; l < coefs.size(); ++l) {
        const Matrix w = transpose(finite_matrix(coefs[l], in, SIZE_MAX));  // [out × in]
        const std::vector<double> b = intercepts[l].finite_numbers(w.size());
        if (l + 1 < coefs.size()) {
            p.steps.push_back(
                make_step(spec::Op::Project, {{"matrix", spec::matrix_to_json(w)}, {"offset", spec::numbers_to_json(b)}}));
            if (function != nullptr) p.steps.push_back(make_step(spec::Op::Elementwise, {{"function", function}}));
        } else {
            set_linear(p, w, b, static_cast<int32_t>(in));
        }
        in = w.size();
    }
    const JsonReader outv = step.need("out_activation");
    const std::string out = outv.string();
    const size_t outputs = in;
    if (!classifier) {
        if (out != "identity") outv.invalid("must be identity for a regressor");
        if (outputs != 1) refuse(step, "multi-output regression (" + std::to_string(outputs) + " outputs)");
        p.transform = spec::PostTransform::Identity;
    } else if (out == "logistic") {
        if (outputs != 1 || p.classes.size() != 2)
            refuse(step, "multilabel classification (" + std::to_string(outputs) + " logistic outputs)");
        p.transform = spec::PostTransform::Logistic;
    } else if (out == "softmax") {
        if (outputs != p.classes.size())
            coefs.invalid("ends in " + std::to_string(outputs) + " outputs for " + std::to_string(p.classes.size()) +
                          " classes");
        p.transform = spec::PostTransform::Softmax;
    } else {
        outv.invalid("must be logistic or softmax for a classifier, not \"" + out + "\"");
    }
}

}  // namespace

void mlp_classifier(const JsonReader& step, int32_t width, spec::Pipeline& p) { mlp(step, width, p, true); }
void mlp_regressor(const JsonReader& step, int32_t width, spec::Pipeline& p) { mlp(step, width, p, false); }

}  // namespace pg_predict::importers::sklearn
