// Format detection and dispatch to the per-format importers.
#include <string>

#include "pg_predict/common/error.hpp"
#include "pg_predict/common/interrupt.hpp"
#include "pg_predict/importers/import.hpp"
#include "pg_predict/importers/sklearn.hpp"
#include "pg_predict/spec/limits.hpp"

namespace pg_predict::importers {

namespace {

using nlohmann::json;

constexpr const char* kKnownFormats = "auto, xgboost, sklearn";

bool looks_like_xgboost(const json& a) {
    // Booster.save_model writes {"learner": {..., "gradient_booster": ...}, "version": [...]}.
    if (!a.is_object()) return false;
    auto learner = a.find("learner");
    return learner != a.end() && learner->is_object() && learner->contains("gradient_booster");
}

// The parser calls back for every value; an interrupt is looked at every few thousand of them
// (a 100k-tree document takes seconds to parse).
bool poll_interrupts(int, json::parse_event_t, json&) {
    static unsigned calls = 0;
    if (++calls % 4096 == 0) check_interrupts();
    return true;  // keep every value
}

// Whether the bytes start like a JSON object or array (after white space).
bool looks_like_json(std::string_view bytes) {
    for (char c : bytes) {
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
        return c == '{' || c == '[';
    }
    return false;
}

bool is_json_format(const std::string& format) { return format == "xgboost" || format == "sklearn"; }

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

std::string detect_format(const json& artifact) {
    if (looks_like_xgboost(artifact)) return "xgboost";
    if (artifact.is_object()) {
        auto f = artifact.find("format");
        if (f != artifact.end() && *f == "sklearn") return "sklearn";
    }
    fail(ErrorCategory::InvalidModel,
         "cannot tell the model format: the document is no format we know (known: xgboost, "
         "detected by a top-level \"learner\" object with a \"gradient_booster\"; sklearn, by "
         "\"format\": \"sklearn\")");
}

std::string detect_format(const Artifact& artifact) {
    if (artifact.kind == ArtifactKind::Json || looks_like_json(artifact.bytes))
        return detect_format(parse_json(artifact.bytes, "model document", ErrorCategory::InvalidModel));
    fail(ErrorCategory::InvalidModel,
         std::string("cannot tell the model format of the ") + artifact_kind_name(artifact.kind) +
             " value: it is no format we know (known: xgboost and sklearn, JSON documents)");
}

spec::Pipeline import_model(const json& artifact, const std::string& format) {
    std::string f = format == "auto" ? detect_format(artifact) : format;
    if (f == "xgboost") return import_xgboost(artifact);
    if (f == "sklearn") return import_sklearn(artifact);
    fail(ErrorCategory::InvalidParameter,
         "unknown model format \"" + format + "\"; known formats: " + kKnownFormats);
}

spec::Pipeline import_model(const Artifact& artifact, const std::string& format, const json& /*options*/) {
    if (format == "auto" ? artifact.kind == ArtifactKind::Json || looks_like_json(artifact.bytes)
                         : is_json_format(format)) {
        // The document's DOM is the largest thing create_model holds (several times the text):
        // it is gone when this returns, before optimizing and compiling.
        const json document = parse_json(artifact.bytes, "model document", ErrorCategory::InvalidModel);
        spec::Pipeline p = import_model(document, format);
        if (p.source_format.empty()) p.source_format = format == "auto" ? detect_format(document) : format;
        return p;
    }
    if (format == "auto") detect_format(artifact);  // throws: no other format is known yet
    fail(ErrorCategory::InvalidParameter,
         "unknown model format \"" + format + "\"; known formats: " + kKnownFormats);
}

}  // namespace pg_predict::importers
