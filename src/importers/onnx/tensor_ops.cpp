// The ai.onnx operators of small numeric graphs (skl2onnx's MLP, naive Bayes, k-means and PCA
// graphs, torch.onnx.export of small networks), lowered onto featurizer steps:
//  - on constants they are folded;
//  - on a Row, linear ones become "project" / "affine" steps (MatMul, Gemm, Add/Sub/Mul/Div by a
//    constant, Reduce{Sum,Mean,SumSquare}), per-entry ones "elementwise" / "clip" steps, shape
//    ones a gather of columns (Reshape, Flatten, Squeeze, Unsqueeze, Concat, Gather);
//  - Add / Sub of two Rows: both side by side, then one projection [I | ±I];
//  - Softmax of a Row, and Exp(x - ReduceLogSumExp(x)), are a softmax post transform (only at
//    the end of the graph); ArgMax / ArgMin give a Label.
// What has no step there (a product of two computed tensors, a softmax in the middle, a
// maximum over an axis, a computed condition) goes to the general path (general_ops.cpp). A
// projection sums over the whole row, so a NaN input makes every entry computed by a MatMul /
// ReduceSum / Add of two Rows NaN, where ONNX Runtime would keep it to the entries it touches.
#include <cmath>
#include <string>
#include <vector>

#include "graph.hpp"
#include "pg_predict/spec/steps.hpp"

