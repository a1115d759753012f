// The ONNX importer against the converters' own graphs (regress/fixtures/onnx/, written by
// skl2onnx, onnxmltools and torch.onnx.export) and the source library's predictions on the
// same rows: the reference evaluation and the compiled program both within 1e-5. Hostile
// graphs get clean errors.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pg_predict/common/error.hpp"
#include "pg_predict/compiler/compile.hpp"
#include "pg_predict/importers/import.hpp"
#include "pg_predict/runtime/api.hpp"
#include "program_ids.hpp"

namespace pg_predict {
namespace {

using nlohmann::json;

std::string read_fixture(const std::string& name) {
    std::ifstream in(std::string(PG_PREDICT_FIXTURES) + "/onnx/" + name, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_FALSE(ss.str().empty()) << name;
    return ss.str();
}

std::vector<std::vector<std::string>> read_csv(const std::string& name) {
    std::vector<std::vector<std::string>> rows;
    std::stringstream in(read_fixture(name));
    std::string line;
    while (std::getline(in, line)) {
        std::vector<std::string> fields;
        std::string f;
        std::stringstream ls(line);
        while (std::getline(ls, f, ',')) fields.push_back(f);
        if (!line.empty() && line.back() == ',') fields.push_back("");
        rows.push_back(fields);
    }
    return rows;
}

// The csv rows as the batch PostgreSQL fills: numbers, NaN for an empty field, and for a text
// input the value's index in its vocabulary (-1 when unknown).
std::vector<float> batch(const spec::Pipeline& p, const std::vector<std::vector<std::string>>& csv) {
    const auto& header = csv[0];
    std::vector<int> column_of;
    for (size_t i = 0; i < p.features.size(); ++i) {
        if (p.features[i].empty()) {
            column_of.push_back(static_cast<int>(i));
            continue;
        }
        auto it = std::find(header.begin(), header.end(), p.features[i]);
        EXPECT_NE(it, header.end()) << p.features[i];
        column_of.push_back(static_cast<int>(it - header.begin()));
    }
    std::vector<float> x;
    for (size_t r = 1; r < csv.size(); ++r)
        for (size_t i = 0; i < p.features.size(); ++i) {
            const std::string& f = csv[r][static_cast<size_t>(column_of[i])];
            const spec::TextInput* text = nullptr;
            for (const auto& t : p.text_inputs)
                if (t.input == static_cast<int32_t>(i)) text = &t;
            if (f.empty()) {
                x.push_back(std::numeric_limits<float>::quiet_NaN());
            } else if (text != nullptr) {
                auto it = std::find(text->vocabulary.begin(), text->vocabulary.end(), f);
                x.push_back(it == text->vocabulary.end() ? -1.0f : static_cast<float>(it - text->vocabulary.begin()));
            } else {
                x.push_back(std::stof(f));
            }
        }
    return x;
}

std::vector<float> run_compiled(const spec::Pipeline& p, const std::vector<float>& x, int64_t rows, compiler::Strategy s) {
    const std::string bytes = compiler::compile(p, s);
    runtime::Program* prog = runtime::load_program(testing::next_program_id(), bytes.data(), bytes.size());
    std::vector<float> out(static_cast<size_t>(rows * p.output_width()), -12345.0f);
    runtime::run_program(prog, x.data(), rows, p.input_width(), out.data());
    runtime::release_program(prog);
    return out;
}

// Compares the outputs with the expected csv: probabilities / values / module outputs within
// 1e-5, labels exactly.
void expect_expected(const std::string& name, const spec::Pipeline& p, const std::vector<float>& out,
                     const std::vector<std::vector<std::string>>& expected, const std::string& what) {
    const auto& header = expected[0];
    const size_t w = static_cast<size_t>(p.output_width());
    int mismatches = 0;
    for (size_t r = 1; r < expected.size() && mismatches < 5; ++r) {
        const float* o = &out[(r - 1) * w];
        for (size_t c = 0; c < header.size(); ++c) {
            const double want = std::stod(expected[r][c]);
            const std::string& h = header[c];
            double got;
            if (h == "label" || h == "cluster") {
                ASSERT_EQ(p.task, spec::Task::Classification) << name;
                got = p.classes[static_cast<size_t>(std::max_element(o, o + w) - o)];
                if (got != want) ++mismatches;
                EXPECT_EQ(got, want) << name << " " << what << " row " << r - 1 << " " << h;
                continue;
            }
            const size_t col = h == "value" ? 0 : static_cast<size_t>(std::stoi(h.substr(h.find('_') + 1)));
            ASSERT_LT(col, w) << name << " " << h;
            got = o[col];
            // 1e-5, relative above 1 (a float32 sum of 30 trees near 34 differs in its last bits
            // with the order of the sum).
            const double tol = 1e-5 * std::max(1.0, std::fabs(want));
            if (!(std::fabs(got - want) <= tol)) ++mismatches;
            EXPECT_NEAR(got, want, tol) << name << " " << what << " row " << r - 1 << " " << h;
        }
    }
}

class OnnxFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxFixture, ScoresLikeTheSourceLibrary) {
    const std::string name = GetParam();
    const spec::Pipeline p = importers::import_onnx(read_fixture(name + ".onnx"), json::object());
    EXPECT_EQ(p.source_format, "onnx");
    const auto csv = read_csv(name + ".csv");
    const auto expected = read_csv(name + ".expected.csv");
    const std::vector<float> x = batch(p, csv);
    const int64_t rows = static_cast<int64_t>(csv.size() - 1);
    ASSERT_EQ(static_cast<int64_t>(x.size()), rows * p.input_width());

