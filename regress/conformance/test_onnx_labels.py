#!/usr/bin/python3
"""Conformance: ONNX classifiers with string class labels (classlabels_strings).

skl2onnx writes a classifier fitted on string labels with `classlabels_strings` on its
TreeEnsembleClassifier / LinearClassifier / SVMClassifier (and its ZipMap), and a string `label`
output. Debian has no converter, so each graph here is a converter-written fixture of
regress/fixtures/onnx/ with its integer class labels replaced, at test time, by strings
(the onnx package rewrites the attributes and the label output's type; nothing else changes).
The converter's recorded predictions, mapped through the same labels, are the reference:
predict_label() must equal the mapped label on every row and predict_proba() the recorded
probabilities within 1e-5, batched and per row, and for the all-numeric graphs through the
real[] / float8[] forms; models.classes lists the strings in the probabilities' order;
predict() refuses (the labels are not numbers) and names predict_label(); damaged label
attributes are refused naming the node.

Run: /usr/bin/python3 regress/conformance/test_onnx_labels.py [-k name] [--list]
"""

import contextlib
import csv
import json
import os

import numpy as np
import onnx
import psycopg
from onnx import TensorProto

from harness import Failure, add_test, test, assert_close, assert_equal, main, to_floats
from pgcluster import Cluster

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures", "onnx")
TEXT_COLUMNS = {"city", "plan"}
NAMES = ["gold", "silver", "bronze"]  # class i of the fixture becomes NAMES[i]

# fixture → what it covers (the node that carries the labels).
CASES = {
    "logreg": "LinearClassifier, binary (one row of coefficients)",
    "logreg_multi": "LinearClassifier, three classes",
    "linsvc": "LinearClassifier without probabilities",
    "rf_c": "TreeEnsembleClassifier, binary",
    "gb_c": "TreeEnsembleClassifier, three classes, softmax",
    "svc_rbf": "SVMClassifier (votes, no probabilities)",
    "zipmap_logreg": "LinearClassifier followed by ZipMap (string keys)",
    "ct_logreg": "a ColumnTransformer graph with text inputs",
}


def read_csv(path):
    with open(path) as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def string_labelled(name):
    """The fixture's graph with classlabels_ints / classlabels_int64s → classlabels_strings."""
    m = onnx.load(os.path.join(FIXTURES, name + ".onnx"))
    changed = 0
    for node in m.graph.node:
        for attr in list(node.attribute):
            if attr.name in ("classlabels_ints", "classlabels_int64s"):
                labels = [NAMES[int(c)].encode() for c in attr.ints]
                node.attribute.remove(attr)
                node.attribute.append(onnx.helper.make_attribute("classlabels_strings", labels))
                changed += 1
    if not changed:
        raise Failure(f"{name}: the fixture has no integer class labels to replace")
    # The label tensors: the classifier's first output, and Casts of it (to int64 in the
    # fixture) now to string.
    labels = {n.output[0] for n in m.graph.node if n.op_type.endswith("Classifier")}
    for node in m.graph.node:
        if node.op_type == "Cast" and node.input[0] in labels:
            for attr in node.attribute:
                if attr.name == "to":
                    attr.i = TensorProto.STRING
            labels.add(node.output[0])
    for out in m.graph.output:
        if out.name in labels:
            out.type.tensor_type.elem_type = TensorProto.STRING
    onnx.checker.check_model(m)
    return m.SerializeToString()


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


@contextlib.contextmanager
def make_env():
    with Cluster() as pg:
        e = Env(pg)
        e.conn.execute("CREATE EXTENSION pg_predict")
        e.headers = {name: load_table(e, name) for name in CASES}
        e.conn.execute("ANALYZE")
        try:
            yield e
        finally:
            e.conn.close()


def create(env, model, artifact, options):
    env.query("SELECT drop_model(name) FROM models WHERE name = %(n)s", {"n": model})
    env.query("SELECT create_model(%(n)s, %(a)s::bytea, 'onnx', %(o)s::jsonb)",
              {"n": model, "a": artifact, "o": json.dumps(options)})


def forms(header):
    out = ["r"]
    if not TEXT_COLUMNS & set(header):
        out += [f"ARRAY[{', '.join(header)}]::real[]", f"ARRAY[{', '.join(header)}]::float8[]"]
    return out


