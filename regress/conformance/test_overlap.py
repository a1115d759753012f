#!/usr/bin/python3
"""Conformance: the overlap (pg_predict.overlap: with pg_predict.threads >= 2 a batch's trees are
walked on a background thread while the next batch is read) gives exactly the rows and values of
the same query with pg_predict.overlap = off, and a query that ends early, is rescanned, fails or
is cancelled while a batch is in flight leaves the backend working.

- Models that overlap: XGBoost binary:logistic and reg:squarederror (the native kernel's perfect
  layout), deep trees (its generic layout), scikit-learn gradient boosting; and models that do
  not (multi:softprob, a LightGBM float64 fixture): compared all the same.
- pg_predict.threads 2 and 3, batch sizes 64, 1000 and the default, a parallel plan.
- LIMIT without ORDER BY (the node ends with a batch in flight), a rescanned subquery, two
  PredictBatch nodes in one plan, an error raised below the node while a batch is in flight,
  and statement_timeout.
- EXPLAIN ANALYZE counts the overlapped batches, only where the overlap applies.

Run: /usr/bin/python3 regress/conformance/test_overlap.py [-k name] [--list]
Needs the extension installed (make install). Last line: 'conformance: N passed, M failed'.
"""

import contextlib
import csv
import os

import numpy as np
import psycopg

import sklearn_cases  # noqa: F401  (puts python/ on sys.path)
from harness import Failure, assert_equal, main, test
from pgcluster import Cluster
from tables import load_table

import pg_predict  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "lightgbm")
TABLE = "ov_rows"
N_ROWS, N_FEATURES, N_TRAIN = 30000, 6, 4000
FEATURES = [f"f{i}" for i in range(N_FEATURES)]


class Env:
    def __init__(self, pg):
        self.pg = pg
        self.conn = pg.connect()


@contextlib.contextmanager
def make_env():
    import xgboost as xgb
    from sklearn.ensemble import GradientBoostingClassifier
    with Cluster() as pg:
        env = Env(pg)
        env.conn.execute("CREATE EXTENSION pg_predict")
        rng = np.random.default_rng(5)
        X = rng.normal(size=(N_ROWS, N_FEATURES)).astype(np.float32)
        X[rng.random(N_ROWS) < 0.1, 1] = np.nan
        load_table(env.conn, TABLE, FEATURES, X)
        x = np.nan_to_num(X.astype(np.float64))
        y = x[:, 0] * 2 - x[:, 1] + np.sin(3 * x[:, 2]) + x[:, 3] * x[:, 4]
        labels = (y > np.median(y)).astype(int)
        Xt = X[:N_TRAIN]

        def boost(name, params, target, rounds):
            booster = xgb.train(dict(params, seed=0, nthread=1),
                                xgb.DMatrix(Xt, label=target[:N_TRAIN], feature_names=FEATURES), rounds)
            env.conn.execute("SELECT create_model(%s, %s)", [name, booster.save_raw("json").decode()])

        boost("ov_bin", {"objective": "binary:logistic", "max_depth": 6, "eta": 0.3}, labels, 150)
        boost("ov_reg", {"objective": "reg:squarederror", "max_depth": 5, "base_score": 0.7}, y, 80)
        boost("ov_deep", {"objective": "binary:logistic", "max_depth": 14, "eta": 0.3, "min_child_weight": 0},
              labels, 20)
        boost("ov_multi", {"objective": "multi:softprob", "num_class": 3, "max_depth": 3},
              np.digitize(y, np.quantile(y, [1 / 3, 2 / 3])), 20)
        gb = GradientBoostingClassifier(n_estimators=60, max_depth=3, random_state=0)
        gb.fit(np.nan_to_num(Xt), labels[:N_TRAIN])
        pg_predict.deploy(env.conn, "ov_gb", gb, feature_names=FEATURES)
        with open(os.path.join(FIXTURES, "binary.csv")) as f:
            rows = list(csv.reader(f))
        load_table(env.conn, "lgb_binary", rows[0], [[float(v) if v != "" else None for v in r] for r in rows[1:]],
                   "double precision")
        with open(os.path.join(FIXTURES, "binary.model.txt")) as f:
            env.conn.execute("SELECT create_model('lgb_binary', %s::text)", [f.read()])
        try:
            yield env
        finally:
            env.conn.close()


