#!/usr/bin/python3
"""Conformance: multi-output regressors and classifiers, predict_outputs() against scikit-learn.

Regressors fitted by /usr/bin/python3's scikit-learn on a 2-D y of three targets (the first
rows of sklearn_cases.frame(): NULLs where the pipelines impute, a constant column, categories
never seen at fit time in the last rows) — linear models with a 2-D coef_, multi-output trees and
nearest neighbours, MultiOutputRegressor and RegressorChain over several member kinds — are
deployed with the Python client — and MultiOutputClassifier / ClassifierChain over binary linear
and nearest-neighbour classifiers on three targets of numeric labels — and predict_outputs(name, row) must equal scikit-learn's
predict row for row within max(1e-5, 1e-5 * |expected|), through the PredictBatch node, with
pg_predict.enable_batching = off, for a single-row batch, and through the float8[] / real[]
overloads. predict() and the other one-value functions refuse such a model, naming the number
of outputs and predict_outputs(); members a wrapper cannot combine are refused naming the parameter.

Run: /usr/bin/python3 regress/conformance/test_multioutput.py [-k name] [--list]
Needs the extension installed (make install). Last line: 'conformance: N passed, M failed'.
"""

import contextlib
import warnings

import numpy as np

import sklearn_cases
from multioutput_cases import cases, classifier_cases, label_targets, targets
from harness import Failure, add_test, assert_close, assert_equal, main, to_floats
from pgcluster import Cluster

import pg_predict  # noqa: E402  (python/ is put on sys.path by sklearn_cases)

TABLE = "customers"
NAN_FREE = sklearn_cases.NAN_FREE          # income, visits, tenure, rate, const
NUMERIC = ["age", "income", "visits", "score", "tenure", "rate", "const"]
ALL = sklearn_cases.ALL


class Env:
    def __init__(self, pg):
        self.conn = pg.connect()
        self.loaded = False

    def query(self, sql, params=None):
        return self.conn.execute(sql, params).fetchall()

    def load(self):
        if not self.loaded:
            sklearn_cases.load_frame(self.conn, TABLE)
            self.loaded = True

    def deploy(self, name, estimator):
        self.conn.execute("SELECT drop_model(name) FROM models WHERE name = %s", [name])
        return pg_predict.deploy(self.conn, name, estimator)


@contextlib.contextmanager
def make_env():
    with Cluster() as pg:
        env = Env(pg)
        env.conn.execute("CREATE EXTENSION pg_predict")
        try:
            yield env
        finally:
            env.conn.close()


def fit(estimator, columns, y=targets):
    df, _ = sklearn_cases.frame()
    n = sklearn_cases.N_TRAIN
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit(df[columns].iloc[:n], y()[:n])
    return estimator, df[columns]


def assert_same(what, got, want, ids):
    want = np.asarray(want, dtype=np.float64)
    got = to_floats(got, want.shape[1])
    assert_close(what, got, want, ids=ids)


def run_function(env, model, batching, where=""):
    sql = f"SELECT id, predict_outputs(%(m)s, t) FROM {TABLE} t {where} ORDER BY id"
    with env.conn.transaction():
        env.conn.execute(f"SET LOCAL pg_predict.enable_batching = {'on' if batching else 'off'}")
        if batching and not where:
            plan = "\n".join(r[0] for r in env.query("EXPLAIN (costs off) " + sql, {"m": model}))
            if "PredictBatch" not in plan:
                raise Failure(f"{model}: no PredictBatch node in the plan of predict_outputs:\n{plan}")
        rows = env.query(sql, {"m": model})
    return [r[0] for r in rows], [r[1] for r in rows]


def check_outputs(env, model, want, numeric_columns=None):
    """predict_outputs over the table, batched and per row, one row alone, and the array forms."""
    for batching in (True, False):
        ids, got = run_function(env, model, batching)
        assert_equal(f"{model}: rows", len(ids), len(want))
        assert_same(f"{model} predict_outputs ({'batched' if batching else 'per-row'})", got, want, ids)
        ids, got = run_function(env, model, batching, "WHERE id = 7")
        assert_same(f"{model} predict_outputs (one row, {'batched' if batching else 'per-row'})", got,
                    want[6:7], ids)
    if numeric_columns:
        cols = ", ".join(numeric_columns)
        for cast in ("float8[]", "real[]"):
            rows = env.query(f"SELECT id, predict_outputs(%(m)s, ARRAY[{cols}]::{cast}) FROM {TABLE} ORDER BY id",
                             {"m": model})
            assert_same(f"{model} predict_outputs ({cast})", [r[1] for r in rows], want, [r[0] for r in rows])


