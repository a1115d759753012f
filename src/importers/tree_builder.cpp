// Shared tree-ensemble helpers (include/pg_predict/importers/tree_builder.hpp).
#include "pg_predict/importers/tree_builder.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "pg_predict/common/error.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::importers {

using spec::PostTransform;
using spec::Task;

// --- objectives -------------------------------------------------------------------------------

// Checked against xgboost 1.7.4 (Booster.predict(output_margin=True) on eta=0 models):
// reg:logistic / binary:logistic: margin = -logf(1/p - 1); count:poisson: logf(p);
// binary:logitraw, squared error and multi:*: the base score as is.
// binary:logitraw outputs raw margins in XGBoost; as a classifier here its probabilities
// are sigmoid(margin), the same numbers XGBClassifier.predict_proba gives for it.
const std::vector<Objective>& xgboost_objectives() {
    static const std::vector<Objective> table = {
        {"reg:squarederror", Task::Regression, PostTransform::Identity, Link::Identity, false},
        {"reg:linear", Task::Regression, PostTransform::Identity, Link::Identity, false},
        {"reg:logistic", Task::Regression, PostTransform::Logistic, Link::Logit, false},
        {"binary:logistic", Task::Classification, PostTransform::Logistic, Link::Logit, false},
        {"binary:logitraw", Task::Classification, PostTransform::Logistic, Link::Identity, false},
        {"count:poisson", Task::Regression, PostTransform::Exp, Link::Log, false},
        {"multi:softprob", Task::Classification, PostTransform::Softmax, Link::Identity, true},
        {"multi:softmax", Task::Classification, PostTransform::Softmax, Link::Identity, true},
        // Rankers predict the margin; reg:tweedie and reg:gamma exp of it (log link of the base
        // score); the robust losses are the margin. reg:quantileerror (2.0+) with one quantile.
        {"rank:pairwise", Task::Regression, PostTransform::Identity, Link::Identity, false},
        {"rank:ndcg", Task::Regression, PostTransform::Identity, Link::Identity, false},
        {"rank:map", Task::Regression, PostTransform::Identity, Link::Identity, false},
        {"reg:tweedie", Task::Regression, PostTransform::Exp, Link::Log, false},
        {"reg:gamma", Task::Regression, PostTransform::Exp, Link::Log, false},
        {"reg:absoluteerror", Task::Regression, PostTransform::Identity, Link::Identity, false},
        {"reg:pseudohubererror", Task::Regression, PostTransform::Identity, Link::Identity, false},
        {"reg:quantileerror", Task::Regression, PostTransform::Identity, Link::Identity, false},
    };
    return table;
}

// GradientBoosting*: raw = init + learning_rate · Σ tree values; a two-class classifier's
// probability is expit(raw) (log_loss, deviance) or expit(2 · raw) (exponential, two classes
// only); regressors predict raw whatever their loss.
const std::vector<Objective>& sklearn_gradient_boosting_losses(bool classifier) {
    static const std::vector<Objective> classifiers = {
        {"log_loss", Task::Classification, PostTransform::Logistic, Link::Identity, true},
        {"deviance", Task::Classification, PostTransform::Logistic, Link::Identity, true},
        {"exponential", Task::Classification, PostTransform::Logistic, Link::Identity, false},
    };
    static const std::vector<Objective> regressors = {
        {"squared_error", Task::Regression, PostTransform::Identity, Link::Identity, false},
        {"absolute_error", Task::Regression, PostTransform::Identity, Link::Identity, false},
        {"huber", Task::Regression, PostTransform::Identity, Link::Identity, false},
        {"quantile", Task::Regression, PostTransform::Identity, Link::Identity, false},
        {"ls", Task::Regression, PostTransform::Identity, Link::Identity, false},   // < 1.0 names
        {"lad", Task::Regression, PostTransform::Identity, Link::Identity, false},
    };
    return classifier ? classifiers : regressors;
}

// HistGradientBoosting*: raw = baseline + Σ leaf values; poisson predicts exp(raw). (Both keep
// their init / baseline in margin space: Link::Identity.)
const std::vector<Objective>& sklearn_hist_gradient_boosting_losses(bool classifier) {
    static const std::vector<Objective> classifiers = {
        {"log_loss", Task::Classification, PostTransform::Logistic, Link::Identity, true},
    };
    static const std::vector<Objective> regressors = {
        {"squared_error", Task::Regression, PostTransform::Identity, Link::Identity, false},
        {"absolute_error", Task::Regression, PostTransform::Identity, Link::Identity, false},
        {"quantile", Task::Regression, PostTransform::Identity, Link::Identity, false},
        {"poisson", Task::Regression, PostTransform::Exp, Link::Identity, false},
    };
    return classifier ? classifiers : regressors;
}

