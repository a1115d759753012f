#!/usr/bin/python3
"""Conformance: the early exit of thresholds and top-K (issue 15 §2) gives exactly the rows and
values of the same query with pg_predict.early_exit = off.

- Models: XGBoost binary:logistic (perfect layout), deep trees (the generic layout),
  reg:squarederror (predict), count:poisson and multi:softprob (not screened: their results
  are compared all the same), scikit-learn gradient boosting and a random forest, and
  LightGBM fixtures (binary, 255-leaf, random forest, regression).
- Data with NULLs, rounded columns and duplicated rows (ties in the scores), small batches
  (pg_predict.batch_size = 64 and the default) and a parallel plan.
- Thresholds: >, >=, <, <=, BETWEEN, a constant on the left, at quantiles of the scores and at
  scores that occur (ties at the threshold), projected and not (count(*): the node applies the
  threshold itself and rows certain to pass are never scored).
- Top-K: ORDER BY ... DESC / ASC LIMIT k OFFSET o, with a tie-breaking key (the same rows in the
  same order) and without (the same scores), FETCH FIRST ... WITH TIES.
- EXPLAIN shows what is pushed, and EXPLAIN ANALYZE that rows stopped early.

Run: /usr/bin/python3 regress/conformance/test_early_exit.py [-k name] [--list]
Needs the extension installed (make install). Last line: 'conformance: N passed, M failed'.
"""

import contextlib
import csv
import os

import numpy as np

import sklearn_cases  # noqa: F401  (puts python/ on sys.path)
from harness import Failure, assert_equal, main, test
from pgcluster import Cluster
from tables import load_table

import pg_predict  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "lightgbm")
TABLE = "ee_rows"
N_ROWS, N_FEATURES, N_TRAIN = 6000, 6, 3000
FEATURES = [f"f{i}" for i in range(N_FEATURES)]


class Env:
    def __init__(self, pg):
        self.pg = pg
        self.conn = pg.connect()

    def query(self, sql, params=None):
        return self.conn.execute(sql, params).fetchall()


