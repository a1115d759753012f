#!/usr/bin/python3
"""Conformance: ONNX operators one by one, in graphs built by hand with onnx.helper, against the
reference evaluator written from the ONNX specification (onnx_reference.py, numpy, in the
element type the graph declares).

Each graph reads X, a float tensor [N, 4] (the columns a, b, c, d of one table: 200 rows of
normal and uniform numbers, and halves for Round), and writes Y: [N, 1] is read with predict(),
wider with predict_proba(). Every value must equal the reference within 1e-6 relative (absolute
for values below 1), batched and one row at a time. The operators are each one alone, with
broadcasting of constants of every rank, and small combinations as converters write them
(a standard scaler then a linear model and a sigmoid, a softmax over a Gemm); then every
operator of the general path (products and quotients of computed tensors, comparisons per
column, logic, reductions, softmax and argmax mid-graph, shape operators), graphs in the shape
skl2onnx's converters write for fitted scikit-learn models, and explain_model's import paths.

Run: /usr/bin/python3 regress/conformance/test_onnx_ops.py [-k name] [--list]
"""

import contextlib
import json

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from harness import add_test, assert_close, main, to_floats
from onnx_reference import evaluate
from pgcluster import Cluster

N_ROWS = 200
COLUMNS = ["a", "b", "c", "d"]


def data():
    rng = np.random.default_rng(7)
    return np.stack([rng.normal(0, 2, N_ROWS), rng.integers(-6, 7, N_ROWS) + 0.5,
                     rng.normal(0, 0.5, N_ROWS), rng.uniform(-3, 3, N_ROWS)], axis=1).astype(np.float32)


class Env:
    def __init__(self, pg):
        self.conn = pg.connect()
        self.conn.autocommit = True
        self.X = data()
        self.conn.execute("CREATE EXTENSION pg_predict")
        self.conn.execute("CREATE TABLE x (id int PRIMARY KEY, a real, b real, c real, d real)")
        with self.conn.cursor().copy("COPY x FROM STDIN") as cp:
            for i, row in enumerate(self.X):
                cp.write_row([i + 1] + [float(v) for v in row])


@contextlib.contextmanager
def make_env():
    with Cluster() as pg:
        env = Env(pg)
        try:
            yield env
        finally:
            env.conn.close()


def const(name, values, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(values, dtype=dtype), name)


def graph(nodes, width, initializers=(), elem=TensorProto.FLOAT):
    g = helper.make_graph(nodes, "ops", [helper.make_tensor_value_info("X", elem, [None, 4])],
                          [helper.make_tensor_value_info("Y", elem, [None, width])], list(initializers))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)])


def node(op, inputs, output="Y", **attrs):
    return helper.make_node(op, inputs, [output], **attrs)


def check(env, name, model):
    """The model scored on every row, batched and per row, against the reference."""
    onnx.checker.check_model(model)
    double = model.graph.input[0].type.tensor_type.elem_type == TensorProto.DOUBLE
    want = evaluate(model, {"X": env.X.astype(np.float64) if double else env.X})["Y"].astype(np.float64)
    width = want.shape[1]
    env.conn.execute("SELECT drop_model(name) FROM models WHERE name = %s", [name])
    env.conn.execute("SELECT create_model(%s, %s::bytea, 'onnx', %s::jsonb)",
                     [name, model.SerializeToString(), json.dumps({"features": COLUMNS})])
    fn = "predict" if width == 1 else "predict_proba"
    for batching in ("on", "off"):
        with env.conn.transaction():
            env.conn.execute(f"SET LOCAL pg_predict.enable_batching = {batching}")
            rows = env.conn.execute(f"SELECT {fn}(%s, x) FROM x ORDER BY id", [name]).fetchall()
        got = to_floats([r[0] for r in rows], width if width > 1 else None)
        assert_close(f"{name} (batching {batching})", np.asarray(got).reshape(want.shape), want,
                     atol=1e-6, rtol=1e-6)
    env.conn.execute("SELECT drop_model(%s)", [name])


def case(name, nodes, width=4, initializers=()):
    add_test(f"onnx_op[{name}]", lambda env: check(env, name, graph(nodes, width, initializers)))


# --- each elementwise operator alone ----------------------------------------------------------
for _op in ("Abs", "Neg", "Reciprocal", "Floor", "Ceil", "Round", "Sign", "Erf", "Tanh", "Sigmoid", "Relu",
            "Identity"):
    case(_op.lower(), [node(_op, ["X"])])
case("exp", [node("Mul", ["X", "k"], "s"), node("Exp", ["s"])], initializers=[const("k", 0.5)])
case("log_of_positive", [node("Abs", ["X"], "p"), node("Add", ["p", "one"], "q"), node("Log", ["q"])],
     initializers=[const("one", 1.0)])
case("sqrt_of_positive", [node("Abs", ["X"], "p"), node("Sqrt", ["p"])])

# --- arithmetic with constants, broadcast from every rank -------------------------------------
for _op in ("Add", "Sub", "Mul", "Div"):
    for _shape, _values in (("scalar", 1.5), ("row", [0.5, -2.0, 3.0, 0.25]), ("matrix", [[0.5, -2.0, 3.0, 0.25]])):
        case(f"{_op.lower()}_{_shape}", [node(_op, ["X", "k"])], initializers=[const("k", _values)])
case("sub_constant_first", [node("Sub", ["k", "X"])], initializers=[const("k", [1.0, 2.0, 3.0, 4.0])])
case("pow_square", [node("Pow", ["X", "k"])], initializers=[const("k", 2.0)])
case("add_two_computed", [node("Abs", ["X"], "p"), node("Add", ["X", "p"])])
case("sub_two_computed", [node("Tanh", ["X"], "p"), node("Sub", ["X", "p"])])
case("clip", [node("Clip", ["X", "lo", "hi"])], initializers=[const("lo", -1.0), const("hi", 2.0)])
case("leaky_relu", [node("LeakyRelu", ["X"], alpha=0.2)])
case("leaky_relu_default_alpha", [node("LeakyRelu", ["X"])])
# Comparisons with one number, cast to float (BernoulliNB's binarize, as skl2onnx writes it).
for _op in ("Greater", "Less"):
    case(f"{_op.lower()}_number", [node(_op, ["X", "k"], "m"), node("Cast", ["m"], to=TensorProto.FLOAT)],
         initializers=[const("k", 0.5)])
    case(f"{_op.lower()}_number_first", [node(_op, ["k", "X"], "m"), node("Cast", ["m"], to=TensorProto.FLOAT)],
         initializers=[const("k", -0.5)])
    case(f"{_op.lower()}_on_a_half", [node(_op, ["X", "k"], "m"), node("Cast", ["m"], to=TensorProto.FLOAT)],
         initializers=[const("k", 1.5)])  # column b holds 1.5 exactly: neither greater nor less

# --- linear algebra, reductions, shapes -------------------------------------------------------
_W = [[0.5, -1.0, 0.25], [2.0, 0.0, -0.5], [-1.5, 1.0, 0.75], [0.1, 0.2, 0.3]]
case("matmul", [node("MatMul", ["X", "W"])], 3, [const("W", _W)])
case("gemm_trans_b_bias", [node("Gemm", ["X", "Wt", "bias"], transB=1, alpha=0.5, beta=2.0)], 3,
     [const("Wt", np.array(_W).T), const("bias", [1.0, -1.0, 0.5])])
# At opset 15 ReduceSum takes its axes as an input, the others as an attribute.
case("reducesum", [node("ReduceSum", ["X", "axes"], keepdims=1)], 1, [const("axes", [1], np.int64)])
for _op in ("ReduceMean", "ReduceSumSquare"):
    case(_op.lower(), [node(_op, ["X"], axes=[1], keepdims=1)], 1)
case("concat", [node("Abs", ["X"], "p"), node("Concat", ["X", "p"], axis=1)], 8)
case("flatten", [node("Flatten", ["X"], axis=1)])
case("reshape", [node("Reshape", ["X", "shape"])], initializers=[const("shape", [-1, 4], np.int64)])
case("cast_double_and_back", [node("Cast", ["X"], "d", to=TensorProto.DOUBLE), node("Cast", ["d"], to=TensorProto.FLOAT)])

# --- the general path: what no specific step computes ------------------------------------------
# Entry by entry, of two computed tensors or a tensor and constants of any shape.
case("mul_two_computed", [node("Tanh", ["X"], "p"), node("Mul", ["X", "p"])])
case("div_two_computed", [node("Abs", ["X"], "p"), node("Add", ["p", "one"], "q"), node("Div", ["X", "q"])],
     initializers=[const("one", 1.0)])
case("div_by_row_sum", [node("Abs", ["X"], "p"), node("ReduceSum", ["p", "axes"], "s", keepdims=1),
                        node("Div", ["p", "s"])], initializers=[const("axes", [1], np.int64)])
case("pow_two_computed", [node("Abs", ["X"], "p"), node("Add", ["p", "one"], "q"), node("Tanh", ["X"], "e"),
                          node("Pow", ["q", "e"])], initializers=[const("one", 1.0)])
