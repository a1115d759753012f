// The general path: what no specific featurizer step computes becomes op "tensor" steps
// (spec/steps.hpp), an exact per-row tensor operation of each node:
//  - entry by entry: arithmetic and comparisons of two computed tensors, or of a tensor and
//    constants of any shape (Mul, Div, Pow, Max, Min, Sum, Mean, Equal, Less, ..., And, Or, Xor,
//    Not, IsInf), and Where with a computed condition; on constants they are folded;
//  - group by group: the reductions no projection computes (ReduceMax, ReduceMin, ReduceProd,
//    ReduceL1, ReduceL2, ReduceLogSumExp), ArgMax / ArgMin read as a number, Softmax and
//    LogSoftmax in the middle of a graph or along another axis;
//  - shape: Transpose, Slice, Expand, Tile (gathers of the entries), Shape and ConstantOfShape
//    (constants: the batch dimension is -1, which Reshape infers again; a ConstantOfShape of
//    it is a tensor of constants per row); TopK (each group sorted, its first K gathered);
//    GatherElements by computed indices (tensor take); CumSum (a reduce_sum per entry); Einsum
//    of per-row contractions (products, then their sums).
// A value the specific path made (a linear model's Scores, a Label, a LogSumExp) is read here
// through its tensor form (value_row). Each node that takes this path says so in the pipeline's
// import_paths, which explain_model shows.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "graph.hpp"
#include "pg_predict/spec/limits.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::importers::onnx_import {

using nlohmann::json;
using Kind = Value::Kind;
using Matrix = std::vector<std::vector<double>>;

namespace {

json index_json(const std::vector<int32_t>& v) {
    json a = json::array();
    for (int32_t i : v) a.push_back(i);
    return a;
}

Row tensor_step(const Row& src, const std::string& function, const std::vector<std::vector<int32_t>>& operands,
                const std::vector<double>& constants, int64_t group, std::vector<int64_t> dims) {
    json ops = json::array();
    for (const auto& o : operands) ops.push_back(index_json(o));
    json params = {{"function", function}, {"operands", ops}};
    if (!constants.empty()) params["constants"] = spec::numbers_to_json(constants);
    if (group != 1) params["group"] = group;
    return then(src, make_step("tensor", std::move(params)), std::move(dims));
}

// 0, 1, ..., k - 1: every entry of a tensor of k values, in order.
std::vector<int32_t> all_entries(int64_t k) {
    std::vector<int32_t> all;
    for (int32_t i = 0; i < k; ++i) all.push_back(i);
    return all;
}

Value number_constant(double v) {
    Constant c;
    c.values = {v};
    return constant_value(std::move(c));
}

// A tree ensemble's output read as a tensor: the ensemble (with the steps before it) as a
// nested pipeline, an op model step over the pipeline's input vector, whose "predict" is the
// ensemble's value through its link (a classifier's columns as predict_proba gives them).
Row trees_row(const Node& n, const Scores& s, bool regression) {
    spec::Pipeline m;
    m.source_format = "onnx";
    m.objective = "the tree ensemble read by " + n.where();
    m.features.assign(static_cast<size_t>(n.graph.input_width), "");
    m.steps = s.margin.steps;
    m.model = s.ensemble;
    m.model.num_features = static_cast<int32_t>(s.margin.width());
    m.transform = s.transform;
    const bool classifier = s.transform == spec::PostTransform::Softmax || s.transform == spec::PostTransform::Complement ||
                            (s.transform == spec::PostTransform::Logistic && s.columns == 2) ||
                            (s.transform == spec::PostTransform::Identity && s.columns > 1 && !regression);
    if (classifier) {
        m.task = spec::Task::Classification;
        for (int32_t c = 0; c < s.columns; ++c) m.classes.push_back(c);
        m.has_probabilities = true;
    } else {
        m.task = spec::Task::Regression;
        m.outputs = s.groups;
    }
    try {
        spec::validate(m);
    } catch (const Error& e) {
        n.unsupported(std::string("the output of this tree ensemble read by another node (") + e.what() + ")");
    }
    Row in;
    in.dims = {n.graph.input_width};
    in.text.assign(static_cast<size_t>(n.graph.input_width), -1);
    return then(in, make_step("model", {{"pipeline", json::parse(spec::to_json(m))}, {"output", "predict"}}),
                {static_cast<int64_t>(s.columns)});
}

// A linear model's output through its link, as a tensor.
Row scores_row(const Node& n, const Scores& s, bool regression) {
    if (s.trees) return trees_row(n, s, regression);
    Row r = then(s.margin, make_step("project", {{"matrix", s.linear.params.at("coef")}, {"offset", s.linear.params.at("intercept")}}),
                 {static_cast<int64_t>(s.groups)});
    const int64_t g = s.groups;
    switch (s.transform) {
    case spec::PostTransform::Identity: break;
    case spec::PostTransform::Softmax: r = tensor_step(r, "softmax", {all_entries(g)}, {}, g, {g}); break;
    case spec::PostTransform::Exp: r = then(r, make_step("elementwise", {{"function", "exp"}}), r.dims); break;
    case spec::PostTransform::Logistic:
        r = then(r, make_step("elementwise", {{"function", "expit"}}), r.dims);
        if (g == 1 && s.columns == 2)  // [1 - p, p - 0]
            r = tensor_step(r, "sub", {{1, 0}, {0, 2}}, {1.0, 0.0}, 1, {2});
        break;
    case spec::PostTransform::Ovr: case spec::PostTransform::TwoSided: case spec::PostTransform::Complement:
    case spec::PostTransform::ModifiedHuber:
        n.unsupported("the output of a model with this post transform read by another node");
    }
    return r;
}

}  // namespace

