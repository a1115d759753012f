// scikit-learn's multi-output wrappers (python/pg_predict/multioutput.py writes them): one
// estimator per output, each imported as a pipeline of its own, then combined into one program
// whose groups are the outputs (spec::Pipeline::outputs):
//  - MultiOutputRegressor: member k predicts output k from the row. Tree ensembles are merged
//    into one ensemble, the trees of member k in group k (their base margin its base margin);
//    members that end in a linear map (linear models, nearest neighbours, SVR, MLP, PLS, GLMs:
//    featurizer steps + `linear` + identity or exp) become the parts of one concat, each part
//    the member's steps + `project` (+ `elementwise` exp), and the identity `linear` after it.
//    A member that does not end in a linear map (a tree ensemble among other members) is an
//    op model step instead: its sub-document compiled on its own, a submodule whose output is
//    its prediction (a tree ensemble ends a program, so it cannot be a featurizer step).
//  - RegressorChain: member j reads the row plus the outputs of members 0..j-1 (the chain's
//    order, `order_`) and predicts output order[j]. Each member is a concat [passthrough,
//    member's steps + project, or its model step] that appends its prediction to the vector;
//    the identity `linear` at the end picks the outputs in the document's order.
//  - MultiOutputClassifier, ClassifierChain: the same shapes over binary classifiers with
//    numeric labels (multi-label classification). The spec is a classification of `outputs` > 1
//    whose classes are each output's two labels (c0, c1 of output k at 2k, 2k + 1) and whose
//    program gives one decision value per output: label c1 exactly where it is > 0
//    (PostgreSQL's side picks the label; NaN: NULL). A member's decision value d is what
//    scikit-learn's predict thresholds: the margin of a logistic model, row 1 - row 0 of
//    two-column scores ([-d, d] decision values, nearest-neighbour class weights). The chain
//    feeds the predicted labels to later members (scikit-learn 1.2's ClassifierChain): each
//    member appends c0 + (c1 - c0) [d > 0] + clip(d, 0, 0) (`threshold`, and a `clip` that is 0,
//    or NaN where d is: a missing input gives NaN, never c0), and the outputs are
//    (c1 - c0)(label - (c0 + c1) / 2). A member with predict_proba that is no linear model
//    (a tree ensemble) is a model step whose d is P(c1) - P(c0).
// Every member but the trees (float32 thresholds, as scikit-learn) computes in float64 as
// scikit-learn does.
#include <string>
#include <vector>

#include "handlers.hpp"
#include "pg_predict/common/error.hpp"
#include "pg_predict/importers/sklearn.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::importers::sklearn {

using nlohmann::json;

