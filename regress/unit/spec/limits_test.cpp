// Hostile documents: nesting deeper than the limits, absurd declared shapes and non-finite
// parameters each give an Error that names the problem (never a crash or an allocation of
// gigabytes). spec/limits.hpp has the limits.
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pg_predict/common/error.hpp"
#include "pg_predict/importers/import.hpp"
#include "pg_predict/importers/sklearn.hpp"
#include "pg_predict/runtime/api.hpp"
#include "pg_predict/spec/limits.hpp"
#include "pg_predict/spec/pipeline.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict {
namespace {

using nlohmann::json;

std::string repeat(const std::string& s, int n) {
    std::string out;
    out.reserve(s.size() * n);
    for (int i = 0; i < n; ++i) out += s;
    return out;
}

// The message of the Error that f throws ("" when it throws none).
template <class F>
std::string error_of(F f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

// A scikit-learn regression document whose first step is `step`.
std::string sklearn_doc(const std::string& step) {
    return R"({"format": "sklearn", "inputs": [{"name": "a"}, {"name": "b"}], "task": "regression",
               "steps": [)" + step + R"(, {"type": "LinearRegression", "coef": [1.0, 2.0], "intercept": 0.5}]})";
}

std::string nested_pipelines(int depth) {
    return repeat(R"({"type": "Pipeline", "steps": [)", depth) + R"({"type": "StandardScaler"})" +
           repeat("]}", depth);
}

json fixture(const std::string& name) {
    std::ifstream in(std::string(PG_PREDICT_FIXTURES) + "/" + name);
    std::stringstream s;
    s << in.rdbuf();
    return json::parse(s.str());
}

TEST(JsonDepth, RefusesDeeperThanTheLimitAndNamesThePath) {
    const int n = spec::kMaxJsonDepth;
    EXPECT_EQ(error_of([&] { spec::check_json_depth(repeat("[", n) + repeat("]", n), "doc"); }), "");
    const std::string msg =
        error_of([&] { spec::check_json_depth(repeat("[", n + 1) + repeat("]", n + 1), "doc"); });
    EXPECT_EQ(msg, "doc nests deeper than 256 levels at $[0][0][0][0][0][0][0][0][0][0][0][0]...");
    // Keys and indices along the way; brackets inside strings (escaped quotes too) do not count.
    const std::string keyed = R"({"a\"[[": 1, "steps": ["x]", 2, [)" + repeat("[", n) + repeat("]", n) + "]]}";
    EXPECT_EQ(error_of([&] { spec::check_json_depth(keyed, "doc"); }),
              "doc nests deeper than 256 levels at $.steps[2][0][0][0][0][0][0][0][0][0][0]...");
}

TEST(JsonDepth, DeeplyNestedDocumentIsAnErrorNotACrash) {
    // Issue 10, defect 8: 12,000 nested Pipelines crashed the backend inside the importer.
    const std::string doc = sklearn_doc(nested_pipelines(12000));
    const std::string msg = error_of([&] { runtime::build_model(Artifact{ArtifactKind::Json, doc}, "auto", "{}"); });
    EXPECT_EQ(msg.rfind("model document nests deeper than 256 levels at $.steps[0].steps[0].steps[0]", 0), 0u)
        << msg;
    // The same document built in memory (no text to pre-check) stops at the importer's limit.
    json deep = json::parse(R"({"type": "StandardScaler"})");
    for (int i = 0; i < 200; ++i) deep = json{{"type", "Pipeline"}, {"steps", json::array({std::move(deep)})}};
    json d = json::parse(sklearn_doc("1"));
    d["steps"][0] = deep;
    const std::string in_memory = error_of([&] { importers::import_sklearn(d); });
    EXPECT_EQ(in_memory.rfind("scikit-learn Pipeline: steps[0].steps[0]", 0), 0u) << in_memory;
    EXPECT_NE(in_memory.find("deeper than 64 levels is not supported"), std::string::npos) << in_memory;
    // Within the limits it imports.
    EXPECT_EQ(error_of([&] { importers::import_sklearn(json::parse(sklearn_doc(nested_pipelines(40)))); }), "");
}

TEST(JsonDepth, StoredSpecAndConcatNestingAreBounded) {
    EXPECT_NE(error_of([&] { spec::from_json(repeat("[", 300) + repeat("]", 300)); })
                  .find("pipeline spec nests deeper than 256 levels"),
              std::string::npos);
    // FeatureUnion in FeatureUnion: 40 concat levels are refused by validate, naming the step.
    std::string step = R"({"type": "StandardScaler"})";
    for (int i = 0; i < 40; ++i) step = R"({"type": "FeatureUnion", "transformers": [{"steps": [)" + step + "]}]}";
    const std::string msg = error_of([&] { importers::import_sklearn(json::parse(sklearn_doc(step))); });
    EXPECT_NE(msg.find("concat nests deeper than 32 levels"), std::string::npos) << msg;
}

