// The XGBoost JSON importer on small hand-written documents in the 1.x and 2.x/3.x layouts.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pg_predict/common/error.hpp"
#include "pg_predict/importers/import.hpp"

namespace spec = pg_predict::spec;
namespace importers = pg_predict::importers;
using nlohmann::json;
using pg_predict::Artifact;
using pg_predict::ArtifactKind;
using pg_predict::Error;
using pg_predict::ErrorCategory;

namespace {

// As xgboost 1.7.4 writes it (trimmed): one tree, x1 < 0.5 ? -0.4 : 0.6, NaN goes left.
const char* kV1 = R"({
  "learner": {
    "attributes": {"best_iteration": "0", "best_ntree_limit": "1"},
    "feature_names": ["age", "income"], "feature_types": [],
    "gradient_booster": {
      "model": {
        "gbtree_model_param": {"num_parallel_tree": "1", "num_trees": "1", "size_leaf_vector": "0"},
        "tree_info": [0],
        "trees": [{
          "base_weights": [0.1, -0.8, 1.2],
          "categories": [], "categories_nodes": [], "categories_segments": [], "categories_sizes": [],
          "default_left": [1, 0, 0], "id": 0,
          "left_children": [1, -1, -1], "right_children": [2, -1, -1],
          "loss_changes": [9.5, 0.0, 0.0], "parents": [2147483647, 0, 0],
          "split_conditions": [0.5, -0.4, 0.6], "split_indices": [1, 0, 0],
          "split_type": [0, 0, 0], "sum_hessian": [10.0, 4.0, 6.0],
          "tree_param": {"num_deleted": "0", "num_feature": "2", "num_nodes": "3", "size_leaf_vector": "0"}
        }]
      },
      "name": "gbtree"
    },
    "learner_model_param": {"base_score": "3E-1", "boost_from_average": "1", "num_class": "0",
                            "num_feature": "2", "num_target": "1"},
    "objective": {"name": "binary:logistic", "reg_loss_param": {"scale_pos_weight": "1"}}
  },
  "version": [1, 7, 4]
})";

// The 2.x/3.x layout: bracketed base_score, size_leaf_vector "1", iteration_indptr, cats,
// no feature names.
const char* kV2 = R"({
  "learner": {
    "attributes": {}, "feature_names": [], "feature_types": [],
    "gradient_booster": {
      "model": {
        "cats": {"enc": [], "feature_segments": [], "sorted_idx": []},
        "gbtree_model_param": {"num_parallel_tree": "1", "num_trees": "1"},
        "iteration_indptr": [0, 1],
        "tree_info": [0],
        "trees": [{
          "base_weights": [0.0, -1.0, 1.0],
          "categories": [], "categories_nodes": [], "categories_segments": [], "categories_sizes": [],
          "default_left": [0, 0, 0], "id": 0,
          "left_children": [1, -1, -1], "right_children": [2, -1, -1],
          "loss_changes": [1.0, 0.0, 0.0], "parents": [2147483647, 0, 0],
          "split_conditions": [2.5, -0.25, 0.75], "split_indices": [0, 0, 0],
          "split_type": [0, 0, 0], "sum_hessian": [2.0, 1.0, 1.0],
          "tree_param": {"num_deleted": "0", "num_feature": "3", "num_nodes": "3", "size_leaf_vector": "1"}
        }]
      },
      "name": "gbtree"
    },
    "learner_model_param": {"base_score": "[5E-1]", "boost_from_average": "1", "num_class": "0",
                            "num_feature": "3", "num_target": "1"},
    "objective": {"name": "reg:squarederror", "reg_loss_param": {"scale_pos_weight": "1"}}
  },
  "version": [3, 1, 0]
})";

json doc(const char* text) { return json::parse(text); }

json& at(json& d, const char* ptr) { return d[json::json_pointer(ptr)]; }

// A single-leaf tree with the given value, in the 1.x layout.
json leaf_tree(double value) {
    json t = json::parse(R"({"default_left": [0], "left_children": [-1], "right_children": [-1],
                             "split_indices": [0], "split_type": [0],
                             "tree_param": {"num_nodes": "1", "size_leaf_vector": "0"}})");
    t["split_conditions"] = {value};
    return t;
}

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

