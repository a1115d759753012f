// Predicate-based pruning on the runtime's side (runtime/api.hpp): the canonical text of a
// query's bounds, and the specialized pipeline for them (optimizer/specialize.hpp). No torch
// here: the planner calls plan_specialization, the cache (cache.cpp) compiles what specialized() gives.
//
// The planner specializes once per (model version, bounds) in a backend: the parsed model is
// kept for the last two versions (a 500-tree spec takes tens of ms to parse) and each
// specialization's summary for the last few dozen bounds, so a prepared statement re-planned or
// a query repeated costs a lookup. The specialized pipeline itself is made again when the
// program is compiled (once per backend per bounds), not kept.
#include <algorithm>
#include <cstdio>
#include <limits>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <utility>

#include <nlohmann/json.hpp>

#include "pg_predict/common/error.hpp"
#include "pg_predict/optimizer/optimize.hpp"
#include "pg_predict/optimizer/specialize.hpp"
#include "pg_predict/runtime/api.hpp"
#include "bound_specialization_internal.hpp"

namespace pg_predict::runtime {

namespace {

using nlohmann::json;

constexpr size_t kKeptModels = 2;
constexpr size_t kKeptSummaries = 64;

// Exact text of a double ("%a" reads back bit for bit; infinities as "inf" / "-inf").
std::string exact(double v) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%a", v);
    return buffer;
}

double read_exact(const json& v) {
    if (!v.is_string()) fail(ErrorCategory::Internal, "pruning bounds: a bound is not a string");
    const std::string s = v.get<std::string>();
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (end == s.c_str() || *end != '\0') fail(ErrorCategory::Internal, "pruning bounds: bad number " + s);
    return d;
}

struct Model {
    int64_t id;
    std::shared_ptr<const spec::Pipeline> optimized;
};

// A planner's summary, without the specialized pipeline (compile_specialized makes that again: a
// walk over the nodes), so the memo stays small whatever the models' size.
struct Summarized {
    int64_t id;
    std::string bounds;
    SpecializationSummary summary;
};

std::deque<Model>& models() {
    static auto* m = new std::deque<Model>;
    return *m;
}

std::deque<Summarized>& summaries() {
    static auto* s = new std::deque<Summarized>;
    return *s;
}

std::shared_ptr<const spec::Pipeline> find_model(int64_t id) {
    for (const Model& m : models())
        if (m.id == id) return m.optimized;
    return nullptr;
}

std::shared_ptr<const spec::Pipeline> parse_model(int64_t id, const char* spec_json, size_t length) {
    if (spec_json == nullptr) fail(ErrorCategory::Internal, "pruning: null spec");
    spec::Pipeline p = spec::from_json(std::string(spec_json, length));
    spec::validate(p);
    auto optimized = std::make_shared<const spec::Pipeline>(optimizer::optimize(p));  // as create_model compiled it
    models().push_front(Model{id, optimized});
    if (models().size() > kKeptModels) models().pop_back();
    return optimized;
}

// The value sets of `bounds` for pipeline p: a text value becomes its vocabulary index; one the
// encoder refuses (handle_unknown = "error") bounds nothing, so such rows still fail.
std::map<int32_t, optimizer::ValueSet> value_sets(const spec::Pipeline& p, const std::vector<InputBound>& bounds) {
    std::map<int32_t, optimizer::ValueSet> sets;
    for (const InputBound& b : bounds) {
        optimizer::ValueSet s;
        if (b.is_text) {
            // The indices' range: a superset of the values (one-hot folds the categories outside it).
            bool refused = b.texts.empty(), missing = false, values = false;
            double lo = std::numeric_limits<double>::infinity(), hi = -lo;
            for (const std::string& text : b.texts) {
                const int32_t index = optimizer::text_value_index(p, b.input, text);
                refused = refused || index == -2;
                if (index == optimizer::kMissingText) {  // read as NULL is
                    missing = true;
                    continue;
                }
                values = true;
                lo = std::min(lo, static_cast<double>(index));
                hi = std::max(hi, static_cast<double>(index));
            }
            if (refused) continue;
            s.lo = lo;
            s.hi = hi;
            s.values = values;
            s.missing = missing;
        } else {
            s.lo = b.lo;
            s.hi = b.hi;
            s.values = b.values;
            s.missing = b.missing;
        }
        sets[b.input] = s;
    }
    return sets;
}

}  // namespace

std::string encode_bounds(const std::vector<InputBound>& bounds) {
    std::map<int32_t, json> by_input;  // ordered by input: one text per set of bounds
    for (const InputBound& b : bounds) {
        json j = {{"input", b.input}};
        if (b.is_text) {
            std::vector<std::string> texts = b.texts;  // a set: one text for each
            std::sort(texts.begin(), texts.end());
            texts.erase(std::unique(texts.begin(), texts.end()), texts.end());
            j["texts"] = texts;
        } else {
            j["lo"] = exact(b.lo);
            j["hi"] = exact(b.hi);
            j["values"] = b.values;
            j["missing"] = b.missing;
        }
        by_input[b.input] = std::move(j);
    }
    json all = json::array();
    for (auto& [input, j] : by_input) all.push_back(std::move(j));
    return all.dump();
}

std::vector<InputBound> decode_bounds(const std::string& text) {
    const json all = json::parse(text, nullptr, false);
    if (!all.is_array()) fail(ErrorCategory::Internal, "pruning bounds: not a JSON array");
    std::vector<InputBound> bounds;
    for (const json& j : all) {
        InputBound b;
        b.input = j.at("input").get<int32_t>();
        if (j.contains("texts")) {
            b.is_text = true;
            b.texts = j["texts"].get<std::vector<std::string>>();
        } else {
            b.lo = read_exact(j.at("lo"));
            b.hi = read_exact(j.at("hi"));
            b.values = j.at("values").get<bool>();
            b.missing = j.at("missing").get<bool>();
        }
        bounds.push_back(std::move(b));
    }
    return bounds;
}

bool specialization_spec_loaded(int64_t id) { return find_model(id) != nullptr; }

void load_specialization_spec(int64_t id, const char* spec_json, size_t length) {
    if (!specialization_spec_loaded(id)) parse_model(id, spec_json, length);
}

optimizer::Specialization specialized(int64_t id, const std::string& bounds, const char* spec_json, size_t length) {
    std::shared_ptr<const spec::Pipeline> model = find_model(id);
    if (model == nullptr) model = parse_model(id, spec_json, length);
    return optimizer::specialize(*model, value_sets(*model, decode_bounds(bounds)));
}

SpecializationSummary plan_specialization(int64_t id, const std::string& bounds) {
    if (!specialization_spec_loaded(id)) fail(ErrorCategory::Internal, "plan_specialization: the model's spec is not loaded");
    for (const Summarized& s : summaries())
        if (s.id == id && s.bounds == bounds) return s.summary;
    const optimizer::Specialization s = specialized(id, bounds, nullptr, 0);
    SpecializationSummary summary;
    summary.pruned = s.changed;
    summary.trees = s.trees;
    summary.nodes_before = s.nodes_before;
    summary.nodes_after = s.nodes_after;
    summary.unused_inputs = s.unused_inputs;
    summaries().push_front(Summarized{id, bounds, summary});
    if (summaries().size() > kKeptSummaries) summaries().pop_back();
    return summary;
}

}  // namespace pg_predict::runtime
