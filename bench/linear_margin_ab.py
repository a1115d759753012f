#!/usr/bin/python3
"""The `pipe` model's fused linear margin (kernels/linear_margin) against the tensor program it
replaced, in one cluster, runs interleaved: the bench's customers table and its fitted `pipe`
pipeline (bench/.cache/pipe-*.joblib: run the bench's pipe rows once first), 1 thread.

    flock /work/bench.lock /usr/bin/python3 bench/linear_margin_ab.py [--rows N] [--reps R]

`native` is the program create_model stores (the fused op); `gemm` is pg_predict.strategy =
gemm, which recompiles the same spec as the all-tensor program (what create_model stored before
the op existed). Prints each one's median query time, its ratio to the scan floor, the
Model Time of EXPLAIN ANALYZE, and the time of a call on the per-row path; the two sums of
predict must be equal."""

import argparse
import glob
import os
import re
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "regress"))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

from pgpb import data  # noqa: E402
from pgpb.cli import SERVER_SETTINGS  # noqa: E402
from pgcluster import Cluster  # noqa: E402

FLOOR = ("SELECT sum(age + income + tenure + visits + coalesce(score, 0) + rate + length(city) "
         "+ length(plan) + length(coalesce(channel, ''))) FROM customers")
QUERY = "SELECT sum(predict('pipe', c)) FROM customers c"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--per-row-rows", type=int, default=100_000,
                    help="rows scored one call at a time (pg_predict.enable_batching = off)")
    a = ap.parse_args()
    paths = sorted(glob.glob(os.path.join(HERE, ".cache", "pipe-*.joblib")), key=os.path.getmtime)
    if not paths:
        sys.exit("no bench/.cache/pipe-*.joblib: run bench/run.py --only '^pipe' first")
    import joblib
    import pg_predict
    with Cluster(settings=SERVER_SETTINGS, prefix="pgpb-ab-") as pg, pg.connect() as conn:
        conn.execute("CREATE EXTENSION pg_predict")
        data.generate(conn, ["customers"], a.rows, {})
        pg_predict.deploy(conn, "pipe", joblib.load(paths[-1]))
        for k, v in {"jit": "off", "max_parallel_workers_per_gather": "0", "pg_predict.threads": "1"}.items():
            conn.execute(f"SET {k} = '{v}'")
        modes = {"floor": None, "native": "auto", "gemm": "gemm"}
        times = {m: [] for m in modes}
        sums, model_ms = {}, {}
        for rep in range(a.reps + 1):  # the first round warms each up (and compiles gemm's variant)
            for mode, strategy in modes.items():
                if strategy is not None:
                    conn.execute(f"SET pg_predict.strategy = '{strategy}'")
                t0 = time.perf_counter()
                value = conn.execute(FLOOR if strategy is None else QUERY).fetchone()[0]
                if rep > 0:
                    times[mode].append(time.perf_counter() - t0)
                if strategy is not None:
                    sums[mode] = value
        for mode, strategy in modes.items():
            if strategy is None:
                continue
            conn.execute(f"SET pg_predict.strategy = '{strategy}'")
            plan = "\n".join(r[0] for r in conn.execute("EXPLAIN (ANALYZE, COSTS OFF) " + QUERY).fetchall())
            m = re.search(r"Model Time: ([0-9.]+) ms", plan)
            model_ms[mode] = float(m.group(1)) if m else None
        floor = statistics.median(times["floor"])
        print(f"{a.rows} rows, {a.reps} reps, medians (1 thread)")
        for mode in modes:
            med = statistics.median(times[mode])
            extra = "" if mode == "floor" else f"  model time {model_ms[mode]} ms  sum {sums[mode]}"
            print(f"  {mode:7s} {med * 1000:8.1f} ms  {med / floor:5.2f}x floor{extra}")
        conn.execute("SET pg_predict.enable_batching = off")
        per_row = f"SELECT sum(predict('pipe', c)) FROM customers c WHERE id <= {a.per_row_rows}"
        for mode, strategy in modes.items():
            if strategy is None:
                continue
            conn.execute(f"SET pg_predict.strategy = '{strategy}'")
            conn.execute(per_row)  # warm
            runs = []
            for _ in range(3):
                t0 = time.perf_counter()
                sums[mode + " per row"] = conn.execute(per_row).fetchone()[0]
                runs.append(time.perf_counter() - t0)
            print(f"  {mode:7s} per row: {statistics.median(runs) / a.per_row_rows * 1e6:6.2f} us a call "
                  f"({a.per_row_rows} rows, sum {sums[mode + ' per row']})")
        if sums["native"] != sums["gemm"] or sums["native per row"] != sums["gemm per row"]:
            print("MISMATCH: the sums of predict differ")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
