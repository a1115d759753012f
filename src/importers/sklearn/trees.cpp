// scikit-learn tree models (python/pg_predict/trees.py writes them, see
// src/spec/SKLEARN_FORMAT.md) → spec::TreeEnsemble. Checked against scikit-learn 1.2.1.
//
// What scikit-learn computes, and how it is expressed here:
//  - A split sends x left when x <= threshold, with X cast to float32 and thresholds kept in
//    float64. Comparison::LessEqual with the threshold rounded DOWN to the largest float32 not
//    above it makes the same decision for every float32 x (x <= t64 ⇔ x <= rd32(t64)).
//  - Leaves have children_left == -1 (TREE_LEAF); their `feature` is -2 (TREE_UNDEFINED).
//  - NaN inputs: scikit-learn 1.2's trees (all but HistGradientBoosting) refuse them at predict
//    (ValueError): they have no rule for a missing value, so the ensemble lists the inputs its
//    trees read as inputs_without_missing_rule and a row with a NaN in one of them gets no
//    prediction (NULL), as a linear model's NaN gives. Their splits keep default_left = 0,
//    which only a NaN in an input that is not read reaches. IsolationForest still sends NaN
//    right.
//  - DecisionTreeClassifier.predict_proba: the leaf's value (per-class weighted counts)
//    divided by its sum (a zero sum is left as is). Forests (RandomForest*, ExtraTrees*)
//    average the trees' probabilities. Expressed as one spec tree per (estimator tree, class)
//    with group = class and leaf = (value / sum) / n_trees computed in double and rounded
//    once to float32; transform Identity, one group per class. Two classes: one tree per
//    estimator tree for class 1 only, transform Complement ([1 - p, p]).
//  - Regressors: leaf = value[0][0] / n_trees; a multi-output one (n_outputs_ > 1) gives one
//    spec tree per (tree, output o) in group o with leaf = value[o][0] / n_trees.
//  - Multi-output classifiers of binary outputs: one spec tree per (tree, output o) in group o
//    with leaf = P(second label of o) / n_trees, base margin -1/2: a decision value per output
//    (spec::Pipeline::outputs), label 2o + 1 where it is > 0.
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
//    Categorical splits: see HistCategories below.
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
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "handlers.hpp"
#include "pg_predict/common/interrupt.hpp"
#include "pg_predict/importers/tree_builder.hpp"
#include "pg_predict/spec/limits.hpp"

