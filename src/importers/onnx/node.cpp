// One ONNX node's inputs, outputs and typed attributes, every complaint naming the node.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <onnx/onnx-ml.pb.h>

#include "graph.hpp"
#include "pg_predict/spec/limits.hpp"

namespace pg_predict::importers::onnx_import {

namespace {

const char* attribute_type_name(int t) {
    switch (t) {
        case onnx::AttributeProto::FLOAT: return "FLOAT";
        case onnx::AttributeProto::INT: return "INT";
        case onnx::AttributeProto::STRING: return "STRING";
        case onnx::AttributeProto::TENSOR: return "TENSOR";
        case onnx::AttributeProto::FLOATS: return "FLOATS";
        case onnx::AttributeProto::INTS: return "INTS";
        case onnx::AttributeProto::STRINGS: return "STRINGS";
        default: return "another type";
    }
}

template <typename T>
void append_raw(const std::string& raw, std::vector<double>& out, int64_t count) {
    const char* p = raw.data();
    for (int64_t i = 0; i < count; ++i) {
        T v;
        std::memcpy(&v, p + i * sizeof(T), sizeof(T));  // raw_data is little-endian, unaligned
        out.push_back(static_cast<double>(v));
    }
}

}  // namespace

int64_t Constant::size() const { return is_string ? static_cast<int64_t>(strings.size()) : static_cast<int64_t>(values.size()); }

Constant read_tensor(const onnx::TensorProto& t, const std::string& what) {
    Constant c;
    int64_t count = 1;
    for (int64_t d : t.dims()) {
        if (d < 0 || d > spec::kMaxStepWidth)
            fail(ErrorCategory::InvalidModel, "ONNX: " + what + " has dimension " + std::to_string(d) +
                                                  " (allowed: 0 to " + std::to_string(spec::kMaxStepWidth) + ")");
        count *= d;
        if (count > spec::kMaxTotalNodes)
            fail(ErrorCategory::InvalidModel, "ONNX: " + what + " has more than " +
                                                  std::to_string(spec::kMaxTotalNodes) + " entries");
        c.shape.push_back(d);
    }
    if (t.data_location() == onnx::TensorProto::EXTERNAL)
        fail(ErrorCategory::Unsupported, "ONNX: " + what + " keeps its data in an external file");
    const bool raw = t.has_raw_data();
    auto need = [&](int64_t have, size_t bytes) {
        if (raw ? static_cast<int64_t>(t.raw_data().size()) != count * static_cast<int64_t>(bytes) : have != count)
            fail(ErrorCategory::InvalidModel,
                 "ONNX: " + what + " holds " + std::to_string(raw ? static_cast<int64_t>(t.raw_data().size() / bytes) : have) +
                     " values for its shape of " + std::to_string(count));
    };
    // A numeric type: count `Raw` values in raw_data, or the typed field's, each as `value` gives it.
    auto read_numbers = [&](auto raw_type, const auto& field, auto value) {
        using Raw = decltype(raw_type);
        need(field.size(), sizeof(Raw));
        if (raw) append_raw<Raw>(t.raw_data(), c.values, count);
        else for (auto v : field) c.values.push_back(value(v));
    };
    auto as_is = [](auto v) { return static_cast<double>(v); };
    switch (t.data_type()) {
        case onnx::TensorProto::FLOAT: read_numbers(float{}, t.float_data(), as_is); break;
        case onnx::TensorProto::DOUBLE: read_numbers(double{}, t.double_data(), as_is); break;
        case onnx::TensorProto::INT64:
            c.is_integer = true;
            read_numbers(int64_t{}, t.int64_data(), as_is);
            break;
        case onnx::TensorProto::INT32:
            c.is_integer = true;
            read_numbers(int32_t{}, t.int32_data(), as_is);
            break;
        case onnx::TensorProto::BOOL:  // the typed field holds int32s, raw_data a byte each
            c.is_integer = true;
            read_numbers(uint8_t{}, t.int32_data(), [](int32_t v) { return v != 0 ? 1.0 : 0.0; });
            break;
        case onnx::TensorProto::STRING:
            c.is_string = true;
            if (t.string_data_size() != count)
                fail(ErrorCategory::InvalidModel, "ONNX: " + what + " holds " + std::to_string(t.string_data_size()) +
                                                      " strings for its shape of " + std::to_string(count));
            for (const std::string& s : t.string_data()) c.strings.push_back(s);
            break;
        default:
            fail(ErrorCategory::Unsupported, "ONNX: " + what + " has element type " + std::to_string(t.data_type()) +
                                                 " (supported: float, double, int32, int64, bool, string)");
    }
    return c;
}

int32_t Graph::vocabulary_index(int32_t input, const std::string& s) {
    auto& v = vocabulary[static_cast<size_t>(input)];
    for (size_t i = 0; i < v.size(); ++i)
        if (v[i] == s) return static_cast<int32_t>(i);
    v.push_back(s);
    return static_cast<int32_t>(v.size() - 1);
}

Node::Node(const onnx::NodeProto& proto, size_t index, Graph& g) : graph(g), proto_(proto), index_(index) {}

const std::string& Node::op() const { return proto_.op_type(); }

std::string Node::where() const {
    std::string s = "node " + std::to_string(index_) + " (" + proto_.op_type();
    if (!proto_.name().empty()) s += " \"" + proto_.name() + "\"";
    return s + ")";
}

void Node::bad(const std::string& what) const { fail(ErrorCategory::InvalidModel, "ONNX: " + where() + ": " + what); }
void Node::unsupported(const std::string& what) const {
    fail(ErrorCategory::Unsupported, "ONNX: " + where() + ": " + what + " is not supported");
}

size_t Node::inputs() const { return static_cast<size_t>(proto_.input_size()); }
bool Node::has_input(size_t i) const { return i < inputs() && !proto_.input(static_cast<int>(i)).empty(); }

const Value& Node::input(size_t i) const {
    if (!has_input(i)) bad("input " + std::to_string(i) + " is missing");
    const std::string& name = proto_.input(static_cast<int>(i));
    auto it = graph.values.find(name);
    if (it == graph.values.end()) bad("input \"" + name + "\" is not defined before it");
    return it->second;
}

const Constant& Node::constant_input(size_t i) const {
    const Value& v = input(i);
    if (v.kind != Value::Kind::Constant)
        unsupported("a computed input " + std::to_string(i) + " (\"" + proto_.input(static_cast<int>(i)) +
                    "\"; only a constant can be there)");
    return v.constant;
}

const Row& Node::row_input(size_t i) const {
    const Value& v = input(i);
    if (v.kind == Value::Kind::Row) return v.row;
    const std::string& name = proto_.input(static_cast<int>(i));
    if (v.kind == Value::Kind::Constant) unsupported("a constant input " + std::to_string(i) + " (\"" + name + "\")");
    auto it = graph.row_forms.find(name);
    if (it == graph.row_forms.end()) it = graph.row_forms.emplace(name, value_row(*this, v, name)).first;
    return it->second;
}

void Node::general(const std::string& how) const {
    if (graph.path.find(how) != std::string::npos) return;
    graph.path += (graph.path.empty() ? "" : ", ") + how;
}

size_t Node::outputs() const { return static_cast<size_t>(proto_.output_size()); }
bool Node::output_used(size_t i) const { return i < outputs() && !proto_.output(static_cast<int>(i)).empty(); }

void Node::set_output(size_t i, Value v) {
    if (!output_used(i)) return;
    const std::string& name = proto_.output(static_cast<int>(i));
    if (graph.values.count(name)) bad("output \"" + name + "\" is defined twice");
    if (v.key.empty()) v.key = name;
    graph.values.emplace(name, std::move(v));
}

const onnx::AttributeProto* Node::find(const char* name) const {
    for (const auto& a : proto_.attribute())
        if (a.name() == name) return &a;
    return nullptr;
}

namespace {

// Attribute `a` (named `name`) checked to be of `type`; nullptr when the node has none, which
// is bad() when it is `required`.
const onnx::AttributeProto* typed(const Node& n, const onnx::AttributeProto* a, const char* name, int type,
                                  bool required) {
    if (a == nullptr) {
        if (required) n.bad(std::string("attribute ") + name + " is missing");
        return nullptr;
    }
    if (a->type() != type)
        n.bad(std::string("attribute ") + name + " must be " + attribute_type_name(type) + ", not " +
              attribute_type_name(a->type()));
    return a;
}

}  // namespace

int64_t Node::integer(const char* name, std::optional<int64_t> fallback) const {
    const auto* a = typed(*this, find(name), name, onnx::AttributeProto::INT, !fallback);
    return a != nullptr ? a->i() : *fallback;
}

double Node::number(const char* name, std::optional<double> fallback) const {
    const auto* a = typed(*this, find(name), name, onnx::AttributeProto::FLOAT, !fallback);
    return a != nullptr ? a->f() : *fallback;
}

std::string Node::text(const char* name, std::optional<std::string> fallback) const {
    const auto* a = typed(*this, find(name), name, onnx::AttributeProto::STRING, !fallback);
    return a != nullptr ? a->s() : *fallback;
}

std::vector<int64_t> Node::integers(const char* name, bool required) const {
    const auto* a = typed(*this, find(name), name, onnx::AttributeProto::INTS, required);
    if (a == nullptr) return {};
    return {a->ints().begin(), a->ints().end()};
}

std::vector<double> Node::numbers(const char* name, bool required) const {
    const auto* a = typed(*this, find(name), name, onnx::AttributeProto::FLOATS, required);
    if (a == nullptr) return {};
    return {a->floats().begin(), a->floats().end()};
}

std::vector<std::string> Node::texts(const char* name, bool required) const {
    const auto* a = typed(*this, find(name), name, onnx::AttributeProto::STRINGS, required);
    if (a == nullptr) return {};
    return {a->strings().begin(), a->strings().end()};
}

Constant Node::tensor(const char* name) const {
    const auto* a = typed(*this, find(name), name, onnx::AttributeProto::TENSOR, true);
    return read_tensor(a->t(), where() + " attribute " + name);
}

ClassLabels read_class_labels(const Node& n, const char* ints_attribute) {
    ClassLabels out;
    out.names = n.texts("classlabels_strings", false);
    const std::vector<int64_t> ints = n.integers(ints_attribute, false);
    if (!out.names.empty() && !ints.empty())
        n.bad(std::string("has both classlabels_strings and ") + ints_attribute);
    if (out.names.empty()) {
        for (int64_t c : ints) out.classes.push_back(static_cast<double>(c));
    } else {
        for (size_t i = 0; i < out.names.size(); ++i) out.classes.push_back(static_cast<double>(i));
    }
    if (out.classes.empty()) n.bad(std::string("has no classes (classlabels_strings or ") + ints_attribute + ")");
    return out;
}

}  // namespace pg_predict::importers::onnx_import
