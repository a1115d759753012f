// The results a model has besides predict / predict_proba: scikit-learn's decision_function
// (the raw margin, before the link) and score_samples (IsolationForest), and which estimators
// have them. The program computing one is the model's own, compiled with another tail.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "pg_predict/common/error.hpp"
#include "program_parts.hpp"

namespace pg_predict::compiler {

namespace {

// scikit-learn estimators whose decision_function is the margin pg_predict computes (times
// decision_scale): linear classifiers, gradient boosting, and IsolationForest (see below).
constexpr const char* kDecisionFunction[] = {
    "LogisticRegression", "SGDClassifier", "LinearSVC", "Perceptron", "RidgeClassifier",
    "GradientBoostingClassifier", "HistGradientBoostingClassifier", "IsolationForest",
    "SVC", "NuSVC",  // from the pairwise values before the vote: svc_decision.cpp
};

// The estimator's class: a gradient boosting objective also names its loss
// ("GradientBoostingClassifier:log_loss").
std::string estimator_class(const spec::Pipeline& p) { return p.objective.substr(0, p.objective.find(':')); }

bool is_isolation_forest(const spec::Pipeline& p) {
    return p.source_format == "sklearn" && estimator_class(p) == "IsolationForest";
}

// A binary classifier without probabilities (LinearSVC, Perceptron, RidgeClassifier, SGD with a
// hinge loss) has two margin columns [-d, d] so that predict is their argmax: d is the second.
bool two_sided_decisions(const spec::Pipeline& p) {
    return p.task == spec::Task::Classification && p.transform == spec::PostTransform::Identity &&
           !p.has_probabilities && p.classes.size() == 2 && p.model.num_groups == 2;
}

bool has_decision_function(const spec::Pipeline& p) {
    if (p.source_format != "sklearn") return false;
    std::string cls = estimator_class(p);
    if (cls == "StackingClassifier") {
        // Its decision_function is its final estimator's, over the members' columns (the
        // objective "StackingClassifier:<final estimator>"); not an SVC's (its pairwise
        // values are no margin of this program).
        const std::string final_objective = p.objective.substr(std::min(p.objective.size(), cls.size() + 1));
        cls = final_objective.substr(0, final_objective.find(':'));
        if (cls == "SVC" || cls == "NuSVC" || cls == "IsolationForest") return false;
    }
    for (const char* name : kDecisionFunction)
        if (cls == name) return true;
    return false;
}

[[noreturn]] void refuse(const spec::Pipeline& p, Output output, const std::string& why) {
    fail(ErrorCategory::Unsupported, std::string(output_name(output)) + " is not available for " +
                                         (p.source_format == "sklearn" ? "scikit-learn's " : p.source_format + " ") +
                                         estimator_class(p) + ": " + why);
}

// A std::to_string of a double loses digits; TorchScript reads this literal back exactly.
std::string literal(double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    std::string s = buf;
    if (s.find_first_of(".en") == std::string::npos) s += ".0";
    return s;
}

}  // namespace

bool is_svc(const spec::Pipeline& p) {
    return p.source_format == "sklearn" && (estimator_class(p) == "SVC" || estimator_class(p) == "NuSVC");
}

const char* output_name(Output output) {
    switch (output) {
        case Output::Predict: return "predict";
        case Output::DecisionFunction: return "decision_function";
        case Output::ScoreSamples: return "score_samples";
        case Output::Contributions: return "contributions";
    }
    return "unknown";
}

void check_output(const spec::Pipeline& p, Output output) {
    if (output == Output::Predict) return;
    if (output == Output::Contributions) return check_contributions(p);
    if (p.task == spec::Task::Transform)
        refuse(p, output, "the pipeline ends in a transformer; use transform()");
    if (is_isolation_forest(p) && p.score_offset == 0.0)
        refuse(p, output,
               "the model was registered before pg_predict 0.4.0 kept the forest's offset_; register it again "
               "(create_model with options {\"replace\": true})");
    if (output == Output::ScoreSamples) {
        if (!is_isolation_forest(p))
            refuse(p, output, "pg_predict computes score_samples for IsolationForest only");
        return;
    }
    if (!has_decision_function(p))
        refuse(p, output, "it has no decision_function in scikit-learn (or pg_predict does not compute it)");
    if (p.task != spec::Task::Classification || p.classes.size() < 2)
        refuse(p, output, "the model was fitted on one class");
    if (is_svc(p) && p.classes.size() > 2 && p.decision_shape.empty())
        refuse(p, output,
               "its document does not say its decision_function_shape (exported before pg_predict 0.4.0); "
               "export it and register it again");
}

int output_width(const spec::Pipeline& p, Output output) {
    if (output == Output::Predict) return spec::transformed_width(p);
    if (output == Output::Contributions) return contributions_width(p);
    if (is_isolation_forest(p) || two_sided_decisions(p)) return 1;
    if (is_svc(p)) {
        const int k = static_cast<int>(p.classes.size());
        return k == 2 ? 1 : p.decision_shape == "ovo" ? k * (k - 1) / 2 : k;
    }
    return p.model.num_groups;
}

bool adds_base_margin(const spec::Pipeline& p, Output output) {
    // An isolation forest's base margin is its threshold in margin space, not part of the score.
    return output == Output::Predict || !is_isolation_forest(p);
}

std::string output_source(const spec::Pipeline& p, Output output) {
    if (output == Output::Predict) return link_source(p);
    if (is_isolation_forest(p)) {
        // m = Σh / (n_trees · c(max_samples)); score_samples = -2^(-m), in float64 as sklearn.
        // m is 0 only when c(max_samples) = 0 (max_samples = 1: the importer's leaves are 0),
        // where scikit-learn takes the ratio as 1: every score is -0.5.
        std::string s = "    m = torch.where(m == 0.0, torch.ones_like(m), m)\n"
                        "    s = -torch.exp2(-m.double())\n";
        if (output == Output::DecisionFunction) s += "    s = s - " + literal(p.score_offset) + "\n";
        return s + "    r = s.float()\n";
    }
    const std::string m = two_sided_decisions(p) ? "m.narrow(1, 1, 1)" : "m";
    if (p.decision_scale != 1.0) return "    r = " + m + " * " + literal(p.decision_scale) + "\n";
    return "    r = " + m + "\n";
}

}  // namespace pg_predict::compiler
