"""The ONNX bench row: the bench's 500-tree XGBoost model (binary:logistic, depth 8, trained on
the first 100k rows of the higgs table of bench/run.py) written as an ONNX TreeEnsembleClassifier
(bench/xgb_to_onnx.py, BRANCH_LT, base_values) and scored by pg_predict over the 1M-row table,
against XGBoost's own predictor on the same rows and the same model (bench/native.py) and against
pg_predict scoring the XGBoost JSON itself. Checks that the ONNX model's probabilities agree
with XGBoost's on every row.

    make install && /usr/bin/python3 bench/onnx_bench.py [--rows 1000000] [--threads 1,2]

Prints a table (seconds, best of --reps) and writes bench/results/onnx.md.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "regress"))

import run as bench  # noqa: E402  (the data, the model and its cache are bench/run.py's)
from pgcluster import Cluster  # noqa: E402
from xgb_to_onnx import convert  # noqa: E402


def timed(conn, sql, reps):
    best = None
    for _ in range(reps):
        t0 = time.perf_counter()
        conn.execute(sql).fetchall()
        t = time.perf_counter() - t0
        best = t if best is None else min(best, t)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--train-rows", type=int, default=100_000)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=2)
    a = ap.parse_args()
    threads = [int(t) for t in a.threads.split(",")]
    info = {}
    with Cluster() as pg, tempfile.TemporaryDirectory() as workdir:
        os.chmod(workdir, 0o755)
        conn = pg.connect()
        conn.autocommit = True
        conn.execute("CREATE EXTENSION pg_predict")
        bench.log(f"generating {a.rows} rows ...")
        # The higgs table of bench/run.py (same seed, same rows), alone.
        cols = ", ".join(f"f{i} real NOT NULL" for i in range(1, bench.NF + 1))
        conn.execute(f"CREATE UNLOGGED TABLE higgs (id int NOT NULL, {cols}, label int NOT NULL,"
                     " target real NOT NULL)")
        conn.execute("SELECT setseed(%s)", (bench.SEED,))
        conn.execute(bench.higgs_sql(a.rows))
        conn.execute("VACUUM (FREEZE, ANALYZE) higgs")
        X = bench.copy_matrix(conn, f"SELECT {', '.join(bench.HIGGS_FEATURES)} FROM higgs ORDER BY id",
                              len(bench.HIGGS_FEATURES))
        y = np.array([r[0] for r in conn.execute("SELECT label FROM higgs ORDER BY id").fetchall()], dtype=np.float32)
        data = {"higgs": {"X": X, "label": y, "target": y}}
        saved = bench.MODELS
        bench.MODELS = {"m500": saved["m500"]}
        paths = bench.train_models(data, a.train_rows, workdir, info)
        bench.MODELS = saved
        with open(paths["m500"]) as f:
            doc = json.load(f)
        onnx_bytes = convert(doc, bench.HIGGS_FEATURES).SerializeToString()
        t0 = time.perf_counter()
        conn.execute("SELECT create_model('m500_onnx', %s::bytea, 'onnx', %s::jsonb)",
                     (onnx_bytes, json.dumps({"features": bench.HIGGS_FEATURES})))
        info["onnx_create_model_s"] = round(time.perf_counter() - t0, 2)
        conn.execute("SELECT create_model('m500', %s::jsonb)", (json.dumps(doc),))
        bench.log(f"ONNX model {len(onnx_bytes)} bytes, create_model {info['onnx_create_model_s']} s")

        # Agreement: P(class 1) of the ONNX model in PostgreSQL against XGBoost's, every row.
        import xgboost as xgb
        bst = xgb.Booster(model_file=paths["m500"])
        want = bst.inplace_predict(np.ascontiguousarray(X)).astype(np.float64)
        got = np.array([r[0] for r in conn.execute(
            "SELECT (predict_proba('m500_onnx', h))[2] FROM higgs h ORDER BY id").fetchall()])
        worst = float(np.max(np.abs(got - want)))
        labels_equal = bool(np.array_equal(got > 0.5, want > 0.5))
        bench.log(f"agreement: max |P_onnx - P_xgboost| = {worst:.2e} over {len(got)} rows, labels equal: {labels_equal}")

        npy = os.path.join(workdir, "X.npy")
        np.save(npy, X)
        results = []
        for t in threads:
            conn.execute(f"SET pg_predict.threads = {t}")
            onnx_s = timed(conn, "SELECT sum(predict('m500_onnx', h)) FROM higgs h", a.reps)
            json_s = timed(conn, "SELECT sum(predict('m500', h)) FROM higgs h", a.reps)
            out = subprocess.run([sys.executable, os.path.join(HERE, "native.py"), "--data", npy, "--model",
                                  paths["m500"], "--threads", str(t), "--reps", str(a.reps), "--classifier"],
                                 capture_output=True, text=True, check=True)
            native_s = min(json.loads(out.stdout.strip().splitlines()[-1])["times"])
            results.append((t, onnx_s, json_s, native_s))
            bench.log(f"{t} thr: pg_predict ONNX {onnx_s:.2f} s, pg_predict XGBoost JSON {json_s:.2f} s, "
                      f"XGBoost native {native_s:.2f} s")
        conn.close()
    lines = [f"# ONNX bench row ({a.rows} rows, 28 real columns; XGBoost 500 trees depth 8 as an ONNX "
             "TreeEnsembleClassifier)", "",
             f"Agreement with XGBoost's predictor: max |P - P_xgboost| = {worst:.2e} over {a.rows} rows, "
             f"labels {'all equal' if labels_equal else 'DIFFER'}. Best of {a.reps}; the machine was shared.", "",
             "| threads | pg_predict ONNX (s) | pg_predict XGBoost JSON (s) | XGBoost native (s) | ONNX / native |",
             "|---|---|---|---|---|"]
    for t, o, j, n in results:
        lines.append(f"| {t} | {o:.2f} | {j:.2f} | {n:.2f} | {o / n:.2f} |")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "onnx.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
