// The spec's JSON form, as stored in the catalog and shown to users.
//
// Floats are the delicate part: the document must read back bit for bit, yet stay readable.
// A float32 is written with the shortest digits that identify it ("0.3", not
// "0.30000001192092896"); nlohmann keeps numbers as double, so we check that those digits also
// survive the decimal → double → float path and fall back to 9 significant digits (always
// exact) when they do not. Non-finite values, which JSON cannot hold, are the strings "NaN",
// "Infinity" and "-Infinity".
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "pg_predict/common/interrupt.hpp"
#include "pg_predict/common/error.hpp"
#include "pg_predict/spec/limits.hpp"
#include "pg_predict/spec/pipeline.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::spec {

namespace {

using nlohmann::json;

// Version 1: a bare tree ensemble. Version 2 adds steps, text_inputs, estimator,
// has_probabilities and the transforms ovr / two_sided; a pipeline that uses none of them is
// still written as version 1.
constexpr int kFormatVersion = 2;

const char* comparison_name(Comparison c) {
    return c == Comparison::Less ? "<" : "<=";
}

json float_to_json(float f) {
    if (std::isnan(f)) return "NaN";
    if (std::isinf(f)) return f > 0 ? "Infinity" : "-Infinity";
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, f);
    *res.ptr = '\0';
    double d = std::strtod(buf, nullptr);
    if (static_cast<float>(d) != f) {
        std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(f));
        d = std::strtod(buf, nullptr);
    }
    return d;
}

json floats_to_json(const std::vector<float>& v) {
    json a = json::array();
    for (float f : v) a.push_back(float_to_json(f));
    return a;
}

// --- reading: every accessor names the field it complains about -------------------------

[[noreturn]] void bad(const std::string& field, const std::string& what) {
    fail(ErrorCategory::InvalidModel, "pipeline spec: field \"" + field + "\" " + what);
}

std::string join(const std::string& path, const char* key) {
    return path.empty() ? key : path + "." + key;
}

const json& member(const json& obj, const std::string& path, const char* key) {
    auto it = obj.find(key);
    if (it == obj.end()) bad(join(path, key), "is missing");
    return *it;
}

const json& object_at(const json& obj, const std::string& path, const char* key) {
    const json& v = member(obj, path, key);
    if (!v.is_object()) bad(join(path, key), "must be an object");
    return v;
}

const json& array_at(const json& obj, const std::string& path, const char* key) {
    const json& v = member(obj, path, key);
    if (!v.is_array()) bad(join(path, key), "must be an array");
    return v;
}

std::string string_at(const json& obj, const std::string& path, const char* key) {
    const json& v = member(obj, path, key);
    if (!v.is_string()) bad(join(path, key), "must be a string");
    return v.get<std::string>();
}

int32_t int_of(const json& v, const std::string& field) {
    if (!v.is_number_integer()) bad(field, "must be an integer");
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT32_MAX))
        bad(field, "is out of the int32 range");
    int64_t i = v.get<int64_t>();
    if (i < INT32_MIN || i > INT32_MAX) bad(field, "is out of the int32 range");
    return static_cast<int32_t>(i);
}

int32_t int_at(const json& obj, const std::string& path, const char* key) {
    return int_of(member(obj, path, key), join(path, key));
}

float float_of(const json& v, const std::string& field) {
    if (v.is_number()) return static_cast<float>(v.get<double>());
    if (v.is_string()) {
        const std::string& s = v.get_ref<const std::string&>();
        if (s == "NaN") return NAN;
        if (s == "Infinity") return INFINITY;
        if (s == "-Infinity") return -INFINITY;
    }
    bad(field, "must be a number (or \"NaN\", \"Infinity\", \"-Infinity\")");
}

std::string item(const std::string& field, size_t i) {
    return field + "[" + std::to_string(i) + "]";
}

std::vector<float> floats_at(const json& obj, const std::string& path, const char* key) {
    const json& a = array_at(obj, path, key);
    std::vector<float> out;
    out.reserve(a.size());
    for (size_t i = 0; i < a.size(); ++i) out.push_back(float_of(a[i], item(join(path, key), i)));
    return out;
}

std::vector<int32_t> ints_at(const json& obj, const std::string& path, const char* key) {
    const json& a = array_at(obj, path, key);
    std::vector<int32_t> out;
    out.reserve(a.size());
    for (size_t i = 0; i < a.size(); ++i) out.push_back(int_of(a[i], item(join(path, key), i)));
    return out;
}

std::vector<uint8_t> flags_at(const json& obj, const std::string& path, const char* key) {
    const json& a = array_at(obj, path, key);
    std::vector<uint8_t> out;
    out.reserve(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
        const json& v = a[i];
        if (v.is_boolean()) {
            out.push_back(v.get<bool>() ? 1 : 0);
        } else if (v.is_number_integer() && (v.get<int64_t>() == 0 || v.get<int64_t>() == 1)) {
            out.push_back(static_cast<uint8_t>(v.get<int64_t>()));
        } else {
            bad(item(join(path, key), i), "must be a boolean");
        }
    }
    return out;
}

