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
//  - trees carry split_type / categories* (1.6+): categorical splits, below.
// Categorical splits (enable_categorical): node i with split_type 1 sends a category in its set
// (categories[categories_segments[k], + categories_sizes[k]) for categories_nodes[k] == i) right,
// and every other value left: not in the set, negative, at least 2^24, or infinite, after
// XGBoost truncates the float32 input to an integer (common::Decision). A missing value takes
// the default child. split_conditions holds a bare NaN there, which parse_model_document reads.
// Each such split becomes a split on a derived 0/1 column (category_set_part: float32, floor,
// one-hot, summed per set), 1 inside the set and, where the default child is the right one, for
// a missing value too; numerical splits read the inputs as they are, passed through the same
// concat step. XGBoost's JSON has codes, not names: option "categories" gives a feature its
// pandas categories, and the feature becomes a text input whose vocabulary they are (a value
// not in it is missing, as pandas gives it code -1 and XGBoost reads that as missing).
//
// Dart is supported exactly: at predict time XGBoost adds fl(leaf * weight_drop[tree]) per
// tree, so the weights are folded into the leaves in float32.
//
// Trees may hold deleted nodes (num_deleted > 0 after pruning): only the nodes reachable from
// the root are kept, renumbered in their original order.
//
// best_iteration (learner.attributes) is ignored on purpose: Booster.predict in 1.7 uses every
// tree unless given an iteration_range (the sklearn wrapper does pass best_iteration).
#include <algorithm>
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

// The largest category XGBoost's Decision takes (OutOfRangeCat: 2^24, the float32 integers).
constexpr int64_t kMaxCategory = (int64_t{1} << 24) - 1;

// A tree as the document holds it: the node arrays, and the category set of each categorical
// split (the codes that go right, ascending) by node.
struct RawTree {
    NodeArrays nodes;
    std::vector<std::pair<int32_t, std::vector<int32_t>>> category_sets;  // (node, set), by node
    std::string where;
};

// The categorical splits of tree t (n nodes): split_type, and categories* naming exactly the
// nodes whose split_type is 1, in order, each with a non-empty segment of `categories`.
std::vector<std::pair<int32_t, std::vector<int32_t>>> read_category_sets(const JsonReader& t, const NodeArrays& nodes) {
    const size_t n = nodes.left.size();
    std::vector<int32_t> types(n, 0);
    if (auto st = t.optional("split_type")) {
        types = st->integers(0, 1);
        if (types.size() != n)
            st->invalid("has " + std::to_string(types.size()) + " entries, left_children has " + std::to_string(n));
    }
    std::vector<int32_t> cat_nodes;
    for (size_t i = 0; i < n; ++i)
        if (types[i] == 1 && nodes.left[i] != -1) cat_nodes.push_back(static_cast<int32_t>(i));
    std::vector<std::pair<int32_t, std::vector<int32_t>>> out;
    const auto listed = t.optional("categories_nodes");
    if (cat_nodes.empty() && (!listed || listed->empty())) return out;
    const JsonReader nodes_r = t.array("categories_nodes");
    const std::vector<int32_t> listed_nodes = nodes_r.integers(0, INT32_MAX);
    if (listed_nodes != cat_nodes)
        nodes_r.invalid("lists " + std::to_string(listed_nodes.size()) +
                        " nodes, which are not the tree's categorical splits (split_type 1): " +
                        std::to_string(cat_nodes.size()) + " of them");
    const JsonReader segments_r = t.array("categories_segments"), sizes_r = t.array("categories_sizes");
    const std::vector<int32_t> segments = segments_r.integers(0, INT32_MAX), sizes = sizes_r.integers(1, INT32_MAX);
    const std::vector<int32_t> categories = t.array("categories").integers(0, kMaxCategory);
    if (segments.size() != cat_nodes.size() || sizes.size() != cat_nodes.size())
        nodes_r.invalid("has " + std::to_string(cat_nodes.size()) + " entries, categories_segments " +
                        std::to_string(segments.size()) + " and categories_sizes " + std::to_string(sizes.size()));
    for (size_t k = 0; k < cat_nodes.size(); ++k) {
        if (static_cast<int64_t>(segments[k]) + sizes[k] > static_cast<int64_t>(categories.size()))
            segments_r[k].invalid("with size " + std::to_string(sizes[k]) + " runs past the " +
                                  std::to_string(categories.size()) + " categories");
        std::vector<int32_t> set(categories.begin() + segments[k], categories.begin() + segments[k] + sizes[k]);
        std::sort(set.begin(), set.end());
        set.erase(std::unique(set.begin(), set.end()), set.end());
        out.emplace_back(cat_nodes[k], std::move(set));
    }
    return out;
}

