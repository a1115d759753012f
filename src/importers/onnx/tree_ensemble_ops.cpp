// TreeEnsembleClassifier / TreeEnsembleRegressor → the spec's tree ensemble.
//
// ONNX lists the nodes of all trees in parallel arrays (nodes_treeids, nodes_nodeids, modes,
// features, thresholds, true/false children) and the leaf weights in another set (per class /
// target). Each ONNX tree becomes one spec tree per output column its leaves add to. Every
// branch mode maps exactly onto the ensemble's one comparison, because inputs are float32 and
// thresholds are float32 (the ONNX standard's types): with c the comparison chosen (Less when
// any node is BRANCH_LT, else LessEqual), x < t ⇔ x <= prev(t), x <= t ⇔ x < next(t), GTE / GT
// are LT / LEQ with the children swapped, and EQ (NEQ) is two nodes, prev(t) < x <= t, with the
// false (true) subtree copied. A missing input goes where ONNX Runtime sends it: to the true
// child when missing_value_tracks_true, else where the comparison of NaN sends it (false, but
// true for NEQ). A binary classifier whose leaves feed one class has one margin (ONNX Runtime's
// binary case). aggregate_function SUM and AVERAGE (weights divided by the number of trees)
// with the post transforms NONE, LOGISTIC (one margin: [1 - p, p]) and SOFTMAX are the
// ensemble's own; MIN and MAX (each tree its own outputs, then their extreme) and the post
// transforms SOFTMAX_ZERO and PROBIT take the general path (general_post_transform).
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "graph.hpp"
#include "pg_predict/importers/tree_builder.hpp"
#include "pg_predict/spec/limits.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::importers::onnx_import {

