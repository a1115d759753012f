#!/usr/bin/python3
"""Conformance: predicate-based model pruning (pg_predict.prune_models) gives, on every row, bit
for bit what the unpruned plan gives.

Models trained here on random data by XGBoost and scikit-learn (a decision tree, a random
forest, gradient boosting, and a pipeline that one-hot encodes a text column before gradient
boosting, and a HistGradientBoosting pipeline over an ordinal-encoded text column), and LightGBM models from regress/fixtures/lightgbm (LightGBM is not in Debian). For
random predicates on their feature columns (=, <, <=, >, >=, BETWEEN, IS NULL, IN with one or
more values; constants at split thresholds, just beside them and between them; int, double precision,
real, numeric and text columns with NULLs and NaN in the data) each query runs with
prune_models on and off; every score (predict, predict_proba) must be identical, and predict()
per row (enable_batching off, never pruned) too. EXPLAIN must show "Pruned:" for most predicates.

Run: /usr/bin/python3 regress/conformance/test_pruning.py [-k name] [--list]
Needs the extension installed (make install). Last line: 'conformance: N passed, M failed'.
"""

import contextlib
import csv
import json
import math
import os
import random
import sys

import numpy as np

from harness import Failure, add_test, main
from pgcluster import Cluster

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import pg_predict  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
LIGHTGBM = os.path.join(HERE, "..", "fixtures", "lightgbm")
PLANS = ["basic", "plus", "pro", "team"]


class Env:
    def __init__(self, pg):
        self.pg = pg
        self.conn = pg.connect()
        self.conn.execute("CREATE EXTENSION pg_predict")
        self.conn.execute("SET max_parallel_workers_per_gather = 0")

    def query(self, sql, params=None):
        return self.conn.execute(sql, params).fetchall()


@contextlib.contextmanager
def make_env():
    with Cluster() as pg:
        env = Env(pg)
        try:
            env.rows = make_table(env)
            yield env
        finally:
            env.conn.close()


# ---- data: a table with int, float8, real, numeric and text columns, NULLs and NaN -----------

def make_table(env, n=500, seed=15):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        a = None if rng.random() < 0.08 else int(rng.integers(0, 40))
        b = None if rng.random() < 0.08 else float(np.round(rng.normal(0, 3), 1))
        if b is not None and rng.random() < 0.04:
            b = float("nan")
        c = None if rng.random() < 0.08 else float(np.float32(rng.uniform(-5, 5)))
        d = None if rng.random() < 0.08 else round(float(rng.uniform(0, 100)), 2)
        plan = None if rng.random() < 0.08 else PLANS[int(rng.integers(0, 4))]
        rows.append((i, a, b, c, d, plan))
    env.conn.execute("CREATE TABLE t (id int PRIMARY KEY, a int, b float8, c real, d numeric, plan text)")
    with env.conn.cursor() as cur:
        cur.executemany("INSERT INTO t VALUES (%s, %s, %s, %s, %s, %s)", rows)
    env.conn.execute("ANALYZE t")
    return rows


def matrix(rows, text=False):
    """The numeric columns a, b, c, d as float64 (NULL -> NaN), and plan as text."""
    X = np.array([[np.nan if v is None else float(v) for v in r[1:5]] for r in rows])
    plans = [r[5] if r[5] is not None else "basic" for r in rows]
    return X, plans


def target(X, plans):
    Z = np.nan_to_num(X)
    bonus = np.array([PLANS.index(p) for p in plans], dtype=float)
    return 0.05 * Z[:, 0] - 0.3 * Z[:, 1] + np.sin(Z[:, 2]) + 0.01 * Z[:, 3] + bonus


# ---- predicates -----------------------------------------------------------------------------

def thresholds_of(doc_or_text):
    """Every split threshold in a model artifact (XGBoost JSON, an sklearn document, a LightGBM
    text), found by key name: a pool of constants for the predicates."""
    found = []

    def walk(v, key=None):
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, k)
        elif isinstance(v, list):
            if key in ("split_conditions", "threshold") and all(isinstance(x, (int, float)) for x in v):
                found.extend(float(x) for x in v if abs(float(x)) < 1e6)
            else:
                for x in v:
                    walk(x, key)

    if isinstance(doc_or_text, str) and doc_or_text.startswith("tree"):
        for line in doc_or_text.splitlines():
            if line.startswith("threshold="):
                found.extend(float(x) for x in line.split("=", 1)[1].split() if abs(float(x)) < 1e6)
        return found
    walk(json.loads(doc_or_text) if isinstance(doc_or_text, str) else doc_or_text)
    return found


