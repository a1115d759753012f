"""XGBoost side of the kernel micro-benchmark (bench/kernel_bench.cpp).

    /usr/bin/python3 bench/kernel_bench_xgb.py --dir /tmp/kb [--rows 1000000] [--trees 500]
        [--depth 8] [--leaves 31 --depth 0] [--threads 1,2] [--reps 3]

Makes (once, kept in --dir) HIGGS-shaped data (rows × 28 float32, a few NaN) and an XGBoost
binary classifier of --trees trees of depth --depth trained on the first 100k rows, then times
Booster.inplace_predict on all rows (float32 numpy) per thread count and writes
  model.json  X.f32 (raw float32 rows × 28)  margins.f32 (XGBoost's raw margins)
so that `kernel_bench --model DIR/model.json --data DIR/X.f32 --check DIR/margins.f32` scores
the same model on the same data.
"""

import argparse
import json
import os
import time

import numpy as np
import xgboost as xgb


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--trees", type=int, default=500)
    ap.add_argument("--depth", type=int, default=8)
    ap.add_argument("--leaves", type=int, default=0,
                    help="grow_policy=lossguide with this max_leaves (and --depth 0: no depth limit)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    xpath, mpath = os.path.join(a.dir, "X.f32"), os.path.join(a.dir, "model.json")
    if not os.path.exists(xpath):
        rng = np.random.default_rng(7)
        X = rng.standard_normal((a.rows, 28), dtype=np.float32)
        X[:, 20:] = np.abs(X[:, 20:]) * 2  # a few skewed, "mass-like" columns
        X[rng.random(X.shape) < 0.01] = np.nan
        X.tofile(xpath)
    X = np.fromfile(xpath, dtype=np.float32).reshape(-1, 28)
    if not os.path.exists(mpath):
        n = min(100_000, X.shape[0])
        Xt = np.nan_to_num(X[:n])
        y = ((Xt[:, 0] * Xt[:, 1] + np.sin(Xt[:, 2] * 3) + Xt[:, 21] - Xt[:, 25] * 0.5
              + 0.5 * np.random.default_rng(1).standard_normal(n)) > 0.5).astype(np.float32)
        d = xgb.DMatrix(X[:n], label=y)
        params = {"objective": "binary:logistic", "max_depth": a.depth, "eta": 0.1,
                  "tree_method": "hist", "nthread": 2}
        if a.leaves:
            params.update(grow_policy="lossguide", max_leaves=a.leaves)
        bst = xgb.train(params, d, num_boost_round=a.trees)
        bst.save_model(mpath)
    bst = xgb.Booster(model_file=mpath)
    out = {}
    for th in [int(t) for t in a.threads.split(",")]:
        bst.set_param({"nthread": th})
        bst.inplace_predict(X[:1000])
        times, cpu = [], []
        for _ in range(a.reps):
            t0, c0 = time.perf_counter(), time.process_time()
            m = bst.inplace_predict(X, predict_type="margin")
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)  # the machine is shared: wall time is noisy
        out[th] = {"median": sorted(times)[len(times) // 2], "times": times,
                   "cpu_median": sorted(cpu)[len(cpu) // 2]}
        m.astype(np.float32).tofile(os.path.join(a.dir, "margins.f32"))
    print(json.dumps({"rows": int(X.shape[0]), "xgboost_inplace_predict_s": out}))


if __name__ == "__main__":
    main()
