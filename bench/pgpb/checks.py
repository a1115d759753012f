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


def targets(by):
    """The targets of issue 3. Informational: PASS / FAIL / n/a."""
    res = []

    def ok(k):
        r = by.get(k)
        return r is not None and r.r["status"] == "ok"

    def sec(k):
        return by[k].r["seconds"]

    def best(keys):
        ks = [k for k in keys if ok(k)]
        return min(ks, key=sec) if ks else None

    batched2 = [r.key for r in by.values() if r.group == "m500" and r.kind == "batched"
                and r.cmp_threads == 2 and not r.r.get("extrapolated")]
    perrow2 = [r.key for r in by.values() if r.group == "m500" and r.kind == "per-row"
               and r.cmp_threads == 2]
    b = best(batched2)
    path_note = ""
    if b is None:
        b = best(perrow2)
        path_note = " (batched path not built yet: best per-row row instead)"
    if b and ok("m500.native.t2"):
        x = sec(b) / sec("m500.native.t2")
        res.append(("500-tree, 1M rows, 2 thr/workers: pg_predict <= 0.25x XGBoost native",
                    x <= 0.25, f"{by[b].label}: {fmt_s(sec(b))} s vs {fmt_s(sec('m500.native.t2'))}"
                    f" s = {x:.2f}x{path_note}"))
    else:
        res.append(("500-tree: pg_predict <= 0.25x XGBoost native", None, "n/a"))
    pyb = best([k for k in ("m500.plpy_batch.t2", "m500.plpy_batch.t1") if ok(k)])
    if b and pyb:
        x = sec(pyb) / sec(b)
        res.append(("500-tree: pg_predict >= 10x faster than PL/Python batched", x >= 10,
                    f"{by[pyb].label} {fmt_s(sec(pyb))} s / {fmt_s(sec(b))} s = {x:.1f}x"
                    f"{path_note}"))
    else:
        res.append(("500-tree: pg_predict >= 10x faster than PL/Python batched", None, "n/a"))
    st = best(["stump.batched.auto.t1"])
    sn = ""
    if st is None:
        st, sn = best(["stump.perrow.auto.t1"]), " (per-row path: batched not built yet)"
    if st and ok("floor"):
        x = sec(st) / sec("floor")
        res.append(("1-tree depth-1: whole query <= 2x scan floor", x <= 2,
                    f"{fmt_s(sec(st))} s vs {fmt_s(sec('floor'))} s = {x:.2f}x{sn}"))
    else:
        res.append(("1-tree depth-1: whole query <= 2x scan floor", None, "n/a"))
    wd = best([k for k in by if k.startswith("wide.batched")])
    wn = ""
    if wd is None:
        wd, wn = best(["wide.perrow.auto.t1"]), " (per-row path: batched not built yet)"
    if wd and ok("wide.floor"):
        x = sec(wd) / sec("wide.floor")
        res.append(("wide table, 10-column model: <= 1.3x sum(c1+...+c10)", x <= 1.3,
                    f"{by[wd].label}: {fmt_s(sec(wd))} s vs {fmt_s(sec('wide.floor'))} s = "
                    f"{x:.2f}x{wn}"))
    else:
        res.append(("wide table: <= 1.3x its scan floor", None, "n/a"))
    w1, w2, wn = "m500.batched.auto.w1", "m500.batched.auto.w2", ""
    if not (ok(w1) and ok(w2)):
        w1, w2, wn = "m500.perrow.auto.w1", "m500.perrow.auto.w2", \
            " (per-row path: batched not built yet)"
    if ok(w1) and ok(w2):
        x = sec(w1) / sec(w2)
        res.append(("500-tree: 1 -> 2 parallel workers >= 1.7x faster", x >= 1.7,
                    f"{fmt_s(sec(w1))} s -> {fmt_s(sec(w2))} s = {x:.2f}x{wn}"))
    else:
        res.append(("1 -> 2 parallel workers >= 1.7x", None, "n/a"))
    return res
