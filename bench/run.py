#!/usr/bin/python3
"""pg_predict benchmark: one command, one run, every row side by side.

    /usr/bin/python3 bench/run.py             # 1M rows (make bench)
    /usr/bin/python3 bench/run.py --quick     # 100k rows smoke run

Starts a throwaway PostgreSQL 15 cluster (regress/pgcluster.py), generates the data in it,
trains the models with XGBoost, loads them with create_model, measures, and writes
bench/results/<timestamp>.{md,json}, bench/results/latest.md and bench/results/latest.png.
See bench/README.md for what each row means. Never fails because of a target: the targets are
printed as PASS/FAIL lines for information; the exit status is non-zero only when the bench
itself could not run.
"""

import argparse
import datetime as dt
import hashlib
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "regress"))
from pgcluster import Cluster  # noqa: E402

PY = "/usr/bin/python3"
NF = 28            # higgs features f1..f28
NW = 200           # wide columns c1..c200
WIDE_FEATURES = [f"c{i}" for i in range(1, 11)]
HIGGS_FEATURES = [f"f{i}" for i in range(1, NF + 1)]
STRATEGIES = ["auto", "native", "perfect_tree_traversal", "tree_traversal", "gemm"]
SEED = 0.42

# ----------------------------------------------------------------------------------------------
# small helpers


def log(msg):
    print(msg, flush=True)


def nice_size(n):
    """Round n down to 1, 2 or 5 times a power of ten (sample tables get reused)."""
    if n <= 1:
        return 1
    p = 10 ** int(math.floor(math.log10(n)))
    for m in (5, 2, 1):
        if m * p <= n:
            return m * p
    return p


def fmt_s(x):
    if x is None:
        return ""
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    if x >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"


def fmt_rate(x):
    if x is None:
        return ""
    if x >= 1e6:
        return f"{x / 1e6:.2f} M"
    if x >= 1e3:
        return f"{x / 1e3:.1f} k"
    return f"{x:.0f}"


def fmt_ratio(x):
    if x is None:
        return ""
    return f"{x:.2f}x" if x < 100 else f"{x:.0f}x"


def proc_status(pid):
    """{'RssAnon': kB, 'VmHWM': kB, ...} of a process, {} if it is gone."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                v = v.strip()
                if v.endswith(" kB"):
                    out[k] = int(v[:-3])
    except OSError:
        pass
    return out


def parallel_workers_of(leader_pid):
    """pids of the parallel workers serving a backend (their title names the leader)."""
    pids = []
    tag = f"parallel worker for PID {leader_pid}".encode()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                if tag in f.read():
                    pids.append(int(d))
        except OSError:
            pass
    return pids


def proc_cpu_ticks(pid):
    """utime + stime of a process (all its threads), in clock ticks; None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


class MemWatch:
    """Samples, every 20 ms, the private (anonymous) resident memory of a process and of its
    parallel workers; .peak_mb is the largest sum seen. Shared buffers are left out on purpose:
    a scan touching shared_buffers would otherwise count as backend memory. Also accounts the
    CPU time (user + system, all threads, workers included) spent after mark()."""

    def __init__(self, pid, workers=False, interval=0.02):
        self.pid, self.workers, self.interval = pid, workers, interval
        self.peak_kb = 0
        self.ticks = {}      # pid -> last seen cpu ticks
        self.base = {}       # pid -> ticks at mark()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _sample(self):
        pids = [self.pid] + (parallel_workers_of(self.pid) if self.workers else [])
        total = 0
        for p in pids:
            total += proc_status(p).get("RssAnon", 0)
            c = proc_cpu_ticks(p)
            if c is not None:
                with self._lock:
                    self.ticks[p] = c
        self.peak_kb = max(self.peak_kb, total)

    def _run(self):
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval)

    def mark(self):
        """Start the CPU account here (after the warm-up). Workers seen so far are excluded."""
        self._sample()
        with self._lock:
            self.base = dict(self.ticks)

    def cpu_seconds(self, sample=False):
        if sample:
            self._sample()
        with self._lock:
            ticks = sum(v - self.base.get(p, 0) for p, v in self.ticks.items())
        return ticks / os.sysconf("SC_CLK_TCK")

    def __enter__(self):
        self._sample()
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()
        self._sample()

    @property
    def peak_mb(self):
        return self.peak_kb / 1024.0


def copy_matrix(conn, select_sql, ncols):
    """Run COPY (select) TO STDOUT in binary and return an [N x ncols] float32 array.
    Every selected column must be `real` and non-NULL. Binary keeps the float32 bits exact."""
    chunks = []
    with conn.cursor().copy(f"COPY ({select_sql}) TO STDOUT (FORMAT binary)") as cp:
        for chunk in cp:
            chunks.append(bytes(chunk))
    buf = b"".join(chunks)
    assert buf[:11] == b"PGCOPY\n\xff\r\n\x00", "unexpected COPY header"
    ext = int.from_bytes(buf[15:19], "big")
    body = memoryview(buf)[19 + ext: len(buf) - 2]
    fields = [("n", ">i2")]
    for i in range(ncols):
        fields += [(f"l{i}", ">i4"), (f"v{i}", ">f4")]
    rec = np.frombuffer(body, dtype=np.dtype(fields))
    if len(rec) and (not (rec["n"] == ncols).all()
                     or not all((rec[f"l{i}"] == 4).all() for i in range(ncols))):
        raise RuntimeError("COPY: unexpected NULL or column count")
    X = np.empty((len(rec), ncols), dtype=np.float32)
    for i in range(ncols):
        X[:, i] = rec[f"v{i}"]
    return X


# ----------------------------------------------------------------------------------------------
# data


def higgs_sql(n):
    """One INSERT ... SELECT: 21 'low-level' columns (momenta ~ exponential, angles ~ uniform,
    pseudo-rapidities ~ normal), 7 'high-level' columns derived from them (as in HIGGS), a
    continuous target and a 0/1 label drawn from a logistic model of the features."""
    low = []
    for i in range(1, 22):
        if i % 3 == 1:
            e = "-ln(1.0 - random())"                                 # momentum-like, >= 0
        elif i % 3 == 2:
            e = "(random() + random() + random() - 1.5) * 2.0"        # ~ normal(0, 1)
        else:
            e = "random() * 6.2832 - 3.1416"                          # angle
        low.append(f"({e})::real AS f{i}")
    high = [
        "sqrt(f1 * f4)::real AS f22",
        "(f2 - f5 + 0.1 * (random() - 0.5))::real AS f23",
        "(f7 * cos(f3 - f6))::real AS f24",
        "(f10 + f13 + f16)::real AS f25",
        "abs(f8 - f11)::real AS f26",
        "ln(1.0 + f19 * f1)::real AS f27",
        "(f1 * f2 + f4 * f5)::real AS f28",
    ]
    z = ("(1.2 * f22 - 0.8 * f1 + sin(f3) * f2 - 0.3 * f25 + (f26 > 1.0)::int"
         " - 0.4 * f28 + 0.6 * f24 * f14 - 0.5 * f17 + 0.3 * f20 * f23 + 0.4 * cos(f12) - 0.6)")
    low_cols = ", ".join(f"f{i}" for i in range(1, 22))
    all_cols = ", ".join(HIGGS_FEATURES)
    return f"""
INSERT INTO higgs (id, {all_cols}, label, target)
SELECT id, {all_cols}, (random() < 1.0 / (1.0 + exp(-z)))::int, (z + 0.2 * (random() - 0.5))::real
  FROM (SELECT id, {all_cols}, {z} AS z
          FROM (SELECT id, {low_cols}, {", ".join(high)}
                  FROM (SELECT g AS id, {", ".join(low)}
                          FROM generate_series(1, {n}) g OFFSET 0) a
                OFFSET 0) b
        OFFSET 0) c"""


