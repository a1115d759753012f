"""The result tables (markdown for bench/results, plain text for the terminal), the command
that reproduces each row, and the .md / .json files of a run."""

import json
import re
import shlex

from .fmt import fmt_load, fmt_rate, fmt_ratio, fmt_s
from .machine import describe


def reproduce_command(args, key):
    """The command that measures just this row (and its floor and baseline) again, with the
    sizes and limits of this run."""
    cmd = ["/usr/bin/python3", "bench/run.py"]
    cmd += ["--quick"] if args.quick else ["--rows", str(args.rows)]
    cmd += ["--train-rows", str(args.train_rows)]
    for opt in ("reps", "max_seconds", "key_max_seconds", "sample_seconds", "row_budget"):
        if opt in args.explicit:
            cmd += ["--" + opt.replace("_", "-"), str(getattr(args, opt))]
    if args.threads != "1,2":
        cmd += ["--threads", args.threads]
    if args.probe_rows != 100:
        cmd += ["--probe-rows", str(args.probe_rows)]
    if args.ignore_guc:
        cmd += ["--ignore-guc", args.ignore_guc]
    cmd += ["--only", "^" + re.escape(key) + "$"]
    return " ".join(shlex.quote(c) for c in cmd)


def load_range(rows):
    lows = [r.r["load_min"] for r in rows if r.r.get("load_min") is not None]
    highs = [r.r["load_max"] for r in rows if r.r.get("load_max") is not None]
    return (min(lows), max(highs)) if lows else (0.0, 0.0)


