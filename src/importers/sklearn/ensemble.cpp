// scikit-learn's meta-estimators over whole models (python/pg_predict/ensemble.py writes them):
// VotingClassifier / VotingRegressor, BaggingClassifier / BaggingRegressor and
// StackingClassifier / StackingRegressor. Each member is a sub-document (a model or a pipeline
// ending in one, fitted on the columns it reads) imported on its own into a nested pipeline and
// run by an op model step; the members' columns are then combined:
//  - voting and bagging: a linear estimator (a weighted sum of the members' probabilities,
//    one-hot predictions or values) with the identity link;
//  - stacking: the final estimator, any supported model, over the members' columns (and the
//    input itself with passthrough).
// scikit-learn fits the members of a classifier ensemble on the labels encoded as 0..k-1, so a
// member's classes are indices into the ensemble's classes (a bagging member trained on a
// bootstrap sample may lack some of them).
#include <string>
#include <vector>

#include "handlers.hpp"
#include "pg_predict/common/error.hpp"
#include "pg_predict/importers/sklearn.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::importers::sklearn {

using nlohmann::json;

namespace {

// A member: the nested pipeline its sub-document describes, over `width` numeric columns.
struct Member {
    spec::Pipeline p;
    std::vector<size_t> columns_of;  // classifier: the ensemble column of each member class
};

Member import_member(const JsonReader& member, size_t width, const spec::Pipeline& outer) {
    member.expect_object();
    json doc = {{"format", "sklearn"}, {"version", 1}, {"task", member.string("task")},
                {"steps", member.array("steps").value()}, {"inputs", json::array()}};
    for (size_t c = 0; c < width; ++c) doc["inputs"].push_back({{"name", "x" + std::to_string(c)}, {"type", "numeric"}});
    const bool classifier = outer.task == spec::Task::Classification;
    if (member.string("task") != (classifier ? "classification" : "regression"))
        member.need("task").invalid(std::string("must be \"") + (classifier ? "classification" : "regression") +
                                    "\" as the ensemble's");
    if (classifier) doc["classes"] = member.array("classes").value();
    Member m;
    try {
        m.p = import_sklearn(doc);
    } catch (const Error& e) {
        // The member's messages name paths inside its sub-document: say which member.
        fail(e.category(), member.where() + ": " + e.what());
    }
    if (classifier) {
        for (int32_t c : member.array("classes").integers(0, static_cast<int64_t>(outer.classes.size()) - 1)) m.columns_of.push_back(static_cast<size_t>(c));
    }
    return m;
}

spec::Step model_step(const spec::Pipeline& member, const char* output) {
    return make_step(spec::Op::Model, {{"pipeline", json::parse(spec::to_json(member))}, {"output", output}});
}

spec::Step::Part part_over(const std::vector<int32_t>& columns, spec::Step step) {
    spec::Step::Part part;
    part.columns = columns;
    part.steps.push_back(std::move(step));
    return part;
}

// The estimator's `weights` (null: 1 each), one per member.
std::vector<double> weights_of(const JsonReader& step, size_t members) {
    const auto w = step.optional("weights");
    if (!w || w->value().is_null()) return std::vector<double>(members, 1.0);
    return w->finite_numbers(members);
}

// Appends the members' columns as one concat and sets a linear estimator that sums
// coef[j][i] × (member j's column i) into each output, identity link.
void combine(spec::Pipeline& p, spec::Step concat, const std::vector<Matrix>& member_coef, size_t outputs) {
    Matrix coef(outputs);
    for (const Matrix& m : member_coef)
        for (size_t o = 0; o < outputs; ++o) coef[o].insert(coef[o].end(), m[o].begin(), m[o].end());
    const int32_t width = static_cast<int32_t>(coef[0].size());
    p.steps.push_back(std::move(concat));
    set_linear(p, coef, std::vector<double>(outputs, 0.0), width);
    p.transform = spec::PostTransform::Identity;
}

// A classifier member's r columns → the ensemble's k, each times `weight`.
Matrix spread(const Member& m, size_t k, double weight) {
    Matrix coef(k, std::vector<double>(m.columns_of.size(), 0.0));
    for (size_t i = 0; i < m.columns_of.size(); ++i) coef[m.columns_of[i]][i] = weight;
    return coef;
}

}  // namespace

