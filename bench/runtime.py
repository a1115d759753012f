"""Cancel latency per phase and backend memory growth per cycles (issue 10, defects 5 and 6).

    /usr/bin/python3 bench/runtime.py                 # everything, writes bench/results/runtime.md
    /usr/bin/python3 bench/runtime.py --only cancel   # or: memory
    nice -n 10 /usr/bin/python3 bench/runtime.py --small-cycles 1000 --big-cycles 50

Cancel latency: a statement is started on a fresh connection and interrupted 0.5 or 1 s in
(per phase: statement_timeout, pg_cancel_backend from a second connection, or
pg_terminate_backend); the latency is the time from the interrupt (the timeout's deadline, or
the moment the cancel function returned) to the error at the client. Phases: create_model of a
100k-tree XGBoost model (the interrupt lands while the artifact is converted and imported), and
scoring --rows rows with pg_predict.batch_size = 262144 (a 2500-tree model; an RBF SVC with
2000 support vectors, 1 and 2 threads). A FeatureUnion nested 300 deep (a row of the run in
results/runtime.md) is refused by the JSON depth limit since, so its row is gone. Each cell is
the median of --reps runs (max in brackets).

Memory: one connection runs --small-cycles create / replace / drop cycles of a small model
(scoring 2000 rows after each create), then --big-cycles create / score / drop cycles of a
2000-tree model, then 10 scans of 1M rows (10^7 predictions); the backend's private memory
(RssAnon) and VmRSS before and after each series, after a warm-up; the growth of private
memory in all and per cycle.
"""

import argparse
import os
import statistics
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "regress"))
sys.path.insert(0, os.path.join(HERE, "..", "regress", "runtime"))
from pgcluster import Cluster  # noqa: E402
from synthetic_models import create_feature_table, rbf_svc, xgboost_model  # noqa: E402

FEATURES = 8
MB = 1 << 20


