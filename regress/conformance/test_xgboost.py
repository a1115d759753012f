#!/usr/bin/python3
"""Conformance: pg_predict's predict/predict_proba against XGBoost itself, row for row.

Models are trained here, at test time, by /usr/bin/python3's xgboost on seeded random data
(with NaNs, which the tables hold as SQL NULL); every expected number comes from xgboost's own
predict/predict_proba. Each model is registered once per compilation strategy and every row is
compared within max(1e-5, 1e-5 * |expected|), through predict(name, row) and predict_proba(name,
row) and through the real[] / float8[] overloads. With the native strategy (and auto) the per-row
path (pg_predict.enable_batching = off) is compared with the batched one too (check_per_row).

Run: /usr/bin/python3 regress/conformance/test_xgboost.py [-k name] [--list]
Needs the extension installed (make install) and an OS user for the server when run as root
(regress/pgcluster.py). Last line: 'conformance: N passed, M failed'.
"""

import contextlib
import copy
import functools
import json
import re
import time

import numpy as np
import pandas as pd
import xgboost as xgb

from harness import Failure, add_test, assert_close, assert_equal, main, to_floats
from pgcluster import Cluster

STRATEGIES = ["gemm", "tree_traversal", "perfect_tree_traversal", "native", "auto"]
STRATEGY_NAMES = {"gemm", "tree_traversal", "perfect_tree_traversal", "native"}
N_ROWS = 500
THREADS = 2


# ---- the database side -----------------------------------------------------------------------

class Env:
    def __init__(self, pg):
        self.pg = pg
        self._conn = None

    @property
    def conn(self):
        # A crashed backend must not take the remaining tests with it: reconnect when broken.
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._conn = self.pg.connect()
        return self._conn

    def query(self, sql, params=None):
        return self.conn.execute(sql, params).fetchall()

    def load_table(self, table, columns, X):
        """CREATE TABLE table (id int PRIMARY KEY, <columns>) and COPY the rows of X into it
        (NaN -> NULL). columns: [(name, sql type)]. Ids are 1..n in X's row order."""
        conn = self.conn
        conn.execute(f"DROP TABLE IF EXISTS {table}")
        cols = ", ".join(f"{c} {t}" for c, t in columns)
        conn.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, {cols})")
        converters = []
        for _, t in columns:
            t = t.lower()
            if t in ("smallint", "int", "integer", "bigint"):
                converters.append(lambda v: int(v))
            elif t == "boolean":
                converters.append(lambda v: bool(v))
            else:
                converters.append(lambda v: float(v))
        names = ", ".join(c for c, _ in columns)
        with conn.cursor() as cur:
            with cur.copy(f"COPY {table} (id, {names}) FROM STDIN") as cp:
                for i, row in enumerate(X):
                    cp.write_row([i + 1] + [None if np.isnan(v) else conv(v)
                                            for conv, v in zip(converters, row)])
        conn.execute(f"ANALYZE {table}")

    def create_model(self, name, model_json, options=None):
        """(Re)register a model; returns the seconds create_model took."""
        self.conn.execute("SELECT drop_model(name) FROM models WHERE name = %s", [name])
        t0 = time.perf_counter()
        self.conn.execute("SELECT create_model(%s, %s::jsonb, 'auto', %s::jsonb)",
                          [name, model_json, json.dumps(options or {})])
        return time.perf_counter() - t0

    def drop_model(self, name):
        self.conn.execute("SELECT drop_model(name) FROM models WHERE name = %s", [name])

    def model_info(self, name):
        cur = self.conn.execute("SELECT * FROM models WHERE name = %s", [name])
        row = cur.fetchone()
        if row is None:
            raise Failure(f"model {name} is not in the models view")
        return dict(zip([d.name for d in cur.description], row))


@contextlib.contextmanager
def make_env():
    with Cluster() as pg:
        env = Env(pg)
        env.conn.execute("CREATE EXTENSION pg_predict")
        try:
            yield env
        finally:
            if env._conn is not None:
                env._conn.close()


# ---- data --------------------------------------------------------------------------------------

FEATURES = ["f0", "f1", "f2", "f3", "f4", "f5"]