Row general_post_transform(Node& n, const Row& raw, const std::string& post) {
    if (raw.dims.size() != 1) n.unsupported("post_transform " + post + " of scores of shape other than [N, k]");
    const int64_t k = raw.width();
    auto each = [&](const char* f) { return then(raw, make_step("elementwise", {{"function", f}}), raw.dims); };
    if (post == "NONE") return raw;
    n.general("post_transform " + post);
    if (post == "LOGISTIC") return each("expit");
    if (post == "PROBIT") return each("onnx_probit");
    if (post == "SOFTMAX" || post == "SOFTMAX_ZERO")
        return tensor_step(raw, post == "SOFTMAX" ? "softmax" : "softmax_zero", {all_entries(k)}, {}, k, raw.dims);
    n.bad("post_transform \"" + post + "\" is none of NONE, LOGISTIC, SOFTMAX, SOFTMAX_ZERO, PROBIT");
}

Row value_row(const Node& n, const Value& v, const std::string& name) {
    if (v.kind == Kind::Row || v.has_row) return v.row;
    if (v.kind == Kind::Scores) n.general(v.scores.trees ? "the tensor form of a tree ensemble's output (a nested model step)"
                                                         : "the tensor form of a linear model's output");
    if (v.kind == Kind::Label) n.general("the tensor form of a label (its class)");
    if (v.kind == Kind::LogSoftmax) n.general("the tensor form of a log-softmax");
    switch (v.kind) {
    case Kind::Scores: return scores_row(n, v.scores, v.regression);
    case Kind::Label: {
        if (!v.label.names.empty()) n.unsupported("a text label (\"" + name + "\") read as a number");
        const auto it = n.graph.values.find(v.label.tensor);
        if (it == n.graph.values.end()) n.unsupported("the label \"" + name + "\" read as a number");
        const Row from = value_row(n, it->second, v.label.tensor);
        const int64_t k = from.width();
        Row index = tensor_step(from, v.label.argmin ? "argmin" : "argmax", {all_entries(k)}, {}, k, {1});
        if (v.label.classes.empty()) return index;
        // Class j where the index is j: one-hot of the index, times the classes.
        std::vector<int32_t> repeated(static_cast<size_t>(k), 0), positions;
        std::vector<double> constants;
        for (int32_t j = 0; j < k; ++j) {
            positions.push_back(1 + j);
            constants.push_back(j);
        }
        Row hot = tensor_step(index, "equal", {repeated, positions}, constants, 1, {k});
        return then(hot, make_step("project", {{"matrix", spec::matrix_to_json({v.label.classes})}, {"offset", json::array({0.0})}}), {1});
    }
    case Kind::LogSoftmax: {  // its row is the x it was taken of, a matrix [N, k]
        const int64_t k = v.row.width();
        return tensor_step(v.row, "log_softmax", {all_entries(k)}, {}, k, v.row.dims);
    }
    case Kind::Constant: n.unsupported("a constant (\"" + name + "\") where a computed tensor is read");
    case Kind::Row: case Kind::LogSumExp: case Kind::Opaque: break;
    }
    if (v.kind == Kind::Opaque) n.unsupported("input \"" + name + "\" (" + v.opaque_why + ")");
    n.unsupported("input \"" + name + "\" read as a tensor");
}

Value general_entrywise(Node& n, const std::string& function, const std::vector<const Value*>& operands) {
    std::vector<Row> rows;
    std::vector<int> row_of(operands.size(), -1);
    size_t rank = 0;
    for (size_t i = 0; i < operands.size(); ++i) {
        if (operands[i]->kind == Kind::Constant) continue;
        row_of[i] = static_cast<int>(rows.size());
        rows.push_back(value_row(n, *operands[i], "operand " + std::to_string(i)));
        rank = std::max(rank, rows.back().dims.size());
    }
    // The per-row shape of each operand (a constant's leading dimension stands for the batch
    // when it has one more than the tensors).
    auto per_row = [&](size_t i) {
        if (row_of[i] >= 0) return rows[static_cast<size_t>(row_of[i])].dims;
        std::vector<int64_t> s = operands[i]->constant.shape;
        if (!rows.empty() && s.size() == rank + 1) s.erase(s.begin());
        return s;
    };
    std::vector<int64_t> dims = per_row(0);
    for (size_t i = 1; i < operands.size(); ++i) dims = broadcast_dims(n, dims, per_row(i));
    if (rows.empty()) {  // every operand a constant: folded
        Constant out;
        out.shape = dims;
        std::vector<std::vector<double>> v;
        for (const Value* o : operands) v.push_back(constant_for_row(n, o->constant, dims));
        for (size_t k = 0; k < v[0].size(); ++k)
            out.values.push_back(function == "where" ? (v[0][k] != 0 ? v[1][k] : v[2][k])
                                                     : spec::apply_binary(function, v[0][k], v[1][k]));
        return constant_value(std::move(out));
    }
    std::vector<const Row*> parts;
    for (const Row& r : rows) parts.push_back(&r);
    int64_t width = 0;
    for (const Row& r : rows) width += r.width();
    const Row src = rows.size() == 1 ? rows[0] : side_by_side(n.graph, parts, {width});
    std::vector<std::vector<int32_t>> indices;
    std::vector<double> constants;
    std::vector<int64_t> offset;
    int64_t at = 0;
    for (const Row& r : rows) {
        offset.push_back(at);
        at += r.width();
    }
    for (size_t i = 0; i < operands.size(); ++i) {
        std::vector<int32_t> idx;
        if (row_of[i] >= 0) {
            const Row& r = rows[static_cast<size_t>(row_of[i])];
            for (int32_t k : broadcast_index(r.dims, dims)) idx.push_back(static_cast<int32_t>(offset[static_cast<size_t>(row_of[i])] + k));
        } else {
            for (double c : constant_for_row(n, operands[i]->constant, dims)) {
                idx.push_back(static_cast<int32_t>(width + static_cast<int64_t>(constants.size())));
                constants.push_back(c);
            }
        }
        indices.push_back(std::move(idx));
    }
    n.general("tensor " + function);
    return row_value(n.graph, tensor_step(src, function, indices, constants, 1, dims));
}

