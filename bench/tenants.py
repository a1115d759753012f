"""Per-tenant models (issue 30): one model per store, named per row, against one constant name.

    /usr/bin/python3 bench/tenants.py                          # 1M rows, 50 models
    /usr/bin/python3 bench/tenants.py --rows 100000 --models 200

Starts a throwaway cluster (regress/pgcluster.py), fills t(id, store, a, b, c, d real) with
--rows rows of standard normal features and a store drawn uniformly from --models stores,
trains one XGBoost regressor per store (20 trees, depth 4, on 1000 rows of its own), registers
each as 'store_<k>', and times, best of --reps after a warm-up:

    SELECT sum(predict('store_0', t)) FROM t                 one constant name (batched)
    SELECT sum(predict('store_' || store, t)) FROM t         the name per row, interleaved
    SELECT sum(predict('store_' || store, t)) FROM (SELECT * FROM t ORDER BY store) t   sorted

and checks the first 2000 rows of the per-row query against each store's own XGBoost
prediction (exit status 1 on a difference above 1e-5). Prints the plan of the per-row query,
with EXPLAIN ANALYZE's counts of models, runs, cache hits and loads.

Each query's peak private memory (RssAnon) of the backend is sampled every 10 ms while it runs.
For thousands of small models (1M rows, 10,000 models, 100 rows each):

    /usr/bin/python3 bench/tenants.py --models 10000 --trees 5 --depth 3 --distinct 200

(--distinct: that many boosters are trained and registered round robin under the --models names;
every name is still its own catalog row and program.)
"""

import argparse
import os
import sys
import threading
import time

import numpy as np
import xgboost as xgb

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "regress"))
from pgcluster import Cluster  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--models", type=int, default=50)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--trees", type=int, default=20)
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--distinct", type=int, default=0, help="boosters trained (default: one per model)")
    ap.add_argument("--cache-size", default="128MB", help="pg_predict.cache_size")
    args = ap.parse_args()
    distinct = args.distinct or args.models
    rng = np.random.default_rng(1)
    X = rng.standard_normal((args.rows, 4)).astype(np.float32)
    store = rng.integers(0, args.models, args.rows)
    with Cluster(settings={"shared_buffers": "512MB", "jit": "off", "pg_predict.cache_size": args.cache_size},
                 prefix="pgp-tenants-") as pg:
        with pg.connect() as conn:
            conn.execute("CREATE EXTENSION pg_predict")
            conn.execute("CREATE UNLOGGED TABLE t (id int, store int, a real, b real, c real, d real)")
            with conn.cursor().copy("COPY t FROM STDIN") as cp:
                for i in range(args.rows):
                    cp.write_row((i, int(store[i]), *map(float, X[i])))
            conn.execute("VACUUM (FREEZE, ANALYZE) t")
            trained = []
            for m in range(distinct):
                Xt = rng.standard_normal((1000, 4)).astype(np.float32)
                y = Xt @ rng.standard_normal(4) + rng.standard_normal(1000) * 0.1
                bst = xgb.train({"max_depth": args.depth, "eta": 0.3, "nthread": 1},
                                xgb.DMatrix(Xt, label=y, feature_names=list("abcd")), args.trees)
                trained.append((bst, bytes(bst.save_raw("json")).decode()))
            boosters = [trained[m % distinct][0] for m in range(args.models)]
            t0 = time.perf_counter()
            for m in range(args.models):
                conn.execute("SELECT create_model(%s, %s::jsonb)", (f"store_{m}", trained[m % distinct][1]))
            print(f"create_model of {args.models} models: {time.perf_counter() - t0:.1f} s")
            pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]

            def rss_anon_mb():
                with open(f"/proc/{pid}/status") as f:
                    for line in f:
                        if line.startswith("RssAnon:"):
                            return int(line.split()[1]) / 1024
                return float("nan")

            def best(sql):
                """The best time of --reps runs after a warm-up, and the peak RssAnon seen."""
                peak = [rss_anon_mb()]
                running = [True]

                def sample():
                    while running[0]:
                        peak[0] = max(peak[0], rss_anon_mb())
                        time.sleep(0.01)
                sampler = threading.Thread(target=sample)
                sampler.start()
                try:
                    conn.execute(sql).fetchone()
                    times = []
                    for _ in range(args.reps):
                        t0 = time.perf_counter()
                        conn.execute(sql).fetchone()
                        times.append(time.perf_counter() - t0)
                finally:
                    running[0] = False
                    sampler.join()
                return min(times), peak[0]

            rows = {
                "one constant name": "SELECT sum(predict('store_0', t)) FROM t",
                f"name per row, {args.models} interleaved": "SELECT sum(predict('store_' || store, t)) FROM t",
                f"name per row, {args.models} sorted":
                    "SELECT sum(predict('store_' || store, t)) FROM (SELECT * FROM t ORDER BY store) t",
            }
            base = None
            print(f"{args.rows:,} rows, {args.models} models of {args.trees} trees (depth {args.depth}), "
                  f"best of {args.reps}; pg_predict.cache_size = {args.cache_size}")
            print("| query | seconds | µs a row | x one name | peak RssAnon MB |\n|---|---|---|---|---|")
            for label, sql in rows.items():
                s, peak = best(sql)
                base = base or s
                print(f"| {label} | {s:.3f} | {s / args.rows * 1e6:.2f} | {s / base:.2f}x | {peak:.0f} |", flush=True)
            for view in ("models", "model_stats"):
                t0 = time.perf_counter()
                count = conn.execute(f"SELECT count(*) FROM {view}").fetchone()[0]
                print(f"SELECT count(*) FROM {view}: {count} rows in {time.perf_counter() - t0:.3f} s")
            n = min(2000, args.rows)
            got = np.array([r[0] for r in conn.execute(
                f"SELECT predict('store_' || store, t) FROM t WHERE id < {n} ORDER BY id").fetchall()])
            want = np.array([boosters[store[i]].inplace_predict(X[i:i + 1])[0] for i in range(n)])
            diff = float(np.max(np.abs(got - want)))
            print(f"max abs difference over the first {n} rows: {diff:.2g}")
            print("\n".join(r[0] for r in conn.execute(
                "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT sum(predict('store_' || store, t)) FROM t").fetchall()))
            if not diff <= 1e-5:
                sys.exit(1)


if __name__ == "__main__":
    main()