std::string objective_names(const std::vector<Objective>& table) {
    std::string names;
    for (const Objective& o : table) names += (names.empty() ? "" : ", ") + std::string(o.name);
    return names;
}

const Objective& find_objective(const std::vector<Objective>& table, const std::string& name,
                                const std::string& what) {
    for (const Objective& o : table)
        if (name == o.name) return o;
    fail(ErrorCategory::Unsupported,
         what + " \"" + name + "\" is not supported; supported: " + objective_names(table));
}

float base_score_to_margin(float p, Link link, const std::string& where) {
    switch (link) {
        case Link::Identity:
            return p;
        case Link::Logit:
            // The same float32 expression as XGBoost's LogisticRegression::ProbToMargin, so
            // the margin agrees to the last bit (numpy's float32 log does not, glibc's logf does).
            if (!(p > 0.0f && p < 1.0f))
                fail(ErrorCategory::InvalidModel, where + ": must lie in (0, 1) for a logistic objective");
            return -std::log(1.0f / p - 1.0f);
        case Link::Log:
            if (!(p > 0.0f)) fail(ErrorCategory::InvalidModel, where + ": must be positive for a log link");
            return std::log(p);
    }
    return p;
}

// --- thresholds -------------------------------------------------------------------------------

float round_down_to_float(double t) {
    float f = static_cast<float>(t);
    if (static_cast<double>(f) > t) f = std::nextafter(f, -HUGE_VALF);
    return f;
}

float round_up_to_float(double t) {
    float f = static_cast<float>(t);
    if (static_cast<double>(f) < t) f = std::nextafter(f, HUGE_VALF);
    return f;
}

float float_threshold(double t, spec::Comparison comparison) {
    switch (comparison) {
        case spec::Comparison::LessEqual: return round_down_to_float(t);
        case spec::Comparison::Less: return round_up_to_float(t);
    }
    return static_cast<float>(t);
}

float float_below(double t) {
    float f = static_cast<float>(t);
    if (static_cast<double>(f) >= t) f = std::nextafter(f, -HUGE_VALF);
    return f;
}

// --- tree structure ---------------------------------------------------------------------------

namespace {

[[noreturn]] void malformed(const std::string& where, const std::string& what) {
    fail(ErrorCategory::InvalidModel, where + ": " + what);
}

}  // namespace

std::vector<uint8_t> check_tree_links(const std::vector<int32_t>& left, const std::vector<int32_t>& right,
                                      UnreachableNodes unreachable, const std::string& where) {
    const size_t n = left.size();
    if (n == 0) malformed(where, "has no nodes: a tree has at least a root");
    if (right.size() != n)
        malformed(where, "has " + std::to_string(right.size()) + " right children for " + std::to_string(n) +
                             " left children");
    // An explicit stack, not recursion: a hostile tree may be a chain of millions of nodes.
    std::vector<uint8_t> reached(n, 0);
    std::vector<int32_t> stack{0};
    reached[0] = 1;
    size_t count = 1;
    while (!stack.empty()) {
        const int32_t i = stack.back();
        stack.pop_back();
        if (left[i] == -1 && right[i] == -1) continue;
        const std::string node = "node " + std::to_string(i);
        if (left[i] == -1 || right[i] == -1) malformed(where, node + " has exactly one child");
        for (int32_t c : {left[i], right[i]}) {
            if (c < 0 || static_cast<size_t>(c) >= n)
                malformed(where, node + " has child " + std::to_string(c) + " outside [0, " +
                                     std::to_string(n) + ")");
            if (reached[c])
                malformed(where, node + " reaches node " + std::to_string(c) +
                                     " a second time (shared node or cycle)");
            reached[c] = 1;
            ++count;
            stack.push_back(c);
        }
    }
    if (unreachable == UnreachableNodes::Refuse && count != n)
        malformed(where, std::to_string(n - count) + " node(s) are not reachable from the root");
    return reached;
}

