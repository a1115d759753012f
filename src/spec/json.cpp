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
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "pg_predict/common/interrupt.hpp"
#include "pg_predict/common/error.hpp"
#include "pg_predict/spec/json_reader.hpp"
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

// --- reading: through the one JSON reader (spec/json_reader.hpp) ---------------------------

std::vector<float> floats(const JsonReader& a) {
    const std::vector<double> d = a.numbers();
    return std::vector<float>(d.begin(), d.end());
}

int32_t int32(const JsonReader& v) { return static_cast<int32_t>(v.integer(INT32_MIN, INT32_MAX)); }

std::vector<uint8_t> flags(const JsonReader& a) {
    a.expect_array();
    std::vector<uint8_t> out;
    out.reserve(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
        const json& v = a.value()[i];
        if (v.is_boolean()) out.push_back(v.get<bool>() ? 1 : 0);
        else out.push_back(static_cast<uint8_t>(a[i].integer(0, 1)));
    }
    return out;
}

Task task_of(const JsonReader& v) {
    const std::string s = v.string();
    for (Task t : {Task::Regression, Task::Classification, Task::Transform})
        if (s == task_name(t)) return t;
    v.invalid("must be \"regression\", \"classification\" or \"transformer\", not \"" + s + "\"");
}

PostTransform transform_of(const JsonReader& v) {
    const std::string s = v.string();
    for (PostTransform t : {PostTransform::Identity, PostTransform::Logistic,
                            PostTransform::Softmax, PostTransform::Exp, PostTransform::Ovr,
                            PostTransform::TwoSided, PostTransform::Complement, PostTransform::ModifiedHuber})
        if (s == transform_name(t)) return t;
    v.invalid("must be one of identity, logistic, softmax, exp, ovr, two_sided, complement, modified_huber, "
              "not \"" + s + "\"");
}

Comparison comparison_of(const JsonReader& v) {
    const std::string s = v.string();
    for (Comparison c : {Comparison::Less, Comparison::LessEqual})
        if (s == comparison_name(c)) return c;
    v.invalid("must be \"<\" or \"<=\", not \"" + s + "\"");
}

