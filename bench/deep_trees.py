"""Deep trees (issue 29): pg_predict against LightGBM's and XGBoost's own predictors on models of
31 and 255 leaves per tree, on the same rows, side by side, in one run.

    bash scripts/install-lightgbm.sh                   # once: LightGBM 4.6.0 from third_party/lightgbm
    /usr/bin/python3 bench/deep_trees.py               # 1M rows, 4 models of 500 trees, 3 runs each
    /usr/bin/python3 bench/deep_trees.py --only lgb    # the LightGBM models only (regex on the name)
    /usr/bin/python3 bench/deep_trees.py --rows 20000 --train-rows 10000 --runs 1 --trees 50   # smoke

Data: --rows HIGGS-shaped rows x 28 float32 columns made with numpy from a fixed seed (standard
normal, f21..f28 = |x| * 2; the first n rows are the same whatever --rows is) and a 0/1 label
drawn from a logistic model of a few of them, loaded with a binary COPY into an UNLOGGED table
higgs(id, f1..f28 real, label) of a throwaway cluster (regress/pgcluster.py,
shared_preload_libraries = 'pg_predict'), so the table holds exactly the float32 values the
libraries get. Models, trained on the first --train-rows rows (cached in bench/.cache/ keyed by a
hash of the training rows, the parameters and the library's version):

    lgb31          LightGBM binary, num_leaves=31, --trees iterations, learning_rate 0.1
    lgb255         LightGBM binary, num_leaves=255, the same
    xgb_lossguide  XGBoost binary:logistic, hist, grow_policy=lossguide, max_leaves=255, max_depth=0, eta 0.1
    xgb_d12        XGBoost binary:logistic, hist, max_depth=12, eta 0.1

LightGBM's model goes to create_model as its model text, XGBoost's as JSON. Timed, alternating,
median of --runs: the library on the rows already in memory (float32 numpy; LightGBM
Booster.predict(X, num_threads=t), XGBoost inplace_predict with nthread=t) at 1 and 2 threads,
and `SELECT sum((predict_proba(m, h))[2]) FROM higgs h` (the probability, as the libraries
return it) with pg_predict.threads = 1, = 2, and 1 thread in each of 2 parallel workers (forced
Gather, parallel_leader_participation = off), plus the scan floor `SELECT sum(f1) FROM higgs`;
and at 1 and 2 threads with pg_predict.bitvector_layout = off (the generic walk instead of the
bitvector layout, US patent 11,106,685: what a build without it costs).
Each model's first 10000 rows (ORDER BY id) are also compared with the library's predictions
(max abs difference; more than 1e-5 is a FAIL and exit status 1). Prints a Markdown table and
one JSON line. LightGBM is imported from $LIGHTGBM_PREFIX (default
/usr/local/lib/pg_predict-bench/lightgbm, where scripts/install-lightgbm.sh puts it).
"""

import argparse
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "regress"))
from pgcluster import Cluster  # noqa: E402

NF = 28
FEATURES = [f"f{i}" for i in range(1, NF + 1)]
CACHE = os.path.join(HERE, ".cache", "deep_trees")
LIGHTGBM_PREFIX = os.environ.get("LIGHTGBM_PREFIX", "/usr/local/lib/pg_predict-bench/lightgbm")
DATA_RECIPE = "deep_trees-data-v1"  # change when make_data changes: the cache key includes it
CHECK_ROWS = 10000
TOLERANCE = 1e-5