def data(seed=11):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N_ROWS, N_FEATURES)).astype(np.float32)
    X[:, 2] = np.round(X[:, 2] * 2).astype(np.float32)  # few distinct values
    X[rng.random(N_ROWS) < 0.1, 1] = np.nan
    X[rng.random(N_ROWS) < 0.05, 4] = np.nan
    X[N_ROWS // 2:N_ROWS // 2 + 200] = X[:200]            # duplicated rows: tied scores
    return X


@contextlib.contextmanager
def make_env():
    import xgboost as xgb
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestRegressor
    with Cluster() as pg:
        env = Env(pg)
        env.conn.execute("CREATE EXTENSION pg_predict")
        X = data()
        load_table(env.conn, TABLE, FEATURES, X)
        x = np.nan_to_num(X.astype(np.float64))
        y = x[:, 0] * 2 - x[:, 1] + np.sin(3 * x[:, 2]) + x[:, 3] * x[:, 4]
        labels = (y > np.median(y)).astype(int)
        Xt = X[:N_TRAIN]

        def boost(name, params, target, rounds):
            booster = xgb.train(dict(params, seed=0, nthread=1), xgb.DMatrix(Xt, label=target[:N_TRAIN], feature_names=FEATURES), rounds)
            env.conn.execute("SELECT create_model(%s, %s)", [name, booster.save_raw("json").decode()])

        boost("ee_bin", {"objective": "binary:logistic", "max_depth": 4, "eta": 0.3}, labels, 120)
        boost("ee_deep", {"objective": "binary:logistic", "max_depth": 14, "eta": 0.3, "min_child_weight": 0}, labels, 20)
        boost("ee_reg", {"objective": "reg:squarederror", "max_depth": 5, "base_score": 0.7}, y, 80)
        boost("ee_poisson", {"objective": "count:poisson", "max_depth": 3}, np.abs(np.round(y)), 30)
        boost("ee_multi", {"objective": "multi:softprob", "num_class": 3, "max_depth": 3},
              np.digitize(y, np.quantile(y, [1 / 3, 2 / 3])), 20)
        gb = GradientBoostingClassifier(n_estimators=60, max_depth=3, random_state=0)
        gb.fit(np.nan_to_num(Xt), labels[:N_TRAIN])
        pg_predict.deploy(env.conn, "ee_gb", gb, feature_names=FEATURES)
        rf = RandomForestRegressor(n_estimators=30, max_depth=8, random_state=0)
        rf.fit(np.nan_to_num(Xt), y[:N_TRAIN])
        pg_predict.deploy(env.conn, "ee_rf", rf, feature_names=FEATURES)
        for case in ("binary", "deep", "rf", "regression"):
            with open(os.path.join(FIXTURES, f"{case}.csv")) as f:
                rows = list(csv.reader(f))
            columns = rows[0]
            values = [[float(v) if v != "" else None for v in r] for r in rows[1:]]
            load_table(env.conn, f"lgb_{case}", columns, values, "double precision")
            with open(os.path.join(FIXTURES, f"{case}.model.txt")) as f:
                env.conn.execute("SELECT create_model(%s, %s::text)", [f"lgb_{case}", f.read()])
        try:
            yield env
        finally:
            env.conn.close()


def run(env, sql, early, batch_size=None, parallel=False):
    with env.conn.transaction():
        env.conn.execute(f"SET LOCAL pg_predict.early_exit = {'on' if early else 'off'}")
        if batch_size:
            env.conn.execute(f"SET LOCAL pg_predict.batch_size = {batch_size}")
        if parallel:
            for setting in ("parallel_setup_cost = 0", "parallel_tuple_cost = 0", "min_parallel_table_scan_size = 0",
                            "max_parallel_workers_per_gather = 2"):
                env.conn.execute(f"SET LOCAL {setting}")
        return env.query(sql)


def plan_text(env, sql, analyze=False, **kw):
    rows = run(env, f"EXPLAIN ({'ANALYZE, ' if analyze else ''}COSTS off) {sql}", True, **kw)
    return "\n".join(r[0] for r in rows)


def same(env, what, sql, ordered=True, **kw):
    on, off = run(env, sql, True, **kw), run(env, sql, False, **kw)
    if not ordered:
        on, off = sorted(on), sorted(off)
    if on != off:
        diff = [(a, b) for a, b in zip(on, off) if a != b][:5]
        raise Failure(f"{what}: {len(on)} rows with early exit, {len(off)} without; first differences {diff}\n{sql}")
    return on


def value_sql(model, kind):
    return f"predict('{model}', t)" if kind == "predict" else f"(predict_proba('{model}', t))[2]"


def thresholds(env, model, kind, table):
    """Quantiles of the values, and values that occur (ties at the threshold)."""
    values = sorted(v for (v,) in run(env, f"SELECT {value_sql(model, kind)} FROM {table} t", False) if v is not None)
    picks = [values[int(q * (len(values) - 1))] for q in (0.0, 0.05, 0.5, 0.9, 0.97, 1.0)]
    return picks + [picks[3] + 1e-9, picks[4] - 1e-7]


def check_thresholds(env, model, kind="proba", table=TABLE, screened=True):
    value = value_sql(model, kind)
    ts = thresholds(env, model, kind, table)
    for t in ts:
        for op in (">", ">=", "<", "<="):
            cond = f"{value} {op} {t!r}"
            same(env, f"{model} {cond}", f"SELECT id, {value} FROM {table} t WHERE {cond} ORDER BY id", batch_size=64)
            same(env, f"{model} count {cond}", f"SELECT count(*) FROM {table} t WHERE {cond}")
        same(env, f"{model} {t!r} < value", f"SELECT id FROM {table} t WHERE {t!r} < {value} ORDER BY id")
    lo, hi = ts[3], ts[4]
    same(env, f"{model} between", f"SELECT id FROM {table} t WHERE {value} BETWEEN {lo!r} AND {hi!r} ORDER BY id",
         batch_size=64)
    same(env, f"{model} between count", f"SELECT count(*) FROM {table} t WHERE {value} BETWEEN {lo!r} AND {hi!r}")
    # Another conjunct on the table, and a projection reading the model's other outputs.
    same(env, f"{model} and", f"SELECT id, predict('{model}', t) FROM {table} t WHERE {value} > {hi!r} "
         f"AND id % 3 <> 0 ORDER BY id")
    sql = f"SELECT count(*) FROM {table} t WHERE {value} > {hi!r}"
    plan = plan_text(env, sql)
    if "Early Exit:" not in plan:
        raise Failure(f"{model}: no Early Exit in the plan:\n{plan}")
    analyzed = plan_text(env, sql, analyze=True)
    if screened and "Rows Stopped Early" not in analyzed:
        raise Failure(f"{model}: the screen did not run:\n{analyzed}")
    if not screened and "Early Exit Used: not used" not in analyzed:
        raise Failure(f"{model}: expected the early exit not to apply:\n{analyzed}")
    if screened:
        # The counters agree: rows stopped early saved trees; a model whose first stage holds
        # every tree (up to 32) decides rows only after all of them, which EXPLAIN counts apart.
        stopped = int(analyzed.split("Rows Stopped Early: ")[1].split()[0])
        after_all = int(analyzed.split("Rows Decided After Every Tree: ")[1].split()[0]) \
            if "Rows Decided After Every Tree: " in analyzed else 0
        trees = int(analyzed.split(" trees, depth")[0].rsplit(" ", 1)[1])
        per_row = float(analyzed.split("Trees per Row: ")[1].split()[0])
        if stopped + after_all == 0:
            raise Failure(f"{model}: the screen decided no row for a 97% threshold:\n{analyzed}")
        if trees <= 32 and stopped != 0:
            raise Failure(f"{model}: {stopped} rows 'stopped early' in a model whose one stage holds every tree:\n{analyzed}")
        if stopped == 0 and per_row < trees:
            raise Failure(f"{model}: fewer trees per row than the model's with no row stopped early:\n{analyzed}")


def check_top_k(env, model, kind="proba", table=TABLE):
    value = value_sql(model, kind)
    for order in ("DESC", "ASC"):
        for k, offset in ((1, 0), (10, 0), (50, 7), (300, 0)):
            for batch_size in (64, None):
                same(env, f"{model} top {k} {order}", f"SELECT id, {value} FROM {table} t "
                     f"ORDER BY {value} {order}, id LIMIT {k} OFFSET {offset}", batch_size=batch_size)
                # Without a tie-breaker: the same values (the rows of equal values may differ).
                on = run(env, f"SELECT {value} FROM {table} t ORDER BY {value} {order} LIMIT {k} OFFSET {offset}",
                         True, batch_size=batch_size)
                off = run(env, f"SELECT {value} FROM {table} t ORDER BY {value} {order} LIMIT {k} OFFSET {offset}",
                          False, batch_size=batch_size)
                assert_equal(f"{model} top {k} {order} values", on, off)
        same(env, f"{model} with ties {order}", f"SELECT id FROM {table} t ORDER BY {value} {order} "
             f"FETCH FIRST 5 ROWS WITH TIES", ordered=False, batch_size=64)
    same(env, f"{model} top-K parallel", f"SELECT id, {value} FROM {table} t ORDER BY {value} DESC, id LIMIT 20",
         parallel=True)
    sql = f"SELECT id FROM {table} t ORDER BY {value} DESC LIMIT 10"
    plan = plan_text(env, sql)
    if "top 10 by" not in plan:
        raise Failure(f"{model}: no top-K in the plan:\n{plan}")


@test
def xgboost_binary_threshold(env):
    check_thresholds(env, "ee_bin")
    same(env, "parallel threshold", f"SELECT id FROM {TABLE} t WHERE {value_sql('ee_bin', 'proba')} > 0.9 ORDER BY id",
         parallel=True)


@test
def xgboost_binary_top_k(env):
    check_top_k(env, "ee_bin")


@test
def xgboost_first_column(env):
    value = "(predict_proba('ee_bin', t))[1]"
    same(env, "[1] > 0.8", f"SELECT id FROM {TABLE} t WHERE {value} > 0.8 ORDER BY id", batch_size=64)
    same(env, "[1] top", f"SELECT id, {value} FROM {TABLE} t ORDER BY {value} DESC, id LIMIT 25", batch_size=64)


@test
def xgboost_deep_generic_layout(env):
    check_thresholds(env, "ee_deep")
    check_top_k(env, "ee_deep")


@test
def xgboost_regression(env):
    check_thresholds(env, "ee_reg", "predict")
    check_top_k(env, "ee_reg", "predict")


@test
def not_screened_models(env):
    # exp link and softmax: the plan pushes the threshold, the executor says why it is not used
    check_thresholds(env, "ee_poisson", "predict", screened=False)
    check_top_k(env, "ee_multi")
    value = "predict('ee_multi', t)"  # a class label: never screened
    same(env, "label", f"SELECT id FROM {TABLE} t WHERE {value} > 0.5 ORDER BY id")


@test
def sklearn_gradient_boosting(env):
    check_thresholds(env, "ee_gb")
    check_top_k(env, "ee_gb")


@test
def sklearn_random_forest(env):
    check_thresholds(env, "ee_rf", "predict")
    check_top_k(env, "ee_rf", "predict")


@test
def lightgbm(env):
    # LightGBM's models compare float64 features (their thresholds are doubles): the screen
    # (float32) stays off, and the results are compared all the same.
    check_thresholds(env, "lgb_binary", table="lgb_binary", screened=False)
    check_top_k(env, "lgb_binary", table="lgb_binary")
    check_thresholds(env, "lgb_deep", table="lgb_deep", screened=False)
    check_top_k(env, "lgb_deep", table="lgb_deep")
    check_thresholds(env, "lgb_rf", table="lgb_rf", screened=False)
    check_thresholds(env, "lgb_regression", "predict", table="lgb_regression", screened=False)
    check_top_k(env, "lgb_regression", "predict", table="lgb_regression")


@test
def per_row_and_prepared(env):
    # A prepared statement re-executed: the top-K heap starts again at every execution.
    value = value_sql("ee_bin", "proba")
    with env.conn.transaction():
        env.conn.execute("SET LOCAL pg_predict.batch_size = 64")
        env.conn.execute(f"PREPARE top(int) AS SELECT id FROM {TABLE} t WHERE id > $1 ORDER BY {value} DESC, id LIMIT 15")
        first = env.query("EXECUTE top(0)")
        second = env.query("EXECUTE top(3000)")
        env.conn.execute("DEALLOCATE top")
    want1 = run(env, f"SELECT id FROM {TABLE} t WHERE id > 0 ORDER BY {value} DESC, id LIMIT 15", False)
    want2 = run(env, f"SELECT id FROM {TABLE} t WHERE id > 3000 ORDER BY {value} DESC, id LIMIT 15", False)
    assert_equal("prepared, first", first, want1)
    assert_equal("prepared, second", second, want2)
    # A lateral subquery rescans its PredictBatch node per outer row.
    same(env, "lateral top-K", f"SELECT o.g, s.id FROM generate_series(0, 2) o(g), LATERAL "
         f"(SELECT id FROM {TABLE} t WHERE id % 3 = o.g ORDER BY {value} DESC, id LIMIT 4) s ORDER BY 1, 2")


if __name__ == "__main__":
    main(fixture=make_env)
