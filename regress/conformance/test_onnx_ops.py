#!/usr/bin/python3
"""Conformance: ONNX operators one by one, in graphs built by hand with onnx.helper, against the
reference evaluator written from the ONNX specification (onnx_reference.py, numpy, in the
element type the graph declares).

Each graph reads X, a float tensor [N, 4] (the columns a, b, c, d of one table: 200 rows of
normal and uniform numbers, and halves for Round), and writes Y: [N, 1] is read with predict(),
wider with predict_proba(). Every value must equal the reference within 1e-6 relative (absolute
for values below 1), batched and one row at a time. The operators are each one alone, with
broadcasting of constants of every rank, and small combinations as converters write them
(a standard scaler then a linear model and a sigmoid, a softmax over a Gemm).

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


def graph(nodes, width, initializers=()):
    g = helper.make_graph(nodes, "ops", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, 4])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, width])], list(initializers))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)])


def node(op, inputs, output="Y", **attrs):
    return helper.make_node(op, inputs, [output], **attrs)


def check(env, name, model):
    """The model scored on every row, batched and per row, against the reference."""
    onnx.checker.check_model(model)
    want = evaluate(model, {"X": env.X})["Y"].astype(np.float64)
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


if __name__ == "__main__":
    main(fixture=make_env)
