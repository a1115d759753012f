// ONNX ModelProto → pipeline spec: parse with protobuf under limits, read the graph's inputs,
// walk its nodes in dependency order through the operator table, and make the pipeline from
// the outputs (converters' conventions: a label and a probabilities output for classifiers,
// one value output for regressors; or the output named by the option "output").
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <onnx/onnx-ml.pb.h>

#include "graph.hpp"
#include "pg_predict/common/error.hpp"
#include "pg_predict/common/interrupt.hpp"
#include "pg_predict/importers/import.hpp"
#include "pg_predict/spec/limits.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::importers {

namespace {

using nlohmann::json;
using namespace onnx_import;

// A ModelProto nests graphs only in control-flow attributes (If, Loop), which are refused;
// messages deeper than this are hostile.
constexpr int kMaxProtoNesting = 32;
// Nodes of a graph.
constexpr int kMaxNodes = 1 << 16;

[[noreturn]] void invalid(const std::string& what) { fail(ErrorCategory::InvalidModel, "ONNX: " + what); }
[[noreturn]] void unsupported_in_onnx(const std::string& what) {
    fail(ErrorCategory::Unsupported, "ONNX: " + what + " is not supported");
}

onnx::ModelProto parse(std::string_view bytes) {
    if (bytes.size() > static_cast<size_t>(INT32_MAX)) invalid("the model is larger than 2 GB");
    google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                              static_cast<int>(bytes.size()));
    in.SetTotalBytesLimit(static_cast<int>(bytes.size()));
    in.SetRecursionLimit(kMaxProtoNesting);
    onnx::ModelProto m;
    if (!m.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage())
        invalid("cannot parse the bytes as an ONNX ModelProto (truncated, not ONNX, or nested deeper than " +
                std::to_string(kMaxProtoNesting) + " levels)");
    if (m.ir_version() <= 0) invalid("the model has no ir_version");
    if (!m.has_graph()) invalid("the model has no graph");
    return m;
}

// The element type of a graph input or output, and its per-row shape (dims after the batch;
// -1 where unknown).
struct TensorType {
    int elem = 0;
    std::vector<int64_t> dims;
    bool known_rank = false;
};

TensorType tensor_type(const onnx::ValueInfoProto& v, const char* what) {
    if (!v.type().has_tensor_type())
        unsupported_in_onnx(std::string(what) + " \"" + v.name() + "\" that is not a tensor");
    const auto& t = v.type().tensor_type();
    TensorType out;
    out.elem = t.elem_type();
    if (t.has_shape()) {
        out.known_rank = true;
        for (int i = 1; i < t.shape().dim_size(); ++i) {
            const auto& d = t.shape().dim(i);
            out.dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
        }
    }
    return out;
}

