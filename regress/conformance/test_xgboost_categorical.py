#!/usr/bin/python3
"""Conformance: XGBoost models with categorical splits (enable_categorical=True) against XGBoost.

Models are trained here by /usr/bin/python3's xgboost on a pandas frame with two `category`
columns: `color` (strings: the SQL column is text, registered with option "categories" as the
Python client sends it) and `size` (integer categories 0..4: the SQL column holds the codes),
plus a number `x`. Partition splits (max_cat_to_onehot=1) and one-hot splits (max_cat_to_onehot
above the category count) both. The scored rows hold what a production table holds beyond the
training data: NULLs in every column, a color the model never saw (pandas makes it NaN, code -1,
which XGBoost reads as missing), and size codes outside the categories (7, -1: XGBoost sends
them left, as not in the set). Every expected number comes from XGBoost's own predict on a
DMatrix of the codes; every strategy, batched and per row, predict and predict_proba, within
max(1e-5, 1e-5 * |expected|); predict_contributions against pred_contribs=True.

Run: /usr/bin/python3 regress/conformance/test_xgboost_categorical.py [-k name] [--list]
Needs the extension installed (make install). Last line: 'conformance: N passed, M failed'.
"""

import contextlib
import json
import os
import sys

import numpy as np
import pandas as pd
import xgboost as xgb

from harness import Failure, add_test, assert_close, assert_equal, main, to_floats
from pgcluster import Cluster

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import pg_predict  # noqa: E402

COLORS = ["blue", "cyan", "gray", "green", "pink", "red", "teal"]
STRATEGIES = ["gemm", "tree_traversal", "perfect_tree_traversal", "native", "auto"]
N_TRAIN, N_SCORE = 1500, 600


# ---- data ----------------------------------------------------------------------------------------

