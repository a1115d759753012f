#!/usr/bin/env python3
"""GPU smoke test and benchmark of pg_predict (issue 5), driven through psql only.

Runs on the GPU machine (scripts/gpu/run-on-gpu.sh calls it), where there is PostgreSQL only as
unpacked Debian packages and Python has nothing beyond the standard library (no psycopg, no
xgboost, no numpy). Its inputs are prepared here, on the development machine:

  /usr/bin/python3 bench/gpu.py --prepare .gpu-carry/bench
      writes higgs.sql (the bench's `higgs` table, bench/pgpb/data.py's generator, same seed) and
      m500.json.gz (the bench's 500-tree depth-8 XGBoost model: --model PATH, else
      bench/.cache/m500-*.json as bench/run.py trained it, else trained here on synthetic data)

On the GPU machine (server running, pg_predict installed and preloaded):

  python3 bench/gpu.py --psql BIN/psql --host SOCKDIR --port P --inputs .gpu-carry/bench \\
      --out $OUT [--rows 1000000] [--smoke-only] [--expect-cpu]

  smoke:  device = cuda equals device = cpu on every row (probability within 1e-5, same label,
          sums within 1e-5 relative), per strategy, batched and per-row; the GPU cap
          (max_gpu_backends) sends a third backend to the CPU and EXPLAIN says so.
          --expect-cpu (a server without CUDA): device = cuda must be a clear error instead.
  bench:  the 1M-row table: scan floor, CPU (1 and N threads), GPU per strategy (native = the
          CUDA kernel), median of 3 runs each, model time per batch from EXPLAIN ANALYZE, GPU
          memory per backend from nvidia-smi. Results: $OUT/gpu-bench.{md,json}.
Every check prints PASS / FAIL / SKIP lines; the exit status is 1 if a smoke check failed.
"""
import argparse
import glob
import gzip
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from pgpb.server import enumvals_sql  # noqa: E402  (no numpy/psycopg: fine on the GPU machine)

MODEL = "m500"
NF = 28
FEATURES = [f"f{i}" for i in range(1, NF + 1)]
# GEMM materializes rows × trees × internal nodes: 500 depth-8 trees take ~0.5 MB a row, so it
# gets smaller GPU batches than the default 262144 (which would need ~130 GB).
GEMM_GPU_BATCH = 8192


def strategies(pg):
    """pg_predict.strategy's values other than auto, as the server lists them."""
    return [s for s in pg.value(enumvals_sql("strategy") + ";").split(",") if s != "auto"]


def gpu_settings(strategy):
    s = [("pg_predict.device", "cuda"), ("pg_predict.strategy", strategy)]
    return s + [("pg_predict.gpu_batch_size", GEMM_GPU_BATCH)] if strategy == "gemm" else s


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ----------------------------------------------------------------------------------------------
# --prepare (development machine, /usr/bin/python3 with numpy and xgboost)

def prepare(outdir, model_path=None):
    from pgpb import data, models  # bench/run.py's table generator and model parameters

    os.makedirs(outdir, exist_ok=True)
    sql = (data.higgs_ddl() + f";\nSELECT setseed({data.SEED});\n"
           + data.higgs_sql("__ROWS__").strip() + ";\n")
    with open(os.path.join(outdir, "higgs.sql"), "w") as f:
        f.write(sql)
    candidates = [model_path] if model_path else sorted(glob.glob(os.path.join(HERE, ".cache", "m500-*.json")))
    if candidates:
        src = candidates[0]
        log(f"model: {src}")
        with open(src, "rb") as f:
            model = f.read()
    else:
        import numpy as np
        import xgboost as xgb
        log("model: no bench/.cache/m500-*.json; training 500 trees depth 8 on synthetic data")
        rng = np.random.default_rng(0)
        X = rng.normal(size=(50_000, NF)).astype(np.float32)
        y = (X[:, 0] + np.sin(X[:, 1]) * X[:, 2] - 0.5 * X[:, 3] + rng.normal(size=len(X)) > 0)
        params = dict(models.XGB_MODELS[MODEL][2], tree_method="hist", seed=0)
        bst = xgb.train(params, xgb.DMatrix(X, label=y, feature_names=FEATURES), 500)
        model = bytes(bst.save_raw("json"))
    with gzip.open(os.path.join(outdir, "m500.json.gz"), "wb") as f:
        f.write(model)
    log(f"wrote {outdir}/higgs.sql and m500.json.gz ({len(model) >> 10} KiB unpacked)")