TEST(Shapes, ConsecutiveUnionsCannotMultiplyTheWidth) {
    // A FeatureUnion of two passthrough parts doubles the width: 30 in a row make 2^31 columns
    // from a 2 kB document.
    std::string steps = R"({"type": "FeatureUnion", "transformers": [{"steps": []}, {"steps": []}]})";
    for (int i = 0; i < 5; ++i) steps = steps + ", " + steps;  // 32 unions
    const std::string msg = error_of([&] { importers::import_sklearn(json::parse(sklearn_doc(steps))); });
    EXPECT_NE(msg.find("steps[19]: an output wider than 1048576 columns"), std::string::npos) << msg;
    // The spec's own check, for specs that do not come from the importer.
    std::vector<spec::Step> doubling;
    for (int32_t w = 1; w <= (1 << 20); w *= 2) {
        spec::Step twice;
        twice.op = spec::Op::Concat;
        spec::Step::Part all;
        for (int32_t c = 0; c < w; ++c) all.columns.push_back(c);
        twice.parts = {all, all};
        doubling.push_back(std::move(twice));
    }
    std::vector<int32_t> vocab{-1};
    const std::string spec_msg = error_of([&] { spec::check_steps(doubling, vocab, "steps"); });
    EXPECT_NE(spec_msg.find("steps[20]: outputs more than 1048576 columns"), std::string::npos) << spec_msg;
}

TEST(Shapes, DeclaredSizesAreBounded) {
    json d = fixture("binary_tiny.json");
    d["learner"]["learner_model_param"]["num_feature"] = std::to_string(1 << 20);
    EXPECT_NE(error_of([&] { importers::import_model(d, "auto"); }).find("more than 65536 features"),
              std::string::npos);
    spec::Pipeline p = importers::import_model(fixture("binary_tiny.json"), "auto");
    p.model.num_groups = 1 << 20;
    EXPECT_NE(error_of([&] { spec::validate(p); }).find("num_groups 1048576 exceeds the limit of 65536"),
              std::string::npos);
}

TEST(NonFinite, InfiniteLeafIsRefusedLikeNaN) {
    // 1e39 is a finite double but Infinity as the float32 a leaf is stored in.
    json d = fixture("binary_tiny.json");
    d["learner"]["gradient_booster"]["model"]["trees"][0]["split_conditions"][1] = 1e39;
    const std::string msg = error_of([&] { importers::import_model(d, "auto"); });
    EXPECT_NE(msg.find("tree 0, node 1: leaf value is not finite"), std::string::npos) << msg;
    // An infinite threshold stays legal (HistGradientBoosting writes +inf).
    d = fixture("binary_tiny.json");
    d["learner"]["gradient_booster"]["model"]["trees"][0]["split_conditions"][0] = 1e39;
    EXPECT_EQ(error_of([&] { importers::import_model(d, "auto"); }), "");
}

TEST(NonFinite, EveryParameterIsFinite) {
    auto refused = [](const std::string& step, const char* want) {
        const std::string msg = error_of([&] { importers::import_sklearn(json::parse(sklearn_doc(step))); });
        EXPECT_NE(msg.find(want), std::string::npos) << step << " → " << msg;
    };
    refused(R"({"type": "Binarizer", "threshold": "Infinity"})", "threshold must be finite");
    refused(R"({"type": "OrdinalEncoder", "categories": [[1.0], [2.0]], "handle_unknown": "use_encoded_value",
                "unknown_value": "-Infinity"})", "ordinal unknown_value must not be infinite");
    refused(R"({"type": "StandardScaler", "mean": [0.0, "Infinity"], "scale": [1.0, 1.0]})", "non-finite");
    spec::Step one_hot;
    one_hot.op = spec::Op::OneHot;
    one_hot.params = {{"categories", {{1.0, "Infinity"}}}, {"drop", {-1}}};
    std::vector<int32_t> vocab{-1};
    EXPECT_NE(error_of([&] { spec::check_steps({one_hot}, vocab, "steps"); }).find("lists an infinite category"),
              std::string::npos);
    spec::Step impute;
    impute.op = spec::Op::Impute;
    impute.params = {{"statistics", {"Infinity"}}};
    vocab = {-1};
    EXPECT_NE(error_of([&] { spec::check_steps({impute}, vocab, "steps"); }).find("impute statistics must not be infinite"),
              std::string::npos);
    // Linear coefficients and the base margin were already checked; classes now are too.
    spec::Pipeline p = importers::import_model(fixture("binary_tiny.json"), "auto");
    p.classes[1] = INFINITY;
    EXPECT_NE(error_of([&] { spec::validate(p); }).find("class labels must be finite"), std::string::npos);
}

}  // namespace
}  // namespace pg_predict
