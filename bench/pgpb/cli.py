"""bench/run.py's command: parse the options, start a throwaway cluster, make what the chosen
rows need, measure them, write the report."""

import argparse
import datetime as dt
import os
import shutil
import sys
import tempfile
import time
import traceback

from . import checks, data, machine, models, report
from .chart import chart
from .fmt import log
from .measure import Bench
from .rows import build_rows, needs, select
from .server import enum_values, read_gucs

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(BENCH)
# full run, --quick
LIMITS = {"reps": (3, 2), "max_seconds": (40.0, 10.0), "key_max_seconds": (240.0, 60.0),
          "sample_seconds": (5.0, 2.0), "row_budget": (90.0, 30.0)}
SERVER_SETTINGS = {"shared_buffers": "4GB", "max_worker_processes": "8",
                   "max_parallel_workers": "8", "work_mem": "64MB", "jit": "off",
                   "maintenance_work_mem": "512MB"}


def parse_args(argv, doc):
    ap = argparse.ArgumentParser(description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows per table (1M)")
    ap.add_argument("--quick", action="store_true",
                    help="100k rows smoke run (also: 2 reps, smaller time limits)")
    ap.add_argument("--train-rows", type=int, default=100_000,
                    help="rows the models are trained on (default 100k; --quick 20k)")
    ap.add_argument("--reps", type=int, default=None,
                    help="timed runs per row, median (3; --quick 2)")
    ap.add_argument("--threads", default="1,2", help="thread counts (default 1,2)")
    ap.add_argument("--max-seconds", type=float, default=None,
                    help="a row estimated to take longer than this on the whole table is "
                         "measured on a sample and extrapolated (40; --quick 10)")
    ap.add_argument("--key-max-seconds", type=float, default=None,
                    help="the same limit for the rows a target depends on (240; --quick 60)")
    ap.add_argument("--sample-seconds", type=float, default=None,
                    help="target time of one run on a sample (5; --quick 2)")
    ap.add_argument("--row-budget", type=float, default=None,
                    help="fewer repetitions when reps x run time would exceed this "
                         "(90; --quick 30)")
    ap.add_argument("--probe-rows", type=int, default=100,
                    help="first probe size (grows x10 until a run takes 1 s)")
    ap.add_argument("--only", help="regex on the row keys: measure only the matching rows "
                                   "and the scan floor and library baseline each is compared "
                                   "with; only their tables and models are made")
    ap.add_argument("--list", action="store_true",
                    help="print the row keys this server offers and exit (starts a cluster)")
    ap.add_argument("--ignore-guc", default="",
                    help="comma-separated pg_predict GUCs to treat as absent (tests the n/a and "
                         "fallback paths), e.g. enable_batching,strategy,cpu_kernel")
    ap.add_argument("--results", default=os.path.join(BENCH, "results"))
    ap.add_argument("--keep-cluster", action="store_true")
    a = ap.parse_args(argv)
    a.explicit = {k for k in LIMITS if getattr(a, k) is not None}
    for k, (full, quick) in LIMITS.items():
        if getattr(a, k) is None:
            setattr(a, k, quick if a.quick else full)
    if a.quick:
        a.rows = 100_000
        a.train_rows = min(a.train_rows, 20_000)
    a.train_rows = min(a.train_rows, a.rows)
    return a


def thread_counts(a):
    threads = [int(t) for t in a.threads.split(",")]
    return threads + ([2] if 2 not in threads else [])   # the targets compare at 2


def server_rows(admin, a):
    """The rows for this server: one per strategy and cpu_kernel value it lists."""
    listed = enum_values(admin, "strategy")   # None: not an enum on this server
    strategies = sorted(listed or ["auto"], key=lambda s: s != "auto")
    kernels = enum_values(admin, "cpu_kernel")
    if kernels is not None:
        kernels = [k for k in kernels if k != "auto"]
    rows = select(build_rows(thread_counts(a), strategies, kernels), a.only)
    return rows, listed, kernels


def make_inputs(admin, a, rows, workdir, info):
    """Generate the tables the rows read and make the models they score; returns (data,
    {model: file the baseline scores})."""
    tables, wanted = needs(rows)
    info["tables"] = sorted(tables, key=data.TABLES.index)
    log(f"generating {', '.join(info['tables'])} ...")
    data.generate(admin, info["tables"], a.rows, info)
    created = sorted(m for m in wanted if m in models.CREATED_MODELS)
    fitted = sorted(m for m in wanted if m in models.SKLEARN_MODELS)
    sources = sorted({models.CREATED_MODELS[m][1] for m in created})
    exported = sorted({models.table_of(m) for m in wanted} | {r.table for r in rows if r.kind == "train-native"},
                      key=data.TABLES.index)
    log(f"exporting {', '.join(exported) or 'nothing'} (binary COPY) ...")
    t0 = time.perf_counter()
    inputs = data.export(admin, exported, workdir)
    info["export_s"] = round(time.perf_counter() - t0, 1)
    log("training ...")
    xgb_paths = models.train_xgb(inputs, sources, a.train_rows, info)
    sk_paths = models.train_sklearn(inputs, fitted, a.train_rows, info)
    log("create_model / deploy ...")
    paths = models.create_models(admin, created, xgb_paths, info)
    models.deploy_sklearn(admin, sk_paths, info)
    paths.update(sk_paths)
    models.describe_models(admin, info)
    plpy = {r.model for r in rows if r.kind.startswith("plpy")}
    if plpy:
        models.install_plpython(admin, {m: xgb_paths[m] for m in plpy})
    return inputs, paths


def measure(pg, admin, a, rows, gucs, inputs, paths, workdir, info, env):
    """Run every row (baselines first: they write the reference predictions), then the
    checks; returns (targets, sanity lines, all sane)."""
    sizes = {t: a.rows for t in info["tables"]}
    bench = Bench(pg, a, admin, data.Samples(admin, sizes), sizes, gucs, workdir, paths)
    log("measuring ...")
    for row in [r for r in rows if r.kind == "native"] + [r for r in rows if r.kind != "native"]:
        bench.run(row)
    log("sanity ...")
    by = checks.derive(rows)
    ok_all, sanity_lines = checks.sanity(rows, workdir)
    proba_models = sorted(m for m in {r.model for r in rows if r.model}
                          if m in models.CREATED_MODELS)
    try:
        psan = checks.proba_sanity(pg, inputs, paths, proba_models,
                                   a.rows if gucs.get("enable_batching") is not None
                                   else min(a.rows, 10_000))
    except Exception as e:
        psan = [{"error": str(e)}]
    ok_proba, proba_lines = checks.proba_lines(psan)
    return checks.targets(by, a.rows, env), sanity_lines + proba_lines, ok_all and ok_proba


def write_report(a, rows, env, info, start, target_checks, sanity_lines, ok_all):
    stamp = start.strftime("%Y%m%d-%H%M%S")
    so_end = machine.installed_so()
    so_note = ""
    if so_end != env.get("installed_so"):
        so_note = (f"- **the installed pg_predict.so changed during the run** "
                   f"({env.get('installed_so')} -> {so_end}); the server runs the library it "
                   "preloaded at start")
        log("WARNING: " + so_note[2:].replace("**", ""))
    elapsed = (dt.datetime.now() - start).total_seconds()
    info["elapsed_s"] = round(elapsed)
    check_lines = [f"{'PASS' if ok is True else 'FAIL' if ok is False else 'n/a '}  {name}: {det}"
                   for name, ok, det in target_checks]
    log("\n" + report.table_text(rows, env) + "\n")
    log("targets (informational):")
    for line in check_lines:
        log("  " + line)
    log("numerical sanity (pg_predict vs the training library over the same rows, rel 1e-5):")
    for line in sanity_lines:
        log("  " + line)

    os.makedirs(a.results, exist_ok=True)
    command = " ".join(["bench/run.py"] + sys.argv[1:])
    md = report.markdown(rows, env, info, a, stamp, command, elapsed, check_lines,
                         sanity_lines, so_note)
    doc = report.json_doc(rows, env, info, target_checks, sanity_lines, ok_all, a)
    # a partial run (--only) never replaces latest.*: that is the last whole run
    base = os.path.join(a.results, stamp if a.only else "latest")
    md_paths = [os.path.join(a.results, f"{stamp}.md")] + ([] if a.only else [base + ".md"])
    for path in md_paths:
        with open(path, "w") as f:
            f.write(md)
    json_path = os.path.join(a.results, f"{stamp}.json")
    report.write_json(json_path, doc)
    written = md_paths + [json_path]
    lo, hi = report.load_range(rows)
    title = (f"pg_predict bench {stamp}: {a.rows} rows\n{env['cpu']} x{env['cores']} "
             f"({', '.join(env['simd']) or 'no SIMD flags'}), load {lo:.1f}-{hi:.1f}, "
             f"git {env['git']}")
    try:
        chart(rows, base + ".png", title)
        written.append(base + ".png")
    except Exception:
        traceback.print_exc()
    log("\nwrote " + ", ".join(written))
    if not ok_all:
        log("WARNING: numerical sanity mismatches (see above)")


def main(argv=None, doc=None):
    a = parse_args(argv, doc)
    sys.path.insert(0, os.path.join(ROOT, "regress"))
    from pgcluster import Cluster

    start = dt.datetime.now()
    info = {"rows": a.rows, "train_rows": a.train_rows, "reps": a.reps,
            "started": start.strftime("%Y%m%d-%H%M%S")}
    workdir = tempfile.mkdtemp(prefix="pg_predict-bench-")
    os.chmod(workdir, 0o755)
    try:
        with Cluster(settings=SERVER_SETTINGS, keep=a.keep_cluster, prefix="pgpb-") as pg:
            log(f"cluster: {pg.psql_command()}")
            with pg.connect() as admin:
                admin.execute("CREATE EXTENSION pg_predict")
                gucs = read_gucs(admin, filter(None, a.ignore_guc.split(",")))
                rows, info["strategies"], info["cpu_kernels"] = server_rows(admin, a)
                if a.list:
                    print("\n".join(r.key for r in rows))
                    return 0
                if not rows:
                    log(f"no row key matches --only {a.only!r} (see --list)")
                    return 2
                log(f"pg_predict bench: {a.rows} rows, models trained on {a.train_rows} rows, "
                    f"{len(rows)} rows to measure; settings {gucs}")
                env = machine.environment(admin, gucs)
                inputs, paths = make_inputs(admin, a, rows, workdir, info)
                target_checks, sanity_lines, ok_all = measure(pg, admin, a, rows, gucs, inputs,
                                                              paths, workdir, info, env)
        write_report(a, rows, env, info, start, target_checks, sanity_lines, ok_all)
    finally:
        if not a.keep_cluster:
            shutil.rmtree(workdir, ignore_errors=True)   # the numpy copies of the tables
    return 0
