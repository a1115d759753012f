// LightGBM's text model format (Booster.save_model, model_to_string) → pipeline spec.
//
// The file: a header of key=value lines (first line "tree", then version, num_class,
// num_tree_per_iteration, max_feature_idx, objective, average_output, feature_names, ...), then
// one block per tree ("Tree=i", then key=value lines of space-separated arrays), "end of trees",
// and feature importances and parameters we do not need. Checked against LightGBM 4.6's
// src/io/tree.cpp (Tree::Tree(const char*)) and include/LightGBM/tree.h (NumericalDecision,
// CategoricalDecision, Predict).
//
// Exactness. LightGBM compares a double input with a double threshold (x <= t goes left). The
// trees here split on ranks instead: a first featurizer step (bucketize, side "left") maps each
// input to #{thresholds of its feature < x}, so x <= t_j exactly when rank <= j, and ranks are
// small integers that float32 holds exactly; the program reads float64, so a double precision
// column reaches the ranks unrounded. Per node, LightGBM's missing types:
//   NaN  (decision_type bits 2-3 = 2): NaN takes the default direction (bit 1);
//   None (0): NaN is 0.0, so NaN goes where 0.0 goes: default_left = (0 <= t);
//   Zero (1): NaN is 0.0, and |x| <= kZeroThreshold (a float32 1e-35) takes the default
//        direction: the feature's column goes through elementwise zero_as_missing first.
// LightGBM's dense predict also reads |x| <= kZeroThreshold as 0.0: a threshold t inside
// [-kZero, kZero) is moved to where 0.0 splits the real line (so no input needs rewriting).
// Categorical nodes (bit 0): left when (int)x is in the node's bitset, right for NaN, negative
// values and categories never seen. Each distinct category set becomes a 0/1 column (trunc,
// one_hot over the feature's categories, project: the sum over the set) and the node splits
// it at 0 with its children swapped.
//
// Objectives and links: binary (sigmoid:k, folded into the leaves as k·leaf), multiclass
// (softmax), multiclassova (sigmoid:k per class, not normalized, as LightGBM), cross_entropy
// (sigmoid), regression / regression_l1 / huber / fair / quantile / mape / lambdarank /
// rank_xendcg (identity), poisson / gamma / tweedie (exp). boosting gbdt, dart (the file's
// leaves are already scaled) and rf (average_output: the leaves divided by the iterations).
//
// Iterations: the file records no best iteration. Booster.save_model() writes only the first
// best_iteration iterations when training stopped early, and a Booster loaded from the file
// predicts with all of them (its best_iteration is -1); so do we. Option "num_iteration": n
// keeps the first n (<= 0: all), like predict(num_iteration=n).
//
// Linear trees (linear_tree=true): a leaf outputs leaf_const + sum coeff * x over its inputs (its
// plain leaf_value when one of them is NaN); those inputs reach the trees as they are (a
// passthrough part of the featurizer, in float32 like every tree input) and only the
// TreeTraversal strategy evaluates them (auto chooses it; the others refuse by name). Option "raw_score": true scores
// predict(raw_score=True): no link and no average_output; a multiclass model's predict_proba
// returns the raw scores.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "pg_predict/common/error.hpp"
#include "pg_predict/common/interrupt.hpp"
#include "pg_predict/importers/import.hpp"
#include "pg_predict/importers/tree_builder.hpp"
#include "pg_predict/spec/limits.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::importers {

namespace {

using nlohmann::json;
using spec::PostTransform;
using spec::Task;

[[noreturn]] void bad(const std::string& what) {
    fail(ErrorCategory::InvalidModel, "LightGBM model: " + what);
}

[[noreturn]] void unsupported(const std::string& what) {
    fail(ErrorCategory::Unsupported, "LightGBM model: " + what);
}

// --- the text: lines of key=value -------------------------------------------------------------

struct Line {
    std::string_view text;
    size_t number;  // 1-based, for messages
};

std::vector<Line> split_lines(std::string_view text) {
    std::vector<Line> lines;
    size_t start = 0, number = 1;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(start, end - start);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        lines.push_back({line, number++});
        start = end + 1;
    }
    return lines;
}