def make_rows(seed, n, unseen):
    """(color text or None, size int or None, x float or None) rows; with `unseen`, colors the
    model never saw and size codes outside its categories too."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        color = COLORS[int(rng.integers(0, len(COLORS)))]
        size = int(rng.integers(0, 5))
        x = float(np.float32(rng.normal(0, 1)))
        r = rng.random()
        if r < 0.05:
            color = None
        elif unseen and r < 0.09:
            color = "purple"
        r = rng.random()
        if r < 0.05:
            size = None
        elif unseen and r < 0.08:
            size = int(rng.choice([7, -1, 5]))
        if rng.random() < 0.05:
            x = None
        rows.append((color, size, x))
    return rows


def frame(rows):
    """The training frame: pandas categories, as a data scientist builds it."""
    return pd.DataFrame({
        "color": pd.Categorical([r[0] for r in rows], categories=COLORS),
        "size": pd.Categorical([r[1] for r in rows], categories=[0, 1, 2, 3, 4]),
        "x": np.array([np.nan if r[2] is None else r[2] for r in rows], dtype=np.float32),
    })


def codes(rows):
    """What XGBoost reads: the color's code (NaN for NULL and unseen, as pandas gives -1 and
    XGBoost takes it as missing), the size code as it is, x."""
    return np.array([[COLORS.index(c) if c in COLORS else np.nan,
                      np.nan if s is None else s,
                      np.nan if x is None else x] for c, s, x in rows], dtype=np.float32)


def target(rows, rng):
    y = []
    for c, s, x in rows:
        v = (1.0 if c in ("red", "blue", "teal") else -0.5) + (0.8 if s in (1, 3) else 0.0)
        v += 0.7 * (x if x is not None else 0.3) + rng.normal(0, 0.3)
        y.append(v)
    return np.array(y)


TRAIN = make_rows(1, N_TRAIN, unseen=False)
SCORE = make_rows(2, N_SCORE, unseen=True)


# ---- the models --------------------------------------------------------------------------------

class Model:
    def __init__(self, name, booster, task, classes=0):
        self.name, self.booster, self.task, self.classes = name, booster, task, classes
        self.text = booster.save_raw("json").decode()
        d = xgb.DMatrix(codes(SCORE), feature_names=["color", "size", "x"],
                        feature_types=["c", "c", "q"], enable_categorical=True, missing=np.nan)
        self.margin = booster.predict(d, output_margin=True)
        self.out = booster.predict(d)
        self.contribs = booster.predict(d, pred_contribs=True)
        if task == "classification":
            proba = self.out if classes > 2 else np.column_stack([1 - self.out, self.out])
            self.proba = np.asarray(proba, dtype=np.float64)
            self.label = self.proba.argmax(axis=1).astype(np.float64)
            top = np.sort(self.proba, axis=1)
            self.ambiguous = (top[:, -1] - top[:, -2]) < 1e-5
        else:
            self.proba = None
            self.label = np.asarray(self.out, dtype=np.float64)
            self.ambiguous = np.zeros(len(SCORE), dtype=bool)


def train(name, objective, onehot, classes=0, rounds=25):
    rng = np.random.default_rng(3)
    y = target(TRAIN, rng)
    if objective == "binary:logistic":
        y = (y > np.median(y)).astype(int)
    elif classes:
        y = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    params = {"objective": objective, "max_depth": 4, "eta": 0.3, "tree_method": "hist",
              "max_cat_to_onehot": 8 if onehot else 1, "nthread": 2, "seed": 1}
    if classes:
        params["num_class"] = classes
    d = xgb.DMatrix(frame(TRAIN), label=y, enable_categorical=True)
    booster = xgb.train(params, d, num_boost_round=rounds)
    task = "regression" if objective.startswith("reg:") else "classification"
    return Model(name, booster, task, classes or (2 if task == "classification" else 0))


MODELS = {
    "cat_binary": lambda: train("cat_binary", "binary:logistic", onehot=False),
    "cat_multi_onehot": lambda: train("cat_multi_onehot", "multi:softprob", onehot=True, classes=3),
    "cat_regression": lambda: train("cat_regression", "reg:squarederror", onehot=False, rounds=40),
}
_trained = {}


def model(name):
    if name not in _trained:
        _trained[name] = MODELS[name]()
    return _trained[name]


# ---- the database side -------------------------------------------------------------------------

class Env:
    def __init__(self, pg):
        self.conn = pg.connect()
        self.conn.execute("CREATE EXTENSION pg_predict")
        self.conn.execute("SET max_parallel_workers_per_gather = 0")
        # t: color as text (option "categories"); t_codes: color as its code.
        self.conn.execute("CREATE TABLE t (id int PRIMARY KEY, color text, size int, x real)")
        self.conn.execute("CREATE TABLE t_codes (id int PRIMARY KEY, color int, size int, x real)")
        with self.conn.cursor() as cur:
            cur.executemany("INSERT INTO t VALUES (%s, %s, %s, %s)",
                            [(i + 1, c, s, x) for i, (c, s, x) in enumerate(SCORE)])
            cur.executemany("INSERT INTO t_codes VALUES (%s, %s, %s, %s)",
                            [(i + 1, None if c is None else COLORS.index(c) if c in COLORS else None, s, x)
                             for i, (c, s, x) in enumerate(SCORE)])

    def query(self, sql, params=None):
        return self.conn.execute(sql, params).fetchall()

    def create(self, name, m, options):
        self.conn.execute("SELECT drop_model(name) FROM models WHERE name = %s", [name])
        self.conn.execute("SELECT create_model(%s, %s::text, 'xgboost', %s::jsonb)",
                          [name, m.text, json.dumps(options)])


@contextlib.contextmanager
def make_env():
    with Cluster() as pg:
        env = Env(pg)
        try:
            yield env
        finally:
            env.conn.close()


TEXT_OPTIONS = {"categories": {"color": COLORS}}


def check_scores(env, m, name, table, arrays=False, batching=True):
    calls = ["predict(%(m)s, t)"] + (["predict_proba(%(m)s, t)"] if m.proba is not None else [])
    if arrays:
        calls += ["predict(%(m)s, ARRAY[color, size, x]::float8[])"]
    env.conn.execute(f"SET pg_predict.enable_batching = {'on' if batching else 'off'}")
    try:
        rows = env.query(f"SELECT id, {', '.join(calls)} FROM {table} t ORDER BY id", {"m": name})
    finally:
        env.conn.execute("RESET pg_predict.enable_batching")
    label = f"{name} on {table}{'' if batching else ' per row'}"
    assert_equal(f"{label}: rows", len(rows), len(SCORE))
    ids = [r[0] for r in rows]
    for k in ([1, len(calls)] if arrays else [1]):
        got = np.where(m.ambiguous, m.label, to_floats([r[k] for r in rows]))
        assert_close(f"{label}: {calls[k - 1]}", got, m.label, ids=ids)
    if m.proba is not None:
        assert_close(f"{label}: predict_proba", to_floats([r[2] for r in rows], m.proba.shape[1]),
                     m.proba, ids=ids)


def strategy_test(model_name, strategy):
    def run(env):
        m = model(model_name)
        name = f"{model_name}_{strategy}"
        env.create(name, m, dict(TEXT_OPTIONS, strategy=strategy))
        check_scores(env, m, name, "t")
        if strategy in ("native", "auto"):
            check_scores(env, m, name, "t", batching=False)
        # Without the option the feature reads codes: an integer column, or an array.
        env.create(name + "_codes", m, {"strategy": strategy})
        check_scores(env, m, name + "_codes", "t_codes", arrays=True)
    return run


for _m in MODELS:
    for _s in STRATEGIES:
        add_test(f"{_m}[{_s}]", strategy_test(_m, _s))


def contributions_test(model_name):
    def run(env):
        m = model(model_name)
        env.create(model_name, m, TEXT_OPTIONS)
        rows = env.query("SELECT id, predict_contributions(%s, t) FROM t ORDER BY id", [model_name])
        got = np.array([np.asarray(r[1], dtype=np.float64).ravel() for r in rows])
        want = np.asarray(m.contribs, dtype=np.float64).reshape(len(SCORE), -1)
        assert_close(f"{model_name}: predict_contributions", got, want, ids=[r[0] for r in rows])
    return run


for _m in MODELS:
    add_test(f"contributions[{_m}]", contributions_test(_m))


def test_deploy_records_categories(env):
    """The Python client's deploy(..., categories=frame) sends the string categories as option
    "categories"; integer categories stay codes; a frame's non-string categories are refused."""
    m = model("cat_binary")
    pg_predict.deploy(env.conn, "cat_deployed", m.booster, categories=frame(TRAIN))
    (options,) = env.query("SELECT options FROM model_catalog WHERE name = 'cat_deployed'")[0]
    assert_equal("deployed options", options.get("categories"), {"color": COLORS})
    check_scores(env, m, "cat_deployed", "t")
    try:
        pg_predict.deploy(env.conn, "cat_bad", m.booster,
                          categories=pd.DataFrame({"size": pd.Categorical([10, 20])}))
    except ValueError as e:
        if "size" not in str(e) or "codes" not in str(e):
            raise Failure(f"the refusal does not say what to do: {e}")
    else:
        raise Failure("deploy took integer categories that are not the codes 0..k-1")