// The graph's inputs → the pipeline's input vector: one float tensor [N, F] is the F features
// in order; otherwise each input [N, 1] is one column named after it (float or string).
void read_inputs(const onnx::GraphProto& g, Graph& graph, spec::Pipeline& p) {
    std::vector<const onnx::ValueInfoProto*> inputs;
    for (const auto& in : g.input())
        if (!graph.values.count(in.name())) inputs.push_back(&in);  // old IR lists initializers too
    if (inputs.empty()) invalid("the graph has no input");
    if (static_cast<int64_t>(inputs.size()) > spec::kMaxFeatures)
        invalid("the graph has more than " + std::to_string(spec::kMaxFeatures) + " inputs");
    std::set<std::string> seen;
    struct Column { const onnx::ValueInfoProto* v; int32_t width; bool text; };
    std::vector<Column> columns;
    for (const auto* in : inputs) {
        if (!seen.insert(in->name()).second) invalid("input \"" + in->name() + "\" is declared twice");
        const TensorType t = tensor_type(*in, "graph input");
        const bool text = t.elem == onnx::TensorProto::STRING;
        if (!text && t.elem != onnx::TensorProto::FLOAT && t.elem != onnx::TensorProto::DOUBLE &&
            t.elem != onnx::TensorProto::INT64 && t.elem != onnx::TensorProto::INT32)
            unsupported_in_onnx("graph input \"" + in->name() + "\" of element type " + std::to_string(t.elem) +
                        " (supported: float, double, int32, int64, string)");
        if (!t.known_rank || t.dims.size() != 1 || t.dims[0] <= 0)
            unsupported_in_onnx("graph input \"" + in->name() +
                        "\" that is not a matrix [N, F] with a known number of columns F");
        if (t.dims[0] > spec::kMaxFeatures)
            invalid("graph input \"" + in->name() + "\" has more than " + std::to_string(spec::kMaxFeatures) + " columns");
        if (inputs.size() > 1 && t.dims[0] != 1)
            unsupported_in_onnx("graph input \"" + in->name() + "\" of " + std::to_string(t.dims[0]) +
                        " columns beside other inputs (several inputs must be one column [N, 1] each)");
        if (text && t.dims[0] != 1)
            unsupported_in_onnx("string input \"" + in->name() + "\" of more than one column");
        columns.push_back({in, static_cast<int32_t>(t.dims[0]), text});
    }
    graph.input_width = 0;
    for (const auto& c : columns) graph.input_width += c.width;
    int32_t first = 0;
    for (size_t i = 0; i < columns.size(); ++i) {
        const auto& c = columns[i];
        graph.input_names.push_back(c.v->name());
        graph.vocabulary.emplace_back();
        graph.text_input.push_back(c.text);
        graph.unknown_is_error.push_back(false);
        graph.values.emplace(c.v->name(), row_value(graph, input_row(graph, first, c.width, c.text ? static_cast<int32_t>(i) : -1)));
        first += c.width;
    }
    if (columns.size() == 1) {
        p.features.assign(static_cast<size_t>(columns[0].width), "");
        if (columns[0].width == 1) p.features[0] = columns[0].v->name();
    } else {
        p.features = graph.input_names;
    }
}

// The nodes in an order where each one's inputs are defined before it (ONNX asks for a sorted
// graph; converters write one, but sorting here gives a clean error for a cycle).
std::vector<int> dependency_order(const onnx::GraphProto& g, const Graph& graph) {
    const int n = g.node_size();
    std::map<std::string, int> producer;
    for (int i = 0; i < n; ++i)
        for (const auto& out : g.node(i).output()) {
            if (out.empty()) continue;
            if (graph.values.count(out) || !producer.emplace(out, i).second)
                invalid("tensor \"" + out + "\" is defined twice (node " + std::to_string(i) + ")");
        }
    std::vector<int> waiting(static_cast<size_t>(n), 0);
    std::vector<std::vector<int>> users(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i)
        for (const auto& in : g.node(i).input()) {
            if (in.empty() || graph.values.count(in)) continue;
            auto it = producer.find(in);
            if (it == producer.end())
                invalid("node " + std::to_string(i) + " (" + g.node(i).op_type() + ") reads \"" + in +
                        "\", which no node, input or initializer defines");
            ++waiting[static_cast<size_t>(i)];
            users[static_cast<size_t>(it->second)].push_back(i);
        }
    std::vector<int> order, ready;
    for (int i = n - 1; i >= 0; --i)
        if (waiting[static_cast<size_t>(i)] == 0) ready.push_back(i);
    while (!ready.empty()) {
        // Lowest index first: the file's own order when it is sorted.
        auto lowest = std::min_element(ready.begin(), ready.end());
        const int i = *lowest;
        ready.erase(lowest);
        order.push_back(i);
        for (int u : users[static_cast<size_t>(i)])
            if (--waiting[static_cast<size_t>(u)] == 0) ready.push_back(u);
    }
    if (static_cast<int>(order.size()) != n) {
        for (int i = 0; i < n; ++i)
            if (waiting[static_cast<size_t>(i)] > 0)
                invalid("the graph has a cycle through node " + std::to_string(i) + " (" + g.node(i).op_type() + ")");
    }
    return order;
}