Task task_of(const std::string& s, const std::string& field) {
    for (Task t : {Task::Regression, Task::Classification})
        if (s == task_name(t)) return t;
    bad(field, "must be \"regression\" or \"classification\", not \"" + s + "\"");
}

PostTransform transform_of(const std::string& s, const std::string& field) {
    for (PostTransform t : {PostTransform::Identity, PostTransform::Logistic,
                            PostTransform::Softmax, PostTransform::Exp, PostTransform::Ovr,
                            PostTransform::TwoSided, PostTransform::Complement, PostTransform::ModifiedHuber})
        if (s == transform_name(t)) return t;
    bad(field, "must be one of identity, logistic, softmax, exp, ovr, two_sided, complement, modified_huber, "
               "not \"" + s + "\"");
}

Comparison comparison_of(const std::string& s, const std::string& field) {
    for (Comparison c : {Comparison::Less, Comparison::LessEqual})
        if (s == comparison_name(c)) return c;
    bad(field, "must be \"<\" or \"<=\", not \"" + s + "\"");
}

Tree tree_from_json(const json& t, const std::string& path) {
    if (!t.is_object()) bad(path, "must be an object");
    Tree tree;
    tree.group = int_at(t, path, "group");
    tree.left = ints_at(t, path, "left");
    tree.right = ints_at(t, path, "right");
    tree.feature = ints_at(t, path, "feature");
    tree.threshold = floats_at(t, path, "threshold");
    tree.default_left = flags_at(t, path, "default_left");
    tree.value = floats_at(t, path, "value");
    return tree;
}

json step_to_json(const Step& s) {
    json j = {{"op", op_name(s.op)}, {"params", s.params.is_null() ? json::object() : s.params}};
    if (s.op == Op::Concat) {
        json parts = json::array();
        for (const Step::Part& part : s.parts) {
            json steps = json::array();
            for (const Step& sub : part.steps) steps.push_back(step_to_json(sub));
            parts.push_back({{"columns", part.columns}, {"steps", steps}});
        }
        j["parts"] = parts;
    }
    return j;
}

Step step_from_json(const json& j, const std::string& path) {
    if (!j.is_object()) bad(path, "must be an object");
    Step s;
    const std::string op = string_at(j, path, "op");
    const std::optional<Op> known = op_from_name(op);
    if (!known) fail(ErrorCategory::Unsupported, "pipeline spec: " + path + ": op \"" + op + "\" is not supported");
    s.op = *known;
    s.params = object_at(j, path, "params");
    if (j.contains("parts")) {
        const json& parts = array_at(j, path, "parts");
        for (size_t i = 0; i < parts.size(); ++i) {
            const std::string at = item(join(path, "parts"), i);
            if (!parts[i].is_object()) bad(at, "must be an object");
            Step::Part part;
            part.columns = ints_at(parts[i], at, "columns");
            const json& steps = array_at(parts[i], at, "steps");
            for (size_t k = 0; k < steps.size(); ++k)
                part.steps.push_back(step_from_json(steps[k], item(join(at, "steps"), k)));
            s.parts.push_back(std::move(part));
        }
    }
    return s;
}

bool needs_version_2(const Pipeline& p) {
    return !p.steps.empty() || !p.text_inputs.empty() || p.estimator.op != Op::None || !p.has_probabilities ||
           p.transform == PostTransform::Ovr || p.transform == PostTransform::TwoSided ||
           p.transform == PostTransform::Complement || p.transform == PostTransform::ModifiedHuber;
}

}  // namespace

