"""Cancel, statement_timeout and terminate during create_model (import, compile), scoring and
train() (XGBoost's boosting rounds, the logistic regression's L-BFGS).

Each statement must end with PostgreSQL's own error (57014 for cancel and timeout; the
connection closed for terminate) and the server must stay up. How fast it ends is measured by
bench/runtime.py, never here. That the C++ work itself noticed the interrupt (instead of
PostgreSQL after the C++ call returned) shows as the DEBUG1 notice the guard emits
("C++ work stopped for a pending interrupt"); an interrupt may now and then land in
PostgreSQL's own code between two C++ calls, so each case tries up to three times and needs
the notice once. A cancel or timeout the C++ work noticed while scoring counts one error of
the model in model_stats (usage statistics); a terminate ends the backend without counting.

    /usr/bin/python3 regress/runtime/test_cancel.py [-k name]     (scripts/test.sh: suite cancel)
"""

import contextlib
import os
import sys
import threading
import time

import psycopg
from psycopg import errors

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conformance"))
from harness import Failure, main, test
from pgcluster import Cluster
from synthetic_models import create_feature_table, nested_feature_union, rbf_svc, xgboost_model

NOTICE = "C++ work stopped for a pending interrupt"
ROWS = 300_000
FEATURES = 8
# Tries per case until the C++ work itself saw the interrupt: one that lands while PostgreSQL
# fills a batch (its own loops end the statement) is fine but proves nothing about the C++ side.
# CI saw terminate_scoring_svc land there 3 times in a row once.
ATTEMPTS = 8


class Env:
    def __init__(self, pg):
        self.pg = pg

    def connect(self):
        conn = self.pg.connect()
        notices = []
        conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
        conn.notices = notices
        conn.execute("SET client_min_messages = debug1")
        return conn


@contextlib.contextmanager
def make_env():
    with Cluster(settings={"max_connections": 20}) as pg:
        env = Env(pg)
        with pg.connect() as conn:
            conn.execute("CREATE EXTENSION pg_predict")
            create_feature_table(conn, ROWS, FEATURES)
            # Documents kept in a table: create_model reads them without a 100 MB literal.
            conn.execute("CREATE TABLE docs (name text PRIMARY KEY, doc jsonb)")
            docs = {
                "trees2500": xgboost_model(2500, 6, FEATURES),
                "trees20k": xgboost_model(20000, 3, FEATURES),
                "union300": nested_feature_union(300),
                "svc": rbf_svc(2000, FEATURES),
            }
            for name, doc in docs.items():
                conn.execute("INSERT INTO docs VALUES (%s, %s::jsonb)", (name, doc))
            conn.execute("SELECT create_model('m2500', doc) FROM docs WHERE name = 'trees2500'")
            conn.execute("SELECT create_model('svc', doc, 'sklearn') FROM docs WHERE name = 'svc'")
        yield env


def server_alive(env):
    with env.pg.connect() as conn:
        if conn.execute("SELECT count(*) FROM models").fetchone()[0] < 2:
            raise Failure("the models are gone after the cancel")


def model_errors(env, model):
    with env.pg.connect() as conn:
        row = conn.execute("SELECT errors FROM model_stats WHERE name = %s AND deployed", (model,)).fetchone()
        return row[0] if row else 0


def ends_with_cancel(env, sql, how, after=0.5, setup=(), model=None):
    """Runs sql on a fresh connection and interrupts it `how` (timeout, cancel, terminate)
    `after` seconds in; returns whether the C++ side noticed. Fails unless the statement ended
    with PostgreSQL's error for that interrupt, and, for a scoring `model`, unless a cancel or
    timeout the C++ side noticed counted one error of it (model_stats)."""
    errors_before = model_errors(env, model) if model else 0
    noticed = ends_with_interrupt(env, sql, how, after, setup)
    if model and how != "terminate":
        counted = model_errors(env, model) - errors_before
        if counted > 1 or (noticed and counted != 1):
            raise Failure(f"{how} noticed by the C++ work: model_stats counted {counted} errors of {model}, not 1")
    return noticed