namespace pg_predict::importers::sklearn {

namespace {

using spec::PostTransform;
using spec::Task;

enum class Family { Forest, GradientBoosting, HistGradientBoosting, IsolationForest };

struct Kind {
    Family family;
    bool classifier;
    bool averages;  // forests average their trees; a single DecisionTree has one
};

constexpr int64_t kMaxClasses = spec::kMaxGroups;

// One fitted sklearn tree_ (children_left, children_right, feature, threshold, value),
// checked: equal lengths, children in range, every node reached exactly once from the root,
// split features inside the model's input vector. Its node arrays but `value`, which to_spec
// fills per output: the leaf values stay in double here. default_left is empty (NaN goes right
// everywhere) but for HistGradientBoosting; cover is weighted_n_node_samples
// (HistGradientBoosting: count), empty in documents exported without it.
struct SkTree : NodeArrays {
    // per leaf: the value row of output 0 (classes), or of a multi-output regressor the value
    // of each output
    std::vector<std::vector<double>> leaf;
};

// The optional per-node array `key` (TreeSHAP's covers), as long as the tree, or empty.
std::vector<double> node_covers(const JsonReader& t, const char* key, size_t n) {
    const auto c = t.optional(key);
    if (!c) return {};
    return c->finite_numbers(n);
}

// Split node i: its feature (inside the model's input vector) and its threshold, not NaN,
// rounded down to float32.
void read_split(SkTree& out, int32_t i, const JsonReader& features, const JsonReader& thresholds,
                int32_t num_features) {
    out.feature[i] = static_cast<int32_t>(features[i].integer(0, INT32_MAX));
    if (out.feature[i] >= num_features)
        features[i].invalid("is " + std::to_string(out.feature[i]) + " but the model reads " +
                            std::to_string(num_features) + " features");
    const double t = thresholds[i].number();
    if (std::isnan(t)) thresholds[i].invalid("is NaN");
    out.threshold[i] = round_down_to_float(t);
}

// Checks the shape every tree must have (tree_builder.hpp: every node hangs off the root, two
// children or none), then calls on_leaf(i) or on_split(i) for each node.
template <class Leaf, class Split>
void walk_tree(const JsonReader& tree, const std::vector<int32_t>& left, const std::vector<int32_t>& right,
               Leaf on_leaf, Split on_split) {
    check_tree_links(left, right, UnreachableNodes::Refuse, tree.where());
    for (size_t i = 0; i < left.size(); ++i) {
        if (left[i] == -1) on_leaf(static_cast<int32_t>(i));
        else on_split(static_cast<int32_t>(i));
    }
}

// The arrays `keys` of a tree object, all as long as the first (at least a root).
std::vector<JsonReader> node_arrays(const JsonReader& t, std::initializer_list<const char*> keys) {
    t.expect_object();
    std::vector<JsonReader> a;
    for (const char* key : keys) a.push_back(t.array(key));
    const size_t n = a[0].size();
    if (n == 0) a[0].invalid("is empty: a tree has at least a root");
    if (n > static_cast<size_t>(INT32_MAX)) a[0].invalid("is too long");
    for (size_t k = 1; k < a.size(); ++k)
        if (a[k].size() != n)
            a[k].invalid("has " + std::to_string(a[k].size()) + " entries, " + *keys.begin() + " has " +
                         std::to_string(n));
    return a;
}

SkTree read_tree(const JsonReader& t, int32_t num_features, size_t width, size_t outputs = 1) {
    const auto a = node_arrays(t, {"children_left", "children_right", "feature", "threshold", "value"});
    const size_t n = a[0].size();
    const int64_t hi = static_cast<int64_t>(n) - 1;
    SkTree out;
    out.left = a[0].integers(-1, hi);
    out.right = a[1].integers(-1, hi);
    out.feature.assign(n, 0);
    out.threshold.assign(n, 0.0f);
    out.leaf.resize(n);
    walk_tree(t, out.left, out.right, [&](int32_t i) {
        // A leaf: its value row for output 0.
        const JsonReader v = a[4][i];
        if (!v.is_array() || v.empty()) v.invalid("must be an array [outputs][classes]");
        if (v.size() != outputs && width > 1)
            refuse(v, "multi-output classifiers (" + std::to_string(v.size()) + " outputs)");
        if (v.size() != outputs)
            v.invalid("has " + std::to_string(v.size()) + " outputs, the document's outputs is " +
                      std::to_string(outputs));
        // Several outputs: their value rows one after the other (output o at o * width).
        for (size_t o = 0; o < outputs; ++o) {
            const std::vector<double> row = v[o].finite_numbers(width);
            out.leaf[i].insert(out.leaf[i].end(), row.begin(), row.end());
        }
    }, [&](int32_t i) { read_split(out, i, a[2], a[3], num_features); });
    out.cover = node_covers(t, "weighted_n_node_samples", n);
    return out;
}

// The spec tree with s's structure and leaf value `leaf_value(row)` (computed in double,
// rounded once to float32).
template <class F>
spec::Tree to_spec(const JsonReader& tree, const SkTree& s, int32_t group, int32_t num_features, F leaf_value) {
    const size_t n = s.left.size();
    // NaN goes right unless the model says otherwise (scikit-learn 1.2's trees reject NaN).
    NodeArrays nodes = s;  // the node arrays without the leaf rows
    nodes.value.assign(n, 0.0f);
    for (size_t i = 0; i < n; ++i)
        if (s.left[i] == -1) nodes.value[i] = static_cast<float>(leaf_value(s.leaf[i]));
    return build_tree(nodes, group, num_features, UnreachableNodes::Refuse, tree.where());
}

// Every tree of `trees` (read with `width` values per output, `outputs` outputs) as `groups`
// spec trees, group g's leaves leaf_value(g, the leaf's value row).
template <class F>
void add_tree_groups(spec::TreeEnsemble& m, const JsonReader& trees, int32_t num_features, size_t width,
                     size_t outputs, size_t groups, F leaf_value) {
    m.trees.reserve(trees.size() * groups);
    for (size_t ti = 0; ti < trees.size(); ++ti) {
        check_interrupts();
        const JsonReader tree = trees[ti];
        const SkTree s = read_tree(tree, num_features, width, outputs);
        for (size_t g = 0; g < groups; ++g)
            m.trees.push_back(to_spec(tree, s, static_cast<int32_t>(g), num_features,
                                      [&](const std::vector<double>& v) { return leaf_value(g, v); }));
    }
}

// n_classes from the step (when given) must agree with the document's classes.
size_t class_count(const JsonReader& step, const spec::Pipeline& p) {
    need_task(step, p, true);
    if (p.classes.size() < 2) step.invalid("classes must list at least two labels for a classifier");
    if (p.classes.size() > static_cast<size_t>(kMaxClasses))
        refuse(step, "more than " + std::to_string(kMaxClasses) + " classes");
    if (auto nc = step.optional("n_classes")) {
        JsonReader k = *nc;
        if (nc->is_array()) {
            if (nc->size() != 1) refuse(*nc, "multi-output models (" + std::to_string(nc->size()) + " outputs)");
            k = (*nc)[0];
        }
        const int64_t classes = k.integer(1, kMaxClasses);
        if (static_cast<size_t>(classes) != p.classes.size())
            k.invalid("is " + std::to_string(classes) + " but classes lists " + std::to_string(p.classes.size()) +
                      " labels");
    }
    return p.classes.size();
}

void forest(const JsonReader& step, const Kind& e, int32_t num_features, spec::Pipeline& p) {
    // n_outputs is the document's outputs (several: a regressor, or a classifier of binary outputs).
    if (auto no = step.optional("n_outputs"); no && no->integer(1, INT32_MAX) != p.outputs) {
        if (e.classifier && p.outputs == 1)
            refuse(*no, "multi-output classifiers (n_outputs = " + no->value().dump() + ") in a single-output document");
        no->invalid("is " + no->value().dump() + " but the document's outputs is " + std::to_string(p.outputs));
    }
    const JsonReader trees = step.array("trees");
    if (trees.empty()) trees.invalid("is empty");
    if (!e.averages && trees.size() != 1)
        trees.invalid("has " + std::to_string(trees.size()) + " trees; a " + step.string("type") + " has one");
    const double n_trees = static_cast<double>(trees.size());
    auto& m = p.model;
    if (e.classifier && p.outputs > 1) {
        // Binary outputs (the document lists two labels per output): output o's decision value
        // is P(its second label) - 1/2, the trees' averaged probabilities with a base margin of
        // -1/2; label classes[2o + 1] where it is > 0 (a tie, 1/2, predicts the first label, as
        // scikit-learn's argmax).
        need_task(step, p, true);
        const size_t outputs = static_cast<size_t>(p.outputs);
        if (auto nc = step.optional("n_classes")) {
            const std::vector<int32_t> counts = nc->integers(1, kMaxClasses);
            if (counts.size() != outputs) nc->invalid("has " + std::to_string(counts.size()) + " entries for " +
                                                      std::to_string(outputs) + " outputs");
            for (size_t o = 0; o < outputs; ++o)
                if (counts[o] != 2) refuse((*nc)[o], "an output of " + std::to_string(counts[o]) +
                                                         " classes in a multi-output tree classifier (binary outputs only)");
        }
        m.num_groups = p.outputs;
        add_tree_groups(m, trees, num_features, 2, outputs, outputs, [&](size_t o, const std::vector<double>& v) {
            double sum = v[2 * o] + v[2 * o + 1];
            if (sum == 0.0) sum = 1.0;
            return v[2 * o + 1] / sum / n_trees;
        });
        m.base_margin.assign(outputs, -0.5f);
        p.transform = PostTransform::Identity;
        p.has_probabilities = false;
        p.objective = step.string("type");
        return;
    }
    if (e.classifier) {
        const size_t K = class_count(step, p);
        // Two classes: P(class 0) = 1 - P(class 1), so one tree per estimator tree carries
        // P(class 1) and the transform adds the complement: half the trees to evaluate.
        const size_t groups = K == 2 ? 1 : K;
        m.num_groups = static_cast<int32_t>(groups);
        add_tree_groups(m, trees, num_features, K, 1, groups, [&](size_t g, const std::vector<double>& v) {
            const size_t k = K == 2 ? 1 : g;
            double sum = 0.0;
            for (double c : v) sum += c;
            if (sum == 0.0) sum = 1.0;  // as predict_proba's normalizer
            return v[k] / sum / n_trees;
        });
        p.transform = K == 2 ? PostTransform::Complement : PostTransform::Identity;
    } else {
        need_task(step, p, false);
        // Several outputs: one spec tree per (estimator tree, output), its leaves that output's
        // values, in the group of that output.
        const size_t outputs = static_cast<size_t>(p.outputs);
        m.num_groups = p.outputs;
        add_tree_groups(m, trees, num_features, 1, outputs, outputs,
                        [&](size_t o, const std::vector<double>& v) { return v[o] / n_trees; });
        p.transform = PostTransform::Identity;
    }
    m.base_margin.assign(m.num_groups, 0.0f);
    p.objective = step.string("type");
}

// The loss's entry in a tree_builder.hpp table; Unsupported naming the estimator otherwise.
const Objective& find_loss(const JsonReader& loss, const std::vector<Objective>& table) {
    const std::string name = loss.string();
    for (const Objective& o : table)
        if (name == o.name) return o;
    loss.unsupported("loss \"" + name + "\" is not supported; supported: " + objective_names(table));
}

// Stage i of a boosting model's `stages`: an array of its K trees, one per output.
JsonReader stage_trees(const JsonReader& stages, size_t i, size_t K) {
    const JsonReader stage = stages[i];
    if (!stage.is_array()) stage.invalid("must be an array of trees, one per output");
    if (stage.size() != K)
        stage.invalid("has " + std::to_string(stage.size()) + " trees, the model has " + std::to_string(K) +
                      " outputs");
    return stage;
}

// Sets p.transform for loss `o` and returns the number of margins: one, or for a classifier of
// K > 2 classes one per class with a softmax.
size_t margins(const JsonReader& step, spec::Pipeline& p, const Objective& o) {
    p.transform = o.transform;
    if (o.task != Task::Classification) {
        need_task(step, p, false);
        return 1;
    }
    const size_t classes = class_count(step, p);
    if (classes == 2) return 1;
    if (!o.multiclass) step.need("loss").invalid("\"" + std::string(o.name) + "\" needs two classes");
    p.transform = PostTransform::Softmax;
    return classes;
}

void gradient_boosting(const JsonReader& step, const Kind& e, int32_t num_features, spec::Pipeline& p) {
    const JsonReader lossv = step.need("loss");
    const std::string loss = lossv.string();
    const Objective& o = find_loss(lossv, sklearn_gradient_boosting_losses(e.classifier));
    // The exponential loss's probability is expit(2 · raw): the 2 is folded into the leaves.
    const double scale = loss == "exponential" ? 2.0 : 1.0;
    p.decision_scale = 1.0 / scale;  // decision_function is the raw value without the 2
    const size_t K = margins(step, p, o);

    const double lr = step.finite("learning_rate");
    const JsonReader initv = step.need("init");
    std::vector<double> init;
    if (initv.is_array()) {
        // [K] or [[K]] (one row of _raw_predict_init).
        const bool nested = initv.size() == 1 && initv.value()[0].is_array();
        init = (nested ? initv[0] : initv).finite_numbers();
    } else {
        init.push_back(initv.finite());
    }
    if (init.size() != K)
        initv.invalid("has " + std::to_string(init.size()) + " values for " + std::to_string(K) + " outputs");

    const JsonReader stages = step.array("trees");
    if (stages.empty()) stages.invalid("is empty");
    auto& m = p.model;
    m.num_groups = static_cast<int32_t>(K);
    m.base_margin.clear();
    for (double b : init) m.base_margin.push_back(static_cast<float>(scale * b));
    m.trees.reserve(stages.size() * K);
    for (size_t si = 0; si < stages.size(); ++si) {
        check_interrupts();
        const JsonReader stage = stage_trees(stages, si, K);
        for (size_t k = 0; k < K; ++k) {
            const JsonReader tree = stage[k];
            const SkTree s = read_tree(tree, num_features, 1);
            m.trees.push_back(to_spec(tree, s, static_cast<int32_t>(k), num_features,
                                      [&](const std::vector<double>& v) { return scale * (lr * v[0]); }));
        }
    }
    p.objective = step.string("type") + ":" + loss;
}

// HistGradientBoosting's categorical features. A categorical node of TreePredictor.predict
// (_predictor.pyx, _predict_one_from_raw_data) sends x: NaN and x < 0 where missing values go;
// else with c = (uint8) x: left when c is in the node's raw_left_cat_bitsets, right when c is
// in the feature's known_cat_bitsets, else (a category not seen at fit) where missing values
// go. So one side is a set of known categories and the other everything else: with
// missing_go_to_left the node goes right exactly for S = known - left, else left exactly for
// S = left. Each distinct S becomes a 0/1 column (importers/tree_builder.hpp: floor, one_hot, sum
// over S; floor and not trunc so that -0.5 matches no category) and the node splits it at 0,
// children swapped when S is the left side. x >= 256 goes where missing values go (in
// scikit-learn the cast of such an x to uint8 is undefined behaviour: it wraps on x86).
struct HistCategories {
    std::vector<uint8_t> categorical;                     // per input feature
    std::vector<std::vector<int32_t>> known;              // per input feature: seen at fit
    std::vector<std::vector<std::vector<int32_t>>> sets;  // per input feature: distinct S
    std::vector<std::map<std::vector<int32_t>, size_t>> index;  // per input feature: S → k

