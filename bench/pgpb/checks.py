"""After the rows: ratios against the baselines and floors, the numerical sanity checks
(pg_predict's sums against the training library's over the same rows), and the issue's
targets as PASS / FAIL / n/a lines (informational: the bench never fails on a target)."""

import os

from .fmt import fmt_s
from .models import CREATED_MODELS, XGB_MODELS


def derive(rows):
    """Fill x_floor and x_native of each row; {key: row}."""
    by = {r.key: r for r in rows}
    for row in rows:
        r = row.r
        if r["status"] != "ok":
            continue
        floor = by.get(row.floor_key)
        if floor and floor.r["status"] == "ok":
            r["x_floor"] = r["seconds"] / floor.r["seconds"]
        nat = by.get(row.baseline_key)
        if nat and nat.r["status"] == "ok":
            r["x_native"] = r["seconds"] / nat.r["seconds"]
    return by


def sanity(rows, workdir):
    """pg_predict's (and PL/Python's) sums against the training library's (XGBoost native,
    scikit-learn predict) over the same rows."""
    import numpy as np
    lines, ok_all = [], True
    preds = {}
    for row in rows:
        r = row.r
        if r["status"] != "ok" or row.kind in ("floor", "native") or not row.model:
            continue
        if row.model not in preds:
            path = os.path.join(workdir, f"pred-{row.model}.npy")
            preds[row.model] = np.load(path) if os.path.exists(path) else None
        p = preds[row.model]
        if p is None or r.get("value") is None:
            continue
        ref = float(p[: r["rows_measured"]].sum())
        rel = abs(r["value"] - ref) / max(abs(ref), 1e-12)
        ok = rel <= 1e-5
        ok_all &= ok
        r["sanity"] = {"library_sum": ref, "rel_diff": rel, "ok": ok}
        lines.append(f"{'OK      ' if ok else 'MISMATCH'} {row.key}: sum {r['value']:.6f} vs "
                     f"the library {ref:.6f} over {r['rows_measured']} rows (rel diff {rel:.1e})")
    return ok_all, lines


def proba_sanity(pg, data, paths, models, n):
    """predict_proba over the first n rows vs Booster.predict on the XGBoost model each was
    made from: probabilities, not labels, summed and row by row."""
    import numpy as np
    import xgboost as xgb
    out = []
    with pg.connect() as conn:
        conn.execute("SET max_parallel_workers_per_gather = 0")
        for m in models:
            source = CREATED_MODELS[m][1]
            table, _, params = XGB_MODELS[source][:3]
            if not params["objective"].startswith("binary:"):
                continue
            X = data[table]["X"][:n]
            want = xgb.Booster(model_file=paths[m]).inplace_predict(X).astype(np.float64)
            got = np.array([r[0] for r in conn.execute(
                f"SELECT (predict_proba('{m}', t))[2] FROM {table} t WHERE id <= {n} "
                "ORDER BY id").fetchall()], dtype=np.float64)
            ref, v = float(want.sum()), float(got.sum())
            rel = abs(v - ref) / max(abs(ref), 1e-12)
            worst = float(np.max(np.abs(got - want))) if len(got) == len(want) else float("inf")
            out.append({"model": m, "rows": n, "pg": v, "xgboost": ref, "rel_diff": rel,
                        "max_abs_diff": worst, "ok": rel <= 1e-5 and worst <= 1e-5})
    return out


def proba_lines(psan):
    lines, ok_all = [], True
    for p in psan:
        if "error" in p:
            lines.append(f"MISMATCH predict_proba check failed: {p['error']}")
            ok_all = False
            continue
        ok_all &= p["ok"]
        lines.append(
            f"{'OK      ' if p['ok'] else 'MISMATCH'} predict_proba {p['model']}: sum of "
            f"P(class 1) {p['pg']:.6f} vs XGBoost {p['xgboost']:.6f} over {p['rows']} rows "
            f"(rel diff {p['rel_diff']:.1e}, largest difference on one row "
            f"{p['max_abs_diff']:.1e})")
    return ok_all, lines


