// Building Rows (graph.hpp): steps appended, columns gathered or set side by side, numpy
// broadcasting of the per-row shape.
#include <string>
#include <vector>

#include "graph.hpp"
#include "pg_predict/spec/limits.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::importers::onnx_import {

using nlohmann::json;

int64_t product(const std::vector<int64_t>& dims) {
    int64_t n = 1;
    for (int64_t d : dims) {
        if (d > spec::kMaxStepWidth)
            fail(ErrorCategory::InvalidModel,
                 "ONNX: a tensor has a dimension of " + std::to_string(d) + " (at most " + std::to_string(spec::kMaxStepWidth) + ")");
        n *= d;
        if (n > spec::kMaxStepWidth)
            fail(ErrorCategory::InvalidModel,
                 "ONNX: a tensor has more than " + std::to_string(spec::kMaxStepWidth) + " values per row");
    }
    return n;
}

int64_t Row::width() const { return static_cast<int64_t>(text.size()); }

spec::Step make_step(const std::string& op, json params) {
    spec::Step s;
    const auto parsed = spec::op_from_name(op);
    if (!parsed) fail(ErrorCategory::Internal, "ONNX import: no spec op \"" + op + "\"");
    s.op = *parsed;
    s.params = std::move(params);
    return s;
}

Row input_row(const Graph& g, int32_t first_column, int32_t width, int32_t text_input) {
    Row r;
    r.dims = {width};
    r.text.assign(static_cast<size_t>(width), text_input);
    if (first_column == 0 && width == g.input_width) return r;  // the whole input vector
    spec::Step select = make_step("concat", json::object());
    spec::Step::Part part;
    for (int32_t c = 0; c < width; ++c) part.columns.push_back(first_column + c);
    select.parts.push_back(std::move(part));
    r.steps.push_back(std::move(select));
    return r;
}

Row then(Row x, spec::Step step, std::vector<int64_t> dims) {
    x.steps.push_back(std::move(step));
    x.text.assign(static_cast<size_t>(product(dims)), -1);
    x.dims = std::move(dims);
    return x;
}

Row gather(const Row& x, const std::vector<int32_t>& columns, std::vector<int64_t> dims) {
    Row r = x;
    bool identity = static_cast<int64_t>(columns.size()) == x.width();
    for (size_t i = 0; identity && i < columns.size(); ++i) identity = columns[i] == static_cast<int32_t>(i);
    r.dims = std::move(dims);
    if (identity) return r;
    spec::Step select = make_step("concat", json::object());
    spec::Step::Part part;
    part.columns = columns;
    select.parts.push_back(std::move(part));
    r.steps.push_back(std::move(select));
    r.text.clear();
    for (int32_t c : columns) r.text.push_back(x.text[static_cast<size_t>(c)]);
    return r;
}

namespace {

bool same_step(const spec::Step& a, const spec::Step& b) {
    if (a.op != b.op || a.params != b.params || a.parts.size() != b.parts.size()) return false;
    for (size_t i = 0; i < a.parts.size(); ++i) {
        const auto& p = a.parts[i];
        const auto& q = b.parts[i];
        if (p.columns != q.columns || p.steps.size() != q.steps.size()) return false;
        for (size_t j = 0; j < p.steps.size(); ++j)
            if (!same_step(p.steps[j], q.steps[j])) return false;
    }
    return true;
}

// The width of the input vector after `steps` (0 when the steps cannot say: not shared then).
int32_t width_after(const Graph& g, const std::vector<spec::Step>& steps) {
    std::vector<int32_t> vocab(static_cast<size_t>(g.input_width), -1);
    if (g.text_input.size() == vocab.size())  // one column per input: text ones carry a vocabulary
        for (size_t c = 0; c < vocab.size(); ++c)
            if (g.text_input[c]) vocab[c] = static_cast<int32_t>(g.vocabulary[c].size());
    try {
        return spec::check_steps(steps, vocab, "shared steps");
    } catch (const Error&) {
        return 0;
    }
}

// A side_by_side whose parts all start with the same steps: those run once, then the concat of
// each part's remaining steps over their output (two tensors computed from one MatMul: the
// MatMul once per batch, not once per tensor). Empty when the parts share no step.
Row shared_prefix(const Graph& g, const std::vector<const Row*>& parts, const std::vector<int64_t>& dims) {
    if (parts.size() < 2) return Row{};
    size_t shared = parts[0]->steps.size();
    for (const Row* p : parts) {
        size_t k = 0;
        while (k < shared && k < p->steps.size() && same_step(p->steps[k], parts[0]->steps[k])) ++k;
        shared = k;
    }
    if (shared == 0) return Row{};
    std::vector<spec::Step> prefix(parts[0]->steps.begin(), parts[0]->steps.begin() + static_cast<long>(shared));
    const int32_t width = width_after(g, prefix);
    if (width <= 0) return Row{};
    Row r;
    r.steps = std::move(prefix);
    spec::Step concat = make_step("concat", json::object());
    for (const Row* p : parts) {
        spec::Step::Part part;
        for (int32_t c = 0; c < width; ++c) part.columns.push_back(c);
        part.steps.assign(p->steps.begin() + static_cast<long>(shared), p->steps.end());
        concat.parts.push_back(std::move(part));
        r.text.insert(r.text.end(), p->text.begin(), p->text.end());
    }
    r.steps.push_back(std::move(concat));
    r.dims = dims;
    return r;
}

}  // namespace

