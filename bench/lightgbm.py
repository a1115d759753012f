#!/usr/bin/python3
"""The LightGBM bench row: a LightGBM model of 500 trees with 255 leaves over the 1M-row higgs
table (bench/run.py's anchor data), scored by pg_predict from its model.txt, against XGBoost's
own predictor on the same model.

LightGBM is not in Debian, so the model is made here: XGBoost trains 500 rounds with
grow_policy=lossguide, max_leaves=255 (cached in bench/.cache/), and its JSON is converted to
LightGBM's text format. XGBoost goes left on x < t with a float32 t, LightGBM on x <= t with a
double: the LightGBM threshold is the largest double below t, so for the float32 inputs of the
table both send every row the same way, and pg_predict's LightGBM scores must equal
xgboost's inplace_predict (checked on every row). Writes bench/results/lightgbm.md.

    make install && /usr/bin/python3 bench/lightgbm.py [--rows 1000000] [--threads 2]
"""

import argparse
import hashlib
import json
import math
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "regress"))
import run as bench  # noqa: E402  (higgs_sql, copy_matrix, HIGGS_FEATURES, SEED)
from pgcluster import Cluster  # noqa: E402

ROUNDS, LEAVES, TRAIN_ROWS = 500, 255, 100_000


def train(X, y):
    import xgboost as xgb
    params = {"objective": "binary:logistic", "tree_method": "hist", "grow_policy": "lossguide",
              "max_leaves": LEAVES, "max_depth": 0, "eta": 0.1, "seed": 0, "nthread": os.cpu_count() or 2}
    h = hashlib.sha1(X.tobytes() + y.tobytes() + json.dumps([params, ROUNDS, xgb.__version__]).encode())
    os.makedirs(os.path.join(HERE, ".cache"), exist_ok=True)
    path = os.path.join(HERE, ".cache", f"lgb500-{h.hexdigest()[:16]}.json")
    if not os.path.exists(path):
        t0 = time.perf_counter()
        bst = xgb.train(params, xgb.DMatrix(X, label=y, feature_names=bench.HIGGS_FEATURES), ROUNDS)
        bst.save_model(path)
        print(f"trained in {time.perf_counter() - t0:.0f} s", flush=True)
    bst = xgb.Booster()
    bst.load_model(path)
    with open(path) as f:
        return bst, json.load(f)


def to_lightgbm(doc):
    """XGBoost JSON (binary:logistic, numerical splits) -> LightGBM's model.txt."""
    learner = doc["learner"]
    base = float(learner["learner_model_param"]["base_score"].strip("[]"))
    base_margin = math.log(base / (1 - base))
    trees = learner["gradient_booster"]["model"]["trees"]
    out = []
    for k, t in enumerate(trees):
        left, right = t["left_children"], t["right_children"]
        cond, feat, dleft = t["split_conditions"], t["split_indices"], t["default_left"]
        internal = [i for i in range(len(left)) if left[i] != -1]
        leaves = [i for i in range(len(left)) if left[i] == -1]
        inum = {n: i for i, n in enumerate(internal)}
        lnum = {n: i for i, n in enumerate(leaves)}
        ref = lambda n: inum[n] if left[n] != -1 else ~lnum[n]  # noqa: E731
        values = [cond[n] + (base_margin if k == 0 else 0.0) for n in leaves]
        lines = [f"Tree={k}", f"num_leaves={len(leaves)}", "num_cat=0"]
        if internal:
            # x < t (float32 t) <=> x <= the largest double below t, for every float32 x
            thr = [np.nextafter(np.float64(np.float32(cond[n])), -np.inf) for n in internal]
            lines += [
                "split_feature=" + " ".join(str(feat[n]) for n in internal),
                "threshold=" + " ".join(repr(float(v)) for v in thr),
                "decision_type=" + " ".join(str(8 | (2 if dleft[n] else 0)) for n in internal),
                "left_child=" + " ".join(str(ref(left[n])) for n in internal),
                "right_child=" + " ".join(str(ref(right[n])) for n in internal),
            ]
        lines += ["leaf_value=" + " ".join(repr(float(v)) for v in values), "shrinkage=1", ""]
        out.append("\n".join(lines) + "\n")
    header = ["tree", "version=v4", "num_class=1", "num_tree_per_iteration=1", "label_index=0",
              f"max_feature_idx={len(bench.HIGGS_FEATURES) - 1}", "objective=binary sigmoid:1",
              "feature_names=" + " ".join(bench.HIGGS_FEATURES),
              "feature_infos=" + " ".join("none" for _ in bench.HIGGS_FEATURES), ""]
    return "\n".join(header) + "\n" + "".join(out) + "end of trees\n"