def table_md(rows, env):
    lo, hi = load_range(rows)
    out = [describe(env, lo, hi), "",
           "| row | key | seconds | CPU s | rows/s | x library native | x scan floor | peak MB "
           "| load | note |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    group = None
    for row in rows:
        if row.group != group:
            group = row.group
            out.append(f"| **{group}** | | | | | | | | | |")
        r = row.r
        if r["status"] != "ok":
            out.append(f"| {row.label} | `{row.key}` | | | | | | | "
                       f"{fmt_load(r)} | {r.get('note', r['status'])} |")
            continue
        secs = fmt_s(r["seconds"]) + ("*" if r.get("extrapolated") else "")
        note = "" if row.kind == "native" else r.get("note", "")
        if r.get("sanity") and not r["sanity"]["ok"]:
            note = (note + "; " if note else "") + "SUM MISMATCH vs the library"
        out.append(f"| {row.label} | `{row.key}` | {secs} | {fmt_s(r.get('cpu_s'))} | "
                   f"{fmt_rate(r['rows_per_s'])} | {fmt_ratio(r.get('x_native'))} | "
                   f"{fmt_ratio(r.get('x_floor'))} | {r['peak_mb']:.0f} | {fmt_load(r)} | "
                   f"{note} |")
    return "\n".join(out)


def table_text(rows, env):
    lo, hi = load_range(rows)
    w = max(len(r.key) for r in rows) + 2
    lines = [describe(env, lo, hi),
             f"{'row':<{w}}{'seconds':>10}{'CPU s':>9}{'rows/s':>10}{'x native':>10}"
             f"{'x floor':>10}{'peak MB':>9}{'load':>10}  note", "-" * (w + 80)]
    group = None
    for row in rows:
        if row.group != group:
            group = row.group
            lines.append(f"[{group}]")
        r = row.r
        if r["status"] != "ok":
            lines.append(f"{row.key:<{w}}{'':>58}{fmt_load(r):>10}  "
                         f"{r.get('note', r['status'])}")
            continue
        secs = fmt_s(r["seconds"]) + ("*" if r.get("extrapolated") else " ")
        note = "" if row.kind == "native" else r.get("note", "")
        lines.append(f"{row.key:<{w}}{secs:>10}{fmt_s(r.get('cpu_s')):>9}"
                     f"{fmt_rate(r['rows_per_s']):>10}"
                     f"{fmt_ratio(r.get('x_native')):>10}{fmt_ratio(r.get('x_floor')):>10}"
                     f"{r['peak_mb']:>9.0f}{fmt_load(r):>10}  {note}")
    lines.append("* extrapolated to the full table from a sample (see note)")
    return "\n".join(lines)


def markdown(rows, env, info, args, stamp, command, elapsed, check_lines, sanity_lines,
             so_note):
    gucs = env["gucs"]
    lo, hi = load_range(rows)
    busy = hi > 0.5 * env["cores"] + 2
    md = [f"# pg_predict benchmark — {stamp}", "",
          f"{args.rows} rows per table; models trained on {args.train_rows} rows; median of up "
          f"to {args.reps} runs after a warm-up; run took {elapsed / 60:.1f} min.", "",
          f"- command: `{command}`",
          f"- machine: {env['cpu']}, {env['cores']} cores, {env['mem_gb']} GiB, SIMD: "
          f"{', '.join(env['simd']) or 'none'}",
          f"- {env['postgres'].split(' on ')[0]}, shared_buffers {env['shared_buffers']}, "
          f"jit off; XGBoost {env['xgboost']}; pg_predict git {env['git']} "
          f"(installed library: {env.get('installed_so')})",
          "- pg_predict settings present: " + ", ".join(
              f"{k}={v}" for k, v in gucs.items() if v is not None) +
          ("; missing (rows marked n/a): " + ", ".join(k for k, v in gucs.items() if v is None)
           if any(v is None for v in gucs.values()) else ""),
          "- strategies (pg_settings.enumvals): " + (', '.join(info['strategies'])
                                                      if info['strategies'] else
                                                      "none listed (not an enum here): auto "
                                                      "rows only") + "; cpu_kernel "
          f"values: {', '.join(info['cpu_kernels']) if info['cpu_kernels'] else 'no such setting'}",
          "- data: " + ", ".join(f"{t} {info.get(f'{t}_size')} (generated in "
                                 f"{info.get(f'{t}_generate_s')} s)" for t in info["tables"]),
          "- models: " + "; ".join(f"{m['name']} {m['format']} {m['trees']} trees depth "
                                   f"{m['depth']} ({m['strategy']}, {m['program_bytes']} B)"
                                   for m in info.get("models", [])),
          *([so_note] if so_note else []),
          f"- load average (1 min) sampled during the rows: min {lo:.1f}, max {hi:.1f} on "
          f"{env['cores']} cores" + (
              " — **the machine was busy during this run: other processes competed for the "
              "CPU, treat the wall-clock seconds with care (the CPU s column is less affected)**"
              if busy else ""),
          "", "seconds = whole table (`*` = extrapolated from a sample, see note); "
          "CPU s = user + system CPU time of the backend and its workers (or of the Python "
          "process) per run, whole-table equivalent; x library native = the same model in its "
          "training library (XGBoost inplace_predict, scikit-learn predict), same thread count "
          "(workers count as threads); peak MB = peak private (anonymous) resident memory of "
          "the backend and its parallel workers, or of the Python process for native rows; "
          "load = the 1-minute load average sampled while the row ran (min-max).", "",
          table_md(rows, env), "", "## Targets (informational)", "", "```",
          *check_lines, "```", "", "## Numerical sanity", "", "```", *sanity_lines, "```", ""]
    plans = [r for r in rows if r.r.get("plan") and r.key in (
        "m500.batched.auto.t2", "m500.batched.auto.w2", "m500.perrow.auto.t1")]
    if plans:
        md += ["## Plans", ""]
        for r in plans:
            md += [f"{r.label}:", "```", r.r["plan"], "```", ""]
    md += ["## Reproduce one row", "",
           "Each command measures that row alone (with its table, its model, its scan floor "
           "and its library baseline) in a fresh cluster:", ""]
    md += [f"- `{r.key}`: `{reproduce_command(args, r.key)}`" for r in rows]
    return "\n".join(md) + "\n"


def json_doc(rows, env, info, target_checks, sanity_lines, ok_all, args):
    return {"info": info, "env": env,
            "rows": [{"key": r.key, "group": r.group, "label": r.label, "kind": r.kind,
                      "model": r.model, "threads": r.threads, "workers": r.workers,
                      "strategy": r.strategy, "cpu_kernel": r.kernel,
                      "reproduce": reproduce_command(args, r.key), **r.r} for r in rows],
            "targets": [{"target": n, "pass": ok, "detail": d} for n, ok, d in target_checks],
            "sanity": sanity_lines, "sanity_ok": ok_all}


def write_json(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, default=str)