spec::Tree build_tree(const NodeArrays& nodes, int32_t group, int32_t num_features,
                      UnreachableNodes unreachable, const std::string& where) {
    const size_t n = nodes.left.size();
    auto same = [&](size_t size, const char* what) {
        if (size != n)
            malformed(where, "has " + std::to_string(size) + " " + what + " for " + std::to_string(n) + " nodes");
    };
    same(nodes.feature.size(), "split features");
    same(nodes.threshold.size(), "thresholds");
    same(nodes.value.size(), "values");
    if (!nodes.default_left.empty()) same(nodes.default_left.size(), "default directions");
    if (!nodes.cover.empty()) same(nodes.cover.size(), "covers");
    const std::vector<uint8_t> reached = check_tree_links(nodes.left, nodes.right, unreachable, where);

    std::vector<int32_t> renumbered(n, -1);
    int32_t kept = 0;
    for (size_t i = 0; i < n; ++i)
        if (reached[i]) renumbered[i] = kept++;

    spec::Tree tree;
    tree.group = group;
    tree.left.reserve(kept);
    tree.right.reserve(kept);
    tree.feature.reserve(kept);
    tree.threshold.reserve(kept);
    tree.default_left.reserve(kept);
    tree.value.reserve(kept);
    for (size_t i = 0; i < n; ++i) {
        if (!reached[i]) continue;
        const bool leaf = nodes.left[i] == -1;
        if (!leaf) {
            const std::string node = "node " + std::to_string(i);
            if (nodes.feature[i] < 0 || nodes.feature[i] >= num_features)
                malformed(where, node + " splits on feature " + std::to_string(nodes.feature[i]) +
                                     " but the model reads " + std::to_string(num_features) + " features");
            if (std::isnan(nodes.threshold[i])) malformed(where, node + " has a NaN threshold");
        }
        tree.left.push_back(leaf ? -1 : renumbered[nodes.left[i]]);
        tree.right.push_back(leaf ? -1 : renumbered[nodes.right[i]]);
        tree.feature.push_back(leaf ? 0 : nodes.feature[i]);
        tree.threshold.push_back(leaf ? 0.0f : nodes.threshold[i]);
        tree.default_left.push_back(leaf || nodes.default_left.empty() ? 0 : nodes.default_left[i]);
        tree.value.push_back(leaf ? nodes.value[i] : 0.0f);
        if (!nodes.cover.empty()) {
            if (!std::isfinite(nodes.cover[i]) || nodes.cover[i] < 0.0)
                malformed(where, "node " + std::to_string(i) + " has a cover that is negative or not finite");
            tree.cover.push_back(nodes.cover[i]);
        }
    }
    return tree;
}

spec::Step::Part category_set_part(int32_t column, const std::vector<std::vector<int32_t>>& sets,
                                   const char* round) {
    return category_set_part(column, sets, std::vector<uint8_t>(sets.size(), 0), {round});
}

spec::Step::Part category_set_part(int32_t column, const std::vector<std::vector<int32_t>>& sets,
                                   const std::vector<uint8_t>& with_missing, const std::vector<const char*>& rounding) {
    std::vector<int32_t> cats;
    for (const auto& s : sets) cats.insert(cats.end(), s.begin(), s.end());
    std::sort(cats.begin(), cats.end());
    cats.erase(std::unique(cats.begin(), cats.end()), cats.end());
    const bool any_missing = std::find(with_missing.begin(), with_missing.end(), 1) != with_missing.end();
    std::vector<double> categories(cats.begin(), cats.end());
    if (any_missing) categories.push_back(NAN);  // the last one-hot column: "is missing"
    spec::Step::Part part;
    part.columns.push_back(column);
    for (const char* function : rounding) {
        spec::Step step;
        step.op = spec::Op::Elementwise;
        step.params = {{"function", function}};
        part.steps.push_back(std::move(step));
    }
    spec::Step one_hot;
    one_hot.op = spec::Op::OneHot;
    one_hot.params = {{"categories", nlohmann::json::array({spec::numbers_to_json(categories)})},
                      {"drop", nlohmann::json::array({-1})}};
    part.steps.push_back(std::move(one_hot));
    nlohmann::json matrix = nlohmann::json::array();
    for (size_t k = 0; k < sets.size(); ++k) {
        std::vector<double> row(categories.size(), 0.0);
        for (int32_t c : sets[k]) row[std::lower_bound(cats.begin(), cats.end(), c) - cats.begin()] = 1.0;
        if (with_missing[k]) row.back() = 1.0;
        matrix.push_back(row);
    }
    spec::Step project;
    project.op = spec::Op::Project;
    project.params = {{"matrix", std::move(matrix)}, {"offset", std::vector<double>(sets.size(), 0.0)}};
    part.steps.push_back(std::move(project));
    return part;
}

}  // namespace pg_predict::importers