def wide_sql(n):
    cols = ", ".join(f"c{i}" for i in range(1, NW + 1))
    gen = ", ".join(f"random()::real AS c{i}" for i in range(1, NW + 1))
    z = ("(3.0 * (c1 - 0.5) + 4.0 * c2 * c3 - 2.0 * c4 + sin(6.0 * c5) + 2.0 * (c6 > c7)::int"
         " - 1.5 * c8 * c8 + c9 - c10 - 0.7)")
    return f"""
INSERT INTO wide (id, {cols}, label)
SELECT id, {cols}, (random() < 1.0 / (1.0 + exp(-{z})))::int
  FROM (SELECT g AS id, {gen} FROM generate_series(1, {n}) g OFFSET 0) a"""


CUSTOMER_NUMERIC = ["age", "income", "tenure", "visits", "score", "rate"]
CUSTOMER_TEXT = ["city", "plan", "channel"]
CUSTOMER_COLUMNS = CUSTOMER_NUMERIC + CUSTOMER_TEXT


def customers_sql(n):
    """A churn-like table for the scikit-learn pipeline: six numeric columns (score NULL in
    ~5% of the rows), three text columns (channel NULL in ~5%), a 0/1 label."""
    cities = "ARRAY['berlin','madrid','oslo','paris','rome','lisbon','vienna','prague']"
    return f"""
INSERT INTO customers (id, age, income, tenure, visits, score, rate, city, plan, channel, label)
SELECT id, age, income, tenure, visits, score, rate, city, plan, channel,
       (random() < 1.0 / (1.0 + exp(-(0.04 * (age - 40) + 0.5 * (ln(income) - 10)
          + 0.3 * (visits - 3) - sin(2 * coalesce(score, 0)) - 0.02 * (tenure - 36)
          + CASE plan WHEN 'pro' THEN 1.0 WHEN 'plus' THEN 0.3 WHEN 'basic' THEN -0.6
                      ELSE 0 END
          + CASE WHEN city IN ('berlin', 'oslo', 'vienna') THEN 0.5 ELSE -0.3 END))))::int
  FROM (SELECT g AS id,
               (18 + 60 * random())::real AS age,
               exp(9 + 2 * random())::real AS income,
               floor(72 * random())::real AS tenure,
               floor(8 * random())::real AS visits,
               CASE WHEN random() < 0.05 THEN NULL
                    ELSE ((random() + random() + random() - 1.5) * 2)::real END AS score,
               random()::real AS rate,
               ({cities})[1 + floor(8 * random())::int] AS city,
               (ARRAY['basic','basic','plus','pro','enterprise'])[1 + floor(5 * random())::int]
                 AS plan,
               CASE WHEN random() < 0.05 THEN NULL
                    ELSE (ARRAY['email','phone','web'])[1 + floor(3 * random())::int] END
                 AS channel
          FROM generate_series(1, {n}) g OFFSET 0) a"""


def copy_frame(conn, select_sql, columns):
    """COPY (select) TO STDOUT as text into a DataFrame (NULL → NaN). PostgreSQL writes a real
    in its shortest exact form, so numbers arrive as the float32 values stored."""
    import io
    import pandas as pd
    buf = io.BytesIO()
    with conn.cursor().copy(f"COPY ({select_sql}) TO STDOUT") as cp:
        for chunk in cp:
            buf.write(bytes(chunk))
    buf.seek(0)
    return pd.read_csv(buf, sep="\t", header=None, names=columns, na_values=["\\N"],
                       keep_default_na=False, quoting=3)


def generate(conn, n, info):
    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    cols = ", ".join(f"f{i} real NOT NULL" for i in range(1, NF + 1))
    conn.execute(f"CREATE UNLOGGED TABLE higgs (id int NOT NULL, {cols}, label int NOT NULL,"
                 " target real NOT NULL)")
    wcols = ", ".join(f"c{i} real NOT NULL" for i in range(1, NW + 1))
    conn.execute(f"CREATE UNLOGGED TABLE wide (id int NOT NULL, {wcols}, label int NOT NULL)")
    conn.execute("CREATE UNLOGGED TABLE customers (id int NOT NULL, age real NOT NULL, "
                 "income real NOT NULL, tenure real NOT NULL, visits real NOT NULL, score real, "
                 "rate real NOT NULL, city text NOT NULL, plan text NOT NULL, channel text, "
                 "label int NOT NULL)")
    for name, sql in (("higgs", higgs_sql(n)), ("wide", wide_sql(n)),
                      ("customers", customers_sql(n))):
        t0 = time.perf_counter()
        conn.execute("SELECT setseed(%s)", (SEED,))
        conn.execute(sql)
        t1 = time.perf_counter()
        conn.execute(f"VACUUM (FREEZE, ANALYZE) {name}")
        conn.execute(f"SELECT pg_prewarm('{name}')")
        t2 = time.perf_counter()
        size = conn.execute(f"SELECT pg_size_pretty(pg_table_size('{name}'))").fetchone()[0]
        info[f"{name}_generate_s"] = round(t1 - t0, 2)
        info[f"{name}_vacuum_s"] = round(t2 - t1, 2)
        info[f"{name}_size"] = size
        log(f"  {name}: {n} rows, {size}, generated in {t1 - t0:.1f}s, "
            f"vacuum+prewarm {t2 - t1:.1f}s")
    pos = conn.execute("SELECT avg(label) FROM higgs").fetchone()[0]
    wpos = conn.execute("SELECT avg(label) FROM wide").fetchone()[0]
    info["higgs_label_mean"] = round(float(pos), 4)
    info["wide_label_mean"] = round(float(wpos), 4)
    log(f"  label mean: higgs {pos:.3f}, wide {wpos:.3f}")


class Samples:
    """Sample tables: the first n rows (ids 1..n) of a table, created on demand, cached.
    Rows that would take too long on the whole table are measured on one and extrapolated."""

    def __init__(self, conn, sizes):
        self.conn, self.sizes, self.made = conn, sizes, set()

    def table(self, base, n):
        if n >= self.sizes[base]:
            return base
        name = f"{base}_s{n}"
        if name not in self.made:
            self.conn.execute(f"DROP TABLE IF EXISTS {name}")
            self.conn.execute(f"CREATE UNLOGGED TABLE {name} AS SELECT * FROM {base} "
                              f"WHERE id <= {n} ORDER BY id")
            self.conn.execute(f"VACUUM (FREEZE, ANALYZE) {name}")
            self.made.add(name)
        return name


# ----------------------------------------------------------------------------------------------
# models


