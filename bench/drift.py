#!/usr/bin/python3
"""Profiles and drift (issue 50): what model_drift() costs against a query that reads and
aggregates the same columns, side by side in one run.

    /usr/bin/python3 bench/drift.py setup [--rows 10000000] [--dir /tmp/pgp-drift]
    /usr/bin/python3 bench/drift.py run [--reps 3] [--dir ...]
    /usr/bin/python3 bench/drift.py stop [--dir ...]

setup starts a kept cluster that preloads the library (regress/pgcluster.py) and fills `wide`:
--rows rows of 28 real columns c1..c28 (c1..c27 uniform, c28 normal) and a target; train()
fits a 50-tree XGBoost model on the first 20,000 rows, which also profiles them (the baseline).

run times, alternating, --reps times each (median of wall times from the client):
  - floor:   SELECT sum(c1), ..., sum(c28) FROM wide           (reads and aggregates the columns)
  - drift:   model_drift('wide', 'SELECT * FROM wide', options => '{"output": false}')
  - output:  model_drift('wide', 'SELECT * FROM wide')         (the output scored too)
  - scoring: SELECT sum(predict('wide', w)) FROM wide w        (what scoring costs alone)
and prints each one's ratio to the floor. The target is drift <= 2x floor.
"""

import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
sys.path.insert(0, os.path.join(ROOT, "regress"))
sys.path.insert(0, os.path.join(ROOT, "python"))

COLUMNS = [f"c{i}" for i in range(1, 29)]


def setup(args):
    from pgcluster import Cluster
    os.makedirs(args.dir, exist_ok=True)
    pg = Cluster(keep=True, settings={"shared_buffers": "2GB", "jit": "off", "max_parallel_workers_per_gather": 0,
                                      "work_mem": "64MB"})
    pg.start()
    with pg.connect() as c:
        c.execute("CREATE EXTENSION pg_predict")
        c.execute("SELECT setseed(0.5)")
        gen = ", ".join([f"(random() * 10)::real AS c{i}" for i in range(1, 28)] +
                        ["(sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))::real AS c28"])
        c.execute(f"CREATE TABLE wide AS SELECT g AS id, {gen} FROM generate_series(1, {args.rows}) g")
        c.execute("ALTER TABLE wide ADD COLUMN y float8")
        c.execute("UPDATE wide SET y = c1 + c2 * c3 / 10 - c28 WHERE id <= 20000")
        c.execute("VACUUM (FREEZE, ANALYZE) wide")
        c.execute("SELECT train('wide', 'SELECT " + ", ".join(COLUMNS) +
                  ", y FROM wide WHERE id <= 20000', 'y', hyperparams => '{\"n_estimators\": 50, \"max_depth\": 6}')")
        read = c.execute("SELECT cardinality(columns_read) FROM models WHERE name = 'wide'").fetchone()[0]
    with open(os.path.join(args.dir, "cluster.json"), "w") as f:
        json.dump({"conninfo": pg.conninfo(), "dir": pg.dir, "rows": args.rows}, f)
    print(f"cluster in {pg.dir}, {args.rows} rows of 28 columns; model wide reads {read} of them")


def run(args):
    import psycopg
    info = json.load(open(os.path.join(args.dir, "cluster.json")))
    read = None
    queries = {
        "floor": "SELECT " + ", ".join(f"sum({c})" for c in COLUMNS) + " FROM wide",
        "drift": "SELECT count(*) FROM model_drift('wide', 'SELECT * FROM wide', options => '{\"output\": false}')",
        "output": "SELECT count(*) FROM model_drift('wide', 'SELECT * FROM wide')",
        "scoring": "SELECT sum(predict('wide', w)) FROM wide w",
    }
    times = {k: [] for k in queries}
    with psycopg.connect(info["conninfo"], autocommit=True) as c:
        read = c.execute("SELECT cardinality(columns_read) FROM models WHERE name = 'wide'").fetchone()[0]
        c.execute(queries["floor"])  # warm the buffers
        for _ in range(args.reps):
            for name, sql in queries.items():
                t0 = time.perf_counter()
                c.execute(sql).fetchall()
                times[name].append(time.perf_counter() - t0)
    floor = statistics.median(times["floor"])
    print(f"{info['rows']} rows of 28 columns; the model reads {read} (drift reads those, the floor sums all 28)")
    print("| query | median s | min-max | / floor |")
    print("|---|---|---|---|")
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"| {name} | {m:.2f} | {min(ts):.2f}-{max(ts):.2f} | {m / floor:.2f} |")


def stop(args):
    import subprocess
    info = json.load(open(os.path.join(args.dir, "cluster.json")))
    subprocess.run(["su", "postgres", "-c", f"/usr/lib/postgresql/15/bin/pg_ctl -D {info['dir']}/data -m fast stop"])


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["setup", "run", "stop"])
    ap.add_argument("--dir", default="/tmp/pgp-drift")
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    {"setup": setup, "run": run, "stop": stop}[a.command](a)