def memory(pid):
    """{"RssAnon": bytes, "VmRSS": bytes} of a process: private memory, and all resident
    memory including the shared buffers it has touched."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon"):
                out[key] = int(value.split()[0]) * 1024
    return out


def setup(pg, rows):
    with pg.connect() as conn:
        conn.execute("CREATE EXTENSION pg_predict")
        create_feature_table(conn, rows, FEATURES)
        conn.execute("CREATE TABLE docs (name text PRIMARY KEY, doc jsonb)")


def add_doc(pg, name, doc):
    with pg.connect() as conn:
        conn.execute("INSERT INTO docs VALUES (%s, %s::jsonb) ON CONFLICT DO NOTHING",
                      (name, doc))


def timed_interrupt(pg, sql, how, after, setup_sql=()):
    """Seconds from the interrupt to the error (None if the statement finished first)."""
    import psycopg
    conn = pg.connect()
    try:
        for s in setup_sql:
            conn.execute(s)
        pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        fired = {}
        timer = None
        if how == "timeout":
            conn.execute(f"SET statement_timeout = '{int(after * 1000)}ms'")
        else:
            fn = "pg_cancel_backend" if how == "cancel" else "pg_terminate_backend"

            def interrupt():
                with pg.connect() as other:
                    other.execute(f"SELECT {fn}(%s)", (pid,))
                fired["at"] = time.monotonic()
            timer = threading.Timer(after, interrupt)
        start = time.monotonic()
        if timer:
            timer.start()
        try:
            conn.execute(sql)
            ended = None
        except (psycopg.errors.QueryCanceled, psycopg.OperationalError):
            ended = time.monotonic()
        if timer:
            timer.join()
        if ended is None:
            return None
        at = fired.get("at", start + after)
        return max(0.0, ended - at)
    finally:
        try:
            conn.close()
        except Exception:
            pass


def bench_cancel(pg, reps, out):
    add_doc(pg, "trees100k", xgboost_model(100000, 2, FEATURES))
    add_doc(pg, "trees2500", xgboost_model(2500, 6, FEATURES))
    add_doc(pg, "svc", rbf_svc(2000, FEATURES))
    with pg.connect() as conn:
        conn.execute("SELECT create_model('m2500', doc) FROM docs WHERE name = 'trees2500'")
        conn.execute("SELECT create_model('svc', doc, 'sklearn') FROM docs WHERE name = 'svc'")
    big = ("SET pg_predict.batch_size = 262144",)
    phases = [
        ("import+compile: create_model, 100k trees", "SELECT create_model('x', doc) FROM docs WHERE name = 'trees100k'", (), 1.0),
        ("score: 2500 trees depth 6 (native), batch_size 262144", "SELECT sum(predict('m2500', t)) FROM t", big, 1.0),
        ("score: RBF SVC, batch_size 262144", "SELECT sum(predict('svc', t)) FROM t", big, 1.0),
        ("score: RBF SVC, batch_size 262144, 2 threads", "SELECT sum(predict('svc', t)) FROM t", big + ("SET pg_predict.threads = 2",), 1.0),
    ]
    out.append("## Cancel latency (seconds from the interrupt to the error; median of "
               f"{reps}, max in brackets)\n")
    out.append("| phase | statement_timeout | pg_cancel_backend | pg_terminate_backend |")
    out.append("|---|---|---|---|")
    for label, sql, setup_sql, after in phases:
        cells = []
        for how in ("timeout", "cancel", "terminate"):
            got = [timed_interrupt(pg, sql, how, after, setup_sql) for _ in range(reps)]
            done = [g for g in got if g is not None]
            if not done:
                cells.append("finished first")
            else:
                cells.append(f"{statistics.median(done):.3f} ({max(done):.3f})"
                             + ("" if len(done) == len(got) else f", {len(got) - len(done)} finished first"))
            print(f"  {label} / {how}: {got}", flush=True)
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    out.append("")


def bench_memory(pg, small_cycles, big_cycles, out):
    add_doc(pg, "small_a", xgboost_model(10, 3, FEATURES, seed=1))
    add_doc(pg, "small_b", xgboost_model(12, 3, FEATURES, seed=2))
    add_doc(pg, "big", xgboost_model(2000, 6, FEATURES, seed=3))
    out.append("## Backend memory (one connection, after warm-up)\n")
    out.append("Private memory is RssAnon; VmRSS adds the shared buffers the backend has touched "
               "(they grow as the catalog is written, up to shared_buffers, shared by all backends).\n")
    out.append("| series | cycles | private before → after (MB) | private growth (MB) | per cycle (kB) | VmRSS before → after (MB) |")
    out.append("|---|---|---|---|---|---|")

    def small(conn):
        conn.execute("SELECT create_model('s', doc) FROM docs WHERE name = 'small_a'")
        conn.execute("SELECT sum(predict('s', t)) FROM t WHERE id <= 2000")
        conn.execute("SELECT create_model('s', doc, options => '{\"replace\": true}') FROM docs WHERE name = 'small_b'")
        conn.execute("SELECT sum(predict('s', t)) FROM t WHERE id <= 2000")
        conn.execute("SELECT drop_model('s')")

    def big(conn):
        conn.execute("SELECT create_model('b', doc) FROM docs WHERE name = 'big'")
        conn.execute("SELECT sum(predict('b', t)) FROM t WHERE id <= 2000")
        conn.execute("SELECT drop_model('b')")

    def scan(conn):
        conn.execute("SELECT count(predict('p', t)) FROM t").fetchone()

    with pg.connect() as conn:
        conn.execute("SELECT create_model('p', doc) FROM docs WHERE name = 'small_a'")
    n_rows = 0
    with pg.connect() as conn:
        n_rows = conn.execute("SELECT count(*) FROM t").fetchone()[0]
    series = [("create / replace / drop, small model", small, 50, small_cycles),
              ("create / score / drop, 2000 trees depth 6", big, 5, big_cycles),
              (f"scans of {n_rows} rows ({10 * n_rows:.0e} predictions in all)", scan, 2, 10)]
    for label, fn, warmup, cycles in series:
        with pg.connect() as conn:
            pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
            for _ in range(warmup):
                fn(conn)
            before = memory(pid)
            t0 = time.monotonic()
            for _ in range(cycles):
                fn(conn)
            after = memory(pid)
        grown = (after["RssAnon"] - before["RssAnon"]) / MB
        out.append(f"| {label} | {cycles} | {before['RssAnon'] / MB:.1f} → {after['RssAnon'] / MB:.1f} | "
                   f"{grown:+.2f} | {grown * 1024 / cycles:+.1f} | "
                   f"{before['VmRSS'] / MB:.1f} → {after['VmRSS'] / MB:.1f} |")
        print(f"  {label}: private {before['RssAnon'] / MB:.1f} -> {after['RssAnon'] / MB:.1f} MB, "
              f"VmRSS {before['VmRSS'] / MB:.1f} -> {after['VmRSS'] / MB:.1f} MB over {cycles} cycles "
              f"({time.monotonic() - t0:.0f} s)", flush=True)
    out.append("")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=["cancel", "memory"])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rows", type=int, default=1000000)
    ap.add_argument("--small-cycles", type=int, default=1000)
    ap.add_argument("--big-cycles", type=int, default=50)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "runtime.md"))
    args = ap.parse_args()
    out = ["# pg_predict runtime bench: cancel latency and backend memory\n",
           f"`{' '.join(['bench/runtime.py'] + sys.argv[1:])}`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
           f"load average before {os.getloadavg()[0]:.2f}\n"]
    with Cluster(settings={"max_connections": 20}) as pg:
        setup(pg, args.rows)
        if args.only in (None, "cancel"):
            bench_cancel(pg, args.reps, out)
        if args.only in (None, "memory"):
            bench_memory(pg, args.small_cycles, args.big_cycles, out)
    out.append(f"load average after {os.getloadavg()[0]:.2f}\n")
    text = "\n".join(out)
    print(text)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