void expect_import_error(const json& d, ErrorCategory cat, const std::string& needle) {
    expect_error([&] { importers::import_xgboost(d); }, cat, needle);
}

uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

}  // namespace

TEST(XgboostImporter, Reads1xModel) {
    spec::Pipeline p = importers::import_xgboost(doc(kV1));
    EXPECT_EQ(p.source_format, "xgboost");
    EXPECT_EQ(p.objective, "binary:logistic");
    EXPECT_EQ(p.task, spec::Task::Classification);
    EXPECT_EQ(p.transform, spec::PostTransform::Logistic);
    EXPECT_EQ(p.classes, (std::vector<double>{0, 1}));
    EXPECT_EQ(p.features, (std::vector<std::string>{"age", "income"}));
    EXPECT_EQ(p.output_width(), 2);
    EXPECT_EQ(p.model.num_features, 2);
    EXPECT_EQ(p.model.num_groups, 1);
    EXPECT_EQ(p.model.comparison, spec::Comparison::Less);
    ASSERT_EQ(p.model.base_margin.size(), 1u);
    // XGBoost's ProbToMargin in float32: -logf(1/p - 1).
    EXPECT_EQ(bits(p.model.base_margin[0]), bits(-std::log(1.0f / 0.3f - 1.0f)));
    ASSERT_EQ(p.model.trees.size(), 1u);
    const spec::Tree& t = p.model.trees[0];
    EXPECT_EQ(t.left, (std::vector<int32_t>{1, -1, -1}));
    EXPECT_EQ(t.right, (std::vector<int32_t>{2, -1, -1}));
    EXPECT_EQ(t.feature[0], 1);
    EXPECT_EQ(t.threshold[0], 0.5f);
    EXPECT_EQ(t.default_left, (std::vector<uint8_t>{1, 0, 0}));
    // Leaves come from split_conditions (with the learning rate), not base_weights.
    EXPECT_EQ(t.value[1], -0.4f);
    EXPECT_EQ(t.value[2], 0.6f);
    EXPECT_EQ(t.group, 0);
}

TEST(XgboostImporter, Reads2xModel) {
    spec::Pipeline p = importers::import_xgboost(doc(kV2));
    EXPECT_EQ(p.task, spec::Task::Regression);
    EXPECT_EQ(p.transform, spec::PostTransform::Identity);
    EXPECT_TRUE(p.classes.empty());
    EXPECT_EQ(p.features, (std::vector<std::string>(3, "")));
    EXPECT_EQ(p.model.base_margin, (std::vector<float>{0.5f}));
    EXPECT_EQ(p.model.trees[0].threshold[0], 2.5f);
    EXPECT_EQ(p.model.trees[0].value[1], -0.25f);
    EXPECT_EQ(p.model.trees[0].default_left, (std::vector<uint8_t>{0, 0, 0}));
}

TEST(XgboostImporter, EveryObjectiveAndItsBaseScore) {
    struct Case {
        const char* objective;
        const char* base_score;
        spec::Task task;
        spec::PostTransform transform;
        float margin;
    };
    using T = spec::Task;
    using X = spec::PostTransform;
    const Case cases[] = {
        {"reg:squarederror", "3E-1", T::Regression, X::Identity, 0.3f},
        {"reg:linear", "3E-1", T::Regression, X::Identity, 0.3f},
        {"reg:logistic", "2.5E-1", T::Regression, X::Logistic, -std::log(1.0f / 0.25f - 1.0f)},
        {"binary:logistic", "[7E-1]", T::Classification, X::Logistic, -std::log(1.0f / 0.7f - 1.0f)},
        // logitraw: XGBoost 1.7 uses the base score as the margin unchanged.
        {"binary:logitraw", "3E-1", T::Classification, X::Logistic, 0.3f},
        {"count:poisson", "7E-1", T::Regression, X::Exp, std::log(0.7f)},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.objective);
        json d = doc(kV1);
        at(d, "/learner/objective") = {{"name", c.objective}};
        at(d, "/learner/learner_model_param/base_score") = c.base_score;
        spec::Pipeline p = importers::import_xgboost(d);
        EXPECT_EQ(p.objective, c.objective);
        EXPECT_EQ(p.task, c.task);
        EXPECT_EQ(p.transform, c.transform);
        ASSERT_EQ(p.model.base_margin.size(), 1u);
        EXPECT_EQ(bits(p.model.base_margin[0]), bits(c.margin));
        EXPECT_EQ(p.classes.size(), c.task == T::Classification ? 2u : 0u);
    }
}

