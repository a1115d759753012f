// The pipeline spec: names, depths, JSON round trip (bit-exact floats) and validation.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pg_predict/common/error.hpp"
#include "pg_predict/spec/pipeline.hpp"
#include "pg_predict/spec/steps.hpp"

namespace spec = pg_predict::spec;
using pg_predict::Error;
using pg_predict::ErrorCategory;

namespace {

uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

float from_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

// A binary classifier: one stump on "b" and one single-leaf tree.
spec::Pipeline stump_pipeline() {
    spec::Pipeline p;
    p.source_format = "xgboost";
    p.objective = "binary:logistic";
    p.task = spec::Task::Classification;
    p.transform = spec::PostTransform::Logistic;
    p.classes = {0, 1};
    p.features = {"a", "b"};
    p.model.num_features = 2;
    p.model.num_groups = 1;
    p.model.base_margin = {-0.84729785f};
    spec::Tree t;
    t.left = {1, -1, -1};
    t.right = {2, -1, -1};
    t.feature = {1, 0, 0};
    t.threshold = {0.1f, 0, 0};
    t.default_left = {1, 0, 0};
    t.value = {0, -0.3f, 0.7f};
    spec::Tree leaf;
    leaf.left = {-1};
    leaf.right = {-1};
    leaf.feature = {0};
    leaf.threshold = {0};
    leaf.default_left = {0};
    leaf.value = {1e-3f};
    p.model.trees = {t, leaf};
    return p;
}

void expect_same_floats(const std::vector<float>& a, const std::vector<float>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(bits(a[i]), bits(b[i])) << "at " << i;
}

void expect_same(const spec::Pipeline& a, const spec::Pipeline& b) {
    EXPECT_EQ(a.source_format, b.source_format);
    EXPECT_EQ(a.objective, b.objective);
    EXPECT_EQ(a.task, b.task);
    EXPECT_EQ(a.transform, b.transform);
    EXPECT_EQ(a.classes, b.classes);
    EXPECT_EQ(a.features, b.features);
    EXPECT_EQ(a.model.num_features, b.model.num_features);
    EXPECT_EQ(a.model.num_groups, b.model.num_groups);
    EXPECT_EQ(a.model.comparison, b.model.comparison);
    expect_same_floats(a.model.base_margin, b.model.base_margin);
    ASSERT_EQ(a.model.trees.size(), b.model.trees.size());
    for (size_t i = 0; i < a.model.trees.size(); ++i) {
        const auto &x = a.model.trees[i], &y = b.model.trees[i];
        EXPECT_EQ(x.group, y.group);
        EXPECT_EQ(x.left, y.left);
        EXPECT_EQ(x.right, y.right);
        EXPECT_EQ(x.feature, y.feature);
        EXPECT_EQ(x.default_left, y.default_left);
        expect_same_floats(x.threshold, y.threshold);
        expect_same_floats(x.value, y.value);
    }
}

// Runs f, expects an Error of `cat` whose message contains `needle`.
template <typename F>
void expect_error(F&& f, ErrorCategory cat, const std::string& needle) {
    try {
        f();
        ADD_FAILURE() << "no error; expected one mentioning \"" << needle << "\"";
    } catch (const Error& e) {
        EXPECT_EQ(e.category(), cat) << e.what();
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
            << "message \"" << e.what() << "\" lacks \"" << needle << "\"";
    }
}

void expect_invalid(const spec::Pipeline& p, const std::string& needle) {
    expect_error([&] { spec::validate(p); }, ErrorCategory::InvalidModel, needle);
}

}  // namespace

TEST(SpecBasics, Names) {
    EXPECT_STREQ(spec::task_name(spec::Task::Regression), "regression");
    EXPECT_STREQ(spec::task_name(spec::Task::Classification), "classification");
    EXPECT_STREQ(spec::transform_name(spec::PostTransform::Identity), "identity");
    EXPECT_STREQ(spec::transform_name(spec::PostTransform::Logistic), "logistic");
    EXPECT_STREQ(spec::transform_name(spec::PostTransform::Softmax), "softmax");
    EXPECT_STREQ(spec::transform_name(spec::PostTransform::Exp), "exp");
}

TEST(SpecBasics, DepthAndWidth) {
    spec::Pipeline p = stump_pipeline();
    EXPECT_EQ(p.model.trees[0].depth(), 1);
    EXPECT_EQ(p.model.trees[1].depth(), 0);
    EXPECT_EQ(p.model.max_depth(), 1);
    EXPECT_EQ(p.output_width(), 2);  // one-group binary classifier: [1 - p, p]

    // Left spine of depth 3 with node numbers out of level order.
    spec::Tree t;
    t.left = {3, -1, -1, 4, 1, -1, -1};
    t.right = {5, -1, -1, 6, 2, -1, -1};
    EXPECT_EQ(t.depth(), 3);

    p.task = spec::Task::Regression;
    p.classes.clear();
    EXPECT_EQ(p.output_width(), 1);
    p.task = spec::Task::Classification;
    p.classes = {0, 1, 2};
    EXPECT_EQ(p.output_width(), 3);
}

