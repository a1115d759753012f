// runtime::build_model's own checks, before and around the importer.
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "pg_predict/common/error.hpp"
#include "pg_predict/runtime/api.hpp"
#include "pg_predict/spec/pipeline.hpp"

namespace pg_predict {
namespace {

std::string error_of(const std::function<void()>& f, ErrorCategory want) {
    try {
        f();
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), want) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no pg_predict::Error thrown";
    return "";
}

TEST(BuildModel, MalformedArtifactIsInvalidModelWithPosition) {
    const std::string msg = error_of([] { runtime::build_model(Artifact{ArtifactKind::Json, "{\"learner\": [1, 2"}, "auto", "{}"); },
                                     ErrorCategory::InvalidModel);
    EXPECT_NE(msg.find("column 18"), std::string::npos) << msg;
}

TEST(BuildModel, UnknownOptionIsNamedWithTheValidOnes) {
    const std::string msg = error_of([] { runtime::build_model(Artifact{ArtifactKind::Json, "{}"}, "auto", "{\"stratgy\": \"gemm\"}"); },
                                     ErrorCategory::InvalidParameter);
    EXPECT_NE(msg.find("stratgy"), std::string::npos) << msg;
    EXPECT_NE(msg.find("columns"), std::string::npos) << msg;
}

TEST(BuildModel, OptionsMustBeAnObject) {
    error_of([] { runtime::build_model(Artifact{ArtifactKind::Json, "{}"}, "auto", "[1]"); }, ErrorCategory::InvalidParameter);
    error_of([] { runtime::build_model(Artifact{ArtifactKind::Json, "{}"}, "auto", "{oops"); }, ErrorCategory::InvalidParameter);
}

std::string fixture(const std::string& name) {
    std::ifstream in(std::string(PG_PREDICT_FIXTURES) + "/" + name);
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_FALSE(ss.str().empty()) << name;
    return ss.str();
}

TEST(BuildModel, FixtureScoresLikeItsSpecWithEveryStrategy) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> x = {5, 40, 1, 15, 60, 2, nan, nan, 3, 10, 50, 0};
    for (const char* strategy : {"auto", "gemm", "tree_traversal", "perfect_tree_traversal", "native"}) {
        for (const char* file : {"binary_tiny.json", "multiclass_tiny.json", "regression_tiny.json"}) {
            runtime::BuiltModel* m = runtime::build_model(
                Artifact{ArtifactKind::Json, fixture(file)}, "auto", std::string("{\"strategy\": \"") + strategy + "\"}");
            const spec::Pipeline p = spec::from_json(m->spec_json);
            std::vector<float> want(4 * p.output_width()), got(want.size());
            spec::reference_predict(p, x.data(), 4, want.data());
            static int64_t id = 7000;
            runtime::Program* prog = runtime::load_program(++id, m->program.data(), m->program.size());
            runtime::run_program(prog, x.data(), 4, 3, got.data());
            runtime::release_program(prog);
            for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << file << " " << strategy;
            EXPECT_NE(m->summary_json.find("\"trees\""), std::string::npos) << m->summary_json;
            EXPECT_EQ(m->strategy, std::string(strategy) == "auto" ? "native" : strategy);
            runtime::free_built_model(m);
        }
    }
}

TEST(BuildModel, FeatureAndColumnOptions) {
    runtime::BuiltModel* m = runtime::build_model(Artifact{ArtifactKind::Json, fixture("binary_tiny.json")}, "auto",
                                                  R"({"columns": {"tenure": "months"}})");
    EXPECT_EQ(m->features, (std::vector<std::string>{"tenure", "monthly_charges", "plan_id"}));
    EXPECT_EQ(m->columns, (std::vector<std::string>{"months", "monthly_charges", "plan_id"}));
    EXPECT_EQ(m->task, "classification");
    runtime::free_built_model(m);

    m = runtime::build_model(Artifact{ArtifactKind::Json, fixture("binary_unnamed.json")}, "auto", "{}");
    EXPECT_EQ(m->columns, (std::vector<std::string>{"", "", ""}));
    runtime::free_built_model(m);

    m = runtime::build_model(Artifact{ArtifactKind::Json, fixture("binary_unnamed.json")}, "auto", R"({"features": ["a", "b", "c"]})");
    EXPECT_EQ(m->columns, (std::vector<std::string>{"a", "b", "c"}));
    runtime::free_built_model(m);

    error_of([] { runtime::build_model(Artifact{ArtifactKind::Json, fixture("binary_tiny.json")}, "auto", R"({"columns": {"nope": "x"}})"); },
             ErrorCategory::InvalidParameter);
    error_of([] { runtime::build_model(Artifact{ArtifactKind::Json, fixture("binary_tiny.json")}, "auto", R"({"features": ["a"]})"); },
             ErrorCategory::InvalidParameter);
    error_of([] { runtime::build_model(Artifact{ArtifactKind::Json, fixture("binary_tiny.json")}, "auto", R"({"strategy": "fast"})"); },
             ErrorCategory::InvalidParameter);
}

}  // namespace
}  // namespace pg_predict
