// scikit-learn's multi-output wrappers (python/pg_predict/multioutput.py writes them): one
// regressor per output, each imported as a pipeline of its own, then combined into one program
// whose groups are the outputs (spec::Pipeline::outputs):
//  - MultiOutputRegressor: member k predicts output k from the row. Tree ensembles are merged
//    into one ensemble, the trees of member k in group k (their base margin its base margin);
//    members that end in a linear map (linear models, nearest neighbours, SVR, MLP, PLS, GLMs:
//    featurizer steps + `linear` + identity or exp) become the parts of one concat, each part
//    the member's steps + `project` (+ `elementwise` exp), and the identity `linear` after it.
//  - RegressorChain: member j reads the row plus the outputs of members 0..j-1 (the chain's
//    order, `order_`) and predicts output order[j]. Each member is a concat [passthrough,
//    member's steps + project] that appends its prediction to the vector; the identity
//    `linear` at the end picks the outputs in the document's order. A tree ensemble cannot be
//    a step (it ends a program), so a chain of trees is refused.
// Every member computes in float64 as scikit-learn does; a mix of trees and other members in
// one MultiOutputRegressor is refused.
#include <string>
#include <vector>

#include "handlers.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::importers::sklearn {

namespace {

using spec::PostTransform;

// One member regressor over `width` columns, imported as a single-output regression.
spec::Pipeline import_member(const JsonReader& raw, int32_t width, const std::string& wrapper) {
    const JsonReader step = step_reader(raw);
    const std::string type = step.string("type");
    const Handler* h = find_handler(type);
    if (h == nullptr || h->estimator == nullptr)
        step.unsupported("is not a regressor pg_predict scores (as a member of " + wrapper +
                         "); supported: " + estimator_names());
    spec::Pipeline member;
    member.source_format = "sklearn";
    member.objective = type;
    member.task = spec::Task::Regression;
    member.model.num_features = width;
    member.model.comparison = spec::Comparison::LessEqual;
    h->estimator(step, width, member);
    if (member.model.num_groups != 1 || member.outputs != 1)
        step.unsupported("predicts several outputs; a member of " + wrapper + " predicts one");
    return member;
}

bool is_trees(const spec::Pipeline& m) {
    return m.estimator.op == spec::Op::None && m.steps.empty() && m.transform == PostTransform::Identity;
}

// The member's steps and its linear map as featurizer steps: what it predicts, one column.
std::vector<spec::Step> as_steps(const spec::Pipeline& m, const JsonReader& at, const std::string& wrapper) {
    const bool linear_tail = m.estimator.op == spec::Op::Linear &&
                             (m.transform == PostTransform::Identity || m.transform == PostTransform::Exp);
    if (!linear_tail)
        step_reader(at).unsupported("cannot be combined in " + wrapper + (is_trees(m) ? " (a tree ensemble ends a program: "
                                                                                        "it cannot feed a later member)"
                                                                                      : ""));
    std::vector<spec::Step> steps = m.steps;
    steps.push_back(make_step(spec::Op::Project, {{"matrix", m.estimator.params.at("coef")},
                                                  {"offset", m.estimator.params.at("intercept")}}));
    if (m.transform == PostTransform::Exp) steps.push_back(make_step(spec::Op::Elementwise, {{"function", "exp"}}));
    return steps;
}

std::vector<int32_t> all_columns(int32_t width) {
    std::vector<int32_t> c(static_cast<size_t>(width));
    for (int32_t i = 0; i < width; ++i) c[static_cast<size_t>(i)] = i;
    return c;
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

// The members of a wrapper, as many as the document's outputs.
JsonReader members(const JsonReader& step, const spec::Pipeline& p) {
    need_task(step, p, false);
    const JsonReader estimators = step.array("estimators");
    if (estimators.size() != static_cast<size_t>(p.outputs))
        estimators.invalid("has " + std::to_string(estimators.size()) + " members, the document's outputs is " +
                           std::to_string(p.outputs));
    return estimators;
}

}  // namespace

void multi_output_regressor(const JsonReader& step, int32_t width, spec::Pipeline& p) {
    const std::string wrapper = "MultiOutputRegressor";
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
    if (trees != 0)
        step.unsupported("mixes tree ensembles with other regressors; pg_predict combines members of one kind");
    spec::Step concat;
    concat.op = spec::Op::Concat;
    for (size_t k = 0; k < fitted.size(); ++k)
        concat.parts.push_back({all_columns(width), as_steps(fitted[k], estimators[k], wrapper)});
    p.steps.push_back(std::move(concat));
    std::vector<int32_t> pick(static_cast<size_t>(outputs));
    for (int32_t i = 0; i < outputs; ++i) pick[static_cast<size_t>(i)] = i;
    pick_outputs(p, outputs, pick);
}

void regressor_chain(const JsonReader& step, int32_t width, spec::Pipeline& p) {
    const std::string wrapper = "RegressorChain";
    const JsonReader estimators = members(step, p);
    const int32_t outputs = p.outputs;
    // order[j]: the output member j predicts; a permutation of 0..outputs-1.
    const JsonReader order_at = step.array("order");
    const std::vector<int32_t> order = order_at.integers(0, outputs - 1);
    if (order.size() != static_cast<size_t>(outputs))
        order_at.invalid("has " + std::to_string(order.size()) + " entries for " + std::to_string(outputs) + " outputs");
    std::vector<int32_t> position(static_cast<size_t>(outputs), -1);
    for (size_t j = 0; j < order.size(); ++j) {
        if (position[static_cast<size_t>(order[j])] >= 0) order_at[j].invalid("repeats output " + std::to_string(order[j]));
        position[static_cast<size_t>(order[j])] = static_cast<int32_t>(j);
    }
    int32_t current = width;
    for (size_t j = 0; j < estimators.size(); ++j) {
        const spec::Pipeline member = import_member(estimators[j], current, wrapper);
        spec::Step grow;
        grow.op = spec::Op::Concat;
        grow.parts.push_back({all_columns(current), {}});  // the row and the outputs so far
        grow.parts.push_back({all_columns(current), as_steps(member, estimators[j], wrapper)});
        p.steps.push_back(std::move(grow));
        ++current;
    }
    // Output i is the prediction of the member at position[i] of the chain.
    pick_outputs(p, current, position);
}

}  // namespace pg_predict::importers::sklearn