def literal(column_type, value):
    if column_type == "int":
        return str(int(math.floor(value)))
    if column_type == "real":
        return f"{float(np.float32(value))!r}::real"
    if column_type == "numeric":
        return f"{value:.6f}"
    return repr(float(value))


def random_predicate(rng, columns, pool):
    """A WHERE clause of one or two bounds on `columns` [(name, type)] with constants from
    `pool` (thresholds), beside them, or between them."""
    clauses = []
    for _ in range(rng.choice([1, 1, 2])):
        name, column_type = rng.choice(columns)
        if column_type == "text":
            op = rng.choice(["=", "=", "IN", "IN2", "IS NULL", "= unknown"])
            if op == "IN2":
                values = rng.sample(PLANS + ["enterprise"], rng.choice([2, 3]))
                clauses.append(f"{name} IN (" + ", ".join(f"'{v}'" for v in values) + ")")
            elif op == "IS NULL":
                clauses.append(f"{name} IS NULL")
            elif op == "= unknown":
                clauses.append(f"{name} = 'enterprise'")
            elif op == "IN":
                clauses.append(f"{name} IN ('{rng.choice(PLANS)}')")
            else:
                clauses.append(f"{name} = '{rng.choice(PLANS)}'")
            continue
        t = rng.choice(pool) if pool else 0.0
        kind = rng.random()
        if kind < 0.3:
            v = t
        elif kind < 0.5:
            v = float(np.nextafter(np.float32(t), np.float32(np.inf)))
        elif kind < 0.6:
            v = float(np.nextafter(np.float32(t), np.float32(-np.inf)))
        else:
            v = t + rng.choice([-1, 1]) * rng.random() * 2
        op = rng.choice(["=", "<", "<=", ">", ">=", "BETWEEN", "IS NULL", "IN"])
        if op == "IS NULL":
            clauses.append(f"{name} IS NULL")
        elif op == "BETWEEN":
            w = rng.choice(pool) if pool else v + 1
            lo, hi = sorted((v, w))
            clauses.append(f"{name} BETWEEN {literal(column_type, lo)} AND {literal(column_type, hi)}")
        elif op == "IN":
            w = rng.choice(pool) if pool and rng.random() < 0.5 else None
            values = [v] if w is None else [v, w]
            clauses.append(f"{name} IN (" + ", ".join(literal(column_type, x) for x in values) + ")")
        else:
            clauses.append(f"{name} {op} {literal(column_type, v)}")
    return " AND ".join(clauses)


# ---- the comparison -------------------------------------------------------------------------

def scores(env, select, where, prune, batching=True, table="t"):
    env.conn.execute(f"SET pg_predict.prune_models = {'on' if prune else 'off'}")
    env.conn.execute(f"SET pg_predict.enable_batching = {'on' if batching else 'off'}")
    try:
        return env.query(f"SELECT id, {select} FROM {table} t WHERE {where} ORDER BY id")
    finally:
        env.conn.execute("RESET pg_predict.prune_models")
        env.conn.execute("RESET pg_predict.enable_batching")


def same(x, y):
    if isinstance(x, list) and isinstance(y, list):
        return len(x) == len(y) and all(same(a, b) for a, b in zip(x, y))
    if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
        return True
    return x == y


def compare(env, model, where, selects, per_row, table="t"):
    pruned_plan = "\n".join(r[0] for r in env.query(
        f"EXPLAIN (costs off) SELECT id, {selects[0]} FROM {table} t WHERE {where}"))
    for select in selects:
        want = scores(env, select, where, prune=False, table=table)
        got = scores(env, select, where, prune=True, table=table)
        if len(got) != len(want):
            raise Failure(f"{model} WHERE {where}: {len(got)} rows pruned, {len(want)} unpruned")
        for g, w in zip(got, want):
            if g[0] != w[0] or not same(g[1], w[1]):
                raise Failure(f"{model} WHERE {where}: {select} of id {w[0]}: pruned {g[1]!r}, unpruned {w[1]!r}"
                              f"\n{pruned_plan}")
        # Per row (never pruned): predict() bit for bit; a probability's link may differ from the
        # batched one in the last bit (docs/execution.md: vectorized against scalar exp), so only predict.
        if per_row and select == selects[0]:
            row = scores(env, select, where, prune=True, batching=False, table=table)
            for g, w in zip(row, want):
                if not same(g[1], w[1]):
                    raise Failure(f"{model} WHERE {where}: per row {g[1]!r}, batched unpruned {w[1]!r}")
    return "Pruned:" in pruned_plan