Tree tree_from_json(const JsonReader& t) {
    t.expect_object();
    Tree tree;
    tree.group = int32(t.need("group"));
    tree.left = t.array("left").integers(INT32_MIN, INT32_MAX);
    tree.right = t.array("right").integers(INT32_MIN, INT32_MAX);
    tree.feature = t.array("feature").integers(INT32_MIN, INT32_MAX);
    tree.threshold = floats(t.array("threshold"));
    tree.default_left = flags(t.array("default_left"));
    tree.value = floats(t.array("value"));
    if (const auto cover = t.optional("cover")) tree.cover = cover->finite_numbers();  // TreeSHAP only
    if (const auto lin = t.optional("linear")) {  // LightGBM linear leaves
        lin->expect_object();
        tree.linear_const = lin->array("const").finite_numbers();
        const JsonReader features = lin->array("feature"), coeff = lin->array("coeff");
        for (size_t i = 0; i < features.size(); ++i)
            tree.linear_feature.push_back(features[i].expect_array().integers(INT32_MIN, INT32_MAX));
        for (size_t i = 0; i < coeff.size(); ++i) tree.linear_coeff.push_back(coeff[i].expect_array().finite_numbers());
    }
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

Step step_from_json(const JsonReader& j) {
    j.expect_object();
    Step s;
    const JsonReader op = j.need("op");
    const std::optional<Op> known = op_from_name(op.string());
    if (!known) op.unsupported("op \"" + op.string() + "\" is not supported");
    s.op = *known;
    s.params = j.object("params").value();
    if (auto parts = j.optional("parts")) {
        for (size_t i = 0; i < parts->size(); ++i) {
            const JsonReader part = (*parts)[i].expect_object();
            Step::Part sp;
            sp.columns = part.array("columns").integers(INT32_MIN, INT32_MAX);
            const JsonReader steps = part.array("steps");
            for (size_t k = 0; k < steps.size(); ++k) sp.steps.push_back(step_from_json(steps[k]));
            s.parts.push_back(std::move(sp));
        }
    }
    return s;
}

// json::dump, with an interrupt check every MB written: a 100k-tree spec is ~60 MB of text.
class CheckingOutput : public nlohmann::detail::output_adapter_protocol<char> {
public:
    explicit CheckingOutput(std::string& out) : out_(out) {}
    void write_character(char c) override {
        out_.push_back(c);
        poll();
    }
    void write_characters(const char* s, std::size_t length) override {
        out_.append(s, length);
        poll();
    }

private:
    void poll() {
        if (out_.size() >= next_check_) {
            check_interrupts();
            next_check_ = out_.size() + (1u << 20);
        }
    }
    std::string& out_;
    std::size_t next_check_ = 1u << 20;
};

std::string dump_interruptible(const json& doc) {
    std::string out;
    nlohmann::detail::serializer<json> writer(std::make_shared<CheckingOutput>(out), ' ');
    writer.dump(doc, false, false, 0);
    return out;
}

bool needs_version_2(const Pipeline& p) {
    return !p.steps.empty() || !p.text_inputs.empty() || !p.text_vectorizers.empty() || p.estimator.op != Op::None || !p.has_probabilities ||
           p.transform == PostTransform::Ovr || p.transform == PostTransform::TwoSided ||
           p.transform == PostTransform::Complement || p.transform == PostTransform::ModifiedHuber ||
           p.task == Task::Transform || p.decision_scale != 1.0 || p.score_offset != 0.0 || !p.decision_shape.empty() ||
           p.decision_columns ||
           p.outputs != 1;
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
        if (t.has_cover()) trees.back()["cover"] = t.cover;
        if (t.is_linear())
            trees.back()["linear"] = {{"const", t.linear_const}, {"feature", t.linear_feature}, {"coeff", t.linear_coeff}};
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
    if (!p.model.inputs_without_missing_rule.empty())  // absent: none (every spec before 0.8.0)
        doc["model"]["inputs_without_missing_rule"] = p.model.inputs_without_missing_rule;
    if (needs_version_2(p)) {
        doc["format_version"] = 2;
        json steps = json::array();
        for (const Step& st : p.steps) steps.push_back(step_to_json(st));
        doc["steps"] = steps;
        json texts = json::array();
        for (const TextInput& t : p.text_inputs) {
            json text = {{"input", t.input}, {"vocabulary", t.vocabulary}, {"unknown_is_error", t.unknown_is_error}};
            if (t.unknown_is_missing) text["unknown_is_missing"] = true;  // absent in older specs
            texts.push_back(std::move(text));
        }
        doc["text_inputs"] = texts;
        if (!p.text_vectorizers.empty()) {  // absent in older specs
            json vectorizers = json::array();
            for (const TextVectorizer& v : p.text_vectorizers)
                vectorizers.push_back({{"input", v.input}, {"slots", v.slots}, {"vectorizer", v.vectorizer}});
            doc["text_vectorizers"] = std::move(vectorizers);
        }
        doc["estimator"] = p.estimator.op == Op::None ? json(nullptr) : step_to_json(p.estimator);
        doc["has_probabilities"] = p.has_probabilities;
        // Written only when set, so specs stored before they existed read back the same.
        if (p.decision_scale != 1.0) doc["decision_scale"] = p.decision_scale;
        if (p.decision_columns) doc["decision_columns"] = true;
        if (p.score_offset != 0.0) doc["score_offset"] = p.score_offset;
        if (!p.decision_shape.empty()) doc["decision_shape"] = p.decision_shape;
        if (p.outputs != 1) doc["outputs"] = p.outputs;
    } else {
        doc["format_version"] = 1;
    }
    if (!p.class_labels.empty()) doc["class_labels"] = p.class_labels;  // absent: numeric labels
    if (!p.import_paths.empty()) doc["import_paths"] = p.import_paths;
    // Compact: the catalog keeps it as jsonb, and jsonb_pretty() is there for reading.
    try {
        return dump_interruptible(doc);
    } catch (const json::type_error& e) {  // a text that is not UTF-8 (validate names the field)
        fail(ErrorCategory::InvalidModel, std::string("pipeline spec: ") + e.what());
    }
}

Pipeline from_json(const std::string& text) {
    check_json_depth(text, "pipeline spec");
    json doc;
    try {
        doc = json::parse(text);
    } catch (const json::exception& e) {
        fail(ErrorCategory::InvalidModel, std::string("pipeline spec is not valid JSON: ") + e.what());
    }
    const JsonReader root(doc, "pipeline spec");
    root.expect_object();

    const JsonReader fv = root.need("format_version");
    const int64_t version = fv.integer(INT32_MIN, INT32_MAX);
    if (version < 1 || version > kFormatVersion)
        fv.invalid("is " + std::to_string(version) + "; this build reads versions 1 to " +
                   std::to_string(kFormatVersion));

    Pipeline p;
    p.source_format = root.string("source_format");
    p.objective = root.string("objective");
    p.task = task_of(root.need("task"));
    p.transform = transform_of(root.need("transform"));
    const JsonReader classes = root.array("classes");
    for (size_t i = 0; i < classes.size(); ++i) {
        if (!classes.value()[i].is_number()) classes[i].invalid("must be a number");
        p.classes.push_back(classes.value()[i].get<double>());
    }
    if (root.has("class_labels")) {
        const JsonReader labels = root.array("class_labels");
        for (size_t i = 0; i < labels.size(); ++i) p.class_labels.push_back(labels[i].string());
    }
    if (root.has("import_paths")) {
        const JsonReader paths = root.array("import_paths");
        for (size_t i = 0; i < paths.size(); ++i) p.import_paths.push_back(paths[i].string());
    }
    const JsonReader features = root.array("features");
    for (size_t i = 0; i < features.size(); ++i) p.features.push_back(features[i].string());

    const JsonReader m = root.object("model");
    const JsonReader type = m.need("type");
    if (type.string() != "tree_ensemble") type.unsupported("model type \"" + type.string() + "\" is not supported");
    p.model.num_features = int32(m.need("num_features"));
    p.model.num_groups = int32(m.need("num_groups"));
    p.model.comparison = comparison_of(m.need("comparison"));
    p.model.base_margin = floats(m.array("base_margin"));
    if (m.has("inputs_without_missing_rule"))
        p.model.inputs_without_missing_rule = m.array("inputs_without_missing_rule").integers(0, INT32_MAX);
    const JsonReader trees = m.array("trees");
    p.model.trees.reserve(trees.size());
    for (size_t i = 0; i < trees.size(); ++i) {
        check_interrupts();
        p.model.trees.push_back(tree_from_json(trees[i]));
    }
    if (version >= 2) {
        const JsonReader steps = root.array("steps");
        for (size_t i = 0; i < steps.size(); ++i) p.steps.push_back(step_from_json(steps[i]));
        const JsonReader texts = root.array("text_inputs");
        for (size_t i = 0; i < texts.size(); ++i) {
            const JsonReader text = texts[i].expect_object();
            TextInput t;
            t.input = int32(text.need("input"));
            const JsonReader vocab = text.array("vocabulary");
            for (size_t k = 0; k < vocab.size(); ++k) t.vocabulary.push_back(vocab[k].string());
            t.unknown_is_error = text.boolean("unknown_is_error");
            if (auto missing = text.optional("unknown_is_missing")) t.unknown_is_missing = missing->boolean();
            if (t.unknown_is_error && t.unknown_is_missing)
                text.invalid("has both unknown_is_error and unknown_is_missing");
            p.text_inputs.push_back(std::move(t));
        }
        if (auto vectorizers = root.optional("text_vectorizers"))
            for (size_t i = 0; i < vectorizers->size(); ++i) {
                const JsonReader v = (*vectorizers)[i].expect_object();
                TextVectorizer t;
                t.input = int32(v.need("input"));
                const JsonReader slots = v.array("slots");
                for (size_t k = 0; k < slots.size(); ++k) t.slots.push_back(int32(slots[k]));
                t.vectorizer = v.object("vectorizer").value();
                p.text_vectorizers.push_back(std::move(t));
            }
        if (auto est = root.optional("estimator")) p.estimator = step_from_json(*est);  // null: none
        p.has_probabilities = root.boolean("has_probabilities");
        if (auto v = root.optional("decision_scale")) p.decision_scale = v->finite();
        if (auto v = root.optional("decision_columns")) p.decision_columns = v->boolean();
        if (auto v = root.optional("score_offset")) p.score_offset = v->finite();
        if (auto v = root.optional("decision_shape")) p.decision_shape = v->string();
        if (auto v = root.optional("outputs")) p.outputs = int32(*v);
    }
    // Whoever reads a spec goes on to index its arrays: hand out only sound ones.
    validate(p);
    return p;
}

}  // namespace pg_predict::spec