# name: (library, training parameters; the number of trees comes from --trees)
MODELS = {
    "lgb31": ("lightgbm", {"objective": "binary", "num_leaves": 31, "learning_rate": 0.1}),
    "lgb255": ("lightgbm", {"objective": "binary", "num_leaves": 255, "learning_rate": 0.1}),
    "xgb_lossguide": ("xgboost", {"objective": "binary:logistic", "tree_method": "hist", "eta": 0.1,
                                  "grow_policy": "lossguide", "max_leaves": 255, "max_depth": 0}),
    "xgb_d12": ("xgboost", {"objective": "binary:logistic", "tree_method": "hist", "eta": 0.1,
                            "max_depth": 12}),
}
QUERY = "SELECT sum((predict_proba('{model}', h))[2]) FROM higgs h"
FLOOR = "SELECT sum(f1) FROM higgs"
SERIAL = {"max_parallel_workers_per_gather": "0"}
# pg_predict's variants: (key, label, settings, parallel plan expected)
VARIANTS = (
    ("t1", "pg_predict 1 thr", {**SERIAL, "pg_predict.threads": "1"}, False),
    ("t2", "pg_predict 2 thr", {**SERIAL, "pg_predict.threads": "2"}, False),
    ("w2", "pg_predict 2 workers", {"pg_predict.threads": "1", "max_parallel_workers_per_gather": "2",
                                    "parallel_setup_cost": "0", "parallel_tuple_cost": "0",
                                    "min_parallel_table_scan_size": "0",
                                    # "2 workers" is two processes (the leader only gathers), as in bench/run.py
                                    "parallel_leader_participation": "off"}, True),
    # pg_predict.bitvector_layout = off (US patent 11,106,685, docs/design.md): the generic walk
    ("t1g", "pg_predict 1 thr, no bitvector", {**SERIAL, "pg_predict.threads": "1",
                                               "pg_predict.bitvector_layout": "off"}, False),
    ("t2g", "pg_predict 2 thr, no bitvector", {**SERIAL, "pg_predict.threads": "2",
                                               "pg_predict.bitvector_layout": "off"}, False),
)


def log(msg):
    print(f"[deep_trees {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def import_lightgbm():
    if LIGHTGBM_PREFIX not in sys.path:
        sys.path.insert(0, LIGHTGBM_PREFIX)
    try:
        import lightgbm
    except ImportError as e:
        sys.exit(f"deep_trees: cannot import lightgbm from {LIGHTGBM_PREFIX} ({e}): "
                 "run `bash scripts/install-lightgbm.sh` first (or set LIGHTGBM_PREFIX)")
    return lightgbm


def make_data(rows):
    """rows x 28 float32 and a 0/1 label; the first n rows do not depend on `rows` (both
    generators fill in row order)."""
    X = np.random.default_rng(7).standard_normal((rows, NF), dtype=np.float32)
    X[:, 20:] = np.abs(X[:, 20:]) * 2  # a few skewed, "mass-like" columns (as kernel_bench_xgb.py)
    x = X.astype(np.float64)
    z = (x[:, 0] * x[:, 1] + np.sin(3 * x[:, 2]) + x[:, 21] - 0.5 * x[:, 25] + 0.8 * x[:, 5]
         - 0.6 * x[:, 9] * x[:, 13] + 0.4 * np.cos(x[:, 17]) - 0.7)
    u = np.random.default_rng(1).random(rows)
    y = (u < 1.0 / (1.0 + np.exp(-z))).astype(np.int32)
    return X, y


def copy_binary(conn, X, y, chunk=100_000):
    """COPY higgs FROM STDIN (FORMAT binary), built with numpy: every real is X's float32 bits."""
    fields = [("n", ">i2"), ("len_id", ">i4"), ("id", ">i4")]
    for f in FEATURES:
        fields += [(f"len_{f}", ">i4"), (f, ">f4")]
    fields += [("len_label", ">i4"), ("label", ">i4")]
    dtype = np.dtype(fields)
    with conn.cursor() as cur:
        with cur.copy("COPY higgs FROM STDIN (FORMAT binary)") as copy:
            copy.write(b"PGCOPY\n\xff\r\n\x00" + (0).to_bytes(4, "big") + (0).to_bytes(4, "big"))
            for start in range(0, X.shape[0], chunk):
                stop = min(start + chunk, X.shape[0])
                rec = np.empty(stop - start, dtype=dtype)
                rec["n"] = NF + 2
                for name in dtype.names:
                    if name.startswith("len_"):
                        rec[name] = 4
                rec["id"] = np.arange(start + 1, stop + 1)
                for j, f in enumerate(FEATURES):
                    rec[f] = X[start:stop, j]
                rec["label"] = y[start:stop]
                copy.write(rec.tobytes())
            copy.write((-1).to_bytes(2, "big", signed=True))


def train(name, lib, params, trees, Xt, yt, libs):
    """The model's text (LightGBM model.txt or XGBoost JSON), from the cache or trained now."""
    version = libs[lib].__version__
    key = hashlib.sha256()
    key.update(json.dumps([DATA_RECIPE, lib, version, params, trees], sort_keys=True).encode())
    key.update(Xt.tobytes())
    key.update(yt.tobytes())
    path = os.path.join(CACHE, f"{name}-{trees}t-{Xt.shape[0]}r-{key.hexdigest()[:16]}."
                        + ("txt" if lib == "lightgbm" else "json"))
    if os.path.exists(path):
        with open(path) as f:
            return f.read(), path, None
    threads = min(os.cpu_count() or 2, 2)
    t0 = time.perf_counter()
    if lib == "lightgbm":
        lgb = libs[lib]
        p = {**params, "num_iterations": trees, "num_threads": threads, "seed": 0, "verbose": -1}
        booster = lgb.train(p, lgb.Dataset(Xt, label=yt, feature_name=FEATURES))
        text = booster.model_to_string()
    else:
        xgb = libs[lib]
        p = {**params, "nthread": threads, "seed": 0}
        booster = xgb.train(p, xgb.DMatrix(Xt, label=yt, feature_names=FEATURES), num_boost_round=trees)
        text = booster.save_raw("json").decode()
    seconds = time.perf_counter() - t0
    os.makedirs(CACHE, exist_ok=True)
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)
    return text, path, seconds