def case_test(name, classifier):
    def run(env):
        est, columns, numeric = (classifier_cases() if classifier else cases())[name]
        est, X = fit(est, columns, label_targets if classifier else targets)
        want = np.asarray(est.predict(X), dtype=np.float64)
        assert_equal(f"{name}: scikit-learn's predict shape", want.shape, (len(X), 3))
        env.load()
        model = f"mo_{name}"
        doc = env.deploy(model, est)
        task = "classification" if classifier else "regression"
        assert_equal(f"{model}: document (task, outputs)", (doc["task"], doc.get("outputs")), (task, 3))
        info = env.query("SELECT task, outputs, inputs FROM models WHERE name = %s", [model])[0]
        assert_equal(f"{model}: models (task, outputs, inputs)", tuple(info), (task, 3, len(columns)))
        check_outputs(env, model, want, columns if numeric else None)
        env.conn.execute("SELECT drop_model(%s)", [model])
    return run


for _name in cases():
    add_test(f"predict_outputs[{_name}]", case_test(_name, False))
for _name in classifier_cases():
    add_test(f"predict_outputs[{_name}]", case_test(_name, True))


def test_single_output(env):
    """predict_outputs of a single-output regressor and classifier: predict's value in a
    one-element array."""
    from sklearn.linear_model import LinearRegression, LogisticRegression
    df, t = sklearn_cases.frame()
    n = sklearn_cases.N_TRAIN
    X = df[NAN_FREE]
    env.load()
    for model, est, y in (("so_reg", LinearRegression(), t["regression"]),
                          ("so_clf", LogisticRegression(max_iter=1000), t["four"])):
        est.fit(X.iloc[:n], y[:n])
        env.deploy(model, est)
        want = np.asarray(est.predict(X), dtype=np.float64)[:, None]
        check_outputs(env, model, want, NAN_FREE)
        assert_equal(f"{model}: models.outputs", env.query("SELECT outputs FROM models WHERE name = %s",
                                                           [model])[0][0], 1 if model == "so_reg" else 4)


add_test("single_output", test_single_output)


def test_refusals(env):
    """predict(), predict_proba(), predict_label(), decision_function() of a multi-output model:
    an ERROR naming its outputs and predict_outputs(); members the wrappers cannot combine:
    refused at export."""
    import psycopg
    from sklearn.linear_model import Ridge
    env.load()
    env.deploy("mo_ref", fit(Ridge(), NAN_FREE)[0])
    for batching in ("on", "off"):
        for function in ("predict", "predict_proba", "predict_label", "decision_function", "score_samples"):
            try:
                with env.conn.transaction():
                    env.conn.execute(f"SET LOCAL pg_predict.enable_batching = {batching}")
                    env.query(f"SELECT {function}('mo_ref', t) FROM {TABLE} t")
            except psycopg.Error as e:
                text = str(e) + " " + str(e.diag.message_hint or "")
                for part in ("predicts 3 outputs per row", f"{function}()", "predict_outputs()"):
                    if part not in text:
                        raise Failure(f"{function} (batching {batching}): {text!r} lacks {part!r}")
            else:
                raise Failure(f"{function} of a multi-output model (batching {batching}) did not fail")
    # Members with more than two classes, and a member the wrappers do not combine.
    from sklearn.svm import SVC
    from sklearn.linear_model import LogisticRegression
    from sklearn.multioutput import MultiOutputClassifier
    df, t = sklearn_cases.frame()
    n = sklearn_cases.N_TRAIN
    for est, y, parts in (
            (MultiOutputClassifier(LogisticRegression(max_iter=500)),
             np.column_stack([t["binary"], t["multiclass"]]), ("MultiOutputClassifier", "estimator", "member 1")),
            (MultiOutputClassifier(SVC()), label_targets(), ("MultiOutputClassifier", "estimator", "SVC"))):
        est.fit(df[NAN_FREE].iloc[:n], y[:n])
        try:
            pg_predict.export(est)
        except pg_predict.ExportError as e:
            for part in parts:
                if part not in str(e):
                    raise Failure(f"{str(e)!r} lacks {part!r}")
        else:
            raise Failure(f"{parts[0]} was exported")


add_test("refusals", test_refusals)

if __name__ == "__main__":
    main(fixture=make_env)