MODELS = {
    # name: (table, features, params, rounds, label column)
    "m500": ("higgs", HIGGS_FEATURES,
             {"objective": "binary:logistic", "max_depth": 8, "eta": 0.1}, 500, "label"),
    "m100": ("higgs", HIGGS_FEATURES,
             {"objective": "binary:logistic", "max_depth": 3, "eta": 0.3}, 100, "label"),
    "reg200": ("higgs", HIGGS_FEATURES,
               {"objective": "reg:squarederror", "max_depth": 6, "eta": 0.1}, 200, "target"),
    "stump": ("higgs", HIGGS_FEATURES,
              {"objective": "binary:logistic", "max_depth": 1, "eta": 0.3}, 1, "label"),
    "wide10": ("wide", WIDE_FEATURES,
               {"objective": "binary:logistic", "max_depth": 6, "eta": 0.2}, 100, "label"),
}


def train_models(data, train_rows, workdir, info):
    """Train every model on the first train_rows rows; cached in bench/.cache by a hash of the
    training data and parameters (the data is deterministic, so reruns skip training)."""
    import xgboost as xgb
    cache = os.path.join(HERE, ".cache")
    os.makedirs(cache, exist_ok=True)
    paths = {}
    for name, (table, feats, params, rounds, ycol) in MODELS.items():
        X = data[table]["X"][:train_rows]
        y = data[table][ycol][:train_rows]
        p = dict(params, tree_method="hist", nthread=os.cpu_count() or 2, seed=0)
        h = hashlib.sha1()
        h.update(X.tobytes())
        h.update(y.tobytes())
        h.update(json.dumps([feats, p, rounds, xgb.__version__], sort_keys=True).encode())
        path = os.path.join(cache, f"{name}-{h.hexdigest()[:16]}.json")
        if os.path.exists(path):
            log(f"  {name}: cached ({os.path.basename(path)})")
            info[f"{name}_train_s"] = "cached"
        else:
            t0 = time.perf_counter()
            d = xgb.DMatrix(X, label=y, feature_names=feats)
            bst = xgb.train(p, d, rounds)
            bst.save_model(path + ".tmp.json")
            os.replace(path + ".tmp.json", path)
            info[f"{name}_train_s"] = round(time.perf_counter() - t0, 1)
            log(f"  {name}: trained {rounds} trees depth {params['max_depth']} on "
                f"{len(y)} rows in {time.perf_counter() - t0:.1f}s")
        paths[name] = path
    return paths


# scikit-learn models: name -> (table, what). Trained by train_sklearn_models, deployed with the
# Python client (python/pg_predict), measured against the estimator's own predict.
SKLEARN_MODELS = {
    "pipe": ("customers", "scikit-learn pipeline: imputer + scaler, one-hot of 3 text columns, "
                          "SelectKBest(12), LogisticRegression"),
    "rf100": ("higgs", "scikit-learn RandomForestClassifier, 100 trees, max_depth 10"),
    "svc": ("customers", "the pipeline's ColumnTransformer, then SVC(kernel='rbf')"),
    "mlp": ("customers", "the pipeline's ColumnTransformer, then MLPClassifier(100 hidden)"),
}
# Kernel SVMs fit in O(n^2): fewer rows (the support vectors, and so the cost of predicting,
# grow with them).
SKLEARN_TRAIN_ROWS = {"svc": 3000, "mlp": 20000}


def sklearn_estimator(name):
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.feature_selection import SelectKBest, f_classif
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    from sklearn.neural_network import MLPClassifier
    from sklearn.svm import SVC

    def columns():
        return ColumnTransformer([
            ("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()),
             CUSTOMER_NUMERIC),
            ("text", make_pipeline(SimpleImputer(strategy="constant", fill_value="none"),
                                   OneHotEncoder(handle_unknown="ignore")), CUSTOMER_TEXT),
        ])
    if name == "pipe":
        return make_pipeline(columns(), SelectKBest(f_classif, k=12),
                             LogisticRegression(max_iter=1000))
    if name == "svc":
        return make_pipeline(columns(), SVC(kernel="rbf"))
    if name == "mlp":
        return make_pipeline(columns(), MLPClassifier(hidden_layer_sizes=(100,), max_iter=60,
                                                      random_state=0))
    return RandomForestClassifier(n_estimators=100, max_depth=10, n_jobs=os.cpu_count() or 2,
                                  random_state=0)


def train_sklearn_models(data, train_rows, info):
    """Fit the scikit-learn models on the first train_rows rows; cached in bench/.cache like
    the XGBoost models (joblib files keyed by a hash of the data and the estimator)."""
    import joblib
    import sklearn
    cache = os.path.join(HERE, ".cache")
    os.makedirs(cache, exist_ok=True)
    paths = {}
    for name, (table, what) in SKLEARN_MODELS.items():
        rows = min(train_rows, SKLEARN_TRAIN_ROWS.get(name, train_rows))
        X = data[table]["X"][:rows]
        y = data[table]["label"][:rows]
        est = sklearn_estimator(name)
        h = hashlib.sha1()
        h.update(pd_bytes(X))
        h.update(np.asarray(y).tobytes())
        h.update(json.dumps([repr(est), sklearn.__version__]).encode())
        path = os.path.join(cache, f"{name}-{h.hexdigest()[:16]}.joblib")
        if os.path.exists(path):
            log(f"  {name}: cached ({os.path.basename(path)})")
            info[f"{name}_train_s"] = "cached"
        else:
            t0 = time.perf_counter()
            est.fit(X, y)
            joblib.dump(est, path + ".tmp")
            os.replace(path + ".tmp", path)
            info[f"{name}_train_s"] = round(time.perf_counter() - t0, 1)
            log(f"  {name}: {what}, trained on {len(y)} rows in {time.perf_counter() - t0:.1f}s")
        paths[name] = path
    return paths


def pd_bytes(X):
    """Bytes of a numpy array or a DataFrame, for hashing."""
    if isinstance(X, np.ndarray):
        return X.tobytes()
    return X.to_csv(index=False).encode()


def deploy_sklearn_models(conn, paths, info):
    import joblib
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import pg_predict
    for name, path in paths.items():
        est = joblib.load(path)
        t0 = time.perf_counter()
        # the forest is fitted on a numpy matrix: name its inputs after the table's columns
        names = HIGGS_FEATURES if SKLEARN_MODELS[name][0] == "higgs" else None
        pg_predict.deploy(conn, name, est, feature_names=names)
        info[f"{name}_create_model_s"] = round(time.perf_counter() - t0, 2)
        r = conn.execute("SELECT trees, depth, columns, program_bytes FROM models WHERE name = %s",
                         (name,)).fetchone()
        log(f"  {name}: deployed in {info[f'{name}_create_model_s']}s, {r[0]} trees, depth {r[1]},"
            f" reads {r[2]}, program {r[3]} bytes")