def load_booster(lib, text, libs):
    if lib == "lightgbm":
        return libs[lib].Booster(model_str=text)
    booster = libs[lib].Booster()
    booster.load_model(bytearray(text.encode()))
    return booster


def library_predict(lib, booster, X, threads):
    """The library's probabilities for X (float32, already in memory) on `threads` threads."""
    if lib == "lightgbm":
        return booster.predict(X, num_threads=threads, raw_score=False)
    booster.set_param({"nthread": threads})
    return booster.inplace_predict(X)


def tree_shape(lib, text):
    """(trees, largest leaves per tree, mean leaves per tree, deepest leaf) of the model text."""
    leaves, depths = [], []
    if lib == "lightgbm":
        lefts = re.findall(r"^left_child=(.*)$", text, re.M)
        rights = re.findall(r"^right_child=(.*)$", text, re.M)
        for m in re.finditer(r"^num_leaves=(\d+)$", text, re.M):
            leaves.append(int(m.group(1)))
        for left, right in zip(lefts, rights):  # internal node i >= 0, leaf j as ~j
            depth, deepest = {0: 0}, 0
            for i, (l, r) in enumerate(zip(map(int, left.split()), map(int, right.split()))):
                for c in (l, r):  # parents come before their children
                    if c >= 0:
                        depth[c] = depth[i] + 1
                    else:
                        deepest = max(deepest, depth[i] + 1)
            depths.append(deepest)
        depths += [0] * (len(leaves) - len(depths))  # one-leaf trees have no child lines
    else:
        for tree in json.loads(text)["learner"]["gradient_booster"]["model"]["trees"]:
            left = tree["left_children"]
            leaves.append(sum(1 for c in left if c == -1))
            depth = [0] * len(left)
            for i, c in enumerate(left):  # parents come before their children
                if c != -1:
                    depth[c] = depth[tree["right_children"][i]] = depth[i] + 1
            depths.append(max(depth))
    return {"trees": len(leaves), "max_leaves": max(leaves), "mean_leaves": round(statistics.mean(leaves), 1),
            "max_depth": max(depths) if depths else None}


def timed(conn, sql):
    start = time.perf_counter()
    value = conn.execute(sql).fetchone()[0]
    return time.perf_counter() - start, value


def apply(conn, settings):
    for name, value in settings.items():
        conn.execute(f"SET {name} = {value}")


def git_commit():
    try:
        rev = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", HERE, "diff", "--quiet", "HEAD"]).returncode != 0
        return rev + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def fmt_s(v):
    return "—" if v is None else f"{v:.3f} s"