TEST(SpecJson, RoundTripIsExact) {
    spec::Pipeline p = stump_pipeline();
    // Floats that trip naive printing: tiny, huge, denormal, negative zero, an infinity (a
    // threshold may be infinite, a leaf may not).
    p.model.trees[0].threshold = {-std::numeric_limits<float>::infinity(), 1e-45f, -0.0f};
    p.model.trees[0].value = {0, std::numeric_limits<float>::max(), std::nextafter(0.1f, 1.0f)};
    p.model.trees[1].value = {1.17549435e-38f};
    p.model.comparison = spec::Comparison::LessEqual;
    p.classes = {-1.5, 2.25};
    std::string text = spec::to_json(p);
    spec::Pipeline q = spec::from_json(text);
    expect_same(p, q);
    EXPECT_EQ(spec::to_json(q), text);
}

TEST(SpecJson, InputsWithoutMissingRuleRoundTripAndDefaultToNone) {
    spec::Pipeline p = stump_pipeline();
    EXPECT_TRUE(spec::from_json(spec::to_json(p)).model.inputs_without_missing_rule.empty());  // before 0.8.0
    EXPECT_EQ(spec::to_json(p).find("inputs_without_missing_rule"), std::string::npos);
    p.model.inputs_without_missing_rule = {0};
    const std::string text = spec::to_json(p);
    EXPECT_EQ(spec::from_json(text).model.inputs_without_missing_rule, std::vector<int32_t>{0});
    EXPECT_EQ(spec::to_json(spec::from_json(text)), text);
    p.model.inputs_without_missing_rule = {p.model.num_features};
    expect_invalid(p, "inputs_without_missing_rule: input " + std::to_string(p.model.num_features) +
                          " is out of range");
    p.model.inputs_without_missing_rule = {1, 1};
    expect_invalid(p, "inputs_without_missing_rule must ascend");
}

TEST(SpecJson, TwoSidedTransformRoundTripsAndValidates) {
    spec::Pipeline p = stump_pipeline();  // a one-group binary classifier
    p.transform = spec::PostTransform::TwoSided;
    expect_invalid(p, "two_sided needs a one-group classifier without probabilities");
    p.has_probabilities = false;
    EXPECT_NO_THROW(spec::validate(p));
    EXPECT_STREQ(spec::transform_name(p.transform), "two_sided");
    const spec::Pipeline q = spec::from_json(spec::to_json(p));
    EXPECT_EQ(q.transform, spec::PostTransform::TwoSided);
    EXPECT_FALSE(q.has_probabilities);
    // [-m, m]: the second column is the margin.
    const std::vector<float> x = {0.0f, 0.0f};
    std::vector<float> out(2);
    spec::reference_predict(p, x.data(), 1, out.data());
    EXPECT_EQ(out[0], -out[1]);
}

TEST(SpecJson, ModifiedHuberTransformRoundTripsAndValidates) {
    spec::Pipeline p = stump_pipeline();  // a one-group binary classifier: [1 - p, p]
    p.transform = spec::PostTransform::ModifiedHuber;
    EXPECT_NO_THROW(spec::validate(p));
    EXPECT_EQ(p.output_width(), 2);
    const spec::Pipeline q = spec::from_json(spec::to_json(p));
    EXPECT_EQ(q.transform, spec::PostTransform::ModifiedHuber);
    p.has_probabilities = false;
    expect_invalid(p, "modified_huber needs a classifier with probabilities");
    // Three groups: the probabilities, then the three decision values.
    p = stump_pipeline();
    p.transform = spec::PostTransform::ModifiedHuber;
    p.model.num_groups = 3;
    p.model.base_margin = {0.0f, 0.0f, 0.0f};
    p.classes = {0, 1, 2};
    EXPECT_NO_THROW(spec::validate(p));
    EXPECT_TRUE(spec::has_decision_columns(p));
    EXPECT_EQ(p.output_width(), 6);
}

TEST(SpecValidate, OneClassClassifierIsOneIdentityGroup) {
    spec::Pipeline p = stump_pipeline();
    p.classes = {3};
    expect_invalid(p, "classes lists 1 labels, 1 group(s) need 2");  // logistic: [1 - p, p]
    p.transform = spec::PostTransform::Identity;
    EXPECT_NO_THROW(spec::validate(p));
    EXPECT_EQ(p.output_width(), 1);
}

