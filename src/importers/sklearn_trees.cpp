// scikit-learn tree models (the last step of a `format = "sklearn"` document, see
// src/spec/SKLEARN_FORMAT.md) → spec::TreeEnsemble. Checked against scikit-learn 1.2.1.
//
// What scikit-learn computes, and how it is expressed here:
//  - A split sends x left when x <= threshold, with X cast to float32 and thresholds kept in
//    float64. Comparison::LessEqual with the threshold rounded DOWN to the largest float32 not
//    above it makes the same decision for every float32 x (x <= t64 ⇔ x <= rd32(t64)).
//  - Leaves have children_left == -1 (TREE_LEAF); their `feature` is -2 (TREE_UNDEFINED).
//  - NaN inputs: scikit-learn 1.2's trees refuse them at predict (ValueError). Here a NaN goes
//    right at every split (default_left = 0) — a choice, not scikit-learn behaviour; callers
//    that must match scikit-learn map SQL NULL to a NULL prediction or impute first.
//  - DecisionTreeClassifier.predict_proba: the leaf's value (per-class weighted counts)
//    divided by its sum (a zero sum is left as is). Forests (RandomForest*, ExtraTrees*)
//    average the trees' probabilities. Expressed as one spec tree per (estimator tree, class)
//    with group = class and leaf = (value / sum) / n_trees computed in double and rounded
//    once to float32; transform Identity, one group per class. Two classes: one tree per
//    estimator tree for class 1 only, transform Complement ([1 - p, p]).
//  - Regressors: leaf = value[0][0] / n_trees; single output only.
//  - GradientBoosting*: raw = init + learning_rate · Σ tree values (value[0][0]). The
//    learning rate is folded into the leaves in double before rounding to float32.
//      classifier, 2 classes, log_loss/deviance: p = expit(raw)      → Logistic, 1 group
//      classifier, 2 classes, exponential:       p = expit(2 · raw)  → Logistic, 1 group,
//                                                  the factor 2 folded into leaves and init
//      classifier, K > 2 classes:                softmax over K raw  → Softmax, K groups
//      regressor (any loss: squared_error, absolute_error, huber, quantile): predict = raw.
//    `init` is the raw prior per output as the exporter read it from _raw_predict_init.
//  - HistGradientBoosting*: raw = baseline + Σ leaf values (the learning rate is already in
//    the leaves). Its TreePredictor compares X in FLOAT64 (x <= num_threshold) and sends NaN
//    to missing_go_to_left (→ Tree.default_left). The program casts the row to float32 and
//    compares with the threshold rounded down to float32: exact for float32-representable
//    inputs (x32 <= rd32(t) ⇔ x32 <= t); a float8 input that is not float32-representable can
//    go the other way only when it lies within half a float32 ulp of a threshold.
//    num_threshold = +inf ("split on NaN": every number left, NaN right) stays +inf.
//    Categorical splits are refused.
//      loss log_loss, 2 classes → Logistic, 1 group; K > 2 → Softmax, K groups
//      regressor: squared_error / absolute_error / quantile → Identity; poisson → Exp.
//  - IsolationForest (predict: -1 outlier / 1 inlier). scikit-learn: for each tree,
//    h = depth of the leaf + c(n_node_samples[leaf]); score = -2^(-Σh / (n_trees·c(max_samples)));
//    decision = score - offset; predict = -1 where decision < 0, else 1; c(n) = 0 for n <= 1,
//    1 for n = 2, else 2(ln(n-1) + γ) - 2(n-1)/n. Each leaf holds h / (n_trees·c(max_samples))
//    (double, rounded once), so the margin m = Σ leaves = Σh / (n_trees·c). With offset < 0:
//    decision >= 0 ⇔ 2^(-m) <= -offset ⇔ m >= T = -log2(-offset). base_margin = -T', T' the
//    largest float32 below T, and transform TwoSided ([-d, d], ties → classes[0] = -1):
//    d = m + (-T') > 0 ⇔ m > T' ⇔ m >= T for float32 m (a float difference is 0 only for
//    equal operands and keeps the sign), so the ties of scikit-learn (decision == 0 → 1) are
//    kept. Left: m is a float32 sum, sklearn's a float64 one, so a row whose decision is
//    within ~1e-6 relative of 0 may flip. c(max_samples) = 0 (max_samples = 1): sklearn's
//    score is -0.5 for every row, so the prediction is a constant. The outputs are these
//    margin-space decision values (not decision_function), and predict_proba is refused.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pg_predict/common/interrupt.hpp"
#include "pg_predict/common/error.hpp"
#include "pg_predict/importers/sklearn.hpp"
#include "pg_predict/importers/trees.hpp"