case("pow_cube", [node("Pow", ["X", "k"])], initializers=[const("k", 3.0)])
case("pow_constant_base", [node("Pow", ["k", "X"])], initializers=[const("k", 1.5)])
case("pow_per_column", [node("Abs", ["X"], "p"), node("Pow", ["p", "k"])], initializers=[const("k", [0.5, 1.0, 2.0, 3.0])])
for _op in ("Max", "Min", "Sum", "Mean"):
    case(f"{_op.lower()}_of_three", [node("Tanh", ["X"], "p"), node(_op, ["X", "p", "k"])],
         initializers=[const("k", [0.5, -0.5, 0.0, 1.0])])
for _op in ("Equal", "LessOrEqual", "GreaterOrEqual", "Greater", "Less"):
    case(f"{_op.lower()}_per_column", [node(_op, ["X", "k"], "m"), node("Cast", ["m"], to=TensorProto.FLOAT)],
         initializers=[const("k", [0.0, 1.5, 0.1, -1.0])])
case("greater_two_computed", [node("Tanh", ["X"], "p"), node("Greater", ["X", "p"], "m"),
                              node("Cast", ["m"], to=TensorProto.FLOAT)])
for _op in ("And", "Or", "Xor"):
    case(_op.lower(), [node("Greater", ["X", "zero"], "p"), node("Less", ["X", "one"], "q"), node(_op, ["p", "q"], "m"),
                       node("Cast", ["m"], to=TensorProto.FLOAT)], initializers=[const("zero", 0.0), const("one", 1.0)])
case("not", [node("Greater", ["X", "zero"], "p"), node("Not", ["p"], "m"), node("Cast", ["m"], to=TensorProto.FLOAT)],
     initializers=[const("zero", 0.0)])
case("cast_to_bool_and_back", [node("Floor", ["X"], "f"), node("Cast", ["f"], "m", to=TensorProto.BOOL),
                               node("Cast", ["m"], to=TensorProto.FLOAT)])
case("cast_to_int_and_back", [node("Cast", ["X"], "m", to=TensorProto.INT64), node("Cast", ["m"], to=TensorProto.FLOAT)])
case("isnan_isinf", [node("Div", ["X", "zero"], "q"), node("IsInf", ["q"], "i"), node("IsNaN", ["q"], "n"),
                     node("Or", ["i", "n"], "m"), node("Cast", ["m"], to=TensorProto.FLOAT)], initializers=[const("zero", 0.0)])
case("isinf_positive_only", [node("Div", ["X", "zero"], "q"), node("IsInf", ["q"], "i", detect_negative=0),
                             node("Cast", ["i"], to=TensorProto.FLOAT)], initializers=[const("zero", 0.0)])
case("where_computed_condition", [node("Greater", ["X", "zero"], "c"), node("Tanh", ["X"], "t"),
                                  node("Where", ["c", "X", "t"])], initializers=[const("zero", 0.0)])
case("where_computed_and_constant", [node("Less", ["X", "zero"], "c"), node("Where", ["c", "k", "X"])],
     initializers=[const("zero", 0.0), const("k", [9.0, 8.0, 7.0, 6.0])])
# Group by group.
for _op in ("ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSumExp"):
    case(_op.lower(), [node(_op, ["X"], axes=[1], keepdims=1)], 1)
case("reducemax_inner_axis", [node("Reshape", ["X", "shape"], "r"), node("ReduceMax", ["r"], axes=[2], keepdims=0)],
     2, [const("shape", [-1, 2, 2], np.int64)])
case("reducemin_middle_axis", [node("Reshape", ["X", "shape"], "r"), node("ReduceMin", ["r"], axes=[1], keepdims=0)],
     2, [const("shape", [-1, 2, 2], np.int64)])
case("softmax_mid_graph", [node("Softmax", ["X"], "p", axis=1), node("Mul", ["p", "X"])])
case("log_softmax_mid_graph", [node("LogSoftmax", ["X"], "p", axis=1), node("Add", ["p", "X"])])
case("softmax_inner_axis", [node("Reshape", ["X", "shape"], "r"), node("Softmax", ["r"], "p", axis=1),
                            node("Reshape", ["p", "back"])],
     initializers=[const("shape", [-1, 2, 2], np.int64), const("back", [-1, 4], np.int64)])
case("argmax_as_number", [node("ArgMax", ["X"], "i", axis=1, keepdims=1), node("Cast", ["i"], to=TensorProto.FLOAT)], 1)
case("argmin_inner_axis", [node("Reshape", ["X", "shape"], "r"), node("ArgMin", ["r"], "i", axis=2, keepdims=0),
                           node("Cast", ["i"], to=TensorProto.FLOAT)], 2, [const("shape", [-1, 2, 2], np.int64)])
# Shapes.
case("transpose", [node("Reshape", ["X", "shape"], "r"), node("Transpose", ["r"], "t", perm=[0, 2, 1]),
                   node("Reshape", ["t", "back"])],
     initializers=[const("shape", [-1, 2, 2], np.int64), const("back", [-1, 4], np.int64)])
case("slice", [node("Slice", ["X", "starts", "ends", "axes"])], 2,
     [const("starts", [1], np.int64), const("ends", [3], np.int64), const("axes", [1], np.int64)])
case("slice_reversed", [node("Slice", ["X", "starts", "ends", "axes", "steps"])], 4,
     [const("starts", [-1], np.int64), const("ends", [-100], np.int64), const("axes", [1], np.int64),
      const("steps", [-1], np.int64)])
case("tile", [node("Tile", ["X", "repeats"])], 8, [const("repeats", [1, 2], np.int64)])
case("expand", [node("ReduceSum", ["X", "axes"], "s", keepdims=1), node("Expand", ["s", "shape"])], 3,
     [const("axes", [1], np.int64), const("shape", [1, 3], np.int64)])
case("shape_gather_reshape", [node("Reshape", ["X", "shape"], "r"), node("Shape", ["r"], "s"),
                              node("Gather", ["s", "zero"], "n", axis=0), node("Unsqueeze", ["n", "axes"], "n1"),
                              node("Concat", ["n1", "four"], "target", axis=0), node("Reshape", ["r", "target"])],
     initializers=[const("shape", [-1, 2, 2], np.int64), const("zero", 0, np.int64), const("axes", [0], np.int64),
                   const("four", [4], np.int64)])
case("topk_largest", [helper.make_node("TopK", ["X", "k"], ["v", "i"], axis=1),
                      node("Cast", ["i"], "fi", to=TensorProto.FLOAT), node("Concat", ["v", "fi"], axis=1)],
     4, [const("k", [2], np.int64)])
case("topk_smallest_inner_axis", [node("Reshape", ["X", "shape"], "r"),
                                  helper.make_node("TopK", ["r", "k"], ["v", "i"], axis=2, largest=0),
                                  node("Cast", ["i"], "fi", to=TensorProto.FLOAT), node("Concat", ["v", "fi"], "c", axis=2),
                                  node("Reshape", ["c", "back"])],
     4, [const("shape", [-1, 2, 2], np.int64), const("k", [1], np.int64), const("back", [-1, 4], np.int64)])
case("topk_ties", [node("Floor", ["X"], "f"), node("Mul", ["f", "zero"], "z"),
                   helper.make_node("TopK", ["z", "k"], ["v", "i"], axis=1), node("Cast", ["i"], "fi", to=TensorProto.FLOAT),
                   node("Concat", ["v", "fi"], axis=1)], 6, [const("k", [3], np.int64), const("zero", 0.0)])
case("constant_of_shape", [node("ConstantOfShape", ["shape"], "c", value=numpy_helper.from_array(np.array([0.25], np.float32))),
                           node("Add", ["X", "c"])], initializers=[const("shape", [4], np.int64)])
# GatherElements by computed indices, as AdaBoostRegressor's weighted median does: the values
# in the order TopK sorts them, an index out of range (a NaN from the reference) never reached.
case("gather_elements_sorted", [helper.make_node("TopK", ["X", "k"], ["v", "i"], axis=1, largest=0),
                                helper.make_node("GatherElements", ["X", "i"], ["Y"], axis=1)],
     4, [const("k", [4], np.int64)])
case("gather_elements_fewer_inner_axis", [node("Reshape", ["X", "shape"], "r"), node("Abs", ["r"], "a"),
                                          helper.make_node("ArgMax", ["a"], ["i"], axis=2, keepdims=1),
                                          helper.make_node("GatherElements", ["r", "i"], ["g"], axis=2),
                                          node("Reshape", ["g", "back"])],
     2, [const("shape", [-1, 2, 2], np.int64), const("back", [-1, 2], np.int64)])
case("gather_elements_negative_indices", [node("Floor", ["X"], "f"), node("Mul", ["f", "zero"], "z"),
                                          node("Sub", ["z", "one"], "minus_one"), node("Cast", ["minus_one"], "i", to=TensorProto.INT64),
                                          helper.make_node("GatherElements", ["X", "i"], ["Y"], axis=1)],
     4, [const("zero", 0.0), const("one", 1.0)])
for _ex in (0, 1):
    for _rev in (0, 1):
        case(f"cum_sum_exclusive{_ex}_reverse{_rev}", [node("CumSum", ["X", "axis"], exclusive=_ex, reverse=_rev)],
             initializers=[const("axis", 1, np.int64)])
case("cum_sum_inner_axis", [node("Reshape", ["X", "shape"], "r"), node("CumSum", ["r", "axis"], "c"),
                            node("Reshape", ["c", "back"])],
     initializers=[const("shape", [-1, 2, 2], np.int64), const("axis", -1, np.int64), const("back", [-1, 4], np.int64)])
