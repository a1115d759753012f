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
prediction (exit status 1 on a difference above 1e-5). Prints the plan of the per-row query.
"""

import argparse
import os
import sys
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
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    X = rng.standard_normal((args.rows, 4)).astype(np.float32)
    store = rng.integers(0, args.models, args.rows)
    with Cluster(settings={"shared_buffers": "512MB", "jit": "off"}, prefix="pgp-tenants-") as pg:
        with pg.connect() as conn:
            conn.execute("CREATE EXTENSION pg_predict")
            conn.execute("CREATE UNLOGGED TABLE t (id int, store int, a real, b real, c real, d real)")
            with conn.cursor().copy("COPY t FROM STDIN") as cp:
                for i in range(args.rows):
                    cp.write_row((i, int(store[i]), *map(float, X[i])))
            conn.execute("VACUUM (FREEZE, ANALYZE) t")
            boosters = []
            for m in range(args.models):
                Xt = rng.standard_normal((1000, 4)).astype(np.float32)
                y = Xt @ rng.standard_normal(4) + rng.standard_normal(1000) * 0.1
                bst = xgb.train({"max_depth": 4, "eta": 0.3, "nthread": 1},
                                xgb.DMatrix(Xt, label=y, feature_names=list("abcd")), 20)
                boosters.append(bst)
                conn.execute("SELECT create_model(%s, %s::jsonb)", (f"store_{m}", bytes(bst.save_raw("json")).decode()))

            def best(sql):
                conn.execute(sql).fetchone()
                times = []
                for _ in range(args.reps):
                    t0 = time.perf_counter()
                    conn.execute(sql).fetchone()
                    times.append(time.perf_counter() - t0)
                return min(times)

            rows = {
                "one constant name": "SELECT sum(predict('store_0', t)) FROM t",
                f"name per row, {args.models} interleaved": "SELECT sum(predict('store_' || store, t)) FROM t",
                f"name per row, {args.models} sorted":
                    "SELECT sum(predict('store_' || store, t)) FROM (SELECT * FROM t ORDER BY store) t",
            }
            base = None
            print(f"{args.rows:,} rows, {args.models} models of 20 trees (depth 4), best of {args.reps}")
            print("| query | seconds | µs a row | x one name |\n|---|---|---|---|")
            for label, sql in rows.items():
                s = best(sql)
                base = base or s
                print(f"| {label} | {s:.3f} | {s / args.rows * 1e6:.2f} | {s / base:.2f}x |", flush=True)
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