TEST(XgboostImporter, Multiclass) {
    for (const char* objective : {"multi:softprob", "multi:softmax"}) {
        SCOPED_TRACE(objective);
        json d = doc(kV1);
        at(d, "/learner/objective") = {{"name", objective},
                                       {"softmax_multiclass_param", {{"num_class", "3"}}}};
        at(d, "/learner/learner_model_param/num_class") = "3";
        at(d, "/learner/gradient_booster/model/trees") = {leaf_tree(0.1), leaf_tree(0.2),
                                                          leaf_tree(0.3), leaf_tree(0.4)};
        at(d, "/learner/gradient_booster/model/tree_info") = {0, 1, 2, 0};
        at(d, "/learner/gradient_booster/model/gbtree_model_param/num_trees") = "4";
        spec::Pipeline p = importers::import_xgboost(d);
        EXPECT_EQ(p.task, spec::Task::Classification);
        EXPECT_EQ(p.transform, spec::PostTransform::Softmax);
        EXPECT_EQ(p.classes, (std::vector<double>{0, 1, 2}));
        EXPECT_EQ(p.model.num_groups, 3);
        EXPECT_EQ(p.output_width(), 3);
        // Softmax has no link: the base score is the margin, once per group.
        EXPECT_EQ(p.model.base_margin, (std::vector<float>(3, 0.3f)));
        ASSERT_EQ(p.model.trees.size(), 4u);
        EXPECT_EQ(p.model.trees[1].group, 1);
        EXPECT_EQ(p.model.trees[3].group, 0);
        EXPECT_EQ(p.model.trees[2].value[0], 0.3f);

        // 3.1+ writes one base score per class.
        at(d, "/learner/learner_model_param/base_score") = "[1E-1,2E-1,-3E-1]";
        EXPECT_EQ(importers::import_xgboost(d).model.base_margin,
                  (std::vector<float>{0.1f, 0.2f, -0.3f}));
        at(d, "/learner/learner_model_param/base_score") = "[1E-1,2E-1]";
        expect_import_error(d, ErrorCategory::InvalidModel, "2 values for 3 output groups");
    }
}

TEST(XgboostImporter, DropsDeletedNodes) {
    // Node 1 was deleted by XGBoost's prune updater and stays in the arrays, unreachable
    // (num_deleted > 0); the rest is renumbered in its original order.
    json d = doc(kV1);
    json& t = at(d, "/learner/gradient_booster/model/trees/0");
    t["left_children"] = {2, -1, 3, -1, -1, -1};
    t["right_children"] = {4, -1, 5, -1, -1, -1};
    t["split_indices"] = {0, 2147483647, 1, 0, 0, 0};
    t["split_conditions"] = {1.0, 9.0, 2.0, 0.25, 0.5, 0.75};
    t["default_left"] = {0, 0, 1, 0, 0, 0};
    t["split_type"] = {0, 0, 0, 0, 0, 0};
    t["sum_hessian"] = {10.0, 0.0, 6.0, 2.0, 4.0, 4.0};  // the covers follow the renumbering
    t["tree_param"]["num_nodes"] = "6";
    t["tree_param"]["num_deleted"] = "1";
    spec::Pipeline p = importers::import_xgboost(d);
    const spec::Tree& c = p.model.trees[0];
    EXPECT_EQ(c.cover, (std::vector<double>{10.0, 6.0, 2.0, 4.0, 4.0}));
    EXPECT_EQ(c.left, (std::vector<int32_t>{1, 2, -1, -1, -1}));
    EXPECT_EQ(c.right, (std::vector<int32_t>{3, 4, -1, -1, -1}));
    EXPECT_EQ(c.feature[1], 1);
    EXPECT_EQ(c.threshold[1], 2.0f);
    EXPECT_EQ(c.default_left[1], 1);
    EXPECT_EQ(c.value[2], 0.25f);
    EXPECT_EQ(c.value[3], 0.5f);
    EXPECT_EQ(c.value[4], 0.75f);
    EXPECT_EQ(c.depth(), 2);
}