# Einsum of per-row contractions: a product by constant weights, a row's dot product with a
# computed tensor, a batched matrix product, a transpose.
case("einsum_by_constant", [helper.make_node("Einsum", ["X", "W"], ["Y"], equation="bi,ij->bj")], 3, [const("W", _W)])
case("einsum_row_dot", [node("Abs", ["X"], "a"), helper.make_node("Einsum", ["X", "a"], ["d"], equation="bi,bi->b"),
                        node("Unsqueeze", ["d", "axes"])], 1, [const("axes", [1], np.int64)])
case("einsum_batched_matmul", [node("Reshape", ["X", "shape"], "r"), node("Tanh", ["r"], "t"),
                               helper.make_node("Einsum", ["r", "t"], ["m"], equation="bij,bjk->bik"),
                               node("Reshape", ["m", "back"])],
     initializers=[const("shape", [-1, 2, 2], np.int64), const("back", [-1, 4], np.int64)])
case("einsum_transpose", [node("Reshape", ["X", "shape"], "r"), helper.make_node("Einsum", ["r"], ["m"], equation="bij->bji"),
                          node("Reshape", ["m", "back"])],
     initializers=[const("shape", [-1, 2, 2], np.int64), const("back", [-1, 4], np.int64)])
# The same operators on a graph declared in double: input, constants and output float64.
def case_double(name, nodes, width=4, initializers=()):
    add_test(f"onnx_op[{name}_double]", lambda env: check(env, name + "_double",
                                                           graph(nodes, width, initializers, TensorProto.DOUBLE)))


def dconst(name, values, dtype=np.float64):
    return const(name, values, dtype)


case_double("add_row", [node("Add", ["X", "k"])], initializers=[dconst("k", [0.5, -2.0, 3.0, 0.25])])
case_double("mul_two_computed", [node("Tanh", ["X"], "t"), node("Mul", ["X", "t"])])
case_double("div_by_row_sum", [node("Abs", ["X"], "a"), node("ReduceSum", ["a", "axes"], "s", keepdims=1),
                               node("Div", ["a", "s"])], initializers=[const("axes", [1], np.int64)])
case_double("softmax", [node("Softmax", ["X"], axis=1)])
case_double("reduce_max_keepdims", [node("ReduceMax", ["X"], keepdims=1, axes=[1])], 1)
case_double("less_cast_where", [node("Less", ["X", "k"], "c"), node("Where", ["c", "X", "k"])],
            initializers=[dconst("k", [0.0, 1.0, -1.0, 0.5])])
case_double("matmul_exp", [node("MatMul", ["X", "W"], "m"), node("Exp", ["m"])], 3, [dconst("W", np.asarray(_W) * 0.1)])
case_double("topk_cumsum", [helper.make_node("TopK", ["X", "k"], ["v", "i"], axis=1), node("CumSum", ["v", "axis"])],
            initializers=[const("k", [4], np.int64), const("axis", 1, np.int64)])

# --- as converters write them ------------------------------------------------------------------
case("scaler_linear_sigmoid",
     [node("Sub", ["X", "mean"], "c"), node("Div", ["c", "scale"], "z"), node("MatMul", ["z", "coef"], "m"),
      node("Add", ["m", "intercept"], "l"), node("Sigmoid", ["l"])], 1,
     [const("mean", [0.1, 0.5, 0.0, -0.2]), const("scale", [2.0, 3.5, 0.5, 1.7]),
      const("coef", [[0.8], [-0.3], [1.2], [0.05]]), const("intercept", [-0.4])])
case("bernoulli_nb_like",
     [node("Greater", ["X", "binarize"], "bits"), node("Cast", ["bits"], "f", to=TensorProto.FLOAT),
      node("MatMul", ["f", "log_prob"], "joint"), node("Add", ["joint", "prior"], "scores"),
      node("Softmax", ["scores"], axis=1)], 2,
     [const("binarize", 0.0), const("log_prob", [[-0.2, -1.6], [-0.9, -0.5], [-1.2, -0.3], [-0.7, -0.7]]),
      const("prior", [-0.6, -0.8])])
case("gemm_softmax", [node("Gemm", ["X", "W", "bias"], "l"), node("Softmax", ["l"], axis=1)], 3,
     [const("W", _W), const("bias", [0.0, 0.5, -0.5])])


# --- graphs in the shape skl2onnx 1.13 writes (its converters, read from its source), for fitted
# scikit-learn models: scored against the reference and against scikit-learn itself -----------
def _target():
    x = data().astype(np.float64)
    score = x[:, 0] + 0.8 * x[:, 1] - 1.5 * x[:, 3]
    return x, np.digitize(score, [-2.0, 2.0])  # three classes


def ml_node(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs, domain="ai.onnx.ml", **attrs)


def ml_graph(nodes, outputs, initializers=()):
    g = helper.make_graph(nodes, "converted", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, 4])],
                          outputs, list(initializers))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 15), helper.make_opsetid("ai.onnx.ml", 1)])


def check_converted(env, name, model, output, sklearn_values, sklearn_rtol):
    """Scored as `output` (label or probabilities): equal to the reference within 1e-5 and to
    scikit-learn within `sklearn_rtol` (the graph holds its constants as float32). Not 1e-6 as
    the operators alone: pg_predict's steps compute in float64, and a float32 exp near its
    overflow (SGD's scores of a far row) parts the two by 2.6e-6."""
    onnx.checker.check_model(model)
    want = np.asarray(evaluate(model, {"X": env.X})[output], np.float64)
    env.conn.execute("SELECT drop_model(name) FROM models WHERE name = %s", [name])
    env.conn.execute("SELECT create_model(%s, %s::bytea, 'onnx', %s::jsonb)",
                     [name, model.SerializeToString(), json.dumps({"features": COLUMNS})])
    fn = {"label": "predict", "probabilities": "predict_proba", "variable": "predict"}[output]
    for batching in ("on", "off"):
        with env.conn.transaction():
            env.conn.execute(f"SET LOCAL pg_predict.enable_batching = {batching}")
            rows = env.conn.execute(f"SELECT {fn}(%s, x) FROM x ORDER BY id", [name]).fetchall()
        width = want.shape[1] if want.ndim == 2 and want.shape[1] > 1 else None
        got = np.asarray(to_floats([r[0] for r in rows], width)).reshape(want.shape)
        assert_close(f"{name} (batching {batching}) against the reference", got, want, atol=1e-5, rtol=1e-5)
        assert_close(f"{name} (batching {batching}) against scikit-learn", got.reshape(-1),
                     np.asarray(sklearn_values, np.float64).reshape(-1), atol=sklearn_rtol, rtol=sklearn_rtol)
    env.conn.execute("SELECT drop_model(%s)", [name])


def sgd_log_loss():
    """SGDClassifier(loss='log_loss'), 3 classes: sgd_classifier.py's _predict_proba_log,
    _normalise_proba and _handle_zeros (Reciprocal, ReduceSum, Cast to bool, Not, Div of two
    computed tensors)."""
    from sklearn.linear_model import SGDClassifier
    x, y = _target()
    m = SGDClassifier(loss="log_loss", random_state=0, max_iter=50, tol=None).fit(x, y)
    f = np.float32
    nodes = [node("MatMul", ["X", "coef"], "mm"), node("Add", ["mm", "intercept"], "score"),
             node("ArgMax", ["score"], "am", axis=1), ml_node("ArrayFeatureExtractor", ["classes", "am"], ["lab"]),
             node("Reshape", ["lab", "flat"], "label"),
             node("Mul", ["score", "negate"], "neg"), node("Exp", ["neg"], "e"), node("Add", ["e", "unity"], "a"),
             node("Reciprocal", ["a"], "proba"), node("ReduceSum", ["proba", "axis"], "reduced"),
             node("Cast", ["reduced"], "b", to=TensorProto.BOOL), node("Not", ["b"], "nb"),
             node("Cast", ["nb"], "nf", to=TensorProto.FLOAT), node("Add", ["proba", "nf"], "proba_updated"),
             node("Mul", ["nf", "num_classes"], "mask"), node("Add", ["reduced", "mask"], "reduced_updated"),
             node("Div", ["proba_updated", "reduced_updated"], "probabilities")]
    inits = [const("coef", m.coef_.T.astype(f)), const("intercept", m.intercept_.astype(f)),
             const("classes", m.classes_.astype(np.int32), np.int32), const("flat", [-1], np.int64),
             const("negate", -1.0), const("unity", 1.0), const("axis", [1], np.int64), const("num_classes", 3.0)]
    outputs = [helper.make_tensor_value_info("label", TensorProto.INT32, [None]),
               helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, 3])]
    return ml_graph(nodes, outputs, inits), m


