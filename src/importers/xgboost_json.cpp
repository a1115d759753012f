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
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pg_predict/common/interrupt.hpp"
#include "pg_predict/common/error.hpp"
#include "pg_predict/importers/import.hpp"
#include "pg_predict/importers/tree_builder.hpp"
#include "pg_predict/spec/json_reader.hpp"
#include "pg_predict/spec/limits.hpp"

namespace pg_predict::importers {

namespace {

using nlohmann::json;
using spec::JsonReader;
using spec::Task;

// XGBoost writes its parameters as strings ("3", "5E-1"); hand-made documents often use
// numbers. Both are taken.
int64_t int_param(const JsonReader& v) {
    if (v.is_string()) {
        const std::string s = v.string();
        char* end = nullptr;
        errno = 0;
        long long i = std::strtoll(s.c_str(), &end, 10);
        if (!s.empty() && *end == '\0' && errno == 0) return i;
        v.invalid("must be an integer (or a string holding one), got \"" + s + "\"");
    }
    return v.integer(INT64_MIN, INT64_MAX);
}

float float_token(const std::string& s, const JsonReader& v) {
    // strtof, not strtod: XGBoost parses its float parameters straight to float32.
    char* end = nullptr;
    errno = 0;
    float f = std::strtof(s.c_str(), &end);
    if (s.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(f))
        v.invalid("must be a finite number, got \"" + s + "\"");
    return f;
}

std::vector<float> floats(const JsonReader& a) {
    const std::vector<double> d = a.finite_numbers();
    return std::vector<float>(d.begin(), d.end());
}

// default_left is 0/1 in JSON files and may come out of UBJSON converters as booleans.
std::vector<uint8_t> flags(const JsonReader& a) {
    std::vector<uint8_t> out;
    out.reserve(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
        const json& v = a.value()[i];
        if (v.is_boolean()) out.push_back(v.get<bool>());
        else out.push_back(static_cast<uint8_t>(a[i].integer(0, 1)));
    }
    return out;
}

// base_score: "5E-1", "[5E-1]" / "[a,b,c]" (3.1+), or a plain JSON number.
std::vector<float> base_scores(const JsonReader& v) {
    if (v.value().is_number()) return {static_cast<float>(v.finite())};
    const std::string s = v.string();
    if (s.empty() || s.front() != '[') return {float_token(s, v)};
    if (s.back() != ']') v.invalid("has an unterminated \"[\"");
    std::vector<float> out;
    const std::string body = s.substr(1, s.size() - 2);
    size_t start = 0;
    while (true) {
        size_t comma = body.find(',', start);
        out.push_back(float_token(body.substr(start, comma - start), v));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

// --- trees --------------------------------------------------------------------------------

spec::Tree read_tree(const JsonReader& t, int32_t group, float weight, int32_t num_features) {
    t.expect_object();
    if (auto tp = t.optional("tree_param")) {
        tp->expect_object();
        if (auto slv = tp->optional("size_leaf_vector"); slv && int_param(*slv) > 1)
            t.unsupported("vector leaves (multi_strategy=multi_output_tree) are not supported");
    }
    // Categorical splits: split_type 1, or a non-empty categories_nodes list.
    if (auto st = t.optional("split_type")) {
        const std::vector<int32_t> types = st->integers(0, 255);
        for (size_t i = 0; i < types.size(); ++i)
            if (types[i] != 0)
                t.unsupported("node " + std::to_string(i) +
                              " is a categorical split; categorical splits are not supported");
    }
    for (const char* key : {"categories_nodes", "categories"})
        if (auto c = t.optional(key); c && c->is_array() && !c->empty())
            t.unsupported(std::string("categorical splits (") + key + ") are not supported");

    NodeArrays nodes;
    nodes.left = t.array("left_children").integers(-1, INT32_MAX);
    nodes.right = t.array("right_children").integers(-1, INT32_MAX);
    nodes.feature = t.array("split_indices").integers(0, INT32_MAX);
    nodes.threshold = floats(t.array("split_conditions"));
    nodes.default_left = flags(t.array("default_left"));
    const size_t n = nodes.left.size();
    if (n == 0) t.need("left_children").invalid("is empty: a tree has at least a root");
    auto same = [&](size_t size, const char* key) {
        if (size != n)
            t.need(key).invalid("has " + std::to_string(size) + " entries, left_children has " + std::to_string(n));
    };
    same(nodes.right.size(), "right_children");
    same(nodes.feature.size(), "split_indices");
    same(nodes.threshold.size(), "split_conditions");
    same(nodes.default_left.size(), "default_left");
    if (auto tp = t.optional("tree_param"))
        if (auto nn = tp->optional("num_nodes"); nn && int_param(*nn) != static_cast<int64_t>(n))
            nn->invalid("is " + std::to_string(int_param(*nn)) + " but the tree has " + std::to_string(n) + " nodes");
    // A leaf keeps its value in split_conditions (base_weights lacks the learning rate).
    nodes.value.reserve(n);
    for (float c : nodes.threshold) nodes.value.push_back(c * weight);
    // Covers for TreeSHAP, as XGBoost's pred_contribs reads them (older files lack them).
    if (auto h = t.optional("sum_hessian")) {
        nodes.cover = h->finite_numbers();
        same(nodes.cover.size(), "sum_hessian");
    }
    return build_tree(nodes, group, num_features, UnreachableNodes::Drop, t.where());
}

// --- the learner ----------------------------------------------------------------------------

using spec::kMaxFeatures;
constexpr int64_t kMaxClasses = spec::kMaxGroups;

spec::Pipeline import_learner(const JsonReader& doc) {
    if (!doc.is_object()) doc.invalid("must be a JSON object");
    const JsonReader learner = doc.object("learner");
    const JsonReader lmp = learner.object("learner_model_param");
    const JsonReader nf = lmp.need("num_feature");
    const int64_t num_feature = int_param(nf);
    if (num_feature < 0) nf.invalid("is negative");
    // Per-feature and per-class vectors are sized from these numbers before any tree is
    // read, so a hostile document must not be able to ask for gigabytes.
    if (num_feature > kMaxFeatures)
        nf.unsupported("more than " + std::to_string(kMaxFeatures) + " features are not supported");
    int64_t num_class = 0;
    const auto nc = lmp.optional("num_class");
    if (nc) num_class = int_param(*nc);
    if (num_class > kMaxClasses)
        nc->unsupported("more than " + std::to_string(kMaxClasses) + " classes are not supported");
    const JsonReader objective = learner.object("objective").need("name");
    if (auto nt = lmp.optional("num_target"); nt && int_param(*nt) > 1) {
        // reg:quantileerror writes one target per quantile_alpha.
        if (objective.is_string() && objective.string() == "reg:quantileerror")
            nt->unsupported("reg:quantileerror with " + std::to_string(int_param(*nt)) +
                            " quantiles (quantile_alpha) predicts one column per quantile; only one "
                            "quantile is supported (train one model per quantile)");
        nt->unsupported("multi-target models (num_target > 1) are not supported");
    }
    for (const JsonReader* owner : {&lmp, &learner})
        if (auto ms = owner->optional("multi_strategy");
            ms && !(ms->is_string() && ms->string() == "one_output_per_tree"))
            ms->unsupported("multi_strategy " + ms->value().dump() + " is not supported");

    const Objective& o = find_objective(xgboost_objectives(), objective.string(), objective.where() + ": objective");
    int32_t num_groups = 1;
    if (o.multiclass) {
        if (num_class < 2) {
            const std::string what = "must be at least 2 for " + std::string(o.name);
            if (nc) nc->invalid(what);
            lmp.invalid("num_class " + what);
        }
        num_groups = static_cast<int32_t>(num_class);
    } else if (num_class > 1) {
        nc->invalid("is " + std::to_string(num_class) + " but objective " + o.name + " has one output");
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
    const JsonReader bsv = lmp.need("base_score");
    std::vector<float> bs = base_scores(bsv);
    if (bs.size() == 1) bs.resize(num_groups, bs[0]);
    if (bs.size() != static_cast<size_t>(num_groups))
        bsv.invalid("has " + std::to_string(bs.size()) + " values for " + std::to_string(num_groups) +
                    " output groups");
    for (float b : bs) m.base_margin.push_back(base_score_to_margin(b, o.link, bsv.where()));

    p.features.assign(num_feature, "");
    if (auto names = learner.optional("feature_names")) {
        names->expect_array();
        if (!names->empty()) {
            if (names->size() != static_cast<size_t>(num_feature))
                names->invalid("has " + std::to_string(names->size()) + " names but num_feature is " +
                               std::to_string(num_feature));
            for (size_t i = 0; i < names->size(); ++i) p.features[i] = (*names)[i].string();
        }
    }

    // gbtree, or dart wrapping a gbtree plus one weight per tree.
    const JsonReader gb = learner.object("gradient_booster");
    const std::string booster = gb.string("name");
    std::optional<JsonReader> gbtree = gb;
    std::vector<float> weights;
    if (booster == "dart") {
        weights = floats(gb.array("weight_drop"));
        gbtree = gb.object("gbtree");
    } else if (booster != "gbtree") {
        gb.need("name").unsupported("booster \"" + booster + "\" is not supported; supported: gbtree, dart");
    }
    const JsonReader model = gbtree->object("model");
    const JsonReader trees = model.array("trees");
    const JsonReader info = model.array("tree_info");
    const std::vector<int32_t> tree_info = info.integers(0, INT32_MAX);
    if (tree_info.size() != trees.size())
        info.invalid("has " + std::to_string(tree_info.size()) + " entries for " + std::to_string(trees.size()) +
                     " trees");
    if (booster == "dart" && weights.size() != trees.size())
        gb.need("weight_drop").invalid("has " + std::to_string(weights.size()) + " entries for " +
                                       std::to_string(trees.size()) + " trees");
    if (auto gp = model.optional("gbtree_model_param"); gp && gp->is_object())
        if (auto nt = gp->optional("num_trees"); nt && int_param(*nt) != static_cast<int64_t>(trees.size()))
            nt->invalid("is " + std::to_string(int_param(*nt)) + " but there are " + std::to_string(trees.size()) +
                        " trees");

    m.trees.reserve(trees.size());
    for (size_t i = 0; i < trees.size(); ++i) {
        check_interrupts();
        if (tree_info[i] >= num_groups)
            info[i].invalid("is group " + std::to_string(tree_info[i]) + " but the model has " +
                            std::to_string(num_groups));
        m.trees.push_back(read_tree(trees[i], tree_info[i], weights.empty() ? 1.0f : weights[i], m.num_features));
    }
    spec::validate(p);
    return p;
}

}  // namespace

spec::Pipeline import_xgboost(const json& artifact) {
    try {
        return import_learner(JsonReader(artifact, "xgboost"));
    } catch (const Error&) {
        throw;
    } catch (const json::exception& e) {
        // Defensive: every access above is type-checked, but a malformed document must never
        // escape as anything but InvalidModel.
        fail(ErrorCategory::InvalidModel, std::string("xgboost: the model is malformed: ") + e.what());
    }
}

}  // namespace pg_predict::importers
