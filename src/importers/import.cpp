// Format detection and dispatch to the per-format importers: one table of formats. A new format
// is one row (its name, the SQL types it may come as, its detection rule, its importer).
#include <optional>
#include <string>

#include "pg_predict/common/error.hpp"
#include "pg_predict/common/interrupt.hpp"
#include "pg_predict/importers/import.hpp"
#include "pg_predict/importers/sklearn.hpp"
#include "pg_predict/spec/limits.hpp"

namespace pg_predict::importers {

namespace {

using nlohmann::json;

// The SQL types an artifact of a format may come as.
constexpr unsigned kJsonb = 1u << static_cast<unsigned>(ArtifactKind::Json);
constexpr unsigned kText = 1u << static_cast<unsigned>(ArtifactKind::Text);
constexpr unsigned kBytea = 1u << static_cast<unsigned>(ArtifactKind::Binary);

unsigned bit(ArtifactKind kind) { return 1u << static_cast<unsigned>(kind); }

// What an importer gets: the artifact's bytes, and for a JSON format the parsed document.
struct Input {
    std::string_view bytes;
    const json* document;  // JSON formats only
};

struct Format {
    const char* name;
    const char* detected_by;  // for the error that no format matched
    unsigned kinds;           // kJsonb | kText | kBytea
    bool reads_json;          // a JSON document: parsed before detect and import see it
    bool (*detect)(const Input&);
    spec::Pipeline (*import)(const Input&, const json& options);
};

bool looks_like_xgboost(const json& a) {
    // Booster.save_model writes {"learner": {..., "gradient_booster": ...}, "version": [...]}.
    if (!a.is_object()) return false;
    auto learner = a.find("learner");
    return learner != a.end() && learner->is_object() && learner->contains("gradient_booster");
}

bool looks_like_sklearn(const json& a) {
    if (!a.is_object()) return false;
    auto f = a.find("format");
    return f != a.end() && *f == "sklearn";
}

const Format kFormats[] = {
    {"xgboost", "a JSON document with a top-level \"learner\" object holding a \"gradient_booster\"",
     kJsonb | kText | kBytea, true,
     [](const Input& in) { return looks_like_xgboost(*in.document); },
     [](const Input& in, const json& options) { return import_xgboost(*in.document, options); }},
    {"sklearn", "a JSON document with \"format\": \"sklearn\"", kJsonb | kText | kBytea, true,
     [](const Input& in) { return looks_like_sklearn(*in.document); },
     [](const Input& in, const json&) { return import_sklearn(*in.document); }},
    {"lightgbm", "a text starting \"tree\" then \"version=v...\" (Booster.save_model)", kText | kBytea, false,
     [](const Input& in) { return looks_like_lightgbm(in.bytes); },
     [](const Input& in, const json& options) { return import_lightgbm(in.bytes, options); }},
    {"onnx", "an ONNX ModelProto (protobuf: ir_version, ..., graph)", kBytea, false,
     [](const Input& in) { return looks_like_onnx(in.bytes); },
     [](const Input& in, const json& options) { return import_onnx(in.bytes, options); }},
    {"torchscript", "a zip archive from torch.jit.save holding <name>/data.pkl and <name>/code/", kBytea, false,
     [](const Input& in) { return looks_like_torchscript(in.bytes); },
     [](const Input& in, const json& options) { return import_torchscript(in.bytes, options); }},
};

const Format* find_format(const std::string& name) {
    for (const Format& f : kFormats)
        if (name == f.name) return &f;
    return nullptr;
}

std::string known_formats() {
    std::string out = "auto";
    for (const Format& f : kFormats) out += std::string(", ") + f.name;
    return out;
}

std::string kind_names(unsigned kinds) {
    std::string out;
    for (ArtifactKind k : {ArtifactKind::Json, ArtifactKind::Text, ArtifactKind::Binary})
        if (kinds & bit(k)) out += std::string(out.empty() ? "" : " or ") + artifact_kind_name(k);
    return out;
}

// "xgboost, sklearn" — the formats an artifact of `kind` may be.
std::string formats_for(ArtifactKind kind) {
    std::string out;
    for (const Format& f : kFormats)
        if (f.kinds & bit(kind)) out += std::string(out.empty() ? "" : ", ") + f.name;
    return out;
}

[[noreturn]] void unknown_format(const std::string& name) {
    fail(ErrorCategory::InvalidParameter, "unknown model format \"" + name + "\"; known formats: " + known_formats());
}

const Format& named_format(const std::string& name, ArtifactKind kind) {
    const Format* f = find_format(name);
    if (f == nullptr) unknown_format(name);
    if (!(f->kinds & bit(kind)))
        fail(ErrorCategory::InvalidParameter,
             std::string("model format \"") + f->name + "\" is given as " + kind_names(f->kinds) + ", not " +
                 artifact_kind_name(kind) + "; formats a " + artifact_kind_name(kind) +
                 " value may hold: " + formats_for(kind));
    return *f;
}

// The parser calls back for every value; an interrupt is looked at every few thousand of them
// (a 100k-tree document takes seconds to parse).
bool poll_interrupts(int, json::parse_event_t, json&) {
    static unsigned calls = 0;
    if (++calls % 4096 == 0) check_interrupts();
    return true;  // keep every value
}

// Whether the bytes start like a JSON object or array (after white space): text and bytea
// holding a JSON document are read as JSON.
bool looks_like_json(std::string_view bytes) {
    for (char c : bytes) {
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
        return c == '{' || c == '[';
    }
    return false;
}

bool is_json(const Artifact& a) { return a.kind == ArtifactKind::Json || looks_like_json(a.bytes); }

// The format of `in` among those an artifact of `kind` may be; throws naming them.
const Format& detect(const Input& in, ArtifactKind kind) {
    for (const Format& f : kFormats)
        if ((f.kinds & bit(kind)) && f.reads_json == (in.document != nullptr) && f.detect(in)) return f;
    std::string known;
    for (const Format& f : kFormats)
        if ((f.kinds & bit(kind)) && (in.document == nullptr || f.reads_json))
            known += std::string(known.empty() ? "" : "; ") + f.name + ", " + f.detected_by;
    fail(ErrorCategory::InvalidModel,
         in.document != nullptr
             ? "cannot tell the model format: the JSON document is no format we know (JSON formats: " + known + ")"
             : std::string("cannot tell the model format: the ") + artifact_kind_name(kind) +
                   " value is no format we know (formats a " + artifact_kind_name(kind) + " value may hold: " +
                   known + ")");
}

spec::Pipeline run_import(const Format& f, const Input& in, const json& options) {
    // LightGBM's own options mean nothing to the other formats: refused, not ignored.
    for (const char* own : {"num_iteration", "raw_score"})
        if (std::string(f.name) != "lightgbm" && options.is_object() && options.contains(own))
            fail(ErrorCategory::InvalidParameter, std::string("option \"") + own + "\" is only for LightGBM models");
    if (std::string(f.name) != "xgboost" && options.is_object() && options.contains("categories"))
        fail(ErrorCategory::InvalidParameter, "option \"categories\" is only for XGBoost models");
    spec::Pipeline p = f.import(in, options);
    if (p.source_format.empty()) p.source_format = f.name;
    return p;
}

}  // namespace

}  // namespace pg_predict::importers