bool known_domain(const std::string& d) { return d.empty() || d == "ai.onnx" || d == "ai.onnx.ml"; }

void run_nodes(const onnx::GraphProto& g, Graph& graph) {
    if (g.node_size() > kMaxNodes) invalid("the graph has more than " + std::to_string(kMaxNodes) + " nodes");
    for (int i : dependency_order(g, graph)) {
        check_interrupts();
        const auto& proto = g.node(i);
        Node node(proto, static_cast<size_t>(i), graph);
        if (!known_domain(proto.domain()))
            node.unsupported("operator domain \"" + proto.domain() + "\"");
        const std::string domain = proto.domain() == "ai.onnx" ? "" : proto.domain();
        if (!graph.opsets.count(domain))
            node.bad("its domain \"" + proto.domain() + "\" is not in the model's opset_import");
        const Handler* h = find_handler(domain, proto.op_type());
        if (h == nullptr)
            node.unsupported("operator " + proto.op_type() + (domain.empty() ? "" : " (domain " + domain + ")"));
        graph.path.clear();
        (*h)(node);
        bool constant = true;
        for (const auto& out : proto.output())
            if (!out.empty() && graph.values.count(out) && graph.values.at(out).kind != Value::Kind::Constant) constant = false;
        graph.node_paths.push_back(node.where() + ": " +
                                   (!graph.path.empty() ? "general: " + graph.path : constant ? "folded" : "steps"));
        for (int o = 0; o < proto.output_size(); ++o)
            if (!proto.output(o).empty() && !graph.values.count(proto.output(o)))
                node.unsupported("output " + std::to_string(o) + " (\"" + proto.output(o) + "\")");
    }
}

// --- the pipeline from the outputs ----------------------------------------------------------

void set_model(const Scores& s, spec::Pipeline& p) {
    p.steps = s.margin.steps;
    if (s.trees) {
        p.model = s.ensemble;
        p.model.num_features = static_cast<int32_t>(s.margin.width());
    } else {
        p.estimator = s.linear;
        p.model = spec::TreeEnsemble{};
        p.model.num_features = static_cast<int32_t>(s.margin.width());
        p.model.num_groups = s.groups;
        p.model.base_margin.assign(static_cast<size_t>(s.groups), 0.0f);
    }
    p.transform = s.transform;
}

// The decision columns of a label: its margin (negated for an argmin), no probabilities.
void decision_columns(const Label& l, const Graph& graph, spec::Pipeline& p) {
    Scores s = as_scores(graph.values.at(l.tensor), "tensor \"" + l.tensor + "\"");
    if (l.argmin) {
        if (s.trees || s.transform != spec::PostTransform::Identity)
            unsupported_in_onnx("an ArgMin over the output of a model");
        json& coef = s.linear.params["coef"];
        json& icpt = s.linear.params["intercept"];
        for (auto& row : coef)
            for (auto& v : row) v = spec::number_to_json(-spec::param_number(v, "coef"));
        for (auto& v : icpt) v = spec::number_to_json(-spec::param_number(v, "intercept"));
    }
    if (s.transform == spec::PostTransform::Softmax) s.transform = spec::PostTransform::Identity;  // same argmax
    set_model(s, p);
    p.has_probabilities = false;
}

std::vector<double> class_list(const Label& l, int32_t columns) {
    if (!l.classes.empty()) return l.classes;
    std::vector<double> c;
    for (int32_t i = 0; i < columns; ++i) c.push_back(i);
    return c;
}

const Value* find_output(const onnx::GraphProto& g, const Graph& graph, const std::string& name) {
    for (const auto& o : g.output())
        if (o.name() == name) return &graph.values.at(name);
    return nullptr;
}

int32_t columns_of(const Value& v) {
    return v.kind == Value::Kind::Scores ? v.scores.columns : static_cast<int32_t>(v.row.width());
}