namespace pg_predict::importers::onnx_import {

namespace {

using nlohmann::json;
using Matrix = std::vector<std::vector<double>>;
using Kind = Value::Kind;

// --- shapes -----------------------------------------------------------------------------------

int64_t full_axis(const Node& n, int64_t axis, size_t rank) {
    const int64_t r = static_cast<int64_t>(rank);
    if (axis < -r || axis >= r) n.bad("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
    return axis < 0 ? axis + r : axis;
}

// A per-row axis (the batch is axis 0 of the full tensor, which a Row cannot reduce or move).
size_t row_axis(const Node& n, int64_t axis, const Row& x) {
    const int64_t a = full_axis(n, axis, x.dims.size() + 1);
    if (a == 0) n.unsupported("an operation along the batch axis 0");
    return static_cast<size_t>(a - 1);
}

std::vector<int64_t> int_list(const Node& n, const Constant& c, const char* what) {
    if (!c.is_integer) n.bad(std::string(what) + " must be an integer tensor");
    std::vector<int64_t> out;
    for (double v : c.values) out.push_back(static_cast<int64_t>(v));
    return out;
}

// The axes of a Reduce / Squeeze / Unsqueeze: an attribute before `input_since`, an input from then.
std::vector<int64_t> axes_of(const Node& n, int64_t input_since) {
    if (n.graph.opsets.at("") >= input_since && n.has_input(1))
        return int_list(n, n.constant_input(1), "axes");
    return n.integers("axes", false);
}

Value keep(const Value& v) { return v; }

// --- constants ---------------------------------------------------------------------------------

// The binary tensor function (spec::apply_binary) of a node: Add, Sub, Mul, Div, Pow, Greater, Less.
const char* binary_function(const Node& n) {
    static const std::pair<const char*, const char*> kOps[] = {{"Add", "add"}, {"Sub", "sub"}, {"Mul", "mul"},
                                                               {"Div", "div"}, {"Pow", "pow"}, {"Greater", "greater"},
                                                               {"Less", "less"}};
    for (const auto& [op, f] : kOps)
        if (n.op() == op) return f;
    n.bad("is no binary arithmetic");
}

Constant fold_binary(const Node& n, const Constant& a, const Constant& b, const char* function) {
    if (a.is_string || b.is_string) n.unsupported("arithmetic on strings");
    Constant out;
    out.is_integer = a.is_integer && b.is_integer;
    out.shape = broadcast_dims(n, a.shape, b.shape);
    const std::vector<double> x = constant_for_row(n, Constant{a.shape, a.values, {}, false, false}, out.shape);
    const std::vector<double> y = constant_for_row(n, Constant{b.shape, b.values, {}, false, false}, out.shape);
    for (size_t i = 0; i < x.size(); ++i) out.values.push_back(spec::apply_binary(function, x[i], y[i]));
    return out;
}

// --- Rows ---------------------------------------------------------------------------------------

Row affine(const Row& x, std::vector<double> scale, std::vector<double> offset) {
    return then(x, make_step("affine", {{"scale", spec::numbers_to_json(scale)}, {"offset", spec::numbers_to_json(offset)}}), x.dims);
}

Row elementwise(const Row& x, const char* f) { return then(x, make_step("elementwise", {{"function", f}}), x.dims); }

Row project(const Row& x, const Matrix& m, const std::vector<double>& offset, std::vector<int64_t> dims) {
    return then(x, make_step("project", {{"matrix", spec::matrix_to_json(m)}, {"offset", spec::numbers_to_json(offset)}}), std::move(dims));
}

bool all_equal(const std::vector<double>& v, double x) {
    for (double d : v) if (d != x) return false;
    return true;
}

// Row ⊕ constant, per entry, after broadcasting both.
Value row_with_constant(Node& n, const Value& rv, const Constant& c, bool constant_first) {
    const Row& r = rv.row;
    std::vector<int64_t> cdims = c.shape;
    if (cdims.size() == r.dims.size() + 1) cdims.erase(cdims.begin());
    const std::vector<int64_t> dims = broadcast_dims(n, r.dims, cdims);
    const Row x = broadcast_to(n, r, dims);
    const std::vector<double> k = constant_for_row(n, c, dims);
    const size_t w = k.size();
    const std::string& op = n.op();
    Row y;
    std::string key;
    if (op == "Add") {
        if (all_equal(k, 0.0)) return rv;
        y = affine(x, std::vector<double>(w, 1.0), k);
    } else if (op == "Sub") {
        if (constant_first) {
            y = affine(x, std::vector<double>(w, -1.0), k);
        } else {
            std::vector<double> neg;
            for (double v : k) neg.push_back(-v);
            y = affine(x, std::vector<double>(w, 1.0), neg);
        }
    } else if (op == "Mul") {
        if (all_equal(k, 1.0)) return rv;
        y = affine(x, k, std::vector<double>(w, 0.0));
        if (!k.empty() && all_equal(k, k[0]) && k[0] > 0) key = rv.key;  // same argmax
    } else if (op == "Div") {
        if (constant_first) {
            y = affine(elementwise(x, "reciprocal"), k, std::vector<double>(w, 0.0));
        } else {
            std::vector<double> inv;
            for (double v : k) inv.push_back(1.0 / v);
            y = affine(x, inv, std::vector<double>(w, 0.0));
        }
    } else if (op == "Pow") {
        if (constant_first) n.unsupported("a constant raised to a computed power");
        if (all_equal(k, 1.0)) return rv;
        if (all_equal(k, 2.0)) y = elementwise(x, "square");
        else if (all_equal(k, 0.5)) y = elementwise(x, "sqrt");
        else n.unsupported("Pow with an exponent other than 0.5, 1 or 2");
    }
    return row_value(n.graph, std::move(y), false, key);
}

// Row ± Row: both side by side, then [I | ±I].
Value row_with_row(Node& n, const Row& a, const Row& b) {
    if (n.op() != "Add" && n.op() != "Sub")
        n.unsupported(n.op() + " of two computed tensors (only Add and Sub of them are linear)");
    const std::vector<int64_t> dims = broadcast_dims(n, a.dims, b.dims);
    const Row x = broadcast_to(n, a, dims), y = broadcast_to(n, b, dims);
    const size_t w = static_cast<size_t>(product(dims));
    const Row both = side_by_side(n.graph, {&x, &y}, {static_cast<int64_t>(2 * w)});
    Matrix m(w, std::vector<double>(2 * w, 0.0));
    for (size_t i = 0; i < w; ++i) {
        m[i][i] = 1.0;
        m[i][w + i] = n.op() == "Add" ? 1.0 : -1.0;
    }
    return row_value(n.graph, project(both, m, std::vector<double>(w, 0.0), dims));
}

void binary(Node& n) {
    const Value& a = n.input(0);
    const Value& b = n.input(1);
    const char* function = binary_function(n);
    if (a.kind == Kind::Constant && b.kind == Kind::Constant) {
        n.set_output(0, constant_value(fold_binary(n, a.constant, b.constant, function)));
        return;
    }
    // x - logsumexp(x): log_softmax(x).
    if (n.op() == "Sub" && a.kind == Kind::Row && b.kind == Kind::LogSumExp && b.key == a.key) {
        Value v = a;
        v.kind = Kind::LogSoftmax;
        n.set_output(0, v);
        return;
    }
    // A model's output times ones (onnxmltools' LightGBM classifier): itself.
    if (n.op() == "Mul" && a.kind == Kind::Scores && b.kind == Kind::Constant && !b.constant.is_string &&
        all_equal(b.constant.values, 1.0)) {
        n.set_output(0, keep(a));
        return;
    }
    const std::string& op = n.op();
    // The steps where they compute it: a Row and a constant (Pow to 1, 2 or 0.5 only), Add / Sub
    // of two Rows; the general path for the rest.
    // An affine step needs finite factors: a division by zero, or an infinite constant, is general.
    const auto finite_factor = [&](const Value& c) {
        if (c.kind != Kind::Constant || c.constant.is_string) return false;
        for (double v : c.constant.values)
            if (!std::isfinite(v) || (op == "Div" && v == 0.0)) return false;
        return true;
    };
    if ((a.kind == Kind::Row && b.kind == Kind::Constant && !finite_factor(b)) ||
        (a.kind == Kind::Constant && b.kind == Kind::Row && !finite_factor(a)))
        return n.set_output(0, general_entrywise(n, function, {&a, &b}));
    const bool simple_power = op != "Pow" || (b.kind == Kind::Constant && !b.constant.is_string &&
                                              (all_equal(b.constant.values, 1.0) || all_equal(b.constant.values, 2.0) ||
                                               all_equal(b.constant.values, 0.5)));
    if (a.kind == Kind::Row && b.kind == Kind::Constant && simple_power)
        return n.set_output(0, row_with_constant(n, a, b.constant, false));
    if (a.kind == Kind::Constant && b.kind == Kind::Row && op != "Pow")
        return n.set_output(0, row_with_constant(n, b, a.constant, true));
    if (a.kind == Kind::Row && b.kind == Kind::Row && (op == "Add" || op == "Sub"))
        return n.set_output(0, row_with_row(n, a.row, b.row));
    n.set_output(0, general_entrywise(n, function, {&a, &b}));
}

void unary(Node& n, const char* function) {
    const Value& x = n.input(0);
    if (x.kind == Kind::Constant) {
        Constant c = x.constant;
        if (c.is_string) n.unsupported("a string constant");
        for (double& v : c.values) v = spec::apply_elementwise(function, v);
        c.is_integer = false;
        return n.set_output(0, constant_value(std::move(c)));
    }
    if (n.op() == "Exp" && x.kind == Kind::LogSoftmax) {  // exp(log_softmax(x)) = softmax(x)
        Value v;
        v.kind = Kind::Scores;
        v.scores = as_scores(x, n.where());
        v.scores.transform = spec::PostTransform::Softmax;
        v.key = x.key;
        v.probabilities = true;
        return n.set_output(0, v);
    }
    const Row& r = n.row_input(0);
    // sqrt keeps the order of non-negative values (k-means distances).
    return n.set_output(0, row_value(n.graph, elementwise(r, function), false, n.op() == "Sqrt" ? x.key : ""));
}

// x < 0: alpha * x, else x (NaN stays NaN).
void leaky_relu(Node& n) {
    const double alpha = n.number("alpha", spec::kLeakyReluAlpha);
    if (!std::isfinite(alpha)) n.bad("alpha must be finite");
    const Value& x = n.input(0);
    if (x.kind == Kind::Constant) {
        Constant c = x.constant;
        if (c.is_string) n.unsupported("a string constant");
        for (double& v : c.values) v = v < 0.0 ? alpha * v : v;
        c.is_integer = false;
        return n.set_output(0, constant_value(std::move(c)));
    }
    const Row& r = n.row_input(0);
    n.set_output(0, row_value(n.graph, then(r, make_step("elementwise", {{"function", "leaky_relu"}, {"alpha", alpha}}), r.dims)));
}

// Greater / Less of a computed tensor and one number: 1 where it holds, else 0 (NaN: 0), as a
// Binarizer's threshold step (x < c is -x > -c). Of two constants: folded.
void compare(Node& n) {
    const Value& a = n.input(0);
    const Value& b = n.input(1);
    const bool greater = n.op() == "Greater";
    if (a.kind == Kind::Constant && b.kind == Kind::Constant) {
        Constant c = fold_binary(n, a.constant, b.constant, binary_function(n));
        c.is_integer = true;
        return n.set_output(0, constant_value(std::move(c)));
    }
    // c > x is x < c.
    const bool row_first = a.kind != Kind::Constant;
    const Value& other = row_first ? b : a;
    const bool above = row_first == greater;  // the row's entries must be above the number
    if (other.kind != Kind::Constant || other.constant.is_string || other.constant.values.size() != 1 ||
        !std::isfinite(other.constant.values[0]) || (a.kind != Kind::Row && b.kind != Kind::Row))
        return n.set_output(0, general_entrywise(n, greater ? "greater" : "less", {&a, &b}));
    const double c = other.constant.values[0];
    const Row& r = n.row_input(row_first ? 0 : 1);
    const size_t w = r.text.size();
    const Row x = above ? r : affine(r, std::vector<double>(w, -1.0), std::vector<double>(w, 0.0));
    n.set_output(0, row_value(n.graph, then(x, make_step("threshold", {{"threshold", above ? c : -c}}), r.dims)));
}

void neg(Node& n) {
    const Value& x = n.input(0);
    if (x.kind == Kind::Constant) return unary(n, "negative");
    const Row& r = n.row_input(0);
    n.set_output(0, row_value(n.graph, affine(r, std::vector<double>(r.text.size(), -1.0), std::vector<double>(r.text.size(), 0.0))));
}

// Before opset 13, Softmax over axis a of a tensor of rank > a + 1 works on the axes from a on
// flattened into one.
bool opset_before_13_flattens(const Node& n, const Row& r) {
    if (n.graph.opsets.at("") >= 13) return false;
    const int64_t rank = static_cast<int64_t>(r.dims.size()) + 1;
    int64_t a = n.integer("axis", 1);
    if (a < 0) a += rank;
    return a >= 1 && a < rank - 1;
}

void softmax(Node& n) {
    const Value& x = n.input(0);
    const int64_t default_axis = n.graph.opsets.at("") >= 13 ? -1 : 1;
    if (n.op() == "Softmax" && x.kind == Kind::Scores && x.scores.transform == spec::PostTransform::Identity &&
        x.scores.groups == x.scores.columns && full_axis(n, n.integer("axis", default_axis), 2) == 1) {
        // A model's raw scores: the softmax link of the model.
        Value v;
        v.kind = Kind::Scores;
        v.scores = x.scores;
        v.scores.transform = spec::PostTransform::Softmax;
        v.key = x.key;
        v.probabilities = true;
        return n.set_output(0, v);
    }
    const Row& r = n.row_input(0);
    const size_t a = row_axis(n, n.integer("axis", default_axis), r);
    const char* f = n.op() == "LogSoftmax" ? "log_softmax" : "softmax";
    if (opset_before_13_flattens(n, r) || r.dims.size() != 1 || x.kind != Kind::Row) {
        // Another axis, or a model's output: the general path.
        if (opset_before_13_flattens(n, r)) {
            // Before opset 13, Softmax flattens the axes from `axis` on into one.
            Row flat = r;
            std::vector<int64_t> dims(r.dims.begin(), r.dims.begin() + static_cast<long>(a));
            dims.push_back(product(std::vector<int64_t>(r.dims.begin() + static_cast<long>(a), r.dims.end())));
            flat.dims = dims;
            Row out = general_softmax(n, f, flat, a);
            out.dims = r.dims;
            return n.set_output(0, row_value(n.graph, out, n.op() == "Softmax"));
        }
        return n.set_output(0, row_value(n.graph, general_softmax(n, f, r, a), n.op() == "Softmax"));
    }
    Value v;
    if (n.op() == "LogSoftmax") {
        v = x;
        v.kind = Kind::LogSoftmax;  // its row stays x: exp(log_softmax(x)) is softmax(x)
        return n.set_output(0, v);
    }
    v.row = general_softmax(n, f, r, a);
    v.has_row = true;
    n.graph.path.clear();
    v.kind = Kind::Scores;
    v.scores = as_scores(x, n.where());
    v.scores.transform = spec::PostTransform::Softmax;
    v.key = x.key;
    v.probabilities = true;
    n.set_output(0, v);
}

void arg_extreme(Node& n) {
    const Value& x = n.input(0);
    if (x.kind == Kind::Constant) n.unsupported(n.op() + " of a constant");
    if (n.integer("select_last_index", 0) != 0) n.unsupported("select_last_index = 1");
    const char* f = n.op() == "ArgMin" ? "argmin" : "argmax";
    const bool keepdims = n.integer("keepdims", 1) != 0;
    const bool matrix = x.kind == Kind::Scores || x.kind == Kind::LogSoftmax || (x.kind == Kind::Row && x.row.dims.size() == 1);
    const size_t rank = x.kind == Kind::Scores ? 2 : x.row.dims.size() + 1;
    if (!matrix || full_axis(n, n.integer("axis", 0), rank) != 1) {
        // Another axis, or the index of a reduction or a label: a number per group.
        const Row& r = n.row_input(0);
        std::vector<bool> reduced(r.dims.size(), false);
        reduced[row_axis(n, n.integer("axis", 0), r)] = true;
        return n.set_output(0, row_value(n.graph, general_reduce(n, f, r, reduced, keepdims)));
    }
    const int64_t cols = x.kind == Kind::Scores ? x.scores.columns : static_cast<int64_t>(x.row.text.size());
    if (cols < 1) n.bad("the tensor has no columns");
    Value v;
    v.kind = Kind::Label;
    v.label.of = x.key;
    v.label.argmin = n.op() == "ArgMin";
    // The value the label is taken from, for its decision columns.
    v.label.tensor = "#argmax of " + x.key + " " + n.where();
    n.graph.values.emplace(v.label.tensor, x);
    v.key = x.key;
    n.set_output(0, v);
}

// A reduction of a constant over its (full) axes, every axis when none are given.
Constant fold_reduce(const Node& n, const std::string& function, const Constant& c, const std::vector<int64_t>& axes,
                     bool keepdims) {
    if (c.is_string) n.unsupported("a reduction of strings");
    std::vector<bool> reduced(c.shape.size(), axes.empty());
    for (int64_t a : axes) reduced[static_cast<size_t>(full_axis(n, a, c.shape.size()))] = true;
    Constant out;
    std::vector<int64_t> kept;
    for (size_t d = 0; d < c.shape.size(); ++d) {
        if (!reduced[d]) kept.push_back(c.shape[d]);
        if (!reduced[d] || keepdims) out.shape.push_back(reduced[d] ? 1 : c.shape[d]);
    }
    std::vector<std::vector<double>> groups(static_cast<size_t>(product(kept)));
    std::vector<int64_t> idx(c.shape.size(), 0);
    for (size_t k = 0; k < c.values.size(); ++k) {
        int64_t o = 0;
        for (size_t d = 0; d < c.shape.size(); ++d)
            if (!reduced[d]) o = o * c.shape[d] + idx[d];
        groups[static_cast<size_t>(o)].push_back(c.values[k]);
        for (size_t d = c.shape.size(); d-- > 0;) {
            if (++idx[d] < c.shape[d]) break;
            idx[d] = 0;
        }
    }
    for (const auto& g : groups) {
        if (g.empty()) n.unsupported("a reduction of an empty constant");
        out.values.push_back(spec::apply_reduction(function, g.data(), g.size()));
    }
    return out;
}

void reduce(Node& n) {
    const Value& xv = n.input(0);
    const std::string& op = n.op();
    const int64_t since = op == "ReduceSum" ? 13 : 18;
    std::vector<int64_t> axes = axes_of(n, since);
    const bool keepdims = n.integer("keepdims", 1) != 0;
    const char* function = op == "ReduceSum" ? "reduce_sum" : op == "ReduceMean" ? "reduce_mean" : op == "ReduceMax" ? "reduce_max"
                           : op == "ReduceMin" ? "reduce_min" : op == "ReduceProd" ? "reduce_prod" : op == "ReduceL1" ? "reduce_l1"
                           : op == "ReduceL2" ? "reduce_l2" : op == "ReduceSumSquare" ? "reduce_sum_square" : "reduce_log_sum_exp";
    if (axes.empty() && n.integer("noop_with_empty_axes", 0) != 0) return n.set_output(0, xv);
    if (xv.kind == Kind::Constant) return n.set_output(0, constant_value(fold_reduce(n, function, xv.constant, axes, keepdims)));
    const Row& x = n.row_input(0);
    if (axes.empty()) n.unsupported(op + " over every axis, the batch included");
    std::vector<bool> reduced(x.dims.size(), false);
    for (int64_t a : axes) reduced[row_axis(n, a, x)] = true;
    std::vector<int64_t> dims;
    for (size_t d = 0; d < x.dims.size(); ++d)
        if (!reduced[d]) dims.push_back(x.dims[d]);
        else if (keepdims) dims.push_back(1);
    if (op == "ReduceLogSumExp" && x.dims.size() == 1 && xv.kind == Kind::Row) {
        // x - logsumexp(x) is recognised as log_softmax; anything else reads the tensor form.
        Value v;
        v.kind = Kind::LogSumExp;
        v.row = general_reduce(n, "reduce_log_sum_exp", x, reduced, keepdims);
        v.has_row = true;
        n.graph.path.clear();
        v.key = xv.key;
        return n.set_output(0, v);
    }
    if (op != "ReduceSum" && op != "ReduceMean" && op != "ReduceSumSquare")
        return n.set_output(0, row_value(n.graph, general_reduce(n, function, x, reduced, keepdims)));
    // Each output entry sums (averages) its group of input entries: one projection.
    const size_t w_in = x.text.size(), w_out = static_cast<size_t>(product(dims));
    Matrix m(w_out, std::vector<double>(w_in, 0.0));
    std::vector<int64_t> idx(x.dims.size(), 0);
    int64_t group = 1;
    for (size_t d = 0; d < x.dims.size(); ++d) if (reduced[d]) group *= x.dims[d];
    for (size_t k = 0; k < w_in; ++k) {
        size_t out = 0;
        for (size_t d = 0; d < x.dims.size(); ++d)
            if (!reduced[d]) out = out * static_cast<size_t>(x.dims[d]) + static_cast<size_t>(idx[d]);
        m[out][k] = op == "ReduceMean" ? 1.0 / static_cast<double>(group) : 1.0;
        for (size_t d = x.dims.size(); d-- > 0;) {
            if (++idx[d] < x.dims[d]) break;
            idx[d] = 0;
        }
    }
    const Row in = op == "ReduceSumSquare" ? elementwise(x, "square") : x;
    n.set_output(0, row_value(n.graph, project(in, m, std::vector<double>(w_out, 0.0), dims)));
}

// MatMul(Row [N, K], constant [K, M]) and Gemm.
void matmul(Node& n) {
    const Row& a = n.row_input(0);
    const Constant& b = n.constant_input(1);
    if (a.dims.size() != 1) n.unsupported("MatMul of a tensor of rank " + std::to_string(a.dims.size() + 1) + " (only [N, K])");
    const int64_t k = a.dims[0];
    if (b.shape.size() == 1) {
        if (b.shape[0] != k) n.bad("MatMul of [N, " + std::to_string(k) + "] by a vector of " + std::to_string(b.shape[0]));
        return n.set_output(0, row_value(n.graph, project(a, {b.values}, {0.0}, {})));
    }
    if (b.shape.size() != 2 || b.shape[0] != k)
        n.bad("MatMul of [N, " + std::to_string(k) + "] by a constant that is not [" + std::to_string(k) + ", M]");
    const size_t m = static_cast<size_t>(b.shape[1]);
    Matrix t(m, std::vector<double>(static_cast<size_t>(k)));
    for (size_t i = 0; i < static_cast<size_t>(k); ++i)
        for (size_t j = 0; j < m; ++j) t[j][i] = b.values[i * m + j];
    n.set_output(0, row_value(n.graph, project(a, t, std::vector<double>(m, 0.0), {static_cast<int64_t>(m)})));
}

void gemm(Node& n) {
    if (n.integer("transA", 0) != 0) n.unsupported("Gemm with transA = 1");
    const Row& a = n.row_input(0);
    const Constant& b = n.constant_input(1);
    const double alpha = n.number("alpha", 1.0), beta = n.number("beta", 1.0);
    const bool trans_b = n.integer("transB", 0) != 0;
    if (a.dims.size() != 1) n.bad("Gemm's A must be a matrix");
    const size_t k = static_cast<size_t>(a.dims[0]);
    if (b.shape.size() != 2 || static_cast<size_t>(b.shape[trans_b ? 1 : 0]) != k)
        n.bad("Gemm's B is not a matrix of " + std::to_string(k) + (trans_b ? " columns" : " rows"));
    const size_t m = static_cast<size_t>(b.shape[trans_b ? 0 : 1]);
    Matrix t(m, std::vector<double>(k));
    for (size_t i = 0; i < k; ++i)
        for (size_t j = 0; j < m; ++j) t[j][i] = alpha * (trans_b ? b.values[j * k + i] : b.values[i * m + j]);
    const std::vector<int64_t> dims{static_cast<int64_t>(m)};
    if (!n.has_input(2) || n.input(2).kind == Kind::Constant) {
        std::vector<double> offset(m, 0.0);
        if (n.has_input(2)) {
            offset = constant_for_row(n, n.constant_input(2), dims);
            for (double& v : offset) v *= beta;
        }
        return n.set_output(0, row_value(n.graph, project(a, t, offset, dims)));
    }
    // C computed too (skl2onnx's k-means): [A | C] times [alpha Bᵀ | beta I].
    const Row c = broadcast_to(n, n.row_input(2), dims);
    const Row both = side_by_side(n.graph, {&a, &c}, {static_cast<int64_t>(k + m)});
    for (size_t j = 0; j < m; ++j) {
        t[j].resize(k + m, 0.0);
        t[j][k + j] = beta;
    }
    n.set_output(0, row_value(n.graph, project(both, t, std::vector<double>(m, 0.0), dims)));
}

// --- shapes of Rows and of everything else ------------------------------------------------------

std::vector<int64_t> reshape_target(const Node& n, const std::vector<int64_t>& shape, const std::vector<int64_t>& have,
                                    int64_t total, bool allow_zero) {
    std::vector<int64_t> out;
    int64_t known = 1, infer = -1;
    for (size_t i = 0; i < shape.size(); ++i) {
        int64_t d = shape[i];
        if (d == 0 && allow_zero) {
            if (i >= have.size()) n.bad("Reshape copies dimension " + std::to_string(i) + ", which the input lacks");
            d = have[i];
        }
        if (d == -1) {
            if (infer >= 0) n.bad("Reshape's shape has two -1");
            infer = static_cast<int64_t>(i);
            out.push_back(-1);
            continue;
        }
        if (d < 0) n.bad("Reshape's shape has dimension " + std::to_string(d));
        if (d > total && total > 0) n.bad("Reshape's dimension " + std::to_string(d) + " exceeds the tensor's " + std::to_string(total) + " values");
        if (known > 0 && d > INT64_MAX / known) n.bad("Reshape's shape has more values than fit in 64 bits");
        known *= d;
        out.push_back(d);
    }
    if (infer >= 0) {
        if (known == 0 || total % known != 0) n.bad("Reshape cannot infer its -1 dimension");
        out[static_cast<size_t>(infer)] = total / known;
    } else if (known != total) {
        n.bad("Reshape to " + std::to_string(known) + " values of a tensor of " + std::to_string(total));
    }
    return out;
}

// The per-row dims a new full shape gives a tensor of `width` values per row (the batch first).
std::vector<int64_t> row_reshape(const Node& n, std::vector<int64_t> shape, int64_t width) {
    if (shape.empty()) n.unsupported("a Reshape to a scalar");
    const bool allow_zero = n.integer("allowzero", 0) == 0;
    if (shape[0] == 0 && allow_zero) shape[0] = -2;  // copies N
    std::vector<int64_t> rest(shape.begin() + 1, shape.end());
    if (shape[0] != -1 && shape[0] != -2)
        n.unsupported("a Reshape that does not keep the batch as the first dimension");
    for (int64_t d : rest)
        if (d == -1 && shape[0] == -1) n.unsupported("a Reshape with two unknown dimensions");
    std::vector<int64_t> have;  // dims after the batch for copies: unknown here, refuse zeros
    for (int64_t d : rest)
        if (d == 0 && allow_zero) n.unsupported("a Reshape that copies a dimension after the batch");
    return reshape_target(n, rest, have, width, false);
}

void reshape(Node& n) {
    const Value& x = n.input(0);
    const std::vector<int64_t> shape = int_list(n, n.constant_input(1), "Reshape's shape");
    switch (x.kind) {
        case Kind::Constant: {
            Constant c = x.constant;
            c.shape = reshape_target(n, shape, c.shape, c.size(), n.integer("allowzero", 0) == 0);
            return n.set_output(0, constant_value(std::move(c)));
        }
        case Kind::Row: {
            Value v = x;
            v.row.dims = row_reshape(n, shape, x.row.width());
            return n.set_output(0, v);
        }
        case Kind::Scores: case Kind::LogSoftmax: {
            const int64_t w = x.kind == Kind::Scores ? x.scores.columns : x.row.width();
            const auto dims = row_reshape(n, shape, w);
            if (dims.size() != 1) n.unsupported("a Reshape of a model's output to other than [N, k]");
            return n.set_output(0, x);
        }
        case Kind::LogSumExp: {
            Value v = x;
            v.row.dims = row_reshape(n, shape, 1);
            return n.set_output(0, v);
        }
        case Kind::Label: {
            const auto dims = row_reshape(n, shape, 1);
            (void)dims;
            return n.set_output(0, x);
        }
        case Kind::Opaque: n.unsupported("a Reshape of " + x.opaque_why);
    }
}

void flatten(Node& n) {
    const Value& x = n.input(0);
    if (x.kind == Kind::Label || x.kind == Kind::Scores) return n.set_output(0, x);
    const Row& r = n.row_input(0);
    const int64_t axis = full_axis(n, n.integer("axis", 1), r.dims.size() + 2);
    if (axis != 1) n.unsupported("Flatten at an axis other than 1");
    Value v = x;
    v.row.dims = {r.width()};
    n.set_output(0, v);
}

void squeeze_or_unsqueeze(Node& n) {
    const Value& x = n.input(0);
    const std::vector<int64_t> axes = axes_of(n, 13);
    if (x.kind == Kind::Label) return n.set_output(0, x);
    if (x.kind == Kind::Constant) {
        Constant c = x.constant;
        if (n.op() == "Unsqueeze") {
            const size_t rank = c.shape.size() + axes.size();
            std::vector<bool> added(rank, false);
            for (int64_t a : axes) added[static_cast<size_t>(full_axis(n, a, rank))] = true;
            std::vector<int64_t> s;
            size_t j = 0;
            for (size_t i = 0; i < rank; ++i) s.push_back(added[i] ? 1 : c.shape[j++]);
            c.shape = s;
        } else {
            std::vector<int64_t> s;
            for (size_t i = 0; i < c.shape.size(); ++i) {
                bool drop = axes.empty() ? c.shape[i] == 1 : false;
                for (int64_t a : axes) drop = drop || static_cast<size_t>(full_axis(n, a, c.shape.size())) == i;
                if (drop && c.shape[i] != 1) n.bad("Squeeze of a dimension of " + std::to_string(c.shape[i]));
                if (!drop) s.push_back(c.shape[i]);
            }
            c.shape = s;
        }
        return n.set_output(0, constant_value(std::move(c)));
    }
    if (x.kind != Kind::Row && x.kind != Kind::LogSumExp) n.unsupported(n.op() + " of a model's output");
    Value v = x;
    std::vector<int64_t>& dims = v.row.dims;
    if (n.op() == "Unsqueeze") {
        const size_t rank = dims.size() + 1 + axes.size();
        std::vector<bool> added(rank, false);
        for (int64_t a : axes) added[static_cast<size_t>(full_axis(n, a, rank))] = true;
        if (added[0]) n.unsupported("Unsqueeze before the batch axis");
        std::vector<int64_t> s;
        size_t j = 0;
        for (size_t i = 1; i < rank; ++i) s.push_back(added[i] ? 1 : dims[j++]);
        dims = s;
    } else {
        std::vector<int64_t> s;
        for (size_t i = 0; i < dims.size(); ++i) {
            bool drop = axes.empty() ? dims[i] == 1 : false;
            for (int64_t a : axes) {
                const int64_t f = full_axis(n, a, dims.size() + 1);
                if (f == 0) n.unsupported("Squeeze of the batch axis");
                drop = drop || static_cast<size_t>(f - 1) == i;
            }
            if (drop && dims[i] != 1) n.bad("Squeeze of a dimension of " + std::to_string(dims[i]));
            if (!drop) s.push_back(dims[i]);
        }
        dims = s;
    }
    n.set_output(0, v);
}

}  // namespace

// Concat of Rows along a per-row axis (also FeatureVectorizer's).
Value concat_rows(Node& n, const std::vector<const Row*>& parts, int64_t axis) {
    if (parts.empty()) n.bad("Concat of nothing");
    const Row& first = *parts[0];
    const size_t a = row_axis(n, axis, first);
    std::vector<int64_t> dims = first.dims;
    dims[a] = 0;
    for (const Row* p : parts) {
        if (p->dims.size() != first.dims.size()) n.bad("Concat of tensors of different ranks");
        for (size_t d = 0; d < dims.size(); ++d)
            if (d != a && p->dims[d] != first.dims[d]) n.bad("Concat of tensors of different shapes");
        dims[a] += p->dims[a];
    }
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < a; ++d) outer *= dims[d];
    for (size_t d = a + 1; d < dims.size(); ++d) inner *= dims[d];
    Row both = side_by_side(n.graph, parts, dims);
    if (outer == 1) return row_value(n.graph, both);
    // Interleave: output (o, k, i) comes from the part holding k along the axis.
    std::vector<int32_t> columns;
    for (int64_t o = 0; o < outer; ++o) {
        int64_t offset = 0;
        for (const Row* p : parts) {
            const int64_t len = p->dims[a];
            for (int64_t k = 0; k < len; ++k)
                for (int64_t i = 0; i < inner; ++i) columns.push_back(static_cast<int32_t>(offset + (o * len + k) * inner + i));
            offset += p->width();
        }
    }
    return row_value(n.graph, gather(both, columns, dims));
}

// Gather of a Row's entries along a per-row axis by constant indices.
Value gather_row(Node& n, const Row& x, const Constant& indices, int64_t axis) {
    const size_t a = row_axis(n, axis, x);
    const int64_t len = x.dims[a];
    std::vector<int64_t> idx = int_list(n, indices, "indices");
    for (int64_t& i : idx) {
        if (i < -len || i >= len) n.bad("index " + std::to_string(i) + " is out of range for a dimension of " + std::to_string(len));
        if (i < 0) i += len;
    }
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < a; ++d) outer *= x.dims[d];
    for (size_t d = a + 1; d < x.dims.size(); ++d) inner *= x.dims[d];
    std::vector<int32_t> columns;
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t i : idx)
            for (int64_t k = 0; k < inner; ++k) columns.push_back(static_cast<int32_t>((o * len + i) * inner + k));
    std::vector<int64_t> dims(x.dims.begin(), x.dims.begin() + static_cast<long>(a));
    dims.insert(dims.end(), indices.shape.begin(), indices.shape.end());
    dims.insert(dims.end(), x.dims.begin() + static_cast<long>(a) + 1, x.dims.end());
    return row_value(n.graph, gather(x, columns, dims));
}