def load_models(conn, paths, info):
    conn.execute("CREATE TABLE bench_model_json (name text PRIMARY KEY, model text NOT NULL,"
                 " objective text NOT NULL)")
    for name, path in paths.items():
        with open(path) as f:
            js = f.read()
        t0 = time.perf_counter()
        conn.execute("SELECT create_model(%s, %s::jsonb)", (name, js))
        info[f"{name}_create_model_s"] = round(time.perf_counter() - t0, 2)
        conn.execute("INSERT INTO bench_model_json VALUES (%s, %s, %s)",
                     (name, js, MODELS[name][2]["objective"]))
    rows = conn.execute("SELECT name, trees, depth, strategy, program_bytes FROM models "
                        "ORDER BY name").fetchall()
    info["models"] = [dict(zip(("name", "trees", "depth", "strategy", "program_bytes"), r))
                      for r in rows]
    for r in rows:
        log(f"  {r[0]}: {r[1]} trees, depth {r[2]}, strategy {r[3]}, program {r[4]} bytes, "
            f"create_model {info[f'{r[0]}_create_model_s']}s")


PLPY = r"""
CREATE EXTENSION IF NOT EXISTS plpython3u;

-- The model is loaded once per backend (GD cache), then one call per row.
CREATE FUNCTION py_predict_row(model text, nthread int, f real[]) RETURNS float8 AS $$
import numpy as np
st = GD.get(model)
if st is None:
    import xgboost as xgb
    plan = plpy.prepare("SELECT model, objective FROM bench_model_json WHERE name = $1", ["text"])
    r = plpy.execute(plan, [model])[0]
    bst = xgb.Booster()
    bst.load_model(bytearray(r["model"], "utf-8"))
    st = GD[model] = {"bst": bst, "clf": r["objective"].startswith("binary:"), "nthread": None}
if st["nthread"] != nthread:
    st["bst"].set_param({"nthread": nthread})
    st["nthread"] = nthread
p = float(st["bst"].inplace_predict(np.asarray(f, dtype=np.float32).reshape(1, -1))[0])
return float(p > 0.5) if st["clf"] else p
$$ LANGUAGE plpython3u STABLE;

-- The PostgresML-documented pattern: array_agg the rows, one call, a numpy matrix, one predict.
CREATE FUNCTION py_predict_batch(model text, nthread int, m real[]) RETURNS float8[] AS $$
import numpy as np
st = GD.get(model)
if st is None:
    import xgboost as xgb
    plan = plpy.prepare("SELECT model, objective FROM bench_model_json WHERE name = $1", ["text"])
    r = plpy.execute(plan, [model])[0]
    bst = xgb.Booster()
    bst.load_model(bytearray(r["model"], "utf-8"))
    st = GD[model] = {"bst": bst, "clf": r["objective"].startswith("binary:"), "nthread": None}
if st["nthread"] != nthread:
    st["bst"].set_param({"nthread": nthread})
    st["nthread"] = nthread
X = np.asarray(m, dtype=np.float32)
p = st["bst"].inplace_predict(X)
if st["clf"]:
    p = (p > 0.5).astype(np.float64)
return p.tolist()
$$ LANGUAGE plpython3u STABLE;
"""


# ----------------------------------------------------------------------------------------------
# the rows


class Row:
    def __init__(self, key, group, label, kind, table, sql=None, model=None, threads=1,
                 workers=0, strategy=None, batched=None, native=None, key_row=False):
        self.key, self.group, self.label, self.kind = key, group, label, kind
        self.table, self.sql, self.model = table, sql, model
        self.threads, self.workers, self.strategy = threads, workers, strategy
        self.batched = batched          # True: needs enable_batching on; False: off
        self.native = native            # for kind 'native': dict(data=, classifier=)
        self.key_row = key_row          # a target depends on it: whole table up to --key-max-seconds
        self.r = {"status": "pending"}  # results

    @property
    def cmp_threads(self):
        """Thread count to compare with XGBoost native: threads, or the number of workers."""
        return self.workers if self.workers else self.threads


def predict_sql(model, alias="h"):
    return f"SELECT sum(predict('{model}', {alias})) FROM {{T}} {alias}"


def build_rows(threads):
    feats = ", ".join(HIGGS_FEATURES)
    rows = []
    A = rows.append
    # -- the 500-tree model, the main event
    A(Row("floor", "m500", "scan floor: sum(f1+...+f28)", "floor", "higgs",
          "SELECT sum(" + " + ".join(HIGGS_FEATURES) + ") FROM {T}"))
    for s in STRATEGIES:
        for t in threads:
            A(Row(f"m500.batched.{s}.t{t}", "m500", f"pg_predict batched, {s}, {t} thr",
                  "batched", "higgs", predict_sql("m500"), "m500", threads=t, strategy=s,
                  batched=True))
    for w in (1, 2):
        A(Row(f"m500.batched.auto.w{w}", "m500",
              f"pg_predict batched, auto, {w} parallel worker{'s' if w > 1 else ''}",
              "batched", "higgs", predict_sql("m500"), "m500", threads=1, workers=w,
              strategy="auto", batched=True))
    for t in threads:
        A(Row(f"m500.perrow.auto.t{t}", "m500", f"pg_predict per-row, auto, {t} thr",
              "per-row", "higgs", predict_sql("m500"), "m500", threads=t, strategy="auto",
              batched=False))
    for s in STRATEGIES[1:]:
        A(Row(f"m500.perrow.{s}.t1", "m500", f"pg_predict per-row, {s}, 1 thr",
              "per-row", "higgs", predict_sql("m500"), "m500", threads=1, strategy=s,
              batched=False))
    for w in (1, 2):
        A(Row(f"m500.perrow.auto.w{w}", "m500",
              f"pg_predict per-row, auto, {w} parallel worker{'s' if w > 1 else ''}",
              "per-row", "higgs", predict_sql("m500"), "m500", threads=1, workers=w,
              strategy="auto", batched=False))
    for t in threads:
        A(Row(f"m500.native.t{t}", "m500", f"XGBoost native, {t} thr", "native", "higgs",
              model="m500", threads=t, native={"data": "higgs", "classifier": True}))
    A(Row("m500.plpy_row.t1", "m500", "PL/Python row-wise, 1 thr", "plpy-row", "higgs",
          f"SELECT sum(py_predict_row('m500', 1, ARRAY[{feats}])) FROM {{T}}", "m500"))
    for t in threads:
        A(Row(f"m500.plpy_batch.t{t}", "m500", f"PL/Python batched (array_agg), {t} thr",
              "plpy-batch", "higgs",
              f"SELECT sum(p) FROM unnest(py_predict_batch('m500', {t}, "
              f"(SELECT array_agg(ARRAY[{feats}]) FROM {{T}}))) p", "m500", threads=t))
    # -- the small models
    for m, what in (("m100", "100 trees depth 3"), ("reg200", "regressor 200 trees depth 6")):
        for t in threads:
            A(Row(f"{m}.batched.auto.t{t}", m, f"{m} ({what}) batched, {t} thr", "batched",
                  "higgs", predict_sql(m), m, threads=t, strategy="auto", batched=True))
        A(Row(f"{m}.perrow.auto.t1", m, f"{m} ({what}) per-row, 1 thr", "per-row", "higgs",
              predict_sql(m), m, threads=1, strategy="auto", batched=False))
        for t in threads:
            A(Row(f"{m}.native.t{t}", m, f"{m} ({what}) XGBoost native, {t} thr", "native",
                  "higgs", model=m, threads=t,
                  native={"data": "higgs", "classifier": m != "reg200"}))
    A(Row("stump.batched.auto.t1", "stump", "stump (1 tree depth 1) batched, 1 thr", "batched",
          "higgs", predict_sql("stump"), "stump", threads=1, strategy="auto", batched=True))
    A(Row("stump.perrow.auto.t1", "stump", "stump (1 tree depth 1) per-row, 1 thr", "per-row",
          "higgs", predict_sql("stump"), "stump", threads=1, strategy="auto", batched=False))
    A(Row("stump.native.t1", "stump", "stump XGBoost native, 1 thr", "native", "higgs",
          model="stump", threads=1, native={"data": "higgs", "classifier": True}))
    # -- the wide table
    A(Row("wide.floor", "wide", "wide scan floor: sum(c1+...+c10)", "floor", "wide",
          "SELECT sum(" + " + ".join(WIDE_FEATURES) + ") FROM {T}"))
    for t in threads:
        A(Row(f"wide.batched.auto.t{t}", "wide", f"wide10 batched, {t} thr", "batched", "wide",
              predict_sql("wide10", "w"), "wide10", threads=t, strategy="auto", batched=True))
    A(Row("wide.perrow.auto.t1", "wide", "wide10 per-row, 1 thr", "per-row", "wide",
          predict_sql("wide10", "w"), "wide10", threads=1, strategy="auto", batched=False))
    for t in threads:
        A(Row(f"wide.native.t{t}", "wide", f"wide10 XGBoost native, {t} thr", "native", "wide",
              model="wide10", threads=t, native={"data": "wide", "classifier": True}))
    # -- scikit-learn: the pipeline over text columns, and a random forest
    A(Row("pipe.floor", "pipe", "customers scan floor: sum(numbers + text lengths)", "floor",
          "customers", "SELECT sum(age + income + tenure + visits + coalesce(score, 0) + rate"
          " + length(city) + length(plan) + length(coalesce(channel, ''))) FROM {T}"))
    for m, table, alias in (("pipe", "customers", "c"), ("rf100", "higgs", "h"),
                            ("svc", "customers", "c"), ("mlp", "customers", "c")):
        for t in threads:
            A(Row(f"{m}.batched.auto.t{t}", m, f"{m} batched, {t} thr", "batched", table,
                  predict_sql(m, alias), m, threads=t, strategy="auto", batched=True))
        A(Row(f"{m}.perrow.auto.t1", m, f"{m} per-row, 1 thr", "per-row", table,
              predict_sql(m, alias), m, threads=1, strategy="auto", batched=False))
        for t in threads:
            A(Row(f"{m}.native.t{t}", m, f"{m} scikit-learn predict, {t} thr", "native", table,
                  model=m, threads=t,
                  native={"data": table, "classifier": True, "engine": "sklearn"}))
    for row in rows:
        row.key_row = row.key in KEY_ROWS
    return rows


