// XGBoost JSON model (Booster.save_model("m.json")) → pipeline spec.
//
// One reader for the 1.x and 2.x/3.x layouts. What differs between them, and how it is read:
//  - learner_model_param.base_score: "5E-1" (1.x, 2.0) or a bracketed vector "[5E-1]" /
//    "[a,b,c]" (3.1+, one value per output group). A plain JSON number is accepted too.
//  - tree_param.size_leaf_vector: "0" in 1.x, "1" in 2.x for scalar leaves; > 1 means
//    vector-leaf trees (multi_strategy = multi_output_tree), which we reject.
//  - num_target (> 1: multi-target regression) and multi_strategy: rejected unless scalar.
//  - gbtree model: 2.x adds iteration_indptr and 3.1 a "cats" encoder; both only matter for
//    slicing or categorical data and are not needed here.
//  - trees carry split_type / categories* (1.6+); any categorical split is rejected.
// Dart is supported exactly: at predict time XGBoost adds fl(leaf * weight_drop[tree]) per
// tree, so the weights are folded into the leaves in float32.
//
// Trees may hold deleted nodes (num_deleted > 0 after pruning): only the nodes reachable from
// the root are kept, renumbered in their original order.
//
// best_iteration (learner.attributes) is ignored on purpose: Booster.predict in 1.7 uses every
// tree unless given an iteration_range (the sklearn wrapper does pass best_iteration).
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pg_predict/common/interrupt.hpp"
#include "pg_predict/common/error.hpp"
#include "pg_predict/importers/import.hpp"
#include "pg_predict/importers/trees.hpp"
#include "pg_predict/spec/limits.hpp"

namespace pg_predict::importers {

namespace {

using nlohmann::json;
using spec::PostTransform;
using spec::Task;

// --- field access: every complaint names the JSON path ------------------------------------

[[noreturn]] void bad(const std::string& path, const std::string& what) {
    fail(ErrorCategory::InvalidModel, "XGBoost model: \"" + path + "\" " + what);
}

[[noreturn]] void unsupported(const std::string& what) {
    fail(ErrorCategory::Unsupported, "XGBoost model: " + what);
}

std::string sub(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
}
std::string idx(const std::string& path, size_t i) {
    return path + "[" + std::to_string(i) + "]";
}

const json* find(const json& obj, const char* key) {
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
}

const json& need(const json& obj, const std::string& path, const char* key) {
    const json* v = find(obj, key);
    if (!v) bad(sub(path, key), "is missing");
    return *v;
}

const json& need_object(const json& obj, const std::string& path, const char* key) {
    const json& v = need(obj, path, key);
    if (!v.is_object()) bad(sub(path, key), "must be an object");
    return v;
}

const json& need_array(const json& obj, const std::string& path, const char* key) {
    const json& v = need(obj, path, key);
    if (!v.is_array()) bad(sub(path, key), "must be an array");
    return v;
}

std::string need_string(const json& obj, const std::string& path, const char* key) {
    const json& v = need(obj, path, key);
    if (!v.is_string()) bad(sub(path, key), "must be a string");
    return v.get<std::string>();
}

// XGBoost writes its parameters as strings ("3", "5E-1"); hand-made documents often use
// numbers. Both are taken.
int64_t int_param(const json& v, const std::string& path) {
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_string()) {
        const std::string& s = v.get_ref<const std::string&>();
        char* end = nullptr;
        errno = 0;
        long long i = std::strtoll(s.c_str(), &end, 10);
        if (!s.empty() && *end == '\0' && errno == 0) return i;
    }
    bad(path, "must be an integer (or a string holding one)");
}

float float_token(const std::string& s, const std::string& path) {
    // strtof, not strtod: XGBoost parses its float parameters straight to float32.
    char* end = nullptr;
    errno = 0;
    float f = std::strtof(s.c_str(), &end);
    if (s.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(f))
        bad(path, "must be a finite number, got \"" + s + "\"");
    return f;
}

int32_t int_item(const json& v, const std::string& path, int64_t lo, int64_t hi) {
    if (!v.is_number_integer()) bad(path, "must be an integer");
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi))
        bad(path, "is out of range");
    int64_t i = v.get<int64_t>();
    if (i < lo || i > hi) bad(path, "is out of range");
    return static_cast<int32_t>(i);
}