void make_pipeline(const onnx::GraphProto& g, const Graph& graph, const json& options, spec::Pipeline& p) {
    if (g.output_size() == 0) invalid("the graph has no output");
    for (const auto& o : g.output())
        if (!graph.values.count(o.name())) invalid("output \"" + o.name() + "\" is computed by no node");
    const Label* label = nullptr;
    std::string label_name;
    const Value* out = nullptr;
    std::string out_name;
    for (const auto& o : g.output()) {
        const Value& v = graph.values.at(o.name());
        if (v.kind == Value::Kind::Label && label == nullptr) {
            label = &v.label;
            label_name = o.name();
        }
    }
    auto usable = [](const Value& v) {
        return v.kind == Value::Kind::Row || v.kind == Value::Kind::Scores || (v.kind == Value::Kind::LogSumExp && v.has_row);
    };
    auto opt = options.is_object() ? options.find("output") : options.end();
    if (options.is_object() && opt != options.end()) {
        if (!opt->is_string()) fail(ErrorCategory::InvalidParameter, "option \"output\" must be a string");
        out_name = opt->get<std::string>();
        out = find_output(g, graph, out_name);
        if (out == nullptr) {
            std::string names;
            for (const auto& o : g.output()) names += (names.empty() ? "" : ", ") + o.name();
            fail(ErrorCategory::InvalidParameter,
                 "option \"output\": the graph has no output \"" + out_name + "\" (its outputs: " + names + ")");
        }
        if (out->kind == Value::Kind::Label) {
            label = &out->label;
            label_name = out_name;
            out = nullptr;
        } else if (label != nullptr && label->of != out->key) {
            label = nullptr;  // a value of its own: scored as it is
        }
    } else {
        // The converters' names first, then any output the label describes, then a lone one.
        for (const char* name : {"probabilities", "output_probability", "variable", "output", "scores"})
            if (const Value* v = find_output(g, graph, name); v != nullptr && usable(*v) && (label == nullptr || v->key == label->of)) {
                out = v;
                out_name = name;
                break;
            }
        for (const auto& o : g.output()) {
            const Value& v = graph.values.at(o.name());
            if (out == nullptr && usable(v) && (label == nullptr ? g.output_size() == 1 : v.key == label->of)) {
                out = &v;
                out_name = o.name();
            }
        }
    }
    Value trusted;
    if ((out == nullptr || (!out->probabilities && out->kind == Value::Kind::Row)) && label != nullptr &&
        !options.contains("output") && !graph.reads_decision_values) {
        // A classifier's probabilities computed on the general path (skl2onnx's SGDClassifier:
        // a Div by their sum; a soft VotingClassifier: a Sum of its members' weighted
        // probabilities), which the specific path cannot recognise as probabilities: the
        // converters' name for them is trusted when they have a column per class.
        for (const char* name : {"probabilities", "output_probability"}) {
            const Value* v = find_output(g, graph, name);
            if (v != nullptr && (out == nullptr || v == out) && v->kind == Value::Kind::Row && !v->row.steps.empty() &&
                v->row.steps.back().op == spec::Op::Tensor &&
                (label->classes.empty() || static_cast<int64_t>(label->classes.size()) == v->row.width())) {
                trusted = *v;
                trusted.probabilities = true;
                out = &trusted;
                out_name = name;
                break;
            }
        }
    }
    if (out == &trusted && label != nullptr && !label->argmin && label->of != trusted.key) {
        // The label is the graph's own ArgMax over another tensor (skl2onnx's SGDClassifier: the
        // scores, from which the probabilities are computed, and two probabilities can tie after
        // rounding where the scores do not): predict follows the label, predict_proba the
        // probabilities, side by side (spec::Pipeline::decision_columns).
        const Value& scores = graph.values.at(label->tensor);
        if ((scores.kind == Value::Kind::Row || scores.has_row) && scores.row.width() == trusted.row.width()) {
            const int64_t k = trusted.row.width();
            Value both;
            both.kind = Value::Kind::Row;
            both.row = side_by_side(graph, {&trusted.row, &scores.row}, {2 * k});
            set_model(as_scores(both, "output \"" + out_name + "\" and the label's scores"), p);
            p.task = spec::Task::Classification;
            p.classes = class_list(*label, static_cast<int32_t>(k));
            p.class_labels = label->names;
            p.has_probabilities = true;
            p.decision_columns = true;
            p.objective = "output " + out_name + ", label " + label_name;
            return;
        }
    }
    if (out != nullptr && out->kind == Value::Kind::Opaque) out = nullptr;
    if (label != nullptr && (out == nullptr || !out->probabilities)) {
        // A classifier without probabilities (SVC, LinearSVC, KMeans): its decision columns.
        p.task = spec::Task::Classification;
        decision_columns(*label, graph, p);
        p.classes = class_list(*label, spec::transformed_width(p));
        p.class_labels = label->names;
        p.objective = "label " + label_name;
        return;
    }
    if (out == nullptr) {
        std::string kinds;
        for (const auto& o : g.output()) {
            const Value& v = graph.values.at(o.name());
            if (v.kind == Value::Kind::Opaque) kinds += " (\"" + o.name() + "\": " + v.opaque_why + ")";
        }
        unsupported_in_onnx("a graph whose outputs are none of a label, probabilities or one value per row; name the "
                    "output to score with the option \"output\"" + kinds);
    }
    set_model(as_scores(*out, "output \"" + out_name + "\""), p);
    p.objective = "output " + out_name;
    const int32_t width = columns_of(*out);
    if (label != nullptr) {
        p.task = spec::Task::Classification;
        p.classes = class_list(*label, width);
        p.class_labels = label->names;
        p.has_probabilities = out->probabilities;
    } else if (width == 1) {
        p.task = spec::Task::Regression;
    } else if (out->regression) {
        // A regressor of several targets: predict_outputs() gives its values.
        p.task = spec::Task::Regression;
        p.outputs = width;
    } else {
        // A lone [N, k] output: what predict_proba returns.
        p.task = spec::Task::Classification;
        p.classes = class_list(Label{}, width);
    }
    if (p.task == spec::Task::Classification && static_cast<int32_t>(p.classes.size()) != spec::transformed_width(p))
        invalid("the label has " + std::to_string(p.classes.size()) + " classes but output \"" + out_name + "\" has " +
                std::to_string(spec::transformed_width(p)) + " columns");
    if (p.task == spec::Task::Regression && spec::transformed_width(p) != p.outputs)
        unsupported_in_onnx("a regression output of " + std::to_string(spec::transformed_width(p)) + " columns");
}

}  // namespace