namespace pg_predict::importers {

namespace {

using nlohmann::json;
using spec::PostTransform;
using spec::Task;

enum class Family { Forest, GradientBoosting, HistGradientBoosting, IsolationForest };

struct Estimator {
    const char* type;
    Family family;
    bool classifier;
    bool averages;  // forests average their trees; a single DecisionTree has one
};

constexpr Estimator kEstimators[] = {
    {"DecisionTreeClassifier", Family::Forest, true, false},
    {"DecisionTreeRegressor", Family::Forest, false, false},
    {"ExtraTreeClassifier", Family::Forest, true, false},
    {"ExtraTreeRegressor", Family::Forest, false, false},
    {"RandomForestClassifier", Family::Forest, true, true},
    {"RandomForestRegressor", Family::Forest, false, true},
    {"ExtraTreesClassifier", Family::Forest, true, true},
    {"ExtraTreesRegressor", Family::Forest, false, true},
    {"GradientBoostingClassifier", Family::GradientBoosting, true, false},
    {"GradientBoostingRegressor", Family::GradientBoosting, false, false},
    {"HistGradientBoostingClassifier", Family::HistGradientBoosting, true, false},
    {"HistGradientBoostingRegressor", Family::HistGradientBoosting, false, false},
    {"IsolationForest", Family::IsolationForest, true, false},
};

constexpr int64_t kMaxClasses = 1 << 16;

// --- field access: every complaint names the estimator and the JSON path ------------------

struct Reader {
    std::string estimator;

    [[noreturn]] void bad(const std::string& path, const std::string& what) const {
        fail(ErrorCategory::InvalidModel,
             "scikit-learn " + estimator + ": \"" + path + "\" " + what);
    }
    // The prefix of trees.hpp's messages about the tree at `path`.
    std::string where(const std::string& path) const { return "scikit-learn " + estimator + ": " + path; }
    [[noreturn]] void unsupported(const std::string& what) const {
        fail(ErrorCategory::Unsupported, "scikit-learn " + estimator + ": " + what);
    }

    const json& need(const json& obj, const std::string& key) const {
        auto it = obj.find(key);
        if (it == obj.end()) bad(key, "is missing");
        return *it;
    }
    const json& need_array(const json& obj, const std::string& path, const std::string& key) const {
        auto it = obj.find(key);
        const std::string p = path.empty() ? key : path + "." + key;
        if (it == obj.end()) bad(p, "is missing");
        if (!it->is_array()) bad(p, "must be an array");
        return *it;
    }