def ends_with_interrupt(env, sql, how, after, setup):
    conn = env.connect()
    try:
        for s in setup:
            conn.execute(s)
        pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        timer = None
        if how == "timeout":
            conn.execute(f"SET statement_timeout = '{int(after * 1000)}ms'")
        else:
            fn = "pg_cancel_backend" if how == "cancel" else "pg_terminate_backend"

            def interrupt():
                with env.pg.connect() as other:
                    other.execute(f"SELECT {fn}(%s)", (pid,))
            timer = threading.Timer(after, interrupt)
        conn.notices.clear()
        if timer:
            timer.start()
        try:
            conn.execute(sql)
        except errors.QueryCanceled as e:
            if how == "terminate":
                raise Failure(f"terminate ended with a cancel: {e}")
            want = "statement timeout" if how == "timeout" else "user request"
            if want not in str(e):
                raise Failure(f"{how}: unexpected cancel message: {e}")
        except (errors.AdminShutdown, psycopg.OperationalError) as e:
            if how != "terminate":
                raise Failure(f"{how} closed the connection: {e}")
        else:
            raise Failure(f"{how}: the statement completed instead of being interrupted: {sql}")
        finally:
            if timer:
                timer.join()
        return any(NOTICE in n for n in conn.notices)
    finally:
        conn.close()


def case(env, sql, how, after=0.5, setup=(), model=None):
    """Interrupts sql up to ATTEMPTS times until the C++ work notices. The tries spread the
    interrupt from 0.3 x `after` to `after`: a statement whose C++ part ends before `after` on a
    fast or quiet machine (the rest is PostgreSQL's: catalog writes, TOAST) still gets tries that
    land in it."""
    noticed = False
    for attempt in range(ATTEMPTS):
        at = after * (0.3 + 0.7 * attempt / (ATTEMPTS - 1))
        noticed = ends_with_cancel(env, sql, how, at, setup, model) or noticed
        server_alive(env)
        if noticed:
            return
    raise Failure(f"{how}: PostgreSQL ended the statement, but the C++ work never saw the interrupt "
                  f"in {ATTEMPTS} tries (it ran to the end of its call)")


BIG_BATCH = ("SET pg_predict.batch_size = 262144",)
# Many times what the interrupt needs (20 passes over t): a fast machine must not finish first.
SCORE_TREES = "SELECT sum(predict('m2500', t)) FROM t, generate_series(1, 20) AS pass"
SCORE_SVC = "SELECT sum(predict('svc', t)) FROM t, generate_series(1, 20) AS pass"
IMPORT_TREES = "SELECT create_model('big', doc) FROM docs WHERE name = 'trees20k'"
COMPILE_UNION = "SELECT create_model('union', doc, 'sklearn') FROM docs WHERE name = 'union300'"


@test
def timeout_scoring_2500_trees_big_batch(env):
    case(env, SCORE_TREES, "timeout", 1.0, BIG_BATCH, "m2500")


@test
def cancel_scoring_2500_trees_big_batch(env):
    case(env, SCORE_TREES, "cancel", 1.0, BIG_BATCH, "m2500")


@test
def timeout_scoring_svc_big_batch(env):
    case(env, SCORE_SVC, "timeout", 1.0, BIG_BATCH, "svc")


@test
def cancel_scoring_svc_two_threads(env):
    case(env, SCORE_SVC, "cancel", 1.0, BIG_BATCH + ("SET pg_predict.threads = 2",), "svc")


@test
def terminate_scoring_svc(env):
    case(env, SCORE_SVC, "terminate", 1.0, BIG_BATCH)


# The per-row path (no batching): the svc's program checks for an interrupt before it runs
# each row. An md5 of ~1 MB of text before the call, evaluated after the scan's own interrupt
# check, takes most of each row's time, so an interrupt that lands in it is seen first by the
# program, inside the call, which counts one error (src/pg/scoring_marks.hpp).
PER_ROW = ("SET pg_predict.enable_batching = off",)
SCORE_SVC_PER_ROW = ("SELECT sum(length(md5(repeat(f1::text, 100000))) + predict('svc', t)) "
                     "FROM t, generate_series(1, 20) AS pass")


@test
def timeout_scoring_svc_per_row(env):
    case(env, SCORE_SVC_PER_ROW, "timeout", 1.0, PER_ROW, "svc")