std::string to_json(const Pipeline& p) {
    json trees = json::array();
    for (const Tree& t : p.model.trees) {
        check_interrupts();
        json dl = json::array();
        for (uint8_t b : t.default_left) dl.push_back(b != 0);
        trees.push_back({
            {"group", t.group},
            {"left", t.left},
            {"right", t.right},
            {"feature", t.feature},
            {"threshold", floats_to_json(t.threshold)},
            {"default_left", dl},
            {"value", floats_to_json(t.value)},
        });
    }
    // classes are doubles: nlohmann writes doubles with round-trip precision already.
    json doc = {
        {"format_version", kFormatVersion},
        {"source_format", p.source_format},
        {"objective", p.objective},
        {"task", task_name(p.task)},
        {"classes", p.classes},
        {"features", p.features},
        {"transform", transform_name(p.transform)},
        {"model",
         {
             {"type", "tree_ensemble"},
             {"num_features", p.model.num_features},
             {"num_groups", p.model.num_groups},
             {"comparison", comparison_name(p.model.comparison)},
             {"base_margin", floats_to_json(p.model.base_margin)},
             {"trees", trees},
         }},
    };
    if (needs_version_2(p)) {
        doc["format_version"] = 2;
        json steps = json::array();
        for (const Step& st : p.steps) steps.push_back(step_to_json(st));
        doc["steps"] = steps;
        json texts = json::array();
        for (const TextInput& t : p.text_inputs)
            texts.push_back({{"input", t.input}, {"vocabulary", t.vocabulary}, {"unknown_is_error", t.unknown_is_error}});
        doc["text_inputs"] = texts;
        doc["estimator"] = p.estimator.op == Op::None ? json(nullptr) : step_to_json(p.estimator);
        doc["has_probabilities"] = p.has_probabilities;
    } else {
        doc["format_version"] = 1;
    }
    // Compact: the catalog keeps it as jsonb, and jsonb_pretty() is there for reading.
    return doc.dump();
}

Pipeline from_json(const std::string& text) {
    check_json_depth(text, "pipeline spec");
    json doc;
    try {
        doc = json::parse(text);
    } catch (const json::exception& e) {
        fail(ErrorCategory::InvalidModel, std::string("pipeline spec is not valid JSON: ") + e.what());
    }
    if (!doc.is_object()) fail(ErrorCategory::InvalidModel, "pipeline spec must be a JSON object");

    int version = int_at(doc, "", "format_version");
    if (version < 1 || version > kFormatVersion)
        bad("format_version", "is " + std::to_string(version) + "; this build reads versions 1 to " +
                                  std::to_string(kFormatVersion));

    Pipeline p;
    p.source_format = string_at(doc, "", "source_format");
    p.objective = string_at(doc, "", "objective");
    p.task = task_of(string_at(doc, "", "task"), "task");
    p.transform = transform_of(string_at(doc, "", "transform"), "transform");

    const json& classes = array_at(doc, "", "classes");
    for (size_t i = 0; i < classes.size(); ++i) {
        if (!classes[i].is_number()) bad(item("classes", i), "must be a number");
        p.classes.push_back(classes[i].get<double>());
    }
    const json& features = array_at(doc, "", "features");
    for (size_t i = 0; i < features.size(); ++i) {
        if (!features[i].is_string()) bad(item("features", i), "must be a string");
        p.features.push_back(features[i].get<std::string>());
    }

    const json& m = object_at(doc, "", "model");
    std::string type = string_at(m, "model", "type");
    if (type != "tree_ensemble")
        fail(ErrorCategory::Unsupported, "pipeline spec: model type \"" + type + "\" is not supported");
    p.model.num_features = int_at(m, "model", "num_features");
    p.model.num_groups = int_at(m, "model", "num_groups");
    p.model.comparison = comparison_of(string_at(m, "model", "comparison"), "model.comparison");
    p.model.base_margin = floats_at(m, "model", "base_margin");
    const json& trees = array_at(m, "model", "trees");
    p.model.trees.reserve(trees.size());
    for (size_t i = 0; i < trees.size(); ++i) {
        check_interrupts();
        p.model.trees.push_back(tree_from_json(trees[i], item("model.trees", i)));
    }
    if (version >= 2) {
        const json& steps = array_at(doc, "", "steps");
        for (size_t i = 0; i < steps.size(); ++i) p.steps.push_back(step_from_json(steps[i], item("steps", i)));
        const json& texts = array_at(doc, "", "text_inputs");
        for (size_t i = 0; i < texts.size(); ++i) {
            const std::string at = item("text_inputs", i);
            if (!texts[i].is_object()) bad(at, "must be an object");
            TextInput t;
            t.input = int_at(texts[i], at, "input");
            const json& vocab = array_at(texts[i], at, "vocabulary");
            for (size_t k = 0; k < vocab.size(); ++k) {
                if (!vocab[k].is_string()) bad(item(join(at, "vocabulary"), k), "must be a string");
                t.vocabulary.push_back(vocab[k].get<std::string>());
            }
            const json& err = member(texts[i], at, "unknown_is_error");
            if (!err.is_boolean()) bad(join(at, "unknown_is_error"), "must be a boolean");
            t.unknown_is_error = err.get<bool>();
            p.text_inputs.push_back(std::move(t));
        }
        const json& est = member(doc, "", "estimator");
        if (!est.is_null()) p.estimator = step_from_json(est, "estimator");
        const json& proba = member(doc, "", "has_probabilities");
        if (!proba.is_boolean()) bad("has_probabilities", "must be a boolean");
        p.has_probabilities = proba.get<bool>();
    }
    // Whoever reads a spec goes on to index its arrays: hand out only sound ones.
    validate(p);
    return p;
}

}  // namespace pg_predict::spec