TEST(XgboostImporter, CoversAreOptionalAndChecked) {
    // sum_hessian (TreeSHAP's covers) is kept per node; a file without it scores as before; one
    // of the wrong length, or negative, is malformed (XGBoost itself refuses to load it).
    json d = doc(kV1);
    EXPECT_EQ(importers::import_xgboost(d).model.trees[0].cover, (std::vector<double>{10.0, 4.0, 6.0}));
    json& t = at(d, "/learner/gradient_booster/model/trees/0");
    t.erase("sum_hessian");
    EXPECT_TRUE(importers::import_xgboost(d).model.trees[0].cover.empty());
    t["sum_hessian"] = {1.0, 2.0};
    EXPECT_THROW(importers::import_xgboost(d), Error);
    t["sum_hessian"] = {1.0, -2.0, 3.0};
    EXPECT_THROW(importers::import_xgboost(d), Error);
}

TEST(XgboostImporter, DartFoldsWeightsIntoLeaves) {
    json d = doc(kV1);
    json gbtree = at(d, "/learner/gradient_booster");
    at(d, "/learner/gradient_booster") = {{"name", "dart"}, {"gbtree", gbtree},
                                          {"weight_drop", {0.5}}};
    spec::Pipeline p = importers::import_xgboost(d);
    EXPECT_EQ(p.model.trees[0].value[1], -0.4f * 0.5f);
    EXPECT_EQ(p.model.trees[0].value[2], 0.6f * 0.5f);
    EXPECT_EQ(p.model.trees[0].threshold[0], 0.5f);  // splits are not scaled

    at(d, "/learner/gradient_booster/weight_drop") = {0.5, 1.0};
    expect_import_error(d, ErrorCategory::InvalidModel, "weight_drop");
}

TEST(XgboostImporter, DefaultLeftAsBooleans) {
    json d = doc(kV1);
    at(d, "/learner/gradient_booster/model/trees/0/default_left") = {false, true, false};
    EXPECT_EQ(importers::import_xgboost(d).model.trees[0].default_left,
              (std::vector<uint8_t>{0, 0, 0}));  // leaves carry no direction
    at(d, "/learner/gradient_booster/model/trees/0/default_left") = {true, false, false};
    EXPECT_EQ(importers::import_xgboost(d).model.trees[0].default_left[0], 1);
}

TEST(XgboostImporter, RejectsUnsupported) {
    struct Case {
        const char* ptr;
        json value;
        const char* needle;
    };
    const Case cases[] = {
        {"/learner/objective/name", "survival:cox",
         "xgboost: learner.objective.name: objective \"survival:cox\" is not supported; supported: reg:squarederror"},
        {"/learner/objective/name", "binary:hinge", "count:poisson"},
        {"/learner/gradient_booster/model/trees/0/tree_param/size_leaf_vector", "3", "vector leaves"},
        {"/learner/learner_model_param/num_target", "2", "num_target"},
        {"/learner/learner_model_param/multi_strategy", "multi_output_tree", "multi_strategy"},
        {"/learner/gradient_booster/name", "gblinear", "booster \"gblinear\" is not supported"},
        {"/learner/learner_model_param/num_feature", "2000000000", "features are not supported"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.ptr);
        json d = doc(kV1);
        at(d, c.ptr) = c.value;
        expect_import_error(d, ErrorCategory::Unsupported, c.needle);
    }
}