def nusvc_ovr():
    """NuSVC (RBF, 3 classes, decision_function_shape='ovr', no probabilities):
    support_vector_machines.py and ovr_decision_function.py (Less, Neg and Sum of the pairwise
    scores, Abs, Div of two computed tensors)."""
    from sklearn.svm import NuSVC
    x, y = _target()
    m = NuSVC(nu=0.3, gamma=0.2).fit(x, y)
    nodes = [ml_node("SVMClassifier", ["X"], ["label", "svm_out"], kernel_type="RBF",
                     kernel_params=[float(m._gamma), float(m.coef0), float(m.degree)],
                     support_vectors=m.support_vectors_.astype(np.float32).ravel().tolist(),
                     coefficients=m.dual_coef_.astype(np.float32).ravel().tolist(),
                     rho=m.intercept_.astype(np.float32).tolist(), vectors_per_class=m.n_support_.tolist(),
                     classlabels_ints=[int(c) for c in m.classes_], post_transform="NONE"),
             node("Cast", ["svm_out"], "before_ovr", to=TensorProto.FLOAT),
             node("Less", ["before_ovr", "cst0"], "negative"), node("Cast", ["negative"], "inegative", to=TensorProto.FLOAT),
             node("Neg", ["before_ovr"], "negscore")]
    inits = [const("cst0", 0.0), const("cst1", 1.0), const("cst3", 3.0)]
    sumc, votes, k = {i: [] for i in range(3)}, {i: [] for i in range(3)}, 0
    for i in range(3):
        for j in range(i + 1, 3):
            inits.append(const(f"ind{k}", [k], np.int64))
            nodes += [ml_node("ArrayFeatureExtractor", ["negscore", f"ind{k}"], [f"c{k}"]), node("Neg", [f"c{k}"], f"cn{k}"),
                      ml_node("ArrayFeatureExtractor", ["inegative", f"ind{k}"], [f"v{k}"]), node("Neg", [f"v{k}"], f"vn{k}"),
                      node("Add", [f"vn{k}", "cst1"], f"vn1_{k}")]
            sumc[j].append(f"c{k}")
            sumc[i].append(f"cn{k}")
            votes[j].append(f"v{k}")
            votes[i].append(f"vn1_{k}")
            k += 1
    for i in range(3):
        nodes += [node("Sum", sumc[i], f"sumc{i}"), node("Sum", votes[i], f"vote{i}")]
    nodes += [node("Concat", [f"sumc{i}" for i in range(3)], "conc", axis=1),
              node("Concat", [f"vote{i}" for i in range(3)], "conc_vote", axis=1),
              node("Abs", ["conc"], "cabs"), node("Add", ["cabs", "cst1"], "cabs1"), node("Mul", ["cabs1", "cst3"], "cabs3"),
              node("Div", ["conc", "cabs3"], "final"), node("Add", ["conc_vote", "final"], "probabilities")]
    outputs = [helper.make_tensor_value_info("label", TensorProto.INT64, [None]),
               helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, 3])]
    return ml_graph(nodes, outputs, inits), m


def kbins_linear():
    """KBinsDiscretizer(encode='ordinal') then LinearRegression: k_bins_discretiser.py
    (ArrayFeatureExtractor, Less of a column and its edges, Concat with a column of ones,
    ArgMax read as a number), then a LinearRegressor."""
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import KBinsDiscretizer
    x, y = _target()
    target = x[:, 0] * 2 + x[:, 2] - x[:, 3]
    m = make_pipeline(KBinsDiscretizer(n_bins=4, encode="ordinal", strategy="quantile"), LinearRegression()).fit(x, target)
    kb, lr = m.steps[0][1], m.steps[1][1]
    nodes, inits, digitised = [], [const("zero_float", [0.0]), const("one_float", [1.0])], []
    for i, edges in enumerate(kb.bin_edges_):
        inner = edges[1:-1] if len(edges) > 2 else [np.finfo(np.float32).max]
        inits += [const(f"ci{i}", [i], np.int64), const(f"range{i}", np.asarray(inner, np.float32))]
        nodes += [ml_node("ArrayFeatureExtractor", ["X", f"ci{i}"], [f"col{i}"]),
                  node("Cast", [f"col{i}"], f"cc{i}", to=TensorProto.FLOAT),
                  node("Less", [f"cc{i}", f"range{i}"], f"less{i}"),
                  node("Cast", [f"less{i}"], f"lf{i}", to=TensorProto.FLOAT)]
        if i == 0:
            nodes += [node("Mul", ["cc0", "zero_float"], "zero_column"), node("Add", ["zero_column", "one_float"], "last_column")]
        nodes += [node("Concat", [f"lf{i}", "last_column"], f"conc{i}", axis=1),
                  node("ArgMax", [f"conc{i}"], f"am{i}", axis=1), node("Cast", [f"am{i}"], f"dig{i}", to=TensorProto.FLOAT)]
        digitised.append(f"dig{i}")
    nodes += [node("Concat", digitised, "binned", axis=1),
              ml_node("LinearRegressor", ["binned"], ["variable"], coefficients=lr.coef_.astype(np.float32).tolist(),
                      intercepts=[float(np.float32(lr.intercept_))])]
    outputs = [helper.make_tensor_value_info("variable", TensorProto.FLOAT, [None, 1])]
    return ml_graph(nodes, outputs, inits), m, target