    std::vector<float> ref(static_cast<size_t>(rows * p.output_width()));
    spec::reference_predict(p, x.data(), rows, ref.data());
    expect_expected(name, p, ref, expected, "reference");

    // The spec's JSON round trip is what the catalog keeps.
    const spec::Pipeline back = spec::from_json(spec::to_json(p));
    expect_expected(name, back, run_compiled(back, x, rows, compiler::Strategy::Native), expected, "compiled");
    if (!p.model.trees.empty() && p.model.max_depth() <= 10)
        expect_expected(name, back, run_compiled(back, x, rows, compiler::Strategy::PerfectTreeTraversal), expected,
                        "compiled perfect_tree_traversal");
}

std::vector<std::string> case_names() {
    std::vector<std::string> names;
    for (const auto& c : json::parse(read_fixture("cases.json"))) names.push_back(c.at("name").get<std::string>());
    return names;
}

INSTANTIATE_TEST_SUITE_P(Converters, OnnxFixture, ::testing::ValuesIn(case_names()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

TEST(OnnxImporter, FixturesHaveTheirShape) {
    const spec::Pipeline xgb = importers::import_onnx(read_fixture("xgb_c.onnx"), json::object());
    EXPECT_EQ(xgb.model.comparison, spec::Comparison::Less);  // BRANCH_LT
    EXPECT_EQ(xgb.transform, spec::PostTransform::Logistic);
    EXPECT_EQ(xgb.features.size(), 8u);
    const spec::Pipeline ct = importers::import_onnx(read_fixture("ct_logreg.onnx"), json::object());
    ASSERT_EQ(ct.text_inputs.size(), 2u);
    EXPECT_EQ(ct.features.size(), 10u);
    EXPECT_EQ(ct.features[8], "city");
    const spec::Pipeline svc = importers::import_onnx(read_fixture("svc_rbf.onnx"), json::object());
    EXPECT_FALSE(svc.has_probabilities);
}

}  // namespace
}  // namespace pg_predict

// --- hostile graphs, built with the protobuf classes ---------------------------------------------

#include <onnx/onnx-ml.pb.h>

namespace pg_predict {
namespace {

struct GraphBuilder {
    onnx::ModelProto m;
    onnx::GraphProto* g;