add_test("deploy_records_categories", test_deploy_records_categories)


def expect_error(env, sql, params, needle):
    try:
        with env.conn.transaction():
            env.conn.execute(sql, params)
    except Exception as e:  # psycopg.Error
        if needle not in str(e):
            raise Failure(f"error {str(e).splitlines()[0]!r} lacks {needle!r}")
        return
    raise Failure(f"no error for {sql}; expected one with {needle!r}")


def test_errors(env):
    """Options that do not fit the model are refused, naming what is wrong."""
    m = model("cat_binary")
    sql = "SELECT create_model('cat_err', %s::text, 'xgboost', %s::jsonb)"
    expect_error(env, sql, [m.text, json.dumps({"categories": {"color": COLORS[:3]}})],
                 'option "categories" gives feature "color" 3 categories, but')
    expect_error(env, sql, [m.text, json.dumps({"categories": {"x": ["a"]}})],
                 'names "x", which is not a categorical feature')
    expect_error(env, sql, [m.text, json.dumps({"categories": {"colour": COLORS}})],
                 'names "colour", which is not a feature of the model')
    expect_error(env, sql, [m.text, json.dumps({"categories": {"color": [1, 2]}})],
                 'must be an array of strings')
    expect_error(env, sql, [m.text, json.dumps({"categories": {"color": COLORS + ["red"]}})],
                 'repeats "red"')
    expect_error(env, "SELECT create_model('cat_err', %s::text, 'lightgbm', %s::jsonb)",
                 ["tree\nversion=v3\n", json.dumps({"categories": {}})],
                 'option "categories" is only for XGBoost models')


add_test("errors", test_errors)


if __name__ == "__main__":
    main(make_env)
