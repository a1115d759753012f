"""Python xgboost's own training on rows already in memory: the baseline of train()'s bench row.

    /usr/bin/python3 bench/train_native.py --data X.npy --label y.npy --threads 2 \
        --rounds 100 --depth 6 [--reps 1]

Each run is what a Python user does with the table's rows in a numpy array: xgb.DMatrix(X,
label) and xgb.train(params, dtrain, rounds) with train()'s defaults (tree_method hist, seed 0)
and the same objective (binary:logistic), depth and nthread. Prints one JSON line: {"times",
"cpu", "rows", "value"} (value: the number of trees trained). In its own process so that the
caller watches its memory.
"""

import argparse
import json
import time

import numpy as np
import xgboost as xgb


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--reps", type=int, default=1)
    a = ap.parse_args()
    X = np.ascontiguousarray(np.load(a.data), dtype=np.float32)
    y = np.load(a.label).astype(np.float32)
    params = {"max_depth": a.depth, "objective": "binary:logistic", "tree_method": "hist", "seed": 0,
              "nthread": a.threads}
    times, cpu, trees = [], [], 0
    for _ in range(a.reps):
        t0, c0 = time.perf_counter(), time.process_time()
        booster = xgb.train(params, xgb.DMatrix(X, label=y, nthread=a.threads), num_boost_round=a.rounds)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        trees = len(booster.get_dump())
    print(json.dumps({"times": times, "cpu": cpu, "rows": int(X.shape[0]), "value": trees}))


if __name__ == "__main__":
    main()