def minmax_svr_poly():
    """MinMaxScaler then SVR(kernel='poly'): a Scaler and an SVMRegressor (scaler.py,
    support_vector_machines.py)."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MinMaxScaler
    from sklearn.svm import SVR
    x, _ = _target()
    target = x[:, 0] * 2 + x[:, 2] ** 2 - x[:, 3]
    m = make_pipeline(MinMaxScaler(), SVR(kernel="poly", degree=3, C=1.0)).fit(x, target)
    mm, svr = m.steps[0][1], m.steps[1][1]
    nodes = [ml_node("Scaler", ["X"], ["scaled"], offset=(-mm.min_ / mm.scale_).astype(np.float32).tolist(),
                     scale=mm.scale_.astype(np.float32).tolist()),
             ml_node("SVMRegressor", ["scaled"], ["variable"], kernel_type="POLY",
                     kernel_params=[float(svr._gamma), float(svr.coef0), float(svr.degree)],
                     support_vectors=svr.support_vectors_.astype(np.float32).ravel().tolist(),
                     coefficients=svr.dual_coef_.astype(np.float32).ravel().tolist(),
                     rho=[float(svr.intercept_[0])], n_supports=int(len(svr.support_)), post_transform="NONE")]
    outputs = [helper.make_tensor_value_info("variable", TensorProto.FLOAT, [None, 1])]
    return ml_graph(nodes, outputs), m, target


def _sgd(env):
    model, m = sgd_log_loss()
    check_converted(env, "sgd_log_loss_proba", model, "probabilities", m.predict_proba(env.X.astype(np.float64)), 1e-5)
    check_converted(env, "sgd_log_loss_label", model, "label", m.predict(env.X.astype(np.float64)), 0)


def _sgd_label_ties(env):
    """predict is what the graph's label output says (its own ArgMax over the scores), also where
    two probabilities tie after float32 rounding (rows far out: two classes' sigmoids are both
    1.0, so both probabilities 0.5) and the argmax of the probabilities would pick the other
    class (issue 46: 5 of 600 rows); predict_proba stays the probabilities."""
    model, m = sgd_log_loss()
    far = (env.X * np.float32(300)).astype(np.float32)
    ref = evaluate(model, {"X": far})
    labels, proba = np.asarray(ref["label"], np.float64), np.asarray(ref["probabilities"], np.float64)
    tied = np.array([np.sum(row == row.max()) > 1 for row in proba])
    if not tied.any():
        raise AssertionError("no row ties its probabilities: the test needs rows farther out")
    if not (labels[tied] != np.argmax(proba[tied], axis=1).astype(np.float64)).any():
        raise AssertionError("on the tied rows the label is the probabilities' argmax: nothing to tell apart")
    env.conn.execute("DROP TABLE IF EXISTS x_far")
    env.conn.execute("CREATE TABLE x_far (id int PRIMARY KEY, a real, b real, c real, d real)")
    with env.conn.cursor().copy("COPY x_far FROM STDIN") as cp:
        for i, row in enumerate(far):
            cp.write_row([i + 1] + [float(v) for v in row])
    env.conn.execute("SELECT drop_model(name) FROM models WHERE name = 'sgd_ties'")
    env.conn.execute("SELECT create_model('sgd_ties', %s::bytea, 'onnx', %s::jsonb)",
                     [model.SerializeToString(), json.dumps({"features": COLUMNS})])
    for batching in ("on", "off"):
        with env.conn.transaction():
            env.conn.execute(f"SET LOCAL pg_predict.enable_batching = {batching}")
            got = to_floats([r[0] for r in env.conn.execute(
                "SELECT predict('sgd_ties', x) FROM x_far x ORDER BY id").fetchall()])
            got_proba = to_floats([r[0] for r in env.conn.execute(
                "SELECT predict_proba('sgd_ties', x) FROM x_far x ORDER BY id").fetchall()], 3)
        assert_close(f"sgd_ties labels (batching {batching}, {int(tied.sum())} tied rows)", got, labels, atol=0, rtol=0)
        # Far out the graph's float32 exp underflows where pg_predict's float64 steps do not (a row
        # of zeros the graph makes uniform): the probabilities are compared with scikit-learn's.
        assert_close(f"sgd_ties probabilities (batching {batching}) against scikit-learn", got_proba,
                     m.predict_proba(far.astype(np.float64)), atol=1e-5, rtol=1e-5)
    env.conn.execute("SELECT drop_model('sgd_ties')")


def _nusvc(env):
    model, m = nusvc_ovr()
    check_converted(env, "nusvc_ovr", model, "label", m.predict(env.X.astype(np.float64)), 0)


def _kbins(env):
    model, m, _ = kbins_linear()
    check_converted(env, "kbins_linear", model, "variable", m.predict(env.X.astype(np.float64)), 1e-5)


def _svr_poly(env):
    """The issue's 2.7e-5: the graph's scaler, support vectors and coefficients are float32
    roundings of scikit-learn's, and a cubic kernel summed over support vectors of both signs
    magnifies them. pg_predict evaluates the graph's own constants in float64: it must equal
    that evaluation within 1e-6 (the value returned is float32), and scikit-learn within what the float32 constants allow.
    An ONNX runtime computing in float32 rounds that cancelling sum again (printed, not
    checked: the steps compute in float64)."""
    model, m, _ = minmax_svr_poly()
    mm, svr = m.steps[0][1], m.steps[1][1]
    x = env.X.astype(np.float64)
    f32 = lambda a: np.asarray(a, np.float32).astype(np.float64)
    z = (x - f32(-mm.min_ / mm.scale_)) * f32(mm.scale_)
    k = (float(np.float32(svr._gamma)) * z @ f32(svr.support_vectors_).T + float(np.float32(svr.coef0))) ** int(svr.degree)
    graph_in_double = k @ f32(svr.dual_coef_).ravel() + float(np.float32(svr.intercept_[0]))
    env.conn.execute("SELECT create_model('minmax_svr_poly', %s::bytea, 'onnx', %s::jsonb)",
                     [model.SerializeToString(), json.dumps({"features": COLUMNS})])
    got = np.asarray([r[0] for r in env.conn.execute("SELECT predict('minmax_svr_poly', x) FROM x ORDER BY id")])
    assert_close("minmax_svr_poly against the graph in float64", got, graph_in_double, atol=1e-6, rtol=1e-6)
    sk = m.predict(x)
    assert_close("minmax_svr_poly against scikit-learn", got, sk, atol=1e-2, rtol=1e-2)
    ref32 = evaluate(model, {"X": env.X})["variable"].reshape(-1).astype(np.float64)
    rel = lambda a, b: float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1.0)))
    print(f"minmax_svr_poly: pg_predict vs scikit-learn {rel(got, sk):.2e}, a float32 evaluation vs "
          f"scikit-learn {rel(ref32, sk):.2e}, pg_predict vs the float32 evaluation {rel(got, ref32):.2e}")
    env.conn.execute("SELECT drop_model('minmax_svr_poly')")


add_test("onnx_converted[sgd_log_loss_3_classes]", _sgd)
add_test("onnx_converted[sgd_label_ties]", _sgd_label_ties)
add_test("onnx_converted[nusvc_ovr]", _nusvc)
add_test("onnx_converted[kbins_then_linear_regression]", _kbins)
add_test("onnx_converted[minmax_then_svr_poly]", _svr_poly)


def multi_target_tree():
    """A DecisionTreeRegressor of two outputs as skl2onnx's tree converter writes it: one
    TreeEnsembleRegressor with n_targets 2, a target weight per output at each leaf."""
    from sklearn.tree import DecisionTreeRegressor
    x, _ = _target()
    y = np.stack([x[:, 0] - x[:, 1], x[:, 2] * 3 + x[:, 3]], axis=1)
    m = DecisionTreeRegressor(max_depth=4, random_state=0).fit(x, y)
    t = m.tree_
    leaf = t.children_left == -1
    attrs = dict(nodes_treeids=[0] * t.node_count, nodes_nodeids=list(range(t.node_count)),
                 nodes_featureids=[int(f) if not l else 0 for f, l in zip(t.feature, leaf)],
                 nodes_modes=["LEAF" if l else "BRANCH_LEQ" for l in leaf],
                 nodes_values=[float(np.float32(v)) if not l else 0.0 for v, l in zip(t.threshold, leaf)],
                 nodes_truenodeids=[int(c) if c >= 0 else 0 for c in t.children_left],
                 nodes_falsenodeids=[int(c) if c >= 0 else 0 for c in t.children_right],
                 nodes_hitrates=[1.0] * t.node_count, nodes_missing_value_tracks_true=[0] * t.node_count,
                 target_treeids=[], target_nodeids=[], target_ids=[], target_weights=[],
                 n_targets=2, post_transform="NONE")
    for i in np.flatnonzero(leaf):
        for k in range(2):
            attrs["target_treeids"].append(0)
            attrs["target_nodeids"].append(int(i))
            attrs["target_ids"].append(k)
            attrs["target_weights"].append(float(t.value[i][k][0]))
    nodes = [ml_node("TreeEnsembleRegressor", ["X"], ["variable"], **attrs)]
    return ml_graph(nodes, [helper.make_tensor_value_info("variable", TensorProto.FLOAT, [None, 2])]), m


def multi_target_linear():
    """LinearRegression of two outputs: a LinearRegressor with targets 2 (linear_regressor.py)."""
    from sklearn.linear_model import LinearRegression
    x, _ = _target()
    y = np.stack([x[:, 0] - x[:, 1], x[:, 2] * 3 + x[:, 3]], axis=1)
    m = LinearRegression().fit(x, y)
    nodes = [ml_node("LinearRegressor", ["X"], ["variable"], coefficients=m.coef_.astype(np.float32).ravel().tolist(),
                     intercepts=m.intercept_.astype(np.float32).tolist(), targets=2)]
    return ml_graph(nodes, [helper.make_tensor_value_info("variable", TensorProto.FLOAT, [None, 2])]), m


def _multi_target(env, name, built):
    model, m = built
    want = evaluate(model, {"X": env.X})["variable"].astype(np.float64)
    env.conn.execute("SELECT create_model(%s, %s::bytea, 'onnx', %s::jsonb)",
                     [name, model.SerializeToString(), json.dumps({"features": COLUMNS})])
    assert env.conn.execute("SELECT outputs FROM models WHERE name = %s", [name]).fetchone()[0] == 2
    got = np.asarray([r[0] for r in env.conn.execute("SELECT predict_outputs(%s, x) FROM x ORDER BY id", [name])])
    assert_close(f"{name} against the reference", got, want, atol=1e-5, rtol=1e-5)
    assert_close(f"{name} against scikit-learn", got, m.predict(env.X.astype(np.float64)), atol=1e-4, rtol=1e-4)
    env.conn.execute("SELECT drop_model(%s)", [name])


add_test("onnx_converted[multi_target_tree_regressor]", lambda env: _multi_target(env, "multi_tree", multi_target_tree()))
add_test("onnx_converted[multi_target_linear_regressor]", lambda env: _multi_target(env, "multi_linear", multi_target_linear()))


def ml_case(name, nodes, width, initializers=()):
    """One graph of ai.onnx.ml operators (opset 2) against the reference, as case() does."""
    def run(env):
        g = helper.make_graph(nodes, "ops", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, 4])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, width])], list(initializers))
        check(env, name, helper.make_model(g, opset_imports=[helper.make_opsetid("", 15), helper.make_opsetid("ai.onnx.ml", 2)]))
    add_test(f"onnx_op[{name}]", run)


ml_case("label_encoder_float_keys", [node("Floor", ["X"], "f"),
                                     ml_node("LabelEncoder", ["f"], ["Y"], keys_floats=[-1.0, 0.0, 1.0, 2.0],
                                             values_floats=[10.0, 20.0, 30.0, 40.0], default_float=-5.0)], 4)


def _label_names(env):
    """A classifier's label mapped to names by a LabelEncoder (a pipeline whose labels were
    encoded): predict_label gives the names, predict_proba the softmax's columns."""
    nodes = [node("Gemm", ["X", "W", "bias"], "l"), node("Softmax", ["l"], "probabilities", axis=1),
             node("ArgMax", ["probabilities"], "index", axis=1, keepdims=0),
             ml_node("LabelEncoder", ["index"], ["label"], keys_int64s=[0, 1, 2], values_strings=["low", "mid", "high"])]
    g = helper.make_graph(nodes, "names", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, 4])],
                          [helper.make_tensor_value_info("label", TensorProto.STRING, [None]),
                           helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, 3])],
                          [const("W", _W), const("bias", [0.0, 0.5, -0.5])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 15), helper.make_opsetid("ai.onnx.ml", 2)])
    want = evaluate(model, {"X": env.X})
    env.conn.execute("SELECT create_model('names', %s::bytea, 'onnx', %s::jsonb)",
                     [model.SerializeToString(), json.dumps({"features": COLUMNS})])
    got = [r[0] for r in env.conn.execute("SELECT predict_label('names', x) FROM x ORDER BY id")]
    assert got == list(want["label"]), (got[:5], list(want["label"])[:5])
    assert env.conn.execute("SELECT classes FROM models WHERE name = 'names'").fetchone()[0] == ["low", "mid", "high"]
    proba = np.asarray([r[0] for r in env.conn.execute("SELECT predict_proba('names', x) FROM x ORDER BY id")])
    assert_close("names: probabilities", proba, want["probabilities"].astype(np.float64), atol=1e-6, rtol=1e-6)
    env.conn.execute("SELECT drop_model('names')")


add_test("onnx_converted[label_encoded_to_names]", _label_names)