namespace {

using spec::PostTransform;

// The handler of a member's estimator; Unsupported unless pg_predict scores it as a `kind`
// ("regressor", "classifier") member of `wrapper`.
const Handler& member_handler(const JsonReader& step, const char* kind, const std::string& wrapper) {
    const Handler* h = find_handler(step.string("type"));
    if (h == nullptr || h->estimator == nullptr)
        step.unsupported(std::string("is not a ") + kind + " pg_predict scores (as a member of " + wrapper +
                         "); supported: " + estimator_names());
    return *h;
}

// A member's pipeline of `task` over `width` columns, before its estimator fills it.
spec::Pipeline member_pipeline(const JsonReader& step, spec::Task task, int32_t width) {
    spec::Pipeline member;
    member.source_format = "sklearn";
    member.objective = step.string("type");
    member.task = task;
    member.model.num_features = width;
    member.model.comparison = spec::Comparison::LessEqual;
    return member;
}

// One member regressor over `width` columns, imported as a single-output regression.
spec::Pipeline import_member(const JsonReader& raw, int32_t width, const std::string& wrapper) {
    const JsonReader step = step_reader(raw);
    const Handler& h = member_handler(step, "regressor", wrapper);
    spec::Pipeline member = member_pipeline(step, spec::Task::Regression, width);
    h.estimator(step, width, member);
    if (member.model.num_groups != 1 || member.outputs != 1)
        step.unsupported("predicts several outputs; a member of " + wrapper + " predicts one");
    return member;
}

bool is_trees(const spec::Pipeline& m) {
    return m.estimator.op == spec::Op::None && m.steps.empty() && m.transform == PostTransform::Identity;
}

// A member as an op model step over `width` numeric columns: its step as a document of its own
// (a regression, or a classification over `classes`), imported and compiled as a submodule
// whose output is its predict (a regressor's value, a classifier's predict_proba).
spec::Step model_member(const JsonReader& raw, int32_t width, const json& classes) {
    json doc = {{"format", "sklearn"}, {"version", 1}, {"task", classes.is_null() ? "regression" : "classification"},
                {"steps", json::array({raw.value()})}, {"inputs", json::array()}};
    for (int32_t c = 0; c < width; ++c) doc["inputs"].push_back({{"name", "x" + std::to_string(c)}, {"type", "numeric"}});
    if (!classes.is_null()) doc["classes"] = classes;
    spec::Pipeline m;
    try {
        m = import_sklearn(doc);
    } catch (const Error& e) {
        // The member's messages name paths inside its own document: say which member.
        fail(e.category(), raw.where() + ": " + e.what());
    }
    return make_step(spec::Op::Model, {{"pipeline", json::parse(spec::to_json(m))}, {"output", "predict"}});
}

// The member's steps and its linear map as featurizer steps, or (no linear map at its end: a
// tree ensemble) its model step: what it predicts, one column.
std::vector<spec::Step> as_steps(const spec::Pipeline& m, const JsonReader& raw, int32_t width) {
    const bool linear_tail = m.estimator.op == spec::Op::Linear &&
                             (m.transform == PostTransform::Identity || m.transform == PostTransform::Exp);
    if (!linear_tail) return {model_member(raw, width, nullptr)};
    std::vector<spec::Step> steps = m.steps;
    steps.push_back(make_step(spec::Op::Project, {{"matrix", m.estimator.params.at("coef")},
                                                  {"offset", m.estimator.params.at("intercept")}}));
    if (m.transform == PostTransform::Exp) steps.push_back(make_step(spec::Op::Elementwise, {{"function", "exp"}}));
    return steps;
}

// The identity `linear` estimator over the last `k` of `width` columns, output i reading column
// width - k + pick[i].
void pick_outputs(spec::Pipeline& p, int32_t width, const std::vector<int32_t>& pick) {
    const size_t k = pick.size();
    Matrix coef(k, std::vector<double>(static_cast<size_t>(width), 0.0));
    for (size_t i = 0; i < k; ++i) coef[i][static_cast<size_t>(width) - k + static_cast<size_t>(pick[i])] = 1.0;
    set_linear(p, coef, std::vector<double>(k, 0.0), width);
    p.transform = PostTransform::Identity;
}

// A chain's `order` (order[j]: the output member j predicts, a permutation of the outputs) as
// the position in the chain of each output.
std::vector<int32_t> chain_positions(const JsonReader& step, int32_t outputs) {
    const JsonReader order_at = step.array("order");
    const std::vector<int32_t> order = order_at.integers(0, outputs - 1);
    if (order.size() != static_cast<size_t>(outputs))
        order_at.invalid("has " + std::to_string(order.size()) + " entries for " + std::to_string(outputs) + " outputs");
    std::vector<int32_t> position(static_cast<size_t>(outputs), -1);
    for (size_t j = 0; j < order.size(); ++j) {
        if (position[static_cast<size_t>(order[j])] >= 0) order_at[j].invalid("repeats output " + std::to_string(order[j]));
        position[static_cast<size_t>(order[j])] = static_cast<int32_t>(j);
    }
    return position;
}

// The members of a wrapper, as many as the document's outputs.
JsonReader members(const JsonReader& step, const spec::Pipeline& p) {
    const JsonReader estimators = step.array("estimators");
    if (estimators.size() != static_cast<size_t>(p.outputs))
        estimators.invalid("has " + std::to_string(estimators.size()) + " members, the document's outputs is " +
                           std::to_string(p.outputs));
    return estimators;
}

// --- classifiers ------------------------------------------------------------------------------

// One binary member classifier over `width` columns, with its own `classes` (two numbers, as
// the document lists for its output): featurizer steps giving its decision value d (label
// classes[1] exactly where d > 0), and with `as_label` then the label itself.
std::vector<spec::Step> member_steps(const JsonReader& raw, int32_t width, const std::vector<double>& classes,
                                     const std::string& wrapper, bool as_label) {
    const JsonReader step = step_reader(raw);
    const Handler& h = member_handler(step, "classifier", wrapper);
    const std::vector<double> own = step.need("classes").numbers();
    if (own != classes) step.need("classes").invalid("differ from the document's classes of this output");
    spec::Pipeline m = member_pipeline(step, spec::Task::Classification, width);
    m.classes = classes;
    h.estimator(step, width, m);
    Matrix coef;
    std::vector<double> intercept;
    if (m.estimator.op == spec::Op::Linear) {
        coef = spec::param_matrix(m.estimator, "coef", "estimator");
        intercept = spec::param_vector(m.estimator, "intercept", "estimator");
    }
    // d: label c1 exactly when d > 0 (argmax of [1 - σ(d), σ(d)] or of two scores, ties to c0).
    std::vector<double> d;
    double d0 = 0.0;
    if (coef.size() == 1 && m.transform == PostTransform::Logistic) {
        d = coef[0];
        d0 = intercept[0];
    } else if (coef.size() == 2 && m.transform == PostTransform::Identity) {
        for (size_t j = 0; j < coef[0].size(); ++j) d.push_back(coef[1][j] - coef[0][j]);
        d0 = intercept[1] - intercept[0];
    } else if (!m.has_probabilities || m.output_width() != 2) {
        step.unsupported("cannot be a member of " + wrapper +
                         " (pg_predict combines linear classifiers, nearest neighbours and classifiers with "
                         "predict_proba there)");
    }
    std::vector<spec::Step> steps;
    if (d.empty()) {
        // A tree ensemble (or another model with predict_proba): d = P(c1) - P(c0) of its model step.
        steps.push_back(model_member(raw, width, step.need("classes").value()));
        steps.push_back(make_step(spec::Op::Project, {{"matrix", spec::matrix_to_json({{-1.0, 1.0}})},
                                                      {"offset", spec::numbers_to_json({0.0})}}));
    } else {
        steps = m.steps;
        steps.push_back(make_step(spec::Op::Project, {{"matrix", spec::matrix_to_json({d})}, {"offset", spec::numbers_to_json({d0})}}));
    }
    if (!as_label) return steps;
    spec::Step split;
    split.op = spec::Op::Concat;
    split.parts.push_back({{0}, {make_step(spec::Op::Threshold, {{"threshold", 0.0}})}});
    split.parts.push_back({{0}, {make_step(spec::Op::Clip, {{"min", 0.0}, {"max", 0.0}})}});
    steps.push_back(std::move(split));
    steps.push_back(make_step(spec::Op::Project, {{"matrix", spec::matrix_to_json({{classes[1] - classes[0], 1.0}})},
                                                  {"offset", spec::numbers_to_json({classes[0]})}}));
    return steps;
}

// The members of a classifier wrapper and each output's two labels (the document's classes,
// flattened into p.classes by the importer: two per output).
std::vector<std::vector<double>> output_classes(const JsonReader& step, const spec::Pipeline& p) {
    if (p.task != spec::Task::Classification) step.invalid("task is regression, but the model is a classifier");
    if (p.classes.size() != 2 * static_cast<size_t>(p.outputs))
        refuse(step, "an output with other than two classes (pg_predict combines binary members)");
    std::vector<std::vector<double>> out;
    for (size_t o = 0; o < static_cast<size_t>(p.outputs); ++o) out.push_back({p.classes[2 * o], p.classes[2 * o + 1]});
    return out;
}

void finish_classifier(spec::Pipeline& p) {
    p.has_probabilities = false;  // the outputs are decision values, one per output
}

}  // namespace

