#!/usr/bin/python3
"""What predicate pruning (issue 15 §3) costs on top of the query: planning (parsing the model's
spec once per backend and specializing it), and compiling the specialized program on the first
execution, against the same query with pg_predict.prune_models = off, in fresh connections.

    flock /work/bench.lock /usr/bin/python3 bench/prune_overhead.py [--rows 200000]

Uses the bench's prune500 model (bench/run.py --only '^prune500' trains and caches it in
bench/.cache/) and its customers table generator. Prints one line per plan value and setting:
EXPLAIN's time in a new connection (planning alone), a second EXPLAIN with other bounds
(the parsed model reused), the first execution (the program loaded
or compiled), the best of three more (everything cached), and the best of three EXPLAIN ANALYZE
Model Time (the model's own work inside the node).
"""

import argparse
import glob
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "regress"))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

from pgcluster import Cluster  # noqa: E402
from pgpb import data  # noqa: E402


def timed(conn, sql):
    t0 = time.perf_counter()
    conn.execute(sql).fetchall()
    return time.perf_counter() - t0


def model_time(conn, sql):
    """The PredictBatch node's Model Time (EXPLAIN ANALYZE): the model's own work."""
    for (line,) in conn.execute("EXPLAIN (ANALYZE, TIMING ON) " + sql).fetchall():
        if "Model Time:" in line:
            return float(line.split("Model Time:")[1].split()[0])
    return float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=200_000)
    args = ap.parse_args()
    import joblib
    import pg_predict
    models = sorted(glob.glob(os.path.join(HERE, ".cache", "prune500-*.joblib")), key=os.path.getmtime)
    if not models:
        sys.exit("no bench/.cache/prune500-*.joblib: run bench/run.py --only '^prune500' first")
    with Cluster() as pg:
        with pg.connect() as conn:
            conn.execute("CREATE EXTENSION pg_predict")
            conn.execute(data.customers_ddl())
            conn.execute("SELECT setseed(0.42)")
            conn.execute(data.customers_sql(args.rows))
            conn.execute("VACUUM (FREEZE, ANALYZE) customers")
            pg_predict.deploy(conn, "prune500", joblib.load(models[-1]))
        print(f"{args.rows} rows; model {os.path.basename(models[-1])}")
        print(f"{'WHERE':<24} {'prune_models':<13} {'EXPLAIN s':>10} {'replan s':>10} {'first run s':>12} {'cached run s':>13} "
              f"{'model time ms':>14}  pruned")
        for value in ["pro", "basic", "enterprise"]:
            query = f"SELECT sum(predict('prune500', c)) FROM customers c WHERE plan = '{value}'"
            for setting in ["off", "on"]:
                with pg.connect() as conn:
                    conn.execute("SET jit = off")
                    conn.execute("SET max_parallel_workers_per_gather = 0")
                    conn.execute(f"SET pg_predict.prune_models = {setting}")
                    conn.execute("SELECT count(*) FROM models")  # the catalog is warm
                    t0 = time.perf_counter()
                    plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + query).fetchall())
                    explain = time.perf_counter() - t0
                    # planning again with bounds not seen yet: the parsed model is reused
                    other = f"SELECT sum(predict('prune500', c)) FROM customers c WHERE plan = '{value}' AND age >= 61"
                    t0 = time.perf_counter()
                    conn.execute("EXPLAIN " + other).fetchall()
                    replan = time.perf_counter() - t0
                    first = timed(conn, query)
                    cached = min(timed(conn, query) for _ in range(3))
                    model_ms = min(model_time(conn, query) for _ in range(3))
                    pruned = next((line.strip() for line in plan.splitlines() if "Pruned:" in line), "-")
                    print(f"plan = '{value}'{'':<{13 - len(value)}} {setting:<13} {explain:>10.3f} {replan:>10.4f} {first:>12.3f} "
                          f"{cached:>13.3f} {model_ms:>14.1f}  {pruned}", flush=True)


if __name__ == "__main__":
    main()