Row side_by_side(const Graph& g, const std::vector<const Row*>& parts, std::vector<int64_t> dims) {
    if (Row shared = shared_prefix(g, parts, dims); !shared.steps.empty()) {
        if (product(shared.dims) != shared.width()) fail(ErrorCategory::Internal, "ONNX import: side_by_side shape");
        return shared;
    }
    spec::Step concat = make_step("concat", json::object());
    Row r;
    for (const Row* p : parts) {
        spec::Step::Part part;
        // A Row that only selects input columns (and maybe transforms them) is one part as it is.
        if (!p->steps.empty() && p->steps[0].op == spec::Op::Concat && p->steps[0].parts.size() == 1 &&
            p->steps[0].parts[0].steps.empty()) {
            part.columns = p->steps[0].parts[0].columns;
            part.steps.assign(p->steps.begin() + 1, p->steps.end());
        } else {
            for (int32_t c = 0; c < g.input_width; ++c) part.columns.push_back(c);
            part.steps = p->steps;
        }
        concat.parts.push_back(std::move(part));
        r.text.insert(r.text.end(), p->text.begin(), p->text.end());
    }
    r.steps.push_back(std::move(concat));
    r.dims = std::move(dims);
    if (product(r.dims) != r.width()) fail(ErrorCategory::Internal, "ONNX import: side_by_side shape");
    return r;
}

std::vector<int64_t> broadcast_dims(const Node& node, std::vector<int64_t> a, std::vector<int64_t> b) {
    if (a.size() < b.size()) std::swap(a, b);
    std::vector<int64_t> out = a;
    const size_t shift = a.size() - b.size();
    for (size_t i = 0; i < b.size(); ++i) {
        const int64_t x = a[shift + i], y = b[i];
        if (x != y && x != 1 && y != 1)
            node.bad("shapes do not broadcast (dimension " + std::to_string(x) + " against " + std::to_string(y) + ")");
        out[shift + i] = x == 1 ? y : x;
    }
    return out;
}

std::vector<int32_t> broadcast_index(const std::vector<int64_t>& from, const std::vector<int64_t>& to) {
    const int64_t n = product(to);
    std::vector<int32_t> out(static_cast<size_t>(n));
    const size_t shift = to.size() - from.size();
    std::vector<int64_t> idx(to.size(), 0);
    for (int64_t k = 0; k < n; ++k) {
        int64_t src = 0;
        for (size_t d = shift; d < to.size(); ++d) {
            const int64_t dim = from[d - shift];
            src = src * dim + (dim == 1 ? 0 : idx[d]);
        }
        out[static_cast<size_t>(k)] = static_cast<int32_t>(src);
        for (size_t d = to.size(); d-- > 0;) {
            if (++idx[d] < to[d]) break;
            idx[d] = 0;
        }
    }
    return out;
}