# the rows a target depends on: measured on the whole table unless really slow
KEY_ROWS = {"floor", "m500.batched.auto.t1", "m500.batched.auto.t2", "m500.batched.native.t1",
            "m500.batched.native.t2", "m500.batched.auto.w1", "m500.batched.auto.w2",
            "m500.plpy_batch.t1", "m500.plpy_batch.t2", "stump.batched.auto.t1", "wide.floor",
            "wide.batched.auto.t1", "wide.batched.auto.t2"}


# ----------------------------------------------------------------------------------------------
# measuring


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
                msg = str(e).strip().splitlines()[0]
                self.variants[key] = (None, f"n/a (not built yet: {msg})")
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
        return s

    # -- one SQL row ---------------------------------------------------------------------------
    def run_sql_row(self, row):
        if row.kind == "batched" and self.gucs.get("enable_batching") is None:
            row.r = {"status": "n/a", "note": "n/a (not built yet)"}
            return
        if row.strategy == "native" and self.gucs.get("strategy") is None and row.batched:
            row.r = {"status": "n/a", "note": "n/a (not built yet)"}
            return
        model, na = (self.model_for(row) if row.model else (None, None))
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
                conn.execute(f"SET {k} = '{v}'")
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
                times, values = [], []
                cpus = []
                for _ in range(reps):
                    c0 = mw.cpu_seconds(sample=True)
                    t, v = timed(target)
                    cpus.append(mw.cpu_seconds(sample=True) - c0)
                    times.append(t)
                    values.append(v)
            hwm = proc_status(pid).get("VmHWM", 0) / 1024.0
        med = statistics.median(times)
        note = ""
        if target < N:
            note = f"extrapolated from {target} rows"
        if row.kind == "batched" and "PredictBatch" not in plan and "Custom Scan" not in plan:
            note = (note + "; " if note else "") + "plan has no PredictBatch node"
        m = re.search(r"Strategy: (\S+)", plan)
        if m and row.kind == "batched" and row.strategy == "auto":
            note = (note + "; " if note else "") + f"auto chose {m.group(1)}"
        row.r = {"status": "ok", "rows_measured": target, "extrapolated": target < N,
                 "plan_strategy": m.group(1) if m else None, "times": times, "reps": reps,
                 "median_s": med, "seconds": med * N / target,
                 "rows_per_s": target / med, "value": float(values[-1]) if values[-1] is not None
                 else None, "peak_mb": mw.peak_mb, "vmhwm_mb": hwm, "plan": plan,
                 "settings": settings, "model_used": model, "note": note,
                 "min_s": min(times) * N / target,
                 "cpu_s": statistics.median(cpus) * N / target}

    # -- one native row ------------------------------------------------------------------------
    def run_native_row(self, row):
        d = row.native["data"]
        save = os.path.join(self.workdir, f"pred-{row.model}.npy")
        sk = row.native.get("engine") == "sklearn"
        cmd = [PY, os.path.join(HERE, "sklearn_native.py" if sk else "native.py"), "--data",
               os.path.join(self.workdir, f"{d}.pkl" if d == "customers" else f"{d}.npy"),
               "--model", self.paths[row.model],
               "--threads", str(row.threads), "--reps", str(self.args.reps),
               "--budget", str(self.args.row_budget), "--save", save]
        if row.native["classifier"] and not sk:
            cmd.append("--classifier")
        env = dict(os.environ, OMP_NUM_THREADS=str(row.threads))
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env)
        with MemWatch(p.pid) as mw:
            out, err = p.communicate()
        if p.returncode != 0:
            raise RuntimeError(f"native.py failed: {err.strip()[-2000:]}")
        res = json.loads(out.strip().splitlines()[-1])
        med = statistics.median(res["times"])
        row.r = {"status": "ok", "rows_measured": res["rows"], "extrapolated": False,
                 "times": res["times"], "reps": len(res["times"]), "median_s": med,
                 "seconds": med, "min_s": min(res["times"]), "rows_per_s": res["rows"] / med,
                 "value": res["value"],
                 "peak_mb": mw.peak_mb, "cpu_s": statistics.median(res["cpu"]),
                 "note": "in-memory DataFrame / numpy, estimator.predict" if sk else
                 "in-memory float32 numpy, inplace_predict"}

    def run(self, row):
        load = os.getloadavg()[0]
        log(f"- {row.label} ...  (load {load:.1f})")
        t0 = time.perf_counter()
        try:
            if row.kind == "native":
                self.run_native_row(row)
            else:
                self.run_sql_row(row)
        except Exception as e:
            row.r = {"status": "error", "note": f"error: {str(e).strip().splitlines()[0]}"}
            traceback.print_exc()
        r = row.r
        if r["status"] == "ok":
            log(f"    {fmt_s(r['seconds'])} s full-table ({r['reps']} x {fmt_s(r['median_s'])} s "
                f"on {r['rows_measured']} rows), peak {r['peak_mb']:.0f} MB"
                f"{', ' + r['note'] if r.get('note') and row.kind != 'native' else ''}"
                f"  [{time.perf_counter() - t0:.0f}s]")
        else:
            log(f"    {r['note']}")
        r["load1_before"] = round(load, 2)
        r["load1_after"] = round(os.getloadavg()[0], 2)