def targets(by, n_rows, env):
    """The targets of issue 12 (and issue 3's PL/Python one). Informational: PASS / FAIL / n/a,
    each with the numbers it compared."""
    res = []

    def ok(k):
        r = by.get(k)
        return r is not None and r.r["status"] == "ok"

    def sec(k):
        return by[k].r["seconds"]

    def best(keys):
        ks = [k for k in keys if ok(k)]
        return min(ks, key=sec) if ks else None

    def us_per_row(k, floor="floor"):
        """µs per row the row adds to the scan floor of its table."""
        return (sec(k) - sec(floor)) / n_rows * 1e6

    def ratio(name, num, den, limit, at_most=True):
        if not (num and den and ok(num) and ok(den)):
            res.append((name, None, "n/a"))
            return
        x = sec(num) / sec(den)
        res.append((name, x <= limit if at_most else x >= limit,
                    f"{num} {fmt_s(sec(num))} s / {den} {fmt_s(sec(den))} s = {x:.2f}x"))

    # 1. 500 trees depth 8, 2 threads or 2 workers, against XGBoost at 2 threads
    two = [r.key for r in by.values() if r.group == "m500" and r.kind == "batched"
           and r.cmp_threads == 2 and not r.r.get("extrapolated") and r.kernel is None]
    limit, isa = (0.10, "AVX-512") if env.get("avx512f") else (0.15, "AVX2") \
        if env.get("avx2") else (None, None)
    if limit:
        ratio(f"1. 500-tree, 2 thr/workers, {isa}: pg_predict <= {limit:.2f}x XGBoost native",
              best(two), "m500.native.t2", limit)
    else:
        res.append(("1. 500-tree: pg_predict <= 0.10x (AVX-512) / 0.15x (AVX2) XGBoost", None,
                    "n/a (this CPU has neither)"))
    if ok("m500.batched.kernel=avx2.t2") and env.get("avx512f"):
        ratio("1. 500-tree, 2 thr, cpu_kernel = avx2: pg_predict <= 0.15x XGBoost native",
              "m500.batched.kernel=avx2.t2", "m500.native.t2", 0.15)
    # 2. parallel scaling
    ratio("2. 500-tree: 1 -> 2 parallel workers >= 1.7x faster", "m500.batched.auto.w1",
          "m500.batched.auto.w2", 1.7, at_most=False)
    # 3. the wide table
    ratio("3. wide table, 10-column model: <= 1.3x sum(c1+...+c10)",
          best([k for k in by if k.startswith("wide.batched")]), "wide.floor", 1.3)
    # 4. trivial models at scan speed
    ratio("4. stump (1 tree depth 1): <= 1.1x scan floor", "stump.batched.auto.t1", "floor", 1.1)
    ratio("4. m100 (100 trees depth 3): <= 1.1x scan floor",
          best([k for k in by if k.startswith("m100.batched")]), "floor", 1.1)
    # 5. the per-row path: µs per call over the scan floor
    if ok("stump.perrow.auto.t1") and ok("floor"):
        us = us_per_row("stump.perrow.auto.t1")
        res.append(("5. per-row stump: <= 3 us a call", us <= 3,
                     f"(stump.perrow.auto.t1 - floor) / {n_rows} rows = {us:.2f} us"))
    else:
        res.append(("5. per-row stump: <= 3 us a call", None, "n/a"))
    if ok("m500.perrow.auto.t1") and ok("m500.batched.auto.t1") and ok("floor"):
        us, b = us_per_row("m500.perrow.auto.t1"), us_per_row("m500.batched.auto.t1")
        res.append(("5. per-row 500-tree: <= 2x batched per row + 2 us", us <= 2 * b + 2,
                    f"{us:.2f} us a call vs 2 x {b:.2f} + 2 = {2 * b + 2:.2f} us (both over "
                    "the scan floor, 1 thr)"))
    else:
        res.append(("5. per-row 500-tree: <= 2x batched per row + 2 us", None, "n/a"))
    # 6. scikit-learn
    ratio("6. pipe: <= 1.2x its scan floor",
          best([k for k in by if k.startswith("pipe.batched")]), "pipe.floor", 1.2)
    for m in ("svc", "mlp"):
        for t in (1, 2):
            ratio(f"6. {m}, {t} thr: >= 3x faster than scikit-learn predict",
                  f"{m}.native.t{t}", f"{m}.batched.auto.t{t}", 3.0, at_most=False)
    # issue 14: train() against Python xgboost's xgb.train on the same rows and threads
    for t in (1, 2):
        ratio(f"14. train() 100 trees depth 6, {t} thr: <= 1.5x Python xgb.train",
              f"train.sql.t{t}", f"train.native.t{t}", 1.5)
    # issue 3: against the PostgresML pattern
    ratio("500-tree: pg_predict >= 10x faster than PL/Python batched",
          best(["m500.plpy_batch.t2", "m500.plpy_batch.t1"]), best(two), 10.0, at_most=False)
    return res
