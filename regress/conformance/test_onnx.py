#!/usr/bin/python3
"""Conformance: ONNX models (create_model(name, bytea, 'auto' | 'onnx')) against the library
that trained them.

regress/fixtures/onnx/ holds 26 graphs written by the real converters (skl2onnx 1.13,
onnxmltools 1.11 for XGBoost and LightGBM, torch.onnx.export) with the source library's own
predictions on the same rows (its README.md). Every case is loaded into a table of its own and
scored through predict / predict_proba on rows (batched by the PredictBatch node, and one row at a
time with pg_predict.enable_batching off) and, for all-numeric inputs, through the real[] and
float8[] overloads; each within 1e-5. Also: a network exported by torch.onnx.export at test time,
the models row, and hostile files (truncated, cycles, unknown operators, out-of-range indices)
refused with an error that names the problem.

Run: /usr/bin/python3 regress/conformance/test_onnx.py [-k name] [--list]
"""

import contextlib
import csv
import io
import json
import os

import numpy as np
import onnx
import psycopg
from onnx import TensorProto, helper

from harness import Failure, add_test, assert_close, assert_equal, main, to_floats
from pgcluster import Cluster

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures", "onnx")
TEXT_COLUMNS = {"city", "plan"}


def read_csv(path):
    with open(path) as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def cases():
    with open(os.path.join(FIXTURES, "cases.json")) as f:
        return json.load(f)


class Env:
    def __init__(self, pg):
        self.pg = pg
        self.conn = pg.connect()

    def query(self, sql, params=None):
        cur = self.conn.execute(sql, params)
        return cur.fetchall() if cur.description is not None else []


def load_table(env, name):
    header, rows = read_csv(os.path.join(FIXTURES, name + ".csv"))
    cols = ", ".join(f"{c} {'text' if c in TEXT_COLUMNS else 'real'}" for c in header)
    env.query(f"CREATE TABLE t_{name} (id int PRIMARY KEY, {cols})")
    with env.conn.cursor() as cur:
        with cur.copy(f"COPY t_{name} (id, {', '.join(header)}) FROM STDIN") as cp:
            for i, row in enumerate(rows):
                cp.write_row([i + 1] + [None if v == "" else (v if c in TEXT_COLUMNS else float(v))
                                        for c, v in zip(header, row)])
    return header


def make_env():
    @contextlib.contextmanager
    def env():
        with Cluster() as pg:
            e = Env(pg)
            e.conn.execute("CREATE EXTENSION pg_predict")
            e.headers = {c["name"]: load_table(e, c["name"]) for c in cases()}
            e.conn.execute("ANALYZE")
            try:
                yield e
            finally:
                e.conn.close()
    return env()


def model_bytes(name):
    with open(os.path.join(FIXTURES, name + ".onnx"), "rb") as f:
        return f.read()


def create(env, name, artifact, options=None, fmt="auto"):
    env.query("SELECT drop_model(name) FROM models WHERE name = %(n)s", {"n": name})
    env.query("SELECT create_model(%(n)s, %(a)s::bytea, %(f)s, %(o)s::jsonb)",
              {"n": name, "a": artifact, "f": fmt, "o": json.dumps(options or {})})


def scores(env, fn, name, header, batching, table=None):
    """fn over the rows of t_<table or name>: the row form, and real[] / float8[] when every input
    is a number."""
    forms = ["r"]
    if not TEXT_COLUMNS & set(header):
        forms += [f"ARRAY[{', '.join(header)}]::real[]", f"ARRAY[{', '.join(header)}]::float8[]"]
    with env.conn.transaction():
        env.query(f"SET LOCAL pg_predict.enable_batching = {'on' if batching else 'off'}")
        rows = env.query(f"SELECT {', '.join(f'{fn}(%(n)s, {f})' for f in forms)} FROM t_{table or name} r ORDER BY id",
                         {"n": name})
    return {form: [row[k] for row in rows] for k, form in enumerate(["row", "real[]", "float8[]"][:len(forms)])}