def run(env, fn, model, name, form, batching):
    with env.conn.transaction():
        env.query(f"SET LOCAL pg_predict.enable_batching = {'on' if batching else 'off'}")
        sql = f"SELECT {fn}(%(n)s, {form}) FROM t_{name} r ORDER BY id"
        if batching:
            plan = "\n".join(r[0] for r in env.query("EXPLAIN (costs off) " + sql, {"n": model}))
            if "PredictBatch" not in plan:
                raise Failure(f"{model}: no PredictBatch node in the plan:\n{plan}")
        return [r[0] for r in env.query(sql, {"n": model})]


def case_test(name):
    def body(env):
        header = env.headers[name]
        options = {"features": header} if not TEXT_COLUMNS & set(header) else {}
        model = f"str_{name}"
        create(env, model, string_labelled(name), options)
        want_header, want_rows = read_csv(os.path.join(FIXTURES, name + ".expected.csv"))
        want = np.array([[float(v) for v in r] for r in want_rows])
        cols = {h: want[:, i] for i, h in enumerate(want_header)}
        probas = [h for h in want_header if h.startswith("proba_")]
        k = len(probas) if probas else int(cols["label"].max()) + 1
        (classes,), = env.query("SELECT classes FROM models WHERE name = %s", [model])
        assert_equal(f"{model}: models.classes", classes, NAMES[:max(k, len(classes or []))])
        want_labels = [NAMES[int(c)] for c in cols["label"]]
        for batching in (True, False):
            for form in forms(header):
                got = run(env, "predict_label", model, name, form, batching)
                bad = [(i + 1, g, w) for i, (g, w) in enumerate(zip(got, want_labels)) if g != w]
                if bad:
                    raise Failure(f"{model} predict_label({form}), batching {batching}: {len(bad)} rows "
                                  f"differ, e.g. (id, got, want) {bad[:3]}")
                if probas:
                    got = run(env, "predict_proba", model, name, form, batching)
                    p = np.stack([cols[h] for h in probas], axis=1)
                    assert_close(f"{model} predict_proba({form}), batching {batching}",
                                 to_floats(got, p.shape[1]), p)
        try:
            with env.conn.transaction():
                env.query(f"SELECT predict(%(n)s, r) FROM t_{name} r LIMIT 1", {"n": model})
        except psycopg.errors.WrongObjectType as e:
            if "predict_label()" not in (e.diag.message_hint or ""):
                raise Failure(f"{model}: predict() refused without naming predict_label(): {e}")
        else:
            raise Failure(f"{model}: predict() gave numbers for the labels {classes}")
        env.query("SELECT drop_model(%s)", [model])
    return body


for _name in CASES:
    add_test(f"onnx_string_labels[{_name}]", case_test(_name))


def refused(env, artifact, options, *needles):
    try:
        with env.conn.transaction():
            create(env, "str_bad", artifact, options)
    except psycopg.Error as e:
        for needle in needles:
            if needle not in str(e):
                raise Failure(f"the refusal {str(e)!r} does not mention {needle!r}")
        return
    raise Failure(f"a damaged graph was accepted (expected an error naming {needles})")


@test
def test_damaged_labels_refused(env):
    """Both kinds of labels on one node, and as many labels as classes but a wrong count."""
    header = env.headers["logreg_multi"]
    m = onnx.load_from_string(string_labelled("logreg_multi"))
    node = next(n for n in m.graph.node if n.op_type == "LinearClassifier")
    node.attribute.append(onnx.helper.make_attribute("classlabels_ints", [0, 1, 2]))
    refused(env, m.SerializeToString(), {"features": header}, "LinearClassifier",
            "classlabels_strings")
    m = onnx.load_from_string(string_labelled("logreg_multi"))
    node = next(n for n in m.graph.node if n.op_type == "LinearClassifier")
    for a in node.attribute:
        if a.name == "classlabels_strings":
            del a.strings[-1]
    refused(env, m.SerializeToString(), {"features": header}, "LinearClassifier", "classes")
    m = onnx.load_from_string(string_labelled("logreg_multi"))
    node = next(n for n in m.graph.node if n.op_type == "LinearClassifier")
    for a in node.attribute:
        if a.name == "classlabels_strings":
            a.strings[0] = b"\xff\xfe"
    refused(env, m.SerializeToString(), {"features": header}, "UTF-8")


if __name__ == "__main__":
    main(fixture=make_env)