@test
def cancel_scoring_svc_per_row(env):
    case(env, SCORE_SVC_PER_ROW, "cancel", 1.0, PER_ROW, "svc")


@test
def timeout_create_model_many_trees(env):
    case(env, IMPORT_TREES, "timeout", 0.5)


@test
def cancel_create_model_many_trees(env):
    case(env, IMPORT_TREES, "cancel", 1.0)


@test
def terminate_create_model_many_trees(env):
    case(env, IMPORT_TREES, "terminate", 1.0)


# train() over t: 300k rows read, then boosting rounds (an interrupt check between rounds) far
# beyond what the interrupt needs, or L-BFGS steps of a logistic regression.
TRAIN_QUERY = "SELECT f1, f2, f3, f4, f5, f6, f7, f8, f1 + f2 * f3 > 0 AS y FROM t"
TRAIN_TREES = (f"SELECT train('trained', '{TRAIN_QUERY}', 'y', "
               """hyperparams => '{"n_estimators": 100000, "max_depth": 6}')""")
TRAIN_LOGISTIC = (f"SELECT train('trained', '{TRAIN_QUERY}', 'y', 'logistic', "
                  """'{"C": 1e6, "max_iter": 100000, "tol": 1e-300}')""")


@test
def timeout_train_xgboost(env):
    case(env, TRAIN_TREES, "timeout", 3.0)


@test
def cancel_train_xgboost(env):
    case(env, TRAIN_TREES, "cancel", 3.0)


@test
def terminate_train_xgboost(env):
    case(env, TRAIN_TREES, "terminate", 3.0)


@test
def cancel_train_logistic(env):
    case(env, TRAIN_LOGISTIC, "cancel", 3.0)


@test
def train_cancel_arrives_within_100ms(env):
    """The time from pg_cancel_backend to the error, while XGBoost boosts: one round at most
    (a round of depth 6 over 240k rows is a few tens of ms here). Measured 5 times; the median
    must be within 100 ms (the slowest is printed: a loaded machine may delay one)."""
    delays = []
    for _ in range(5):
        conn = env.connect()
        try:
            pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
            sent = []

            def interrupt():
                with env.pg.connect() as other:
                    sent.append(time.monotonic())
                    other.execute("SELECT pg_cancel_backend(%s)", (pid,))
            timer = threading.Timer(3.0, interrupt)
            timer.start()
            try:
                conn.execute(TRAIN_TREES)
                raise Failure("train() completed instead of being cancelled")
            except errors.QueryCanceled:
                delays.append(time.monotonic() - sent[0])
            finally:
                timer.join()
            if not any(NOTICE in n for n in conn.notices):
                raise Failure("the cancel did not land in the boosting rounds (no C++ notice)")
        finally:
            conn.close()
    delays.sort()
    print(f"    cancel -> error: {', '.join(f'{d * 1000:.0f}' for d in delays)} ms", flush=True)
    if delays[len(delays) // 2] > 0.1:
        raise Failure(f"the median delay is {delays[len(delays) // 2] * 1000:.0f} ms (> 100 ms)")


@test
def nested_feature_union_refused_before_any_work(env):
    # FeatureUnions nested 300 deep compiled for 85 s (a cubic optimizer pass, now linear);
    # the nesting limit (src/spec/limits.hpp) refuses them before parsing, so there is nothing
    # left to cancel.
    with env.pg.connect() as conn:
        try:
            conn.execute(COMPILE_UNION)
        except psycopg.errors.InvalidTextRepresentation as e:
            if "nests deeper than 256 levels" in str(e):
                return
            raise Failure(f"refused, but not for its nesting: {e}")
        raise Failure("a FeatureUnion nested 300 deep was accepted")


@test
def nothing_half_created(env):
    with env.pg.connect() as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM models ORDER BY name")]
        if names != ["m2500", "svc"]:
            raise Failure(f"models after the interrupted create_model calls: {names}")
        # And scoring still works in a fresh backend.
        n = conn.execute("SELECT count(predict('m2500', t)) FROM t WHERE id <= 1000").fetchone()[0]
        if n != 1000:
            raise Failure(f"scored {n} rows after the cancels, expected 1000")


if __name__ == "__main__":
    main(fixture=make_env, suite="cancel")