// VotingClassifier: voting "soft" averages predict_proba with the weights (normalized);
// "hard" sums the weights of the members predicting each class, and predict is the first class
// with the largest sum (np.argmax of np.bincount); there is no predict_proba then.
void voting_classifier(const JsonReader& step, int32_t width, spec::Pipeline& p) {
    const size_t k = num_classes(step, p);
    const std::string voting = step.string("voting");
    if (voting != "soft" && voting != "hard") refuse(step.need("voting"), "voting \"" + voting + "\"");
    const bool soft = voting == "soft";
    const JsonReader members = step.array("estimators");
    if (members.empty()) members.invalid("must hold at least one estimator");
    const std::vector<double> w = weights_of(step, members.size());
    double total = 0.0;
    for (double x : w) total += x;
    if (soft && total == 0.0) step.need("weights").invalid("must not sum to 0 (the average is undefined)");
    spec::Step concat = make_step(spec::Op::Concat, json::object());
    std::vector<Matrix> coef;
    for (size_t j = 0; j < members.size(); ++j) {
        const Member m = import_member(members[j], static_cast<size_t>(width), p);
        if (soft && !m.p.has_probabilities)
            refuse(members[j], "voting=\"soft\" over " + m.p.objective + ", which has no predict_proba,");
        concat.parts.push_back(part_over(all_columns(width), model_step(m.p, soft ? "predict" : "label")));
        coef.push_back(spread(m, k, soft ? w[j] / total : w[j]));
    }
    combine(p, std::move(concat), coef, k);
    p.has_probabilities = soft;
}

// VotingRegressor: np.average of the members' predictions with the weights.
void voting_regressor(const JsonReader& step, int32_t width, spec::Pipeline& p) {
    need_task(step, p, false);
    const JsonReader members = step.array("estimators");
    if (members.empty()) members.invalid("must hold at least one estimator");
    const std::vector<double> w = weights_of(step, members.size());
    double total = 0.0;
    for (double x : w) total += x;
    if (total == 0.0) step.need("weights").invalid("must not sum to 0 (the average is undefined)");
    spec::Step concat = make_step(spec::Op::Concat, json::object());
    std::vector<Matrix> coef;
    for (size_t j = 0; j < members.size(); ++j) {
        const Member m = import_member(members[j], static_cast<size_t>(width), p);
        concat.parts.push_back(part_over(all_columns(width), model_step(m.p, "predict")));
        coef.push_back({{w[j] / total}});
    }
    combine(p, std::move(concat), coef, 1);
}

namespace {

// Bagging*: member j reads the columns features[j] (estimators_features_).
void bagging(const JsonReader& step, int32_t width, spec::Pipeline& p, bool classifier) {
    const size_t k = classifier ? num_classes(step, p) : 1;
    if (!classifier) need_task(step, p, false);
    const JsonReader members = step.array("estimators");
    const JsonReader features = step.array("features");
    if (members.empty()) members.invalid("must hold at least one estimator");
    if (features.size() != members.size())
        features.invalid("has " + std::to_string(features.size()) + " column lists for " +
                         std::to_string(members.size()) + " estimators");
    // With predict_proba the members' probabilities are averaged, else their votes counted.
    const bool proba = classifier && step.need("proba").boolean();
    const double share = 1.0 / static_cast<double>(members.size());
    spec::Step concat = make_step(spec::Op::Concat, json::object());
    std::vector<Matrix> coef;
    for (size_t j = 0; j < members.size(); ++j) {
        const std::vector<int32_t> cols = features[j].integers(0, width - 1);
        if (cols.empty()) features[j].invalid("must list at least one column");
        const Member m = import_member(members[j], cols.size(), p);
        if (proba && !m.p.has_probabilities)
            members[j].invalid("has no predict_proba, but the document says the estimators have");
        concat.parts.push_back(part_over(cols, model_step(m.p, !classifier || proba ? "predict" : "label")));
        coef.push_back(classifier ? spread(m, k, share) : Matrix{{share}});
    }
    combine(p, std::move(concat), coef, k);
}

}  // namespace

void bagging_classifier(const JsonReader& step, int32_t width, spec::Pipeline& p) { bagging(step, width, p, true); }
void bagging_regressor(const JsonReader& step, int32_t width, spec::Pipeline& p) { bagging(step, width, p, false); }