// A label mapped through a constant list of classes (ArrayFeatureExtractor / Gather of classes).
// Decision column j takes class index label.classes[j] (j itself when empty); string classes
// become the label's text names, and its classes the column indices.
Value label_classes(Node& n, const Constant& classes, const Value& label) {
    if (classes.shape.size() > 1) n.bad("the classes must be a vector");
    if (!label.label.names.empty()) n.unsupported("a text label mapped through more classes");
    Value v = label;
    const size_t k = classes.is_string ? classes.strings.size() : classes.values.size();
    std::vector<size_t> index;
    if (label.label.classes.empty()) {
        for (size_t j = 0; j < k; ++j) index.push_back(j);
    } else {
        for (double c : label.label.classes) {
            if (c < 0 || c >= static_cast<double>(k) || c != std::floor(c))
                n.bad("class index " + std::to_string(c) + " is out of range for " + std::to_string(k) + " classes");
            index.push_back(static_cast<size_t>(c));
        }
    }
    v.label.classes.clear();
    for (size_t j = 0; j < index.size(); ++j) {
        if (classes.is_string) {
            v.label.names.push_back(classes.strings[index[j]]);
            v.label.classes.push_back(static_cast<double>(j));
        } else {
            v.label.classes.push_back(classes.values[index[j]]);
        }
    }
    return v;
}