def run_predicates(env, model, columns, pool, selects, count=30, per_row=False, seed=0, want_pruned=0.3):
    rng = random.Random(seed)
    pruned = 0
    for _ in range(count):
        where = random_predicate(rng, columns, pool)
        pruned += compare(env, model, where, selects, per_row)
    print(f"  {model}: {pruned} of {count} pruned", flush=True)
    if pruned < want_pruned * count:
        raise Failure(f"{model}: only {pruned} of {count} predicates pruned anything")


NUMERIC = [("a", "int"), ("b", "float8"), ("c", "real"), ("d", "numeric")]


def xgboost_case(objective, num_class=None):
    def run(env):
        import xgboost as xgb
        X, plans = matrix(env.rows)
        y = target(X, plans)
        params = {"max_depth": 4, "eta": 0.3, "objective": objective, "nthread": 1, "seed": 1}
        if num_class:
            params["num_class"] = num_class
            y = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
        elif objective == "binary:logistic":
            y = (y > np.median(y)).astype(float)
        d = xgb.DMatrix(X, label=y, feature_names=["a", "b", "c", "d"], missing=np.nan)
        bst = xgb.train(params, d, num_boost_round=40)
        text = bst.save_raw("json").decode()
        env.conn.execute("SELECT create_model(%s, %s::jsonb, options => %s::jsonb)",
                         [f"xgb_{objective}", text, json.dumps({"strategy": "native"})])
        selects = [f"predict('xgb_{objective}', t)"]
        if objective != "reg:squarederror":
            selects.append(f"predict_proba('xgb_{objective}', t)")
        run_predicates(env, f"xgb_{objective}", NUMERIC, thresholds_of(text), selects, per_row=True,
                       seed=hash(objective) % 1000)
        # Every other strategy compiles its own specialized program.
        for strategy in ["tree_traversal", "perfect_tree_traversal", "gemm"]:
            env.conn.execute(f"SET pg_predict.strategy = '{strategy}'")
            try:
                run_predicates(env, f"xgb_{objective} ({strategy})", NUMERIC, thresholds_of(text), selects,
                               count=8, seed=3)
            finally:
                env.conn.execute("RESET pg_predict.strategy")
    return run


for objective, classes in [("reg:squarederror", None), ("binary:logistic", None), ("multi:softprob", 3)]:
    add_test(f"xgboost_{objective.split(':')[1]}", xgboost_case(objective, classes))


def xgboost_categorical(env):
    """XGBoost with categorical splits (enable_categorical): a, integers 0..39, as its codes;
    plan, text, through option "categories" (deploy's categories=frame). A predicate on either
    decides the category-set splits (one-hot columns summed per set, optimizer/specialize.cpp);
    plan = 'enterprise' (no category) is a missing value and prunes as one."""
    import pandas as pd
    import xgboost as xgb
    X, _ = matrix(env.rows)
    plans = [r[5] for r in env.rows]
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    frame["a"] = pd.Categorical(frame["a"], categories=list(range(40)))
    frame["plan"] = pd.Categorical(plans, categories=PLANS)
    y = target(X, [p or "basic" for p in plans])
    y = (y > np.median(y)).astype(int)
    d = xgb.DMatrix(frame, label=y, enable_categorical=True)
    bst = xgb.train({"max_depth": 4, "eta": 0.3, "objective": "binary:logistic", "tree_method": "hist",
                     "max_cat_to_onehot": 1, "nthread": 1, "seed": 1}, d, num_boost_round=30)
    name = "xgb_categorical"
    pg_predict.deploy(env.conn, name, bst, categories=frame, options={"strategy": "native"})
    selects = [f"predict('{name}', t)", f"predict_proba('{name}', t)"]
    columns = NUMERIC + [("plan", "text")] * 3
    pool = thresholds_of(bst.save_raw("json").decode()) + list(range(0, 40, 3))
    run_predicates(env, name, columns, pool, selects, count=40, per_row=True, seed=46)
    for strategy in ["tree_traversal", "perfect_tree_traversal", "gemm"]:
        env.conn.execute(f"SET pg_predict.strategy = '{strategy}'")
        try:
            run_predicates(env, f"{name} ({strategy})", columns, pool, selects, count=8, seed=7)
        finally:
            env.conn.execute("RESET pg_predict.strategy")
    for where in ["plan = 'enterprise'", "plan IN ('pro', 'team')", "a = 7", "a IN (3, 4) AND plan = 'basic'"]:
        if not compare(env, name, where, selects, per_row=True):
            raise Failure(f"{name}: WHERE {where} pruned nothing")