# ----------------------------------------------------------------------------------------------
# psql

class Psql:
    def __init__(self, args):
        self.base = [args.psql, "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", args.host,
                     "-p", str(args.port), "-U", args.user, "-d", args.db]

    def run(self, sql, settings=(), check=True):
        script = "".join(f"SET {k} = {v};\n" for k, v in settings) + sql
        r = subprocess.run(self.base, input=script, capture_output=True, text=True)
        if check and r.returncode != 0:
            raise RuntimeError(f"psql failed: {r.stderr.strip()}\n--- script:\n{script[:2000]}")
        return r

    def value(self, sql, settings=()):
        return self.run(sql, settings).stdout.strip().splitlines()[-1]

    def timed(self, sql, settings, repeats):
        """Wall-clock ms of `sql` in one session: one warm-up, then `repeats` timed runs."""
        script = sql + ";\n\\timing on\n" + (sql + ";\n") * repeats
        out = self.run(script, settings).stdout
        times = [float(m) for m in re.findall(r"^Time: ([0-9.]+) ms", out, re.M)]
        if len(times) != repeats:
            raise RuntimeError(f"expected {repeats} timings, got: {out[-500:]}")
        return times

    def session(self):
        """A psql kept open (for the GPU memory and the cap checks)."""
        return subprocess.Popen(self.base, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, bufsize=1)


def ask(session, sql):
    """Sends sql to an open session and returns its output lines up to a marker."""
    session.stdin.write(sql + ";\n\\echo __done__\n")
    session.stdin.flush()
    lines = []
    for line in session.stdout:
        if line.strip() == "__done__":
            return lines
        lines.append(line.rstrip("\n"))
    raise RuntimeError("psql session ended early: " + "\n".join(lines))


def predict_sql(alias="h"):
    return f"predict('{MODEL}', {alias})"


# ----------------------------------------------------------------------------------------------
# setup

def setup(pg, args, rows):
    pg.run("CREATE EXTENSION IF NOT EXISTS pg_predict; CREATE EXTENSION IF NOT EXISTS pg_prewarm;")
    have = pg.value("SELECT count(*) FROM pg_class WHERE relname = 'higgs'")
    if have == "1" and pg.value("SELECT count(*) FROM higgs") == str(rows):
        log(f"higgs: {rows} rows already there")
    else:
        pg.run("DROP TABLE IF EXISTS higgs;")
        with open(os.path.join(args.inputs, "higgs.sql")) as f:
            sql = f.read().replace("__ROWS__", str(rows))
        t0 = time.perf_counter()
        pg.run(sql)
        pg.run("VACUUM (FREEZE, ANALYZE) higgs;")
        log(f"higgs: {rows} rows generated in {time.perf_counter() - t0:.1f}s, "
            f"{pg.value('SELECT pg_size_pretty(pg_table_size($$higgs$$))')}")
    pg.run("SELECT pg_prewarm('higgs');")
    if pg.value(f"SELECT count(*) FROM models WHERE name = '{MODEL}'") != "1":
        with gzip.open(os.path.join(args.inputs, "m500.json.gz"), "rt") as f:
            model = f.read()
        pg.run(f"SELECT create_model('{MODEL}', $json${model}$json$::jsonb);")
        log(f"{MODEL}: created")


