// Format detection and dispatch to the per-format importers.
#include <string>

#include "pg_predict/common/error.hpp"
#include "pg_predict/importers/import.hpp"
#include "pg_predict/importers/sklearn.hpp"

namespace pg_predict::importers {

namespace {

constexpr const char* kKnownFormats = "auto, xgboost, sklearn";

bool looks_like_xgboost(const nlohmann::json& a) {
    // Booster.save_model writes {"learner": {..., "gradient_booster": ...}, "version": [...]}.
    if (!a.is_object()) return false;
    auto learner = a.find("learner");
    return learner != a.end() && learner->is_object() && learner->contains("gradient_booster");
}

}  // namespace

std::string detect_format(const nlohmann::json& artifact) {
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

spec::Pipeline import_model(const nlohmann::json& artifact, const std::string& format) {
    std::string f = format == "auto" ? detect_format(artifact) : format;
    if (f == "xgboost") return import_xgboost(artifact);
    if (f == "sklearn") return import_sklearn(artifact);
    fail(ErrorCategory::InvalidParameter,
         "unknown model format \"" + format + "\"; known formats: " + kKnownFormats);
}

}  // namespace pg_predict::importers