spec::Pipeline import_onnx(std::string_view bytes, const json& options) {
    const onnx::ModelProto model = parse(bytes);
    Graph graph;
    for (const auto& o : model.opset_import()) {
        const std::string d = o.domain() == "ai.onnx" ? "" : o.domain();
        graph.opsets[d] = o.version();
    }
    if (model.opset_import_size() == 0) graph.opsets[""] = 1;  // IR version 2 and older
    const onnx::GraphProto& g = model.graph();
    for (int i = 0; i < g.initializer_size(); ++i) {
        const auto& t = g.initializer(i);
        if (!graph.values.emplace(t.name(), constant_value(read_tensor(t, "initializer \"" + t.name() + "\""))).second)
            invalid("initializer \"" + t.name() + "\" is defined twice");
    }
    if (g.sparse_initializer_size() > 0) unsupported_in_onnx("a sparse initializer");
    spec::Pipeline p;
    p.source_format = "onnx";
    read_inputs(g, graph, p);
    run_nodes(g, graph);
    make_pipeline(g, graph, options, p);
    p.import_paths = graph.node_paths;
    for (size_t i = 0; i < graph.input_names.size(); ++i) {
        if (!graph.text_input[i]) continue;
        spec::TextInput t;
        t.input = static_cast<int32_t>(i);
        t.vocabulary = graph.vocabulary[i];
        t.unknown_is_error = graph.unknown_is_error[i];
        p.text_inputs.push_back(std::move(t));
    }
    spec::validate(p);
    return p;
}

}  // namespace pg_predict::importers
