// Model artifacts → pipeline spec. One file per source format under src/importers/.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "pg_predict/spec/pipeline.hpp"

namespace pg_predict::importers {

// "xgboost" for an XGBoost JSON model (1.x or 2.x); throws Error(InvalidModel) when the
// document is no format we know.
std::string detect_format(const nlohmann::json& artifact);

// format "auto" detects it. Throws Error(InvalidModel) for a malformed artifact and
// Error(Unsupported) for an objective or field we do not implement, naming it.
spec::Pipeline import_model(const nlohmann::json& artifact, const std::string& format);

spec::Pipeline import_xgboost(const nlohmann::json& artifact);

}  // namespace pg_predict::importers
