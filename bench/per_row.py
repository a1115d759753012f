"""The per-row path (issue 12, target 5): µs per predict() call when the planner cannot batch.

    flock /work/bench.lock /usr/bin/python3 bench/per_row.py            # 200k rows
    /usr/bin/python3 bench/per_row.py --rows 50000 --lock /work/bench.lock

Starts a throwaway cluster (regress/pgcluster.py), fills a table of --rows rows with 28 real
columns (HIGGS-like: momenta, angles, pseudo-rapidities and 7 columns derived from them, a 0/1
label from a logistic model of them), trains with xgboost on its first 50k rows a stump (1 tree,
depth 1) and an m500-like model (500 trees, depth 8, binary:logistic), and times

    SELECT sum(predict('<model>', t)) FROM t      with pg_predict.enable_batching off and on
    SELECT sum(f1 + ... + f28) FROM t              the scan floor

--null-f1 makes f1 NULL in every row (a row with a NULL before the model's other columns).
--arguments row,array also times predict('<model>', ARRAY[f1, ..., f28]) (a real[]).

--libraries OLD.so,NEW.so compares builds of the extension on the same cluster and data: each
library in turn (--rounds times, alternating) is copied over the installed pg_predict.so and
the server restarted (it preloads the library), then the rows are timed; the installed file is
put back at the end. Ratios of one run are what count on a shared machine.

Each figure is the backend's CPU time (utime + stime from /proc, so another process on the
shared machine does not count) per row, the best of --reps runs after one warm-up; "call" is
the per-row figure minus the scan floor: what one predict() call adds to the scan. With --lock,
only the timed part holds the lock (flock), not the table fill or the training.
"""

import argparse
import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "regress"))
from pgcluster import Cluster  # noqa: E402

FEATURES = [f"f{i}" for i in range(1, 29)]
TRAIN_ROWS = 50_000
MODELS = {  # name: (xgboost params, rounds)
    "stump": ({"objective": "binary:logistic", "max_depth": 1, "eta": 0.3}, 1),
    "m500": ({"objective": "binary:logistic", "max_depth": 8, "eta": 0.1}, 500),
}


def fill_sql(rows):
    low = []
    for i in range(1, 22):
        e = ["-ln(1.0 - random())", "(random() + random() + random() - 1.5) * 2.0",
             "random() * 6.2832 - 3.1416"][(i - 1) % 3]
        low.append(f"({e})::real AS f{i}")
    high = ["sqrt(f1 * f4)", "f2 - f5", "f7 * cos(f3 - f6)", "f10 + f13 + f16", "abs(f8 - f11)",
            "ln(1.0 + f19 * f1)", "f1 * f2 + f4 * f5"]
    z = "1.2 * f22 - 0.8 * f1 + sin(f3) * f2 - 0.3 * f25 - 0.4 * f28 + 0.6 * f24 * f14 - 0.6"
    low_cols = ", ".join(f"f{i}" for i in range(1, 22))
    high_cols = ", ".join(f"({e})::real AS f{22 + k}" for k, e in enumerate(high))
    return f"""
INSERT INTO t SELECT id, {", ".join(FEATURES)}, (random() < 1.0 / (1.0 + exp(-({z}))))::int
  FROM (SELECT id, {low_cols}, {high_cols}
          FROM (SELECT g AS id, {", ".join(low)} FROM generate_series(1, {rows}) g OFFSET 0) a
        OFFSET 0) b"""


def setup(conn, rows, null_f1):
    conn.execute("CREATE EXTENSION pg_predict")
    cols = ", ".join(f"{f} real" for f in FEATURES)
    conn.execute(f"CREATE TABLE t (id int NOT NULL, {cols}, label int NOT NULL)")
    conn.execute(fill_sql(rows))
    if null_f1:  # every row has a NULL before the other features (heap_getattr's slow case)
        conn.execute("UPDATE t SET f1 = NULL")
    conn.execute("VACUUM ANALYZE t")


def train(conn, models):
    import numpy as np
    import xgboost as xgb
    data = conn.execute(f"SELECT {', '.join(FEATURES)}, label FROM t ORDER BY id LIMIT {TRAIN_ROWS}").fetchall()
    arr = np.array(data, dtype=np.float32)
    dtrain = xgb.DMatrix(arr[:, :-1], label=arr[:, -1], feature_names=FEATURES)
    for name in models:
        params, rounds = MODELS[name]
        bst = xgb.train({**params, "tree_method": "hist", "nthread": 2, "seed": 1}, dtrain, rounds)
        conn.execute("SELECT create_model(%s, %s::jsonb)", (name, bst.save_raw("json").decode()))