RawTree read_tree(const JsonReader& t, float weight) {
    t.expect_object();
    if (auto tp = t.optional("tree_param")) {
        tp->expect_object();
        if (auto slv = tp->optional("size_leaf_vector"); slv && int_param(*slv) > 1)
            t.unsupported("vector leaves (multi_strategy=multi_output_tree) are not supported");
    }
    RawTree raw;
    raw.where = t.where();
    NodeArrays& nodes = raw.nodes;
    nodes.left = t.array("left_children").integers(-1, INT32_MAX);
    nodes.right = t.array("right_children").integers(-1, INT32_MAX);
    nodes.feature = t.array("split_indices").integers(0, INT32_MAX);
    const JsonReader conditions = t.array("split_conditions");
    const std::vector<double> condition = conditions.numbers();  // NaN at a categorical split
    nodes.threshold.assign(condition.begin(), condition.end());
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
    raw.category_sets = read_category_sets(t, nodes);
    size_t next_set = 0;
    for (size_t i = 0; i < n; ++i) {
        const bool categorical = next_set < raw.category_sets.size() && raw.category_sets[next_set].first == static_cast<int32_t>(i);
        next_set += categorical ? 1 : 0;
        if (!categorical && !std::isfinite(condition[i]))
            conditions[i].invalid("must be a finite number (it is a " +
                                  std::string(nodes.left[i] == -1 ? "leaf's value" : "numerical split's threshold") + ")");
    }
    // A leaf keeps its value in split_conditions (base_weights lacks the learning rate).
    nodes.value.reserve(n);
    for (float c : nodes.threshold) nodes.value.push_back(c * weight);
    // Covers for TreeSHAP, as XGBoost's pred_contribs reads them (older files lack them).
    if (auto h = t.optional("sum_hessian")) {
        nodes.cover = h->finite_numbers();
        same(nodes.cover.size(), "sum_hessian");
    }
    return raw;
}

// Where the trees' columns come from when some split is categorical: the numerical inputs as
// they are (text inputs excepted), then one derived 0/1 column per distinct (set, missing goes
// right) of each feature.
struct CategoricalLayout {
    std::vector<int32_t> plain_col;                              // by feature; -1 for a text input
    std::vector<std::vector<std::vector<int32_t>>> sets;         // by feature
    std::vector<std::vector<uint8_t>> with_missing;              // by feature, parallel to sets
    std::vector<std::vector<int32_t>> set_col;                   // by feature, parallel to sets
    int32_t width = 0;

    CategoricalLayout(const std::vector<RawTree>& trees, const std::vector<uint8_t>& is_text) {
        const size_t F = is_text.size();
        plain_col.assign(F, -1);
        sets.resize(F);
        with_missing.resize(F);
        set_col.resize(F);
        for (const RawTree& t : trees)
            for (const auto& [node, set] : t.category_sets) {
                const int32_t f = t.nodes.feature[node];
                if (f < 0 || static_cast<size_t>(f) >= F) continue;  // build_tree names it
                const uint8_t missing = t.nodes.default_left[node] ? 0 : 1;
                if (find(f, set, missing) < 0) {
                    sets[f].push_back(set);
                    with_missing[f].push_back(missing);
                }
            }
        for (size_t f = 0; f < F; ++f)
            if (!is_text[f]) plain_col[f] = width++;
        for (size_t f = 0; f < F; ++f)
            for (size_t k = 0; k < sets[f].size(); ++k) set_col[f].push_back(width++);
    }

    int32_t find(int32_t f, const std::vector<int32_t>& set, uint8_t missing) const {
        for (size_t k = 0; k < sets[f].size(); ++k)
            if (with_missing[f][k] == missing && sets[f][k] == set) return static_cast<int32_t>(k);
        return -1;
    }