def run(env, sql, overlap, threads=2, batch_size=None, parallel=False, conn=None):
    conn = conn or env.conn
    with conn.transaction():
        conn.execute(f"SET LOCAL pg_predict.overlap = {'on' if overlap else 'off'}")
        conn.execute(f"SET LOCAL pg_predict.threads = {threads}")
        if batch_size:
            conn.execute(f"SET LOCAL pg_predict.batch_size = {batch_size}")
        if parallel:
            for setting in ("parallel_setup_cost = 0", "parallel_tuple_cost = 0", "min_parallel_table_scan_size = 0",
                            "max_parallel_workers_per_gather = 2"):
                conn.execute(f"SET LOCAL {setting}")
        return conn.execute(sql).fetchall()


def same(env, what, sql, **kw):
    on, off = run(env, sql, True, **kw), run(env, sql, False, **kw)
    if on != off:
        diff = [(a, b) for a, b in zip(on, off) if a != b][:5]
        raise Failure(f"{what}: {len(on)} rows with the overlap, {len(off)} without; first differences {diff}\n{sql}")
    return on


def analyzed(env, sql, **kw):
    return "\n".join(r[0] for r in run(env, f"EXPLAIN (ANALYZE, COSTS off) {sql}", True, **kw))


def overlapped_batches(plan):
    if "Batches Overlapped:" not in plan:
        return None
    return int(plan.split("Batches Overlapped: ")[1].split()[0])


def check_model(env, model, table=TABLE, proba=True):
    outputs = f"predict('{model}', t)" + (f", predict_proba('{model}', t)" if proba else "")
    sql = f"SELECT id, {outputs} FROM {table} t ORDER BY id"
    for threads in (2, 3):
        for batch_size in (64, 1000, None):
            rows = same(env, f"{model} threads {threads} batch {batch_size}", sql, threads=threads,
                        batch_size=batch_size)
            if len(rows) == 0:
                raise Failure(f"{model}: no rows")
    same(env, f"{model} parallel", sql, parallel=True)


@test
def xgboost_binary(env):
    check_model(env, "ov_bin")


@test
def array_and_row_arguments(env):
    array = f"ARRAY[{', '.join(FEATURES)}]"
    for batch_size in (64, None):
        same(env, "array argument", f"SELECT id, predict('ov_bin', {array}), predict_proba('ov_bin', {array}) "
             f"FROM {TABLE} ORDER BY id", batch_size=batch_size)
        same(env, "NULL arrays", f"SELECT id, predict('ov_bin', CASE WHEN id % 5 = 0 THEN NULL ELSE {array} END) "
             f"FROM {TABLE} ORDER BY id", batch_size=batch_size)
        same(env, "subquery row", f"SELECT id, predict('ov_bin', q) FROM (SELECT id, {', '.join(FEATURES)} "
             f"FROM {TABLE} WHERE id % 3 <> 1 OFFSET 0) q ORDER BY id", batch_size=batch_size)
    plan = analyzed(env, f"SELECT sum(predict('ov_bin', {array})) FROM {TABLE}")
    if not overlapped_batches(plan):
        raise Failure(f"an array argument should overlap:\n{plan}")


@test
def xgboost_regression(env):
    check_model(env, "ov_reg", proba=False)


@test
def sklearn_gradient_boosting(env):
    check_model(env, "ov_gb")


@test
def xgboost_deep_generic_layout(env):
    check_model(env, "ov_deep")
    plan = analyzed(env, f"SELECT sum(predict('ov_deep', t)) FROM {TABLE} t")
    if not overlapped_batches(plan):
        raise Failure(f"the generic layout should overlap too:\n{plan}")


@test
def models_that_do_not_overlap(env):
    check_model(env, "ov_multi")
    check_model(env, "lgb_binary", table="lgb_binary")
    for model, table in (("ov_multi", TABLE), ("lgb_binary", "lgb_binary")):
        plan = analyzed(env, f"SELECT sum(predict('{model}', t)) FROM {table} t")
        if overlapped_batches(plan) is not None:
            raise Failure(f"{model} does not split, yet the plan overlaps:\n{plan}")