def make_data(seed, n=N_ROWS, nan_frac=0.08):
    """n × 6 float32 features of different shapes; NaNs in f0, f1, f3 and one all-NaN row."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([
        rng.normal(0, 10, n),                 # f0
        rng.uniform(0, 100, n),               # f1
        rng.integers(0, 6, n).astype(float),  # f2: few distinct values (split ties)
        rng.normal(0, 1, n),                  # f3
        rng.exponential(3, n),                # f4
        rng.normal(5, 2, n),                  # f5
    ]).astype(np.float32)
    if nan_frac:
        for j in (0, 1, 3):
            X[rng.random(n) < nan_frac, j] = np.nan
        X[1, :] = np.nan
    return X, rng


def signal(X):
    Z = np.nan_to_num(X.astype(np.float64))
    return (0.1 * Z[:, 0] + 0.03 * (Z[:, 1] - 50) + 0.5 * (Z[:, 2] - 2.5)
            - np.sin(2 * Z[:, 3]) + 0.2 * (Z[:, 4] - 3) * (Z[:, 5] > 5))


def softmax(m):
    m = np.asarray(m, dtype=np.float64)
    e = np.exp(m - m.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def dmatrix(X, y=None, names=FEATURES):
    return xgb.DMatrix(X, label=y, feature_names=names, missing=np.nan, nthread=THREADS)


def real_columns(names=FEATURES):
    return [(c, "real") for c in names]


# ---- the cases: a trained model and xgboost's own answers ------------------------------------

class Case:
    """model_json: the artifact; task; predict: expected predict() per row; proba: expected
    predict_proba() rows (classifiers) or None; ambiguous: rows whose label is a near tie."""

    def __init__(self, name, X, model_json, task, predict, proba=None, columns=None,
                 options=None):
        self.name, self.X, self.model_json, self.task = name, X, model_json, task
        self.predict = np.asarray(predict, dtype=np.float64)
        self.proba = None if proba is None else np.asarray(proba, dtype=np.float64)
        self.columns = columns or real_columns()
        self.options = options or {}
        self.ambiguous = np.zeros(len(X), dtype=bool)
        if self.proba is not None:
            top = np.sort(self.proba, axis=1)
            if self.proba.shape[1] == 2:
                self.ambiguous = np.abs(self.proba[:, 1] - 0.5) < 1e-5
            else:
                self.ambiguous = (top[:, -1] - top[:, -2]) < 1e-5
        self.table = f"t_{name}"


def booster_json(bst):
    return bst.save_raw("json").decode()


def case_binary_logistic():
    X, rng = make_data(1)
    y = (signal(X) + rng.normal(0, 0.5, len(X)) > 0).astype(int)
    clf = xgb.XGBClassifier(n_estimators=30, max_depth=5, learning_rate=0.3, tree_method="hist",
                            random_state=0, n_jobs=THREADS)
    df = pd.DataFrame(X, columns=FEATURES)
    clf.fit(df, y)
    return Case("binary_logistic", X, booster_json(clf.get_booster()), "classification",
                clf.predict(df), clf.predict_proba(df))


def case_multi_softprob():
    X, rng = make_data(2)
    s = signal(X) + rng.normal(0, 0.3, len(X))
    y = np.digitize(s, np.quantile(s, [0.25, 0.5, 0.75]))  # 4 classes
    clf = xgb.XGBClassifier(n_estimators=15, max_depth=4, learning_rate=0.3, tree_method="hist",
                            objective="multi:softprob", random_state=0, n_jobs=THREADS)
    df = pd.DataFrame(X, columns=FEATURES)
    clf.fit(df, y)
    return Case("multi_softprob", X, booster_json(clf.get_booster()), "classification",
                clf.predict(df), clf.predict_proba(df))


def case_multi_softmax():
    X, rng = make_data(3)
    s = signal(X) + rng.normal(0, 0.3, len(X))
    y = np.digitize(s, np.quantile(s, [1 / 3, 2 / 3]))  # 3 classes
    dm = dmatrix(X, y)
    bst = xgb.train({"objective": "multi:softmax", "num_class": 3, "max_depth": 4, "eta": 0.3,
                     "tree_method": "hist", "nthread": THREADS, "seed": 0}, dm, 12)
    labels = bst.predict(dm)
    # XGBClassifier.predict_proba of a softmax model: softmax of the margins.
    proba = softmax(bst.predict(dm, output_margin=True))
    return Case("multi_softmax", X, booster_json(bst), "classification", labels, proba)


def case_reg_squarederror():
    X, rng = make_data(4)
    y = 1000 * signal(X) + 5000 + rng.normal(0, 100, len(X))  # large values: rtol applies
    dm = dmatrix(X, y)
    bst = xgb.train({"objective": "reg:squarederror", "max_depth": 6, "eta": 0.3,
                     "base_score": float(np.mean(y)), "tree_method": "hist",
                     "nthread": THREADS, "seed": 0}, dm, 40)
    return Case("reg_squarederror", X, booster_json(bst), "regression", bst.predict(dm))


def case_reg_logistic():
    X, rng = make_data(5)
    y = 1 / (1 + np.exp(-signal(X) + rng.normal(0, 0.3, len(X))))
    dm = dmatrix(X, y)
    bst = xgb.train({"objective": "reg:logistic", "max_depth": 5, "eta": 0.3, "base_score": 0.3,
                     "tree_method": "hist", "nthread": THREADS, "seed": 0}, dm, 25)
    return Case("reg_logistic", X, booster_json(bst), "regression", bst.predict(dm))


def case_count_poisson():
    X, rng = make_data(6)
    y = rng.poisson(np.exp(np.clip(0.5 * signal(X) + 1, -3, 4)))
    dm = dmatrix(X, y)
    bst = xgb.train({"objective": "count:poisson", "max_depth": 4, "eta": 0.3,
                     "tree_method": "hist", "nthread": THREADS, "seed": 0}, dm, 30)
    return Case("count_poisson", X, booster_json(bst), "regression", bst.predict(dm))


def case_binary_logitraw():
    X, rng = make_data(7)
    y = (signal(X) + rng.normal(0, 0.5, len(X)) > 0).astype(int)
    dm = dmatrix(X, y)
    bst = xgb.train({"objective": "binary:logitraw", "max_depth": 4, "eta": 0.3,
                     "tree_method": "hist", "nthread": THREADS, "seed": 0}, dm, 20)
    # Booster.predict of logitraw is the raw margin m. pg_predict treats the model as a binary
    # classifier: probabilities [1 - sigmoid(m), sigmoid(m)], label m > 0. (XGBClassifier's own
    # predict_proba gives [1 - m, m] and predict m > 0.5 for logitraw, which are no
    # probabilities; the numbers checked here are xgboost's margins through the sigmoid.)
    m = bst.predict(dm).astype(np.float64)
    p = 1 / (1 + np.exp(-m))
    return Case("binary_logitraw", X, booster_json(bst), "classification", (m > 0).astype(float),
                np.column_stack([1 - p, p]))


def case_binary_stumps():
    """Depth-1 trees (GEMM's smallest case)."""
    X, rng = make_data(8)
    y = (signal(X) + rng.normal(0, 0.5, len(X)) > 0).astype(int)
    dm = dmatrix(X, y)
    bst = xgb.train({"objective": "binary:logistic", "max_depth": 1, "eta": 0.5,
                     "tree_method": "hist", "nthread": THREADS, "seed": 0}, dm, 25)
    p = bst.predict(dm)
    return Case("binary_stumps", X, booster_json(bst), "classification", (p > 0.5).astype(float),
                np.column_stack([1 - p, p]))


def case_reg_single_leaf():
    """Every tree a single leaf (a huge gamma forbids every split)."""
    X, rng = make_data(9)
    y = signal(X) + rng.normal(0, 0.3, len(X))
    dm = dmatrix(X, y)
    bst = xgb.train({"objective": "reg:squarederror", "max_depth": 4, "eta": 0.3,
                     "gamma": 1e9, "base_score": 0.25, "nthread": THREADS, "seed": 0}, dm, 5)
    return Case("reg_single_leaf", X, booster_json(bst), "regression", bst.predict(dm))


def case_reg_unbalanced():
    """Deep, unbalanced trees (loss-guided growth), exact-method midpoint thresholds."""
    X, rng = make_data(10, n=800)
    y = signal(X) ** 2 + rng.normal(0, 0.3, len(X))
    dm = dmatrix(X, y)
    bst = xgb.train({"objective": "reg:squarederror", "tree_method": "hist",
                     "grow_policy": "lossguide", "max_leaves": 24, "max_depth": 10, "eta": 0.3,
                     "nthread": THREADS, "seed": 0}, dm, 20)
    return Case("reg_unbalanced", X, booster_json(bst), "regression", bst.predict(dm))


def _ranker(objective, seed):
    """A ranker over query groups of 5..20 rows: Booster.predict is the margin."""
    X, rng = make_data(seed)
    relevance = np.digitize(signal(X) + rng.normal(0, 0.5, len(X)), [-1, 0.5, 2])  # 0..3
    sizes = []
    while sum(sizes) < len(X):
        sizes.append(int(min(rng.integers(5, 21), len(X) - sum(sizes))))
    dm = dmatrix(X, relevance)
    dm.set_group(sizes)
    bst = xgb.train({"objective": objective, "max_depth": 4, "eta": 0.3, "tree_method": "hist",
                     "nthread": THREADS, "seed": 0}, dm, 15)
    return Case(objective.replace(":", "_"), X, booster_json(bst), "regression", bst.predict(dm))


def case_rank_pairwise():
    return _ranker("rank:pairwise", 11)


def case_rank_ndcg():
    return _ranker("rank:ndcg", 12)


def case_rank_map():
    return _ranker("rank:map", 13)


def _regressor(name, params, y, X, rounds=20):
    dm = dmatrix(X, y)
    bst = xgb.train({"max_depth": 4, "eta": 0.3, "tree_method": "hist", "nthread": THREADS,
                     "seed": 0, **params}, dm, rounds)
    return Case(name, X, booster_json(bst), "regression", bst.predict(dm))


def case_reg_tweedie():
    """exp of the margin; the base score's margin is its log."""
    X, rng = make_data(14)
    y = rng.poisson(np.exp(np.clip(0.4 * signal(X), -3, 3))) * rng.gamma(2.0, 1.5, len(X))
    return _regressor("reg_tweedie", {"objective": "reg:tweedie",
                                      "tweedie_variance_power": 1.3, "base_score": 2.0}, y, X)


def case_reg_gamma():
    X, rng = make_data(15)
    y = np.exp(np.clip(0.3 * signal(X), -3, 3)) * rng.gamma(3.0, 1 / 3.0, len(X))
    return _regressor("reg_gamma", {"objective": "reg:gamma"}, y, X)


def case_reg_absoluteerror():
    """The base score is the fitted median (1.7's intercept estimate), the margin as is."""
    X, rng = make_data(16)
    y = signal(X) + rng.standard_t(2, len(X))
    return _regressor("reg_absoluteerror", {"objective": "reg:absoluteerror"}, y, X)


def case_reg_pseudohubererror():
    X, rng = make_data(17)
    y = 3 * signal(X) + rng.standard_t(2, len(X))
    return _regressor("reg_pseudohubererror", {"objective": "reg:pseudohubererror",
                                               "huber_slope": 2.0, "base_score": 0.5}, y, X)


CASES = {f.__name__[len("case_"):]: f for f in [
    case_binary_logistic, case_multi_softprob, case_multi_softmax, case_reg_squarederror,
    case_reg_logistic, case_count_poisson, case_binary_logitraw, case_binary_stumps,
    case_reg_single_leaf, case_reg_unbalanced, case_rank_pairwise, case_rank_ndcg,
    case_rank_map, case_reg_tweedie, case_reg_gamma, case_reg_absoluteerror,
    case_reg_pseudohubererror]}


@functools.lru_cache(maxsize=None)
def trained(name):
    return CASES[name]()


_loaded = set()


def loaded(env, case):
    """The case's table, loaded once per run."""
    if case.table not in _loaded:
        env.load_table(case.table, case.columns, case.X)
        _loaded.add(case.table)
    return case


# ---- comparing ---------------------------------------------------------------------------------

def array_expr(columns, cast):
    return f"ARRAY[{', '.join(c for c, _ in columns)}]::{cast}"


def check_case(env, case, model, label, arrays=True):
    """Compare every row of case.table scored by `model` with the case's expectations."""
    rows_sql = ["predict(%(m)s, t)"]
    if arrays:
        rows_sql += [f"predict(%(m)s, {array_expr(case.columns, 'real[]')})",
                     f"predict(%(m)s, {array_expr(case.columns, 'float8[]')})"]
    classifier = case.proba is not None
    if classifier:
        rows_sql += ["predict_proba(%(m)s, t)"]
        if arrays:
            rows_sql += [f"predict_proba(%(m)s, {array_expr(case.columns, 'real[]')})",
                         f"predict_proba(%(m)s, {array_expr(case.columns, 'float8[]')})"]
    rows = env.query(f"SELECT id, {', '.join(rows_sql)} FROM {case.table} t ORDER BY id",
                     {"m": model})
    ids = [r[0] for r in rows]
    assert_equal(f"{label}: rows", len(rows), len(case.X))
    n_pred = 3 if arrays else 1
    want_pred = case.predict.copy()
    for k in range(n_pred):
        got = to_floats([r[1 + k] for r in rows])
        if classifier:  # labels: accept either side of a near tie
            got = np.where(case.ambiguous, want_pred, got)
        what = ["predict(row)", "predict(real[])", "predict(float8[])"][k]
        assert_close(f"{label}: {what}", got, want_pred, ids=ids)
    if classifier:
        width = case.proba.shape[1]
        for k in range(n_pred):
            got = to_floats([r[1 + n_pred + k] for r in rows], width)
            what = ["predict_proba(row)", "predict_proba(real[])", "predict_proba(float8[])"][k]
            assert_close(f"{label}: {what}", got, case.proba, ids=ids)


def check_per_row(env, case, model, label):
    """The per-row path (pg_predict.enable_batching = off; a native program scores there without
    torch, runtime/one_row.cpp) against the batched one on every row: the same label, and the
    same values within two float32 ulps of max(1, |value|). The margins are equal bit for bit,
    so models without a link (reg:squarederror) must agree exactly, and so must softmax and
    exp ones (ATen runs the same vectorized code over one row as over many); a sigmoid over one
    row is ATen's scalar expf, as XGBoost computes it, while a batch goes through ATen's
    vectorized exp (its last rows too take the scalar one), whose sigmoid can end up to 2 ulps
    away (and 1 - p inherits that absolute difference)."""
    calls = ["predict(%(m)s, t)"] + (["predict_proba(%(m)s, t)"] if case.proba is not None else [])
    sql = f"SELECT id, {', '.join(calls)} FROM {case.table} t ORDER BY id"
    scored = {}
    for batching in ("on", "off"):
        with env.conn.transaction():
            env.conn.execute(f"SET LOCAL pg_predict.enable_batching = {batching}")
            plan = "\n".join(r[0] for r in env.query("EXPLAIN (costs off) " + sql, {"m": model}))
            if ("PredictBatch" in plan) != (batching == "on"):
                raise Failure(f"{label}: batching {batching}, but the plan is:\n{plan}")
            scored[batching] = env.query(sql, {"m": model})
    batched, per_row = scored["on"], scored["off"]
    assert_equal(f"{label}: per-row rows", len(per_row), len(batched))
    assert_equal(f"{label}: per-row ids", [r[0] for r in per_row], [r[0] for r in batched])
    if case.task == "classification":
        assert_equal(f"{label}: per-row labels", [r[1] for r in per_row], [r[1] for r in batched])
    width = case.proba.shape[1] if case.proba is not None else 1
    for k, call in enumerate(calls):
        b = np.asarray(to_floats([r[1 + k] for r in batched], width if k else None), dtype=np.float32)
        p = np.asarray(to_floats([r[1 + k] for r in per_row], width if k else None), dtype=np.float32)
        off = np.abs(b - p) > 2 * np.spacing(np.float32(1)) * np.maximum(1, np.abs(b))
        off |= np.isnan(b) != np.isnan(p)
        if off.any():
            i = int(np.argwhere(off)[0][0])
            raise Failure(f"{label}: {call} differs by more than 2 ulps between the batched and "
                          f"the per-row path on {int(off.sum())} values; row {batched[i][0]}: batched "
                          f"{batched[i][1 + k]}, per-row {per_row[i][1 + k]}")
    if json.loads(case.model_json)["learner"]["objective"]["name"] in ("reg:squarederror", "multi:softprob", "count:poisson"):
        assert_equal(f"{label}: per-row values (bit for bit)", per_row, batched)


def check_info(env, model, case, strategy):
    info = env.model_info(model)
    if strategy == "auto":
        if info["strategy"] not in STRATEGY_NAMES:
            raise Failure(f"{model}: models.strategy is {info['strategy']!r} for auto")
    else:
        assert_equal(f"{model}: models.strategy", info["strategy"], strategy)
    if case.task is not None:
        assert_equal(f"{model}: models.task", info["task"], case.task)
    if case.task == "classification":
        assert_equal(f"{model}: models.classes", list(info["classes"] or []),
                     [str(c) for c in range(case.proba.shape[1])])  # the class index, as text


def strategy_test(case_name, strategy):
    def run(env):
        case = loaded(env, trained(case_name))
        model = f"{case_name}_{strategy}"
        env.create_model(model, case.model_json, dict(case.options, strategy=strategy))
        check_info(env, model, case, strategy)
        check_case(env, case, model, model)
        if strategy in ("native", "auto"):  # other strategies sum in an order that depends on the batch
            check_per_row(env, case, model, model)
        env.drop_model(model)
    return run


for _case in CASES:
    for _strategy in STRATEGIES:
        add_test(f"{_case}[{_strategy}]", strategy_test(_case, _strategy))


# ---- feature naming ------------------------------------------------------------------------------

def test_unnamed_model(env):
    """A model without feature names scores arrays by position; rows need options.features."""
    X, rng = make_data(11)
    y = (signal(X) + rng.normal(0, 0.5, len(X)) > 0).astype(int)
    dm = xgb.DMatrix(X, label=y, missing=np.nan, nthread=THREADS)  # no feature names
    bst = xgb.train({"objective": "binary:logistic", "max_depth": 4, "eta": 0.3,
                     "tree_method": "hist", "nthread": THREADS, "seed": 0}, dm, 15)
    model_json = booster_json(bst)
    if json.loads(model_json)["learner"].get("feature_names"):
        raise Failure("xgboost wrote feature names for an unnamed DMatrix")
    p = bst.predict(dm)
    case = Case("unnamed", X, model_json, "classification", (p > 0.5).astype(float),
                np.column_stack([1 - p, p]))
    loaded(env, case)

    env.create_model("unnamed_plain", model_json)
    rows = env.query(f"SELECT predict_proba('unnamed_plain', "
                     f"{array_expr(case.columns, 'real[]')}) FROM {case.table} ORDER BY id")
    assert_close("unnamed_plain: predict_proba(real[])", to_floats([r[0] for r in rows], 2),
                 case.proba)
    try:
        with env.conn.transaction():
            env.query(f"SELECT predict('unnamed_plain', t) FROM {case.table} t LIMIT 1")
    except Exception:
        pass
    else:
        raise Failure("predict(row) of a model without feature names did not fail")
    env.drop_model("unnamed_plain")

    env.create_model("unnamed_named", model_json, {"features": FEATURES})
    assert_equal("unnamed_named: models.features", list(env.model_info("unnamed_named")["features"]),
                 FEATURES)
    check_case(env, case, "unnamed_named", "unnamed_named")
    env.drop_model("unnamed_named")


def test_columns_mapping(env):
    """options.columns maps the model's feature names to differently named columns."""
    names = ["age", "income", "visits", "score", "tenure", "rate"]
    X, rng = make_data(12)
    y = signal(X) + rng.normal(0, 0.3, len(X))
    dm = dmatrix(X, y, names=names)
    bst = xgb.train({"objective": "reg:squarederror", "max_depth": 4, "eta": 0.3,
                     "tree_method": "hist", "nthread": THREADS, "seed": 0}, dm, 15)
    columns = [(f"c_{n}", "real") for n in reversed(names)]  # other names, other order
    case = Case("mapped", X[:, ::-1], booster_json(bst), "regression", bst.predict(dm),
                columns=columns)
    loaded(env, case)
    env.create_model("mapped", case.model_json, {"columns": {n: f"c_{n}" for n in names}})
    rows = env.query(f"SELECT predict('mapped', t) FROM {case.table} t ORDER BY id")
    assert_close("mapped: predict(row)", to_floats([r[0] for r in rows]), case.predict)
    env.drop_model("mapped")


def test_column_types(env):
    """smallint, integer, bigint, real, double precision (full precision), numeric and boolean
    columns, converted to float32 exactly as xgboost converts float64 input."""
    rng = np.random.default_rng(13)
    n = N_ROWS
    X = np.column_stack([
        rng.integers(0, 72, n),                    # tenure smallint
        rng.integers(0, 1000, n),                  # visits integer
        rng.integers(0, 3_000_000_000, n),         # bytes bigint
        rng.normal(0, 1, n).astype(np.float32),    # ratio real
        rng.normal(100, 30, n),                    # amount double precision (not float32)
        np.round(rng.uniform(5, 120, n), 2),       # price numeric(10,2)
        rng.integers(0, 2, n),                     # active boolean
    ]).astype(np.float64)
    for j in range(X.shape[1]):
        X[rng.random(n) < 0.05, j] = np.nan
    columns = [("tenure", "smallint"), ("visits", "integer"), ("bytes", "bigint"),
               ("ratio", "real"), ("amount", "double precision"), ("price", "numeric(10,2)"),
               ("active", "boolean")]
    names = [c for c, _ in columns]
    Z = np.nan_to_num(X)
    y = ((Z[:, 0] < 24) + (Z[:, 4] > 110) + Z[:, 3] + 0.01 * Z[:, 5] + Z[:, 6]
         + (Z[:, 2] > 1.5e9) + rng.normal(0, 0.3, n) > 1.5).astype(int)
    dm = dmatrix(X, y, names=names)  # float64 in, float32 inside xgboost
    bst = xgb.train({"objective": "binary:logistic", "max_depth": 5, "eta": 0.3,
                     "nthread": THREADS, "seed": 0}, dm, 20)
    p = bst.predict(dm)
    case = Case("types", X, booster_json(bst), "classification", (p > 0.5).astype(float),
                np.column_stack([1 - p, p]), columns=columns)
    loaded(env, case)
    for strategy in ("tree_traversal", "perfect_tree_traversal", "native"):
        model = f"types_{strategy}"
        env.create_model(model, case.model_json, {"strategy": strategy})
        rows = env.query(f"SELECT predict({model!r}, t), predict_proba({model!r}, t) "
                         f"FROM {case.table} t ORDER BY id")
        got = to_floats([r[0] for r in rows])
        assert_close(f"{model}: predict(row)", np.where(case.ambiguous, case.predict, got),
                     case.predict)
        assert_close(f"{model}: predict_proba(row)", to_floats([r[1] for r in rows], 2),
                     case.proba)
        env.drop_model(model)


# ---- XGBoost 2.x JSON ------------------------------------------------------------------------------

def to_xgboost2(model_json):
    """Rewrite a 1.7 model JSON the way XGBoost 2.x writes the same model."""
    m = json.loads(model_json)
    m["version"] = [2, 0, 3]
    learner = m["learner"]
    lmp = learner["learner_model_param"]
    lmp["base_score"] = f"[{lmp['base_score']}]"
    lmp["num_target"] = "1"
    lmp.setdefault("boost_from_average", "1")
    if learner.get("feature_names"):
        learner["feature_types"] = ["float"] * len(learner["feature_names"])
    learner["attributes"] = {}
    gbm = learner["gradient_booster"]["model"]
    for tree in gbm["trees"]:
        n = len(tree["left_children"])
        tree["categories"] = []
        tree["categories_nodes"] = []
        tree["categories_segments"] = []
        tree["categories_sizes"] = []
        tree["split_type"] = [0] * n
    groups = max(1, int(lmp.get("num_class", "0")))
    n_trees = len(gbm["trees"])
    gbm["iteration_indptr"] = list(range(0, n_trees + 1, groups))
    return json.dumps(m)


def xgboost2_test(case_name):
    def run(env):
        case = loaded(env, trained(case_name))
        model = f"v2_{case_name}"
        v2 = to_xgboost2(case.model_json)
        env.create_model(model, v2)
        check_info(env, model, case, "auto")
        check_case(env, case, model, model, arrays=False)
        env.drop_model(model)
    return run


for _case in ("binary_logistic", "multi_softprob", "reg_squarederror", "reg_logistic"):
    add_test(f"xgboost_2x_json[{_case}]", xgboost2_test(_case))


def test_deep_trees(env):
    """Trees deeper than the native kernel's perfect layout (depth > 12): its generic layout,
    against xgboost, next to tree_traversal (GEMM and perfect trees would be too big)."""
    X, rng = make_data(15, n=800)
    y = signal(X) ** 2 + rng.normal(0, 0.3, len(X))
    dm = dmatrix(X, y)
    bst = xgb.train({"objective": "reg:squarederror", "tree_method": "hist",
                     "grow_policy": "lossguide", "max_leaves": 256, "max_depth": 0,
                     "min_child_weight": 0, "eta": 0.3, "nthread": THREADS, "seed": 0}, dm, 10)
    model_json = booster_json(bst)
    depth = max(_tree_depth(t) for t in json.loads(model_json)["learner"]["gradient_booster"]
                ["model"]["trees"])
    if depth <= 12:
        raise Failure(f"deep_trees: xgboost grew trees of depth {depth} only, want > 12")
    case = Case("deep", X, model_json, "regression", bst.predict(dm))
    loaded(env, case)
    for strategy in ("tree_traversal", "native", "auto"):
        model = f"deep_{strategy}"
        env.create_model(model, case.model_json, {"strategy": strategy})
        check_info(env, model, case, strategy)
        check_case(env, case, model, model)
        env.drop_model(model)


def test_long_sums(env):
    """A sum over many trees is summed in the kernel's order, XGBoost's in tree order, both in
    float32: docs/semantics.md bounds the difference of the margins by 2 * T * 2^-24 * (|base
    score| + the sum of the |leaf values| the row reaches), T trees. 20,000 one-split trees
    with random leaves (a model written here, loaded and scored by XGBoost itself), every
    strategy, batched and per row: every row within the bound; and most rows agree much better
    (the bound is not what the kernel usually does)."""
    T, n = 20000, 44
    rng = np.random.default_rng(46)
    X = rng.normal(0, 1, (n, len(FEATURES))).astype(np.float32)
    template = json.loads(booster_json(xgb.train(
        {"objective": "reg:squarederror", "max_depth": 1, "base_score": 0.25, "nthread": 1, "seed": 0},
        dmatrix(X, rng.normal(0, 1, n)), 1)))
    model = template["learner"]["gradient_booster"]["model"]
    stump = model["trees"][0]
    feature = rng.integers(0, len(FEATURES), T)
    threshold = rng.normal(0, 1, T).astype(np.float32)
    leaves = rng.normal(0, 0.05, (T, 2)).astype(np.float32)
    trees = []
    for t in range(T):
        tree = copy.deepcopy(stump)
        tree["id"] = t
        tree["split_indices"] = [int(feature[t]), 0, 0]
        tree["split_conditions"] = [float(threshold[t]), float(leaves[t, 0]), float(leaves[t, 1])]
        tree["base_weights"] = [0.0, float(leaves[t, 0]), float(leaves[t, 1])]
        tree["default_left"] = [1, 0, 0] if isinstance(stump["default_left"][0], int) else [True, False, False]
        trees.append(tree)
    model["trees"] = trees
    model["tree_info"] = [0] * T
    model["gbtree_model_param"]["num_trees"] = str(T)
    artifact = json.dumps(template)
    bst = xgb.Booster()
    bst.load_model(bytearray(artifact, "utf-8"))
    want = bst.predict(dmatrix(X)).astype(np.float64)
    # the leaves each row reaches (XGBoost: x < threshold goes left)
    reached = np.where(X[:, feature] < threshold[None, :], leaves[None, :, 0], leaves[None, :, 1])
    bound = 2 * T * 2.0 ** -24 * (0.25 + np.abs(reached.astype(np.float64)).sum(axis=1))
    env.load_table("long_sums", real_columns(), X)
    worst = 0.0
    for strategy in ("native", "tree_traversal", "perfect_tree_traversal"):
        env.create_model("long_sums", artifact, {"strategy": strategy})
        for batching in ("on", "off"):
            env.conn.execute(f"SET pg_predict.enable_batching = {batching}")
            got = to_floats([r[0] for r in env.query("SELECT predict('long_sums', t) FROM long_sums t ORDER BY id")])
            env.conn.execute("RESET pg_predict.enable_batching")
            over = np.abs(got - want) > bound
            if over.any():
                i = int(np.argmax(over))
                raise Failure(f"{strategy}, batching {batching}: row {i + 1} is {got[i]!r}, XGBoost {want[i]!r}: "
                              f"{abs(got[i] - want[i]):.3g} apart, beyond the documented bound {bound[i]:.3g}")
            worst = max(worst, float((np.abs(got - want) / bound).max()))
    env.drop_model("long_sums")
    print(f"  {T} trees: the largest difference is {worst:.3g} of the documented bound")


def test_process_exits(env):
    """Processes that loaded libtorch leave through proc_exit without its static destructors
    (src/pg/fast_exit.cpp), which must not change how they end: parallel workers that scored
    exit with code 0, a backend that scored and was terminated does not make the postmaster
    reinitialize the cluster, and models keep answering. A server of its own, logging every
    worker's exit (log_min_messages = debug1)."""
    X, rng = make_data(21, n=4000, nan_frac=0)
    y = (signal(X) > 0).astype(int)
    bst = xgb.train({"objective": "binary:logistic", "max_depth": 4, "eta": 0.3,
                     "nthread": THREADS, "seed": 0}, dmatrix(X, y), 20)
    want = float(bst.predict(dmatrix(X)).sum())
    settings = {"log_min_messages": "debug1", "max_parallel_workers_per_gather": 2,
                "parallel_setup_cost": 0, "parallel_tuple_cost": 0,
                "min_parallel_table_scan_size": 0, "parallel_leader_participation": "off"}
    sum_sql = "SELECT sum((predict_proba('exits', t))[2]) FROM exits t"
    with Cluster(settings=settings, prefix="pg_predict-exit-") as pg:
        own = Env(pg)
        own.conn.execute("CREATE EXTENSION pg_predict")
        own.load_table("exits", [(f, "real") for f in FEATURES], X)
        own.create_model("exits", booster_json(bst))
        started = own.query("SELECT pg_postmaster_start_time()")[0][0]
        for _ in range(3):
            plan = own.query(f"EXPLAIN (ANALYZE, FORMAT JSON) {sum_sql}")[0][0]
            gather = plan[0]["Plan"]["Plans"][0]
            assert_equal("parallel workers launched", gather.get("Workers Launched"), 2)
            assert_close("sum of P(class 1), 2 workers", to_floats([own.query(sum_sql)[0][0]]),
                         np.array([want]))
        with pg.connect() as victim:
            pid = victim.execute("SELECT pg_backend_pid()").fetchone()[0]
            victim.execute("SET max_parallel_workers_per_gather = 0")
            victim.execute(sum_sql).fetchone()
            own.query("SELECT pg_terminate_backend(%s, 10000)", [pid])
        with pg.connect() as scored_and_left:
            scored_and_left.execute(sum_sql).fetchone()
        time.sleep(0.5)  # the last exits reach the postmaster
        assert_equal("postmaster start time (no crash restart)",
                     own.query("SELECT pg_postmaster_start_time()")[0][0], started)
        assert_close("sum after the exits", to_floats([own.query(sum_sql)[0][0]]), np.array([want]))
        own.conn.close()
        with open(pg.logfile, errors="replace") as f:
            log = f.read()
    codes = re.findall(r'background worker "parallel worker" \(PID \d+\) exited with exit code (\d+)', log)
    if len(codes) < 6 or set(codes) != {"0"}:
        raise Failure(f"parallel workers' exit codes: {codes} (want at least 6, all 0)")
    for bad in ("terminated by signal", "terminating any other active server processes"):
        if bad in log:
            raise Failure(f"the server log says '{bad}'")


for _fn in (test_unnamed_model, test_columns_mapping, test_column_types, test_deep_trees,
            test_long_sums, test_process_exits):
    add_test(_fn.__name__[len("test_"):], _fn)


# ---- the "done" check: 500 trees of depth 8 over 28 columns -------------------------------------

HIGGS_ROWS = 3000
HIGGS_FEATURES = [f"x{i:02d}" for i in range(28)]


@functools.lru_cache(maxsize=None)
def higgs_model():
    """HIGGS-like data: 21 'low-level' kinematic columns, 7 'high-level' mass-like ones."""
    rng = np.random.default_rng(14)
    n = HIGGS_ROWS
    low = []
    for k in range(7):  # per particle: pT (positive, skewed), eta (normal), phi (uniform)
        low += [rng.lognormal(0, 0.5, n), rng.normal(0, 1.2, n), rng.uniform(-np.pi, np.pi, n)]
    low = np.column_stack(low)
    high = np.column_stack([rng.lognormal(0, 0.3, n) for _ in range(7)])
    X = np.column_stack([low, high]).astype(np.float32)
    z = (1.2 * (high[:, 0] - 1) + 0.8 * np.cos(low[:, 2] - low[:, 5]) * low[:, 0]
         - 0.5 * np.abs(low[:, 1]) + 0.7 * (high[:, 3] > 1.1) * high[:, 5]
         + 0.3 * low[:, 9] * low[:, 12] - 0.4 * (high[:, 6] - 1) ** 2)
    y = (z + rng.logistic(0, 0.6, n) > np.median(z)).astype(int)
    dm = dmatrix(X, y, names=HIGGS_FEATURES)
    t0 = time.perf_counter()
    bst = xgb.train({"objective": "binary:logistic", "max_depth": 8, "eta": 0.1,
                     "tree_method": "hist", "nthread": THREADS, "seed": 0}, dm, 500)
    train_s = time.perf_counter() - t0
    depth = max(_tree_depth(t) for t in json.loads(booster_json(bst))["learner"]
                ["gradient_booster"]["model"]["trees"])
    p = bst.predict(dm)
    t0 = time.perf_counter()
    bst.predict(dmatrix(X[:1000], names=HIGGS_FEATURES))
    xgb_1000_s = time.perf_counter() - t0
    print(f"    higgs: trained 500 trees (max depth {depth}) on {n} rows × 28 in {train_s:.1f}s; "
          f"xgboost predicts 1000 rows in {1000 * xgb_1000_s:.1f} ms", flush=True)
    case = Case("higgs", X, booster_json(bst), "classification", (p > 0.5).astype(float),
                np.column_stack([1 - p, p]), columns=real_columns(HIGGS_FEATURES))
    return case


def _tree_depth(tree):
    left, right = tree["left_children"], tree["right_children"]
    depth, frontier = 0, [(0, 0)]
    while frontier:
        node, d = frontier.pop()
        depth = max(depth, d)
        if left[node] >= 0:
            frontier += [(left[node], d + 1), (right[node], d + 1)]
    return depth


def higgs_test(strategy):
    def run(env):
        case = loaded(env, higgs_model())
        model = f"higgs_{strategy}"
        create_s = env.create_model(model, case.model_json, {"strategy": strategy})
        info = env.model_info(model)
        check_info(env, model, case, strategy)
        assert_equal(f"{model}: models.trees", info["trees"], 500)
        rows = env.query(f"SELECT id, (predict_proba(%s, t))[2] FROM {case.table} t ORDER BY id",
                         [model])
        assert_close(f"{model}: predict_proba(row)[2]", to_floats([r[1] for r in rows]),
                     case.proba[:, 1], ids=[r[0] for r in rows])
        # Timings (informational only): a fresh backend, so the first query loads the program.
        sum_sql = (f"SELECT sum(predict(%s, t)) FROM "
                   f"(SELECT * FROM {case.table} ORDER BY id LIMIT 1000) t")
        with env.pg.connect() as conn:
            times = []
            for _ in range(2):
                t0 = time.perf_counter()
                total = conn.execute(sum_sql, [model]).fetchone()[0]
                times.append(time.perf_counter() - t0)
        want_total = float(case.predict[:1000].sum())
        print(f"    {model}: create_model {1000 * create_s:.0f} ms "
              f"(program {info['program_bytes']} bytes, strategy {info['strategy']}); "
              f"SELECT sum(predict(...)) over 1000 rows: {1000 * times[0]:.0f} ms in a new "
              f"backend, {1000 * times[1]:.0f} ms again (sum {total}, xgboost {want_total:g})",
              flush=True)
        env.drop_model(model)
    return run


for _strategy in ("tree_traversal", "perfect_tree_traversal", "native", "auto"):
    add_test(f"higgs_500_trees_depth_8[{_strategy}]", higgs_test(_strategy))


def test_reg_quantileerror(env):
    """reg:quantileerror is XGBoost 2.0's (1.7.4, installed here, lacks it): a one-quantile
    model predicts the margin, as reg:absoluteerror does (the 0.5 quantile), so the trained
    absolute-error model renamed the way 2.0 writes it must predict what XGBoost predicted for
    it; with several quantiles (num_target > 1: one column each) it is refused, naming them."""
    case = loaded(env, trained("reg_absoluteerror"))
    m = json.loads(to_xgboost2(case.model_json))
    m["learner"]["objective"] = {"name": "reg:quantileerror",
                                 "quantile_loss_param": {"quantile_alpha": "[5E-1]"}}
    env.create_model("quantile_one", json.dumps(m))
    check_info(env, "quantile_one", case, "auto")
    check_case(env, case, "quantile_one", "quantile_one", arrays=False)
    env.drop_model("quantile_one")
    m["learner"]["learner_model_param"]["num_target"] = "3"
    m["learner"]["objective"]["quantile_loss_param"]["quantile_alpha"] = "[1E-1,5E-1,9E-1]"
    try:
        with env.conn.transaction():
            env.create_model("quantile_three", json.dumps(m))
    except Exception as e:
        for needle in ("reg:quantileerror", "3 quantiles", "quantile_alpha"):
            if needle not in str(e):
                raise Failure(f"the refusal {str(e)!r} does not mention {needle!r}")
    else:
        raise Failure("a reg:quantileerror model with 3 quantiles was not refused")


add_test("reg_quantileerror", test_reg_quantileerror)


def test_model_name_per_row(env):
    """predict('tenant_' || t.tenant, t): each row scored by the model its row names, against
    that model's own XGBoost predictions. Two binary classifiers and a 3-class one on all six
    features and a regressor on three (models of different widths read their own columns), names
    interleaved at random, the same rows sorted by name, NULL names (NULL results), a name that
    does not exist (its error names it). Batched (the plan says "per row"), per row, in parallel
    workers, and with pg_predict.cache_size = 0 (every model released when another is bound,
    mid-batch); predict_proba's arrays have each model's own width."""
    X, rng = make_data(31, n=3000)
    models = {}
    for name, names, objective, seed in (("a", FEATURES, "binary:logistic", 1), ("b", FEATURES, "binary:logistic", 2),
                                         ("c", FEATURES[:3], "reg:squarederror", 3),
                                         ("d", FEATURES, "multi:softprob", 4)):
        cols = [FEATURES.index(f) for f in names]
        Xs = X[:, cols]
        y = signal(X) + rng.normal(0, 0.5, len(X))
        params = {"objective": objective, "max_depth": 4, "eta": 0.3, "tree_method": "hist",
                  "nthread": THREADS, "seed": seed}
        if objective == "binary:logistic":
            y = (y > 0).astype(int)
        if objective == "multi:softprob":
            y = np.digitize(y, [-0.5, 0.5])
            params["num_class"] = 3
        bst = xgb.train(params, dmatrix(Xs, y, names), 12)
        models[name] = (bst, cols, objective)
        env.create_model(f"tenant_{name}", booster_json(bst))
    tenants = rng.choice(["a", "b", "c", "d", None], size=len(X), p=[0.25, 0.25, 0.2, 0.2, 0.1])
    env.conn.execute("DROP TABLE IF EXISTS tenants")
    env.conn.execute("CREATE TABLE tenants (id int PRIMARY KEY, tenant text, "
                     + ", ".join(f"{f} real" for f in FEATURES) + ")")
    with env.conn.cursor() as cur:
        with cur.copy("COPY tenants FROM STDIN") as cp:
            for i, row in enumerate(X):
                cp.write_row([i + 1, tenants[i]] + [None if np.isnan(v) else float(v) for v in row])
    env.conn.execute("ANALYZE tenants")
    want = np.full(len(X), np.nan)
    want_proba = [None] * len(X)
    for name, (bst, cols, objective) in models.items():
        rows = np.flatnonzero(tenants == name)
        pred = bst.predict(dmatrix(X[rows][:, cols], names=[FEATURES[c] for c in cols]))
        if objective == "binary:logistic":
            want[rows] = (pred > 0.5).astype(float)
            for r, p in zip(rows, pred):
                want_proba[r] = [1 - p, p]
        elif objective == "multi:softprob":
            want[rows] = pred.argmax(axis=1)
            for r, p in zip(rows, pred):
                want_proba[r] = list(p)
        else:
            want[rows] = pred
    query = "SELECT id, predict('tenant_' || tenant, t) FROM tenants t ORDER BY {order}"
    plan = "\n".join(r[0] for r in env.query("EXPLAIN (COSTS OFF) " + query.format(order="id")))
    if "PredictBatch" not in plan or "(per row)" not in plan:
        raise Failure(f"the per-row name is not batched:\n{plan}")
    settings = {
        "batched": [],
        "per-row path": ["SET pg_predict.enable_batching = off"],
        "cache_size 0": ["SET pg_predict.cache_size = 0"],
        "parallel": ["SET parallel_setup_cost = 0", "SET parallel_tuple_cost = 0",
                     "SET min_parallel_table_scan_size = 0", "SET max_parallel_workers_per_gather = 2"],
    }
    for label, sets in settings.items():
        for statement in sets:
            env.conn.execute(statement)
        try:
            if label == "parallel":
                plan = "\n".join(r[0] for r in env.query("EXPLAIN (COSTS OFF) " + query.format(order="id")))
                if "Parallel Custom Scan (PredictBatch)" not in plan:
                    raise Failure(f"no parallel plan:\n{plan}")
            for order in ("id", "tenant, id"):
                got = env.query(query.format(order=order))
                ids = np.array([r[0] for r in got]) - 1
                values = np.array([np.nan if r[1] is None else r[1] for r in got], dtype=np.float64)
                assert_equal(f"{label}: NULL names give NULL ({order})", list(np.isnan(values)),
                             list(np.isnan(want[ids])))
                known = ~np.isnan(want[ids])
                assert_close(f"{label}: every row by its own model ({order})", values[known], want[ids][known])
            got = env.query("SELECT id, predict_proba('tenant_' || tenant, t) FROM tenants t "
                            "WHERE tenant <> 'c' ORDER BY id")
            for i, proba in got:
                assert_close(f"{label}: predict_proba of row {i} (tenant {tenants[i - 1]})", proba,
                             want_proba[i - 1])
        finally:
            env.conn.execute("RESET ALL")
    try:
        with env.conn.transaction():
            env.query("SELECT predict(CASE WHEN id = 7 THEN 'tenant_zz' ELSE 'tenant_a' END, t) FROM tenants t")
    except Exception as e:
        if 'model "tenant_zz" does not exist' not in str(e):
            raise Failure(f"the unknown name's error does not name it: {e}")
    else:
        raise Failure("a row naming a model that does not exist was scored")
    for name in models:
        env.drop_model(f"tenant_{name}")


add_test("model_name_per_row", test_model_name_per_row)

if __name__ == "__main__":
    main(fixture=make_env)