namespace {

// Stacking*: the members' columns by their stack method (stack_method_), the input itself
// after them with passthrough, then the final estimator over them all.
void stacking(const JsonReader& step, int32_t width, spec::Pipeline& p, bool classifier) {
    if (classifier) num_classes(step, p);
    else need_task(step, p, false);
    const JsonReader members = step.array("estimators");
    const JsonReader methods = step.array("stack_methods");
    if (members.empty()) members.invalid("must hold at least one estimator");
    if (methods.size() != members.size())
        methods.invalid("has " + std::to_string(methods.size()) + " methods for " + std::to_string(members.size()) +
                        " estimators");
    const size_t k = p.classes.size();
    spec::Step concat = make_step(spec::Op::Concat, json::object());
    int32_t meta = 0;
    for (size_t j = 0; j < members.size(); ++j) {
        const Member m = import_member(members[j], static_cast<size_t>(width), p);
        const std::string method = methods[j].string();
        spec::Step::Part part;
        part.columns = all_columns(width);
        if (method == "predict_proba") {
            if (!classifier || !m.p.has_probabilities)
                refuse(methods[j], "stack_method \"predict_proba\" over " + m.p.objective + ", which has no predict_proba,");
            part.steps.push_back(model_step(m.p, "predict"));
            // The ensemble's columns; a binary ensemble keeps P(classes[1]) only.
            Matrix keep = spread(m, k, 1.0);
            if (k == 2) keep.erase(keep.begin());
            part.steps.push_back(make_step(spec::Op::Project, {{"matrix", spec::matrix_to_json(keep)},
                                                               {"offset", spec::numbers_to_json(std::vector<double>(keep.size(), 0.0))}}));
            meta += static_cast<int32_t>(keep.size());
        } else if (method == "decision_function") {
            if (!classifier || m.p.estimator.op != spec::Op::Linear || m.p.objective == "SVC" || m.p.objective == "NuSVC")
                refuse(methods[j], "stack_method \"decision_function\" over " + m.p.objective +
                                       " (only linear classifiers' decision_function is)");
            if (m.columns_of.size() != k) refuse(members[j], "a member fitted on fewer classes than the ensemble");
            spec::Step model = model_step(m.p, "decision_function");
            std::vector<int32_t> vocab(static_cast<size_t>(width), -1);
            meta += spec::check_step(model, vocab, members[j].where());
            part.steps.push_back(std::move(model));
        } else if (method == "predict") {
            if (classifier) {
                // The predicted class's index: one-hot · the member's classes.
                part.steps.push_back(model_step(m.p, "label"));
                std::vector<double> index(m.columns_of.begin(), m.columns_of.end());
                part.steps.push_back(make_step(spec::Op::Project, {{"matrix", spec::matrix_to_json({index})}, {"offset", spec::numbers_to_json({0.0})}}));
            } else {
                part.steps.push_back(model_step(m.p, "predict"));
            }
            meta += 1;
        } else {
            refuse(methods[j], "stack_method \"" + method + "\"");
        }
        concat.parts.push_back(std::move(part));
    }
    if (step.need("passthrough").boolean()) {
        spec::Step::Part raw;
        raw.columns = all_columns(width);
        concat.parts.push_back(std::move(raw));
        meta += width;
    }
    p.steps.push_back(std::move(concat));
    const JsonReader final_step = step_reader(step.need("final_estimator"));
    const std::string type = final_step.string("type");
    const Handler* h = find_handler(type);
    if (h == nullptr || h->estimator == nullptr)
        final_step.unsupported("final_estimator \"" + type + "\" is not supported; supported: " + estimator_names());
    p.model.num_features = meta;
    h->estimator(final_step, meta, p);
    // "StackingClassifier:LogisticRegression": the final estimator after the colon says whether
    // there is a decision_function (scikit-learn's is the final estimator's).
    const std::string stacking = step.string("type");
    p.objective = stacking + ":" + (p.objective == stacking ? type : p.objective);
}

}  // namespace

void stacking_classifier(const JsonReader& step, int32_t width, spec::Pipeline& p) { stacking(step, width, p, true); }
void stacking_regressor(const JsonReader& step, int32_t width, spec::Pipeline& p) { stacking(step, width, p, false); }

}  // namespace pg_predict::importers::sklearn