def fmt_x(a, b):
    return "—" if a is None or b is None else f"{a / b:.2f}×"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--train-rows", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--trees", type=int, default=500, help="trees (boosting rounds) per model; fewer for smoke runs")
    parser.add_argument("--only", default=None, help="regex on the model name (lgb31, lgb255, xgb_lossguide, xgb_d12)")
    parser.add_argument("--keep-cluster", action="store_true")
    args = parser.parse_args()
    names = [n for n in MODELS if args.only is None or re.search(args.only, n)]
    if not names:
        sys.exit(f"deep_trees: --only {args.only!r} matches none of {', '.join(MODELS)}")
    train_rows = min(args.train_rows, args.rows)

    libs = {}
    if any(MODELS[n][0] == "lightgbm" for n in names):
        libs["lightgbm"] = import_lightgbm()
    if any(MODELS[n][0] == "xgboost" for n in names):
        import xgboost
        libs["xgboost"] = xgboost
    load = [os.getloadavg()[0]]

    log(f"data: {args.rows:,} rows x {NF} float32")
    X, y = make_data(args.rows)
    models = {}
    for name in names:
        lib, params = MODELS[name]
        text, path, seconds = train(name, lib, params, args.trees, X[:train_rows], y[:train_rows], libs)
        log(f"{name}: {'trained in %.1f s' % seconds if seconds is not None else 'cached'} ({os.path.relpath(path)})")
        models[name] = {"lib": lib, "text": text, "booster": load_booster(lib, text, libs),
                        "shape": tree_shape(lib, text), "train_s": seconds}

    settings = {"shared_buffers": "512MB", "jit": "off", "max_worker_processes": "16",
                "max_parallel_workers": "8"}
    cluster = Cluster(settings=settings, prefix="pgp-deep-trees-", keep=args.keep_cluster)
    failed = []
    try:
        cluster.start()
        with cluster.connect() as conn:
            conn.execute("CREATE EXTENSION pg_predict")
            cols = ", ".join(f"{f} real NOT NULL" for f in FEATURES)
            conn.execute(f"CREATE UNLOGGED TABLE higgs (id int NOT NULL, {cols}, label int NOT NULL)")
            t0 = time.perf_counter()
            copy_binary(conn, X, y)
            conn.execute("VACUUM (FREEZE, ANALYZE) higgs")
            log(f"loaded higgs in {time.perf_counter() - t0:.1f} s")
            for name in names:
                m = models[name]
                t0 = time.perf_counter()
                if m["lib"] == "lightgbm":
                    conn.execute("SELECT create_model(%s, %s::text)", (name, m["text"]))
                else:
                    conn.execute("SELECT create_model(%s, %s::jsonb)", (name, m["text"]))
                m["create_model_s"] = time.perf_counter() - t0
                row = conn.execute("SELECT format, trees, depth, strategy FROM models WHERE name = %s", (name,)).fetchone()
                m["catalog"] = dict(zip(("format", "trees", "depth", "strategy"), (str(v) for v in row)))

            # Exactness: the first CHECK_ROWS rows against the library's own predictions.
            n = min(CHECK_ROWS, args.rows)
            for name in names:
                m = models[name]
                apply(conn, VARIANTS[0][2])
                got = np.array([r[0] for r in conn.execute(
                    f"SELECT (predict_proba('{name}', h))[2] FROM higgs h WHERE id <= {n} ORDER BY id").fetchall()])
                want = np.asarray(library_predict(m["lib"], m["booster"], X[:n], 1), dtype=np.float64)
                m["max_abs_diff"] = float(np.max(np.abs(got - want)))
                if not m["max_abs_diff"] <= TOLERANCE:
                    failed.append(f"{name}: max abs difference {m['max_abs_diff']:.3g} over the first {n} rows")

            # The plans: PredictBatch in each variant, a Gather only in the workers' one.
            for name in names:
                for key, _, sets, parallel in VARIANTS:
                    conn.execute("RESET ALL")
                    apply(conn, sets)
                    plan = "\n".join(r[0] for r in conn.execute("EXPLAIN (COSTS OFF) " + QUERY.format(model=name)).fetchall())
                    assert "PredictBatch" in plan, plan
                    assert ("Gather" in plan) == parallel, f"{name} {key}: {plan}"
                    if parallel:
                        models[name]["parallel_plan"] = plan

            # Warm: the pages in shared buffers, each model loaded in this backend, the thread pools.
            conn.execute("RESET ALL")
            apply(conn, SERIAL)
            timed(conn, FLOOR)
            for name in names:
                m = models[name]
                for key, _, sets, _ in VARIANTS:
                    conn.execute("RESET ALL")
                    apply(conn, sets)
                    conn.execute(QUERY.format(model=name) + f" WHERE id <= {n}").fetchone()
                for t in (1, 2):
                    library_predict(m["lib"], m["booster"], X[:n], t)

            times = {"floor": []}
            for name in names:
                for key in ("lib1", "lib2") + tuple(v[0] for v in VARIANTS):
                    times[f"{name}.{key}"] = []
            sums = {}
            for run in range(args.runs):
                conn.execute("RESET ALL")
                apply(conn, SERIAL)
                times["floor"].append(timed(conn, FLOOR)[0])
                for name in names:
                    m = models[name]
                    for t in (1, 2):
                        start = time.perf_counter()
                        p = library_predict(m["lib"], m["booster"], X, t)
                        times[f"{name}.lib{t}"].append(time.perf_counter() - start)
                        sums[f"{name}.lib{t}"] = float(np.sum(p, dtype=np.float64))
                    for key, _, sets, _ in VARIANTS:
                        conn.execute("RESET ALL")
                        apply(conn, sets)
                        seconds, value = timed(conn, QUERY.format(model=name))
                        times[f"{name}.{key}"].append(seconds)
                        sums[f"{name}.{key}"] = float(value)
                log(f"run {run + 1}/{args.runs} done")
            load.append(os.getloadavg()[0])
            for name in names:
                lib_sum = sums[f"{name}.lib1"]
                for key, _, _, _ in VARIANTS:
                    # The sum of the probabilities, in any order of addition.
                    if abs(sums[f"{name}.{key}"] - lib_sum) > TOLERANCE * args.rows:
                        failed.append(f"{name} {key}: sum {sums[f'{name}.{key}']} against the library's {lib_sum}")
    finally:
        if cluster.started:
            cluster.stop()

    med = {k: statistics.median(v) for k, v in times.items()}
    versions = {lib: mod.__version__ for lib, mod in libs.items()}
    lib_label = {"lightgbm": f"LightGBM {versions.get('lightgbm')} Booster.predict",
                 "xgboost": f"XGBoost {versions.get('xgboost')} inplace_predict"}
    print(f"\n{args.rows:,} rows x {NF} float32, models trained on {train_rows:,} rows, median of {args.runs} "
          f"run(s), {os.cpu_count()} cores, load {min(load):.2f}-{max(load):.2f}, commit {git_commit()}\n")
    print("| model | trees / leaves (max, mean) / depth | library | library 1 thr | library 2 thr | pg_predict 1 thr "
          "| pg_predict 2 thr | pg_predict 2 workers | x lib 1 thr | x lib 2 thr | 2 workers x lib 2 thr | max abs diff "
          "| no bitvector 1 thr | no bitvector 2 thr | no bitvector / bitvector, 1 thr | 2 thr |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in names:
        m, s = models[name], models[name]["shape"]
        get = lambda key: med.get(f"{name}.{key}")  # noqa: E731
        print(f"| {name} | {s['trees']} / {s['max_leaves']}, {s['mean_leaves']} / {s['max_depth']} "
              f"| {lib_label[m['lib']]} | {fmt_s(get('lib1'))} | {fmt_s(get('lib2'))} | {fmt_s(get('t1'))} "
              f"| {fmt_s(get('t2'))} | {fmt_s(get('w2'))} | {fmt_x(get('t1'), get('lib1'))} "
              f"| {fmt_x(get('t2'), get('lib2'))} | {fmt_x(get('w2'), get('lib2'))} | {m['max_abs_diff']:.2g} "
              f"| {fmt_s(get('t1g'))} | {fmt_s(get('t2g'))} | {fmt_x(get('t1g'), get('t1'))} | {fmt_x(get('t2g'), get('t2'))} |")
    print(f"| scan floor: `{FLOOR}` | | | | | {fmt_s(med['floor'])} | | | | | | | | | | |")
    print()
    print("pg_predict: `" + QUERY.format(model="<model>") + "`; 2 workers: pg_predict.threads = 1 in each of 2 "
          "parallel workers (forced Gather, parallel_leader_participation = off); x lib: pg_predict / library at the "
          "same thread count (< 1: pg_predict is faster); max abs diff: probabilities of the first "
          f"{min(CHECK_ROWS, args.rows):,} rows against the library's.")
    for problem in failed:
        print(f"FAIL: {problem}")
    print(json.dumps({
        "bench": "deep_trees", "rows": args.rows, "train_rows": train_rows, "runs": args.runs, "trees": args.trees,
        "cpus": os.cpu_count(), "load": load, "commit": git_commit(), "versions": versions,
        "median_s": med, "seconds": times,
        "models": {n: {"library": models[n]["lib"], "params": MODELS[n][1], "shape": models[n]["shape"],
                       "catalog": models[n]["catalog"], "train_s": models[n]["train_s"],
                       "create_model_s": round(models[n]["create_model_s"], 3),
                       "max_abs_diff": models[n]["max_abs_diff"]} for n in names},
        "failed": failed}))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
