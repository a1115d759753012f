#!/usr/bin/python3
"""One row per request (issue 49): what predict() adds to a one-row query, with pgbench, side by
side with the same queries without it (the floors), and what a new connection pays.

    /usr/bin/python3 bench/oltp.py setup [--rows 100000] [--dir /tmp/pgp-oltp]
    /usr/bin/python3 bench/oltp.py run [--clients 1,16] [--seconds 10] [--dir ...]
    /usr/bin/python3 bench/oltp.py first [--dir ...]
    /usr/bin/python3 bench/oltp.py memory [--connections 200] [--models 20] [--off-connections 20]
    /usr/bin/python3 bench/oltp.py http [--requests 5000]
    /usr/bin/python3 bench/oltp.py stop [--dir ...]

setup starts a kept cluster that preloads the library (regress/pgcluster.py), fills `customers`
(--rows rows: ten real columns f0-f9, a city and a plan, a primary key) and registers three
models the issue names: `xgb100` (XGBoost, 100 trees of depth 6 on f0-f9, trained here by the
xgboost library), `lgbm` (the LightGBM fixture regress/fixtures/lightgbm/binary.model.txt, 30
trees on f0-f7) and `pipe` (scikit-learn: a ColumnTransformer of StandardScaler on f0-f9 and
OneHotEncoder on city and plan, then LogisticRegression).

run drives pgbench (-n, -T seconds, -c clients, -j min(clients, 2)) over one-row scripts, each
once simple and once prepared (-M): an array of constants alone (the floor) and through each
model, a row read by primary key alone (the floor) and through each model. It prints tps and the
average latency, and per model what predict adds to its floor (µs per statement at 1 client) and
the share of the floor's throughput it keeps (16 clients). Ratios within one run are what count
on a shared machine; the machine has 2 cores, so 16 clients measure contention, not scaling.

memory opens --connections backends (200) that each score one row with each of --models (20)
copies of xgb100, and reports the private memory (Private_Dirty) the models add to them, their
Pss and the shared programs' area; then --off-connections (20) backends with sharing on, and the
same with pg_predict.shared_programs_size = 0 (a restart), where each backend holds its own copy.

http compares predict in the query with what a user would otherwise run: a Python HTTP scoring
service (http.server + XGBoost's inplace_predict, one request per row, the row read from the
database first), wall time per request over --requests rows.

first measures, for each model, a new connection's first statement that scores one row by
primary key while another connection holds the model loaded, against the same connection's
second statement and a new connection's first plain row read (client-side wall time, best of
--reps), and the private memory (Private_Dirty of /proc/PID/smaps_rollup) the backend adds by
scoring with the model.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
sys.path.insert(0, os.path.join(ROOT, "regress"))
sys.path.insert(0, os.path.join(ROOT, "python"))

NUMS = [f"f{i}" for i in range(10)]
MODELS = ["xgb100", "lgbm", "pipe"]
FEATURES = {"xgb100": 10, "lgbm": 8}  # an array argument's length
CONSTANTS = "0.5, -1.25, 2.0, 0.75, -0.5, 1.5, 0.25, -2.0, 1.0, 0.125"


def setup(args):
    import numpy as np
    import pandas as pd
    import xgboost as xgb
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    import pg_predict
    from pgcluster import Cluster
    os.makedirs(args.dir, exist_ok=True)
    pg = Cluster(keep=True, settings={"max_connections": 250, "shared_buffers": "256MB", "jit": "off"})
    pg.start()
    with pg.connect() as c:
        c.execute("CREATE EXTENSION pg_predict")
        c.execute("SELECT setseed(0.49)")
        gen = ", ".join(f"((random() * 2 - 1) * 3)::real AS {n}" for n in NUMS)
        c.execute(f"CREATE TABLE customers AS SELECT g AS id, {gen}, 'city' || (random() * 29)::int AS city, "
                  f"(ARRAY['free','basic','pro'])[1 + (random() * 2)::int] AS plan "
                  f"FROM generate_series(1, {args.rows}) g")
        c.execute("ALTER TABLE customers ADD PRIMARY KEY (id)")
        c.execute("VACUUM (FREEZE, ANALYZE) customers")
        rows = c.execute("SELECT " + ", ".join(NUMS) + ", city, plan FROM customers WHERE id <= 20000 "
                         "ORDER BY id").fetchall()
        df = pd.DataFrame(rows, columns=NUMS + ["city", "plan"])
        y = ((df["f0"] + df["f1"] * df["f2"] - df["f3"] + (df["plan"] == "pro")) > 0).astype(int)
        booster = xgb.train({"objective": "binary:logistic", "max_depth": 6, "eta": 0.1, "seed": 0, "nthread": 2},
                            xgb.DMatrix(df[NUMS].to_numpy(np.float32), label=y, feature_names=NUMS), 100)
        c.execute("SELECT create_model('xgb100', %s::text)", (booster.save_raw("json").decode(),))
        with open(os.path.join(ROOT, "regress", "fixtures", "lightgbm", "binary.model.txt")) as f:
            c.execute("SELECT create_model('lgbm', %s::text, 'lightgbm')", (f.read(),))
        pipe = make_pipeline(ColumnTransformer([("num", StandardScaler(), NUMS),
                                                ("cat", OneHotEncoder(handle_unknown="ignore"), ["city", "plan"])]),
                             LogisticRegression(max_iter=500)).fit(df, y)
        pg_predict.deploy(c, "pipe", pipe)
    with open(os.path.join(args.dir, "cluster.json"), "w") as f:
        json.dump({"conninfo": pg.conninfo(), "dir": pg.dir, "rows": args.rows}, f)
    print(f"cluster in {pg.dir}, {args.rows} rows, models {', '.join(MODELS)}")


def info(args):
    return json.load(open(os.path.join(args.dir, "cluster.json")))


def scripts(rows):
    """name -> (SQL, the floor it is measured against)."""
    pick = f"\\set id random(1, {rows})\n"
    out = {"array floor": (f"SELECT ARRAY[{CONSTANTS}]::real[];\n", None),
           "row floor": (pick + "SELECT * FROM customers c WHERE id = :id;\n", None)}
    for m in MODELS:
        if m != "pipe":  # a pipeline with text columns reads rows, not arrays
            constants = ", ".join(CONSTANTS.split(", ")[:FEATURES[m]])
            out[f"array {m}"] = (f"SELECT predict('{m}', ARRAY[{constants}]::real[]);\n", "array floor")
        out[f"row {m}"] = (pick + f"SELECT *, predict('{m}', c) FROM customers c WHERE id = :id;\n", "row floor")
    return out


def pgbench(args, conninfo, path, clients, mode):
    params = dict(kv.split("=", 1) for kv in conninfo.split())
    cmd = ["/usr/lib/postgresql/15/bin/pgbench", "-n", "-T", str(args.seconds), "-c", str(clients),
           "-j", str(min(clients, 2)), "-M", mode, "-f", path, "-h", params["host"], "-p", params["port"],
           "-U", params.get("user", "postgres"), params.get("dbname", "postgres")]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"pgbench failed: {out.stderr}")
    tps = float(re.search(r"tps = ([\d.]+) \(without initial connection time\)", out.stdout).group(1))
    latency = float(re.search(r"latency average = ([\d.]+) ms", out.stdout).group(1))
    return tps, latency


def run(args):
    i = info(args)
    todo = scripts(i["rows"])
    results = {}
    for name, (sql, _) in todo.items():
        path = os.path.join(args.dir, re.sub(r"\W+", "_", name) + ".sql")
        with open(path, "w") as f:
            f.write(sql)
        for clients in args.clients:
            for mode in ("simple", "prepared"):
                results[(name, clients, mode)] = pgbench(args, i["conninfo"], path, clients, mode)
                tps, latency = results[(name, clients, mode)]
                print(f"{name:14} {clients:3} clients {mode:8}  {tps:10.0f} tps  {latency * 1000:8.1f} µs", flush=True)
    print("\nwhat predict adds (µs per statement at 1 client: 1e6/tps minus the floor's) and the floor's "
          "throughput it keeps at 16 clients:")
    for name, (_, floor) in todo.items():
        if floor is None:
            continue
        for mode in ("simple", "prepared"):
            parts = [f"{name:14} {mode:8}"]
            if (name, 1, mode) in results:
                added = 1e6 / results[(name, 1, mode)][0] - 1e6 / results[(floor, 1, mode)][0]
                parts.append(f"adds {added:6.1f} µs")
            if (name, 16, mode) in results:
                parts.append(f"keeps {results[(name, 16, mode)][0] / results[(floor, 16, mode)][0]:.0%} at 16 clients")
            print("  ".join(parts))


def private_dirty_kb(pid):
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Private_Dirty:"):
                return int(line.split()[1])
    return 0


def first(args):
    import psycopg
    i = info(args)

    def timed(conn, sql):
        t0 = time.perf_counter()
        conn.execute(sql).fetchall()
        return (time.perf_counter() - t0) * 1e3

    holder = psycopg.connect(i["conninfo"], autocommit=True)
    for m in MODELS:  # another backend holds every model loaded
        holder.execute(f"SELECT predict('{m}', c) FROM customers c WHERE id = 1").fetchall()
    plain = "SELECT * FROM customers c WHERE id = 2"
    best = {}
    memory = {}
    for _ in range(args.reps):
        with psycopg.connect(i["conninfo"], autocommit=True) as conn:
            best["plain first"] = min(best.get("plain first", 1e9), timed(conn, plain))
        for m in MODELS:
            sql = f"SELECT *, predict('{m}', c) FROM customers c WHERE id = 2"
            with psycopg.connect(i["conninfo"], autocommit=True) as conn:
                pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
                conn.execute(plain).fetchall()  # the connection's catalog caches, as an application's
                before = private_dirty_kb(pid)
                first_ms = timed(conn, sql)
                after = private_dirty_kb(pid)
                second_ms = timed(conn, sql)
                best[f"{m} first"] = min(best.get(f"{m} first", 1e9), first_ms)
                best[f"{m} second"] = min(best.get(f"{m} second", 1e9), second_ms)
                memory[m] = min(memory.get(m, 1 << 40), after - before)
                idle = private_dirty_kb(pid)
    holder.close()
    print(f"best of {args.reps} new connections (ms, client wall time):")
    for k, v in best.items():
        print(f"  {k:16} {v:8.3f}")
    print("Private_Dirty the first scoring statement adds (KB):")
    for m, kb in memory.items():
        print(f"  {m:16} {kb:8d}")
    print(f"a backend's Private_Dirty after three statements: {idle} KB")


def smaps(pid):
    """(Private_Dirty, Pss) of a process in KB, from /proc/PID/smaps_rollup."""
    out = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("Private_Dirty", "Pss"):
                out[key] = int(rest.split()[0])
    return out.get("Private_Dirty", 0), out.get("Pss", 0)


def restart_with(i, sharing_mb):
    """The cluster restarted with pg_predict.shared_programs_size = sharing_mb."""
    import psycopg
    with psycopg.connect(i["conninfo"], autocommit=True) as c:
        c.execute(f"ALTER SYSTEM SET pg_predict.shared_programs_size = {sharing_mb}")
    subprocess.run(["su", "postgres", "-c", f"/usr/lib/postgresql/15/bin/pg_ctl -D {i['dir']}/data -w -m fast "
                    f"restart -l {i['dir']}/restart.log"], check=True, capture_output=True)


def memory(args):
    """--connections backends each score one row with each of --models copies of xgb100: the
    private memory (Private_Dirty) and proportional share (Pss) of all of them, and the shared
    programs' area, with sharing on (the default 64 MB) and off (--off-connections backends:
    every backend then holds its own copy of every program)."""
    import psycopg
    i = info(args)
    with psycopg.connect(i["conninfo"], autocommit=True) as c:
        c.execute("SELECT count(create_model('m' || g, coalesce(source::text, source_text), 'xgboost')) FROM generate_series(1, %s) g, "
                  "model_catalog WHERE name = 'xgb100' AND deployed AND NOT EXISTS "
                  "(SELECT 1 FROM model_catalog WHERE name = 'm' || g)", (args.models,))

    def measure(connections):
        conns = [psycopg.connect(i["conninfo"], autocommit=True) for _ in range(connections)]
        pids = [c.execute("SELECT pg_backend_pid()").fetchone()[0] for c in conns]
        for c in conns:
            c.execute("SELECT * FROM customers WHERE id = 1").fetchall()
        idle = [smaps(p) for p in pids]
        t0 = time.perf_counter()
        for c in conns:
            for m in range(1, args.models + 1):
                c.execute(f"SELECT predict('m{m}', c) FROM customers c WHERE id = 2").fetchall()
        took = time.perf_counter() - t0
        busy = [smaps(p) for p in pids]
        with psycopg.connect(i["conninfo"], autocommit=True) as c:
            area = c.execute("SELECT used_bytes, images FROM shared_programs_info()").fetchone()
        for c in conns:
            c.close()
        added = sum(b[0] - a[0] for a, b in zip(idle, busy))
        return {"connections": connections, "idle_private_kb": sum(a[0] for a in idle) / connections,
                "added_private_kb": added, "per_model_kb": added / connections / args.models,
                "pss_mb": sum(b[1] for b in busy) / 1024, "area_kb": area[0] / 1024, "images": area[1],
                "ms_per_statement": took * 1e3 / connections / args.models}

    def show(label, r):
        print(f"{label:8} {r['connections']:4} backends x {args.models} models: the models add "
              f"{r['added_private_kb'] / 1024:8.1f} MB private ({r['per_model_kb']:7.1f} KB per backend and model; "
              f"an idle backend holds {r['idle_private_kb']:.0f} KB), Pss of all {r['pss_mb']:8.1f} MB, "
              f"shared area {r['area_kb']:.0f} KB in {r['images']} images, {r['ms_per_statement']:.2f} ms per statement",
              flush=True)

    show("shared", measure(args.connections))
    show("shared", measure(args.off_connections))
    restart_with(i, 0)
    try:
        show("private", measure(args.off_connections))
    finally:
        restart_with(i, 64)


HTTP_SERVICE = r"""
import json, sys, xgboost as xgb, numpy as np
from http.server import BaseHTTPRequestHandler, HTTPServer
booster = xgb.Booster(model_file=sys.argv[1])
booster.set_param({"nthread": 1})
class Score(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else each response waits for the client's delayed ACK (40 ms)
    def do_POST(self):
        row = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        p = booster.inplace_predict(np.asarray([row], dtype=np.float32))
        body = json.dumps({"p": float(p[0])}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
HTTPServer(("127.0.0.1", int(sys.argv[2])), Score).serve_forever()
"""


def http(args):
    """What a user runs instead: the standard library's http.server with XGBoost's inplace_predict
    of xgb100, one request per row (a kept-alive connection, the row's values sent as JSON), from a
    client that first reads the row from the database, against predict in the query; the same
    number of requests, wall time per request."""
    import psycopg
    import http.client
    i = info(args)
    with psycopg.connect(i["conninfo"], autocommit=True) as c:
        doc = c.execute("SELECT coalesce(source::text, source_text) FROM model_catalog WHERE name = 'xgb100' AND deployed").fetchone()[0]
    path = os.path.join(args.dir, "xgb100.json")
    with open(path, "w") as f:
        f.write(doc)
    service = subprocess.Popen(["/usr/bin/python3", "-c", HTTP_SERVICE, path, str(args.port)])
    try:
        for _ in range(100):
            try:
                http.client.HTTPConnection("127.0.0.1", args.port, timeout=1).connect()
                break
            except OSError:
                time.sleep(0.1)
        web = http.client.HTTPConnection("127.0.0.1", args.port)
        db = psycopg.connect(i["conninfo"], autocommit=True)
        read = "SELECT " + ", ".join(NUMS) + " FROM customers WHERE id = %s"
        scored = "SELECT predict('xgb100', c) FROM customers c WHERE id = %s"
        ids = [1 + (k * 7919) % i["rows"] for k in range(args.requests)]

        def service_path():
            for k in ids:
                row = db.execute(read, (k,), prepare=True).fetchone()
                web.request("POST", "/", body=json.dumps(list(row)), headers={"Content-Type": "application/json"})
                json.loads(web.getresponse().read())

        def in_database():
            for k in ids:
                db.execute(scored, (k,), prepare=True).fetchone()

        def read_only():
            for k in ids:
                db.execute(read, (k,), prepare=True).fetchone()

        for name, f in (("row read alone", read_only), ("row read + HTTP service", service_path),
                        ("predict in the query", in_database)):
            f()  # warm
            t0 = time.perf_counter()
            f()
            us = (time.perf_counter() - t0) * 1e6 / len(ids)
            print(f"  {name:26} {us:8.1f} µs per request", flush=True)
        db.close()
    finally:
        service.terminate()
        service.wait()


def stop(args):
    i = info(args)
    subprocess.run(["su", "postgres", "-c", f"/usr/lib/postgresql/15/bin/pg_ctl -D {i['dir']}/data -m fast stop"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["setup", "run", "first", "memory", "http", "stop"])
    ap.add_argument("--rows", type=int, default=100000)
    ap.add_argument("--dir", default="/tmp/pgp-oltp")
    ap.add_argument("--clients", type=lambda s: [int(c) for c in s.split(",")], default=[1, 16])
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--connections", type=int, default=200, help="memory: backends with sharing on")
    ap.add_argument("--off-connections", type=int, default=20, help="memory: backends, sharing on and off")
    ap.add_argument("--models", type=int, default=20, help="memory: models each backend scores")
    ap.add_argument("--requests", type=int, default=5000, help="http: requests per path")
    ap.add_argument("--port", type=int, default=18765, help="http: the scoring service's port")
    args = ap.parse_args()
    {"setup": setup, "run": run, "first": first, "memory": memory, "http": http, "stop": stop}[args.command](args)


if __name__ == "__main__":
    main()