std::vector<int32_t> int_array(const json& obj, const std::string& path, const char* key,
                               int64_t lo, int64_t hi) {
    const json& a = need_array(obj, path, key);
    std::vector<int32_t> out;
    out.reserve(a.size());
    for (size_t i = 0; i < a.size(); ++i) out.push_back(int_item(a[i], idx(sub(path, key), i), lo, hi));
    return out;
}

std::vector<float> float_array(const json& obj, const std::string& path, const char* key) {
    const json& a = need_array(obj, path, key);
    std::vector<float> out;
    out.reserve(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
        if (!a[i].is_number()) bad(idx(sub(path, key), i), "must be a number");
        out.push_back(static_cast<float>(a[i].get<double>()));
    }
    return out;
}

// default_left is 0/1 in JSON files and may come out of UBJSON converters as booleans.
std::vector<uint8_t> flag_array(const json& obj, const std::string& path, const char* key) {
    const json& a = need_array(obj, path, key);
    std::vector<uint8_t> out;
    out.reserve(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
        if (a[i].is_boolean()) out.push_back(a[i].get<bool>());
        else out.push_back(static_cast<uint8_t>(int_item(a[i], idx(sub(path, key), i), 0, 1)));
    }
    return out;
}

// --- objectives: trees.hpp's table and base-score link ------------------------------------