TEST(SpecJson, ComplementTransformRoundTripsAndValidates) {
    spec::Pipeline p = stump_pipeline();  // a one-group binary classifier
    p.transform = spec::PostTransform::Complement;
    EXPECT_NO_THROW(spec::validate(p));
    EXPECT_STREQ(spec::transform_name(p.transform), "complement");
    const spec::Pipeline q = spec::from_json(spec::to_json(p));
    EXPECT_EQ(q.transform, spec::PostTransform::Complement);
    // [1 - m, m]
    const std::vector<float> x = {0.0f, 0.0f};
    std::vector<float> out(2);
    spec::reference_predict(p, x.data(), 1, out.data());
    EXPECT_EQ(out[0], 1.0f - out[1]);
    p.task = spec::Task::Regression;
    p.classes.clear();
    expect_invalid(p, "complement needs a one-group classifier of two classes");
}

TEST(SpecJson, RandomFloatBitPatternsRoundTrip) {
    std::mt19937 rng(12345);  // fixed seed: deterministic
    spec::Pipeline p = stump_pipeline();
    std::vector<float> values;
    while (values.size() < 5000) {
        float f = from_bits(rng());
        if (std::isfinite(f)) values.push_back(f);
    }
    p.model.base_margin = {values[0]};
    // One single-leaf tree per value, the value also as (ignored) threshold.
    p.model.trees.resize(1);
    for (float v : values) {
        spec::Tree leaf;
        leaf.left = {-1};
        leaf.right = {-1};
        leaf.feature = {0};
        leaf.threshold = {v};
        leaf.default_left = {0};
        leaf.value = {v};
        p.model.trees.push_back(leaf);
    }
    expect_same(p, spec::from_json(spec::to_json(p)));
}

TEST(SpecJson, IsReadable) {
    nlohmann::json doc = nlohmann::json::parse(spec::to_json(stump_pipeline()));
    EXPECT_EQ(doc["task"], "classification");
    EXPECT_EQ(doc["transform"], "logistic");
    EXPECT_EQ(doc["model"]["comparison"], "<");
    EXPECT_EQ(doc["features"], nlohmann::json({"a", "b"}));
    EXPECT_EQ(doc["model"]["trees"][0]["default_left"][0], true);
    // Shortest digits, not the double expansion of the float.
    EXPECT_NE(spec::to_json(stump_pipeline()).find("0.1,"), std::string::npos);
}

TEST(SpecJson, RejectsMissingAndIllTypedFields) {
    const nlohmann::json good = nlohmann::json::parse(spec::to_json(stump_pipeline()));
    auto with = [&](const std::string& ptr, const nlohmann::json* value) {
        nlohmann::json d = good;
        if (value) d[nlohmann::json::json_pointer(ptr)] = *value;
        else d[nlohmann::json::json_pointer(ptr).parent_pointer()].erase(
                nlohmann::json::json_pointer(ptr).back());
        return d.dump();
    };
    struct Case {
        const char* ptr;
        nlohmann::json value;  // null: remove the field
        const char* needle;
    };
    const Case cases[] = {
        {"/task", nullptr, "task: is missing"},
        {"/task", "ranking", "task: must be"},
        {"/transform", 3, "transform: must be a string"},
        {"/features", nullptr, "features: is missing"},
        {"/features/0", 7, "features[0]"},
        {"/classes", "x", "classes: must be an array"},
        {"/format_version", 99, "format_version"},
        {"/model/num_groups", "1", "model.num_groups"},
        {"/model/comparison", "<<", "model.comparison"},
        {"/model/base_margin", nullptr, "model.base_margin"},
        {"/model/trees/0/threshold", nullptr, "model.trees[0].threshold: is missing"},
        {"/model/trees/1/left/0", 0.5, "model.trees[1].left[0]"},
        {"/model/trees/0/value/1", "zero", "model.trees[0].value[1]"},
        {"/model/trees/0/default_left/0", 2, "model.trees[0].default_left[0]"},
        {"/model/trees/0/group", 5000000000LL, "model.trees[0].group"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.ptr);
        std::string text = with(c.ptr, c.value.is_null() ? nullptr : &c.value);
        expect_error([&] { spec::from_json(text); }, ErrorCategory::InvalidModel, c.needle);
    }
    expect_error([] { spec::from_json("{not json"); }, ErrorCategory::InvalidModel, "not valid JSON");
    expect_error([] { spec::from_json("[1]"); }, ErrorCategory::InvalidModel, "document: must be an object");
}

TEST(SpecJson, FromJsonValidates) {
    nlohmann::json d = nlohmann::json::parse(spec::to_json(stump_pipeline()));
    d["model"]["trees"][0]["left"][0] = 9;
    expect_error([&] { spec::from_json(d.dump()); }, ErrorCategory::InvalidModel, "tree 0, node 0");
}

TEST(SpecValidate, AcceptsGoodPipeline) { EXPECT_NO_THROW(spec::validate(stump_pipeline())); }