// key=value lines of one section; `where` names the section in messages.
struct Section {
    std::string where;
    std::map<std::string, std::string_view, std::less<>> values;
    std::set<std::string, std::less<>> flags;  // lines without '=' (average_output)

    const std::string_view* find(std::string_view key) const {
        auto it = values.find(key);
        return it == values.end() ? nullptr : &it->second;
    }
    std::string_view need(std::string_view key) const {
        if (const std::string_view* v = find(key)) return *v;
        bad(where + " has no \"" + std::string(key) + "\" line");
    }
    void add(const Line& line) {
        const size_t eq = line.text.find('=');
        if (eq == std::string_view::npos) {
            flags.emplace(line.text);
            return;
        }
        const std::string key(line.text.substr(0, eq));
        if (!values.emplace(key, line.text.substr(eq + 1)).second)
            bad(where + " has \"" + key + "\" twice (line " + std::to_string(line.number) + ")");
    }
};

std::vector<std::string_view> tokens(std::string_view s) {
    std::vector<std::string_view> out;
    size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && s[i] == ' ') ++i;
        size_t j = i;
        while (j < s.size() && s[j] != ' ') ++j;
        if (j > i) out.push_back(s.substr(i, j - i));
        i = j;
    }
    return out;
}

int64_t to_int(std::string_view tok, const std::string& what, int64_t lo, int64_t hi) {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
    if (ec != std::errc() || end != tok.data() + tok.size())
        bad(what + " must be an integer, got \"" + std::string(tok.substr(0, 40)) + "\"");
    if (v < lo || v > hi)
        bad(what + " is " + std::to_string(v) + ", outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return v;
}

// LightGBM writes thresholds of "inf" / "-inf" (a split that sends every value one way);
// leaves and coefficients must be finite.
double to_double(std::string_view tok, const std::string& what, bool infinite_ok = false) {
    double v = 0.0;
    auto [end, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
    if (ec != std::errc() || end != tok.data() + tok.size() || std::isnan(v) || (!infinite_ok && std::isinf(v)))
        bad(what + " must be a " + (infinite_ok ? "" : "finite ") + "number, got \"" +
            std::string(tok.substr(0, 40)) + "\"");
    return v;
}

// An array line of exactly `count` values.
std::vector<std::string_view> array_of(const Section& s, std::string_view key, int64_t count) {
    std::vector<std::string_view> t = tokens(s.need(key));
    if (static_cast<int64_t>(t.size()) != count)
        bad(s.where + ": \"" + std::string(key) + "\" has " + std::to_string(t.size()) + " values, expected " +
            std::to_string(count));
    return t;
}

std::vector<int64_t> ints_of(const Section& s, std::string_view key, int64_t count, int64_t lo, int64_t hi) {
    std::vector<int64_t> out;
    const auto t = array_of(s, key, count);
    out.reserve(t.size());
    for (size_t i = 0; i < t.size(); ++i)
        out.push_back(to_int(t[i], s.where + ": " + std::string(key) + "[" + std::to_string(i) + "]", lo, hi));
    return out;
}

std::vector<double> doubles_of(const Section& s, std::string_view key, int64_t count, bool infinite_ok = false) {
    std::vector<double> out;
    const auto t = array_of(s, key, count);
    out.reserve(t.size());
    for (size_t i = 0; i < t.size(); ++i)
        out.push_back(to_double(t[i], s.where + ": " + std::string(key) + "[" + std::to_string(i) + "]", infinite_ok));
    return out;
}

// --- objectives ---------------------------------------------------------------------------------

// LightGBM's names as ObjectiveFunction::ToString writes them (its GetName()); the base score
// is in the first tree's leaves (boost_from_average), so no link of a base score.
const std::vector<Objective>& lightgbm_objectives() {
    using T = PostTransform;
    static const std::vector<Objective> table = {
        {"regression", Task::Regression, T::Identity, Link::Identity, false},
        {"regression_l1", Task::Regression, T::Identity, Link::Identity, false},
        {"huber", Task::Regression, T::Identity, Link::Identity, false},
        {"fair", Task::Regression, T::Identity, Link::Identity, false},
        {"quantile", Task::Regression, T::Identity, Link::Identity, false},
        {"mape", Task::Regression, T::Identity, Link::Identity, false},
        {"lambdarank", Task::Regression, T::Identity, Link::Identity, false},
        {"rank_xendcg", Task::Regression, T::Identity, Link::Identity, false},
        {"poisson", Task::Regression, T::Exp, Link::Identity, false},
        {"gamma", Task::Regression, T::Exp, Link::Identity, false},
        {"tweedie", Task::Regression, T::Exp, Link::Identity, false},
        {"cross_entropy", Task::Regression, T::Logistic, Link::Identity, false},
        {"binary", Task::Classification, T::Logistic, Link::Identity, false},
        {"multiclass", Task::Classification, T::Softmax, Link::Identity, true},
        {"multiclassova", Task::Classification, T::Logistic, Link::Identity, true},  // per class, not normalized
    };
    return table;
}

struct ParsedObjective {
    const Objective* o = nullptr;
    std::string text;       // the whole line, e.g. "binary sigmoid:1"
    double sigmoid = 1.0;   // sigmoid:k
    bool sqrt = false;      // regression objectives with reg_sqrt: output sign(x)·x²
};

ParsedObjective parse_objective(std::string_view line) {
    ParsedObjective p;
    p.text = std::string(line);
    const auto t = tokens(line);
    if (t.empty()) bad("\"objective\" is empty");
    p.o = &find_objective(lightgbm_objectives(), std::string(t[0]), "LightGBM objective");
    for (size_t i = 1; i < t.size(); ++i) {
        if (t[i] == "sqrt") {
            p.sqrt = true;
        } else if (t[i].substr(0, 8) == "sigmoid:") {
            p.sigmoid = to_double(t[i].substr(8), "objective sigmoid");
            if (!(p.sigmoid > 0)) bad("objective sigmoid must be positive");
        }
        // num_class:K is read from the header's num_class; other parameters do not change
        // predictions.
    }
    return p;
}

// --- trees --------------------------------------------------------------------------------------

constexpr int kCategoricalBit = 1, kDefaultLeftBit = 2;
enum MissingType { kMissingNone = 0, kMissingZero = 1, kMissingNaN = 2 };

// One tree as the file has it: internal nodes 0..n-2, a child < 0 is leaf ~child.
struct RawTree {
    std::string where;
    int64_t num_leaves = 1;
    std::vector<int64_t> split_feature, decision_type, left, right;
    std::vector<double> threshold, leaf_value;
    // Data counts (TreeSHAP's covers, as LightGBM's pred_contrib reads them); empty when the
    // file lacks them.
    std::vector<double> internal_count, leaf_count;
    std::vector<int64_t> cat_boundaries;
    std::vector<uint32_t> cat_threshold;
    // Linear leaves (is_linear=1): per leaf its constant, inputs and coefficients.
    bool linear = false;
    std::vector<double> leaf_const;
    std::vector<std::vector<int64_t>> leaf_features;
    std::vector<std::vector<double>> leaf_coeff;
};

// Size limits: a declared count is checked before anything is allocated from it.
constexpr int64_t kMaxLeaves = spec::kMaxTreeNodes / 2;
constexpr int64_t kMaxCategoryWords = 1 << 15;  // categories below 2^20 per set

RawTree read_tree(const Section& s, int64_t num_features) {
    RawTree t;
    t.where = s.where;
    t.num_leaves = to_int(s.need("num_leaves"), s.where + ": num_leaves", 1, kMaxLeaves);
    const int64_t n = t.num_leaves;
    const int64_t num_cat = to_int(s.need("num_cat"), s.where + ": num_cat", 0, n - 1);
    t.leaf_value = doubles_of(s, "leaf_value", n);
    if (s.find("leaf_count") && (n == 1 || s.find("internal_count"))) {
        t.leaf_count = doubles_of(s, "leaf_count", n);
        if (n > 1) t.internal_count = doubles_of(s, "internal_count", n - 1);
    }
    if (const std::string_view* lin = s.find("is_linear"))
        t.linear = to_int(*lin, s.where + ": is_linear", 0, 1) == 1;
    if (t.linear) {
        // As LightGBM reads them: a missing leaf_const is zeros, missing num_features no inputs.
        t.leaf_const = s.find("leaf_const") ? doubles_of(s, "leaf_const", n) : std::vector<double>(n, 0.0);
        t.leaf_features.resize(n);
        t.leaf_coeff.resize(n);
        if (s.find("num_features")) {
            const std::vector<int64_t> counts = ints_of(s, "num_features", n, 0, num_features);
            int64_t total = 0;
            for (int64_t c : counts) total += c;
            const std::vector<int64_t> features = ints_of(s, "leaf_features", total, 0, num_features - 1);
            const std::vector<double> coeff = doubles_of(s, "leaf_coeff", total);
            int64_t at = 0;
            for (int64_t l = 0; l < n; ++l)
                for (int64_t k = 0; k < counts[l]; ++k, ++at) {
                    t.leaf_features[l].push_back(features[at]);
                    t.leaf_coeff[l].push_back(coeff[at]);
                }
        }
    }
    if (n == 1) return t;
    t.split_feature = ints_of(s, "split_feature", n - 1, 0, num_features - 1);
    t.threshold = doubles_of(s, "threshold", n - 1, true);
    t.decision_type = s.find("decision_type") ? ints_of(s, "decision_type", n - 1, 0, 127)
                                              : std::vector<int64_t>(n - 1, 0);
    // Internal children in [0, n - 1), leaves ~l for l in [0, n).
    t.left = ints_of(s, "left_child", n - 1, -n, n - 2);
    t.right = ints_of(s, "right_child", n - 1, -n, n - 2);
    if (num_cat > 0) {
        t.cat_boundaries = ints_of(s, "cat_boundaries", num_cat + 1, 0, kMaxCategoryWords * num_cat);
        for (int64_t i = 0; i < num_cat; ++i)
            if (t.cat_boundaries[i + 1] < t.cat_boundaries[i] || t.cat_boundaries[i + 1] - t.cat_boundaries[i] > kMaxCategoryWords)
                bad(s.where + ": cat_boundaries must ascend by at most " + std::to_string(kMaxCategoryWords) + " words");
        if (t.cat_boundaries[0] != 0) bad(s.where + ": cat_boundaries must start at 0");
        for (int64_t w : ints_of(s, "cat_threshold", t.cat_boundaries.back(), 0, UINT32_MAX))
            t.cat_threshold.push_back(static_cast<uint32_t>(w));
    }
    for (int64_t i = 0; i < n - 1; ++i) {
        const std::string node = s.where + ", node " + std::to_string(i);
        const int64_t d = t.decision_type[i];
        if (d & kCategoricalBit) {
            const double c = t.threshold[i];
            if (!(c >= 0 && c < static_cast<double>(num_cat) && c == std::floor(c)))
                bad(node + ": a categorical split's threshold must index cat_boundaries (num_cat " +
                    std::to_string(num_cat) + "), got " + std::to_string(c));
        } else if (((d >> 2) & 3) == 3) {
            bad(node + ": decision_type " + std::to_string(d) + " has an unknown missing type");
        }
    }
    return t;
}

std::vector<int32_t> category_set(const RawTree& t, int64_t node) {
    const int64_t c = static_cast<int64_t>(t.threshold[node]);
    std::vector<int32_t> set;
    for (int64_t w = t.cat_boundaries[c]; w < t.cat_boundaries[c + 1]; ++w)
        for (int b = 0; b < 32; ++b)
            if (t.cat_threshold[w] >> b & 1u) set.push_back(static_cast<int32_t>((w - t.cat_boundaries[c]) * 32 + b));
    return set;
}

int missing_type(int64_t decision_type) { return static_cast<int>((decision_type >> 2) & 3); }

// Where LightGBM's split x <= t really falls: its dense predict reads |x| <= kZero as 0.0, so
// a threshold in [-kZero, kZero) splits the real line at -kZero (below it) or at +kZero.
double effective_threshold(double t) {
    const double z = spec::kLightgbmZero;
    if (t >= -z && t < 0) return std::nextafter(-z, -HUGE_VAL);
    if (t >= 0 && t < z) return z;
    return t;
}

// --- the featurizer: ranks, zero-as-missing ranks and category sets -----------------------------

struct Columns {
    int64_t num_features = 0;
    std::vector<std::vector<double>> edges;      // per input feature: its numeric thresholds
    std::vector<uint8_t> plain, zero;            // per feature: needs a rank column (NaN / None
                                                 // nodes), a zero-as-missing one (Zero nodes)
    std::vector<std::vector<std::vector<int32_t>>> sets;  // per feature: its distinct category sets
    std::vector<uint8_t> raw;                    // per feature: read as it is by a linear leaf
    // Derived column of each, filled by layout().
    std::vector<int32_t> plain_col, zero_col, raw_col;
    std::vector<std::vector<int32_t>> set_col;
    int32_t width = 0;

    explicit Columns(int64_t f)
        : num_features(f), edges(f), plain(f, 0), zero(f, 0), sets(f), raw(f, 0), plain_col(f, -1), zero_col(f, -1),
          raw_col(f, -1), set_col(f) {}

    void note(const RawTree& t) {
        for (const auto& features : t.leaf_features)
            for (int64_t f : features) raw[f] = 1;
        for (size_t i = 0; i < t.split_feature.size(); ++i) {
            const int64_t f = t.split_feature[i];
            if (t.decision_type[i] & kCategoricalBit) {
                std::vector<int32_t> s = category_set(t, static_cast<int64_t>(i));
                if (std::find(sets[f].begin(), sets[f].end(), s) == sets[f].end()) sets[f].push_back(std::move(s));
            } else {
                edges[f].push_back(effective_threshold(t.threshold[i]));
                (missing_type(t.decision_type[i]) == kMissingZero ? zero : plain)[f] = 1;
            }
        }
    }

    void layout() {
        for (auto& e : edges) {
            std::sort(e.begin(), e.end());
            e.erase(std::unique(e.begin(), e.end()), e.end());
        }
        for (int64_t f = 0; f < num_features; ++f)
            if (plain[f]) plain_col[f] = width++;
        for (int64_t f = 0; f < num_features; ++f)
            if (zero[f]) zero_col[f] = width++;
        for (int64_t f = 0; f < num_features; ++f)
            for (size_t k = 0; k < sets[f].size(); ++k) set_col[f].push_back(width++);
        for (int64_t f = 0; f < num_features; ++f)
            if (raw[f]) raw_col[f] = width++;
    }

    // The one concat step computing every derived column in layout() order.
    std::vector<spec::Step> steps() const {
        spec::Step concat;
        concat.op = spec::Op::Concat;
        concat.params = json::object();
        for (int zero_part = 0; zero_part < 2; ++zero_part) {
            spec::Step::Part part;
            json part_edges = json::array();
            for (int64_t f = 0; f < num_features; ++f) {
                if (!(zero_part ? zero[f] : plain[f])) continue;
                part.columns.push_back(static_cast<int32_t>(f));
                part_edges.push_back(spec::numbers_to_json(edges[f]));
            }
            if (part.columns.empty()) continue;
            if (zero_part) part.steps.push_back(elementwise("zero_as_missing"));
            spec::Step rank;
            rank.op = spec::Op::Bucketize;
            rank.params = {{"edges", std::move(part_edges)}, {"side", "left"}};
            part.steps.push_back(std::move(rank));
            concat.parts.push_back(std::move(part));
        }
        for (int64_t f = 0; f < num_features; ++f) {
            if (sets[f].empty()) continue;
            // (int)x as LightGBM casts it, matched against every category of the feature's
            // sets, summed over each set: 1 inside it, 0 outside (NaN, negative, unseen).
            concat.parts.push_back(category_set_part(static_cast<int32_t>(f), sets[f], "trunc"));
        }
        spec::Step::Part raw_part;  // the inputs linear leaves read, as they are
        for (int64_t f = 0; f < num_features; ++f)
            if (raw[f]) raw_part.columns.push_back(static_cast<int32_t>(f));
        if (!raw_part.columns.empty()) concat.parts.push_back(std::move(raw_part));
        return {std::move(concat)};
    }

    static spec::Step elementwise(const char* f) {
        spec::Step s;
        s.op = spec::Op::Elementwise;
        s.params = {{"function", f}};
        return s;
    }
};

// The spec tree of a RawTree over the derived columns: internal node i stays i, leaf l is
// n - 1 + l; leaves scaled by `scale` (sigmoid:k, 1 / iterations for average_output). The
// shared build_tree checks the links (in range, nothing reached twice, every node reached).
spec::Tree to_spec_tree(const RawTree& t, const Columns& cols, int32_t group, double scale) {
    const int64_t n = t.num_leaves, internal = n - 1;
    NodeArrays out;
    const auto node_of = [&](int64_t c) { return static_cast<int32_t>(c >= 0 ? c : internal + ~c); };
    for (int64_t i = 0; i < internal; ++i) {
        const int64_t f = t.split_feature[i], d = t.decision_type[i];
        int32_t left = node_of(t.left[i]), right = node_of(t.right[i]);
        if (d & kCategoricalBit) {
            // Column = 1 inside the set: "<= 0" is LightGBM's right child.
            const auto& sets = cols.sets[f];
            const size_t k = std::find(sets.begin(), sets.end(), category_set(t, i)) - sets.begin();
            out.feature.push_back(cols.set_col[f][k]);
            out.threshold.push_back(0.0f);
            out.default_left.push_back(0);
            std::swap(left, right);
        } else {
            const double thr = effective_threshold(t.threshold[i]);
            const auto& e = cols.edges[f];
            const int64_t rank = std::lower_bound(e.begin(), e.end(), thr) - e.begin();
            const int type = missing_type(d);
            out.feature.push_back(type == kMissingZero ? cols.zero_col[f] : cols.plain_col[f]);
            out.threshold.push_back(static_cast<float>(rank));
            // None: a missing value is 0.0 and goes where 0.0 goes.
            out.default_left.push_back(type == kMissingNone ? (0.0 <= thr) : (d & kDefaultLeftBit) != 0);
        }
        out.left.push_back(left);
        out.right.push_back(right);
        out.value.push_back(0.0f);
    }
    for (int64_t l = 0; l < n; ++l) {
        out.left.push_back(-1);
        out.right.push_back(-1);
        out.feature.push_back(0);
        out.threshold.push_back(0.0f);
        out.default_left.push_back(0);
        out.value.push_back(static_cast<float>(t.leaf_value[l] * scale));
    }
    if (!t.leaf_count.empty()) {  // nodes are internal 0..n-2, then the leaves
        out.cover = t.internal_count;
        out.cover.insert(out.cover.end(), t.leaf_count.begin(), t.leaf_count.end());
    }
    spec::Tree tree =
        build_tree(out, group, std::max<int32_t>(cols.width, 1), UnreachableNodes::Refuse, "LightGBM model: " + t.where);
    if (t.linear) {  // build_tree kept the numbering (every node is reached): leaves at internal + l
        const size_t nodes = tree.size();
        tree.linear_const.assign(nodes, 0.0);
        tree.linear_feature.assign(nodes, {});
        tree.linear_coeff.assign(nodes, {});
        for (int64_t l = 0; l < n; ++l) {
            tree.linear_const[internal + l] = t.leaf_const[l] * scale;
            for (int64_t f : t.leaf_features[l]) tree.linear_feature[internal + l].push_back(cols.raw_col[f]);
            for (double c : t.leaf_coeff[l]) tree.linear_coeff[internal + l].push_back(c * scale);
        }
    }
    return tree;
}

// --- options ------------------------------------------------------------------------------------

struct Options {
    int64_t num_iteration = 0;  // <= 0: all
    bool raw_score = false;
};

Options read_options(const json& options) {
    Options o;
    if (!options.is_object()) return o;
    if (auto it = options.find("num_iteration"); it != options.end()) {
        if (!it->is_number_integer())
            fail(ErrorCategory::InvalidParameter, "option \"num_iteration\" must be an integer");
        o.num_iteration = it->get<int64_t>();
    }
    if (auto it = options.find("raw_score"); it != options.end()) {
        if (!it->is_boolean()) fail(ErrorCategory::InvalidParameter, "option \"raw_score\" must be true or false");
        o.raw_score = it->get<bool>();
    }
    return o;
}

// --- the model ----------------------------------------------------------------------------------

spec::Pipeline import_text(std::string_view text, const json& options_json) {
    const Options options = read_options(options_json);
    const std::vector<Line> lines = split_lines(text);
    if (lines.empty() || lines[0].text != "tree") bad("the first line must be \"tree\"");

    Section header{"the header", {}, {}};
    size_t at = 1;
    for (; at < lines.size() && lines[at].text.substr(0, 5) != "Tree=" && lines[at].text != "end of trees"; ++at)
        if (!lines[at].text.empty()) header.add(lines[at]);

    const std::string_view version = header.need("version");
    if (version.substr(0, 1) != "v") bad("version must look like \"v4\", got \"" + std::string(version) + "\"");
    const int64_t num_class = to_int(header.need("num_class"), "num_class", 1, spec::kMaxGroups);
    const int64_t per_iteration =
        header.find("num_tree_per_iteration")
            ? to_int(header.need("num_tree_per_iteration"), "num_tree_per_iteration", 1, spec::kMaxGroups)
            : num_class;
    const int64_t num_features = to_int(header.need("max_feature_idx"), "max_feature_idx", 0, spec::kMaxFeatures - 1) + 1;
    const bool average_output = header.flags.count("average_output") > 0;

    ParsedObjective objective;
    if (const std::string_view* o = header.find("objective")) objective = parse_objective(*o);

    spec::Pipeline p;
    p.source_format = "lightgbm";
    p.objective = objective.o ? objective.text : "none";
    const std::vector<std::string_view> names = tokens(header.need("feature_names"));
    if (static_cast<int64_t>(names.size()) != num_features)
        bad("feature_names has " + std::to_string(names.size()) + " names, max_feature_idx says " +
            std::to_string(num_features));
    std::set<std::string_view> distinct;
    for (std::string_view n : names) {
        if (!distinct.insert(n).second) bad("feature name \"" + std::string(n) + "\" appears twice");
        p.features.emplace_back(n);
    }

    // The tree blocks.
    std::vector<RawTree> trees;
    bool ended = false;
    while (at < lines.size()) {
        const Line& line = lines[at];
        if (line.text == "end of trees") {
            ended = true;
            break;
        }
        if (line.text.empty()) {
            ++at;
            continue;
        }
        if (line.text.substr(0, 5) != "Tree=")
            bad("line " + std::to_string(line.number) + ": expected \"Tree=...\" or \"end of trees\"");
        if (static_cast<int64_t>(trees.size()) >= spec::kMaxTrees)
            unsupported("more than " + std::to_string(spec::kMaxTrees) + " trees are not supported");
        Section s{"tree " + std::to_string(trees.size()), {}, {}};
        for (++at; at < lines.size() && !lines[at].text.empty() && lines[at].text.substr(0, 5) != "Tree=" &&
                   lines[at].text != "end of trees";
             ++at)
            s.add(lines[at]);
        check_interrupts();
        trees.push_back(read_tree(s, num_features));
    }
    if (!ended) bad("the text ends before \"end of trees\" (truncated?)");
    if (const std::string_view* sizes = header.find("tree_sizes"); sizes && tokens(*sizes).size() != trees.size())
        bad("tree_sizes lists " + std::to_string(tokens(*sizes).size()) + " trees, the file has " +
            std::to_string(trees.size()));
    if (trees.size() % per_iteration != 0)
        bad(std::to_string(trees.size()) + " trees are not a whole number of iterations of " +
            std::to_string(per_iteration) + " trees");
    int64_t nodes = 0;
    for (const RawTree& t : trees)
        if ((nodes += 2 * t.num_leaves - 1) > spec::kMaxTotalNodes)
            unsupported("more than " + std::to_string(spec::kMaxTotalNodes) + " nodes are not supported");

    // Iterations used, as predict(num_iteration=...).
    int64_t iterations = static_cast<int64_t>(trees.size()) / per_iteration;
    if (options.num_iteration > 0) iterations = std::min(iterations, options.num_iteration);
    trees.resize(static_cast<size_t>(iterations * per_iteration));

    // Task and link.
    const bool multiclass = objective.o && objective.o->multiclass;
    if (multiclass && (per_iteration != num_class || num_class < 2))
        bad("objective " + objective.text + " needs num_tree_per_iteration = num_class >= 2, got " +
            std::to_string(per_iteration) + " and " + std::to_string(num_class));
    if (!multiclass && per_iteration != 1)
        unsupported(std::to_string(per_iteration) + " trees per iteration without a multiclass objective");
    if (objective.sqrt && !options.raw_score)
        unsupported("objective \"" + objective.text + "\" (reg_sqrt) is not supported; option raw_score gives its raw scores");
    const PostTransform transform =
        options.raw_score || !objective.o ? PostTransform::Identity : objective.o->transform;
    // average_output divides in predict() only: LightGBM's raw scores are the plain sums.
    double scale = average_output && !options.raw_score && iterations > 0 ? 1.0 / static_cast<double>(iterations) : 1.0;
    if (transform == PostTransform::Logistic) scale *= objective.sigmoid;  // σ(k·m): k in the leaves

    // A binary classifier's raw score is one value: a regression. A multiclass one's raw
    // scores stay per class (predict_proba returns them, predict their argmax).
    const bool classifier = objective.o && objective.o->task == Task::Classification;
    if (classifier && (multiclass || !options.raw_score)) {
        p.task = Task::Classification;
        for (int64_t c = 0; c < (multiclass ? per_iteration : 2); ++c) p.classes.push_back(static_cast<double>(c));
    } else {
        p.task = Task::Regression;
    }
    p.transform = transform;  // Logistic is per class for multiclassova, as LightGBM

    // Derived columns, then the trees over them.
    Columns cols(num_features);
    for (const RawTree& t : trees) cols.note(t);
    cols.layout();
    spec::TreeEnsemble& m = p.model;
    m.num_groups = static_cast<int32_t>(per_iteration);
    m.comparison = spec::Comparison::LessEqual;
    m.base_margin.assign(per_iteration, 0.0f);
    if (cols.width > 0) {
        p.steps = cols.steps();
        m.num_features = cols.width;
    } else {
        m.num_features = static_cast<int32_t>(num_features);  // no split at all: a bare model
    }
    m.trees.reserve(trees.size());
    for (size_t i = 0; i < trees.size(); ++i) {
        check_interrupts();
        m.trees.push_back(to_spec_tree(trees[i], cols, static_cast<int32_t>(i % per_iteration), scale));
    }
    spec::validate(p);
    return p;
}

}  // namespace

spec::Pipeline import_lightgbm(std::string_view text, const json& options) {
    return import_text(text, options);
}

}  // namespace pg_predict::importers