void multi_output_classifier(const JsonReader& step, int32_t width, spec::Pipeline& p) {
    const std::string wrapper = "MultiOutputClassifier";
    const std::vector<std::vector<double>> classes = output_classes(step, p);
    const JsonReader estimators = members(step, p);
    spec::Step concat;
    concat.op = spec::Op::Concat;
    for (size_t k = 0; k < classes.size(); ++k)
        concat.parts.push_back({all_columns(width), member_steps(estimators[k], width, classes[k], wrapper, false)});
    p.steps.push_back(std::move(concat));
    std::vector<int32_t> pick(classes.size());
    for (size_t i = 0; i < pick.size(); ++i) pick[i] = static_cast<int32_t>(i);
    pick_outputs(p, p.outputs, pick);
    finish_classifier(p);
}

void classifier_chain(const JsonReader& step, int32_t width, spec::Pipeline& p) {
    const std::string wrapper = "ClassifierChain";
    const std::vector<std::vector<double>> classes = output_classes(step, p);
    const JsonReader estimators = members(step, p);
    const std::vector<int32_t> position = chain_positions(step, p.outputs);
    int32_t current = width;
    for (size_t j = 0; j < estimators.size(); ++j) {
        // Member j predicts output order[j], whose classes are the document's of that output.
        const int32_t output = [&] {
            for (size_t i = 0; i < position.size(); ++i)
                if (position[i] == static_cast<int32_t>(j)) return static_cast<int32_t>(i);
            return 0;
        }();
        spec::Step grow;
        grow.op = spec::Op::Concat;
        grow.parts.push_back({all_columns(current), {}});  // the row and the labels so far
        grow.parts.push_back({all_columns(current), member_steps(estimators[j], current,
                                                                 classes[static_cast<size_t>(output)], wrapper, true)});
        p.steps.push_back(std::move(grow));
        ++current;
    }
    // Output i from the label at its chain position: (c1 - c0)(label - (c0 + c1) / 2) > 0
    // exactly when the label is c1.
    const size_t k = position.size();
    Matrix coef(k, std::vector<double>(static_cast<size_t>(current), 0.0));
    std::vector<double> intercept(k);
    for (size_t i = 0; i < k; ++i) {
        const double c0 = classes[i][0], c1 = classes[i][1];
        coef[i][static_cast<size_t>(current) - k + static_cast<size_t>(position[i])] = c1 - c0;
        intercept[i] = -(c1 - c0) * (c0 + c1) / 2.0;
    }
    set_linear(p, coef, intercept, current);
    p.transform = PostTransform::Identity;
    finish_classifier(p);
}