TEST(SpecValidate, RejectsBadTrees) {
    {
        auto p = stump_pipeline();
        p.model.trees[0].left[0] = 7;
        expect_invalid(p, "tree 0, node 0: child 7 is outside [0, 3)");
    }
    {
        auto p = stump_pipeline();  // cycle through the root
        p.model.trees[0].left = {1, 0, -1};
        p.model.trees[0].right = {2, 2, -1};
        expect_invalid(p, "tree 0, node 1: child 0 is reached twice");
    }
    {
        auto p = stump_pipeline();  // shared child
        p.model.trees[0].right[0] = 1;
        expect_invalid(p, "tree 0, node 0: child 1 is reached twice");
    }
    {
        auto p = stump_pipeline();  // detached cycle: 3 -> 4 -> 3, each reached once
        auto& t = p.model.trees[0];
        t.left = {1, -1, -1, 4, 3, -1, -1};
        t.right = {2, -1, -1, 5, 6, -1, -1};
        t.feature.resize(7, 0);
        t.threshold.resize(7, 0);
        t.default_left.resize(7, 0);
        t.value.resize(7, 0);
        expect_invalid(p, "tree 0: 4 node(s) are not reachable");
    }
    {
        auto p = stump_pipeline();  // an unreachable leaf
        auto& t = p.model.trees[0];
        t.left.push_back(-1);
        t.right.push_back(-1);
        t.feature.push_back(0);
        t.threshold.push_back(0);
        t.default_left.push_back(0);
        t.value.push_back(0);
        expect_invalid(p, "tree 0: 1 node(s) are not reachable");
    }
    {
        auto p = stump_pipeline();
        p.model.trees[0].right[0] = -1;
        expect_invalid(p, "tree 0, node 0: a leaf must have left = right = -1");
    }
    {
        auto p = stump_pipeline();
        p.model.trees[0].feature[0] = 2;
        expect_invalid(p, "tree 0, node 0: feature 2 is outside [0, 2)");
    }
    {
        auto p = stump_pipeline();
        p.model.trees[1].group = 1;
        expect_invalid(p, "tree 1: group 1 is outside [0, 1)");
    }
    {
        auto p = stump_pipeline();
        p.model.trees[0].threshold.pop_back();
        expect_invalid(p, "tree 0: threshold has 2 entries");
    }
    {
        auto p = stump_pipeline();
        p.model.trees[1] = spec::Tree{};
        expect_invalid(p, "tree 1: has no nodes");
    }
    {
        auto p = stump_pipeline();
        p.model.trees[0].threshold[0] = NAN;
        expect_invalid(p, "tree 0, node 0: threshold is NaN");
    }
}

TEST(SpecValidate, RejectsInconsistentModel) {
    {
        auto p = stump_pipeline();
        p.model.base_margin = {0, 0};
        expect_invalid(p, "base_margin has 2 entries");
    }
    {
        auto p = stump_pipeline();
        p.features = {"a"};
        expect_invalid(p, "features lists 1 names");
    }
    {
        auto p = stump_pipeline();
        p.classes.clear();
        expect_invalid(p, "non-empty classes");
    }
    {
        auto p = stump_pipeline();
        p.classes = {0, 1, 2};
        expect_invalid(p, "classes lists 3 labels");
    }
    {
        auto p = stump_pipeline();
        p.transform = spec::PostTransform::Softmax;
        expect_invalid(p, "softmax needs at least two groups");
    }
    {
        auto p = stump_pipeline();
        p.task = spec::Task::Regression;
        expect_invalid(p, "a regression has no classes");
    }
}

// QuantileTransformer's normal output: the quantile function inverts the normal CDF to double
// precision across the range it is used on (down to 1e-7 - eps and up to 1 - that).
TEST(SpecSteps, NormalQuantileInvertsTheCdf) {
    for (double p : {1e-7 - 2.220446049250313e-16, 1e-6, 0.001, 0.02, 0.02425, 0.1, 0.3, 0.5, 0.7, 0.975, 0.999,
                     1.0 - 1e-7}) {
        const double x = pg_predict::spec::normal_quantile(p);
        const double back = 0.5 * std::erfc(-x / std::sqrt(2.0));
        EXPECT_NEAR(back, p, 1e-14 * std::max(p, 1e-3)) << "p = " << p;
        EXPECT_NEAR(pg_predict::spec::normal_quantile(1.0 - p), -x, 1e-9) << "p = " << p;
    }
    EXPECT_EQ(pg_predict::spec::normal_quantile(0.5), 0.0);
    EXPECT_TRUE(std::isinf(pg_predict::spec::normal_quantile(0.0)));
    EXPECT_TRUE(std::isnan(pg_predict::spec::normal_quantile(1.5)));
}