@test
def explain_counts_overlapped_batches(env):
    sql = f"SELECT sum(predict('ov_bin', t)) FROM {TABLE} t"
    plan = analyzed(env, sql)
    batches = int(plan.split("Batches: ")[1].split()[0])
    if overlapped_batches(plan) != batches:
        raise Failure(f"every batch should overlap at threads 2:\n{plan}")
    for threads in (1,):
        plan = analyzed(env, sql, threads=threads)
        if overlapped_batches(plan) is not None:
            raise Failure(f"threads {threads} must not overlap:\n{plan}")
    plan = "\n".join(r[0] for r in run(env, f"EXPLAIN (ANALYZE, COSTS off) {sql}", False))
    if overlapped_batches(plan) is not None:
        raise Failure(f"pg_predict.overlap = off must not overlap:\n{plan}")


@test
def limit_ends_with_a_batch_in_flight(env):
    for limit in (1, 70, 4097, 12345):
        for batch_size in (64, None):
            same(env, f"limit {limit}", f"SELECT id, predict('ov_bin', t) FROM {TABLE} t LIMIT {limit}",
                 batch_size=batch_size)
    # A cursor read in part, then closed.
    with env.conn.transaction():
        env.conn.execute("SET LOCAL pg_predict.threads = 2")
        with env.conn.cursor(name="part") as cur:
            cur.execute(f"SELECT id, predict('ov_bin', t) FROM {TABLE} t")
            got = cur.fetchmany(5000)
    want = run(env, f"SELECT id, predict('ov_bin', t) FROM {TABLE} t LIMIT 5000", False)
    assert_equal("cursor read in part", got, want)


@test
def rescans_and_two_nodes(env):
    same(env, "rescanned subquery",
         f"SELECT g, (SELECT sum(predict('ov_bin', t)) FROM {TABLE} t WHERE t.id % 7 = g) "
         f"FROM generate_series(0, 6) g ORDER BY g", batch_size=1000)
    same(env, "lateral top rows",
         f"SELECT g, s.id FROM generate_series(0, 3) g, LATERAL "
         f"(SELECT id FROM {TABLE} t WHERE id % 4 = g ORDER BY (predict_proba('ov_bin', t))[2] DESC, id LIMIT 3) s "
         f"ORDER BY 1, 2")
    same(env, "two models, two scans",
         f"SELECT a.id, predict('ov_bin', a), predict('ov_reg', b) FROM {TABLE} a "
         f"JOIN (SELECT * FROM {TABLE} WHERE id % 2 = 0) b ON a.id = b.id ORDER BY a.id")
    same(env, "a node over a node",
         f"SELECT id, p, predict('ov_reg', s) FROM (SELECT t.*, predict('ov_bin', t) AS p FROM {TABLE} t "
         f"OFFSET 0) s ORDER BY id", batch_size=1000)


@test
def an_error_below_the_node_with_a_batch_in_flight(env):
    env.conn.execute(f"CREATE OR REPLACE VIEW ov_failing AS SELECT id, "
                     f"CASE WHEN id = 20000 THEN f0 / (id - 20000) ELSE f0 END AS f0, "
                     f"{', '.join(FEATURES[1:])} FROM {TABLE}")
    for batch_size in (64, None):
        try:
            run(env, "SELECT sum(predict('ov_bin', t)) FROM ov_failing t", True, batch_size=batch_size)
            raise Failure("the division by zero did not reach the client")
        except psycopg.errors.DivisionByZero:
            pass
        # The backend goes on, with its background thread.
        same(env, "after the error", f"SELECT count(*), sum(predict('ov_bin', t)) FROM {TABLE} t",
             batch_size=batch_size)


@test
def cancel_with_a_batch_in_flight(env):
    sql = f"SELECT sum(predict('ov_bin', t)) FROM {TABLE} t, generate_series(1, 200) g"
    for timeout in ("20ms", "150ms"):
        try:
            with env.conn.transaction():
                env.conn.execute(f"SET LOCAL statement_timeout = '{timeout}'")
                run(env, sql, True)
            raise Failure(f"statement_timeout {timeout} did not cancel the query")
        except psycopg.errors.QueryCanceled:
            pass
        same(env, "after the cancel", f"SELECT count(*), sum(predict('ov_bin', t)) FROM {TABLE} t")


if __name__ == "__main__":
    main(fixture=make_env)