    explicit GraphBuilder(int64_t width = 4) {
        m.set_ir_version(8);
        auto* o = m.add_opset_import();
        o->set_domain("");
        o->set_version(15);
        o = m.add_opset_import();
        o->set_domain("ai.onnx.ml");
        o->set_version(3);
        g = m.mutable_graph();
        input("X", width);
    }
    void input(const std::string& name, int64_t width, int elem = onnx::TensorProto::FLOAT) {
        auto* in = g->add_input();
        in->set_name(name);
        auto* t = in->mutable_type()->mutable_tensor_type();
        t->set_elem_type(elem);
        t->mutable_shape()->add_dim()->set_dim_param("N");
        t->mutable_shape()->add_dim()->set_dim_value(width);
    }
    onnx::NodeProto* node(const std::string& op, std::vector<std::string> ins, std::vector<std::string> outs,
                          const std::string& domain = "") {
        auto* n = g->add_node();
        n->set_op_type(op);
        n->set_name(op + std::to_string(g->node_size()));
        n->set_domain(domain);
        for (auto& i : ins) n->add_input(i);
        for (auto& o : outs) n->add_output(o);
        return n;
    }
    void output(const std::string& name) { g->add_output()->set_name(name); }
    void initializer(const std::string& name, std::vector<int64_t> dims, std::vector<float> values) {
        auto* t = g->add_initializer();
        t->set_name(name);
        t->set_data_type(onnx::TensorProto::FLOAT);
        for (int64_t d : dims) t->add_dims(d);
        for (float v : values) t->add_float_data(v);
    }
    void int_initializer(const std::string& name, std::vector<int64_t> values) {
        auto* t = g->add_initializer();
        t->set_name(name);
        t->set_data_type(onnx::TensorProto::INT64);
        t->add_dims(static_cast<int64_t>(values.size()));
        for (int64_t v : values) t->add_int64_data(v);
    }
    std::string bytes() const { return m.SerializeAsString(); }
};

void ints(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
}
void floats(onnx::NodeProto* n, const std::string& name, std::vector<float> v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOATS);
    for (float x : v) a->add_floats(x);
}
void strings(onnx::NodeProto* n, const std::string& name, std::vector<std::string> v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRINGS);
    for (auto& x : v) a->add_strings(x);
}

// One tree: node 0 splits feature `feature` at 0.5 (mode), leaves 1 and 2.
GraphBuilder tree_model(int64_t feature, std::vector<int64_t> yes, std::vector<int64_t> no,
                        const std::string& mode = "BRANCH_LEQ", int64_t leaf_target = 0) {
    GraphBuilder b;
    auto* n = b.node("TreeEnsembleRegressor", {"X"}, {"variable"}, "ai.onnx.ml");
    ints(n, "nodes_treeids", {0, 0, 0});
    ints(n, "nodes_nodeids", {0, 1, 2});
    ints(n, "nodes_featureids", {feature, 0, 0});
    strings(n, "nodes_modes", {mode, "LEAF", "LEAF"});
    floats(n, "nodes_values", {0.5f, 0, 0});
    ints(n, "nodes_truenodeids", yes);
    ints(n, "nodes_falsenodeids", no);
    ints(n, "target_treeids", {0, 0});
    ints(n, "target_nodeids", {1, 2});
    ints(n, "target_ids", {leaf_target, 0});
    floats(n, "target_weights", {1.0f, 2.0f});
    b.output("variable");
    return b;
}

std::string error_of(const std::string& bytes, ErrorCategory want, const json& options = json::object()) {
    try {
        importers::import_onnx(bytes, options);
    } catch (const Error& e) {
        EXPECT_EQ(static_cast<int>(e.category()), static_cast<int>(want)) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
}

float score_one(const spec::Pipeline& p, std::vector<float> row) {
    std::vector<float> out(static_cast<size_t>(p.output_width()));
    spec::reference_predict(p, row.data(), 1, out.data());
    return out[0];
}

TEST(OnnxHostile, TruncatedGarbageAndEmptyBytes) {
    const std::string good = read_fixture("rf_c.onnx");
    EXPECT_NE(error_of(good.substr(0, good.size() / 2), ErrorCategory::InvalidModel).find("cannot parse"), std::string::npos);
    error_of(std::string("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01garbage", 21), ErrorCategory::InvalidModel);
    EXPECT_NE(error_of("", ErrorCategory::InvalidModel).find("ir_version"), std::string::npos);
}

TEST(OnnxHostile, CyclesAndUndefinedInputs) {
    GraphBuilder b;
    b.node("Relu", {"b"}, {"a"});
    b.node("Relu", {"a"}, {"b"});
    b.output("b");
    EXPECT_NE(error_of(b.bytes(), ErrorCategory::InvalidModel).find("cycle"), std::string::npos);
    GraphBuilder u;
    u.node("Relu", {"nope"}, {"a"});
    u.output("a");
    EXPECT_NE(error_of(u.bytes(), ErrorCategory::InvalidModel).find("\"nope\""), std::string::npos);
}

TEST(OnnxHostile, UnknownOperatorIsNamedWithItsNode) {
    GraphBuilder b;
    b.node("Conv", {"X"}, {"y"});
    b.output("y");
    const std::string msg = error_of(b.bytes(), ErrorCategory::Unsupported);
    EXPECT_NE(msg.find("operator Conv"), std::string::npos) << msg;
    EXPECT_NE(msg.find("node 0 (Conv \"Conv1\")"), std::string::npos) << msg;
    GraphBuilder d;
    d.node("Relu", {"X"}, {"y"}, "com.microsoft");
    d.output("y");
    EXPECT_NE(error_of(d.bytes(), ErrorCategory::Unsupported).find("com.microsoft"), std::string::npos);
}

// A binary operator given one input is a malformed node, not the input passed through; Max,
// Min and Sum of one tensor are that tensor, as ONNX defines them.
TEST(OnnxHostile, BinaryOperatorsNeedTwoInputs) {
    for (const char* op : {"Xor", "And", "Or", "Equal", "LessOrEqual", "GreaterOrEqual"}) {
        GraphBuilder b;
        b.node(op, {"X"}, {"y"});
        b.output("y");
        const std::string msg = error_of(b.bytes(), ErrorCategory::InvalidModel);
        EXPECT_NE(msg.find("takes two inputs, not 1"), std::string::npos) << op << ": " << msg;
    }
    GraphBuilder sum;
    sum.node("Sum", {"X"}, {"y"});
    sum.output("y");
    const spec::Pipeline p = importers::import_onnx(sum.bytes(), json::object());
    EXPECT_FLOAT_EQ(score_one(p, {2.5f, 0, 0, 0}), 2.5f);
}

TEST(OnnxHostile, TreeIndicesOutOfRangeAndCycles) {
    EXPECT_NE(error_of(tree_model(7, {1, 0, 0}, {2, 0, 0}).bytes(), ErrorCategory::InvalidModel).find("reads feature 7"),
              std::string::npos);
    EXPECT_NE(error_of(tree_model(0, {9, 0, 0}, {2, 0, 0}).bytes(), ErrorCategory::InvalidModel).find("child 9"),
              std::string::npos);
    EXPECT_NE(error_of(tree_model(0, {0, 0, 0}, {2, 0, 0}).bytes(), ErrorCategory::InvalidModel).find("tree 0"),
              std::string::npos);
    EXPECT_NE(error_of(tree_model(0, {1, 0, 0}, {2, 0, 0}, "BRANCH_SOMETIMES").bytes(), ErrorCategory::InvalidModel)
                  .find("BRANCH_SOMETIMES"),
              std::string::npos);
    EXPECT_NE(error_of(tree_model(0, {1, 0, 0}, {2, 0, 0}, "BRANCH_LEQ", 3).bytes(), ErrorCategory::InvalidModel)
                  .find("out of range"),
              std::string::npos);
}

TEST(OnnxTrees, EveryBranchModeSendsValuesWhereOnnxDoes) {
    // Leaf 1 (true) scores 1, leaf 2 (false) 2; the split at 0.5 on feature 0.
    struct Case { const char* mode; float x; float want; };
    const float below = std::nextafter(0.5f, 0.0f), above = std::nextafter(0.5f, 1.0f);
    for (const Case& c : std::vector<Case>{{"BRANCH_LEQ", 0.5f, 1}, {"BRANCH_LEQ", above, 2}, {"BRANCH_LT", 0.5f, 2},
                                           {"BRANCH_LT", below, 1}, {"BRANCH_GTE", 0.5f, 1}, {"BRANCH_GTE", below, 2},
                                           {"BRANCH_GT", 0.5f, 2}, {"BRANCH_GT", above, 1}, {"BRANCH_EQ", 0.5f, 1},
                                           {"BRANCH_EQ", above, 2}, {"BRANCH_EQ", below, 2}, {"BRANCH_NEQ", 0.5f, 2},
                                           {"BRANCH_NEQ", below, 1}, {"BRANCH_NEQ", above, 1},
                                           // NaN: false, but true for NEQ (no missing_value_tracks_true)
                                           {"BRANCH_LEQ", NAN, 2}, {"BRANCH_GT", NAN, 2}, {"BRANCH_NEQ", NAN, 1},
                                           {"BRANCH_EQ", NAN, 2}}) {
        const spec::Pipeline p = importers::import_onnx(tree_model(0, {1, 0, 0}, {2, 0, 0}, c.mode).bytes(), json::object());
        EXPECT_EQ(score_one(p, {c.x, 0, 0, 0}), c.want) << c.mode << " x=" << c.x;
    }
    // A mixed ensemble compiles too.
    const spec::Pipeline p = importers::import_onnx(tree_model(0, {1, 0, 0}, {2, 0, 0}, "BRANCH_EQ").bytes(), json::object());
    const std::vector<float> x{0.5f, 0, 0, 0, 0.25f, 0, 0, 0};
    const std::vector<float> got = run_compiled(p, x, 2, compiler::Strategy::Native);
    EXPECT_EQ(got[0], 1.0f);
    EXPECT_EQ(got[1], 2.0f);
}

TEST(OnnxTrees, DoubleThresholdsSplitFloatInputsAsDoublesWould) {
    // nodes_values_as_tensor (ai.onnx.ml 3): 0.1 as a double lies between two float32 values.
    for (const char* mode : {"BRANCH_LEQ", "BRANCH_LT", "BRANCH_GT", "BRANCH_GTE"}) {
        GraphBuilder b = tree_model(0, {1, 0, 0}, {2, 0, 0}, mode);
        onnx::NodeProto* n = b.g->mutable_node(0);
        for (int i = 0; i < n->attribute_size(); ++i)
            if (n->attribute(i).name() == "nodes_values") n->mutable_attribute()->DeleteSubrange(i, 1);
        auto* a = n->add_attribute();
        a->set_name("nodes_values_as_tensor");
        a->set_type(onnx::AttributeProto::TENSOR);
        a->mutable_t()->set_data_type(onnx::TensorProto::DOUBLE);
        a->mutable_t()->add_dims(3);
        for (double v : {0.1, 0.0, 0.0}) a->mutable_t()->add_double_data(v);
        const spec::Pipeline p = importers::import_onnx(b.bytes(), json::object());
        const std::string m = mode;
        for (float x : {0.1f, std::nextafter(0.1f, 0.0f), 0.05f, 0.2f}) {
            const double xd = x;
            const bool yes = m == "BRANCH_LEQ" ? xd <= 0.1 : m == "BRANCH_LT" ? xd < 0.1 : m == "BRANCH_GT" ? xd > 0.1 : xd >= 0.1;
            EXPECT_EQ(score_one(p, {x, 0, 0, 0}), yes ? 1.0f : 2.0f) << mode << " x=" << x;
        }
    }
}

TEST(OnnxHostile, GatherAndArrayFeatureExtractorIndicesOutOfRange) {
    GraphBuilder b;
    b.int_initializer("idx", {1, 4});
    b.node("ArrayFeatureExtractor", {"X", "idx"}, {"y"}, "ai.onnx.ml");
    b.output("y");
    EXPECT_NE(error_of(b.bytes(), ErrorCategory::InvalidModel).find("index 4 is out of range"), std::string::npos);
    GraphBuilder g;
    g.int_initializer("idx", {-5});
    auto* n = g.node("Gather", {"X", "idx"}, {"y"});
    auto* a = n->add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(1);
    g.output("y");
    EXPECT_NE(error_of(g.bytes(), ErrorCategory::InvalidModel).find("index -5"), std::string::npos);
}

TEST(OnnxHostile, WrongAttributeTypesAndShapes) {
    GraphBuilder b;
    auto* n = b.node("LinearRegressor", {"X"}, {"variable"}, "ai.onnx.ml");
    ints(n, "coefficients", {1, 2, 3, 4});
    b.output("variable");
    EXPECT_NE(error_of(b.bytes(), ErrorCategory::InvalidModel).find("coefficients must be FLOATS, not INTS"), std::string::npos);
    GraphBuilder m;
    m.initializer("W", {3, 2}, {1, 2, 3, 4, 5, 6});
    m.node("MatMul", {"X", "W"}, {"y"});
    m.output("y");
    EXPECT_NE(error_of(m.bytes(), ErrorCategory::InvalidModel).find("MatMul"), std::string::npos);
    GraphBuilder h;
    auto* t = h.g->add_initializer();
    t->set_name("huge");
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(int64_t(1) << 40);
    h.node("Add", {"X", "huge"}, {"y"});
    h.output("y");
    EXPECT_NE(error_of(h.bytes(), ErrorCategory::InvalidModel).find("dimension"), std::string::npos);
}

TEST(OnnxHostile, DeeplyNestedSubgraphsStopAtTheRecursionLimit) {
    GraphBuilder b;
    onnx::GraphProto* g = b.g;
    for (int i = 0; i < 100; ++i) {
        auto* n = g->add_node();
        n->set_op_type("If");
        auto* a = n->add_attribute();
        a->set_name("then_branch");
        a->set_type(onnx::AttributeProto::GRAPH);
        g = a->mutable_g();
    }
    EXPECT_NE(error_of(b.bytes(), ErrorCategory::InvalidModel).find("nested deeper"), std::string::npos);
}

TEST(OnnxImporter, OutputOptionPicksTheOutput) {
    const std::string bytes = read_fixture("kmeans.onnx");
    const std::string msg = error_of(bytes, ErrorCategory::InvalidParameter, {{"output", "nope"}});
    EXPECT_NE(msg.find("its outputs: label, scores"), std::string::npos) << msg;
    // The distances themselves (Sqrt of the squared distances): one column per cluster.
    const spec::Pipeline p = importers::import_onnx(bytes, {{"output", "scores"}});
    EXPECT_EQ(p.output_width(), 4);
    EXPECT_EQ(p.task, spec::Task::Classification);
}

// Text class labels: classlabels_strings on the classifier, or a string classes constant that
// ArrayFeatureExtractor indexes with an ArgMax (the label as ONNX graphs spell it by hand).
TEST(OnnxImporter, StringClassLabels) {
    GraphBuilder b(2);
    auto* n = b.node("LinearClassifier", {"X"}, {"label", "probabilities"}, "ai.onnx.ml");
    floats(n, "coefficients", {1, 0, 0, 1, -1, -1});
    floats(n, "intercepts", {0, 0, 0});
    strings(n, "classlabels_strings", {"gold", "silver", "bronze"});
    b.output("label");
    b.output("probabilities");
    spec::Pipeline p = importers::import_onnx(b.bytes(), json::object());
    EXPECT_EQ(p.class_labels, (std::vector<std::string>{"gold", "silver", "bronze"}));
    EXPECT_EQ(p.classes, (std::vector<double>{0, 1, 2}));
    ints(n, "classlabels_ints", {0, 1, 2});
    const std::string msg = error_of(b.bytes(), ErrorCategory::InvalidModel);
    EXPECT_NE(msg.find("classlabels_strings and classlabels_ints"), std::string::npos) << msg;

    GraphBuilder c(2);
    c.initializer("W", {2, 3}, {1, 0, -1, 0, 1, -1});
    c.node("MatMul", {"X", "W"}, {"scores"});
    auto* axis = c.node("ArgMax", {"scores"}, {"index"})->add_attribute();
    axis->set_name("axis");
    axis->set_type(onnx::AttributeProto::INT);
    axis->set_i(1);
    auto* classes = c.g->add_initializer();
    classes->set_name("classes");
    classes->set_data_type(onnx::TensorProto::STRING);
    classes->add_dims(3);
    for (const char* s : {"yes", "no", "maybe"}) classes->add_string_data(s);
    c.node("ArrayFeatureExtractor", {"classes", "index"}, {"label"}, "ai.onnx.ml");
    c.output("label");
    c.output("scores");
    p = importers::import_onnx(c.bytes(), json::object());
    EXPECT_EQ(p.class_labels, (std::vector<std::string>{"yes", "no", "maybe"}));
    EXPECT_EQ(p.classes, (std::vector<double>{0, 1, 2}));
}

}  // namespace
}  // namespace pg_predict
