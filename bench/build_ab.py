#!/usr/bin/python3
"""Two builds of the module, side by side, on what a build choice (optimization level, unity
batches, precompiled headers) can change: loading a model and scoring with it.

    flock /work/bench.lock /usr/bin/python3 bench/build_ab.py A=/path/a/pg_predict.so B=/path/b/pg_predict.so [--rounds 5]

Each round installs each module in turn into `pg_config --pkglibdir` (the SQL scripts must be
the same: both builds come from trees with the same control/), starts a fresh cluster, and times:
- `create_model` of a LightGBM text model (regress/fixtures/lightgbm/deep.model.txt, 1 MB) and
  of an XGBoost JSON model of 500 trees of depth 8 (trained here, cached in bench/.cache/):
  reading, checking, optimizing and compiling, the cold layers;
- the first `predict` of each in a fresh connection: loading the stored program;
- `sum(predict(...))` over 200,000 rows with batching: the hot layers.
Rounds alternate A and B so that the machine's noise falls on both. Prints each one's median
per step and B's ratio to A. The installed module at the end is the one that was there before."""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
sys.path.insert(0, os.path.join(ROOT, "regress"))

from pgcluster import Cluster  # noqa: E402

ROWS = 200_000
FEATURES = 28


def xgboost_model():
    """500 trees of depth 8 on 28 features, as the bench's m500: cached, it takes a minute."""
    path = os.path.join(HERE, ".cache", "build_ab-m500.json")
    if not os.path.exists(path):
        import numpy as np
        import xgboost as xgb
        rng = np.random.default_rng(7)
        x = rng.normal(size=(50_000, FEATURES)).astype(np.float32)
        y = (x[:, 0] + x[:, 1] * x[:, 2] + rng.normal(size=50_000) > 0).astype(np.float32)
        booster = xgb.train({"objective": "binary:logistic", "max_depth": 8, "tree_method": "hist"},
                            xgb.DMatrix(x, label=y, feature_names=[f"f{i}" for i in range(FEATURES)]), num_boost_round=500)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        booster.save_model(path)
    with open(path) as f:
        return f.read()


def lightgbm_model():
    with open(os.path.join(ROOT, "regress", "fixtures", "lightgbm", "deep.model.txt")) as f:
        return f.read()


def timed(conn, sql, params=()):
    start = time.perf_counter()
    conn.execute(sql, params).fetchall()
    return time.perf_counter() - start


def one_round(models):
    """One fresh cluster with the installed module: seconds per step."""
    out = {}
    columns = ", ".join(f"random()::real AS f{i}" for i in range(FEATURES))  # the models' names
    with Cluster() as pg:
        with pg.connect() as conn:
            conn.execute("CREATE EXTENSION pg_predict")
            conn.execute(f"CREATE TABLE t AS SELECT {columns} FROM generate_series(1, {ROWS})")
            conn.execute("VACUUM ANALYZE t")
            for name, (text, fmt, _) in models.items():
                out[f"{name}: create_model"] = timed(
                    conn, "SELECT create_model(%s, %s::text, %s)", (name, text, fmt))
        for name, (_, _, features) in models.items():
            with pg.connect() as conn:
                out[f"{name}: first predict"] = timed(
                    conn, f"SELECT predict(%s, array_fill(0.5::real, ARRAY[{features}]))", (name,))
                conn.execute("SELECT sum(predict(%s, t)) FROM t", (name,)).fetchall()  # warm
                out[f"{name}: score {ROWS} rows"] = timed(conn, "SELECT sum(predict(%s, t)) FROM t",
                                                          (name,))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("builds", nargs=2, metavar="LABEL=MODULE", help="two pg_predict.so files")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    builds = [b.split("=", 1) for b in a.builds]
    pkglibdir = subprocess.run(["pg_config", "--pkglibdir"], check=True, capture_output=True,
                               text=True).stdout.strip()
    installed = os.path.join(pkglibdir, "pg_predict.so")
    saved = installed + ".build_ab-saved"
    shutil.copy2(installed, saved)
    models = {"lgbm_deep": (lightgbm_model(), "lightgbm", 8), "xgb_m500": (xgboost_model(), "xgboost", FEATURES)}
    times = {label: {} for label, _ in builds}
    try:
        for r in range(a.rounds):
            for label, module in (builds if r % 2 == 0 else builds[::-1]):
                shutil.copy2(module, installed)
                for step, seconds in one_round(models).items():
                    times[label].setdefault(step, []).append(seconds)
                print(f"round {r + 1} {label} done", file=sys.stderr, flush=True)
    finally:
        shutil.copy2(saved, installed)
        os.remove(saved)
    (la, _), (lb, _) = builds
    print(f"{'step':36} {la + ' (s)':>12} {lb + ' (s)':>12} {lb + '/' + la:>8}   median of {a.rounds}")
    for step in times[la]:
        ma, mb = statistics.median(times[la][step]), statistics.median(times[lb][step])
        print(f"{step:36} {ma:12.4f} {mb:12.4f} {mb / ma:8.3f}")


if __name__ == "__main__":
    main()