namespace {

void concat(Node& n) {
    std::vector<const Row*> parts;
    bool constants = true;
    for (size_t i = 0; i < n.inputs(); ++i) constants = constants && n.input(i).kind == Kind::Constant;
    if (constants) {
        // Shape arithmetic (Shape → Concat → Reshape) along axis 0 of vectors.
        Constant c;
        c.is_integer = true;
        for (size_t i = 0; i < n.inputs(); ++i) {
            const Constant& x = n.constant_input(i);
            if (x.shape.size() != 1 || x.is_string) n.unsupported("Concat of constants other than vectors");
            c.is_integer = c.is_integer && x.is_integer;
            c.values.insert(c.values.end(), x.values.begin(), x.values.end());
        }
        c.shape = {static_cast<int64_t>(c.values.size())};
        return n.set_output(0, constant_value(std::move(c)));
    }
    for (size_t i = 0; i < n.inputs(); ++i) parts.push_back(&n.row_input(i));
    n.set_output(0, concat_rows(n, parts, n.integer("axis")));
}

void gather_op(Node& n) {
    const Value& data = n.input(0);
    const Value& indices = n.input(1);
    const int64_t axis = n.integer("axis", 0);
    if (data.kind == Kind::Constant && indices.kind == Kind::Label) {
        if (axis != 0) n.unsupported("Gather of classes along an axis other than 0");
        return n.set_output(0, label_classes(n, data.constant, indices));
    }
    if (data.kind == Kind::Constant && indices.kind == Kind::Constant) {
        const Constant& d = data.constant;
        if (d.shape.size() != 1 || axis != 0) n.unsupported("Gather of constants other than a vector");
        Constant c;
        c.is_integer = d.is_integer;
        c.is_string = d.is_string;
        c.shape = indices.constant.shape;
        const int64_t len = d.shape[0];
        for (int64_t i : int_list(n, indices.constant, "indices")) {
            if (i < -len || i >= len) n.bad("index " + std::to_string(i) + " is out of range for " + std::to_string(len) + " values");
            const size_t j = static_cast<size_t>(i < 0 ? i + len : i);
            if (d.is_string) c.strings.push_back(d.strings[j]);
            else c.values.push_back(d.values[j]);
        }
        return n.set_output(0, constant_value(std::move(c)));
    }
    n.set_output(0, gather_row(n, n.row_input(0), n.constant_input(1), axis));
}

void cast(Node& n) {
    const Value& x = n.input(0);
    const int64_t to = n.integer("to");
    const bool real = to == 1 || to == 11 || to == 10 || to == 16;  // float, double, half, bfloat16
    if (x.kind == Kind::Constant) {
        Constant c = x.constant;
        if (c.is_string) n.unsupported("Cast of a string constant");
        if (!real) {
            for (double& v : c.values) v = std::trunc(v);
            c.is_integer = true;
        } else {
            c.is_integer = false;
            if (to == 1) for (double& v : c.values) v = static_cast<float>(v);
        }
        return n.set_output(0, constant_value(std::move(c)));
    }
    if (x.kind == Kind::Label || x.kind == Kind::Opaque) return n.set_output(0, x);  // class values as any type
    if (real) return n.set_output(0, x);
    if (to == 8) n.unsupported("Cast of a computed tensor to string");
    const Row& r = n.row_input(0);
    if (to == 9) {  // bool: nonzero (NaN included) is true
        const Value zero = constant_value(Constant{{}, {0.0}, {}, false, false});
        return n.set_output(0, general_entrywise(n, "xor", {&x, &zero}));
    }
    // An integer type: toward zero, as C casts (NaN stays NaN, where ONNX leaves it undefined).
    n.set_output(0, row_value(n.graph, elementwise(r, "trunc")));
}

void where(Node& n) {
    const Value& c = n.input(0);
    const Value& a = n.input(1);
    const Value& b = n.input(2);
    // Constants are folded; a computed condition, or a model's output or a constant picked from,
    // takes the general path.
    if (c.kind != Kind::Constant || a.kind != Kind::Row || b.kind != Kind::Row)
        return n.set_output(0, general_entrywise(n, "where", {&c, &a, &b}));
    // A constant condition picks each entry from one of two Rows: a gather over both.
    const Row& x = n.row_input(1);
    const Row& y = n.row_input(2);
    std::vector<int64_t> cdims = c.constant.shape;
    if (cdims.size() == x.dims.size() + 1) cdims.erase(cdims.begin());
    const std::vector<int64_t> dims = broadcast_dims(n, broadcast_dims(n, x.dims, y.dims), cdims);
    const Row xs = broadcast_to(n, x, dims), ys = broadcast_to(n, y, dims);
    const auto cv = constant_for_row(n, c.constant, dims);
    const int32_t w = static_cast<int32_t>(cv.size());
    const Row both = side_by_side(n.graph, {&xs, &ys}, {2 * static_cast<int64_t>(w)});
    std::vector<int32_t> columns;
    for (int32_t i = 0; i < w; ++i) columns.push_back(cv[static_cast<size_t>(i)] != 0 ? i : w + i);
    n.set_output(0, row_value(n.graph, gather(both, columns, dims)));
}

void clip(Node& n) {
    double lo = -INFINITY, hi = INFINITY;
    if (n.graph.opsets.at("") >= 11) {
        auto scalar = [&](size_t i) {
            const Constant& c = n.constant_input(i);
            if (c.values.size() != 1) n.bad("Clip's bound must be a scalar");
            return c.values[0];
        };
        if (n.has_input(1)) lo = scalar(1);
        if (n.has_input(2)) hi = scalar(2);
    } else {
        lo = n.number("min", -INFINITY);
        hi = n.number("max", INFINITY);
    }
    const Value& x = n.input(0);
    if (x.kind == Kind::Constant) {
        Constant c = x.constant;
        for (double& v : c.values) v = std::isnan(v) ? v : std::min(std::max(v, lo), hi);
        return n.set_output(0, constant_value(std::move(c)));
    }
    const Row& r = n.row_input(0);
    if (lo == 0 && hi == INFINITY) return n.set_output(0, row_value(n.graph, elementwise(r, "relu")));
    if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi)
        n.unsupported("Clip without finite bounds min <= max (other than min = 0 alone, a Relu)");
    n.set_output(0, row_value(n.graph, then(r, make_step("clip", {{"min", lo}, {"max", hi}}), r.dims)));
}