namespace {

// x's entries grouped: one group per entry of the axes not `reduced` (row-major), each group its
// entries along the reduced axes in order.
std::vector<int32_t> grouped_entries(const Row& x, const std::vector<bool>& reduced) {
    std::vector<int64_t> kept;
    for (size_t d = 0; d < x.dims.size(); ++d)
        if (!reduced[d]) kept.push_back(x.dims[d]);
    std::vector<std::vector<int32_t>> groups(static_cast<size_t>(product(kept)));
    std::vector<int64_t> idx(x.dims.size(), 0);
    for (int64_t k = 0; k < x.width(); ++k) {
        int64_t out = 0;
        for (size_t d = 0; d < x.dims.size(); ++d)
            if (!reduced[d]) out = out * x.dims[d] + idx[d];
        groups[static_cast<size_t>(out)].push_back(static_cast<int32_t>(k));
        for (size_t d = x.dims.size(); d-- > 0;) {
            if (++idx[d] < x.dims[d]) break;
            idx[d] = 0;
        }
    }
    std::vector<int32_t> operand;
    for (const auto& g : groups) operand.insert(operand.end(), g.begin(), g.end());
    return operand;
}

}  // namespace

Row general_reduce(Node& n, const std::string& function, const Row& x, const std::vector<bool>& reduced, bool keepdims) {
    std::vector<int64_t> dims;
    int64_t group = 1;
    for (size_t d = 0; d < x.dims.size(); ++d) {
        if (reduced[d]) {
            group *= x.dims[d];
            if (keepdims) dims.push_back(1);
        } else {
            dims.push_back(x.dims[d]);
        }
    }
    if (group == 0) n.unsupported(function + " over an empty axis");
    n.general("tensor " + function);
    return tensor_step(x, function, {grouped_entries(x, reduced)}, {}, group, dims);
}

Row general_softmax(Node& n, const std::string& function, const Row& x, size_t axis) {
    std::vector<bool> reduced(x.dims.size(), false);
    reduced[axis] = true;
    const std::vector<int32_t> operand = grouped_entries(x, reduced);
    Row out = tensor_step(x, function, {operand}, {}, x.dims[axis], {x.width()});
    // The groups' entries back in x's order.
    std::vector<int32_t> back(static_cast<size_t>(x.width()));
    for (size_t p = 0; p < operand.size(); ++p) back[static_cast<size_t>(operand[p])] = static_cast<int32_t>(p);
    n.general("tensor " + function);
    return gather(out, back, x.dims);
}

