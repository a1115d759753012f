#!/usr/bin/python3
"""Conformance: statements prepared through the extended query protocol (psycopg's server-side
prepared statements, as drivers and connection pools use them) score the model version their
snapshot sees after another session replaces the model, in the same READ COMMITTED transaction
and the next. The isolation suite covers PREPARE/EXECUTE and PL/pgSQL; this covers Parse/Bind.

Models and expected values come from regress/isolation/make_fixtures.py: XGBoost model A never
splits on f3 (its plan reads no f3), the retrained B does; the sums are compared with XGBoost's
own predictions of each.

Run: /usr/bin/python3 regress/conformance/test_plan_cache.py. Last line: 'conformance: N passed, M failed'.
"""

import contextlib
import csv
import importlib.util
import json
import os
import tempfile

from harness import Failure, add_test, main
from pgcluster import Cluster

HERE = os.path.dirname(os.path.abspath(__file__))


def load_fixtures(directory):
    spec = importlib.util.spec_from_file_location(
        "make_fixtures", os.path.join(HERE, "..", "isolation", "make_fixtures.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(directory)
    models = {name: open(os.path.join(directory, f"model_{name.lower()}.json")).read()
              for name in ("A", "B")}
    rows = [(int(r[0]), float(r[1]), float(r[2]), float(r[3]))
            for r in csv.reader(open(os.path.join(directory, "rows.csv")))]
    sums = {"A": 0.0, "B": 0.0}
    for model, _, value in csv.reader(open(os.path.join(directory, "predictions.csv"))):
        sums[model] += float(value)
    return models, rows, sums


class Env:
    def __init__(self, pg, models, rows, sums):
        self.pg, self.models, self.sums = pg, models, sums
        with pg.connect() as conn:
            conn.execute("CREATE EXTENSION pg_predict")
            conn.execute("CREATE TABLE t (id int PRIMARY KEY, f1 real, f2 real, f3 real)")
            with conn.cursor() as cur:
                cur.executemany("INSERT INTO t VALUES (%s, %s, %s, %s)", rows)

    def register(self, conn, name, replace):
        conn.execute("SELECT create_model('m', %s::jsonb, options => %s::jsonb)",
                     [self.models[name], json.dumps({"replace": replace})])

    def which(self, total):
        for name, want in self.sums.items():
            if abs(total - want) < 1e-3:
                return name
        return f"neither ({total})"


@contextlib.contextmanager
def make_env():
    with tempfile.TemporaryDirectory() as directory, Cluster() as pg:
        yield Env(pg, *load_fixtures(directory))


def expect(what, got, want):
    if got != want:
        raise Failure(f"{what}: scored with {got}, want {want}")


def replaced_between_executions(query, params, settings=()):
    def run(env):
        with env.pg.connect() as admin:
            env.register(admin, "A", replace=True)
        scorer = env.pg.connect()
        try:
            scorer.autocommit = False
            for setting in settings:
                scorer.execute(setting)
            for _ in range(6):  # past the five custom plans a parameterized statement starts with
                expect("before the replace", env.which(scorer.execute(query, params, prepare=True).fetchone()[0]), "A")
            with env.pg.connect() as other:
                env.register(other, "B", replace=True)
            expect("same transaction", env.which(scorer.execute(query, params, prepare=True).fetchone()[0]), "B")
            scorer.commit()
            expect("next transaction", env.which(scorer.execute(query, params, prepare=True).fetchone()[0]), "B")
            with env.pg.connect() as other:
                env.register(other, "A", replace=True)
            scorer.commit()
            expect("back to A", env.which(scorer.execute(query, params, prepare=True).fetchone()[0]), "A")
        finally:
            scorer.close()
    return run


add_test("extended_protocol_no_parameters",
         replaced_between_executions("SELECT sum(predict('m', t)) FROM t", None))
add_test("extended_protocol_generic_plan",
         replaced_between_executions("SELECT sum(predict('m', t)) FROM t WHERE id >= %s", [0],
                                     ["SET plan_cache_mode = force_generic_plan"]))
add_test("extended_protocol_custom_plans",
         replaced_between_executions("SELECT sum(predict('m', t)) FROM t WHERE id >= %s", [0],
                                     ["SET plan_cache_mode = force_custom_plan"]))

if __name__ == "__main__":
    main(fixture=make_env)