    // A JSON number, or the strings "NaN" / "Infinity" / "-Infinity" of the export format.
    double number(const json& v, const std::string& path) const {
        if (v.is_number()) return v.get<double>();
        if (v.is_string()) {
            const std::string& s = v.get_ref<const std::string&>();
            if (s == "NaN") return std::nan("");
            if (s == "Infinity") return HUGE_VAL;
            if (s == "-Infinity") return -HUGE_VAL;
        }
        bad(path, "must be a number");
    }
    double finite(const json& v, const std::string& path) const {
        double d = number(v, path);
        if (!std::isfinite(d)) bad(path, "must be finite");
        return d;
    }
    int64_t integer(const json& v, const std::string& path, int64_t lo, int64_t hi) const {
        int64_t i;
        if (v.is_number_integer()) {
            if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
                bad(path, "is out of range");
            i = v.get<int64_t>();
        } else if (v.is_number_float() && std::nearbyint(v.get<double>()) == v.get<double>() &&
                   std::fabs(v.get<double>()) < 9e15) {
            i = static_cast<int64_t>(v.get<double>());  // 3.0 from a float array
        } else {
            bad(path, "must be an integer");
        }
        if (i < lo || i > hi)
            bad(path, "is " + std::to_string(i) + ", outside [" + std::to_string(lo) + ", " +
                          std::to_string(hi) + "]");
        return i;
    }
};

std::string idx(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

// One fitted sklearn tree_ (children_left, children_right, feature, threshold, value),
// checked: equal lengths, children in range, every node reached exactly once from the root,
// split features inside the model's input vector. Leaf values stay in double.
struct SkTree {
    std::vector<int32_t> left, right, feature;
    std::vector<float> threshold;
    std::vector<std::vector<double>> leaf;  // per node: the value row of output 0 (leaves only)
    std::vector<uint8_t> default_left;       // where NaN goes per node; empty: always right
};

// Split node i of `out`: its feature (inside the model's input vector) and its threshold, not
// NaN, rounded down to float32. feature_key / threshold_key name the JSON arrays in errors.
void read_split(const Reader& r, SkTree& out, int32_t i, const json& feature, const std::string& feature_key,
                const json& threshold, const std::string& threshold_key, int32_t num_features) {
    out.feature[i] = static_cast<int32_t>(r.integer(feature, idx(feature_key, i), 0, INT32_MAX));
    if (out.feature[i] >= num_features)
        r.bad(idx(feature_key, i), "is " + std::to_string(out.feature[i]) + " but the model reads " +
                                       std::to_string(num_features) + " features");
    const double t = r.number(threshold, idx(threshold_key, i));
    if (std::isnan(t)) r.bad(idx(threshold_key, i), "is NaN");
    out.threshold[i] = round_down_to_float(t);
}

// Checks the shape every tree must have (trees.hpp: every node hangs off the root, two
// children or none), then calls on_leaf(i) or on_split(i) for each node.
template <class Leaf, class Split>
void walk_tree(const Reader& r, const std::string& path, const std::vector<int32_t>& left,
               const std::vector<int32_t>& right, Leaf on_leaf, Split on_split) {
    check_tree_links(left, right, UnreachableNodes::Refuse, r.where(path));
    for (size_t i = 0; i < left.size(); ++i) {
        if (left[i] == -1) on_leaf(static_cast<int32_t>(i));
        else on_split(static_cast<int32_t>(i));
    }
}

SkTree read_tree(const Reader& r, const json& t, const std::string& path, int32_t num_features,
                 size_t width) {
    if (!t.is_object()) r.bad(path, "must be an object");
    const json& cl = r.need_array(t, path, "children_left");
    const json& cr = r.need_array(t, path, "children_right");
    const json& fe = r.need_array(t, path, "feature");
    const json& th = r.need_array(t, path, "threshold");
    const json& va = r.need_array(t, path, "value");
    const size_t n = cl.size();
    if (n == 0) r.bad(path + ".children_left", "is empty: a tree has at least a root");
    if (n > static_cast<size_t>(INT32_MAX)) r.bad(path + ".children_left", "is too long");
    for (auto [arr, key] : {std::pair{&cr, "children_right"}, std::pair{&fe, "feature"},
                            std::pair{&th, "threshold"}, std::pair{&va, "value"}})
        if (arr->size() != n)
            r.bad(path + "." + key, "has " + std::to_string(arr->size()) +
                                        " entries, children_left has " + std::to_string(n));

    SkTree out;
    out.left.resize(n);
    out.right.resize(n);
    out.feature.assign(n, 0);
    out.threshold.assign(n, 0.0f);
    out.leaf.resize(n);
    const int64_t hi = static_cast<int64_t>(n) - 1;
    for (size_t i = 0; i < n; ++i) {
        out.left[i] = static_cast<int32_t>(r.integer(cl[i], idx(path + ".children_left", i), -1, hi));
        out.right[i] = static_cast<int32_t>(r.integer(cr[i], idx(path + ".children_right", i), -1, hi));
    }

    walk_tree(r, path, out.left, out.right, [&](int32_t i) {
        // A leaf: its value row for output 0.
        const std::string vp = idx(path + ".value", i);
        const json& v = va[i];
        if (!v.is_array() || v.empty()) r.bad(vp, "must be an array [outputs][classes]");
        if (v.size() > 1)
            r.unsupported("multi-output models are not supported (" + vp + " has " +
                          std::to_string(v.size()) + " outputs)");
        const json& row = v[0];
        if (!row.is_array()) r.bad(idx(vp, 0), "must be an array");
        if (row.size() != width)
            r.bad(idx(vp, 0), "has " + std::to_string(row.size()) + " entries, expected " +
                                  std::to_string(width));
        auto& leaf = out.leaf[i];
        leaf.reserve(width);
        for (size_t k = 0; k < width; ++k)
            leaf.push_back(r.finite(row[k], idx(idx(vp, 0), k)));
    }, [&](int32_t i) {
        read_split(r, out, i, fe[i], path + ".feature", th[i], path + ".threshold", num_features);
    });
    return out;
}

// The spec tree with s's structure and leaf value `leaf_value(row)` (computed in double,
// rounded once to float32).
template <class F>
spec::Tree to_spec(const Reader& r, const SkTree& s, const std::string& path, int32_t group,
                   int32_t num_features, F leaf_value) {
    const size_t n = s.left.size();
    NodeArrays nodes;
    nodes.left = s.left;
    nodes.right = s.right;
    nodes.feature = s.feature;
    nodes.threshold = s.threshold;
    // NaN goes right unless the model says otherwise (scikit-learn 1.2's trees reject NaN).
    nodes.default_left = s.default_left;
    nodes.value.assign(n, 0.0f);
    for (size_t i = 0; i < n; ++i)
        if (s.left[i] == -1) nodes.value[i] = static_cast<float>(leaf_value(s.leaf[i]));
    return build_tree(nodes, group, num_features, UnreachableNodes::Refuse, r.where(path));
}

void check_task(const Reader& r, const Estimator& e, const spec::Pipeline& p) {
    if (e.classifier && p.task != Task::Classification)
        r.bad("task", "must be \"classification\" for a " + r.estimator);
    if (!e.classifier && p.task != Task::Regression)
        r.bad("task", "must be \"regression\" for a " + r.estimator);
}

// n_classes from the step (when given) must agree with the document's classes.
size_t class_count(const Reader& r, const json& step, const spec::Pipeline& p) {
    if (p.classes.size() < 2) r.bad("classes", "must list at least two labels for a classifier");
    if (p.classes.size() > static_cast<size_t>(kMaxClasses))
        r.unsupported("more than " + std::to_string(kMaxClasses) + " classes are not supported");
    if (auto it = step.find("n_classes"); it != step.end() && !it->is_null()) {
        if (it->is_array()) {
            if (it->size() != 1)
                r.unsupported("multi-output models are not supported (n_classes has " +
                              std::to_string(it->size()) + " outputs)");
            it = it->begin();
        }
        const int64_t k = r.integer(*it, "n_classes", 1, kMaxClasses);
        if (static_cast<size_t>(k) != p.classes.size())
            r.bad("n_classes", "is " + std::to_string(k) + " but classes lists " +
                                   std::to_string(p.classes.size()) + " labels");
    }
    return p.classes.size();
}

void reject_multi_output(const Reader& r, const json& step) {
    if (auto it = step.find("n_outputs"); it != step.end() && !it->is_null())
        if (r.integer(*it, "n_outputs", 1, INT32_MAX) != 1)
            r.unsupported("multi-output models are not supported (n_outputs = " + it->dump() + ")");
}

void import_forest(const Reader& r, const Estimator& e, const json& step, int32_t num_features,
                   spec::Pipeline& p) {
    reject_multi_output(r, step);
    const json& trees = r.need_array(step, "", "trees");
    if (trees.empty()) r.bad("trees", "is empty");
    if (!e.averages && trees.size() != 1)
        r.bad("trees", "has " + std::to_string(trees.size()) + " trees; a " + r.estimator +
                           " has one");
    const double n_trees = static_cast<double>(trees.size());
    auto& m = p.model;
    if (e.classifier) {
        const size_t K = class_count(r, step, p);
        // Two classes: P(class 0) = 1 - P(class 1), so one tree per estimator tree carries
        // P(class 1) and the transform adds the complement: half the trees to evaluate.
        const size_t groups = K == 2 ? 1 : K;
        m.num_groups = static_cast<int32_t>(groups);
        m.trees.reserve(trees.size() * groups);
        for (size_t ti = 0; ti < trees.size(); ++ti) {
            check_interrupts();
            const std::string tp = idx("trees", ti);
            const SkTree s = read_tree(r, trees[ti], tp, num_features, K);
            for (size_t g = 0; g < groups; ++g) {
                const size_t k = K == 2 ? 1 : g;
                m.trees.push_back(to_spec(r, s, tp, static_cast<int32_t>(g), num_features, [&](const std::vector<double>& v) {
                    double sum = 0.0;
                    for (double c : v) sum += c;
                    if (sum == 0.0) sum = 1.0;  // as predict_proba's normalizer
                    return v[k] / sum / n_trees;
                }));
            }
        }
        p.transform = K == 2 ? PostTransform::Complement : PostTransform::Identity;
    } else {
        m.num_groups = 1;
        m.trees.reserve(trees.size());
        for (size_t ti = 0; ti < trees.size(); ++ti) {
            const std::string tp = idx("trees", ti);
            const SkTree s = read_tree(r, trees[ti], tp, num_features, 1);
            m.trees.push_back(to_spec(r, s, tp, 0, num_features, [&](const std::vector<double>& v) { return v[0] / n_trees; }));
        }
        p.transform = PostTransform::Identity;
    }
    m.base_margin.assign(m.num_groups, 0.0f);
    p.objective = r.estimator;
}

// The loss's entry in a trees.hpp table; Unsupported naming the estimator otherwise.
const Objective& find_loss(const Reader& r, const std::vector<Objective>& table, const std::string& loss) {
    for (const Objective& o : table)
        if (loss == o.name) return o;
    r.unsupported("loss \"" + loss + "\" is not supported; supported: " + objective_names(table));
}

// Sets p.transform for loss `o` and returns the number of margins: one, or for a classifier of
// K > 2 classes one per class with a softmax.
size_t margins(const Reader& r, const json& step, spec::Pipeline& p, const Objective& o) {
    p.transform = o.transform;
    if (o.task != Task::Classification) return 1;
    const size_t classes = class_count(r, step, p);
    if (classes == 2) return 1;
    if (!o.multiclass) r.bad("loss", "\"" + std::string(o.name) + "\" needs two classes");
    p.transform = PostTransform::Softmax;
    return classes;
}

void import_gradient_boosting(const Reader& r, const Estimator& e, const json& step,
                              int32_t num_features, spec::Pipeline& p) {
    const json& lossv = r.need(step, "loss");
    if (!lossv.is_string()) r.bad("loss", "must be a string");
    const std::string loss = lossv.get<std::string>();
    const Objective& o = find_loss(r, sklearn_gradient_boosting_losses(e.classifier), loss);
    // The exponential loss's probability is expit(2 · raw): the 2 is folded into the leaves.
    const double scale = loss == "exponential" ? 2.0 : 1.0;
    const size_t K = margins(r, step, p, o);

    const double lr = r.finite(r.need(step, "learning_rate"), "learning_rate");
    const json& initv = r.need(step, "init");
    std::vector<double> init;
    if (initv.is_array()) {
        // [K] or [[K]] (one row of _raw_predict_init).
        const json& row = (initv.size() == 1 && initv[0].is_array()) ? initv[0] : initv;
        const std::string ip = &row == &initv ? "init" : "init[0]";
        for (size_t i = 0; i < row.size(); ++i) init.push_back(r.finite(row[i], idx(ip, i)));
    } else {
        init.push_back(r.finite(initv, "init"));
    }
    if (init.size() != K)
        r.bad("init", "has " + std::to_string(init.size()) + " values for " + std::to_string(K) +
                          " outputs");

    const json& stages = r.need_array(step, "", "trees");
    if (stages.empty()) r.bad("trees", "is empty");
    auto& m = p.model;
    m.num_groups = static_cast<int32_t>(K);
    m.base_margin.clear();
    for (double b : init) m.base_margin.push_back(static_cast<float>(scale * b));
    m.trees.reserve(stages.size() * K);
    for (size_t si = 0; si < stages.size(); ++si) {
        const std::string sp = idx("trees", si);
        const json& stage = stages[si];
        if (!stage.is_array()) r.bad(sp, "must be an array of trees, one per output");
        if (stage.size() != K)
            r.bad(sp, "has " + std::to_string(stage.size()) + " trees, the model has " +
                          std::to_string(K) + " outputs");
        for (size_t k = 0; k < K; ++k) {
            const SkTree s = read_tree(r, stage[k], idx(sp, k), num_features, 1);
            m.trees.push_back(to_spec(r, s, idx(sp, k), static_cast<int32_t>(k), num_features, [&](const std::vector<double>& v) {
                return scale * (lr * v[0]);
            }));
        }
    }
    p.objective = r.estimator + ":" + loss;
}

// One HistGradientBoosting TreePredictor's `nodes` (feature_idx, num_threshold,
// missing_go_to_left, left, right, is_leaf, value): leaves get left = right = -1 (their
// left/right fields are 0 in scikit-learn).
SkTree read_hist_tree(const Reader& r, const json& t, const std::string& path, int32_t num_features) {
    if (!t.is_object()) r.bad(path, "must be an object");
    const char* keys[] = {"feature_idx", "num_threshold", "missing_go_to_left", "left", "right",
                          "is_leaf", "value"};
    const json* a[7];
    for (int k = 0; k < 7; ++k) a[k] = &r.need_array(t, path, keys[k]);
    const json &fe = *a[0], &th = *a[1], &miss = *a[2], &cl = *a[3], &cr = *a[4], &isleaf = *a[5],
               &va = *a[6];
    const size_t n = fe.size();
    if (n == 0) r.bad(path + ".feature_idx", "is empty: a tree has at least a root");
    if (n > static_cast<size_t>(INT32_MAX)) r.bad(path + ".feature_idx", "is too long");
    for (int k = 1; k < 7; ++k)
        if (a[k]->size() != n)
            r.bad(path + "." + keys[k], "has " + std::to_string(a[k]->size()) +
                                            " entries, feature_idx has " + std::to_string(n));
    if (auto cat = t.find("is_categorical"); cat != t.end() && cat->is_array())
        for (size_t i = 0; i < cat->size(); ++i)
            if (r.integer((*cat)[i], idx(path + ".is_categorical", i), 0, 1) != 0)
                r.unsupported("categorical splits (categorical_features) are not supported (" +
                              idx(path + ".is_categorical", i) + ")");

    SkTree out;
    out.left.assign(n, -1);
    out.right.assign(n, -1);
    out.feature.assign(n, 0);
    out.threshold.assign(n, 0.0f);
    out.leaf.resize(n);
    out.default_left.assign(n, 0);
    const int64_t hi = static_cast<int64_t>(n) - 1;
    for (size_t i = 0; i < n; ++i) {
        if (r.integer(isleaf[i], idx(path + ".is_leaf", i), 0, 1)) continue;
        out.left[i] = static_cast<int32_t>(r.integer(cl[i], idx(path + ".left", i), 1, hi));
        out.right[i] = static_cast<int32_t>(r.integer(cr[i], idx(path + ".right", i), 1, hi));
    }
    walk_tree(r, path, out.left, out.right, [&](int32_t i) {
        out.leaf[i] = {r.finite(va[i], idx(path + ".value", i))};
    }, [&](int32_t i) {
        read_split(r, out, i, fe[i], path + ".feature_idx", th[i], path + ".num_threshold", num_features);
        out.default_left[i] =
            static_cast<uint8_t>(r.integer(miss[i], idx(path + ".missing_go_to_left", i), 0, 1));
    });
    return out;
}

void import_hist_gradient_boosting(const Reader& r, const Estimator& e, const json& step,
                                   int32_t num_features, spec::Pipeline& p) {
    const json& lossv = r.need(step, "loss");
    if (!lossv.is_string()) r.bad("loss", "must be a string");
    const std::string loss = lossv.get<std::string>();
    const Objective& o = find_loss(r, sklearn_hist_gradient_boosting_losses(e.classifier), loss);
    const size_t K = margins(r, step, p, o);

    const json& base = r.need_array(step, "", "baseline");
    if (base.size() != K)
        r.bad("baseline", "has " + std::to_string(base.size()) + " values for " +
                              std::to_string(K) + " outputs");
    auto& m = p.model;
    m.num_groups = static_cast<int32_t>(K);
    m.base_margin.clear();
    for (size_t k = 0; k < K; ++k)
        m.base_margin.push_back(static_cast<float>(r.finite(base[k], idx("baseline", k))));

    const json& iterations = r.need_array(step, "", "trees");
    if (iterations.empty()) r.bad("trees", "is empty");
    m.trees.reserve(iterations.size() * K);
    for (size_t it = 0; it < iterations.size(); ++it) {
        const std::string ip = idx("trees", it);
        const json& trees = iterations[it];
        if (!trees.is_array()) r.bad(ip, "must be an array of trees, one per output");
        if (trees.size() != K)
            r.bad(ip, "has " + std::to_string(trees.size()) + " trees, the model has " +
                          std::to_string(K) + " outputs");
        for (size_t k = 0; k < K; ++k) {
            const SkTree s = read_hist_tree(r, trees[k], idx(ip, k), num_features);
            m.trees.push_back(to_spec(r, s, idx(ip, k), static_cast<int32_t>(k), num_features,
                                      [](const std::vector<double>& v) { return v[0]; }));
        }
    }
    p.objective = r.estimator + ":" + loss;
}

// IsolationForest's c(n), the average path length of an unsuccessful BST search over n
// samples (_average_path_length).
double average_path_length(double n) {
    if (n <= 1.0) return 0.0;
    if (n == 2.0) return 1.0;
    constexpr double kEulerGamma = 0.57721566490153286061;
    return 2.0 * (std::log(n - 1.0) + kEulerGamma) - 2.0 * (n - 1.0) / n;
}

void import_isolation_forest(const Reader& r, const json& step, int32_t num_features,
                             spec::Pipeline& p) {
    if (p.classes != std::vector<double>{-1.0, 1.0})
        r.bad("classes", "must be [-1, 1] (outlier, inlier)");
    const double offset = r.finite(r.need(step, "offset"), "offset");
    if (!(offset < 0.0)) r.bad("offset", "must be negative (scores lie in [-1, 0))");
    const int64_t max_samples = r.integer(r.need(step, "max_samples"), "max_samples", 1, INT64_MAX / 2);
    const json& trees = r.need_array(step, "", "trees");
    if (trees.empty()) r.bad("trees", "is empty");

    const double denominator = static_cast<double>(trees.size()) *
                               average_path_length(static_cast<double>(max_samples));
    auto& m = p.model;
    m.num_groups = 1;
    m.trees.reserve(trees.size());
    for (size_t ti = 0; ti < trees.size(); ++ti) {
        check_interrupts();
        const std::string tp = idx("trees", ti);
        SkTree s = read_tree(r, trees[ti], tp, num_features, 1);
        const json& ns = r.need_array(trees[ti], tp, "n_node_samples");
        if (ns.size() != s.left.size())
            r.bad(tp + ".n_node_samples", "has " + std::to_string(ns.size()) + " entries, the tree has " +
                                              std::to_string(s.left.size()) + " nodes");
        // Depth of every node (parents come before children in a walk from the root).
        std::vector<int32_t> depth(s.left.size(), 0);
        std::vector<int32_t> stack{0};
        while (!stack.empty()) {
            const int32_t i = stack.back();
            stack.pop_back();
            if (s.left[i] == -1) {
                const double n = static_cast<double>(
                    r.integer(ns[i], idx(tp + ".n_node_samples", i), 0, INT64_MAX / 2));
                // With denominator 0 sklearn's ratio is 1 for every row: leaves 0, base below.
                s.leaf[i] = {denominator == 0.0 ? 0.0 : (depth[i] + average_path_length(n)) / denominator};
                continue;
            }
            for (int32_t c : {s.left[i], s.right[i]}) {
                depth[c] = depth[i] + 1;
                stack.push_back(c);
            }
        }
        m.trees.push_back(to_spec(r, s, tp, 0, num_features, [](const std::vector<double>& v) { return v[0]; }));
    }
    if (denominator == 0.0) {
        // sklearn's score is -0.5 for every row: a constant prediction (leaves are 0).
        m.base_margin = {-0.5 - offset >= 0.0 ? 1.0f : -1.0f};
    } else {
        const double threshold = -std::log2(-offset);  // finite: offset is finite and < 0
        m.base_margin = {-float_below(threshold)};
    }
    p.transform = PostTransform::TwoSided;
    p.has_probabilities = false;
    p.objective = r.estimator;
}

}  // namespace

bool import_sklearn_tree_model(const json& step, int32_t num_features, spec::Pipeline& pipeline) {
    if (!step.is_object()) return false;
    auto type = step.find("type");
    if (type == step.end() || !type->is_string()) return false;
    const std::string name = type->get<std::string>();
    const Estimator* e = nullptr;
    for (const Estimator& c : kEstimators)
        if (name == c.type) e = &c;
    if (!e) return false;

    Reader r{name};
    if (num_features < 0) r.bad("num_features", "is negative");
    try {
        check_task(r, *e, pipeline);
        spec::TreeEnsemble saved = std::move(pipeline.model);
        pipeline.model = spec::TreeEnsemble{};
        pipeline.model.num_features = num_features;
        pipeline.model.comparison = spec::Comparison::LessEqual;
        try {
            switch (e->family) {
            case Family::Forest: import_forest(r, *e, step, num_features, pipeline); break;
            case Family::GradientBoosting:
                import_gradient_boosting(r, *e, step, num_features, pipeline);
                break;
            case Family::HistGradientBoosting:
                import_hist_gradient_boosting(r, *e, step, num_features, pipeline);
                break;
            case Family::IsolationForest: import_isolation_forest(r, step, num_features, pipeline); break;
            }
        } catch (...) {
            pipeline.model = std::move(saved);
            throw;
        }
    } catch (const Error&) {
        throw;
    } catch (const json::exception& ex) {
        fail(ErrorCategory::InvalidModel, "scikit-learn " + name + " is malformed: " + ex.what());
    }
    return true;
}

}  // namespace pg_predict::importers