    // The one concat step computing every column in layout order.
    spec::Step step(const std::vector<uint8_t>& is_text) const {
        spec::Step concat;
        concat.op = spec::Op::Concat;
        concat.params = json::object();
        spec::Step::Part plain;
        for (size_t f = 0; f < plain_col.size(); ++f)
            if (plain_col[f] >= 0) plain.columns.push_back(static_cast<int32_t>(f));
        if (!plain.columns.empty()) concat.parts.push_back(std::move(plain));
        for (size_t f = 0; f < sets.size(); ++f) {
            if (sets[f].empty()) continue;
            // A text input is already its code; a number is truncated as XGBoost does
            // (float32, then floor: a negative value is no category, and neither is NaN).
            std::vector<const char*> rounding;
            if (!is_text[f]) rounding = {"float32", "floor"};
            concat.parts.push_back(category_set_part(static_cast<int32_t>(f), sets[f], with_missing[f], rounding));
        }
        return concat;
    }
};

// The spec tree of `raw` over the layout's columns: a categorical split reads its set's column
// (never missing: "< 0.5" is left, outside the set); a numerical one its input's column.
spec::Tree to_spec_tree(RawTree raw, const CategoricalLayout* layout, const std::vector<std::string>& names,
                        int32_t group, int32_t num_features, int32_t width) {
    if (layout != nullptr) {
        NodeArrays& nodes = raw.nodes;
        size_t next_set = 0;
        for (size_t i = 0; i < nodes.left.size(); ++i) {
            if (nodes.left[i] == -1) continue;
            const int32_t f = nodes.feature[i];
            if (f < 0 || f >= num_features)  // as build_tree says it, before f means a derived column
                fail(ErrorCategory::InvalidModel, raw.where + ": node " + std::to_string(i) + " splits on feature " +
                                                      std::to_string(f) + " but the model reads " +
                                                      std::to_string(num_features) + " features");
            if (next_set < raw.category_sets.size() && raw.category_sets[next_set].first == static_cast<int32_t>(i)) {
                const auto& set = raw.category_sets[next_set++].second;
                const uint8_t missing = nodes.default_left[i] ? 0 : 1;
                nodes.feature[i] = layout->set_col[f][layout->find(f, set, missing)];
                nodes.threshold[i] = 0.5f;
                nodes.default_left[i] = 0;
            } else if (layout->plain_col[f] < 0) {
                fail(ErrorCategory::InvalidParameter,
                     raw.where + ": node " + std::to_string(i) + " compares feature \"" + names[f] +
                         "\" with a number, but option \"categories\" makes it a text input");
            } else {
                nodes.feature[i] = layout->plain_col[f];
            }
        }
    } else if (!raw.category_sets.empty()) {
        fail(ErrorCategory::Internal, raw.where + ": a categorical split without a layout");
    }
    return build_tree(raw.nodes, group, layout != nullptr ? width : num_features, UnreachableNodes::Drop, raw.where);
}

// --- the learner ----------------------------------------------------------------------------

using spec::kMaxFeatures;
constexpr int64_t kMaxClasses = spec::kMaxGroups;

