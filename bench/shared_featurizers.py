"""Per-tenant models over one fitted featurizer (issue 30, PRETZEL): the time with and without
sharing its runs.

    /usr/bin/python3 bench/shared_featurizers.py                 # 1M rows, 1,000 models
    /usr/bin/python3 bench/shared_featurizers.py --rows 100000 --models 100

Starts a throwaway cluster (regress/pgcluster.py) and fills t(id, tenant, a, b, c, d real,
city, plan text) with --rows rows: standard normal numbers, 5 cities, 4 plans, and a tenant
drawn uniformly from --models. Fits one ColumnTransformer (StandardScaler on a-d, OneHotEncoder
on city and plan) on 10,000 rows, then per tenant a GradientBoostingRegressor (--trees trees of
depth 3) on 500 rows of its own, featurized by that one transformer, and registers
Pipeline(transformer, regressor) as 'tenant_<k>'. A model reads the 13 featurized columns its
trees split on: models that split on all of them compile to the same featurizer, the others
to their own (the optimizer drops columns a model never reads). Times, serially
(--workers 0: max_parallel_workers_per_gather), best of --reps after a warm-up:

    SELECT sum(predict('tenant_' || tenant, t)) FROM t   pg_predict.share_featurizers = on
    the same                                             pg_predict.share_featurizers = off
    SELECT sum(predict('tenant_0', t)) FROM t            one constant name, for scale

and checks the first 2000 rows, shared, against each tenant's own scikit-learn pipeline
(exit status 1 on a difference above 1e-5). Prints the shared query's EXPLAIN ANALYZE.
"""

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "regress"))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
from pgcluster import Cluster  # noqa: E402
from pg_predict.deploy import to_artifact  # noqa: E402

CITIES = [f"city_{k}" for k in range(5)]
PLANS = ["basic", "plus", "pro", "team"]
NUMS = ["a", "b", "c", "d"]


def frame(rng, n):
    import pandas as pd
    df = pd.DataFrame(rng.standard_normal((n, 4)).astype(np.float32), columns=NUMS)
    df["city"] = rng.choice(CITIES, n)
    df["plan"] = rng.choice(PLANS, n)
    return df


def target(rng, df):
    w = rng.standard_normal(4)
    city_effect = {c: rng.standard_normal() for c in CITIES}
    return df[NUMS].to_numpy() @ w + df["city"].map(city_effect).to_numpy() + 0.1 * rng.standard_normal(len(df))


def main():
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--models", type=int, default=1000)
    ap.add_argument("--trees", type=int, default=20)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--workers", type=int, default=0, help="max_parallel_workers_per_gather")
    ap.add_argument("--cache-size", default="512MB", help="pg_predict.cache_size")
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    data = frame(rng, args.rows)
    tenant = rng.integers(0, args.models, args.rows)
    featurizer = ColumnTransformer([("num", StandardScaler(), NUMS),
                                    ("cat", OneHotEncoder(handle_unknown="ignore"), ["city", "plan"])])
    featurizer.fit(frame(rng, 10_000))
    pipelines = []
    t0 = time.perf_counter()
    for _ in range(args.models):
        df = frame(rng, 500)
        model = GradientBoostingRegressor(n_estimators=args.trees, max_depth=3, random_state=0)
        model.fit(featurizer.transform(df), target(rng, df))
        pipelines.append(Pipeline([("features", featurizer), ("model", model)]))
    print(f"fitted {args.models} tenants' models in {time.perf_counter() - t0:.1f} s")
    used = {frozenset(int(f) for est in p["model"].estimators_.ravel() for f in est.tree_.feature if f >= 0)
            for p in pipelines}
    print(f"the models split on {len(used)} distinct sets of featurized columns "
          f"(so many distinct compiled featurizers)")

    with Cluster(settings={"shared_buffers": "512MB", "jit": "off", "pg_predict.cache_size": args.cache_size},
                 prefix="pgp-shared-") as pg:
        with pg.connect() as conn:
            conn.execute("CREATE EXTENSION pg_predict")
            conn.execute("CREATE UNLOGGED TABLE t (id int, tenant int, a real, b real, c real, d real, "
                         "city text, plan text)")
            with conn.cursor().copy("COPY t FROM STDIN") as cp:
                for i, row in enumerate(data.itertuples(index=False)):
                    cp.write_row((i, int(tenant[i]), *map(float, row[:4]), row[4], row[5]))
            conn.execute("VACUUM (FREEZE, ANALYZE) t")
            t0 = time.perf_counter()
            for k, pipe in enumerate(pipelines):
                sql_type, value, fmt = to_artifact(pipe, NUMS + ["city", "plan"])
                conn.execute(f"SELECT create_model(%s, %s::{sql_type}, %s)",
                             (f"tenant_{k}", __import__("json").dumps(value), fmt))
            print(f"create_model of {args.models} models: {time.perf_counter() - t0:.1f} s")

            def best(sql, share):
                conn.execute(f"SET pg_predict.share_featurizers = {share}")
                conn.execute(f"SET max_parallel_workers_per_gather = {args.workers}")
                conn.execute(sql).fetchone()
                times = []
                for _ in range(args.reps):
                    t0 = time.perf_counter()
                    conn.execute(sql).fetchone()
                    times.append(time.perf_counter() - t0)
                return min(times)

            per_row = "SELECT sum(predict('tenant_' || tenant, t)) FROM t"
            rows = [(f"{args.models} models named per row, featurizer shared", per_row, "on"),
                    (f"{args.models} models named per row, not shared", per_row, "off"),
                    ("one constant name", "SELECT sum(predict('tenant_0', t)) FROM t", "on")]
            print(f"{args.rows:,} rows, {args.models} models of {args.trees} trees over one ColumnTransformer, "
                  f"best of {args.reps}; pg_predict.cache_size = {args.cache_size}")
            print("| query | seconds | µs a row | x shared |\n|---|---|---|---|")
            base = None
            for label, sql, share in rows:
                s = best(sql, share)
                base = base or s
                print(f"| {label} | {s:.3f} | {s / args.rows * 1e6:.2f} | {s / base:.2f}x |", flush=True)
            conn.execute("SET pg_predict.share_featurizers = on")
            n = min(2000, args.rows)
            got = np.array([r[0] for r in conn.execute(
                f"SELECT predict('tenant_' || tenant, t) FROM t WHERE id < {n} ORDER BY id").fetchall()])
            want = np.array([pipelines[tenant[i]].predict(data.iloc[i:i + 1])[0] for i in range(n)])
            diff = float(np.max(np.abs(got - want) / np.maximum(1.0, np.abs(want))))
            print(f"max difference over the first {n} rows: {diff:.2g}")
            print("\n".join(r[0] for r in conn.execute(
                f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) {per_row}").fetchall()))
            if not diff <= 1e-5:
                sys.exit(1)


if __name__ == "__main__":
    main()