def _tree_nodes(t):
    """A fitted scikit-learn tree_ as the TreeEnsemble* node attributes skl2onnx writes."""
    leaf = t.children_left == -1
    return dict(nodes_treeids=[0] * t.node_count, nodes_nodeids=list(range(t.node_count)),
                nodes_featureids=[int(f) if not l else 0 for f, l in zip(t.feature, leaf)],
                nodes_modes=["LEAF" if l else "BRANCH_LEQ" for l in leaf],
                nodes_values=[float(np.float32(v)) if not l else 0.0 for v, l in zip(t.threshold, leaf)],
                nodes_truenodeids=[int(c) if c >= 0 else 0 for c in t.children_left],
                nodes_falsenodeids=[int(c) if c >= 0 else 0 for c in t.children_right],
                nodes_hitrates=[1.0] * t.node_count, nodes_missing_value_tracks_true=[0] * t.node_count), leaf


def soft_voting():
    """VotingClassifier(voting='soft') of a decision tree and a logistic regression, as
    voting_classifier.py writes it: each member's probabilities times its weight, a Sum, the
    label its ArgMax through the classes. The tree's probabilities are read as a tensor (a
    nested model step on the general path)."""
    from sklearn.ensemble import VotingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.tree import DecisionTreeClassifier
    x, y = _target()
    m = VotingClassifier([("tree", DecisionTreeClassifier(max_depth=3, random_state=0)),
                          ("logreg", LogisticRegression(max_iter=500))], voting="soft", weights=[0.3, 0.7]).fit(x, y)
    tree, logreg = m.estimators_
    attrs, leaf = _tree_nodes(tree.tree_)
    attrs.update(class_treeids=[], class_nodeids=[], class_ids=[], class_weights=[],
                 classlabels_int64s=[0, 1, 2], post_transform="NONE")
    for i in np.flatnonzero(leaf):
        p = tree.tree_.value[i][0] / tree.tree_.value[i][0].sum()
        for k in range(3):
            attrs["class_treeids"].append(0)
            attrs["class_nodeids"].append(int(i))
            attrs["class_ids"].append(k)
            attrs["class_weights"].append(float(p[k]))
    nodes = [ml_node("TreeEnsembleClassifier", ["X"], ["tree_label", "tree_proba"], **attrs),
             ml_node("LinearClassifier", ["X"], ["lr_label", "lr_proba"],
                     coefficients=logreg.coef_.astype(np.float32).ravel().tolist(),
                     intercepts=logreg.intercept_.astype(np.float32).tolist(), classlabels_ints=[0, 1, 2],
                     multi_class=1, post_transform="SOFTMAX"),
             node("Mul", ["tree_proba", "w0"], "wp0"), node("Mul", ["lr_proba", "w1"], "wp1"),
             node("Sum", ["wp0", "wp1"], "probabilities"), node("ArgMax", ["probabilities"], "am", axis=1),
             ml_node("ArrayFeatureExtractor", ["classes", "am"], ["lab"]), node("Reshape", ["lab", "flat"], "label")]
    inits = [const("w0", [0.3]), const("w1", [0.7]), const("classes", [0, 1, 2], np.int64), const("flat", [-1], np.int64)]
    outputs = [helper.make_tensor_value_info("label", TensorProto.INT64, [None]),
               helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, 3])]
    return ml_graph(nodes, outputs, inits), m


def _soft_voting(env):
    model, m = soft_voting()
    x = env.X.astype(np.float64)
    env.conn.execute("SELECT create_model('voting', %s::bytea, 'onnx', %s::jsonb)",
                     [model.SerializeToString(), json.dumps({"features": COLUMNS})])
    proba = np.asarray([r[0] for r in env.conn.execute("SELECT predict_proba('voting', x) FROM x ORDER BY id")])
    assert_close("voting: probabilities against scikit-learn", proba, m.predict_proba(x), atol=1e-5, rtol=1e-5)
    label = [r[0] for r in env.conn.execute("SELECT predict('voting', x) FROM x ORDER BY id")]
    assert_close("voting: labels against scikit-learn", np.asarray(label, np.float64), m.predict(x).astype(np.float64))
    paths = env.conn.execute("SELECT explain_model('voting') -> 'import_paths'").fetchone()[0]
    assert any("Mul" in p and "tensor form" in p for p in paths), paths
    env.conn.execute("SELECT drop_model('voting')")


add_test("onnx_converted[soft_voting_tree_and_logistic]", _soft_voting)


def softmax_of_raw_scores():
    """LogisticRegression (multinomial) as a LinearClassifier without a post transform, then a
    Softmax node over its scores: the model's softmax link."""
    from sklearn.linear_model import LogisticRegression
    x, y = _target()
    m = LogisticRegression(max_iter=500).fit(x, y)
    nodes = [ml_node("LinearClassifier", ["X"], ["label", "scores"], coefficients=m.coef_.astype(np.float32).ravel().tolist(),
                     intercepts=m.intercept_.astype(np.float32).tolist(), classlabels_ints=[0, 1, 2], multi_class=1,
                     post_transform="NONE"),
             node("Softmax", ["scores"], "probabilities", axis=1)]
    outputs = [helper.make_tensor_value_info("label", TensorProto.INT64, [None]),
               helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, 3])]
    return ml_graph(nodes, outputs), m


def _softmax_of_raw_scores(env):
    model, m = softmax_of_raw_scores()
    check_converted(env, "raw_softmax", model, "probabilities", m.predict_proba(env.X.astype(np.float64)), 1e-5)


add_test("onnx_converted[softmax_of_a_linear_classifiers_scores]", _softmax_of_raw_scores)


def polynomial_linear():
    """PolynomialFeatures(degree=2) then LinearRegression: polynomial_features.py (an
    ArrayFeatureExtractor and a ReduceProd per monomial, the bias a ConstantOfShape of a Shape,
    a Concat) and a LinearRegressor."""
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import PolynomialFeatures
    x, _ = _target()
    target = x[:, 0] * x[:, 1] - x[:, 2] ** 2 + x[:, 3]
    m = make_pipeline(PolynomialFeatures(2), LinearRegression()).fit(x, target)
    poly, lr = m.steps[0][1], m.steps[1][1]
    nodes, inits, columns, last = [], [], [], None
    for i, comb in enumerate(poly._combinations(4, poly._min_degree, poly._max_degree, poly.interaction_only,
                                                poly.include_bias)):
        comb = list(comb)
        if not comb:
            columns.append("unit")
            continue
        inits.append(const(f"comb{i}", comb, np.int64))
        nodes += [ml_node("ArrayFeatureExtractor", ["X", f"comb{i}"], [f"col{i}"]),
                  node("ReduceProd", [f"col{i}"], f"prod{i}", axes=[1])]
        columns.append(f"prod{i}")
        last = f"prod{i}"
    nodes += [node("Shape", [last], "shape"),
              node("ConstantOfShape", ["shape"], "unit", value=helper.make_tensor("ONE", TensorProto.FLOAT, [1], [1.0])),
              node("Concat", columns, "features", axis=1),
              ml_node("LinearRegressor", ["features"], ["variable"], coefficients=lr.coef_.astype(np.float32).tolist(),
                      intercepts=[float(np.float32(lr.intercept_))])]
    return ml_graph(nodes, [helper.make_tensor_value_info("variable", TensorProto.FLOAT, [None, 1])], inits), m


def _polynomial(env):
    model, m = polynomial_linear()
    check_converted(env, "polynomial", model, "variable", m.predict(env.X.astype(np.float64)), 1e-4)


add_test("onnx_converted[polynomial_features_then_linear_regression]", _polynomial)


def _category_mapper(env):
    """CategoryMapper of a text column (skl2onnx's OrdinalEncoder of strings writes a LabelEncoder;
    CategoryMapper is the older form): each string to its integer, unknown ones and NULL to
    default_int64."""
    nodes = [ml_node("CategoryMapper", ["city"], ["code"], cats_strings=["paris", "oslo", "lima"], cats_int64s=[3, 7, 11],
                     default_int64=-1),
             node("Cast", ["code"], "variable", to=TensorProto.FLOAT)]
    g = helper.make_graph(nodes, "mapper", [helper.make_tensor_value_info("city", TensorProto.STRING, [None, 1])],
                          [helper.make_tensor_value_info("variable", TensorProto.FLOAT, [None, 1])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 15), helper.make_opsetid("ai.onnx.ml", 2)])
    env.conn.execute("CREATE TEMP TABLE towns (id int, city text)")
    towns = ["paris", "oslo", "lima", "quito", None, "oslo"]
    for i, t in enumerate(towns):
        env.conn.execute("INSERT INTO towns VALUES (%s, %s)", [i, t])
    env.conn.execute("SELECT create_model('mapper', %s::bytea, 'onnx')", [model.SerializeToString()])
    got = [r[0] for r in env.conn.execute("SELECT predict('mapper', t) FROM (SELECT city FROM towns ORDER BY id) t")]
    want = evaluate(model, {"city": np.asarray([[t if t is not None else ""] for t in towns], dtype=object)})["variable"]
    assert got == [float(v) for v in want.reshape(-1)], (got, want.reshape(-1))
    env.conn.execute("SELECT drop_model('mapper')")
    env.conn.execute("DROP TABLE towns")


add_test("onnx_converted[category_mapper_of_a_text_column]", _category_mapper)


