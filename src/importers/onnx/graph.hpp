// The ONNX importer's view of a graph while it walks the nodes (src/importers/onnx/, internal).
//
// Every tensor of the graph becomes a Value. The batch dimension N is never materialized: a
// tensor computed from the inputs is a Row, the featurizer steps (spec/steps.hpp) that compute
// its [N, dims...] entries (flattened row-major) from the pipeline's input vector. Linear and
// per-entry operators (Add of a constant, MatMul, Gemm, Scaler, Relu, ...) append steps to a
// Row; the model at the end (a tree ensemble, or a Softmax over a Row) is a Scores value; an
// ArgMax is a Label. What no specific step computes becomes an op "tensor" step, the general
// path (general_ops.cpp). Everything the graph computes ends as one spec::Pipeline, so an ONNX model
// is optimized, compiled and evaluated (in float64 where the steps are) like every other one.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pg_predict/common/error.hpp"
#include "pg_predict/spec/pipeline.hpp"

namespace onnx {
class NodeProto;
class AttributeProto;
class TensorProto;
}  // namespace onnx

namespace pg_predict::importers::onnx_import {

// A constant tensor (initializer, Constant node, or folded from constants). Numbers are kept
// as double; strings only for string tensors.
struct Constant {
    std::vector<int64_t> shape;
    std::vector<double> values;
    std::vector<std::string> strings;
    bool is_string = false;
    bool is_integer = false;
    int64_t size() const;
};

// A tensor [N, dims...] computed from the inputs by `steps` over the pipeline's input vector.
struct Row {
    std::vector<spec::Step> steps;
    std::vector<int64_t> dims;        // per-row shape; empty = one number per row ([N])
    // Per flattened column: the text input it still is unchanged (index into the graph's
    // inputs), or -1 for a number.
    std::vector<int32_t> text;
    int64_t width() const;
};

// A model's output: `margin` is what the last step computes, then the estimator and the link.
struct Scores {
    Row margin;                       // what the estimator reads
    bool trees = false;               // tree ensemble (in `ensemble`) or a linear estimator
    spec::TreeEnsemble ensemble;
    spec::Step linear;                // op Linear when !trees
    spec::PostTransform transform = spec::PostTransform::Identity;
    int32_t groups = 0;               // margin columns of the estimator
    int32_t columns = 0;              // what the value holds per row (2 for a binary logistic)
};

// The class chosen per row: the argmax (argmin) of a value, mapped through `classes`.
struct Label {
    std::string of;                   // the argmax key of the value it was taken from
    std::string tensor;               // the name of that value (to build decision columns)
    bool argmin = false;
    std::vector<double> classes;      // empty: the index itself
    // Text labels (classlabels_strings), one per class; `classes` then holds their indices.
    std::vector<std::string> names;
};

struct Value {
    enum class Kind { Constant, Row, Scores, Label, LogSumExp, LogSoftmax, Opaque } kind = Kind::Constant;
    Constant constant;
    Row row;
    Scores scores;
    Label label;
    // Values with the same argmax key have the same argmax per row (a positive scaling, a
    // monotone link): a Label taken from one describes the other.
    std::string key;
    bool probabilities = false;       // rows sum to one (predict_proba can return it)
    std::string opaque_why;           // Opaque: why it cannot be an output
    // A Label, Scores, LogSumExp or LogSoftmax whose `row` also holds it as a tensor computed
    // from the inputs (the general path's form), for the nodes that read it as one.
    bool has_row = false;
    // A regressor's values, one per target (LinearRegressor's targets, TreeEnsembleRegressor's
    // n_targets): several are a multi-output regression, not class scores.
    bool regression = false;
};

// The state of one import.
struct Graph {
    std::map<std::string, Value> values;
    int32_t input_width = 0;          // columns of the pipeline's input vector
    std::vector<std::string> input_names;
    std::vector<std::vector<std::string>> vocabulary;  // per input; used for text inputs only
    std::vector<bool> text_input;
    std::vector<bool> unknown_is_error;
    std::map<std::string, int64_t> opsets;  // domain → version
    int next_key = 0;
    // The tensor forms made for inputs read as tensors (Node::row_input), by tensor name.
    std::map<std::string, Row> row_forms;
    // How each node was lowered (spec::Pipeline::import_paths); `path` is what the node being
    // imported says of itself ("" : its steps, or folded when every output is a constant).
    std::vector<std::string> node_paths;
    // An SVMClassifier's decision values feed other nodes (skl2onnx's one-vs-rest graph, whose
    // output it names "probabilities" though they are none).
    bool reads_decision_values = false;
    std::string path;
    // Values per row of every tensor computed so far (row_value): each holds index vectors and
    // steps of its width, so the whole graph is bounded too (kMaxGraphRowValues), not only each
    // tensor (product(), at most spec::kMaxStepWidth).
    int64_t row_values = 0;