add_test("xgboost_categorical", xgboost_categorical)


def sklearn_case(name, make, text=False, classifier=False):
    def run(env):
        import pandas as pd
        X, plans = matrix(env.rows)
        y = target(X, plans)
        if classifier:
            y = np.digitize(y, np.quantile(y, [0.5] if classifier == 2 else [1 / 3, 2 / 3]))
        frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
        if text:
            frame["plan"] = plans
        estimator = make()
        # scikit-learn's trees take no NaN before 1.3: fill for training only
        estimator.fit(frame.fillna(0) if not text else frame.fillna({"a": 0, "b": 0, "c": 0, "d": 0}), y)
        doc = pg_predict.export(estimator)
        env.conn.execute("SELECT create_model(%s, %s::jsonb)", [name, json.dumps(doc)])
        selects = [f"predict('{name}', t)"]
        if classifier:
            selects.append(f"predict_proba('{name}', t)")
        columns = NUMERIC + ([("plan", "text")] * 3 if text else [])
        run_predicates(env, name, columns, thresholds_of(doc), selects, seed=len(name))
    return run


def _tree():
    from sklearn.tree import DecisionTreeRegressor
    return DecisionTreeRegressor(max_depth=6, random_state=0)


def _forest():
    from sklearn.ensemble import RandomForestClassifier
    return RandomForestClassifier(n_estimators=20, max_depth=5, random_state=0)


def _boosting():
    from sklearn.ensemble import GradientBoostingClassifier
    return GradientBoostingClassifier(n_estimators=30, max_depth=3, random_state=0)


def _text_pipeline():
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder
    columns = ColumnTransformer([("plan", OneHotEncoder(handle_unknown="ignore"), ["plan"])],
                                remainder="passthrough")
    return Pipeline([("columns", columns),
                     ("model", GradientBoostingRegressor(n_estimators=40, max_depth=3, random_state=0))])


def _ordinal_pipeline():
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OrdinalEncoder
    columns = ColumnTransformer([("plan", OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1),
                                  ["plan"])], remainder="passthrough")
    return Pipeline([("columns", columns),
                     ("model", HistGradientBoostingRegressor(max_iter=40, max_depth=4, random_state=0))])


add_test("sklearn_tree", sklearn_case("sk_tree", _tree))
add_test("sklearn_ordinal_pipeline", sklearn_case("sk_ordinal", _ordinal_pipeline, text=True))
add_test("sklearn_forest", sklearn_case("sk_forest", _forest, classifier=2))
add_test("sklearn_boosting", sklearn_case("sk_boosting", _boosting, classifier=3))
add_test("sklearn_text_pipeline", sklearn_case("sk_text", _text_pipeline, text=True))


def text_column_not_read(env):
    """A fixed text value folds its one-hot columns (or its ordinal code): the trees' splits on
    them are decided and the scan does not read the column."""
    for name, make in (("sk_text_fixed", _text_pipeline), ("sk_ordinal_fixed", _ordinal_pipeline)):
        sklearn_case(name, make, text=True)(env)
        for value in PLANS + ["enterprise"]:
            plan = "\n".join(r[0] for r in env.query(
                f"EXPLAIN (costs off, verbose) SELECT id, predict('{name}', t) FROM t WHERE plan = '{value}'"))
            if "column plan not read" not in plan:
                raise Failure(f"{name}: the plan column is still read for plan = '{value}':\n{plan}")


add_test("text_column_not_read", text_column_not_read)