# ----------------------------------------------------------------------------------------------
# derived numbers, checks, output


def derive(rows):
    by = {r.key: r for r in rows}
    floors = {"higgs": by["floor"], "wide": by["wide.floor"], "customers": by["pipe.floor"]}
    for row in rows:
        r = row.r
        if r["status"] != "ok":
            continue
        f = floors[row.table].r
        if f["status"] == "ok" and row.kind not in ("native",):
            r["x_floor"] = r["seconds"] / f["seconds"]
        if row.model:
            nat = by.get(f"{row.group}.native.t{row.cmp_threads}")
            if nat and nat.r["status"] == "ok" and nat is not row:
                r["x_native"] = r["seconds"] / nat.r["seconds"]
    return by


def sanity(rows, workdir):
    """pg_predict's (and PL/Python's) sums against the training library's (XGBoost native,
    scikit-learn predict) over the same rows."""
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
        diff = abs(r["value"] - ref)
        rel = diff / max(abs(ref), 1e-12)
        ok = rel <= 1e-5
        ok_all &= ok
        r["sanity"] = {"xgboost_sum": ref, "rel_diff": rel, "ok": ok}
        lines.append(f"{'OK      ' if ok else 'MISMATCH'} {row.label}: sum {r['value']:.6f} vs "
                     f"the library {ref:.6f} over {r['rows_measured']} rows (rel diff {rel:.1e})")
    return ok_all, lines


def proba_sanity(pg, data, paths, n):
    """predict_proba over the first n rows vs Booster.predict: probabilities, not labels."""
    import xgboost as xgb
    out = []
    with pg.connect() as conn:
        conn.execute("SET max_parallel_workers_per_gather = 0")
        for m in ("m500", "m100", "stump", "wide10"):
            table = MODELS[m][0]
            X = data[table]["X"][:n]
            bst = xgb.Booster(model_file=paths[m])
            ref = float(bst.inplace_predict(X).astype(np.float64).sum())
            v = conn.execute(f"SELECT sum((predict_proba('{m}', t))[2]) FROM {table} t "
                             f"WHERE id <= {n}").fetchone()[0]
            rel = abs(v - ref) / max(abs(ref), 1e-12)
            out.append({"model": m, "rows": n, "pg": v, "xgboost": ref, "rel_diff": rel,
                        "ok": rel <= 1e-5})
    return out


def checks(by):
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


def table_md(rows):
    hdr = ("| row | seconds | CPU s | rows/s | x library native | x scan floor | peak MB | note |\n"
           "|---|---:|---:|---:|---:|---:|---:|---|")
    out = [hdr]
    group = None
    for row in rows:
        if row.group != group:
            group = row.group
            out.append(f"| **{group}** | | | | | | | |")
        r = row.r
        if r["status"] != "ok":
            out.append(f"| {row.label} | | | | | | | {r.get('note', r['status'])} |")
            continue
        secs = fmt_s(r["seconds"]) + ("*" if r.get("extrapolated") else "")
        note = r.get("note", "")
        if row.kind == "native":
            note = ""
        if r.get("sanity") and not r["sanity"]["ok"]:
            note = (note + "; " if note else "") + "SUM MISMATCH vs the library"
        out.append(f"| {row.label} | {secs} | {fmt_s(r.get('cpu_s'))} | {fmt_rate(r['rows_per_s'])} | "
                   f"{fmt_ratio(r.get('x_native'))} | {fmt_ratio(r.get('x_floor'))} | "
                   f"{r['peak_mb']:.0f} | {note} |")
    return "\n".join(out)


def table_text(rows):
    w = max(len(r.label) for r in rows) + 2
    lines = [f"{'row':<{w}}{'seconds':>10}{'CPU s':>9}{'rows/s':>10}{'x native':>10}"
             f"{'x floor':>10}{'peak MB':>9}  note", "-" * (w + 70)]
    group = None
    for row in rows:
        if row.group != group:
            group = row.group
            lines.append(f"[{group}]")
        r = row.r
        if r["status"] != "ok":
            lines.append(f"{row.label:<{w}}{'':>58}  {r.get('note', r['status'])}")
            continue
        secs = fmt_s(r["seconds"]) + ("*" if r.get("extrapolated") else " ")
        note = "" if row.kind == "native" else r.get("note", "")
        lines.append(f"{row.label:<{w}}{secs:>10}{fmt_s(r.get('cpu_s')):>9}"
                     f"{fmt_rate(r['rows_per_s']):>10}"
                     f"{fmt_ratio(r.get('x_native')):>10}{fmt_ratio(r.get('x_floor')):>10}"
                     f"{r['peak_mb']:>9.0f}  {note}")
    lines.append("* extrapolated to the full table from a sample (see note)")
    return "\n".join(lines)


COLORS = {"floor": "#888888", "batched": "#1f77b4", "per-row": "#9ecae1", "native": "#ff7f0e",
          "plpy-row": "#98df8a", "plpy-batch": "#2ca02c"}


