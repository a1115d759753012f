#!/usr/bin/python3
"""What the ONNX importer's general path costs (issue 31): graphs in the shape skl2onnx writes,
scored by pg_predict over a table, against scikit-learn's predict_proba on the same rows, and
against a graph of the same kind that the specific path computes.

  - softmax link (specific path): a LinearClassifier's raw scores and a Softmax node, which
    becomes the model's softmax link on the fused linear kernel;
  - SGD log_loss (general path): skl2onnx's SGDClassifier(loss='log_loss') with three classes,
    a sigmoid per class normalised by its sum, with the zero-sum guard: 13 nodes, 9 of them
    tensor steps;
  - soft voting (general path): a decision tree (a nested model step) and a logistic
    regression, each weighted, summed.

The graphs come from regress/conformance/test_onnx_ops.py's builders (trained on its 200 rows).
Serial (max_parallel_workers_per_gather = 0), best of --reps after a warm-up; scikit-learn on
one thread (OMP / OpenBLAS threads 1), float64 from the same float32 rows.

    /usr/bin/python3 bench/onnx_general.py [--rows 1000000] [--reps 3]
"""

import argparse
import json
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "regress"))
sys.path.insert(0, os.path.join(HERE, "..", "regress", "conformance"))
from pgcluster import Cluster  # noqa: E402
import test_onnx_ops as graphs  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(3)
    X = np.stack([rng.normal(0, 2, args.rows), rng.integers(-6, 7, args.rows) + 0.5,
                  rng.normal(0, 0.5, args.rows), rng.uniform(-3, 3, args.rows)], axis=1).astype(np.float32)
    cases = {"softmax link (specific path)": graphs.softmax_of_raw_scores(),
             "SGD log_loss (general path)": graphs.sgd_log_loss(),
             "soft voting, tree + logistic (general path)": graphs.soft_voting()}
    with Cluster(settings={"shared_buffers": "512MB", "jit": "off", "max_parallel_workers_per_gather": "0"},
                 prefix="pgp-onnx-general-") as pg, pg.connect() as conn:
        conn.execute("CREATE EXTENSION pg_predict")
        conn.execute("CREATE UNLOGGED TABLE x (id int, a real, b real, c real, d real)")
        with conn.cursor().copy("COPY x FROM STDIN") as cp:
            for i in range(args.rows):
                cp.write_row((i, *map(float, X[i])))
        conn.execute("VACUUM (FREEZE, ANALYZE) x")
        print(f"{args.rows:,} rows of 4 real columns; best of {args.reps}; serial")
        print("| graph | pg_predict (s) | scikit-learn predict_proba (s) | pg_predict / scikit-learn | max abs diff |")
        print("|---|---|---|---|---|")
        scan = "SELECT sum(a + b + c + d) FROM x"
        conn.execute(scan).fetchone()
        t_scan = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            conn.execute(scan).fetchone()
            t_scan.append(time.perf_counter() - t0)
        print(f"| the scan alone, no model (`{scan}`) | {min(t_scan):.3f} | | | |")
        x64 = X.astype(np.float64)
        for i, (label, (model, m)) in enumerate(cases.items()):
            name = f"g{i}"
            conn.execute("SELECT create_model(%s, %s::bytea, 'onnx', %s::jsonb)",
                         (name, model.SerializeToString(), json.dumps({"features": list("abcd")})))
            sql = f"SELECT sum((predict_proba('{name}', x))[1]) FROM x"
            conn.execute(sql).fetchone()
            times = []
            for _ in range(args.reps):
                t0 = time.perf_counter()
                conn.execute(sql).fetchone()
                times.append(time.perf_counter() - t0)
            sk = []
            for _ in range(args.reps):
                t0 = time.perf_counter()
                want = m.predict_proba(x64)
                sk.append(time.perf_counter() - t0)
            n = min(20000, args.rows)
            got = np.array([r[0] for r in conn.execute(
                f"SELECT predict_proba('{name}', x) FROM x WHERE id < {n} ORDER BY id").fetchall()])
            diff = float(np.max(np.abs(got - want[:n])))
            print(f"| {label} | {min(times):.3f} | {min(sk):.3f} | {min(times) / min(sk):.2f} | {diff:.1e} |", flush=True)


if __name__ == "__main__":
    main()