def deploy_with_client(env, name, options):
    """The Python client's deploy of the graph as an onnx.ModelProto (sent as bytea, format onnx)."""
    import sys
    sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
    import pg_predict
    env.query("SELECT drop_model(name) FROM models WHERE name = %(n)s", {"n": name})
    pg_predict.deploy(env.conn, name, onnx.load(os.path.join(FIXTURES, name + ".onnx")), options=options)


def check_case(env, case, client=False):
    name = case["name"]
    header = env.headers[name]
    one_tensor = len(case["inputs"]) == 1
    # One [N, F] input reads the features by position: the table's columns name them.
    options = {"features": header} if one_tensor else {}
    if client:
        deploy_with_client(env, name, options)
    else:
        create(env, name, model_bytes(name), options)
    want_header, want_rows = read_csv(os.path.join(FIXTURES, name + ".expected.csv"))
    want = np.array([[float(v) for v in r] for r in want_rows])
    cols = {h: want[:, i] for i, h in enumerate(want_header)}
    probas = [h for h in want_header if h.startswith("proba_") or h.startswith("out_")]
    for batching in (True, False):
        if "value" in cols:
            for form, got in scores(env, "predict", name, header, batching).items():
                assert_close(f"{name} predict({form}), batching {batching}", to_floats(got), cols["value"])
        label = cols.get("label", cols.get("cluster"))
        if label is not None:
            for form, got in scores(env, "predict", name, header, batching).items():
                assert_close(f"{name} predict({form}), batching {batching}", to_floats(got), label, atol=0, rtol=0)
        if probas:
            p = np.stack([cols[h] for h in probas], axis=1)
            for form, got in scores(env, "predict_proba", name, header, batching).items():
                assert_close(f"{name} predict_proba({form}), batching {batching}", to_floats(got, p.shape[1]), p)
    row = env.query("SELECT format, source_type FROM models WHERE name = %(n)s", {"n": name})[0]
    assert_equal(f"{name}: models row", row, ("onnx", "bytea"))
    env.query("SELECT drop_model(%(n)s)", {"n": name})


def _add_fixture_tests():
    for case in cases():
        add_test(f"fixture_{case['name']}", lambda env, case=case: check_case(env, case))
        add_test(f"python_client_{case['name']}", lambda env, case=case: check_case(env, case, client=True))


# ---- a network exported at test time ------------------------------------------------------------

def test_torch_export(env):
    """torch.onnx.export of a small network (Gemm, Sigmoid, Tanh, Softmax) scores as PyTorch."""
    import torch
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(8, 12), torch.nn.Sigmoid(), torch.nn.Linear(12, 6), torch.nn.Tanh(),
                              torch.nn.Linear(6, 4), torch.nn.Softmax(dim=1)).eval()
    header = env.headers["torch_mlp"]
    X = np.array(env.query(f"SELECT {', '.join(header)} FROM t_torch_mlp ORDER BY id"), dtype=np.float32)
    buf = io.BytesIO()
    torch.onnx.export(net, torch.from_numpy(X[:2]), buf, input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "n"}, "output": {0: "n"}}, opset_version=13)
    with torch.no_grad():
        want = net(torch.from_numpy(X)).numpy().astype(np.float64)
    create(env, "exported", buf.getvalue(), {"features": header}, fmt="onnx")
    for batching in (True, False):
        for form, got in scores(env, "predict_proba", "exported", header, batching, "torch_mlp").items():
            # torch computes in float32; pg_predict in float64
            assert_close(f"exported predict_proba({form}), batching {batching}", to_floats(got, 4), want,
                         atol=1e-6, rtol=1e-5)