TEST(XgboostImporter, RejectsMalformed) {
    struct Case {
        const char* ptr;
        json value;  // null: remove the field
        const char* needle;
    };
    const Case cases[] = {
        {"/learner/learner_model_param", nullptr, "learner.learner_model_param: is missing"},
        {"/learner/learner_model_param/num_feature", "two", "num_feature"},
        {"/learner/learner_model_param/base_score", "half", "base_score"},
        {"/learner/learner_model_param/base_score", "1E0", "must lie in (0, 1)"},
        {"/learner/learner_model_param/num_class", "3", "num_class"},
        {"/learner/objective", "binary:logistic", "learner.objective: must be an object"},
        {"/learner/feature_names", {"a"}, "feature_names: has 1 names"},
        {"/learner/gradient_booster/model/tree_info", {1}, "tree_info[0]: is group 1"},
        {"/learner/gradient_booster/model/tree_info", {0, 0}, "tree_info: has 2 entries"},
        {"/learner/gradient_booster/model/gbtree_model_param/num_trees", "2", "num_trees"},
        {"/learner/gradient_booster/model/trees", nullptr, "model.trees: is missing"},
        {"/learner/gradient_booster/model/trees/0/split_type", {1, 0, 0},
         "categories_nodes: lists 0 nodes, which are not the tree's categorical splits (split_type 1): 1"},
        {"/learner/gradient_booster/model/trees/0/categories_nodes", {0},
         "categories_nodes: lists 1 nodes, which are not the tree's categorical splits (split_type 1): 0"},
        {"/learner/gradient_booster/model/trees/0/split_conditions", {"NaN", -0.4, 0.6},
         "split_conditions[0]: must be a finite number (it is a numerical split's threshold)"},
        {"/learner/gradient_booster/model/trees/0/split_conditions", {0.5, "NaN", 0.6},
         "split_conditions[1]: must be a finite number (it is a leaf's value)"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.ptr);
        json d = doc(kV1);
        json::json_pointer ptr(c.ptr);
        if (c.value.is_null()) d[ptr.parent_pointer()].erase(ptr.back());
        else d[ptr] = c.value;
        expect_import_error(d, ErrorCategory::InvalidModel, c.needle);
    }
    const Case tree_cases[] = {
        {"left_children", {1, -1}, "right_children: has 3 entries, left_children has 2"},
        {"left_children", {7, -1, -1}, "node 0 has child 7 outside [0, 3)"},
        {"left_children", {1, 0, -1}, "node 1 has exactly one child"},
        {"right_children", {1, -1, -1}, "reaches node 1 a second time"},
        {"split_indices", {5, 0, 0}, "node 0 splits on feature 5 but the model reads 2 features"},
        {"split_indices", {-1, 0, 0}, "split_indices[0]: is -1, outside"},
        {"split_conditions", {"0.5", 0, 0}, "split_conditions[0]: must be a number"},
        {"default_left", {2, 0, 0}, "default_left[0]"},
        {"split_conditions", nullptr, "split_conditions: is missing"},
        {"left_children", json::array(), "is empty"},
    };
    for (const Case& c : tree_cases) {
        SCOPED_TRACE(c.ptr);
        json d = doc(kV1);
        json& t = at(d, "/learner/gradient_booster/model/trees/0");
        if (c.value.is_null()) t.erase(c.ptr);
        else t[c.ptr] = c.value;
        expect_import_error(d, ErrorCategory::InvalidModel, c.needle);
    }
    expect_import_error(json::array(), ErrorCategory::InvalidModel, "xgboost: document: must be a JSON object");
    expect_import_error(json::object(), ErrorCategory::InvalidModel, "learner: is missing");
    expect_import_error(json{{"learner", 1}}, ErrorCategory::InvalidModel, "must be an object");
}