std::vector<float> base_scores(const json& v, const std::string& path) {
    if (v.is_number()) return {static_cast<float>(v.get<double>())};
    if (!v.is_string()) bad(path, "must be a string or a number");
    std::string s = v.get<std::string>();
    if (s.empty() || s.front() != '[') return {float_token(s, path)};
    if (s.back() != ']') bad(path, "has an unterminated \"[\"");
    std::vector<float> out;
    std::string body = s.substr(1, s.size() - 2);
    size_t start = 0;
    while (true) {
        size_t comma = body.find(',', start);
        out.push_back(float_token(body.substr(start, comma - start), path));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

// --- trees --------------------------------------------------------------------------------

spec::Tree read_tree(const json& t, const std::string& path, size_t index, int32_t group,
                     float weight, int32_t num_features) {
    const std::string name = "tree " + std::to_string(index);
    if (!t.is_object()) bad(path, "must be an object");

    if (const json* tp = find(t, "tree_param")) {
        if (!tp->is_object()) bad(sub(path, "tree_param"), "must be an object");
        if (const json* slv = find(*tp, "size_leaf_vector"))
            if (int_param(*slv, sub(path, "tree_param.size_leaf_vector")) > 1)
                unsupported(name + " has vector leaves (multi_strategy=multi_output_tree), "
                            "which are not supported");
    }
    // Categorical splits: split_type 1, or a non-empty categories_nodes list.
    if (const json* st = find(t, "split_type")) {
        if (!st->is_array()) bad(sub(path, "split_type"), "must be an array");
        for (size_t i = 0; i < st->size(); ++i)
            if (int_item((*st)[i], idx(sub(path, "split_type"), i), 0, 255) != 0)
                unsupported(name + " has a categorical split at node " + std::to_string(i) +
                            "; categorical splits are not supported");
    }
    for (const char* key : {"categories_nodes", "categories"})
        if (const json* c = find(t, key); c && c->is_array() && !c->empty())
            unsupported(name + " has categorical splits (" + key +
                        "); categorical splits are not supported");

    const int64_t kMax = INT32_MAX;
    auto left = int_array(t, path, "left_children", -1, kMax);
    auto right = int_array(t, path, "right_children", -1, kMax);
    auto split_index = int_array(t, path, "split_indices", 0, kMax);
    auto cond = float_array(t, path, "split_conditions");
    auto dleft = flag_array(t, path, "default_left");
    const size_t n = left.size();
    if (n == 0) bad(sub(path, "left_children"), "is empty: a tree has at least a root");
    auto same = [&](size_t size, const char* key) {
        if (size != n)
            bad(sub(path, key), "has " + std::to_string(size) + " entries, left_children has " +
                                    std::to_string(n));
    };
    same(right.size(), "right_children");
    same(split_index.size(), "split_indices");
    same(cond.size(), "split_conditions");
    same(dleft.size(), "default_left");
    if (const json* tp = find(t, "tree_param"); tp && tp->contains("num_nodes")) {
        int64_t nn = int_param((*tp)["num_nodes"], sub(path, "tree_param.num_nodes"));
        if (nn != static_cast<int64_t>(n))
            bad(sub(path, "tree_param.num_nodes"), "is " + std::to_string(nn) + " but the tree has " +
                                                      std::to_string(n) + " nodes");
    }

    NodeArrays nodes;
    nodes.left = std::move(left);
    nodes.right = std::move(right);
    nodes.feature = std::move(split_index);
    nodes.default_left = std::move(dleft);
    // A leaf keeps its value in split_conditions (base_weights lacks the learning rate).
    nodes.value.reserve(n);
    for (float c : cond) nodes.value.push_back(c * weight);
    nodes.threshold = std::move(cond);
    return build_tree(nodes, group, num_features, UnreachableNodes::Drop, "xgboost: " + path);
}

// --- the learner ----------------------------------------------------------------------------

using spec::kMaxFeatures;
constexpr int64_t kMaxClasses = spec::kMaxGroups;

spec::Pipeline import_learner(const json& doc) {
    if (!doc.is_object()) bad("(document)", "must be a JSON object");
    const json& learner = need_object(doc, "", "learner");
    const std::string L = "learner";

    const json& lmp = need_object(learner, L, "learner_model_param");
    const std::string P = sub(L, "learner_model_param");
    const int64_t num_feature = int_param(need(lmp, P, "num_feature"), sub(P, "num_feature"));
    if (num_feature < 0) bad(sub(P, "num_feature"), "is negative");
    // Per-feature and per-class vectors are sized from these numbers before any tree is
    // read, so a hostile document must not be able to ask for gigabytes.
    if (num_feature > kMaxFeatures)
        unsupported("more than " + std::to_string(kMaxFeatures) + " features are not supported");
    int64_t num_class = 0;
    if (const json* v = find(lmp, "num_class")) num_class = int_param(*v, sub(P, "num_class"));
    if (num_class > kMaxClasses)
        unsupported("more than " + std::to_string(kMaxClasses) + " classes are not supported");
    if (const json* v = find(lmp, "num_target"))
        if (int_param(*v, sub(P, "num_target")) > 1)
            unsupported("multi-target models (num_target > 1) are not supported");
    for (const json* owner : {&lmp, &learner})
        if (const json* v = find(*owner, "multi_strategy"))
            if (!v->is_string() || v->get<std::string>() != "one_output_per_tree")
                unsupported("multi_strategy " + v->dump() + " is not supported");

    const json& obj = need_object(learner, L, "objective");
    const Objective& o =
        find_objective(xgboost_objectives(), need_string(obj, sub(L, "objective"), "name"), "XGBoost objective");
    int32_t num_groups = 1;
    if (o.multiclass) {
        if (num_class < 2)
            bad(sub(P, "num_class"), "must be at least 2 for " + std::string(o.name));
        num_groups = static_cast<int32_t>(num_class);
    } else if (num_class > 1) {
        bad(sub(P, "num_class"), "is " + std::to_string(num_class) + " but objective " +
                                     o.name + " has one output");
    }

    spec::Pipeline p;
    p.source_format = "xgboost";
    p.objective = o.name;
    p.task = o.task;
    p.transform = o.transform;
    if (o.task == Task::Classification)
        for (int32_t c = 0; c < (o.multiclass ? num_groups : 2); ++c) p.classes.push_back(c);

    auto& m = p.model;
    m.num_features = static_cast<int32_t>(num_feature);
    m.num_groups = num_groups;
    m.comparison = spec::Comparison::Less;
    const std::string bpath = sub(P, "base_score");
    std::vector<float> bs = base_scores(need(lmp, P, "base_score"), bpath);
    if (bs.size() == 1) bs.resize(num_groups, bs[0]);
    if (bs.size() != static_cast<size_t>(num_groups))
        bad(bpath, "has " + std::to_string(bs.size()) + " values for " +
                       std::to_string(num_groups) + " output groups");
    for (float b : bs) m.base_margin.push_back(base_score_to_margin(b, o.link, "xgboost: " + bpath));

    p.features.assign(num_feature, "");
    if (const json* names = find(learner, "feature_names"); names && !names->is_null()) {
        const std::string fpath = sub(L, "feature_names");
        if (!names->is_array()) bad(fpath, "must be an array");
        if (!names->empty()) {
            if (names->size() != static_cast<size_t>(num_feature))
                bad(fpath, "has " + std::to_string(names->size()) + " names but num_feature is " +
                               std::to_string(num_feature));
            for (size_t i = 0; i < names->size(); ++i) {
                if (!(*names)[i].is_string()) bad(idx(fpath, i), "must be a string");
                p.features[i] = (*names)[i].get<std::string>();
            }
        }
    }

    // gbtree, or dart wrapping a gbtree plus one weight per tree.
    const json& gb = need_object(learner, L, "gradient_booster");
    std::string G = sub(L, "gradient_booster");
    const std::string booster = need_string(gb, G, "name");
    const json* gbtree = &gb;
    std::vector<float> weights;
    if (booster == "dart") {
        weights = float_array(gb, G, "weight_drop");
        gbtree = &need_object(gb, G, "gbtree");
        G = sub(G, "gbtree");
    } else if (booster != "gbtree") {
        unsupported("booster \"" + booster + "\" is not supported; supported: gbtree, dart");
    }
    const json& model = need_object(*gbtree, G, "model");
    const std::string M = sub(G, "model");
    const json& trees = need_array(model, M, "trees");
    auto tree_info = int_array(model, M, "tree_info", 0, INT32_MAX);
    if (tree_info.size() != trees.size())
        bad(sub(M, "tree_info"), "has " + std::to_string(tree_info.size()) + " entries for " +
                                     std::to_string(trees.size()) + " trees");
    if (booster == "dart" && weights.size() != trees.size())
        bad(sub("learner.gradient_booster", "weight_drop"),
            "has " + std::to_string(weights.size()) + " entries for " +
                std::to_string(trees.size()) + " trees");
    if (const json* gp = find(model, "gbtree_model_param"); gp && gp->is_object())
        if (const json* nt = find(*gp, "num_trees")) {
            int64_t declared = int_param(*nt, sub(M, "gbtree_model_param.num_trees"));
            if (declared != static_cast<int64_t>(trees.size()))
                bad(sub(M, "gbtree_model_param.num_trees"),
                    "is " + std::to_string(declared) + " but there are " +
                        std::to_string(trees.size()) + " trees");
        }

    m.trees.reserve(trees.size());
    for (size_t i = 0; i < trees.size(); ++i) {
        check_interrupts();
        if (tree_info[i] >= num_groups)
            bad(idx(sub(M, "tree_info"), i), "is group " + std::to_string(tree_info[i]) +
                                                 " but the model has " +
                                                 std::to_string(num_groups));
        m.trees.push_back(read_tree(trees[i], idx(sub(M, "trees"), i), i, tree_info[i],
                                    weights.empty() ? 1.0f : weights[i], m.num_features));
    }
    spec::validate(p);
    return p;
}

}  // namespace

spec::Pipeline import_xgboost(const json& artifact) {
    try {
        return import_learner(artifact);
    } catch (const Error&) {
        throw;
    } catch (const json::exception& e) {
        // Defensive: every access above is type-checked, but a malformed document must never
        // escape as anything but InvalidModel.
        fail(ErrorCategory::InvalidModel, std::string("XGBoost model is malformed: ") + e.what());
    }
}

}  // namespace pg_predict::importers
