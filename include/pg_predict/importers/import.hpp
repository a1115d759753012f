// Model artifacts → pipeline spec. One file (or folder) per source format under src/importers/.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "pg_predict/common/artifact.hpp"
#include "pg_predict/common/error.hpp"
#include "pg_predict/spec/pipeline.hpp"

namespace pg_predict::importers {

using pg_predict::Artifact;
using pg_predict::ArtifactKind;

// The format of an artifact ("xgboost", "sklearn", ...); throws Error(InvalidModel) naming the
// formats it knows when it is none of them.
std::string detect_format(const Artifact&);
std::string detect_format(const nlohmann::json& document);

// format "auto" detects it. `options` is create_model's options object: an importer reads the
// keys that are its own (each listed in the runtime's option table). Throws Error(InvalidModel)
// for a malformed artifact and Error(Unsupported) for an objective, operator or field we do not
// implement, naming it.
spec::Pipeline import_model(const Artifact&, const std::string& format, const nlohmann::json& options);
// A parsed JSON document (tests, and the JSON formats after parsing).
spec::Pipeline import_model(const nlohmann::json& document, const std::string& format);

// Parses a JSON text after checking its depth (spec/limits.hpp), looking at interrupts while it
// runs; `what` names it in the error, which has `category`.
nlohmann::json parse_json(std::string_view text, const char* what, ErrorCategory category);

// XGBoost's JSON model (src/importers/xgboost_json.cpp); option "categories" ({"feature":
// ["category", ...]}) makes a categorical feature a text input: the value's index in the list
// is its code, a value not in it is missing.
spec::Pipeline import_xgboost(const nlohmann::json& artifact, const nlohmann::json& options = nlohmann::json::object());
// An ONNX ModelProto (src/importers/onnx/); options: "output" names the graph output to score.
spec::Pipeline import_onnx(std::string_view bytes, const nlohmann::json& options);

// A module saved by torch.jit.save (src/importers/torchscript_module.cpp): the spec only
// describes its shape (estimator op "torchscript", from options "features", "task", "classes");
// the compiler wraps the module itself (compiler::wrap_torchscript).
spec::Pipeline import_torchscript(std::string_view bytes, const nlohmann::json& options);

// LightGBM's text format (Booster.save_model, model_to_string; src/importers/lightgbm.cpp);
// options "num_iteration" (use the first n iterations) and "raw_score" (no link) are its own.
spec::Pipeline import_lightgbm(std::string_view text, const nlohmann::json& options);

// Detection rules of the formats that are not JSON (detect.cpp): cheap, safe on any bytes.
bool looks_like_lightgbm(std::string_view text);     // "tree\nversion=v..."
bool looks_like_onnx(std::string_view bytes);        // a protobuf ModelProto: ir_version, ..., graph
bool looks_like_torchscript(std::string_view bytes); // a zip with <name>/data.pkl and <name>/code/

// Whether create_model would import `artifact` as TorchScript (given `format`, "auto"
// included), which only privileged roles may: PostgreSQL's side checks before any import.
bool is_torchscript(const Artifact& artifact, const std::string& format);

}  // namespace pg_predict::importers