def bernoulli_nb():
    """BernoulliNB(binarize=0.5), three classes: naive_bayes.py's _joint_log_likelihood_bernoulli
    (Greater, a Cast, Log(1 - Exp) of the constants folded, a MatMul) and its probability tail
    (ReduceLogSumExp, Reshape, Sub, Exp; the label through ArrayFeatureExtractor, Cast, Reshape)."""
    from sklearn.naive_bayes import BernoulliNB
    x, y = _target()
    m = BernoulliNB(binarize=0.5).fit(x, y)
    f = np.float32
    nodes = [node("Greater", ["X", "threshold"], "condition"), node("Cast", ["condition"], "cast_values", to=TensorProto.FLOAT),
             node("Add", ["zero_tensor", "cast_values"], "binarised"),
             node("Exp", ["feature_log_prob"], "exp_result"), node("Sub", ["constant", "exp_result"], "sub_result"),
             node("Log", ["sub_result"], "neg_prob"), node("ReduceSum", ["neg_prob", "axis0"], "sum_neg_prob"),
             node("Sub", ["feature_log_prob", "neg_prob"], "difference"), node("MatMul", ["binarised", "difference"], "dot"),
             node("Add", ["dot", "sum_neg_prob"], "partial"), node("Add", ["partial", "class_log_prior"], "jll"),
             node("ArgMax", ["jll"], "am", axis=1),
             node("ReduceLogSumExp", ["jll"], "lse", axes=[1], keepdims=0), node("Reshape", ["lse", "col"], "lse1"),
             node("Sub", ["jll", "lse1"], "log_prob"), node("Exp", ["log_prob"], "probabilities"),
             ml_node("ArrayFeatureExtractor", ["classes", "am"], ["afe"]), node("Cast", ["afe"], "afe_f", to=TensorProto.FLOAT),
             node("Reshape", ["afe_f", "flat"], "afe_r"), node("Cast", ["afe_r"], "label", to=TensorProto.INT64)]
    inits = [const("threshold", [0.5]), const("zero_tensor", np.zeros((1, 4))), const("constant", 1.000000001),
             const("feature_log_prob", m.feature_log_prob_.T.astype(f)), const("axis0", [0], np.int64),
             const("class_log_prior", m.class_log_prior_.astype(f)), const("col", [-1, 1], np.int64),
             const("flat", [-1], np.int64), const("classes", m.classes_.astype(np.int32), np.int32)]
    outputs = [helper.make_tensor_value_info("label", TensorProto.INT64, [None]),
               helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, 3])]
    return ml_graph(nodes, outputs, inits), m


def _bernoulli(env):
    model, m = bernoulli_nb()
    check_converted(env, "bernoulli_nb", model, "probabilities", m.predict_proba(env.X.astype(np.float64)), 1e-5)
    check_converted(env, "bernoulli_nb_label", model, "label", m.predict(env.X.astype(np.float64)), 0)


add_test("onnx_converted[bernoulli_nb]", _bernoulli)


def _import_paths(env):
    """explain_model names the path each node took: the specific steps, the general path's
    tensor step, or folded into a constant."""
    model = graph([node("Abs", ["X"], "p"), node("Add", ["one", "one"], "two"),
                   node("ReduceSum", ["p", "axes"], "s", keepdims=1), node("Mul", ["s", "two"], "s2"),
                   node("Div", ["p", "s2"])], 4, [const("one", 1.0), const("axes", [1], np.int64)])
    env.conn.execute("SELECT create_model('paths', %s::bytea, 'onnx', %s::jsonb)",
                     [model.SerializeToString(), json.dumps({"features": COLUMNS})])
    paths = env.conn.execute("SELECT explain_model('paths') -> 'import_paths'").fetchone()[0]
    want = ["node 0 (Abs): steps", "node 1 (Add): folded", "node 2 (ReduceSum): steps", "node 3 (Mul): steps",
            "node 4 (Div): general: tensor div"]
    assert paths == want, paths
    env.conn.execute("SELECT drop_model('paths')")


add_test("onnx_general[explain_model_names_each_nodes_path]", _import_paths)


def forest_nodes(prefix, n_out, squeeze):
    """A RandomForestClassifier of 3 trees (max_depth 3) as TreeEnsemble* attributes with one
    weight per output at every leaf: the leaf's class probabilities (zeros included), or
    squeezed into [0.05, 0.95] for PROBIT."""
    from sklearn.ensemble import RandomForestClassifier
    x, y = _target()
    m = RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0).fit(x, y)
    attrs = {k: [] for k in ("nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_modes", "nodes_values",
                             "nodes_truenodeids", "nodes_falsenodeids", "nodes_hitrates",
                             "nodes_missing_value_tracks_true")}
    for k in ("treeids", "nodeids", "ids", "weights"):
        attrs[f"{prefix}_{k}"] = []
    for t, est in enumerate(m.estimators_):
        one, leaf = _tree_nodes(est.tree_)
        one["nodes_treeids"] = [t] * est.tree_.node_count
        for k in one:
            attrs[k] += one[k]
        for i in np.flatnonzero(leaf):
            p = est.tree_.value[i][0] / est.tree_.value[i][0].sum()
            for c in range(n_out):
                attrs[f"{prefix}_treeids"].append(t)
                attrs[f"{prefix}_nodeids"].append(int(i))
                attrs[f"{prefix}_ids"].append(c)
                attrs[f"{prefix}_weights"].append(float(0.05 + 0.9 * p[c] if squeeze else p[c]))
    return attrs


def _scores_against_reference(env, name, model, fn, output, label=None, atol=1e-5):
    """predict_proba / predict / predict_outputs (fn) against the reference's output (fn None: a
    PROBIT classifier, whose scores predict_proba refuses), and predict_label against its label."""
    want = evaluate(model, {"X": env.X})
    env.conn.execute("SELECT create_model(%s, %s::bytea, 'onnx', %s::jsonb)",
                     [name, model.SerializeToString(), json.dumps({"features": COLUMNS})])
    if fn is None:  # scores that are not probabilities: predict_proba refuses
        try:
            with env.conn.transaction():
                env.conn.execute("SELECT predict_proba(%s, x) FROM x", [name])
        except Exception as e:  # noqa: BLE001 - the message is what is checked
            assert "probabilities" in str(e), str(e)
        else:
            raise AssertionError(f"{name}: predict_proba gave scores that are not probabilities")
    else:
        got = np.asarray([r[0] for r in env.conn.execute(f"SELECT {fn}(%s, x) FROM x ORDER BY id", [name])])
        w = want[output].astype(np.float64)
        assert_close(f"{name}: {fn}", got, w.reshape(-1) if w.shape[1] == 1 else w, atol=atol, rtol=1e-5)
    if label is not None:
        got = [r[0] for r in env.conn.execute("SELECT predict_label(%s, x) FROM x ORDER BY id", [name])]
        assert [int(v) for v in got] == [int(v) for v in want[label]], (name, got[:8], list(want[label][:8]))
    env.conn.execute("SELECT drop_model(%s)", [name])


def _forest_classifier(env, agg, post):
    attrs = forest_nodes("class", 3, squeeze=post == "PROBIT")
    attrs.update(classlabels_int64s=[0, 1, 2], post_transform=post, aggregate_function=agg)
    model = ml_graph([ml_node("TreeEnsembleClassifier", ["X"], ["label", "probabilities"], **attrs)],
                     [helper.make_tensor_value_info("label", TensorProto.INT64, [None]),
                      helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, 3])])
    fn = None if post == "PROBIT" else "predict_proba"
    _scores_against_reference(env, f"forest_{agg}_{post}".lower(), model, fn, "probabilities", "label")


def _forest_regressor(env, agg, post):
    attrs = forest_nodes("target", 2, squeeze=post == "PROBIT")
    attrs.update(n_targets=2, post_transform=post, aggregate_function=agg)
    model = ml_graph([ml_node("TreeEnsembleRegressor", ["X"], ["variable"], **attrs)],
                     [helper.make_tensor_value_info("variable", TensorProto.FLOAT, [None, 2])])
    _scores_against_reference(env, f"forest_reg_{agg}_{post}".lower(), model, "predict_outputs", "variable")


# ai.onnx.ml's aggregates and post transforms (ONNX Runtime's TreeEnsemble and write_scores):
# MIN / MAX and SOFTMAX_ZERO / PROBIT take the general path. PROBIT only where the scores lie
# in (0, 1).
for _agg in ("SUM", "AVERAGE", "MIN", "MAX"):
    for _post in ("NONE", "SOFTMAX", "SOFTMAX_ZERO", "LOGISTIC", "PROBIT"):
        if _post == "PROBIT" and _agg == "SUM":
            continue
        add_test(f"onnx_ml[tree_classifier_{_agg}_{_post}]".lower(), lambda env, a=_agg, p=_post: _forest_classifier(env, a, p))
    for _post in ("NONE", "SOFTMAX_ZERO", "PROBIT"):
        if _post == "PROBIT" and _agg == "SUM":
            continue
        add_test(f"onnx_ml[tree_regressor_{_agg}_{_post}]".lower(), lambda env, a=_agg, p=_post: _forest_regressor(env, a, p))