void constant(Node& n) {
    if (n.has("value")) return n.set_output(0, constant_value(n.tensor("value")));
    Constant c;
    if (n.has("value_float")) c.values = {n.number("value_float")};
    else if (n.has("value_floats")) { c.values = n.numbers("value_floats"); c.shape = {static_cast<int64_t>(c.values.size())}; }
    else if (n.has("value_int")) { c.values = {static_cast<double>(n.integer("value_int"))}; c.is_integer = true; }
    else if (n.has("value_ints")) {
        for (int64_t v : n.integers("value_ints")) c.values.push_back(static_cast<double>(v));
        c.shape = {static_cast<int64_t>(c.values.size())};
        c.is_integer = true;
    } else n.unsupported("a Constant without a value, value_float(s) or value_int(s)");
    n.set_output(0, constant_value(std::move(c)));
}

}  // namespace

void add_tensor_ops(std::map<std::string, Handler>& t) {
    for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow"}) t[op] = binary;
    t["Exp"] = [](Node& n) { unary(n, "exp"); };
    t["Log"] = [](Node& n) { unary(n, "log"); };
    t["Sqrt"] = [](Node& n) { unary(n, "sqrt"); };
    t["Abs"] = [](Node& n) { unary(n, "absolute"); };
    t["Relu"] = [](Node& n) { unary(n, "relu"); };
    t["Sigmoid"] = [](Node& n) { unary(n, "expit"); };
    t["Tanh"] = [](Node& n) { unary(n, "tanh"); };
    t["Reciprocal"] = [](Node& n) { unary(n, "reciprocal"); };
    t["Floor"] = [](Node& n) { unary(n, "floor"); };
    t["Ceil"] = [](Node& n) { unary(n, "ceil"); };
    t["Round"] = [](Node& n) { unary(n, "rint"); };  // half to even, as ONNX rounds
    t["Sign"] = [](Node& n) { unary(n, "sign"); };
    t["Erf"] = [](Node& n) { unary(n, "erf"); };
    t["LeakyRelu"] = leaky_relu;
    t["Greater"] = compare;
    t["Less"] = compare;
    t["Neg"] = neg;
    t["Softmax"] = softmax;
    t["LogSoftmax"] = softmax;
    t["ArgMax"] = arg_extreme;
    t["ArgMin"] = arg_extreme;
    for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceLogSumExp",
                           "ReduceSumSquare", "ReduceL1", "ReduceL2"})
        t[op] = reduce;
    t["MatMul"] = matmul;
    t["Gemm"] = gemm;
    t["Reshape"] = reshape;
    t["Flatten"] = flatten;
    t["Squeeze"] = squeeze_or_unsqueeze;
    t["Unsqueeze"] = squeeze_or_unsqueeze;
    t["Concat"] = concat;
    t["Gather"] = gather_op;
    t["Cast"] = cast;
    t["Identity"] = [](Node& n) { n.set_output(0, n.input(0)); };
    t["Where"] = where;
    t["Clip"] = clip;
    t["Constant"] = constant;
}

}  // namespace pg_predict::importers::onnx_import