def parallel_workers(env):
    """Under Gather, each worker scores its share with the plan's bounds (custom_private travels
    to the workers) and compiles the specialized program itself."""
    import xgboost as xgb
    X, plans = matrix(env.rows)
    d = xgb.DMatrix(X, label=target(X, plans), feature_names=["a", "b", "c", "d"], missing=np.nan)
    bst = xgb.train({"max_depth": 5, "eta": 0.3, "nthread": 1, "seed": 2}, d, num_boost_round=30)
    text = bst.save_raw("json").decode()
    env.conn.execute("SELECT create_model('xgb_parallel', %s::jsonb)", [text])
    env.conn.execute("CREATE TABLE big AS SELECT i * 1000 + t.id AS id, t.a, t.b, t.c, t.d, t.plan "
                     "FROM t, generate_series(0, 39) i")
    env.conn.execute("ANALYZE big")
    for k, v in {"max_parallel_workers_per_gather": "2", "parallel_setup_cost": "0",
                 "parallel_tuple_cost": "0", "min_parallel_table_scan_size": "0"}.items():
        env.conn.execute(f"SET {k} = {v}")
    try:
        rng = random.Random(11)
        pruned = 0
        for _ in range(6):
            where = random_predicate(rng, NUMERIC, thresholds_of(text))
            plan = "\n".join(r[0] for r in env.query(
                f"EXPLAIN (costs off) SELECT id, predict('xgb_parallel', t) FROM big t WHERE {where}"))
            if "Gather" not in plan:
                raise Failure(f"no parallel plan for WHERE {where}:\n{plan}")
            pruned += compare(env, "xgb_parallel", where, ["predict('xgb_parallel', t)"], per_row=False, table="big")
        if pruned < 3:
            raise Failure(f"only {pruned} of 6 parallel predicates pruned anything")
    finally:
        env.conn.execute("RESET ALL")
        env.conn.execute("SET max_parallel_workers_per_gather = 0")


add_test("parallel_workers", parallel_workers)


def partitioned_table(env):
    """A partitioned table: per row the node sits over each partition's scan; under a window
    aggregate it sits over the Append and uses the bounds every partition's scan guarantees."""
    import xgboost as xgb
    X, plans = matrix(env.rows)
    d = xgb.DMatrix(X, label=target(X, plans), feature_names=["a", "b", "c", "d"], missing=np.nan)
    bst = xgb.train({"max_depth": 4, "eta": 0.3, "nthread": 1, "seed": 4}, d, num_boost_round=25)
    text = bst.save_raw("json").decode()
    env.conn.execute("SELECT create_model('xgb_parted', %s::jsonb)", [text])
    env.conn.execute("CREATE TABLE parted (id int, a int, b float8, c real, d numeric, plan text) PARTITION BY RANGE (id)")
    for k, (lo, hi) in enumerate([(0, 150), (150, 320), (320, 1000)]):
        env.conn.execute(f"CREATE TABLE parted_{k} PARTITION OF parted FOR VALUES FROM ({lo}) TO ({hi})")
    env.conn.execute("INSERT INTO parted SELECT * FROM t")
    env.conn.execute("ANALYZE parted")
    rng = random.Random(5)
    pruned = 0
    for _ in range(12):
        where = random_predicate(rng, NUMERIC, thresholds_of(text))
        pruned += compare(env, "xgb_parted", where, ["predict('xgb_parted', t)",
                                                     "sum(predict('xgb_parted', t)) OVER ()"],
                          per_row=False, table="parted")
    if pruned < 6:
        raise Failure(f"only {pruned} of 12 predicates pruned anything over the partitions")


add_test("partitioned_table", partitioned_table)


def lightgbm_case(case):
    def run(env):
        text = open(os.path.join(LIGHTGBM, f"{case}.model.txt")).read()
        with open(os.path.join(LIGHTGBM, f"{case}.csv")) as f:
            reader = csv.reader(f)
            header = next(reader)
            data = [[None if v == "" else float(v) for v in r] for r in reader]
        table = f"lgb_{case}"
        env.conn.execute(f"CREATE TABLE {table} (id int, " + ", ".join(f"{h} float8" for h in header) + ")")
        with env.conn.cursor() as cur:
            cur.executemany(f"INSERT INTO {table} VALUES (%s{', %s' * len(header)})",
                            [[i] + r for i, r in enumerate(data)])
        env.conn.execute("SELECT create_model(%s, %s)", [table, text])
        pool = thresholds_of(text)
        rng = random.Random(7)
        pruned = 0
        columns = [(h, "float8") for h in header]
        for _ in range(20):
            where = random_predicate(rng, columns, pool)
            pruned += compare(env, table, where, [f"predict('{table}', t)"], per_row=False, table=table)
        print(f"  {case}: {pruned} of 20 pruned", flush=True)
        if pruned < (1 if case == "stump" else 4):  # the stump has one split to decide
            raise Failure(f"{case}: only {pruned} of 20 predicates pruned anything")
    return run


for lgb_case in ["binary", "regression", "zero_as_missing", "multiclass", "multiclassova", "categorical", "deep",
                 "linear_tree", "no_missing", "rf", "dart", "stump"]:
    if os.path.exists(os.path.join(LIGHTGBM, f"{lgb_case}.model.txt")):
        add_test(f"lightgbm_{lgb_case}", lightgbm_case(lgb_case))


if __name__ == "__main__":
    main(fixture=make_env)