namespace {

// Equal, LessOrEqual, GreaterOrEqual, And, Or, Xor; Max, Min, Sum, Mean of any number of inputs.
void entrywise(Node& n, const std::string& function) {
    std::vector<const Value*> in;
    for (size_t i = 0; i < n.inputs(); ++i) in.push_back(&n.input(i));
    if (in.empty()) n.bad("has no inputs");
    const bool variadic = function == "max" || function == "min" || function == "add";  // Max, Min, Sum
    if (!variadic && in.size() != 2) n.bad("takes two inputs, not " + std::to_string(in.size()));
    if (in.size() == 1) return n.set_output(0, *in[0]);  // Max, Min or Sum of one tensor: itself
    Value acc = general_entrywise(n, function, {in[0], in[1]});
    for (size_t i = 2; i < in.size(); ++i) acc = general_entrywise(n, function, {&acc, in[i]});
    n.set_output(0, std::move(acc));
}

void variadic(Node& n, const std::string& function) {
    if (n.op() == "Mean") {
        std::vector<const Value*> in;
        for (size_t i = 0; i < n.inputs(); ++i) in.push_back(&n.input(i));
        if (in.empty()) n.bad("has no inputs");
        Value acc = *in[0];
        for (size_t i = 1; i < in.size(); ++i) acc = general_entrywise(n, "add", {&acc, in[i]});
        const Value count = number_constant(static_cast<double>(in.size()));
        if (in.size() > 1) acc = general_entrywise(n, "div", {&acc, &count});
        return n.set_output(0, std::move(acc));
    }
    entrywise(n, function);
}

void not_op(Node& n) {
    const Value zero = number_constant(0.0);
    n.set_output(0, general_entrywise(n, "equal", {&n.input(0), &zero}));
}

void is_nan(Node& n) {
    const Value& x = n.input(0);
    if (x.kind == Kind::Constant) {
        Constant c = x.constant;
        for (double& v : c.values) v = std::isnan(v) ? 1.0 : 0.0;
        c.is_integer = true;
        return n.set_output(0, constant_value(std::move(c)));
    }
    const Row& r = n.row_input(0);
    n.set_output(0, row_value(n.graph, then(r, make_step("is_missing", json::object()), r.dims)));
}

void is_inf(Node& n) {
    const bool negative = n.integer("detect_negative", 1) != 0, positive = n.integer("detect_positive", 1) != 0;
    const Value& x = n.input(0);
    if (!negative && !positive) {
        const Value nan = number_constant(NAN);
        return n.set_output(0, general_entrywise(n, "equal", {&x, &nan}));  // never equal: zeros
    }
    if (negative && positive) {
        Value magnitude = x;
        if (x.kind == Kind::Constant) {
            for (double& v : magnitude.constant.values) v = std::fabs(v);
        } else {
            const Row& r = n.row_input(0);
            magnitude = row_value(n.graph, then(r, make_step("elementwise", {{"function", "absolute"}}), r.dims));
        }
        const Value inf = number_constant(INFINITY);
        return n.set_output(0, general_entrywise(n, "equal", {&magnitude, &inf}));
    }
    const Value inf = number_constant(positive ? INFINITY : -INFINITY);
    n.set_output(0, general_entrywise(n, "equal", {&x, &inf}));
}

// The full shape (the batch first, -1) of a constant or a Row, for the shape ops.
std::vector<int64_t> int_values(const Node& n, const Constant& c, const char* what) {
    if (!c.is_integer) n.bad(std::string(what) + " must be an integer tensor");
    std::vector<int64_t> out;
    for (double v : c.values) out.push_back(static_cast<int64_t>(v));
    return out;
}

// Entries of a Row picked by a function of the output's multi-index (over `dims`), in
// row-major order: `source` gives the input entry's flat index.
template <typename F>
Row pick(const Row& x, const std::vector<int64_t>& dims, F source) {
    std::vector<int32_t> columns;
    std::vector<int64_t> idx(dims.size(), 0);
    const int64_t total = product(dims);
    for (int64_t k = 0; k < total; ++k) {
        columns.push_back(static_cast<int32_t>(source(idx)));
        for (size_t d = dims.size(); d-- > 0;) {
            if (++idx[d] < dims[d]) break;
            idx[d] = 0;
        }
    }
    return gather(x, columns, dims);
}

int64_t flat(const std::vector<int64_t>& dims, const std::vector<int64_t>& idx) {
    int64_t f = 0;
    for (size_t d = 0; d < dims.size(); ++d) f = f * dims[d] + idx[d];
    return f;
}

void transpose(Node& n) {
    const Row& x = n.row_input(0);
    const size_t rank = x.dims.size() + 1;
    std::vector<int64_t> perm = n.integers("perm", false);
    if (perm.empty())
        for (size_t i = rank; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
    if (perm.size() != rank) n.bad("perm has " + std::to_string(perm.size()) + " axes for a tensor of rank " + std::to_string(rank));
    std::vector<bool> seen(rank, false);
    for (int64_t p : perm) {
        if (p < 0 || p >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(p)]) n.bad("perm is not a permutation");
        seen[static_cast<size_t>(p)] = true;
    }
    if (perm[0] != 0) n.unsupported("a Transpose that moves the batch axis");
    std::vector<int64_t> dims;
    for (size_t i = 1; i < rank; ++i) dims.push_back(x.dims[static_cast<size_t>(perm[i] - 1)]);
    n.general("gather (transpose)");
    n.set_output(0, row_value(n.graph, pick(x, dims, [&](const std::vector<int64_t>& out) {
        std::vector<int64_t> in(x.dims.size());
        for (size_t i = 1; i < rank; ++i) in[static_cast<size_t>(perm[i] - 1)] = out[i - 1];
        return flat(x.dims, in);
    })));
}

// The per-row target of Expand's shape (its first entry stands for the batch: 1 or -1 keep it).
void expand(Node& n) {
    const Row& x = n.row_input(0);
    std::vector<int64_t> shape = int_values(n, n.constant_input(1), "shape");
    if (shape.size() > x.dims.size()) {
        const int64_t batch = shape[shape.size() - x.dims.size() - 1];
        if (shape.size() > x.dims.size() + 1 || (batch != 1 && batch != -1)) n.unsupported("an Expand along the batch axis");
        shape.erase(shape.begin());
    }
    const std::vector<int64_t> dims = broadcast_dims(n, x.dims, shape);
    n.general("gather (expand)");
    n.set_output(0, row_value(n.graph, broadcast_to(n, x, dims)));
}

void tile(Node& n) {
    const Row& x = n.row_input(0);
    const std::vector<int64_t> repeats = int_values(n, n.constant_input(1), "repeats");
    if (repeats.size() != x.dims.size() + 1) n.bad("repeats must have one entry per axis");
    if (repeats[0] != 1) n.unsupported("a Tile along the batch axis");
    std::vector<int64_t> dims;
    for (size_t d = 0; d < x.dims.size(); ++d) {
        if (repeats[d + 1] < 0 || repeats[d + 1] > spec::kMaxStepWidth) n.bad("a repeat of " + std::to_string(repeats[d + 1]));
        dims.push_back(x.dims[d] * repeats[d + 1]);
    }
    n.general("gather (tile)");
    n.set_output(0, row_value(n.graph, pick(x, dims, [&](const std::vector<int64_t>& out) {
        std::vector<int64_t> in(x.dims.size());
        for (size_t d = 0; d < in.size(); ++d) in[d] = out[d] % x.dims[d];
        return flat(x.dims, in);
    })));
}

void slice(Node& n) {
    const Row& x = n.row_input(0);
    std::vector<int64_t> starts, ends, axes, steps;
    if (n.graph.opsets.at("") >= 10) {
        starts = int_values(n, n.constant_input(1), "starts");
        ends = int_values(n, n.constant_input(2), "ends");
        if (n.has_input(3)) axes = int_values(n, n.constant_input(3), "axes");
        if (n.has_input(4)) steps = int_values(n, n.constant_input(4), "steps");
    } else {
        starts = n.integers("starts");
        ends = n.integers("ends");
        axes = n.integers("axes", false);
    }
    const int64_t rank = static_cast<int64_t>(x.dims.size()) + 1;
    if (axes.empty())
        for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
        n.bad("starts, ends, axes and steps must have equal lengths");
    std::vector<int64_t> first(x.dims.size(), 0), step(x.dims.size(), 1), dims = x.dims;
    for (size_t i = 0; i < axes.size(); ++i) {
        int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
        if (a < 0 || a >= rank) n.bad("axis " + std::to_string(axes[i]) + " is out of range");
        if (steps[i] == 0) n.bad("a step of 0");
        if (a == 0) {
            if (steps[i] == 1 && starts[i] == 0 && ends[i] >= INT32_MAX) continue;  // the whole batch
            n.unsupported("a Slice of the batch axis");
        }
        const int64_t len = x.dims[static_cast<size_t>(a - 1)];
        // A step longer than the axis takes one entry whatever its size (and stays negatable).
        steps[i] = std::min(std::max(steps[i], -(len + 1)), len + 1);
        auto clamp = [&](int64_t v, int64_t lo, int64_t hi) { return std::min(std::max(v, lo), hi); };
        int64_t s = starts[i] < 0 ? starts[i] + len : starts[i];
        int64_t e = ends[i] < 0 ? ends[i] + len : ends[i];
        int64_t count;
        if (steps[i] > 0) {
            s = clamp(s, 0, len);
            e = clamp(e, 0, len);
            count = e > s ? (e - s + steps[i] - 1) / steps[i] : 0;
        } else {
            s = clamp(s, 0, len - 1);
            e = clamp(e, -1, len - 1);
            count = s > e ? (s - e - steps[i] - 1) / -steps[i] : 0;
        }
        first[static_cast<size_t>(a - 1)] = s;
        step[static_cast<size_t>(a - 1)] = steps[i];
        dims[static_cast<size_t>(a - 1)] = count;
    }
    n.general("gather (slice)");
    n.set_output(0, row_value(n.graph, pick(x, dims, [&](const std::vector<int64_t>& out) {
        std::vector<int64_t> in(x.dims.size());
        for (size_t d = 0; d < in.size(); ++d) in[d] = first[d] + out[d] * step[d];
        return flat(x.dims, in);
    })));
}

// Shape of a computed tensor: a constant whose batch entry is -1 (Reshape infers it again).
void shape(Node& n) {
    const Value& x = n.input(0);
    Constant c;
    c.is_integer = true;
    if (x.kind == Kind::Constant) {
        for (int64_t d : x.constant.shape) c.values.push_back(static_cast<double>(d));
    } else {
        const Row& r = n.row_input(0);
        c.values.push_back(-1.0);
        for (int64_t d : r.dims) c.values.push_back(static_cast<double>(d));
    }
    const int64_t rank = static_cast<int64_t>(c.values.size());
    int64_t start = n.integer("start", 0), end = n.integer("end", rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::min(std::max<int64_t>(start, 0), rank);
    end = std::min(std::max<int64_t>(end, start), rank);
    c.values = std::vector<double>(c.values.begin() + start, c.values.begin() + end);
    c.shape = {static_cast<int64_t>(c.values.size())};
    n.set_output(0, constant_value(std::move(c)));
}

void constant_of_shape(Node& n) {
    const std::vector<int64_t> shape = int_values(n, n.constant_input(0), "shape");
    Constant c;
    double fill = 0.0;
    if (n.has("value")) {
        const Constant v = n.tensor("value");
        if (v.values.size() != 1) n.bad("value must hold one number");
        fill = v.values[0];
        c.is_integer = v.is_integer;
    }
    if (!shape.empty() && shape[0] == -1) {
        // The shape of a computed tensor (Shape): the batch, then the per-row dims. A tensor of
        // `fill` per row (skl2onnx's PolynomialFeatures bias column): constants spread over the
        // batch by a tensor step that reads no column.
        std::vector<int64_t> dims(shape.begin() + 1, shape.end());
        for (int64_t d : dims)
            if (d < 0) n.bad("ConstantOfShape's shape has dimension " + std::to_string(d));
        const int32_t w = n.graph.input_width;
        const int64_t count = product(dims);
        Row in;
        in.dims = {w};
        in.text.assign(static_cast<size_t>(w), -1);
        n.general("tensor add (constants over the batch)");
        return n.set_output(0, row_value(n.graph, tensor_step(in, "add", {std::vector<int32_t>(static_cast<size_t>(count), w),
                                                                          std::vector<int32_t>(static_cast<size_t>(count), w + 1)},
                                                              {fill, 0.0}, 1, dims)));
    }
    for (int64_t d : shape)
        if (d < 0) n.bad("ConstantOfShape's shape has dimension " + std::to_string(d));
    c.shape = shape;
    c.values.assign(static_cast<size_t>(product(shape)), fill);
    n.set_output(0, constant_value(std::move(c)));
}

// TopK: the K largest (smallest) entries along an axis, sorted, equal values by their index
// (ONNX's tiebreak), and their indices: each group sorted by a tensor step, then its first K
// gathered back into the axis's place.
void top_k(Node& n) {
    const Row& x = n.row_input(0);
    const Constant& kc = n.constant_input(1);
    if (kc.values.size() != 1 || !kc.is_integer) n.bad("K must be one integer");
    const int64_t rank = static_cast<int64_t>(x.dims.size()) + 1;
    int64_t axis = n.integer("axis", -1);
    if (axis < -rank || axis >= rank) n.bad("axis " + std::to_string(axis) + " is out of range");
    if (axis < 0) axis += rank;
    if (axis == 0) n.unsupported("a TopK along the batch axis");
    const size_t a = static_cast<size_t>(axis - 1);
    const int64_t len = x.dims[a];
    const double kv = kc.values[0];
    if (kv < 0 || kv > static_cast<double>(len)) n.bad("K = " + std::to_string(kv) + " for an axis of " + std::to_string(len));
    const int64_t k = static_cast<int64_t>(kv);
    const bool largest = n.integer("largest", 1) != 0;
    std::vector<bool> reduced(x.dims.size(), false);
    reduced[a] = true;
    const std::vector<int32_t> operand = grouped_entries(x, reduced);
    std::vector<int64_t> dims = x.dims;
    dims[a] = k;
    // Output (..., j along the axis, ...) is entry j of its group; groups are row-major over the
    // other axes.
    auto position = [&](const std::vector<int64_t>& idx) {
        int64_t g = 0;
        for (size_t d = 0; d < idx.size(); ++d)
            if (d != a) g = g * x.dims[d] + idx[d];
        return g * len + idx[a];
    };
    n.general(std::string("tensor ") + (largest ? "sort_descending" : "sort_ascending"));
    for (size_t o = 0; o < 2; ++o) {
        if (!n.output_used(o)) continue;
        const std::string f = std::string(o == 0 ? "sort_" : "argsort_") + (largest ? "descending" : "ascending");
        const Row sorted = tensor_step(x, f, {operand}, {}, len, {x.width()});
        n.set_output(o, row_value(n.graph, pick(sorted, dims, position)));
    }
}

// GatherElements along a per-row axis with computed indices (skl2onnx's AdaBoostRegressor
// gathers its members' predictions in sorted order): tensor function take over the data and
// the indices side by side. An index out of range gives NaN where ONNX Runtime fails the batch.
void gather_elements(Node& n) {
    const Value& data = n.input(0);
    const Value& indices = n.input(1);
    if (indices.kind == Kind::Constant)
        n.unsupported("GatherElements with constant indices (their first axis would fix the number of rows)");
    if (data.kind == Kind::Constant) n.unsupported("GatherElements of constant data by computed indices");
    const Row x = value_row(n, data, "data"), idx = value_row(n, indices, "indices");
    if (x.dims.size() != idx.dims.size())
        n.bad("data and indices must have the same rank, not " + std::to_string(x.dims.size() + 1) + " and " +
              std::to_string(idx.dims.size() + 1));
    const int64_t rank = static_cast<int64_t>(x.dims.size()) + 1;
    int64_t axis = n.integer("axis", 0);
    if (axis < -rank || axis >= rank) n.bad("axis " + std::to_string(axis) + " is out of range");
    if (axis < 0) axis += rank;
    if (axis == 0) n.unsupported("a GatherElements along the batch axis");
    const size_t a = static_cast<size_t>(axis - 1);
    for (size_t d = 0; d < x.dims.size(); ++d)
        if (d != a && idx.dims[d] > x.dims[d])
            n.bad("indices are larger than the data along axis " + std::to_string(d + 1));
    const int64_t m = x.dims[a];
    const Row joined = side_by_side(n.graph, {&x, &idx}, {x.width() + idx.width()});
    std::vector<int32_t> index_entries, candidates;
    std::vector<int64_t> o(idx.dims.size(), 0);
    for (int64_t i = 0; i < idx.width(); ++i) {
        index_entries.push_back(static_cast<int32_t>(x.width() + i));
        std::vector<int64_t> at = o;
        for (int64_t c = 0; c < m; ++c) {
            at[a] = c;
            candidates.push_back(static_cast<int32_t>(flat(x.dims, at)));
        }
        for (size_t d = o.size(); d-- > 0;) {
            if (++o[d] < idx.dims[d]) break;
            o[d] = 0;
        }
    }
    n.general("tensor take");
    n.set_output(0, row_value(n.graph, tensor_step(joined, "take", {index_entries, candidates}, {}, m, idx.dims)));
}

// CumSum along a per-row axis (exclusive, reverse): each entry a reduce_sum of the entries
// before it (or after it), padded with zeros to the axis's length.
void cum_sum(Node& n) {
    const Row& x = n.row_input(0);
    const Constant& ac = n.constant_input(1);
    if (ac.values.size() != 1 || !ac.is_integer) n.bad("axis must be one integer");
    const int64_t rank = static_cast<int64_t>(x.dims.size()) + 1;
    int64_t axis = static_cast<int64_t>(ac.values[0]);
    if (axis < -rank || axis >= rank) n.bad("axis " + std::to_string(axis) + " is out of range");
    if (axis < 0) axis += rank;
    if (axis == 0) n.unsupported("a CumSum along the batch axis");
    const size_t a = static_cast<size_t>(axis - 1);
    const bool exclusive = n.integer("exclusive", 0) != 0, reverse = n.integer("reverse", 0) != 0;
    const int64_t m = x.dims[a], w = x.width();
    std::vector<int32_t> operand;
    std::vector<int64_t> o(x.dims.size(), 0);
    for (int64_t i = 0; i < w; ++i) {
        std::vector<int64_t> at = o;
        int64_t taken = 0;
        for (int64_t c = 0; c < m; ++c) {
            const bool in = reverse ? (exclusive ? c > o[a] : c >= o[a]) : (exclusive ? c < o[a] : c <= o[a]);
            if (!in) continue;
            at[a] = c;
            operand.push_back(static_cast<int32_t>(flat(x.dims, at)));
            ++taken;
        }
        operand.insert(operand.end(), static_cast<size_t>(m - taken), static_cast<int32_t>(w));  // the zero
        for (size_t d = o.size(); d-- > 0;) {
            if (++o[d] < x.dims[d]) break;
            o[d] = 0;
        }
    }
    n.general("tensor reduce_sum (cumulative)");
    n.set_output(0, row_value(n.graph, tensor_step(x, "reduce_sum", {operand}, {0.0}, m, x.dims)));
}

// Einsum of one or two operands whose computed terms start with the batch letter, which
// also starts the output and appears in no constant's term (per-row contractions: "bi,ij->bj",
// "bi,bi->b", "bij,bjk->bik", "bij->bji"; not "..."). Each output entry is a sum over the
// contracted letters: one "mul" of every product's two factors (or a gather of the one
// operand), then a reduce_sum over each entry's products.
void einsum(Node& n) {
    const std::string eq = n.text("equation");
    std::string lhs = eq, out;
    const size_t arrow = eq.find("->");
    if (eq.find("...") != std::string::npos) n.unsupported("an Einsum with an ellipsis");
    if (arrow != std::string::npos) {
        lhs = eq.substr(0, arrow);
        out = eq.substr(arrow + 2);
    }
    std::vector<std::string> terms{""};
    for (char c : lhs) {
        if (c == ',') terms.emplace_back();
        else if (c != ' ') terms.back() += c;
    }
    std::string out_letters;
    for (char c : out)
        if (c != ' ') out_letters += c;
    if (terms.size() != n.inputs() || terms.size() > 2)
        n.unsupported("an Einsum of " + std::to_string(n.inputs()) + " operands (one or two are supported)");
    if (arrow == std::string::npos) {  // numpy's implicit output: the letters seen once, sorted
        std::map<char, int> seen;
        for (const auto& t : terms)
            for (char c : t) ++seen[c];
        for (const auto& [c, count] : seen)
            if (count == 1) out_letters += c;
    }
    std::vector<Row> rows;
    std::vector<const Constant*> constants;
    char batch = 0;
    std::map<char, int64_t> size;
    for (size_t i = 0; i < terms.size(); ++i) {
        const Value& v = n.input(i);
        std::vector<int64_t> shape;
        if (v.kind == Kind::Constant) {
            constants.push_back(&v.constant);
            rows.emplace_back();
            shape = v.constant.shape;
        } else {
            constants.push_back(nullptr);
            rows.push_back(value_row(n, v, "operand " + std::to_string(i)));
            if (terms[i].empty()) n.bad("operand " + std::to_string(i) + " has no letter for its rows");
            if (batch != 0 && terms[i][0] != batch) n.unsupported("an Einsum whose operands put the rows on different letters");
            batch = terms[i][0];
            shape = rows.back().dims;
            shape.insert(shape.begin(), -1);
        }
        if (shape.size() != terms[i].size())
            n.bad("operand " + std::to_string(i) + " has rank " + std::to_string(shape.size()) + ", its term \"" + terms[i] + "\" " +
                  std::to_string(terms[i].size()) + " letters");
        for (size_t d = 0; d < shape.size(); ++d) {
            const char c = terms[i][d];
            if (!std::isalpha(static_cast<unsigned char>(c))) n.bad("equation \"" + eq + "\" has the character '" + c + "'");
            if (c == batch && shape[d] == -1) continue;
            if (c == batch && constants[i] != nullptr) n.unsupported("an Einsum whose constant operand has the rows' letter");
            auto [it, fresh] = size.emplace(c, shape[d]);
            if (!fresh && it->second != shape[d]) n.bad("letter '" + std::string(1, c) + "' has two sizes");
        }
    }
    if (batch == 0) n.unsupported("an Einsum of constants only");
    if (out_letters.empty() || out_letters[0] != batch)
        n.unsupported("an Einsum whose output does not start with the rows' letter '" + std::string(1, batch) + "'");
    for (char c : out_letters.substr(1))
        if (!size.count(c)) n.bad("output letter '" + std::string(1, c) + "' is in no operand");
    // Letters of the output (after the batch), then the contracted ones.
    std::vector<char> free(out_letters.begin() + 1, out_letters.end()), summed;
    for (const auto& [c, s] : size)
        if (std::find(free.begin(), free.end(), c) == free.end()) summed.push_back(c);
    std::vector<int64_t> dims, sum_dims;
    for (char c : free) dims.push_back(size[c]);
    for (char c : summed) sum_dims.push_back(size[c]);
    const int64_t entries = product(dims), per_entry = product(sum_dims);
    if (static_cast<double>(entries) * static_cast<double>(per_entry) > static_cast<double>(spec::kMaxStepWidth)) n.unsupported("an Einsum of more than " + std::to_string(spec::kMaxStepWidth) + " products per row");
    // The joined row [computed operands...] and, per operand, the entry it reads for letters l.
    std::vector<const Row*> parts;
    std::vector<int64_t> offset(terms.size(), 0);
    int64_t width = 0;
    for (size_t i = 0; i < terms.size(); ++i)
        if (constants[i] == nullptr) {
            offset[i] = width;
            width += rows[i].width();
            parts.push_back(&rows[i]);
        }
    const Row src = parts.size() == 1 ? *parts[0] : side_by_side(n.graph, parts, {width});
    std::vector<double> values;  // the constants' entries, after the row's
    for (size_t i = 0; i < terms.size(); ++i)
        if (constants[i] != nullptr) {
            offset[i] = width + static_cast<int64_t>(values.size());
            values.insert(values.end(), constants[i]->values.begin(), constants[i]->values.end());
        }
    std::map<char, int64_t> at;
    auto entry = [&](size_t i) {
        std::vector<int64_t> idx, shape;
        for (char c : terms[i]) {
            if (c == batch && constants[i] == nullptr) continue;
            idx.push_back(at[c]);
            shape.push_back(size[c]);
        }
        return static_cast<int32_t>(offset[i] + flat(shape, idx));
    };
    std::vector<std::vector<int32_t>> factors(terms.size());
    for (int64_t o = 0; o < entries; ++o) {
        int64_t rest = o;
        for (size_t d = free.size(); d-- > 0;) {
            at[free[d]] = rest % dims[d];
            rest /= dims[d];
        }
        for (int64_t s = 0; s < per_entry; ++s) {
            int64_t r = s;
            for (size_t d = summed.size(); d-- > 0;) {
                at[summed[d]] = r % sum_dims[d];
                r /= sum_dims[d];
            }
            for (size_t i = 0; i < terms.size(); ++i) factors[i].push_back(entry(i));
        }
    }
    n.general("tensor " + std::string(terms.size() == 2 ? "mul, then " : "") + "reduce_sum (einsum)");
    if (terms.size() == 1) return n.set_output(0, row_value(n.graph, tensor_step(src, "reduce_sum", factors, values, per_entry, dims)));
    const Row products = tensor_step(src, "mul", factors, values, 1, {entries * per_entry});
    if (per_entry == 1) return n.set_output(0, row_value(n.graph, gather(products, all_entries(entries), dims)));
    n.set_output(0, row_value(n.graph, tensor_step(products, "reduce_sum", {all_entries(entries * per_entry)}, {}, per_entry, dims)));
}

}  // namespace

void add_general_ops(std::map<std::string, Handler>& t) {
    t["Equal"] = [](Node& n) { entrywise(n, "equal"); };
    t["LessOrEqual"] = [](Node& n) { entrywise(n, "less_equal"); };
    t["GreaterOrEqual"] = [](Node& n) { entrywise(n, "greater_equal"); };
    t["And"] = [](Node& n) { entrywise(n, "and"); };
    t["Or"] = [](Node& n) { entrywise(n, "or"); };
    t["Xor"] = [](Node& n) { entrywise(n, "xor"); };
    t["Not"] = not_op;
    t["IsNaN"] = is_nan;
    t["IsInf"] = is_inf;
    t["Max"] = [](Node& n) { variadic(n, "max"); };
    t["Min"] = [](Node& n) { variadic(n, "min"); };
    t["Sum"] = [](Node& n) { variadic(n, "add"); };
    t["Mean"] = [](Node& n) { variadic(n, "add"); };
    t["Transpose"] = transpose;
    t["Expand"] = expand;
    t["Tile"] = tile;
    t["Slice"] = slice;
    t["Shape"] = shape;
    t["ConstantOfShape"] = constant_of_shape;
    t["TopK"] = top_k;
    t["GatherElements"] = gather_elements;
    t["CumSum"] = cum_sum;
    t["Einsum"] = einsum;
}

}  // namespace pg_predict::importers::onnx_import
