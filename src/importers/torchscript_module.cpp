// TorchScript modules (torch.jit.save) → a spec that describes their shape. The module is not
// read here (no torch in the importers): the compiler wraps it
// (compiler/torchscript_writer.cpp), and the options say what its columns are, because a module
// does not know its inputs' names or whether its outputs are classes:
//   "features": [name, ...]          required: the module reads a float32 [N, F] tensor, F names
//   "task": "regression"             (default) the module returns [N] or [N, 1] values
//   "task": "classification", "classes": [label, ...]
//                                    the module returns [N, k] class probabilities, k labels;
//                                    predict gives the label of the largest
#include <cmath>
#include <set>
#include <string>

#include "pg_predict/common/error.hpp"
#include "pg_predict/importers/import.hpp"
#include "pg_predict/spec/limits.hpp"

namespace pg_predict::importers {

namespace {

using nlohmann::json;

[[noreturn]] void bad_option(const std::string& what) {
    fail(ErrorCategory::InvalidParameter, "torchscript: " + what);
}

std::vector<std::string> feature_names(const json& options) {
    auto f = options.find("features");
    if (f == options.end())
        bad_option("option \"features\" is required: the names of the F columns of the float [N, F] "
                   "tensor the module reads, in order");
    if (!f->is_array() || f->empty()) bad_option("option \"features\" must be a non-empty array of strings");
    if (f->size() > static_cast<size_t>(spec::kMaxFeatures))
        bad_option("option \"features\" names more than " + std::to_string(spec::kMaxFeatures) + " features");
    std::vector<std::string> names;
    for (const json& n : *f) names.push_back(n.is_string() ? n.get<std::string>() : "");  // build checks them
    return names;
}

std::vector<double> class_labels(const json& options) {
    auto c = options.find("classes");
    if (c == options.end())
        bad_option("a classifier needs option \"classes\": the label of each column of the module's output");
    if (!c->is_array() || c->size() < 2) bad_option("option \"classes\" must be an array of at least two numbers");
    if (c->size() > static_cast<size_t>(spec::kMaxGroups))
        bad_option("option \"classes\" lists more than " + std::to_string(spec::kMaxGroups) + " labels");
    std::vector<double> labels;
    std::set<double> seen;
    for (const json& v : *c) {
        if (!v.is_number() || !std::isfinite(v.get<double>()))
            bad_option("option \"classes\" must hold finite numbers");
        if (!seen.insert(v.get<double>()).second)
            bad_option("option \"classes\" lists " + v.dump() + " twice");
        labels.push_back(v.get<double>());
    }
    return labels;
}

}  // namespace

spec::Pipeline import_torchscript(std::string_view bytes, const json& options) {
    if (!looks_like_torchscript(bytes))
        fail(ErrorCategory::InvalidModel,
             "torchscript: the bytea value is not a module saved by torch.jit.save (a zip archive "
             "holding <name>/data.pkl and <name>/code/)");
    spec::Pipeline p;
    p.source_format = "torchscript";
    p.features = feature_names(options);
    std::string task = "regression";
    if (auto t = options.find("task"); t != options.end()) {
        if (!t->is_string() || (*t != "regression" && *t != "classification"))
            bad_option("option \"task\" must be \"regression\" or \"classification\"");
        task = t->get<std::string>();
    }
    if (task == "classification") {
        p.task = spec::Task::Classification;
        p.classes = class_labels(options);
    } else if (options.contains("classes")) {
        bad_option("option \"classes\" is for \"task\": \"classification\"");
    }
    const auto inputs = static_cast<int32_t>(p.features.size());
    const auto outputs = static_cast<int32_t>(p.task == spec::Task::Classification ? p.classes.size() : 1);
    p.model.num_features = inputs;
    p.model.num_groups = outputs;
    p.model.base_margin.assign(static_cast<size_t>(outputs), 0.0f);
    p.estimator.op = spec::Op::TorchScript;
    p.estimator.params = {{"inputs", inputs}, {"outputs", outputs}};
    return p;
}

}  // namespace pg_predict::importers