    std::string fresh_key() { return "#" + std::to_string(next_key++); }
    // The vocabulary index of `s` for text input `input` (added when new).
    int32_t vocabulary_index(int32_t input, const std::string& s);
};

// One node being imported: its inputs' values, attribute access, errors that name it.
class Node {
public:
    Node(const onnx::NodeProto& proto, size_t index, Graph& graph);

    const std::string& op() const;
    std::string where() const;  // "node 3 (Gemm \"/0/Gemm\")"
    [[noreturn]] void bad(const std::string& what) const;          // InvalidModel
    [[noreturn]] void unsupported(const std::string& what) const;  // Unsupported

    size_t inputs() const;                  // declared inputs, "" (omitted) included
    bool has_input(size_t i) const;         // present and not ""
    const Value& input(size_t i) const;     // bad() when missing
    const Constant& constant_input(size_t i) const;  // bad() unless a constant
    // The input as a tensor computed from the inputs: a Row, or the tensor form of a model's
    // output, a label or a reduction (unsupported() where there is none).
    const Row& row_input(size_t i) const;
    // The general path took this node: `how` says into what ("tensor mul", ...).
    void general(const std::string& how) const;
    size_t outputs() const;
    bool output_used(size_t i) const;       // declared and not ""
    void set_output(size_t i, Value v);

    const onnx::AttributeProto* find(const char* name) const;
    bool has(const char* name) const { return find(name) != nullptr; }
    int64_t integer(const char* name, std::optional<int64_t> fallback = std::nullopt) const;
    double number(const char* name, std::optional<double> fallback = std::nullopt) const;
    std::string text(const char* name, std::optional<std::string> fallback = std::nullopt) const;
    std::vector<int64_t> integers(const char* name, bool required = true) const;
    std::vector<double> numbers(const char* name, bool required = true) const;
    std::vector<std::string> texts(const char* name, bool required = true) const;
    Constant tensor(const char* name) const;  // a TENSOR attribute