def backend_cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def best_cpu(conn, pid, sql, reps):
    conn.execute(sql)  # warm-up: binds the model, fills the caches
    best = None
    for _ in range(reps):
        c0, w0 = backend_cpu(pid), time.perf_counter()
        conn.execute(sql)
        cpu, wall = backend_cpu(pid) - c0, time.perf_counter() - w0
        best = (cpu, wall) if best is None or cpu < best[0] else best
    return best


@contextlib.contextmanager
def locked(path):
    if not path:
        yield
        return
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


ARGUMENTS = {"row": "t", "array": f"ARRAY[{', '.join(FEATURES)}]"}


def measure(conn, pid, models, reps, arguments=("row",)):
    """[(label, cpu s, wall s)]: the scan floor, then each model per-row and batched, for each
    form of the argument (the row t, or ARRAY[f1, ..., f28])."""
    results = []
    floor_sql = f"SELECT sum({' + '.join(FEATURES)}) FROM t"
    results.append(("scan floor",) + best_cpu(conn, pid, floor_sql, reps))
    for model in models:
        for argument in arguments:
            for batching in ("off", "on"):
                conn.execute(f"SET pg_predict.enable_batching = {batching}")
                sql = f"SELECT sum(predict('{model}', {ARGUMENTS[argument]})) FROM t"
                cpu, wall = best_cpu(conn, pid, sql, reps)
                path = "per-row" if batching == "off" else "batched"
                form = "" if argument == "row" else f" {argument}"
                results.append((f"{model}{form} {path}", cpu, wall))
    return results


def print_results(title, results, n):
    floor = results[0][1]
    print(title)
    for label, cpu, wall in results:
        call = "" if label == "scan floor" else f"  call {(cpu - floor) / n * 1e6:6.2f} us"
        print(f"  {label:22s} {cpu / n * 1e6:7.2f} us ({wall / n * 1e6:7.2f} us wall){call}", flush=True)


def install_library(path, target):
    """Copies path over target atomically (a running process keeps the file it mapped)."""
    tmp = target + ".swap"
    shutil.copyfile(path, tmp)
    os.replace(tmp, target)


def restart(pg):
    pg._run("pg_ctl", "-D", pg.datadir, "-l", pg.logfile, "-w", "-t", "60", "-m", "fast", "restart")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--null-f1", action="store_true", help="f1 NULL in every row")
    ap.add_argument("--arguments", default="row", help="row,array: the forms of predict's argument to time")
    ap.add_argument("--lock", help="flock this file around the timed part (e.g. /work/bench.lock)")
    ap.add_argument("--libraries", help="OLD.so,NEW.so: builds to compare, each installed in turn")
    ap.add_argument("--rounds", type=int, default=2, help="with --libraries: passes over them")
    args = ap.parse_args()
    models = args.models.split(",")
    arguments = args.arguments.split(",")
    n = args.rows
    title = f"{n} rows, backend CPU time (wall) per row, best of {args.reps}; call = minus the scan floor"
    with Cluster(settings={"max_parallel_workers_per_gather": 0, "jit": "off",
                           "pg_predict.threads": 1}) as pg:
        with pg.connect() as conn:
            setup(conn, args.rows, args.null_f1)
            train(conn, models)
        if not args.libraries:
            with pg.connect() as conn, locked(args.lock):
                pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
                results = measure(conn, pid, models, args.reps, arguments)
            print_results(title, results, n)
            return
        pkglibdir = subprocess.run([os.environ.get("PG_CONFIG", "pg_config"), "--pkglibdir"], check=True,
                                   capture_output=True, text=True).stdout.strip()
        installed = os.path.join(pkglibdir, "pg_predict.so")
        backup = installed + ".per_row_backup"
        shutil.copyfile(installed, backup)
        try:
            with locked(args.lock):
                for round_ in range(args.rounds):
                    for library in args.libraries.split(","):
                        install_library(library, installed)
                        restart(pg)
                        with pg.connect() as conn:
                            pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
                            results = measure(conn, pid, models, args.reps, arguments)
                        print_results(f"round {round_ + 1}, {library}: {title}", results, n)
        finally:
            install_library(backup, installed)
            os.remove(backup)


if __name__ == "__main__":
    main()