TEST(XgboostImporter, FormatDetectionAndDispatch) {
    EXPECT_EQ(importers::detect_format(doc(kV1)), "xgboost");
    EXPECT_EQ(importers::detect_format(doc(kV2)), "xgboost");
    expect_error([] { importers::detect_format(json{{"trees", 1}}); }, ErrorCategory::InvalidModel,
                 "format");
    EXPECT_EQ(importers::import_model(doc(kV1), "auto").objective, "binary:logistic");
    EXPECT_EQ(importers::import_model(doc(kV2), "xgboost").objective, "reg:squarederror");
    expect_error([] { importers::import_model(doc(kV1), "catboost"); },
                 ErrorCategory::InvalidParameter, "known formats: auto, xgboost");
}

// XGBoost 1.7.4 with enable_categorical: node 0 sends feature 0's categories {1, 3} right and
// the rest left; a missing value takes the default child (left in the file, right in the
// variant). split_conditions holds a bare NaN, which is no JSON: the document is read as the
// text create_model gets.
TEST(XgboostImporter, ReadsCategoricalSplits) {
    const std::string text = R"({"learner": {"feature_names": ["color", "x"], "feature_types": ["c", "float"],
      "gradient_booster": {"model": {"gbtree_model_param": {"num_trees": "1"}, "tree_info": [0],
        "trees": [{"categories": [1, 3], "categories_nodes": [0], "categories_segments": [0],
                   "categories_sizes": [2], "default_left": [1, 0, 0],
                   "left_children": [1, -1, -1], "right_children": [2, -1, -1],
                   "split_conditions": [NaN, -0.5, 0.25], "split_indices": [0, 0, 0],
                   "split_type": [1, 0, 0], "tree_param": {"num_nodes": "3"}}]},
        "name": "gbtree"},
      "learner_model_param": {"base_score": "5E-1", "num_class": "0", "num_feature": "2"},
      "objective": {"name": "reg:squarederror"}}})";
    const std::vector<double> rows = {1, 0,  3, 0,  2, 0,  0, 0,  NAN, 0,  1.7, 0,  -0.5, 0,  -1, 0,
                                      16777219, 0,  1e30, 0};
    const std::vector<float> codes = {0.25f, 0.25f, -0.5f, -0.5f, -0.5f, 0.25f, -0.5f, -0.5f, -0.5f, -0.5f};
    auto check = [&](const std::string& doc_text, const std::vector<float>& want) {
        spec::Pipeline p = importers::import_model(Artifact{ArtifactKind::Text, doc_text}, "auto", json::object());
        ASSERT_EQ(p.steps.size(), 1u);
        std::vector<float> out(want.size());
        spec::reference_predict(p, rows.data(), static_cast<int64_t>(want.size()), out.data());
        for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(out[i], want[i] + 0.5f) << "row " << i;
    };
    check(text, codes);
    std::string right = text;
    right.replace(right.find("[1, 0, 0]"), 9, "[0, 0, 0]");  // default_left: a missing value goes right
    std::vector<float> missing_right = codes;
    missing_right[4] = 0.25f;
    check(right, missing_right);

    // Option "categories": the feature is a text input whose vocabulary is the categories.
    json options = {{"categories", {{"color", {"blue", "cyan", "gray", "green"}}}}};
    spec::Pipeline p = importers::import_model(Artifact{ArtifactKind::Text, text}, "auto", options);
    ASSERT_EQ(p.text_inputs.size(), 1u);
    EXPECT_EQ(p.text_inputs[0].input, 0);
    EXPECT_TRUE(p.text_inputs[0].unknown_is_missing);
    expect_error([&] { importers::import_model(Artifact{ArtifactKind::Text, text}, "auto",
                                               {{"categories", {{"color", {"blue", "cyan"}}}}}); },
                 ErrorCategory::InvalidParameter, "gives feature \"color\" 2 categories, but");
    expect_error([&] { importers::import_model(Artifact{ArtifactKind::Text, text}, "auto",
                                               {{"categories", {{"x", {"a"}}}}}); },
                 ErrorCategory::InvalidParameter, "names \"x\", which is not a categorical feature");
    expect_error([&] { importers::import_model(Artifact{ArtifactKind::Text, text}, "auto",
                                               {{"categories", {{"colour", {"a"}}}}}); },
                 ErrorCategory::InvalidParameter, "names \"colour\", which is not a feature of the model");
}