    Graph& graph;

private:
    const onnx::NodeProto& proto_;
    size_t index_;
};

// A classifier's classes: classlabels_strings (text labels: `names`, with `classes` 0..k-1) or
// the integer attribute `ints_attribute` (classlabels_ints / classlabels_int64s); one of them.
struct ClassLabels {
    std::vector<double> classes;
    std::vector<std::string> names;
};
ClassLabels read_class_labels(const Node& n, const char* ints_attribute);

// TensorProto → Constant (raw_data or typed fields); `what` names it in errors.
Constant read_tensor(const onnx::TensorProto&, const std::string& what);

// The handler of one op_type: reads the node's inputs and sets its outputs.
using Handler = std::function<void(Node&)>;
// The operator table (op_registry.cpp): op_type (domain "" or "ai.onnx.ml") → handler.
const Handler* find_handler(const std::string& domain, const std::string& op_type);

// --- Row building blocks (rows.cpp) ---------------------------------------------------------

spec::Step make_step(const std::string& op, nlohmann::json params);
// The graph input `i` as a Row: its columns of the pipeline's input vector.
Row input_row(const Graph&, int32_t first_column, int32_t width, int32_t text_input);
// x followed by `step`, now of shape `dims`; the columns stop being text.
Row then(Row x, spec::Step step, std::vector<int64_t> dims);
// x's columns `columns` (repeats allowed), now of shape `dims`.
Row gather(const Row& x, const std::vector<int32_t>& columns, std::vector<int64_t> dims);
// The columns of the rows side by side (a concat step over the pipeline input).
Row side_by_side(const Graph&, const std::vector<const Row*>& parts, std::vector<int64_t> dims);
// Per-row numpy broadcasting of x's dims to `dims` (bad() through `node` when impossible).
Row broadcast_to(const Node& node, const Row& x, const std::vector<int64_t>& dims);
// The broadcast shape of two per-row shapes (leading dims of the batch excluded).
std::vector<int64_t> broadcast_dims(const Node& node, std::vector<int64_t> a, std::vector<int64_t> b);
// A constant's values broadcast to the per-row shape `dims` (its leading dims beyond them must
// be 1: they stand for the batch).
std::vector<double> constant_for_row(const Node& node, const Constant& c, const std::vector<int64_t>& dims);
int64_t product(const std::vector<int64_t>& dims);
// The most columns a model's scores (its outputs) may have.
constexpr int64_t kMaxScoreColumns = 1 << 10;
// The most values per row all the tensors of a graph may hold together (Graph::row_values).
constexpr int64_t kMaxGraphRowValues = int64_t(1) << 24;

// A new Value.
Value constant_value(Constant c);
Value row_value(Graph&, Row r, bool probabilities = false, std::string key = "");
// Decision columns / model of a Row or Scores: a Scores whatever the value was.
// `what` names the tensor for errors (a node's where(), an output's name). Its width is bounded
// (kMaxScoreColumns): the scores pass through a width x width identity.
Scores as_scores(const Value&, const std::string& what);
// A classifier's label output over its `scores` (given a fresh key here): the label's classes
// are `labels`, and the scores are kept in the graph as "#<what> of <node>", where the label
// finds its decision columns.
Value classifier_label(Node&, Value& scores, const ClassLabels& labels, const std::string& what);

// Shared by the tensor and featurizer operators (tensor_ops.cpp).
Value concat_rows(Node&, const std::vector<const Row*>& parts, int64_t axis);
Value gather_row(Node&, const Row& x, const Constant& indices, int64_t axis);
Value label_classes(Node&, const Constant& classes, const Value& label);

// --- The general path (general_ops.cpp): tensor steps for what no specific step computes ---

// The index into a tensor of per-row shape `from` (right-aligned under `to`, broadcast) of each
// entry of `to`, in row-major order.
std::vector<int32_t> broadcast_index(const std::vector<int64_t>& from, const std::vector<int64_t>& to);
// A value as a tensor computed from the inputs (Value::has_row, a linear model's Scores).
Row value_row(const Node&, const Value&, const std::string& name);
// function(operands...) entry by entry, after broadcasting: each operand a constant or a value
// with a tensor form; a binary function takes two, "where" three.
Value general_entrywise(Node&, const std::string& function, const std::vector<const Value*>& operands);
// A reduction (or argmax / argmin) of x over the per-row axes marked in `reduced`.
Row general_reduce(Node&, const std::string& function, const Row& x, const std::vector<bool>& reduced, bool keepdims);
// softmax / log_softmax of x along per-row axis `axis`.
Row general_softmax(Node&, const std::string& function, const Row& x, size_t axis);
// An ai.onnx.ml post_transform over a model's raw scores [N, k] as ONNX Runtime's write_scores
// applies it: SOFTMAX, SOFTMAX_ZERO (each row), LOGISTIC, PROBIT (each entry), NONE.
Row general_post_transform(Node&, const Row& raw, const std::string& post);

// The operator families (one file each); each registers its handlers into the table.
void add_tree_ops(std::map<std::string, Handler>&);
void add_linear_ops(std::map<std::string, Handler>&);
void add_svm_ops(std::map<std::string, Handler>&);
void add_featurizer_ops(std::map<std::string, Handler>&);
void add_tensor_ops(std::map<std::string, Handler>&);
void add_general_ops(std::map<std::string, Handler>&);

}  // namespace pg_predict::importers::onnx_import