def _linear_post(env, post):
    """A LinearClassifier of three classes, and a LinearRegressor of one target, whose margins
    lie in (0, 1) (small coefficients, intercepts near 1/2), with the post transform."""
    coef = (np.asarray(_W, np.float32).T * 0.01).ravel().tolist()
    model = ml_graph([ml_node("LinearClassifier", ["X"], ["label", "probabilities"], coefficients=coef,
                              intercepts=[0.5, 0.45, 0.55], classlabels_ints=[0, 1, 2], post_transform=post)],
                     [helper.make_tensor_value_info("label", TensorProto.INT64, [None]),
                      helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, 3])])
    fn = None if post == "PROBIT" else "predict_proba"
    _scores_against_reference(env, f"linear_{post}".lower(), model, fn, "probabilities", "label")
    if post == "PROBIT":
        model = ml_graph([ml_node("LinearRegressor", ["X"], ["variable"], coefficients=coef[:4], intercepts=[0.5],
                                  post_transform=post)],
                         [helper.make_tensor_value_info("variable", TensorProto.FLOAT, [None, 1])])
        # ONNX Runtime's erfinv in float32 cancels near p = 1/2 (-v + sqrt(v² - v2), v about
        # 4.3): up to 1.5e-4 absolute there, where pg_predict computes it in float64.
        _scores_against_reference(env, "linear_regressor_probit", model, "predict", "variable", atol=3e-4)


for _post in ("SOFTMAX_ZERO", "PROBIT"):
    add_test(f"onnx_ml[linear_classifier_{_post}]".lower(), lambda env, p=_post: _linear_post(env, p))


def _binary_weights_of_class_one(env):
    """A binary TreeEnsembleClassifier whose leaves weigh class 1 only (ONNX Runtime's binary
    case: that class's sum is the positive score, [1 - p, p]) equals scikit-learn's
    predict_proba. The weights were once read as class 0's, which scored every row 0."""
    from sklearn.tree import DecisionTreeClassifier
    x, y = _target()
    m = DecisionTreeClassifier(max_depth=3, random_state=0).fit(x, (y == 2).astype(int))
    attrs, leaf = _tree_nodes(m.tree_)
    attrs.update(class_treeids=[], class_nodeids=[], class_ids=[], class_weights=[], classlabels_int64s=[0, 1])
    for i in np.flatnonzero(leaf):
        v = m.tree_.value[i][0]
        attrs["class_treeids"].append(0)
        attrs["class_nodeids"].append(int(i))
        attrs["class_ids"].append(1)
        attrs["class_weights"].append(float(v[1] / v.sum()))
    model = ml_graph([ml_node("TreeEnsembleClassifier", ["X"], ["label", "probabilities"], **attrs)],
                     [helper.make_tensor_value_info("label", TensorProto.INT64, [None]),
                      helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, 2])])
    check_converted(env, "binary_class_one", model, "probabilities", m.predict_proba(x), 1e-6)


add_test("onnx_ml[binary_tree_classifier_with_weights_of_class_one]", _binary_weights_of_class_one)


def svc_probability(classes):
    """SVC(probability=True) as support_vector_machines.py writes it: an SVMClassifier with
    prob_a / prob_b (libsvm's Platt parameters); two classes negate the coefficients and rho."""
    from sklearn.svm import SVC
    x, y = _target()
    if classes == 2:
        y = (y == 2).astype(int)
    m = SVC(kernel="rbf", gamma=0.2, probability=True, random_state=0).fit(x, y)
    sign = -1.0 if classes == 2 else 1.0
    nodes = [ml_node("SVMClassifier", ["X"], ["label", "probabilities"], kernel_type="RBF",
                     kernel_params=[float(m._gamma), float(m.coef0), float(m.degree)],
                     support_vectors=m.support_vectors_.astype(np.float32).ravel().tolist(),
                     coefficients=(sign * m.dual_coef_).astype(np.float32).ravel().tolist(),
                     rho=(sign * m.intercept_).astype(np.float32).tolist(), vectors_per_class=m.n_support_.tolist(),
                     prob_a=m.probA_.astype(np.float32).tolist(), prob_b=m.probB_.astype(np.float32).tolist(),
                     classlabels_ints=[int(c) for c in m.classes_], post_transform="NONE")]
    outputs = [helper.make_tensor_value_info("label", TensorProto.INT64, [None]),
               helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, classes])]
    return ml_graph(nodes, outputs), m


def _svc_probability(env, classes):
    """predict_proba equals the reference (ONNX Runtime's Platt scaling and coupling) and
    scikit-learn's (libsvm's, in double); option "output": "label" scores libsvm's vote, equal
    to scikit-learn's predict."""
    model, m = svc_probability(classes)
    x = env.X.astype(np.float64)
    name = f"svc_proba_{classes}"
    check_converted(env, name, model, "probabilities", m.predict_proba(x), 1e-5)
    env.conn.execute("SELECT create_model(%s, %s::bytea, 'onnx', %s::jsonb)",
                     [name, model.SerializeToString(), json.dumps({"features": COLUMNS, "output": "label"})])
    got = [r[0] for r in env.conn.execute("SELECT predict(%s, x) FROM x ORDER BY id", [name])]
    assert_close(f"{name}: the vote against scikit-learn's predict", np.asarray(got, np.float64), m.predict(x).astype(np.float64))
    env.conn.execute("SELECT drop_model(%s)", [name])


add_test("onnx_converted[svc_probability_2_classes]", lambda env: _svc_probability(env, 2))
add_test("onnx_converted[svc_probability_3_classes]", lambda env: _svc_probability(env, 3))


def _refused(env):
    """What the general path cannot do is refused, naming the node and the reason."""
    attrs = forest_nodes("class", 3, squeeze=False)
    keep = [i for i, c in enumerate(attrs["class_ids"]) if c != 2 or i % 2]  # some leaves lose class 2
    for k in ("class_treeids", "class_nodeids", "class_ids", "class_weights"):
        attrs[k] = [attrs[k][i] for i in keep]
    attrs.update(classlabels_int64s=[0, 1, 2], aggregate_function="MIN")
    model = ml_graph([ml_node("TreeEnsembleClassifier", ["X"], ["label", "probabilities"], **attrs)],
                     [helper.make_tensor_value_info("label", TensorProto.INT64, [None]),
                      helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, 3])])
    einsum = [graph([helper.make_node("Einsum", ["X", "X"], ["Y"], equation=eq)], 4)
              for eq in ("bi,bi", "...i,...i->...i", "bi,bj->ij")]
    for bad, says in ((model, "has no weight for output 2"), (einsum[0], "does not start with the rows' letter"),
                      (einsum[1], "an Einsum with an ellipsis"), (einsum[2], "does not start with the rows' letter")):
        try:
            env.conn.execute("SELECT create_model('refused', %s::bytea, 'onnx', %s::jsonb)",
                             [bad.SerializeToString(), json.dumps({"features": COLUMNS})])
        except Exception as e:  # noqa: BLE001 - the message is what is checked
            assert says in str(e) and ("TreeEnsembleClassifier" in str(e) or "Einsum" in str(e)), str(e)
        else:
            raise AssertionError("accepted: " + says)


add_test("onnx_general[refusals_name_the_node_and_why]", _refused)


def _sizes_bounded(env):
    """Sizes derived from a model are bounded before they take the server's memory (issue 46: a
    311-byte graph tiled to a million scores took 2.6 GB): an output of more than 1024 scores,
    and a graph whose tensors hold more than 2^24 values per row together, are refused with an
    ERROR naming what was too large."""
    wide = graph([node("Tile", ["X", "reps"])], 4 * 4096, [const("reps", [1, 4096], np.int64)])
    many = graph([node("Tile", ["X", "reps"], f"t{i}") for i in range(20)] +
                 [node("ReduceSum", ["X", "axes"], "Y", keepdims=1)], 1,
                 [const("reps", [1, 1 << 18], np.int64), const("axes", [1], np.int64)])
    for bad, says in ((wide, "scores per row (at most 1024)"), (many, "values per row in all")):
        try:
            env.conn.execute("SELECT create_model('refused', %s::bytea, 'onnx', %s::jsonb)",
                             [bad.SerializeToString(), json.dumps({"features": COLUMNS})])
        except Exception as e:  # noqa: BLE001 - the message is what is checked
            assert says in str(e), str(e)
        else:
            raise AssertionError("accepted: " + says)


add_test("onnx_general[sizes_are_bounded]", _sizes_bounded)


def _explain_refused(env):
    """explain_prediction of a model without contributions (an SVC) names both functions and
    the model plainly, not its scored output's name."""
    model, _ = svc_probability(3)
    env.conn.execute("SELECT create_model('svc_explain', %s::bytea, 'onnx', %s::jsonb)",
                     [model.SerializeToString(), json.dumps({"features": COLUMNS})])
    try:
        with env.conn.transaction():
            env.conn.execute("SELECT explain_prediction('svc_explain', x) FROM x LIMIT 1")
    except Exception as e:  # noqa: BLE001 - the message is what is checked
        msg = str(e)
        assert "contributions (predict_contributions, explain_prediction) are not available for this ONNX model" in msg, msg
        assert "(label" not in msg, msg
    else:
        raise AssertionError("explain_prediction of an SVC gave contributions")
    env.conn.execute("SELECT drop_model('svc_explain')")


add_test("onnx_general[explain_prediction_refusal_names_the_model]", _explain_refused)


if __name__ == "__main__":
    main(fixture=make_env)
