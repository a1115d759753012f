// create_model's work: parse the artifact, import it, apply the options, validate, compile.
#include <algorithm>
#include <memory>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "pg_predict/text/vectorizer.hpp"
#include "pg_predict/common/error.hpp"
#include "pg_predict/common/interrupt.hpp"
#include "pg_predict/compiler/compile.hpp"
#include "pg_predict/importers/import.hpp"
#include "pg_predict/kernels/tree_ensemble.hpp"
#include "pg_predict/optimizer/optimize.hpp"
#include "pg_predict/optimizer/unused_inputs.hpp"
#include "pg_predict/runtime/api.hpp"
#include "pg_predict/spec/limits.hpp"

namespace pg_predict::runtime {
namespace {

using nlohmann::json;

// "replace" and "deploy" are create_model's own (the catalog write is PostgreSQL's side); accepted
// here so the error for an unknown key can list every valid option. "task" and "classes" are
// the torchscript importer's (a module does not say what its outputs are).
// "num_iteration" and "raw_score" the LightGBM importer's; "output" the ONNX importer's (the
// graph output to score); "categories" the XGBoost importer's (a pandas category column's
// categories, so that a text column scores).
constexpr const char* kOptions[] = {"features", "columns", "strategy", "replace", "deploy", "task", "classes",
                                    "num_iteration", "raw_score", "output", "categories"};

void check_option_keys(const json& options) {
    for (const auto& item : options.items()) {
        bool known = false;
        std::string valid;
        for (const char* k : kOptions) {
            known = known || item.key() == k;
            valid += valid.empty() ? "" : ", ";
            valid += k;
        }
        if (!known)
            fail(ErrorCategory::InvalidParameter,
                 "unknown option \"" + item.key() + "\"; valid options are: " + valid);
    }
}

void apply_feature_names(const json& names, spec::Pipeline& p) {
    if (!names.is_array())
        fail(ErrorCategory::InvalidParameter, "option \"features\" must be an array of strings");
    // The model's inputs: its own feature names, or for a pipeline with steps its input columns.
    if (names.size() != p.features.size())
        fail(ErrorCategory::InvalidParameter,
             "option \"features\" has " + std::to_string(names.size()) + " names but the model has " +
                 std::to_string(p.features.size()) + " features");
    std::vector<std::string> out;
    std::set<std::string> seen;
    for (const json& n : names) {
        if (!n.is_string() || n.get<std::string>().empty())
            fail(ErrorCategory::InvalidParameter, "option \"features\" must hold non-empty strings");
        if (!seen.insert(n.get<std::string>()).second)
            fail(ErrorCategory::InvalidParameter,
                 "option \"features\" names \"" + n.get<std::string>() + "\" twice");
        out.push_back(n.get<std::string>());
    }
    p.features = std::move(out);
}

// Default column = the feature's name; unnamed features keep "" (scored positionally).
std::vector<std::string> map_columns(const json* columns, const std::vector<std::string>& features) {
    std::vector<std::string> out(features);
    if (columns == nullptr) return out;
    if (!columns->is_object())
        fail(ErrorCategory::InvalidParameter, "option \"columns\" must be an object {feature: column}");
    for (const auto& item : columns->items()) {
        size_t i = 0;
        while (i < features.size() && (features[i].empty() || features[i] != item.key())) ++i;
        if (i == features.size())
            fail(ErrorCategory::InvalidParameter,
                 "option \"columns\" names \"" + item.key() + "\", which is not a feature of the model");
        if (!item.value().is_string() || item.value().get<std::string>().empty())
            fail(ErrorCategory::InvalidParameter,
                 "option \"columns\": the column for \"" + item.key() + "\" must be a non-empty string");
        out[i] = item.value().get<std::string>();
    }
    return out;
}

std::string summary(const spec::Pipeline& p, size_t program_bytes, compiler::Strategy s) {
    json j;
    j["objective"] = p.objective;
    j["trees"] = p.model.trees.size();
    j["depth"] = p.model.max_depth();
    j["num_features"] = p.model.num_features;
    j["num_groups"] = p.model.num_groups;
    j["program_bytes"] = program_bytes;
    j["strategy"] = compiler::strategy_name(s);
    // The native kernel's layout, for EXPLAIN (pack() chooses the same one, short of a perfect
    // layout over kMaxProgramBytes).
    if (s == compiler::Strategy::Native && !p.model.trees.empty())
        j["layout"] = kernels::layout_name(kernels::choose_layout(p.model));
    j["probabilities"] = p.task == spec::Task::Classification && p.has_probabilities;
    j["steps"] = p.steps.size();
    j["outputs"] = p.outputs;  // predict's values per row: several for a multi-output regressor
    std::string text;
    for (const spec::TextVectorizer& v : p.text_vectorizers)
        text += (text.empty() ? "" : "; ") + p.features[static_cast<size_t>(v.input)] + " " + text::describe_vectorizer(v.vectorizer);
    if (!text.empty()) j["text"] = text;
    j["estimator"] = p.task == spec::Task::Transform ? "none"
                     : p.estimator.op == spec::Op::None ? "tree_ensemble" : spec::op_name(p.estimator.op);
    return j.dump();
}

}  // namespace

BuiltModel* build_model(const Artifact& artifact, const std::string& format, const std::string& options_json) {
    json options = options_json.empty()
                       ? json::object()
                       : importers::parse_json(options_json, "options", ErrorCategory::InvalidParameter);
    if (options.is_null()) options = json::object();
    if (!options.is_object()) fail(ErrorCategory::InvalidParameter, "options must be a JSON object");
    check_option_keys(options);

    spec::Pipeline p = importers::import_model(artifact, format, options);
    for (const char* key : {"task", "classes"})
        if (options.contains(key) && p.estimator.op != spec::Op::TorchScript)
            fail(ErrorCategory::InvalidParameter, std::string("option \"") + key +
                                                      "\" applies to TorchScript modules only (other "
                                                      "formats say it themselves)");
    const std::string source_format = p.source_format;
    // A bare model reads its features directly; a pipeline with steps names its inputs.
    if (p.features.empty()) p.features.assign(static_cast<size_t>(std::max(0, p.model.num_features)), "");
    if (options.contains("features")) apply_feature_names(options["features"], p);

    compiler::Strategy strategy = compiler::Strategy::Auto;
    if (options.contains("strategy") && p.estimator.op == spec::Op::TorchScript)
        fail(ErrorCategory::InvalidParameter,
             "option \"strategy\" does not apply to a TorchScript module (it runs as it is)");
    if (options.contains("strategy")) {
        if (!options["strategy"].is_string())
            fail(ErrorCategory::InvalidParameter, "option \"strategy\" must be a string");
        strategy = compiler::parse_strategy(options["strategy"].get<std::string>());
    }
    check_interrupts();
    spec::validate(p);
    check_interrupts();
    // The catalog keeps the imported spec (readable, and what explain_model starts from); the
    // program is compiled from the optimized one, as every later recompile of it is.
    const spec::Pipeline optimized = optimizer::optimize(p);
    if (strategy == compiler::Strategy::Auto) strategy = compiler::choose_strategy(optimized);
    std::vector<std::string> columns =
        map_columns(options.contains("columns") ? &options["columns"] : nullptr, p.features);

    check_interrupts();
    auto built = std::make_unique<BuiltModel>();
    // A TorchScript model's program is the user's module itself, wrapped.
    built->program = p.estimator.op == spec::Op::TorchScript ? compiler::wrap_torchscript(artifact.bytes, optimized)
                                                     : compiler::compile(optimized, strategy);
    check_interrupts();
    built->format = source_format;
    built->spec_json = spec::to_json(p);
    built->strategy = compiler::strategy_name(strategy);
    built->task = spec::task_name(p.task);
    built->classes = p.classes;
    built->class_labels = p.class_labels;
    built->features = p.features;
    built->columns = std::move(columns);
    built->summary_json = summary(p, built->program.size(), strategy);
    nlohmann::json text_inputs = nlohmann::json::array();
    for (const spec::TextInput& t : p.text_inputs) {
        built->text_features.push_back(t.input);
        text_inputs.push_back({{"input", t.input}, {"vocabulary", t.vocabulary},
                               {"unknown_is_error", t.unknown_is_error},
                               {"unknown_is_missing", t.unknown_is_missing}});
    }
    for (const spec::TextVectorizer& v : p.text_vectorizers) {
        static_cast<void>(text::Vectorizer(text::parse_vectorizer(v.vectorizer).spec));  // checked now, not per query
        built->text_features.insert(built->text_features.end(), v.slots.begin(), v.slots.end());
        text_inputs.push_back({{"input", v.input}, {"slots", v.slots}, {"vectorizer", v.vectorizer}});
    }
    std::sort(built->text_features.begin(), built->text_features.end());
    built->unused_features = optimizer::unused_inputs(optimized);
    built->text_inputs_json = text_inputs.dump();
    check_interrupts();
    return built.release();
}

void free_built_model(BuiltModel* m) { delete m; }

bool imports_torchscript(const Artifact& artifact, const std::string& format) {
    return importers::is_torchscript(artifact, format);
}

}  // namespace pg_predict::runtime