def depth(t):
    left, right = t["left_children"], t["right_children"]
    best, stack = 0, [(0, 0)]
    while stack:
        n, d = stack.pop()
        best = max(best, d)
        if left[n] != -1:
            stack += [(left[n], d + 1), (right[n], d + 1)]
    return best


def timed(fn, repeat=1):
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    feats = ", ".join(bench.HIGGS_FEATURES)
    with Cluster() as pg:
        conn = pg.connect()
        conn.autocommit = True
        conn.execute("CREATE EXTENSION pg_predict")
        cols = ", ".join(f"f{i} real NOT NULL" for i in range(1, bench.NF + 1))
        conn.execute(f"CREATE UNLOGGED TABLE higgs (id int NOT NULL, {cols}, label int NOT NULL, target real NOT NULL)")
        conn.execute("SELECT setseed(%s)", (bench.SEED,))
        conn.execute(bench.higgs_sql(args.rows))
        conn.execute("VACUUM (FREEZE, ANALYZE) higgs")
        X = bench.copy_matrix(conn, f"SELECT {feats} FROM higgs ORDER BY id", bench.NF)
        y = np.array([r[0] for r in conn.execute(f"SELECT label FROM higgs ORDER BY id LIMIT {TRAIN_ROWS}")],
                     dtype=np.float32)
        bst, doc = train(X[:TRAIN_ROWS], y)
        text = to_lightgbm(doc)
        trees = doc["learner"]["gradient_booster"]["model"]["trees"]
        leaves = [sum(1 for c in t["left_children"] if c == -1) for t in trees]
        depths = [depth(t) for t in trees]

        t0 = time.perf_counter()
        conn.execute("SELECT create_model('lgb500', %s::text)", [text])
        create_s = time.perf_counter() - t0
        info = conn.execute("SELECT format, strategy, trees, depth, program_bytes FROM models WHERE name = 'lgb500'").fetchone()

        # Agreement on every row: pg_predict's LightGBM scores against xgboost's own.
        got = np.array([r[0] for r in conn.execute(
            "SELECT (predict_proba('lgb500', h))[2] FROM higgs h ORDER BY id")], dtype=np.float64)
        want = bst.inplace_predict(X)
        diff = float(np.max(np.abs(got - want)))

        results = []
        for threads in sorted({1, args.threads}):
            conn.execute(f"SET pg_predict.threads = {threads}")
            pg_s = timed(lambda: conn.execute("SELECT sum((predict_proba('lgb500', h))[2]) FROM higgs h").fetchone())
            bst.set_param({"nthread": threads})
            xgb_s = timed(lambda: bst.inplace_predict(X))
            results.append((threads, pg_s, xgb_s))
            print(f"threads {threads}: pg_predict {pg_s:.2f} s, xgboost inplace_predict {xgb_s:.2f} s, "
                  f"ratio {pg_s / xgb_s:.2f}", flush=True)

    lines = [
        "# LightGBM bench row (bench/lightgbm.py)",
        "",
        f"A LightGBM model of {len(trees)} trees with up to {LEAVES} leaves (mean {np.mean(leaves):.0f} leaves, "
        f"depth {min(depths)}..{max(depths)}), binary, made by converting XGBoost's lossguide model "
        f"(max_leaves={LEAVES}, trained on the first {min(TRAIN_ROWS, args.rows)} rows) to model.txt; scored over the "
        f"{args.rows}-row higgs table (28 real columns) by pg_predict from the model text "
        f"(`create_model('lgb500', text)`: format {info[0]}, strategy {info[1]}, program {info[4]} bytes, "
        f"create_model {create_s:.1f} s) and by xgboost {__import__('xgboost').__version__}'s "
        "`inplace_predict` on the same model (a float32 numpy matrix already in memory: no database).",
        "",
        f"Agreement: max |pg_predict - xgboost| over all {args.rows} rows = {diff:.3g}.",
        "",
        "| threads | pg_predict (SELECT sum(predict_proba) over the table) | xgboost inplace_predict | ratio |",
        "|---|---|---|---|",
    ]
    for threads, pg_s, xgb_s in results:
        lines.append(f"| {threads} | {pg_s:.2f} s | {xgb_s:.2f} s | {pg_s / xgb_s:.2f} |")
    lines += ["", "One run each. The machine (2 cores) was shared with other work while this ran: "
              "the absolute times are noisy, the ratio less so.", ""]
    path = os.path.join(HERE, "results", "lightgbm.md")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))
    if diff > 1e-5:
        sys.exit(f"pg_predict and xgboost disagree by {diff}")


if __name__ == "__main__":
    main()