namespace {

using nlohmann::json;
using Kind = Value::Kind;

enum class Mode { Leaf, Leq, Lt, Gte, Gt, Eq, Neq };

Mode parse_mode(const Node& n, const std::string& s) {
    if (s == "LEAF") return Mode::Leaf;
    if (s == "BRANCH_LEQ") return Mode::Leq;
    if (s == "BRANCH_LT") return Mode::Lt;
    if (s == "BRANCH_GTE") return Mode::Gte;
    if (s == "BRANCH_GT") return Mode::Gt;
    if (s == "BRANCH_EQ") return Mode::Eq;
    if (s == "BRANCH_NEQ") return Mode::Neq;
    n.bad("node mode \"" + s + "\" is none of LEAF, BRANCH_LEQ, BRANCH_LT, BRANCH_GTE, BRANCH_GT, BRANCH_EQ, BRANCH_NEQ");
}

struct OnnxNode {
    Mode mode = Mode::Leaf;
    int64_t feature = 0;
    float threshold = 0;
    int64_t yes = -1, no = -1;      // local indices of the true / false children
    bool missing_true = false;
    std::map<int64_t, double> weights;  // output column → summed leaf weight
};

struct OnnxTree {
    int64_t id = 0;
    std::vector<OnnxNode> nodes;
    std::map<int64_t, size_t> local;  // nodes_nodeids → index in nodes
};

float prev(float t) { return std::nextafter(t, -INFINITY); }
float next(float t) { return std::nextafter(t, INFINITY); }

// Builds the spec tree of column `column` from ONNX tree `t` without recursion.
// ONNX tree t as a spec tree whose leaves hold their weights for output `column`, adding to
// the ensemble's `group`.
spec::Tree build(const Node& n, const OnnxTree& t, size_t root, int64_t column, int32_t group, spec::Comparison cmp,
                 float scale) {
    spec::Tree out;
    out.group = group;
    auto add = [&]() {
        out.left.push_back(-1);
        out.right.push_back(-1);
        out.feature.push_back(0);
        out.threshold.push_back(0);
        out.default_left.push_back(0);
        out.value.push_back(0);
        if (static_cast<int64_t>(out.left.size()) > spec::kMaxTreeNodes)
            n.bad("tree " + std::to_string(t.id) + " has more than " + std::to_string(spec::kMaxTreeNodes) +
                  " nodes (BRANCH_EQ / BRANCH_NEQ nodes copy a subtree each)");
        return static_cast<int32_t>(out.left.size() - 1);
    };
    // Work: ONNX node to emit at spec node `slot`.
    std::vector<std::pair<size_t, int32_t>> work{{root, add()}};
    while (!work.empty()) {
        auto [i, slot] = work.back();
        work.pop_back();
        const OnnxNode& o = t.nodes[i];
        const size_t s = static_cast<size_t>(slot);
        if (o.mode == Mode::Leaf) {
            auto w = o.weights.find(column);
            out.value[s] = static_cast<float>((w == o.weights.end() ? 0.0 : w->second) * scale);
            continue;
        }
        const bool nan_true = o.missing_true || o.mode == Mode::Neq;
        const size_t yes = static_cast<size_t>(o.yes), no = static_cast<size_t>(o.no);
        // Spec node `node_slot` splits on o's feature at `thr` into two new nodes (left, right).
        auto split = [&](size_t node_slot, float thr, bool nan_left) {
            out.feature[node_slot] = static_cast<int32_t>(o.feature);
            out.threshold[node_slot] = thr;
            out.default_left[node_slot] = nan_left ? 1 : 0;
            const int32_t l = add(), r = add();
            out.left[node_slot] = l;
            out.right[node_slot] = r;
            return std::pair<int32_t, int32_t>{l, r};
        };
        auto branch = [&](size_t node_slot, float thr, size_t left, size_t right, bool nan_left) {
            const auto [l, r] = split(node_slot, thr, nan_left);
            work.push_back({left, l});
            work.push_back({right, r});
        };
        const bool less = cmp == spec::Comparison::Less;
        const float t0 = o.threshold;
        switch (o.mode) {
            case Mode::Leq: branch(s, less ? next(t0) : t0, yes, no, nan_true); break;
            case Mode::Lt: branch(s, less ? t0 : prev(t0), yes, no, nan_true); break;
            case Mode::Gt: branch(s, less ? next(t0) : t0, no, yes, !nan_true); break;   // !(x <= t)
            case Mode::Gte: branch(s, less ? t0 : prev(t0), no, yes, !nan_true); break;  // !(x < t)
            case Mode::Eq: case Mode::Neq: {
                // x == t ⇔ not (x below t) and (x <= t): the first node sends "below" to the
                // unequal side, the second decides between t and above.
                const size_t equal = o.mode == Mode::Eq ? yes : no, unequal = o.mode == Mode::Eq ? no : yes;
                const bool nan_equal = o.mode == Mode::Eq ? nan_true : !nan_true;
                const auto [below, second] = split(s, less ? t0 : prev(t0), !nan_equal);
                work.push_back({unequal, below});
                branch(static_cast<size_t>(second), less ? next(t0) : t0, equal, unequal, nan_equal);
                break;
            }
            case Mode::Leaf: break;
        }
    }
    return out;
}

std::vector<OnnxTree> read_trees(const Node& n, int64_t width, const char* prefix, int64_t columns) {
    const std::vector<int64_t> tree_ids = n.integers("nodes_treeids");
    const std::vector<int64_t> node_ids = n.integers("nodes_nodeids");
    const std::vector<int64_t> features = n.integers("nodes_featureids");
    const std::vector<std::string> modes = n.texts("nodes_modes");
    std::vector<double> values = n.numbers("nodes_values", false);
    // Double thresholds (ai.onnx.ml 3) become the float32 ones that split every float32 input
    // the same way (importers/tree_builder.hpp), below per mode.
    const bool doubles = values.empty() && n.has("nodes_values_as_tensor");
    if (doubles) values = n.tensor("nodes_values_as_tensor").values;
    const std::vector<int64_t> yes = n.integers("nodes_truenodeids");
    const std::vector<int64_t> no = n.integers("nodes_falsenodeids");
    std::vector<int64_t> missing = n.integers("nodes_missing_value_tracks_true", false);
    const size_t count = tree_ids.size();
    if (count == 0) n.bad("has no nodes");
    if (static_cast<int64_t>(count) > spec::kMaxTotalNodes) n.bad("has too many nodes");
    for (auto [name, size] : {std::pair<const char*, size_t>{"nodes_nodeids", node_ids.size()}, {"nodes_featureids", features.size()},
                              {"nodes_modes", modes.size()}, {"nodes_values", values.size()}, {"nodes_truenodeids", yes.size()},
                              {"nodes_falsenodeids", no.size()}})
        if (size != count) n.bad(std::string(name) + " has " + std::to_string(size) + " entries, nodes_treeids " + std::to_string(count));
    if (missing.empty()) missing.assign(count, 0);
    if (missing.size() != count) n.bad("nodes_missing_value_tracks_true has " + std::to_string(missing.size()) + " entries for " + std::to_string(count) + " nodes");

    std::vector<OnnxTree> trees;
    std::map<int64_t, size_t> tree_index;
    for (size_t i = 0; i < count; ++i) {
        auto [it, added] = tree_index.emplace(tree_ids[i], trees.size());
        if (added) {
            if (static_cast<int64_t>(trees.size()) >= spec::kMaxTrees) n.bad("has too many trees");
            trees.emplace_back();
            trees.back().id = tree_ids[i];
        }
        OnnxTree& t = trees[it->second];
        if (!t.local.emplace(node_ids[i], t.nodes.size()).second)
            n.bad("tree " + std::to_string(tree_ids[i]) + " has node id " + std::to_string(node_ids[i]) + " twice");
        OnnxNode o;
        o.mode = parse_mode(n, modes[i]);
        if (o.mode != Mode::Leaf) {
            if (features[i] < 0 || features[i] >= width)
                n.bad("tree " + std::to_string(tree_ids[i]) + " node " + std::to_string(node_ids[i]) + " reads feature " +
                      std::to_string(features[i]) + " of an input of " + std::to_string(width) + " columns");
            o.feature = features[i];
            const double t = values[i];
            if (!doubles) o.threshold = static_cast<float>(t);
            else if (o.mode == Mode::Leq || o.mode == Mode::Gt) o.threshold = round_down_to_float(t);
            else if (o.mode == Mode::Lt || o.mode == Mode::Gte) o.threshold = round_up_to_float(t);
            else if (static_cast<double>(static_cast<float>(t)) == t) o.threshold = static_cast<float>(t);
            else n.unsupported("BRANCH_EQ / BRANCH_NEQ at a double threshold no float32 input can equal");
            if (std::isnan(o.threshold)) n.bad("tree " + std::to_string(tree_ids[i]) + " node " + std::to_string(node_ids[i]) + " has a NaN threshold");
            o.missing_true = missing[i] != 0;
        }
        t.nodes.push_back(o);
    }
    // Children by node id → local index.
    size_t k = 0;
    for (size_t i = 0; i < count; ++i) {
        OnnxTree& t = trees[tree_index.at(tree_ids[i])];
        OnnxNode& o = t.nodes[t.local.at(node_ids[i])];
        (void)k;
        if (o.mode == Mode::Leaf) continue;
        for (auto [child, id] : {std::pair<int64_t*, int64_t>{&o.yes, yes[i]}, {&o.no, no[i]}}) {
            auto c = t.local.find(id);
            if (c == t.local.end())
                n.bad("tree " + std::to_string(t.id) + " node " + std::to_string(node_ids[i]) + " has child " + std::to_string(id) +
                      ", which is no node of the tree");
            *child = static_cast<int64_t>(c->second);
        }
    }
    // Leaf weights.
    const std::string p = prefix;
    const std::vector<int64_t> w_trees = n.integers((p + "_treeids").c_str());
    const std::vector<int64_t> w_nodes = n.integers((p + "_nodeids").c_str());
    const std::vector<int64_t> w_ids = n.integers((p + "_ids").c_str());
    const std::vector<double> w = n.numbers((p + "_weights").c_str());
    if (w_nodes.size() != w_trees.size() || w_ids.size() != w_trees.size() || w.size() != w_trees.size())
        n.bad(p + "_treeids, _nodeids, _ids and _weights have different lengths");
    for (size_t i = 0; i < w.size(); ++i) {
        auto t = tree_index.find(w_trees[i]);
        if (t == tree_index.end()) n.bad(p + "_treeids names tree " + std::to_string(w_trees[i]) + ", which has no nodes");
        OnnxTree& tree = trees[t->second];
        auto node = tree.local.find(w_nodes[i]);
        if (node == tree.local.end())
            n.bad(p + "_nodeids names node " + std::to_string(w_nodes[i]) + " of tree " + std::to_string(tree.id) + ", which does not exist");
        OnnxNode& o = tree.nodes[node->second];
        if (o.mode != Mode::Leaf) n.bad("tree " + std::to_string(tree.id) + " node " + std::to_string(w_nodes[i]) + " has a weight but is no leaf");
        if (w_ids[i] < 0 || w_ids[i] >= columns)
            n.bad(p + "_ids has " + std::to_string(w_ids[i]) + ", out of range for " + std::to_string(columns) + " outputs");
        if (!std::isfinite(w[i])) n.bad("leaf weights must be finite");
        o.weights[w_ids[i]] += w[i];
    }
    return trees;
}

// The root of each tree (the node no other names as a child); each node has at most one parent
// and every node is reached from the root, so the tree has no cycle.
size_t root_of(const Node& n, const OnnxTree& t) {
    std::vector<int> parents(t.nodes.size(), 0);
    for (const OnnxNode& o : t.nodes)
        if (o.mode != Mode::Leaf) {
            ++parents[static_cast<size_t>(o.yes)];
            ++parents[static_cast<size_t>(o.no)];
        }
    size_t root = SIZE_MAX;
    for (size_t i = 0; i < parents.size(); ++i) {
        if (parents[i] > 1) n.bad("tree " + std::to_string(t.id) + ": a node is the child of two nodes (a cycle or a shared subtree)");
        if (parents[i] == 0) {
            if (root != SIZE_MAX) n.bad("tree " + std::to_string(t.id) + " has two roots");
            root = i;
        }
    }
    if (root == SIZE_MAX) n.bad("tree " + std::to_string(t.id) + " has no root (its nodes form a cycle)");
    size_t reached = 0;
    std::vector<size_t> todo{root};
    while (!todo.empty()) {
        const OnnxNode& o = t.nodes[todo.back()];
        todo.pop_back();
        if (++reached > t.nodes.size()) break;
        if (o.mode != Mode::Leaf) {
            todo.push_back(static_cast<size_t>(o.yes));
            todo.push_back(static_cast<size_t>(o.no));
        }
    }
    if (reached != t.nodes.size()) n.bad("tree " + std::to_string(t.id) + " has nodes that form a cycle");
    return root;
}

bool extreme_aggregate(const Node& n) {
    const std::string agg = n.text("aggregate_function", "SUM");
    if (agg != "SUM" && agg != "AVERAGE" && agg != "MIN" && agg != "MAX")
        n.bad("aggregate_function \"" + agg + "\" is none of SUM, AVERAGE, MIN, MAX");
    return agg == "MIN" || agg == "MAX";
}

// The spec's ensemble of the ONNX trees: output column c of the node adds to group
// column_of[c] (skipped when negative). For a MIN / MAX aggregate each tree scores groups of
// its own (tree t's column c is group t * groups + column_of[c]), reduced by extreme_over_trees.
spec::TreeEnsemble ensemble(const Node& n, const std::vector<OnnxTree>& trees, const std::vector<int64_t>& column_of,
                            int32_t groups, int64_t width) {
    spec::TreeEnsemble e;
    const bool extreme = extreme_aggregate(n);
    if (extreme && static_cast<int64_t>(trees.size()) * groups > spec::kMaxGroups)
        n.unsupported("aggregate_function " + n.text("aggregate_function") + " over more than " +
                      std::to_string(spec::kMaxGroups) + " tree outputs");
    e.num_features = static_cast<int32_t>(width);
    e.num_groups = extreme ? static_cast<int32_t>(trees.size()) * groups : groups;
    bool lt = false;
    for (const auto& t : trees)
        for (const auto& o : t.nodes) lt = lt || o.mode == Mode::Lt || o.mode == Mode::Gte;
    e.comparison = lt ? spec::Comparison::Less : spec::Comparison::LessEqual;
    const float scale = n.text("aggregate_function", "SUM") == "AVERAGE" ? 1.0f / static_cast<float>(trees.size()) : 1.0f;
    for (size_t i = 0; i < trees.size(); ++i) {
        const OnnxTree& t = trees[i];
        const size_t root = root_of(n, t);
        std::set<int64_t> used;
        for (const auto& o : t.nodes)
            for (const auto& w : o.weights) used.insert(w.first);
        for (int64_t c : used) {
            if (column_of[static_cast<size_t>(c)] < 0) continue;
            const int64_t group = column_of[static_cast<size_t>(c)] + (extreme ? static_cast<int64_t>(i) * groups : 0);
            e.trees.push_back(build(n, t, root, c, static_cast<int32_t>(group), e.comparison, scale));
        }
    }
    if (!extreme) e.base_margin.assign(static_cast<size_t>(groups), 0.0f);
    else e.base_margin.assign(static_cast<size_t>(e.num_groups), 0.0f);
    return e;
}

std::vector<float> base_values(const Node& n, size_t want) {
    const std::vector<double> b = n.numbers("base_values", false);
    if (n.has("base_values_as_tensor")) n.unsupported("base_values_as_tensor");
    std::vector<float> out(want, 0.0f);
    if (b.empty()) return out;
    if (b.size() != want) n.bad("has " + std::to_string(b.size()) + " base_values for " + std::to_string(want) + " outputs");
    for (size_t i = 0; i < want; ++i) out[i] = static_cast<float>(b[i]);
    return out;
}

// A MIN / MAX aggregate on the general path: the ensemble (each tree its own groups) read as a
// tensor, each output's extreme over the trees (a tensor reduction), plus its base value.
// ONNX Runtime leaves a tree out of an output none of its leaves weighs; here every leaf of
// every tree must weigh every output, or the import is refused.
Row extreme_over_trees(Node& n, const Row& x, const std::vector<OnnxTree>& trees, const std::vector<int64_t>& column_of,
                       int32_t groups, const std::vector<float>& base) {
    for (const auto& t : trees)
        for (const auto& o : t.nodes) {
            if (o.mode != Mode::Leaf) continue;
            for (size_t c = 0; c < column_of.size(); ++c)
                if (column_of[c] >= 0 && !o.weights.count(static_cast<int64_t>(c)))
                    n.unsupported("aggregate_function " + n.text("aggregate_function") + " where a leaf of tree " +
                                  std::to_string(t.id) + " has no weight for output " + std::to_string(c));
        }
    const std::string agg = n.text("aggregate_function");
    n.general("aggregate_function " + agg + ": each tree's outputs, then their " + (agg == "MIN" ? "minimum" : "maximum"));
    Value per_tree;
    per_tree.kind = Kind::Scores;
    per_tree.regression = true;
    Scores& s = per_tree.scores;
    s.margin = x;
    s.trees = true;
    s.ensemble = ensemble(n, trees, column_of, groups, x.width());
    s.groups = s.columns = s.ensemble.num_groups;
    s.transform = spec::PostTransform::Identity;
    const Row all = value_row(n, per_tree, "the trees' outputs");
    const int64_t t = static_cast<int64_t>(trees.size());
    std::vector<int32_t> by_output;  // output c's value in every tree, consecutively
    for (int32_t c = 0; c < groups; ++c)
        for (int64_t i = 0; i < t; ++i) by_output.push_back(static_cast<int32_t>(i * groups + c));
    json reduce = {{"function", agg == "MIN" ? "reduce_min" : "reduce_max"}, {"operands", json::array({json(by_output)})}, {"group", t}};
    const Row extreme = then(all, make_step("tensor", reduce), {groups});
    std::vector<int32_t> own, constant;
    std::vector<double> values;
    for (int32_t c = 0; c < groups; ++c) {
        own.push_back(c);
        constant.push_back(groups + c);
        values.push_back(base[static_cast<size_t>(c)]);
    }
    json add = {{"function", "add"}, {"operands", {own, constant}}, {"constants", spec::numbers_to_json(values)}};
    return then(extreme, make_step("tensor", add), {groups});
}

void tree_regressor(Node& n) {
    const Row& x = n.row_input(0);
    if (x.dims.size() != 1) n.unsupported("a tree ensemble over a tensor other than [N, F]");
    const int64_t targets = n.integer("n_targets", 1);
    if (targets < 1 || targets > spec::kMaxGroups) n.bad("n_targets must be between 1 and " + std::to_string(spec::kMaxGroups));
    const auto trees = read_trees(n, x.width(), "target", targets);
    Value v;
    v.kind = Kind::Scores;
    v.regression = true;
    Scores& s = v.scores;
    s.margin = x;
    s.trees = true;
    std::vector<int64_t> group_of_target;  // target t is the model's group t (multi-output)
    for (int64_t t = 0; t < targets; ++t) group_of_target.push_back(t);
    const std::vector<float> base = base_values(n, static_cast<size_t>(targets));
    const std::string post = n.text("post_transform", "NONE");
    if (targets == 1 && (post == "SOFTMAX" || post == "SOFTMAX_ZERO"))  // ONNX Runtime ignores it
        n.unsupported("post_transform " + post + " of one target (the softmax of one value is 1)");
    if (extreme_aggregate(n) || !(post == "NONE" || (post == "LOGISTIC" && targets == 1))) {
        // The general path: the raw scores as a tensor, then the post transform.
        Row raw;
        if (extreme_aggregate(n)) {
            raw = extreme_over_trees(n, x, trees, group_of_target, static_cast<int32_t>(targets), base);
        } else {
            s.ensemble = ensemble(n, trees, group_of_target, static_cast<int32_t>(targets), x.width());
            s.ensemble.base_margin = base;
            s.groups = s.columns = static_cast<int32_t>(targets);
            raw = value_row(n, v, "scores");
        }
        Value out = row_value(n.graph, general_post_transform(n, raw, post));
        out.regression = true;
        n.set_output(0, std::move(out));
        return;
    }
    s.ensemble = ensemble(n, trees, group_of_target, static_cast<int32_t>(targets), x.width());
    s.ensemble.base_margin = base;
    s.groups = static_cast<int32_t>(targets);
    s.columns = static_cast<int32_t>(targets);
    s.transform = post == "NONE" ? spec::PostTransform::Identity : spec::PostTransform::Logistic;
    n.set_output(0, v);
}

void tree_classifier(Node& n) {
    const Row& x = n.row_input(0);
    if (x.dims.size() != 1) n.unsupported("a tree ensemble over a tensor other than [N, F]");
    const ClassLabels labels = read_class_labels(n, "classlabels_int64s");
    const std::vector<double>& classes = labels.classes;
    const size_t k = classes.size();
    if (k < 2) n.bad("needs at least two classes");
    if (static_cast<int64_t>(k) > spec::kMaxGroups) n.bad("has too many classes");
    const auto trees = read_trees(n, x.width(), "class", static_cast<int64_t>(k));
    std::set<int64_t> used;
    bool positive = true;
    for (const auto& t : trees)
        for (const auto& o : t.nodes)
            for (const auto& w : o.weights) {
                used.insert(w.first);
                positive = positive && w.second >= 0;
            }
    const std::string post = n.text("post_transform", "NONE");
    Value v;
    v.kind = Kind::Scores;
    Scores& s = v.scores;
    s.margin = x;
    s.trees = true;
    // Binary with the leaves of one class: one margin, the positive class's.
    const bool one_margin = k == 2 && used.size() == 1;
    std::vector<int64_t> column_of(k);
    for (size_t c = 0; c < k; ++c) column_of[c] = one_margin ? 0 : static_cast<int64_t>(c);
    s.groups = one_margin ? 1 : static_cast<int32_t>(k);
    s.columns = static_cast<int32_t>(k);
    s.ensemble = ensemble(n, trees, column_of, s.groups, x.width());
    std::vector<float> base = base_values(n, n.numbers("base_values", false).size() == 1 && one_margin ? 1 : k);
    if (one_margin && base.size() == 2) base = {base[static_cast<size_t>(*used.begin())]};
    s.ensemble.base_margin = base;
    // ONNX Runtime's binary case ignores SOFTMAX and SOFTMAX_ZERO.
    const std::string how = one_margin && (post == "SOFTMAX" || post == "SOFTMAX_ZERO") ? "NONE" : post;
    const bool extreme = extreme_aggregate(n);
    if (extreme || !(how == "NONE" || (how == "LOGISTIC" && one_margin) || (how == "SOFTMAX" && !one_margin))) {
        // The general path: the raw scores as a tensor, then the post transform.
        if (one_margin)
            n.unsupported((extreme ? "aggregate_function " + n.text("aggregate_function") : "post_transform " + post) +
                          " of a binary classifier with one margin");
        s.transform = spec::PostTransform::Identity;
        const Row raw = extreme ? extreme_over_trees(n, x, trees, column_of, s.groups, base) : value_row(n, v, "scores");
        Value out = row_value(n.graph, general_post_transform(n, raw, how), how == "NONE" ? positive : how != "PROBIT");
        n.set_output(0, classifier_label(n, out, labels, "scores"));
        n.set_output(1, out);
        return;
    }
    if (how == "NONE") {
        // ONNX Runtime's binary case: [1 - s, s] for positive weights, else [-s, s].
        s.transform = !one_margin ? spec::PostTransform::Identity
                      : positive  ? spec::PostTransform::Complement
                                  : spec::PostTransform::TwoSided;
        v.probabilities = positive;
    } else if (how == "LOGISTIC") {
        s.transform = spec::PostTransform::Logistic;
        v.probabilities = true;
    } else {
        s.transform = spec::PostTransform::Softmax;
        v.probabilities = true;
    }
    n.set_output(0, classifier_label(n, v, labels, "scores"));
    n.set_output(1, v);
}

}  // namespace

void add_tree_ops(std::map<std::string, Handler>& t) {
    t["ai.onnx.ml:TreeEnsembleClassifier"] = tree_classifier;
    t["ai.onnx.ml:TreeEnsembleRegressor"] = tree_regressor;
}

}  // namespace pg_predict::importers::onnx_import