namespace pg_predict {

const char* artifact_kind_name(ArtifactKind kind) {
    switch (kind) {
        case ArtifactKind::Json: return "jsonb";
        case ArtifactKind::Text: return "text";
        case ArtifactKind::Binary: return "bytea";
    }
    return "?";
}

}  // namespace pg_predict

namespace pg_predict::importers {

json parse_json(std::string_view text, const char* what, ErrorCategory category) {
    // Before anything recursive (our readers, json copies) walks the document.
    spec::check_json_depth(text, what);
    try {
        return json::parse(text.begin(), text.end(), poll_interrupts);
    } catch (const json::exception& e) {
        fail(category, std::string("cannot parse the ") + what + " as JSON: " + e.what());
    }
}

namespace {

// XGBoost writes a categorical split's split_conditions as a bare NaN (and would write an
// infinity as Infinity), which JSON has no token for. Outside strings, such tokens become the
// strings the spec readers take as numbers ("NaN", "Infinity", "-Infinity"). nullopt when the
// text has none (the usual case: no copy).
std::optional<std::string> quote_non_finite_tokens(std::string_view text) {
    static const std::string_view kTokens[] = {"NaN", "Infinity", "-Infinity"};
    std::string out;
    bool copied = false, in_string = false;
    size_t done = 0;  // text[0, done) is in out
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
            continue;
        }
        if (c != 'N' && c != 'I' && c != '-') continue;
        for (std::string_view token : kTokens) {
            if (text.compare(i, token.size(), token) != 0) continue;
            if (!copied) out.reserve(text.size() + 1024);
            copied = true;
            out.append(text.substr(done, i - done)).append("\"").append(token).append("\"");
            i += token.size() - 1;
            done = i + 1;
            break;
        }
    }
    if (!copied) return std::nullopt;
    out.append(text.substr(done));
    return out;
}