Row broadcast_to(const Node& node, const Row& x, const std::vector<int64_t>& dims) {
    if (x.dims == dims) return x;
    if (x.dims.size() > dims.size()) node.bad("cannot broadcast a tensor to fewer dimensions");
    broadcast_dims(node, x.dims, dims);  // checks
    return gather(x, broadcast_index(x.dims, dims), dims);
}

std::vector<double> constant_for_row(const Node& node, const Constant& c, const std::vector<int64_t>& dims) {
    if (c.is_string) node.unsupported("a string constant in arithmetic");
    std::vector<int64_t> shape = c.shape;
    if (shape.size() == dims.size() + 1) {
        if (shape[0] != 1) node.bad("a constant's first dimension " + std::to_string(shape[0]) + " meets the batch");
        shape.erase(shape.begin());
    }
    if (shape.size() > dims.size()) node.bad("a constant has more dimensions than the computed tensor");
    for (size_t i = 0; i < shape.size(); ++i) {
        const int64_t have = shape[i], want = dims[dims.size() - shape.size() + i];
        if (have != want && have != 1)
            node.bad("a constant of dimension " + std::to_string(have) + " does not broadcast to " + std::to_string(want));
    }
    std::vector<double> out;
    for (int32_t i : broadcast_index(shape, dims)) out.push_back(c.values[static_cast<size_t>(i)]);
    return out;
}

Value constant_value(Constant c) {
    Value v;
    v.kind = Value::Kind::Constant;
    v.constant = std::move(c);
    return v;
}

Value row_value(Graph& g, Row r, bool probabilities, std::string key) {
    g.row_values += r.width();
    if (g.row_values > kMaxGraphRowValues)
        fail(ErrorCategory::Unsupported, "ONNX: the graph computes more than " + std::to_string(kMaxGraphRowValues) +
                                             " values per row in all (at node " + std::to_string(g.node_paths.size()) +
                                             ")");
    Value v;
    v.kind = Value::Kind::Row;
    v.row = std::move(r);
    v.probabilities = probabilities;
    v.key = std::move(key);
    return v;
}

Value classifier_label(Node& n, Value& scores, const ClassLabels& labels, const std::string& what) {
    scores.key = n.graph.fresh_key();
    Value label;
    label.kind = Value::Kind::Label;
    label.label.of = scores.key;
    label.label.classes = labels.classes;
    label.label.names = labels.names;
    label.label.tensor = "#" + what + " of " + n.where();
    n.graph.values.emplace(label.label.tensor, scores);
    return label;
}

Scores as_scores(const Value& v, const std::string& what) {
    if (v.kind == Value::Kind::Scores) return v.scores;
    Scores s;
    s.margin = v.row;
    const int64_t w = v.row.width();
    // Before the identity below is allocated: a Tile or Expand can make a row a million values
    // wide, and w * w of them took the memory of the machine (a 311-byte file, issue 46).
    if (w > kMaxScoreColumns)
        fail(ErrorCategory::Unsupported, "ONNX: " + what + " gives " + std::to_string(w) + " scores per row (at most " +
                                             std::to_string(kMaxScoreColumns) + ")");
    if (!s.margin.steps.empty() && s.margin.steps.back().op == spec::Op::Project) {
        // The last projection is the estimator (a linear model's margins).
        spec::Step last = std::move(s.margin.steps.back());
        s.margin.steps.pop_back();
        s.linear = make_step("linear", {{"coef", last.params.at("matrix")}, {"intercept", last.params.at("offset")}});
        s.margin.text.assign(last.params.at("matrix").empty() ? 0 : last.params.at("matrix")[0].size(), -1);
    } else {
        std::vector<std::vector<double>> eye(static_cast<size_t>(w), std::vector<double>(static_cast<size_t>(w), 0.0));
        for (int64_t i = 0; i < w; ++i) eye[static_cast<size_t>(i)][static_cast<size_t>(i)] = 1.0;
        s.linear = make_step("linear", {{"coef", spec::matrix_to_json(eye)}, {"intercept", spec::numbers_to_json(std::vector<double>(w, 0.0))}});
    }
    s.groups = static_cast<int32_t>(w);
    s.columns = static_cast<int32_t>(w);
    return s;
}

}  // namespace pg_predict::importers::onnx_import