    // The index of s among feature f's sets (added when new).
    size_t set_index(int32_t f, const std::vector<int32_t>& s) {
        const auto [it, added] = index[static_cast<size_t>(f)].emplace(s, sets[static_cast<size_t>(f)].size());
        if (added) sets[static_cast<size_t>(f)].push_back(s);
        return it->second;
    }
};

// The categories of one 256-bit bitset (8 uint32 words, bit b of word w is category 32w + b).
std::vector<int32_t> bitset_categories(const JsonReader& words) {
    if (!words.is_array() || words.size() != 8) words.invalid("must be an array of 8 uint32 words");
    std::vector<int32_t> cats;
    for (size_t w = 0; w < 8; ++w) {
        const int64_t bits = words[w].integer(0, UINT32_MAX);
        for (int b = 0; b < 32; ++b)
            if (bits >> b & 1) cats.push_back(static_cast<int32_t>(w * 32 + b));
    }
    return cats;
}

HistCategories read_hist_categories(const JsonReader& step, int32_t num_features) {
    HistCategories c;
    const size_t f = static_cast<size_t>(num_features);
    c.categorical.assign(f, 0);
    c.known.resize(f);
    c.sets.resize(f);
    c.index.resize(f);
    const auto flags = step.optional("is_categorical");
    if (!flags) return c;
    const JsonReader known = step.array("known_cat_bitsets");
    const JsonReader map = step.array("f_idx_map");
    if (flags->size() != f || map.size() != f)
        flags->invalid("and f_idx_map must have one entry per feature (" + std::to_string(f) + ")");
    const std::vector<int32_t> is_cat = flags->integers(0, 1);
    for (size_t j = 0; j < f; ++j) {
        if (!is_cat[j]) continue;
        c.categorical[j] = 1;
        const int64_t row = map[j].integer(0, static_cast<int64_t>(known.size()) - 1);
        c.known[j] = bitset_categories(known[static_cast<size_t>(row)]);
    }
    return c;
}

// One HistGradientBoosting TreePredictor's `nodes` (feature_idx, num_threshold,
// missing_go_to_left, left, right, is_leaf, value; with categorical splits is_categorical,
// bitset_idx and raw_left_cat_bitsets): leaves get left = right = -1 (their left/right fields
// are 0 in scikit-learn). A categorical split keeps its input feature in `feature` and the
// index of its set S in `category_set` (-1 at numeric splits).
struct HistTree {
    SkTree tree;
    std::vector<int32_t> category_set;
};

HistTree read_hist_tree(const JsonReader& t, int32_t num_features, HistCategories& cats) {
    const auto a = node_arrays(t, {"feature_idx", "num_threshold", "missing_go_to_left", "left", "right",
                                   "is_leaf", "value"});
    const size_t n = a[0].size();
    std::vector<int32_t> is_cat(n, 0);
    std::optional<JsonReader> bitset_idx, left_bitsets;
    if (auto cat = t.optional("is_categorical")) {
        is_cat = cat->integers(0, 1);
        if (is_cat.size() != n) cat->invalid("has " + std::to_string(is_cat.size()) + " entries, the tree " +
                                             std::to_string(n) + " nodes");
        bitset_idx = t.array("bitset_idx");
        left_bitsets = t.array("raw_left_cat_bitsets");
        if (bitset_idx->size() != n) bitset_idx->invalid("must have one entry per node");
    }
    HistTree h;
    SkTree& out = h.tree;
    out.left.assign(n, -1);
    out.right.assign(n, -1);
    out.feature.assign(n, 0);
    out.threshold.assign(n, 0.0f);
    out.leaf.resize(n);
    out.default_left.assign(n, 0);
    out.cover = node_covers(t, "count", n);
    h.category_set.assign(n, -1);
    const int64_t hi = static_cast<int64_t>(n) - 1;
    const std::vector<int32_t> is_leaf = a[5].integers(0, 1);
    for (size_t i = 0; i < n; ++i) {
        if (is_leaf[i]) continue;
        out.left[i] = static_cast<int32_t>(a[3][i].integer(1, hi));
        out.right[i] = static_cast<int32_t>(a[4][i].integer(1, hi));
    }
    walk_tree(t, out.left, out.right, [&](int32_t i) { out.leaf[i] = {a[6][i].finite()}; }, [&](int32_t i) {
        out.default_left[i] = static_cast<uint8_t>(a[2][i].integer(0, 1));
        if (!is_cat[i]) return read_split(out, i, a[0], a[1], num_features);
        const int32_t f = static_cast<int32_t>(a[0][i].integer(0, num_features - 1));
        if (!cats.categorical[f])
            a[0][i].invalid("is " + std::to_string(f) + ", a categorical split on a feature that is_categorical "
                            "does not mark");
        const int64_t b = (*bitset_idx)[i].integer(0, static_cast<int64_t>(left_bitsets->size()) - 1);
        const std::vector<int32_t> left = bitset_categories((*left_bitsets)[static_cast<size_t>(b)]);
        std::vector<int32_t> set = left;
        if (out.default_left[i]) {
            set.clear();
            const auto& known = cats.known[f];
            std::set_difference(known.begin(), known.end(), left.begin(), left.end(), std::back_inserter(set));
        }
        if (set.empty())
            (*bitset_idx)[i].invalid("names a split that sends every category seen at fit to one side");
        out.feature[i] = f;
        h.category_set[i] = static_cast<int32_t>(cats.set_index(f, set));
    });
    return h;
}

// Points the categorical splits of h at their set columns (the first after the num_features
// inputs, feature by feature in set order): "column <= 0" goes left, so the children swap
// where S is the left side (missing values go right).
void to_set_columns(HistTree& h, const std::vector<std::vector<int32_t>>& first_column) {
    SkTree& s = h.tree;
    for (size_t i = 0; i < s.left.size(); ++i) {
        if (h.category_set[i] < 0) continue;
        s.feature[i] = first_column[static_cast<size_t>(s.feature[i])][static_cast<size_t>(h.category_set[i])];
        s.threshold[i] = 0.0f;
        if (!s.default_left[i]) std::swap(s.left[i], s.right[i]);
        s.default_left[i] = 0;  // the column is never NaN
    }
}

void hist_gradient_boosting(const JsonReader& step, const Kind& e, int32_t num_features, spec::Pipeline& p) {
    const JsonReader lossv = step.need("loss");
    const Objective& o = find_loss(lossv, sklearn_hist_gradient_boosting_losses(e.classifier));
    const size_t K = margins(step, p, o);

    const JsonReader base = step.array("baseline");
    if (base.size() != K)
        base.invalid("has " + std::to_string(base.size()) + " values for " + std::to_string(K) + " outputs");
    auto& m = p.model;
    m.num_groups = static_cast<int32_t>(K);
    m.base_margin.clear();
    for (double b : base.finite_numbers()) m.base_margin.push_back(static_cast<float>(b));

    HistCategories cats = read_hist_categories(step, num_features);
    const JsonReader iterations = step.array("trees");
    if (iterations.empty()) iterations.invalid("is empty");
    std::vector<HistTree> read;
    read.reserve(iterations.size() * K);
    for (size_t it = 0; it < iterations.size(); ++it) {
        check_interrupts();
        const JsonReader trees = stage_trees(iterations, it, K);
        for (size_t k = 0; k < K; ++k) read.push_back(read_hist_tree(trees[k], num_features, cats));
    }

    // Categorical splits read set columns after the inputs: one concat step passes the inputs
    // through and appends each feature's set columns.
    int32_t width = num_features;
    std::vector<std::vector<int32_t>> first_column(static_cast<size_t>(num_features));
    spec::Step concat;
    for (int32_t f = 0; f < num_features; ++f) {
        const auto& sets = cats.sets[static_cast<size_t>(f)];
        if (sets.empty()) continue;
        for (size_t k = 0; k < sets.size(); ++k) first_column[static_cast<size_t>(f)].push_back(width++);
        concat.parts.push_back(category_set_part(f, sets, "floor"));
    }
    if (!concat.parts.empty()) {
        if (width > spec::kMaxFeatures)
            refuse(step, "categorical splits on " + std::to_string(width - num_features) +
                             " distinct category sets (at most " + std::to_string(spec::kMaxFeatures - num_features) +
                             " with " + std::to_string(num_features) + " inputs)");
        spec::Step::Part inputs;
        for (int32_t f = 0; f < num_features; ++f) inputs.columns.push_back(f);
        concat.parts.insert(concat.parts.begin(), std::move(inputs));
        concat.op = spec::Op::Concat;
        concat.params = nlohmann::json::object();
        p.steps.push_back(std::move(concat));
        m.num_features = width;
    }

    m.trees.reserve(read.size());
    for (size_t i = 0; i < read.size(); ++i) {
        check_interrupts();
        to_set_columns(read[i], first_column);
        const JsonReader tree = iterations[i / K][i % K];
        m.trees.push_back(to_spec(tree, read[i].tree, static_cast<int32_t>(i % K), width,
                                  [](const std::vector<double>& v) { return v[0]; }));
    }
    p.objective = step.string("type") + ":" + lossv.string();
}

// IsolationForest's c(n), the average path length of an unsuccessful BST search over n
// samples (_average_path_length).
double average_path_length(double n) {
    if (n <= 1.0) return 0.0;
    if (n == 2.0) return 1.0;
    constexpr double kEulerGamma = 0.57721566490153286061;
    return 2.0 * (std::log(n - 1.0) + kEulerGamma) - 2.0 * (n - 1.0) / n;
}

void isolation(const JsonReader& step, int32_t num_features, spec::Pipeline& p) {
    need_task(step, p, true);
    if (p.classes != std::vector<double>{-1.0, 1.0})
        step.invalid("classes must be [-1, 1] (outlier, inlier)");
    const JsonReader offsetv = step.need("offset");
    const double offset = offsetv.finite();
    if (!(offset < 0.0)) offsetv.invalid("must be negative (scores lie in [-1, 0))");
    const int64_t max_samples = step.integer("max_samples", 1, INT64_MAX / 2);
    const JsonReader trees = step.array("trees");
    if (trees.empty()) trees.invalid("is empty");

    const double denominator =
        static_cast<double>(trees.size()) * average_path_length(static_cast<double>(max_samples));
    auto& m = p.model;
    m.num_groups = 1;
    m.trees.reserve(trees.size());
    for (size_t ti = 0; ti < trees.size(); ++ti) {
        check_interrupts();
        const JsonReader tree = trees[ti];
        SkTree s = read_tree(tree, num_features, 1);
        const JsonReader ns = tree.array("n_node_samples");
        if (ns.size() != s.left.size())
            ns.invalid("has " + std::to_string(ns.size()) + " entries, the tree has " + std::to_string(s.left.size()) +
                       " nodes");
        // Depth of every node (parents come before children in a walk from the root).
        std::vector<int32_t> depth(s.left.size(), 0);
        std::vector<int32_t> stack{0};
        while (!stack.empty()) {
            const int32_t i = stack.back();
            stack.pop_back();
            if (s.left[i] == -1) {
                const double n = static_cast<double>(ns[i].integer(0, INT64_MAX / 2));
                // With denominator 0 sklearn's ratio is 1 for every row: leaves 0, base below.
                s.leaf[i] = {denominator == 0.0 ? 0.0 : (depth[i] + average_path_length(n)) / denominator};
                continue;
            }
            for (int32_t c : {s.left[i], s.right[i]}) {
                depth[c] = depth[i] + 1;
                stack.push_back(c);
            }
        }
        m.trees.push_back(to_spec(tree, s, 0, num_features, [](const std::vector<double>& v) { return v[0]; }));
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
    p.score_offset = offset;  // score_samples / decision_function (compiler/outputs.cpp)
    p.objective = step.string("type");
}

// Every tree model starts from an empty ensemble over the vector it reads, compared with <=.
void import_trees(const JsonReader& step, const Kind& e, int32_t num_features, spec::Pipeline& p) {
    if (num_features < 0) step.invalid("num_features is negative");
    p.model = spec::TreeEnsemble{};
    p.model.num_features = num_features;
    p.model.comparison = spec::Comparison::LessEqual;
    switch (e.family) {
        case Family::Forest: forest(step, e, num_features, p); break;
        case Family::GradientBoosting: gradient_boosting(step, e, num_features, p); break;
        case Family::HistGradientBoosting: return hist_gradient_boosting(step, e, num_features, p);
        case Family::IsolationForest: return isolation(step, num_features, p);  // keeps NaN-goes-right for now
    }
    // No rule for a missing value: a NaN in an input the trees read leaves the row without a margin.
    p.model.inputs_without_missing_rule = p.model.read_inputs();
}

}  // namespace

void decision_tree_classifier(const JsonReader& s, int32_t f, spec::Pipeline& p) {
    import_trees(s, {Family::Forest, true, false}, f, p);
}
void decision_tree_regressor(const JsonReader& s, int32_t f, spec::Pipeline& p) {
    import_trees(s, {Family::Forest, false, false}, f, p);
}
void extra_tree_classifier(const JsonReader& s, int32_t f, spec::Pipeline& p) {
    import_trees(s, {Family::Forest, true, false}, f, p);
}
void extra_tree_regressor(const JsonReader& s, int32_t f, spec::Pipeline& p) {
    import_trees(s, {Family::Forest, false, false}, f, p);
}
void random_forest_classifier(const JsonReader& s, int32_t f, spec::Pipeline& p) {
    import_trees(s, {Family::Forest, true, true}, f, p);
}
void random_forest_regressor(const JsonReader& s, int32_t f, spec::Pipeline& p) {
    import_trees(s, {Family::Forest, false, true}, f, p);
}
void extra_trees_classifier(const JsonReader& s, int32_t f, spec::Pipeline& p) {
    import_trees(s, {Family::Forest, true, true}, f, p);
}
void extra_trees_regressor(const JsonReader& s, int32_t f, spec::Pipeline& p) {
    import_trees(s, {Family::Forest, false, true}, f, p);
}
void gradient_boosting_classifier(const JsonReader& s, int32_t f, spec::Pipeline& p) {
    import_trees(s, {Family::GradientBoosting, true, false}, f, p);
}
void gradient_boosting_regressor(const JsonReader& s, int32_t f, spec::Pipeline& p) {
    import_trees(s, {Family::GradientBoosting, false, false}, f, p);
}
void hist_gradient_boosting_classifier(const JsonReader& s, int32_t f, spec::Pipeline& p) {
    import_trees(s, {Family::HistGradientBoosting, true, false}, f, p);
}
void hist_gradient_boosting_regressor(const JsonReader& s, int32_t f, spec::Pipeline& p) {
    import_trees(s, {Family::HistGradientBoosting, false, false}, f, p);
}
void isolation_forest(const JsonReader& s, int32_t f, spec::Pipeline& p) {
    import_trees(s, {Family::IsolationForest, true, false}, f, p);
}

}  // namespace pg_predict::importers::sklearn