def chart(rows, path, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    groups = [("m500", "XGBoost 500 trees depth 8, higgs (28 columns)"),
              ("other", "smaller models, wide table")]
    sel = {
        "m500": [r for r in rows if r.group == "m500"],
        "other": [r for r in rows if r.group != "m500"],
    }
    heights = [max(3, 0.28 * len(sel[g]) + 1) for g, _ in groups]
    fig, axes = plt.subplots(len(groups), 1, figsize=(11, sum(heights)),
                             gridspec_kw={"height_ratios": heights})
    for ax, (g, gtitle) in zip(axes, groups):
        rs = sel[g]
        labels, vals, colors, hatches = [], [], [], []
        for r in rs:
            labels.append(r.label)
            if r.r["status"] == "ok":
                vals.append(r.r["seconds"])
                colors.append(COLORS[r.kind])
                hatches.append("//" if r.r.get("extrapolated") else "")
            else:
                vals.append(0)
                colors.append("white")
                hatches.append("")
        y = np.arange(len(rs))[::-1]
        bars = ax.barh(y, [v if v > 0 else np.nan for v in vals], color=colors,
                       edgecolor="black", linewidth=0.4)
        for b, h in zip(bars, hatches):
            b.set_hatch(h)
        positive = [v for v in vals if v > 0]
        lo = min(positive) if positive else 0.1
        for yi, v, r in zip(y, vals, rs):
            txt = fmt_s(v) + " s" if v > 0 else r.r.get("note", "n/a")[:40]
            ax.text(v if v > 0 else lo, yi, " " + txt, va="center", fontsize=7)
        ax.set_yticks(y)
        ax.set_yticklabels(labels, fontsize=7)
        ax.set_xscale("log")
        ax.set_xlabel("seconds for the whole table (log scale; hatched = extrapolated)")
        ax.set_title(gtitle, fontsize=9)
        if positive:
            ax.set_xlim(lo / 2, max(positive) * 8)
        ax.grid(axis="x", which="both", alpha=0.3)
    handles = [Patch(facecolor=c, edgecolor="black", label=k) for k, c in COLORS.items()]
    axes[0].legend(handles=handles, fontsize=7, loc="lower right")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def environment_so():
    """mtime and path of the installed pg_predict.so (which build the server loaded)."""
    try:
        libdir = subprocess.run(["pg_config", "--pkglibdir"], capture_output=True,
                                text=True).stdout.strip()
        path = os.path.join(libdir, "pg_predict.so")
        return dt.datetime.fromtimestamp(os.stat(path).st_mtime).strftime(
            "%Y-%m-%dT%H:%M:%S") + " " + path
    except Exception as e:
        return f"unknown ({e})"


def environment(conn, gucs):
    def sh(cmd):
        try:
            return subprocess.run(cmd, shell=True, capture_output=True, text=True,
                                  cwd=ROOT).stdout.strip()
        except Exception:
            return ""
    import xgboost
    cpu = sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2").strip()
    flags = sh("grep -m1 flags /proc/cpuinfo")
    return {
        "postgres": conn.execute("SELECT version()").fetchone()[0],
        "cpu": cpu, "cores": os.cpu_count(), "avx512f": "avx512f" in flags,
        "mem_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "xgboost": xgboost.__version__, "numpy": np.__version__,
        "python": platform.python_version(),
        "git": sh("git rev-parse --short HEAD") + (" (dirty)" if sh("git status --porcelain "
                                                                     "--untracked-files=no")
                                                   else ""),
        "gucs": gucs,
        "installed_so": environment_so(),
        "batch_size": gucs.get("batch_size"),
        "shared_buffers": conn.execute("SHOW shared_buffers").fetchone()[0],
    }


# ----------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows per table (1M)")
    ap.add_argument("--quick", action="store_true",
                    help="100k rows smoke run (also: 2 reps, smaller time limits)")
    ap.add_argument("--train-rows", type=int, default=100_000,
                    help="rows the models are trained on (default 100k; --quick 20k)")
    ap.add_argument("--reps", type=int, default=None, help="timed runs per row, median (3; --quick 2)")
    ap.add_argument("--threads", default="1,2", help="thread counts (default 1,2)")
    ap.add_argument("--max-seconds", type=float, default=None,
                    help="a row estimated to take longer than this on the whole table is "
                         "measured on a sample and extrapolated (40; --quick 10)")
    ap.add_argument("--key-max-seconds", type=float, default=None,
                    help="the same limit for the rows a target depends on (240; --quick 60)")
    ap.add_argument("--sample-seconds", type=float, default=None,
                    help="target time of one run on a sample (5; --quick 2)")
    ap.add_argument("--row-budget", type=float, default=None,
                    help="fewer repetitions when reps x run time would exceed this (90; --quick 30)")
    ap.add_argument("--probe-rows", type=int, default=100,
                    help="first probe size (grows x10 until a run takes 1 s)")
    ap.add_argument("--only", help="regex: measure only the rows whose key matches "
                                   "(floors and native rows are kept for the ratios)")
    ap.add_argument("--ignore-guc", default="",
                    help="comma-separated pg_predict GUCs to treat as absent (tests the n/a and "
                         "fallback paths), e.g. enable_batching,strategy")
    ap.add_argument("--results", default=os.path.join(HERE, "results"))
    ap.add_argument("--keep-cluster", action="store_true")
    a = ap.parse_args()
    defaults = {"reps": (3, 2), "max_seconds": (40.0, 10.0), "key_max_seconds": (240.0, 60.0),
                "sample_seconds": (5.0, 2.0), "row_budget": (90.0, 30.0)}
    for k, (full, quick) in defaults.items():
        if getattr(a, k) is None:
            setattr(a, k, quick if a.quick else full)
    if a.quick:
        a.rows = 100_000
        a.train_rows = min(a.train_rows, 20_000)
    a.train_rows = min(a.train_rows, a.rows)
    threads = [int(t) for t in a.threads.split(",")]
    if 2 not in threads:
        threads.append(2)
    start = dt.datetime.now()
    stamp = start.strftime("%Y%m%d-%H%M%S")
    info = {"rows": a.rows, "train_rows": a.train_rows, "reps": a.reps, "started": stamp}
    log(f"pg_predict bench: {a.rows} rows, models trained on {a.train_rows} rows")

    settings = {"shared_buffers": "4GB", "max_worker_processes": "8",
                "max_parallel_workers": "8", "work_mem": "64MB", "jit": "off",
                "maintenance_work_mem": "512MB"}
    workdir = tempfile.mkdtemp(prefix="pg_predict-bench-")
    with Cluster(settings=settings, keep=a.keep_cluster, prefix="pgpb-") as pg:
        log(f"cluster: {pg.psql_command()}")
        with pg.connect() as admin:
            admin.execute("CREATE EXTENSION pg_predict")
            gucs = {g: admin.execute("SELECT current_setting(%s, true)",
                                     (f"pg_predict.{g}",)).fetchone()[0]
                    for g in ("enable_batching", "batch_size", "threads", "strategy")}
            for g in filter(None, a.ignore_guc.split(",")):
                gucs[g] = None
            log(f"pg_predict GUCs: {gucs}")
            env = environment(admin, gucs)

            log("generating data ...")
            generate(admin, a.rows, info)
            sizes = {"higgs": a.rows, "wide": a.rows, "customers": a.rows}

            log("exporting to numpy (binary COPY) ...")
            t0 = time.perf_counter()
            hx = copy_matrix(admin, "SELECT " + ", ".join(HIGGS_FEATURES) +
                             ", label::real, target FROM higgs ORDER BY id", NF + 2)
            wx = copy_matrix(admin, "SELECT " + ", ".join(WIDE_FEATURES) +
                             ", label::real FROM wide ORDER BY id", 11)
            data = {"higgs": {"X": np.ascontiguousarray(hx[:, :NF]), "label": hx[:, NF],
                              "target": hx[:, NF + 1]},
                    "wide": {"X": np.ascontiguousarray(wx[:, :10]), "label": wx[:, 10]}}
            del hx, wx
            np.save(os.path.join(workdir, "higgs.npy"), data["higgs"]["X"])
            np.save(os.path.join(workdir, "wide.npy"), data["wide"]["X"])
            cf = copy_frame(admin, "SELECT " + ", ".join(CUSTOMER_COLUMNS) +
                            ", label FROM customers ORDER BY id", CUSTOMER_COLUMNS + ["label"])
            data["customers"] = {"X": cf[CUSTOMER_COLUMNS], "label": cf["label"].to_numpy()}
            del cf
            data["customers"]["X"].to_pickle(os.path.join(workdir, "customers.pkl"))
            info["export_s"] = round(time.perf_counter() - t0, 1)
            log(f"  {time.perf_counter() - t0:.1f}s")

            log("training ...")
            paths = train_models(data, a.train_rows, workdir, info)
            log("create_model ...")
            load_models(admin, paths, info)
            sk_paths = train_sklearn_models(data, a.train_rows, info)
            deploy_sklearn_models(admin, sk_paths, info)
            paths.update(sk_paths)
            admin.execute(PLPY)

            rows = build_rows(threads)
            if a.only:
                rx = re.compile(a.only)
                rows = [r for r in rows if rx.search(r.key) or r.kind in ("floor", "native")]
            bench = Bench(pg, a, admin, Samples(admin, sizes), sizes, gucs, workdir, paths)
            log("measuring ...")
            # native rows first: they write the reference predictions used by the sanity check
            for row in [r for r in rows if r.kind == "native"] + \
                       [r for r in rows if r.kind != "native"]:
                bench.run(row)

            log("sanity ...")
            by = derive(rows)
            ok_all, sanity_lines = sanity(rows, workdir)
            try:
                psan = proba_sanity(pg, data, paths, min(a.rows, 10_000) if
                                    gucs.get("enable_batching") is None else a.rows)
            except Exception as e:
                psan = [{"error": str(e)}]
            for p in psan:
                if "error" in p:
                    sanity_lines.append(f"MISMATCH predict_proba check failed: {p['error']}")
                    ok_all = False
                    continue
                ok_all &= p["ok"]
                sanity_lines.append(
                    f"{'OK      ' if p['ok'] else 'MISMATCH'} predict_proba {p['model']}: sum of "
                    f"P(class 1) {p['pg']:.6f} vs XGBoost {p['xgboost']:.6f} over {p['rows']} "
                    f"rows (rel diff {p['rel_diff']:.1e})")
            target_checks = checks(by)

    # -- report ----------------------------------------------------------------------------------
    so_end = environment_so()
    so_note = ""
    if so_end != env.get("installed_so"):
        so_note = (f"- **the installed pg_predict.so changed during the run** ({env.get('installed_so')}"
                   f" -> {so_end}); the server runs the library it preloaded at start")
        log("WARNING: " + so_note[2:].replace("**", ""))
    elapsed = (dt.datetime.now() - start).total_seconds()
    info["elapsed_s"] = round(elapsed)
    check_lines = [f"{'PASS' if ok is True else 'FAIL' if ok is False else 'n/a '}  {name}: {det}"
                   for name, ok, det in target_checks]
    text = table_text(rows)
    loads = [v for r in rows for k, v in r.r.items() if k.startswith("load1_")]
    load_min, load_max = (min(loads), max(loads)) if loads else (0.0, 0.0)
    log("\n" + text + "\n")
    log("targets (informational):")
    for line in check_lines:
        log("  " + line)
    log("numerical sanity (pg_predict vs the training library over the same rows, rel 1e-5):")
    for line in sanity_lines:
        log("  " + line)

    os.makedirs(a.results, exist_ok=True)
    title = (f"pg_predict bench {stamp}: {a.rows} rows, {env['cpu']} x{env['cores']}, "
             f"git {env['git']}")
    md = [f"# pg_predict benchmark — {stamp}", "",
          f"{a.rows} rows per table; models trained on {a.train_rows} rows; median of up to "
          f"{a.reps} runs after a warm-up; run took {elapsed / 60:.1f} min.", "",
          "- command: `" + " ".join(["bench/run.py"] + sys.argv[1:]) + "`",
          f"- machine: {env['cpu']}, {env['cores']} cores, {env['mem_gb']} GiB, "
          f"AVX-512: {env['avx512f']}",
          f"- {env['postgres'].split(' on ')[0]}, shared_buffers {env['shared_buffers']}, "
          f"jit off; XGBoost {env['xgboost']}; pg_predict git {env['git']} "
          f"(installed library: {env.get('installed_so')})",
          "- pg_predict GUCs present: " + ", ".join(
              f"{k}={v}" for k, v in gucs.items() if v is not None) +
          ("; missing (rows marked n/a): " + ", ".join(k for k, v in gucs.items() if v is None)
           if any(v is None for v in gucs.values()) else ""),
          f"- data: higgs {info.get('higgs_size')} (generated in {info.get('higgs_generate_s')} s),"
          f" wide {info.get('wide_size')} (generated in {info.get('wide_generate_s')} s)",
          "- models: " + "; ".join(f"{m['name']} {m['trees']} trees depth {m['depth']} "
                                   f"({m['strategy']}, {m['program_bytes']} B)"
                                   for m in info.get("models", [])),
          *([so_note] if so_note else []),
          f"- load average (1 min) seen before/after the rows: min {load_min:.1f}, max "
          f"{load_max:.1f} on {env['cores']} cores" + (
              " — **the machine was busy during this run: other processes competed for the "
              "CPU, treat the wall-clock seconds with care (the CPU s column is less affected)**"
              if load_max > 0.5 * env["cores"] + 2 else ""),
          "", "seconds = whole table (`*` = extrapolated from a sample, see note); "
          "CPU s = user + system CPU time of the backend and its workers (or of the Python "
          "process) per run, whole-table equivalent; "
          "x library native = the same model in its training library (XGBoost inplace_predict, scikit-learn predict), same thread count (workers count as threads); "
          "peak MB = peak private (anonymous) resident memory of the backend and its parallel "
          "workers, or of the Python process for native rows.", "",
          table_md(rows), "", "## Targets (informational)", "", "```",
          *check_lines, "```", "", "## Numerical sanity", "", "```", *sanity_lines, "```", ""]
    plans = [r for r in rows if r.r.get("plan") and r.key in (
        "m500.batched.auto.t2", "m500.batched.auto.w2", "m500.perrow.auto.t1")]
    if plans:
        md += ["## Plans", ""]
        for r in plans:
            md += [f"{r.label}:", "```", r.r["plan"], "```", ""]
    md_text = "\n".join(md)
    with open(os.path.join(a.results, f"{stamp}.md"), "w") as f:
        f.write(md_text)
    with open(os.path.join(a.results, "latest.md"), "w") as f:
        f.write(md_text)
    with open(os.path.join(a.results, f"{stamp}.json"), "w") as f:
        json.dump({"info": info, "env": env,
                   "rows": [{"key": r.key, "group": r.group, "label": r.label, "kind": r.kind,
                             "model": r.model, "threads": r.threads, "workers": r.workers,
                             "strategy": r.strategy, **r.r} for r in rows],
                   "targets": [{"target": n, "pass": ok, "detail": d}
                               for n, ok, d in target_checks],
                   "sanity": sanity_lines, "sanity_ok": ok_all}, f, indent=1, default=str)
    try:
        chart(rows, os.path.join(a.results, "latest.png"), title)
    except Exception:
        traceback.print_exc()
    if not a.keep_cluster:
        import shutil
        shutil.rmtree(workdir, ignore_errors=True)   # the numpy copies of the tables
    log(f"\nwrote {a.results}/{stamp}.md, .json, latest.md, latest.png")
    if not ok_all:
        log("WARNING: numerical sanity mismatches (see above)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