json parse_model_document(std::string_view text) {
    if (auto quoted = quote_non_finite_tokens(text))
        return parse_json(*quoted, "model document", ErrorCategory::InvalidModel);
    return parse_json(text, "model document", ErrorCategory::InvalidModel);
}

}  // namespace

std::string detect_format(const json& document) {
    return detect(Input{{}, &document}, ArtifactKind::Json).name;
}

std::string detect_format(const Artifact& artifact) {
    if (!is_json(artifact)) return detect(Input{artifact.bytes, nullptr}, artifact.kind).name;
    const json document = parse_model_document(artifact.bytes);
    return detect(Input{artifact.bytes, &document}, artifact.kind).name;
}

bool is_torchscript(const Artifact& artifact, const std::string& format) {
    if (format != "auto") return format == "torchscript";
    return artifact.kind == ArtifactKind::Binary && looks_like_torchscript(artifact.bytes);
}

spec::Pipeline import_model(const json& document, const std::string& format) {
    const Input in{{}, &document};
    const Format& f = format == "auto" ? detect(in, ArtifactKind::Json) : named_format(format, ArtifactKind::Json);
    if (!f.reads_json)  // named_format let it through: only JSON formats take jsonb
        fail(ErrorCategory::Internal, std::string("format ") + f.name + " is not read from a JSON document");
    return run_import(f, in, json::object());
}

spec::Pipeline import_model(const Artifact& artifact, const std::string& format, const json& options) {
    const Format* f = format == "auto" ? nullptr : &named_format(format, artifact.kind);
    if (f != nullptr && f->reads_json && !is_json(artifact)) {
        // Say what the bytes are, not where a JSON parser gave up ("last read: 'tre'").
        const Input raw{artifact.bytes, nullptr};
        for (const Format& other : kFormats)
            if (!other.reads_json && (other.kinds & bit(artifact.kind)) && other.detect(raw))
                fail(ErrorCategory::InvalidParameter,
                     std::string("format \"") + f->name + "\" reads a JSON document, but this " +
                         artifact_kind_name(artifact.kind) + " value is " + other.detected_by + ": a " + other.name +
                         " model; give format => '" + other.name + "', or 'auto'");
        fail(ErrorCategory::InvalidModel, std::string("format \"") + f->name + "\" reads a JSON document, but this " +
                                              artifact_kind_name(artifact.kind) + " value does not start with '{' or '['");
    }
    if (f != nullptr ? f->reads_json : is_json(artifact)) {
        // The document's DOM is the largest thing create_model holds (several times the text):
        // it is gone when this returns, before optimizing and compiling.
        const json document = parse_model_document(artifact.bytes);
        const Input in{artifact.bytes, &document};
        return run_import(f != nullptr ? *f : detect(in, artifact.kind), in, options);
    }
    const Input in{artifact.bytes, nullptr};
    return run_import(f != nullptr ? *f : detect(in, artifact.kind), in, options);
}

}  // namespace pg_predict::importers