// Option "categories": {"feature": ["category", ...]} by feature name, for categorical
// features only. Returns, by feature, whether it is a text input; adds the text inputs to p.
std::vector<uint8_t> text_features(const json& options, const JsonReader& learner, const std::vector<RawTree>& trees,
                                   spec::Pipeline& p) {
    const size_t F = p.features.size();
    std::vector<uint8_t> is_text(F, 0);
    const auto it = options.is_object() ? options.find("categories") : options.end();
    if (it == options.end()) return is_text;
    auto bad = [](const std::string& what) { fail(ErrorCategory::InvalidParameter, "option \"categories\" " + what); };
    if (!it->is_object()) bad("must be an object: {\"feature\": [\"category\", ...]}");
    std::vector<uint8_t> categorical(F, 0);
    if (auto types = learner.optional("feature_types"); types && types->is_array() && types->size() == F)
        for (size_t f = 0; f < F; ++f) categorical[f] = (*types)[f].is_string() && (*types)[f].string() == "c";
    for (const RawTree& t : trees)
        for (const auto& [node, set] : t.category_sets)
            if (static_cast<size_t>(t.nodes.feature[node]) < F) categorical[t.nodes.feature[node]] = 1;
    for (const auto& [name, list] : it->items()) {
        const auto at = std::find(p.features.begin(), p.features.end(), name);
        if (name.empty() || at == p.features.end())
            bad("names \"" + name + "\", which is not a feature of the model" +
                (std::all_of(p.features.begin(), p.features.end(), [](const std::string& s) { return s.empty(); })
                     ? " (the model has no feature names)"
                     : ""));
        const size_t f = static_cast<size_t>(at - p.features.begin());
        if (!categorical[f])
            bad("names \"" + name + "\", which is not a categorical feature of the model (feature_types \"c\")");
        if (!list.is_array()) bad("for \"" + name + "\" must be an array of strings");
        spec::TextInput t;
        t.input = static_cast<int32_t>(f);
        t.unknown_is_missing = true;
        for (const json& v : list) {
            if (!v.is_string()) bad("for \"" + name + "\" must be an array of strings, not " + v.dump());
            t.vocabulary.push_back(v.get<std::string>());
        }
        is_text[f] = 1;
        p.text_inputs.push_back(std::move(t));
    }
    std::sort(p.text_inputs.begin(), p.text_inputs.end(),
              [](const spec::TextInput& a, const spec::TextInput& b) { return a.input < b.input; });
    return is_text;
}

// A text input's codes must be in its categories: a set naming code 7 of 5 categories means
// the option does not belong to this model.
void check_codes(const std::vector<RawTree>& trees, const spec::Pipeline& p) {
    for (const spec::TextInput& t : p.text_inputs)
        for (const RawTree& raw : trees)
            for (const auto& [node, set] : raw.category_sets)
                if (raw.nodes.feature[node] == t.input && set.back() >= static_cast<int32_t>(t.vocabulary.size()))
                    fail(ErrorCategory::InvalidParameter,
                         "option \"categories\" gives feature \"" + p.features[t.input] + "\" " +
                             std::to_string(t.vocabulary.size()) + " categories, but " + raw.where + " node " +
                             std::to_string(node) + " splits on code " + std::to_string(set.back()) +
                             ": they are not the categories the model was trained with");
}

spec::Pipeline import_learner(const JsonReader& doc, const json& options) {
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

    std::vector<RawTree> raw;
    raw.reserve(trees.size());
    bool any_categorical = false;
    for (size_t i = 0; i < trees.size(); ++i) {
        check_interrupts();
        if (tree_info[i] >= num_groups)
            info[i].invalid("is group " + std::to_string(tree_info[i]) + " but the model has " +
                            std::to_string(num_groups));
        raw.push_back(read_tree(trees[i], weights.empty() ? 1.0f : weights[i]));
        any_categorical = any_categorical || !raw.back().category_sets.empty();
    }
    const std::vector<uint8_t> is_text = text_features(options, learner, raw, p);
    check_codes(raw, p);
    std::optional<CategoricalLayout> layout;
    if (any_categorical || !p.text_inputs.empty()) {
        layout.emplace(raw, is_text);
        p.steps.push_back(layout->step(is_text));
        m.num_features = layout->width;
    }
    m.trees.reserve(raw.size());
    for (size_t i = 0; i < raw.size(); ++i) {
        check_interrupts();
        m.trees.push_back(to_spec_tree(std::move(raw[i]), layout ? &*layout : nullptr, p.features, tree_info[i],
                                       static_cast<int32_t>(num_feature), m.num_features));
    }
    spec::validate(p);
    return p;
}

}  // namespace

spec::Pipeline import_xgboost(const json& artifact, const json& options) {
    try {
        return import_learner(JsonReader(artifact, "xgboost"), options);
    } catch (const Error&) {
        throw;
    } catch (const json::exception& e) {
        // Defensive: every access above is type-checked, but a malformed document must never
        // escape as anything but InvalidModel.
        fail(ErrorCategory::InvalidModel, std::string("xgboost: the model is malformed: ") + e.what());
    }
}

}  // namespace pg_predict::importers