void multi_output_regressor(const JsonReader& step, int32_t width, spec::Pipeline& p) {
    const std::string wrapper = "MultiOutputRegressor";
    need_task(step, p, false);
    const JsonReader estimators = members(step, p);
    std::vector<spec::Pipeline> fitted;
    size_t trees = 0;
    for (size_t k = 0; k < estimators.size(); ++k) {
        fitted.push_back(import_member(estimators[k], width, wrapper));
        trees += is_trees(fitted.back()) ? 1 : 0;
    }
    const int32_t outputs = p.outputs;
    if (trees == fitted.size()) {
        p.model.num_features = width;
        p.model.num_groups = outputs;
        p.model.base_margin.clear();
        for (int32_t k = 0; k < outputs; ++k) {
            spec::Pipeline& m = fitted[static_cast<size_t>(k)];
            p.model.base_margin.push_back(m.model.base_margin.empty() ? 0.0f : m.model.base_margin[0]);
            for (spec::Tree& t : m.model.trees) {
                t.group = k;
                p.model.trees.push_back(std::move(t));
            }
        }
        p.transform = PostTransform::Identity;
        return;
    }
    spec::Step concat;
    concat.op = spec::Op::Concat;
    for (size_t k = 0; k < fitted.size(); ++k)
        concat.parts.push_back({all_columns(width), as_steps(fitted[k], estimators[k], width)});
    p.steps.push_back(std::move(concat));
    std::vector<int32_t> pick(static_cast<size_t>(outputs));
    for (int32_t i = 0; i < outputs; ++i) pick[static_cast<size_t>(i)] = i;
    pick_outputs(p, outputs, pick);
}

void regressor_chain(const JsonReader& step, int32_t width, spec::Pipeline& p) {
    const std::string wrapper = "RegressorChain";
    need_task(step, p, false);
    const JsonReader estimators = members(step, p);
    const std::vector<int32_t> position = chain_positions(step, p.outputs);
    int32_t current = width;
    for (size_t j = 0; j < estimators.size(); ++j) {
        const spec::Pipeline member = import_member(estimators[j], current, wrapper);
        spec::Step grow;
        grow.op = spec::Op::Concat;
        grow.parts.push_back({all_columns(current), {}});  // the row and the outputs so far
        grow.parts.push_back({all_columns(current), as_steps(member, estimators[j], current)});
        p.steps.push_back(std::move(grow));
        ++current;
    }
    // Output i is the prediction of the member at position[i] of the chain.
    pick_outputs(p, current, position);
}

}  // namespace pg_predict::importers::sklearn
