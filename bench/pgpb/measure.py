"""Timing one row: a SQL row on its own fresh connection (warm-up, a probe that finds how big
a run must be, then the timed runs), or a baseline in its own process (native.py,
sklearn_native.py). Records time, CPU time, private memory and the load while it ran."""

import json
import os
import re
import statistics
import subprocess
import time
import traceback

from .data import data_file, label_file
from .fmt import fmt_load, fmt_s, log, nice_size
from .procs import MemWatch, proc_status

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = "/usr/bin/python3"


def first_line(e):
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


class Bench:
    def __init__(self, pg, args, admin, samples, sizes, gucs, workdir, paths):
        self.pg, self.args, self.admin, self.samples = pg, args, admin, samples
        self.sizes, self.gucs, self.workdir, self.paths = sizes, gucs, workdir, paths
        self.variants = {}   # (model, strategy) -> model name with that stored strategy

    # -- settings ------------------------------------------------------------------------------
    def model_for(self, row):
        """Model name and an n/a reason (or None). Uses pg_predict.strategy when the GUC exists;
        without it, a copy of the model compiled with options.strategy (per-row rows only)."""
        if row.strategy in (None, "auto") or self.gucs.get("strategy") is not None:
            return row.model, None
        key = (row.model, row.strategy)
        if key not in self.variants:
            name = f"{row.model}_{row.strategy}"
            try:
                with open(self.paths[row.model]) as f:
                    js = f.read()
                self.admin.execute("SELECT create_model(%s, %s::jsonb, 'auto', %s::jsonb)",
                                   (name, js, json.dumps({"strategy": row.strategy,
                                                          "replace": True})))
                self.variants[key] = (name, None)
            except Exception as e:  # e.g. the native kernel does not exist yet
                self.variants[key] = (None, f"n/a (not built yet: {first_line(e)})")
        return self.variants[key]

    def settings_for(self, row):
        s = {"jit": "off", "max_parallel_workers_per_gather": "0"}
        if row.workers:
            s.update({"max_parallel_workers_per_gather": str(row.workers),
                      "parallel_setup_cost": "0", "parallel_tuple_cost": "0",
                      "min_parallel_table_scan_size": "0", "parallel_leader_participation": "off"})
        if row.kind in ("batched", "per-row"):
            s["pg_predict.threads"] = str(row.threads)
            if self.gucs.get("enable_batching") is not None:
                s["pg_predict.enable_batching"] = "on" if row.batched else "off"
            if self.gucs.get("strategy") is not None and row.strategy:
                s["pg_predict.strategy"] = row.strategy
            if row.kernel:
                s["pg_predict.cpu_kernel"] = row.kernel
        s.update(row.settings)
        return s

    def not_built(self, row):
        """Why a SQL row cannot run on this server (n/a note), or None."""
        if row.kind == "batched" and self.gucs.get("enable_batching") is None:
            return "n/a (not built yet)"
        if row.strategy == "native" and self.gucs.get("strategy") is None and row.batched:
            return "n/a (not built yet)"
        if row.kernel is not None and (not row.kernel or self.gucs.get("cpu_kernel") is None):
            return "n/a (not built yet)"
        return None

    # -- one SQL row ---------------------------------------------------------------------------
    def run_sql_row(self, row):
        na = self.not_built(row)
        model = row.model
        if not na and row.model:
            model, na = self.model_for(row)
        if na:
            row.r = {"status": "n/a", "note": na}
            return
        sql = row.sql
        if model and model != row.model:
            sql = sql.replace(f"'{row.model}'", f"'{model}'")
        settings = self.settings_for(row)
        N = self.sizes[row.table]
        a = self.args
        with self.pg.connect() as conn:
            for k, v in settings.items():
                try:
                    conn.execute(f"SET {k} = '{v}'")
                except Exception as e:
                    if k != "pg_predict.cpu_kernel":
                        raise
                    # the server refuses a kernel this CPU (or build) cannot run; its detail
                    # says which it offers
                    detail = getattr(getattr(e, "diag", None), "message_detail", None)
                    row.r = {"status": "n/a", "error": first_line(e),
                             "note": f"n/a (this CPU has no {v}" +
                                     (f"; server: {detail.rstrip('.')}" if detail else "") + ")"}
                    return
            pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
            plan = "\n".join(r[0] for r in conn.execute(
                "EXPLAIN (COSTS OFF) " + sql.format(T=row.table)).fetchall())

            def timed(n):
                q = sql.format(T=self.samples.table(row.table, n))
                t0 = time.perf_counter()
                v = conn.execute(q).fetchone()[0]
                return time.perf_counter() - t0, v

            with MemWatch(pid, workers=bool(row.workers)) as mw:
                # warm-up, then probe: grow the input tenfold until a run takes a second
                # and time grows with rows (10x rows -> >= 5x time), so that a fixed cost per
                # query is not mistaken for a cost per row
                n = min(N, a.probe_rows)
                timed(n)            # cold: loads the model, imports Python modules ...
                t, _ = timed(n)
                prev = None
                while n < N:
                    if t >= 1.0 and ((prev and t / prev[1] >= 5) or t >= 3.0):
                        break
                    prev = (n, t)
                    n = min(N, n * 10)
                    t, _ = timed(n)
                per_row = t / n
                if prev and t > prev[1]:
                    per_row = (t - prev[1]) / (n - prev[0])
                est_full = t + per_row * (N - n)
                limit = a.key_max_seconds if row.key_row else a.max_seconds
                if n >= N or est_full <= limit:
                    target = N
                else:
                    target = max(n, min(N, nice_size(int(a.sample_seconds / per_row))))
                    # at least 10k rows when affordable: small samples magnify fixed costs
                    floor_n = min(N, 10_000)
                    if target < floor_n and t + per_row * (floor_n - n) <= 30.0:
                        target = floor_n
                est_run = t + per_row * (target - n)
                reps = max(1, min(a.reps, int(a.row_budget / max(est_run, 1e-9))))
                mw.mark()
                times, values, cpus = [], [], []
                for _ in range(reps):
                    c0 = mw.cpu_seconds(sample=True)
                    t, v = timed(target)
                    cpus.append(mw.cpu_seconds(sample=True) - c0)
                    times.append(t)
                    values.append(v)
            hwm = proc_status(pid).get("VmHWM", 0) / 1024.0
        med = statistics.median(times)
        notes = []
        if target < N:
            notes.append(f"extrapolated from {target} rows")
        if row.kind == "batched" and "PredictBatch" not in plan and "Custom Scan" not in plan:
            notes.append("plan has no PredictBatch node")
        m = re.search(r"Strategy: (\S+)", plan)
        if m and row.kind == "batched" and row.strategy == "auto":
            notes.append(f"auto chose {m.group(1)}")
        k = re.search(r"Kernel: (\S+)", plan)   # EXPLAIN names the CPU path it scores with
        if k and row.kind == "batched":
            notes.append(f"kernel {k.group(1)}")
        row.r = {"status": "ok", "rows_measured": target, "extrapolated": target < N,
                 "plan_strategy": m.group(1) if m else None,
                 "plan_kernel": k.group(1) if k else None, "times": times, "reps": reps,
                 "median_s": med, "seconds": med * N / target,
                 "rows_per_s": target / med, "value": float(values[-1]) if values[-1] is not None
                 else None, "peak_mb": mw.peak_mb, "vmhwm_mb": hwm, "plan": plan,
                 "settings": settings, "model_used": model, "note": "; ".join(notes),
                 "min_s": min(times) * N / target,
                 "cpu_s": statistics.median(cpus) * N / target,
                 "load_min": mw.load_min, "load_max": mw.load_max}

    # -- one baseline row: the training library's own predictor, in its own process -----------
    def run_native_row(self, row):
        save = os.path.join(self.workdir, f"pred-{row.model}.npy")
        sk = row.native["engine"] == "sklearn"
        cmd = [PY, os.path.join(BENCH, "sklearn_native.py" if sk else "native.py"), "--data",
               data_file(self.workdir, row.table), "--model", self.paths[row.model],
               "--threads", str(row.threads), "--reps", str(self.args.reps),
               "--budget", str(self.args.row_budget), "--save", save]
        if row.native["classifier"] and not sk and row.native["engine"] != "xgboost_contribs":
            cmd.append("--classifier")
        if row.native["engine"] == "xgboost_contribs":
            cmd.append("--contribs")
        env = dict(os.environ, OMP_NUM_THREADS=str(row.threads))
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env)
        with MemWatch(p.pid) as mw:
            out, err = p.communicate()
        if p.returncode != 0:
            raise RuntimeError(f"{os.path.basename(cmd[1])} failed: {err.strip()[-2000:]}")
        res = json.loads(out.strip().splitlines()[-1])
        med = statistics.median(res["times"])
        row.r = {"status": "ok", "rows_measured": res["rows"], "extrapolated": False,
                 "times": res["times"], "reps": len(res["times"]), "median_s": med,
                 "seconds": med, "min_s": min(res["times"]), "rows_per_s": res["rows"] / med,
                 "value": res["value"],
                 "peak_mb": mw.peak_mb, "cpu_s": statistics.median(res["cpu"]),
                 "load_min": mw.load_min, "load_max": mw.load_max,
                 "note": "in-memory DataFrame / numpy, estimator.predict" if sk else
                 "in-memory float32 numpy, DMatrix + predict(pred_contribs=True)"
                 if row.native["engine"] == "xgboost_contribs" else "in-memory float32 numpy, inplace_predict"}

    # -- train(): the whole table once per rep, the backend's memory watched -------------------
    def run_train_row(self, row):
        N = self.sizes[row.table]
        with self.pg.connect() as conn:
            pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
            conn.execute("SELECT count(*) FROM models")  # the library loaded before the clock
            times, cpus = [], []
            with MemWatch(pid) as mw:
                mw.mark()
                for _ in range(max(1, min(self.args.reps, 2))):
                    c0 = mw.cpu_seconds(sample=True)
                    t0 = time.perf_counter()
                    result = conn.execute(row.sql.format(T=row.table)).fetchone()[0]
                    times.append(time.perf_counter() - t0)
                    cpus.append(mw.cpu_seconds(sample=True) - c0)
            hwm = proc_status(pid).get("VmHWM", 0) / 1024.0
        med = statistics.median(times)
        row.r = {"status": "ok", "rows_measured": N, "extrapolated": False, "times": times, "reps": len(times),
                 "median_s": med, "seconds": med, "min_s": min(times), "rows_per_s": N / med,
                 "value": float(result["train_rows"]), "peak_mb": mw.peak_mb, "vmhwm_mb": hwm,
                 "cpu_s": statistics.median(cpus), "load_min": mw.load_min, "load_max": mw.load_max,
                 "note": "reads the table through SPI, one DMatrix, 100 rounds, registers the model"}

    def run_train_native_row(self, row):
        cmd = [PY, os.path.join(BENCH, "train_native.py"), "--data", data_file(self.workdir, row.table),
               "--label", label_file(self.workdir, row.table), "--threads", str(row.threads),
               "--reps", str(max(1, min(self.args.reps, 2)))]
        env = dict(os.environ, OMP_NUM_THREADS=str(row.threads))
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        with MemWatch(p.pid) as mw:
            out, err = p.communicate()
        if p.returncode != 0:
            raise RuntimeError(f"train_native.py failed: {err.strip()[-2000:]}")
        res = json.loads(out.strip().splitlines()[-1])
        med = statistics.median(res["times"])
        row.r = {"status": "ok", "rows_measured": res["rows"], "extrapolated": False, "times": res["times"],
                 "reps": len(res["times"]), "median_s": med, "seconds": med, "min_s": min(res["times"]),
                 "rows_per_s": res["rows"] / med, "value": res["value"], "peak_mb": mw.peak_mb,
                 "cpu_s": statistics.median(res["cpu"]), "load_min": mw.load_min, "load_max": mw.load_max,
                 "note": "in-memory float32 numpy: DMatrix + xgb.train"}

    def run(self, row):
        load = os.getloadavg()[0]
        log(f"- {row.key}: {row.label} ...  (load {load:.1f})")
        t0 = time.perf_counter()
        try:
            if row.kind == "native":
                self.run_native_row(row)
            elif row.kind == "train":
                self.run_train_row(row)
            elif row.kind == "train-native":
                self.run_train_native_row(row)
            else:
                self.run_sql_row(row)
        except Exception as e:
            row.r = {"status": "error", "note": f"error: {first_line(e)}"}
            traceback.print_exc()
        r = row.r
        if r["status"] == "ok":
            log(f"    {fmt_s(r['seconds'])} s full-table ({r['reps']} x {fmt_s(r['median_s'])} s "
                f"on {r['rows_measured']} rows), peak {r['peak_mb']:.0f} MB, load {fmt_load(r)}"
                f"{', ' + r['note'] if r.get('note') and row.kind != 'native' else ''}"
                f"  [{time.perf_counter() - t0:.0f}s]")
        else:
            log(f"    {r['note']}")
        r["load1_before"] = round(load, 2)
        r["load1_after"] = round(os.getloadavg()[0], 2)