def test_explain_and_models_row(env):
    """EXPLAIN and the models row show the format and shape of an ONNX model; explain_model
    shows its spec (a ColumnTransformer graph: text inputs, one-hot steps, a linear estimator)."""
    create(env, "shown", model_bytes("ct_logreg"))
    plan = "\n".join(r[0] for r in env.query("EXPLAIN (COSTS OFF) SELECT predict('shown', r) FROM t_ct_logreg r"))
    if "shown (onnx, " not in plan:
        raise Failure(f"EXPLAIN does not show the format: {plan}")
    info = env.query("SELECT format, source_type, task, inputs, classes FROM models WHERE name = 'shown'")[0]
    assert_equal("models row", info, ("onnx", "bytea", "classification", 10, ["0", "1"]))
    explained = env.query("SELECT explain_model('shown')")[0][0]
    assert_equal("explain_model estimator", explained["before"]["estimator"]["op"], "linear")
    env.query("SELECT drop_model('shown')")


# ---- refused -------------------------------------------------------------------------------------

def graph_model(nodes, inputs, outputs, initializers=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 15), helper.make_opsetid("ai.onnx.ml", 3)]
                             ).SerializeToString()


def x_input(width=8):
    return helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, width])


def y_output():
    return helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 1])


def expect_error(env, artifact, needle, sqlstate, options=None, fmt="auto"):
    try:
        with env.conn.transaction():
            env.query("SELECT create_model('bad', %(a)s::bytea, %(f)s, %(o)s::jsonb)",
                      {"a": artifact, "f": fmt, "o": json.dumps(options or {})})
    except psycopg.Error as e:
        if needle not in str(e):
            raise Failure(f"error {str(e)!r} does not say {needle!r}")
        assert_equal(f"{needle}: SQLSTATE", e.sqlstate, sqlstate)
        return
    raise Failure(f"no error; expected one saying {needle!r}")


def test_hostile_files(env):
    good = model_bytes("rf_c")
    expect_error(env, good[: len(good) // 2], "cannot parse the bytes as an ONNX ModelProto", "22P02", fmt="onnx")
    cycle = graph_model([helper.make_node("Relu", ["b"], ["a"]), helper.make_node("Relu", ["a"], ["b"])],
                        [x_input()], [helper.make_tensor_value_info("b", TensorProto.FLOAT, [None, 8])])
    expect_error(env, cycle, "the graph has a cycle through node 0 (Relu)", "22P02")
    unknown = graph_model([helper.make_node("Conv", ["X"], ["y"], name="conv1")], [x_input()], [y_output()])
    expect_error(env, unknown, "node 0 (Conv \"conv1\"): operator Conv is not supported", "0A000")
    afe = graph_model([helper.make_node("ArrayFeatureExtractor", ["X", "idx"], ["y"], domain="ai.onnx.ml")],
                      [x_input()], [y_output()], [helper.make_tensor("idx", TensorProto.INT64, [1], [8])])
    expect_error(env, afe, "index 8 is out of range for a dimension of 8", "22P02")
    tree = helper.make_node(
        "TreeEnsembleRegressor", ["X"], ["y"], domain="ai.onnx.ml", nodes_treeids=[0, 0, 0], nodes_nodeids=[0, 1, 2],
        nodes_featureids=[12, 0, 0], nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"], nodes_values=[0.5, 0, 0],
        nodes_truenodeids=[1, 0, 0], nodes_falsenodeids=[2, 0, 0], target_treeids=[0, 0], target_nodeids=[1, 2],
        target_ids=[0, 0], target_weights=[1.0, 2.0], n_targets=1)
    expect_error(env, graph_model([tree], [x_input()], [y_output()]), "reads feature 12 of an input of 8 columns",
                 "22P02")
    expect_error(env, model_bytes("kmeans"), "option \"output\": the graph has no output \"nope\"", "22023",
                 options={"output": "nope", "features": env.headers["kmeans"]})
    assert_equal("nothing stored", env.query("SELECT count(*) FROM models WHERE name = 'bad'")[0][0], 0)


_add_fixture_tests()
for _name, _fn in list(globals().items()):
    if _name.startswith("test_") and callable(_fn):
        add_test(_name[len("test_"):], _fn)

if __name__ == "__main__":
    main(fixture=make_env)