def nvidia_smi(query):
    if not shutil.which("nvidia-smi"):
        return None
    r = subprocess.run(["nvidia-smi", f"--query-{query}", "--format=csv,noheader,nounits"],
                       capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


def gpu_used_mib():
    out = nvidia_smi("gpu=memory.used")
    return int(out.splitlines()[0]) if out else None


# ----------------------------------------------------------------------------------------------
# smoke

class Checks:
    def __init__(self):
        self.failed = 0
        self.lines = []

    def report(self, status, what, detail=""):
        line = f"{status} {what}" + (f": {detail}" if detail else "")
        print(line, flush=True)
        self.lines.append(line)
        if status == "FAIL":
            self.failed += 1


def compare_sql(where=""):
    return f"""
SELECT count(*), count(*) FILTER (WHERE r.p IS DISTINCT FROM g.p AND NOT abs(r.p - g.p) <= 1e-5),
       count(*) FILTER (WHERE r.label IS DISTINCT FROM g.label), coalesce(max(abs(r.p - g.p)), 0),
       (SELECT sum(p) FROM smoke_ref {where}), sum(g.p)
  FROM smoke_ref r JOIN (SELECT id, (predict_proba('{MODEL}', h))[2] AS p, {predict_sql()} AS label
                           FROM higgs h {where}) g USING (id)"""


def smoke(pg, args, checks):
    log("smoke: device = cpu reference")
    pg.run(f"DROP TABLE IF EXISTS smoke_ref; CREATE TABLE smoke_ref AS SELECT id, "
           f"(predict_proba('{MODEL}', h))[2] AS p, {predict_sql()} AS label FROM higgs h;",
           [("pg_predict.device", "cpu")])
    if args.expect_cpu:
        r = pg.run(f"SELECT sum({predict_sql()}) FROM higgs h;", [("pg_predict.device", "cuda")],
                   check=False)
        ok = r.returncode != 0 and "CUDA cannot be used" in r.stderr
        checks.report("PASS" if ok else "FAIL", "device = cuda without CUDA is an error",
                      r.stderr.strip().splitlines()[0] if r.stderr.strip() else "no error")
        for device in ("auto", "cpu"):
            n, bad, flips, maxd, s_ref, s = pg.value(compare_sql(), [("pg_predict.device", device)]).split("|")
            checks.report("PASS" if bad == "0" and flips == "0" else "FAIL",
                          f"device = {device} equals the reference", f"{n} rows, sums {s_ref} / {s}")
        return
    for strategy in strategies(pg):
        settings = gpu_settings(strategy)
        r = pg.run(compare_sql(), settings, check=False)
        if r.returncode != 0:
            # A strategy too big for this model or this GPU is a limit, not a wrong answer.
            limit = re.search(r"GEMM grows|MiB of constants|out of memory", r.stderr)
            checks.report("SKIP" if limit else "FAIL", f"cuda {strategy} batched", r.stderr.strip()[:300])
            continue
        n, bad, flips, maxd, s_ref, s = r.stdout.strip().splitlines()[-1].split("|")
        rel = abs(float(s) - float(s_ref)) / max(1.0, abs(float(s_ref)))
        ok = bad == "0" and flips == "0" and rel <= 1e-5
        checks.report("PASS" if ok else "FAIL", f"cuda {strategy} batched = cpu",
                      f"{n} rows, {bad} probabilities off by > 1e-5 (max {maxd}), {flips} labels "
                      f"differ, sums {s_ref} / {s}")
        plan = pg.run(f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT sum({predict_sql()}) FROM higgs h;",
                      settings).stdout
        dev = re.search(r"Device: (.*)", plan)
        checks.report("PASS" if dev and dev.group(1) == "cuda:0" else "FAIL",
                      f"EXPLAIN shows the GPU ({strategy})", dev.group(1) if dev else plan[-300:])
    # The per-row path on the GPU, on a slice (one model call per row).
    where = "WHERE id <= 2000"
    n, bad, flips, maxd, s_ref, s = pg.value(compare_sql(where), [
        ("pg_predict.device", "cuda"), ("pg_predict.enable_batching", "off")]).split("|")
    checks.report("PASS" if bad == "0" and flips == "0" else "FAIL", "cuda per-row = cpu",
                  f"{n} rows, max diff {maxd}")
    # auto: small batches on the CPU, big ones on the GPU.
    plan = pg.run(f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT sum({predict_sql()}) FROM higgs h;",
                  [("pg_predict.device", "auto")]).stdout
    dev = re.search(r"Device: (.*)", plan)
    checks.report("PASS" if dev and "cuda:0" in dev.group(1) else "FAIL", "auto uses the GPU for big batches",
                  dev.group(1) if dev else plan[-300:])
    cap_check(pg, args, checks)


def cap_check(pg, args, checks):
    """max_gpu_backends backends hold the GPU; one more falls back to the CPU (EXPLAIN says so)."""
    cap = int(pg.value("SHOW pg_predict.max_gpu_backends"))
    time.sleep(2)  # backends of the earlier checks give their slots back as they exit
    holders = []
    try:
        for _ in range(cap):
            s = pg.session()
            ask(s, f"SET pg_predict.device = cuda; SELECT sum({predict_sql()}) FROM higgs h WHERE id <= 1000")
            holders.append(s)
        plan = pg.run(f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT sum({predict_sql()}) FROM higgs h "
                      f"WHERE id <= 1000;", [("pg_predict.device", "cuda")]).stdout
        dev = re.search(r"Device: (.*)", plan)
        checks.report("PASS" if dev and dev.group(1) == "cpu (GPU cap reached)" else "FAIL",
                      f"backend {cap + 1} with max_gpu_backends = {cap} falls back to the CPU",
                      dev.group(1) if dev else plan[-300:])
    finally:
        for s in holders:
            s.stdin.close()
            s.wait()


# ----------------------------------------------------------------------------------------------
# bench

def explain_numbers(pg, settings):
    out = pg.run(f"EXPLAIN (ANALYZE, FORMAT JSON) SELECT sum({predict_sql()}) FROM higgs h;", settings).stdout
    plan = json.loads(out[out.index("["):])[0]["Plan"]

    def find(node):
        if node.get("Custom Plan Provider") == "PredictBatch" or "Model Time" in node:
            return node
        for child in node.get("Plans", []):
            hit = find(child)
            if hit:
                return hit
        return None

    node = find(plan) or {}
    batches = node.get("Batches") or 0
    model_ms = node.get("Model Time")
    return {"device": node.get("Device"), "batches": batches, "batch_size": node.get("Batch Size"),
            "model_ms": model_ms,
            "model_ms_per_batch": round(model_ms / batches, 3) if model_ms and batches else None}


def backend_gpu_memory(pg, settings):
    """GPU memory of one backend after it scored on the GPU: its nvidia-smi entry, and the
    device's memory.used before and after."""
    before = gpu_used_mib()
    s = pg.session()
    try:
        sets = "".join(f"SET {k} = {v}; " for k, v in settings)
        ask(s, f"{sets}SELECT sum({predict_sql()}) FROM higgs h")
        pid = ask(s, "SELECT pg_backend_pid()")[-1].strip()
        apps = nvidia_smi("compute-apps=pid,used_memory") or ""
        after = gpu_used_mib()
    finally:
        s.stdin.close()
        s.wait()
    mine = [int(line.split(",")[1]) for line in apps.splitlines() if line.split(",")[0].strip() == pid]
    return {"pid": pid, "nvidia_smi_mib": mine[0] if mine else None,
            "device_used_delta_mib": after - before if before is not None and after is not None else None,
            "compute_apps": apps}


def bench(pg, args, rows_count):
    threads = min(16, os.cpu_count() or 1)
    floor_sql = "SELECT sum(" + " + ".join(FEATURES) + ") FROM higgs"
    query = f"SELECT sum({predict_sql()}) FROM higgs h"
    base = [("jit", "off"), ("max_parallel_workers_per_gather", "0")]
    configs = [("scan floor", None, [])]
    configs += [(f"cpu, {t} thread{'s' if t > 1 else ''}", "cpu",
                 [("pg_predict.device", "cpu"), ("pg_predict.threads", t)]) for t in sorted({1, threads})]
    if not args.expect_cpu:
        configs += [(f"cuda, {s}" + (" (CUDA kernel)" if s == "native" else ""), "cuda",
                     gpu_settings(s)) for s in strategies(pg)]
        configs += [("auto (default settings)", "auto", [("pg_predict.device", "auto")])]
    results = []
    for label, device, settings in configs:
        row = {"row": label, "settings": dict(settings)}
        try:
            sql = floor_sql if device is None else query
            times = pg.timed(sql, base + settings, args.repeats)
            row["ms"] = round(statistics.median(times), 1)
            row["runs_ms"] = [round(t, 1) for t in times]
            if device is not None:
                row.update(explain_numbers(pg, base + settings))
            if device == "cuda":
                row["gpu_memory"] = backend_gpu_memory(pg, base + settings)
        except RuntimeError as e:
            row["error"] = str(e).splitlines()[0][:300]
        log(f"  {label}: {row.get('ms', 'error')} ms  {row.get('device', '')}  "
            f"model/batch {row.get('model_ms_per_batch')} ms  {row.get('error', '')}")
        results.append(row)
    return results


def write_results(args, rows_count, results, checks):
    floor = next((r.get("ms") for r in results if r["row"] == "scan floor"), None)
    lines = [f"# pg_predict GPU benchmark: {MODEL} (500 trees, depth 8), {rows_count} rows", "",
             f"GPU: {nvidia_smi('gpu=name,driver_version,memory.total') or 'none'}", "",
             "| row | device | total ms (median of %d) | × scan floor | batches | batch size | model ms | model ms / batch | GPU MiB (backend) |" % args.repeats,
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        ratio = f"{r['ms'] / floor:.2f}" if floor and r.get("ms") else ""
        mem = (r.get("gpu_memory") or {})
        mib = mem.get("nvidia_smi_mib") or mem.get("device_used_delta_mib") or ""
        lines.append(f"| {r['row']} | {r.get('device') or ''} | {r.get('ms', r.get('error', ''))} | {ratio} | "
                     f"{r.get('batches') or ''} | {r.get('batch_size') or ''} | {r.get('model_ms') or ''} | "
                     f"{r.get('model_ms_per_batch') or ''} | {mib} |")
    by = {r["row"]: r for r in results}
    gpu_best = min((r["ms"] for r in results if r["row"].startswith("cuda") and r.get("ms")), default=None)
    native = by.get("cuda, native (CUDA kernel)", {}).get("model_ms")
    ptt = by.get("cuda, perfect_tree_traversal", {}).get("model_ms")
    lines += ["", "## Targets (information; the run never fails on them)", ""]
    if gpu_best and floor:
        lines.append(f"- whole query on the GPU ≤ 1.2× scan floor: {gpu_best / floor:.2f}× "
                     f"→ {'PASS' if gpu_best <= 1.2 * floor else 'FAIL'}")
    if native and ptt:
        lines.append(f"- CUDA kernel ≥ 3× faster than perfect_tree_traversal (model time): "
                     f"{ptt / native:.1f}× → {'PASS' if ptt >= 3 * native else 'FAIL'}")
    lines += ["", "## Smoke checks", ""] + [f"- {line}" for line in checks.lines]
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "gpu-bench.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(args.out, "gpu-bench.json"), "w") as f:
        json.dump({"rows": rows_count, "results": results, "checks": checks.lines}, f, indent=1)
    print("\n".join(lines), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prepare", metavar="DIR", help="write the inputs into DIR and stop")
    ap.add_argument("--model", help="with --prepare: the m500 XGBoost JSON to carry")
    ap.add_argument("--psql", default="psql")
    ap.add_argument("--host", default="/tmp")
    ap.add_argument("--port", type=int, default=5432)
    ap.add_argument("--user", default="postgres")
    ap.add_argument("--db", default="postgres")
    ap.add_argument("--inputs", default=os.path.join(HERE, "..", ".gpu-carry", "bench"))
    ap.add_argument("--out", default=os.environ.get("OUT", "gpu-out"))
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--smoke-rows", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--smoke-only", action="store_true")
    ap.add_argument("--expect-cpu", action="store_true",
                    help="the server has no usable CUDA: check that device = cuda is an error")
    args = ap.parse_args()
    if args.prepare:
        return prepare(args.prepare, args.model)
    pg = Psql(args)
    checks = Checks()
    setup(pg, args, args.smoke_rows)
    smoke(pg, args, checks)
    results = []
    if not args.smoke_only:
        setup(pg, args, args.rows)
        log(f"bench: {args.rows} rows")
        results = bench(pg, args, args.rows)
    write_results(args, args.rows if results else args.smoke_rows, results, checks)
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
