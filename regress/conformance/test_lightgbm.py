#!/usr/bin/python3
"""Conformance: pg_predict on LightGBM models against LightGBM's own predictions, row for row.

LightGBM is not in Debian: regress/fixtures/lightgbm/ holds 20 models made by LightGBM 4.6 with
its predict() and predict(raw_score=True) on rows that sit at, just above and just below split
thresholds (float64, full precision), NaN (SQL NULL), zeros, unseen and negative categories.
Each model is registered from its text (create_model(name, text)) once per compilation
strategy; every row is compared within max(1e-5, 1e-5 * |expected|) through predict(name, row)
and predict_proba(name, row) over a table of double precision columns, batched (PredictBatch)
and per row; the float8[] form on every row, the real[] form on the rows whose float32
rounding crosses no split of the model (real[] rounds the inputs, so elsewhere LightGBM itself
would answer differently); raw scores through the raw_score option.

Run: /usr/bin/python3 regress/conformance/test_lightgbm.py [-k name] [--list]
Needs the extension installed (make install). Last line: 'conformance: N passed, M failed'.
"""

import contextlib
import csv
import json
import os
import re

import numpy as np

from harness import Failure, add_test, assert_close, assert_equal, main, to_floats
from pgcluster import Cluster

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "lightgbm")
STRATEGIES = ["native", "tree_traversal", "perfect_tree_traversal", "gemm", "auto"]
STRATEGY_NAMES = {"gemm", "tree_traversal", "perfect_tree_traversal", "native"}


class Env:
    def __init__(self, pg):
        self.pg = pg
        self._conn = None

    @property
    def conn(self):
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._conn = self.pg.connect()
        return self._conn

    def query(self, sql, params=None):
        return self.conn.execute(sql, params).fetchall()


@contextlib.contextmanager
def make_env():
    with Cluster() as pg:
        env = Env(pg)
        env.conn.execute("CREATE EXTENSION pg_predict")
        try:
            yield env
        finally:
            if env._conn is not None:
                env._conn.close()


# ---- the fixtures ------------------------------------------------------------------------------

def read_csv(path):
    with open(path) as f:
        rows = list(csv.reader(f))
    header = rows[0]
    values = np.array([[np.nan if v == "" else float(v) for v in r] for r in rows[1:]], dtype=np.float64)
    return header, values


def split_points(model_text, n_features):
    """Per feature: the numeric thresholds, and whether it has categorical splits."""
    thresholds = [[] for _ in range(n_features)]
    categorical = [False] * n_features
    for block in model_text.split("\nTree=")[1:]:
        kv = dict(line.split("=", 1) for line in block.split("\n")[1:] if "=" in line)
        if "split_feature" not in kv:
            continue
        for f, t, d in zip(kv["split_feature"].split(), kv["threshold"].split(), kv["decision_type"].split()):
            if int(d) & 1:
                categorical[int(f)] = True
            else:
                thresholds[int(f)].append(float(t))
    return [np.array(sorted(t)) for t in thresholds], categorical


def float32_safe_rows(X, model_text):
    """The rows on which LightGBM decides every split the same for x and float32(x)."""
    thresholds, categorical = split_points(model_text, X.shape[1])
    x32 = X.astype(np.float32).astype(np.float64)
    safe = np.ones(len(X), dtype=bool)
    for f in range(X.shape[1]):
        lo, hi = np.fmin(X[:, f], x32[:, f]), np.fmax(X[:, f], x32[:, f])
        t = thresholds[f]
        if len(t):  # a threshold in [lo, hi) separates them (x <= t goes left)
            k = np.searchsorted(t, lo, side="left")
            crossing = (k < len(t)) & (t[np.minimum(k, len(t) - 1)] < hi)
            safe &= ~(crossing & ~np.isnan(X[:, f]))
        if categorical[f]:
            safe &= np.isnan(X[:, f]) | (np.trunc(X[:, f]) == np.trunc(x32[:, f]))
        # zero_as_missing: |x| <= 1e-35 on one side only
        z = float(np.float32(1e-35))
        safe &= ~((np.abs(X[:, f]) <= z) != (np.abs(x32[:, f]) <= z))
    return safe


class Case:
    def __init__(self, spec):
        self.name = spec["name"]
        self.kind = spec["kind"]
        with open(os.path.join(FIXTURES, self.name + ".model.txt")) as f:
            self.model = f.read()
        self.features, self.X = read_csv(os.path.join(FIXTURES, self.name + ".csv"))
        header, expected = read_csv(os.path.join(FIXTURES, self.name + ".expected.csv"))
        self.pred = expected[:, [i for i, h in enumerate(header) if h.startswith("pred_")]]
        self.raw = expected[:, [i for i, h in enumerate(header) if h.startswith("raw_")]]
        self.table = "lgb_" + self.name
        self.classifier = self.kind in ("binary", "multiclass")
        if self.kind == "binary":
            p = self.pred[:, 0]
            self.proba = np.column_stack([1 - p, p])
        elif self.kind == "multiclass":
            self.proba = self.pred
        else:
            self.proba = None
        if self.classifier:
            self.label = np.argmax(self.proba, axis=1).astype(np.float64)
            top = np.sort(self.proba, axis=1)
            self.ambiguous = (top[:, -1] - top[:, -2]) < 1e-5
        else:
            self.label = self.pred[:, 0]
        self.safe32 = float32_safe_rows(self.X, self.model)


with open(os.path.join(FIXTURES, "cases.json")) as f:
    CASES = [Case(c) for c in json.load(f)]
BY_NAME = {c.name: c for c in CASES}
_loaded = set()


def loaded(env, case):
    if case.table in _loaded:
        return
    conn = env.conn
    conn.execute(f"DROP TABLE IF EXISTS {case.table}")
    cols = ", ".join(f"{c} double precision" for c in case.features)
    conn.execute(f"CREATE TABLE {case.table} (id int PRIMARY KEY, {cols})")
    with conn.cursor() as cur:
        with cur.copy(f"COPY {case.table} (id, {', '.join(case.features)}) FROM STDIN") as cp:
            for i, row in enumerate(case.X):
                cp.write_row([i + 1] + [None if np.isnan(v) else float(v) for v in row])
    conn.execute(f"ANALYZE {case.table}")
    _loaded.add(case.table)


def create_model(env, name, case, options):
    env.conn.execute("SELECT drop_model(name) FROM models WHERE name = %s", [name])
    env.conn.execute("SELECT create_model(%s, %s::text, 'auto', %s::jsonb)", [name, case.model, json.dumps(options)])


def score(env, sql, model, batching):
    with env.conn.transaction():
        env.conn.execute(f"SET LOCAL pg_predict.enable_batching = {'on' if batching else 'off'}")
        if batching:  # the batched path must really be taken
            plan = "\n".join(r[0] for r in env.query("EXPLAIN (costs off) " + sql, {"m": model}))
            if "PredictBatch" not in plan:
                raise Failure(f"{model}: no PredictBatch node in the plan:\n{plan}")
        return env.query(sql, {"m": model})


def check_rows(case, label, rows, n_pred):
    """rows: (id, n_pred predict columns, then as many predict_proba columns for classifiers)."""
    assert_equal(f"{label}: rows", len(rows), len(case.X))
    ids = [r[0] for r in rows]
    for k in range(n_pred):
        got = to_floats([r[1 + k] for r in rows])
        if case.classifier:
            got = np.where(case.ambiguous, case.label, got)
        assert_close(f"{label}: predict #{k}", got, case.label, ids=ids)
        if case.classifier:
            assert_close(f"{label}: predict_proba #{k}", to_floats([r[1 + n_pred + k] for r in rows],
                                                                  case.proba.shape[1]), case.proba, ids=ids)


def strategy_test(case, strategy):
    def run(env):
        loaded(env, case)
        model = f"lgb_{case.name}_{strategy}"
        try:
            create_model(env, model, case, {"strategy": strategy})
        except Exception as e:  # a tensor strategy may refuse a model too big for it, by name
            if strategy in ("gemm", "perfect_tree_traversal") and f"the {strategy} program" in str(e):
                return
            if case.name == "linear_tree" and "cannot evaluate linear leaves" in str(e):
                return  # only tree_traversal (and auto, which picks it) has them
            raise
        info = env.query("SELECT format, strategy FROM models WHERE name = %s", [model])[0]
        assert_equal(f"{model}: models.format", info[0], "lightgbm")
        if strategy != "auto":
            assert_equal(f"{model}: models.strategy", info[1], strategy)
        row = ["predict(%(m)s, t)"] + (["predict_proba(%(m)s, t)"] if case.classifier else [])
        sql = f"SELECT id, {', '.join(row)} FROM {case.table} t ORDER BY id"
        for batching in (True, False):
            check_rows(case, f"{model} ({'batched' if batching else 'per-row'})", score(env, sql, model, batching), 1)
        env.conn.execute("SELECT drop_model(%s)", [model])
    return run


def arrays_test(case):
    def run(env):
        loaded(env, case)
        model = f"lgb_{case.name}_arrays"
        create_model(env, model, case, {})
        for cast in ("float8[]", "real[]"):
            arr = f"ARRAY[{', '.join(case.features)}]::{cast}"
            row = [f"predict(%(m)s, {arr})"] + ([f"predict_proba(%(m)s, {arr})"] if case.classifier else [])
            rows = env.query(f"SELECT id, {', '.join(row)} FROM {case.table} t ORDER BY id", {"m": model})
            if cast == "real[]":  # only where float32 rounding crosses no split
                keep = case.safe32
                if keep.sum() < len(keep) // 4:
                    raise Failure(f"{model}: only {keep.sum()} rows are float32-safe")
                sub = Case.__new__(Case)
                sub.__dict__.update(case.__dict__)
                sub.X, sub.label, sub.ambiguous = case.X[keep], case.label[keep], case.ambiguous[keep] if case.classifier else None
                sub.proba = case.proba[keep] if case.classifier else None
                rows = [r for r, k in zip(rows, keep) if k]
                check_rows(sub, f"{model} {cast}", rows, 1)
            else:
                check_rows(case, f"{model} {cast}", rows, 1)
        env.conn.execute("SELECT drop_model(%s)", [model])
    return run


def raw_score_test(case):
    def run(env):
        loaded(env, case)
        model = f"lgb_{case.name}_raw"
        create_model(env, model, case, {"raw_score": True})
        fn = "predict_proba" if case.raw.shape[1] > 1 else "predict"
        rows = env.query(f"SELECT id, {fn}(%(m)s, t) FROM {case.table} t ORDER BY id", {"m": model})
        width = case.raw.shape[1]
        got = to_floats([r[1] for r in rows], width if width > 1 else None)
        assert_close(f"{model}: raw scores", got, case.raw if width > 1 else case.raw[:, 0], ids=[r[0] for r in rows])
        env.conn.execute("SELECT drop_model(%s)", [model])
    return run


def test_hostile_text(env):
    """A broken file is a clean error naming the problem, and the session goes on."""
    good = BY_NAME["binary"].model
    broken = {
        "truncated": good[: len(good) // 2],
        "bad child": re.sub(r"left_child=\S+", "left_child=999", good, count=1),
        "wrong count": re.sub(r"leaf_value=\S+ ", "leaf_value=", good, count=1),
    }
    for what, text in broken.items():
        try:
            env.conn.execute("SELECT create_model('lgb_hostile', %s::text)", [text])
        except Exception as e:
            if "LightGBM model" not in str(e):
                raise Failure(f"{what}: error does not name the format: {e}")
            env._conn = None  # a fresh connection after the error
            continue
        raise Failure(f"{what}: create_model accepted it")
    assert_equal("session alive", env.query("SELECT 1")[0][0], 1)


def test_python_client(env):
    """pg_predict.deploy of a model file (a pathlib.Path) and of its text (a str)."""
    import pathlib
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    import pg_predict
    case = BY_NAME["multiclass"]
    loaded(env, case)
    for what, artifact in (("path", pathlib.Path(FIXTURES) / "multiclass.model.txt"), ("text", case.model)):
        model = f"lgb_client_{what}"
        env.conn.execute("SELECT drop_model(name) FROM models WHERE name = %s", [model])
        pg_predict.deploy(env.conn, model, artifact)
        assert_equal(f"{model}: format", env.query("SELECT format FROM models WHERE name = %s", [model])[0][0],
                     "lightgbm")
        rows = env.query(f"SELECT id, predict(%(m)s, t), predict_proba(%(m)s, t) FROM {case.table} t ORDER BY id",
                         {"m": model})
        check_rows(case, model, rows, 1)
        env.conn.execute("SELECT drop_model(%s)", [model])


def tree_shapes(text):
    """(max depth, max leaves) over the trees of a LightGBM model text."""
    depth = leaves = 0
    for block in text.split("Tree=")[1:]:
        fields = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        n = int(fields["num_leaves"])
        leaves = max(leaves, n)
        if n < 2:
            continue
        left, right = ([int(v) for v in fields[k].split()] for k in ("left_child", "right_child"))
        stack = [(0, 0)]
        while stack:
            node, d = stack.pop()
            if node < 0:  # a leaf
                depth = max(depth, d)
                continue
            stack += [(left[node], d + 1), (right[node], d + 1)]
    return depth, leaves


def kernel_test(case):
    """The native kernel's layout follows the trees' shape (EXPLAIN's Kernel), and both threads
    counts score every row as LightGBM does: depth > 12 with <= 256 leaves is the bitvector
    layout, depth <= 8 the perfect one."""
    def run(env):
        loaded(env, case)
        depth, leaves = tree_shapes(case.model)
        model = f"lgb_{case.name}_kernel"
        create_model(env, model, case, {"strategy": "native"})
        row = ["predict(%(m)s, t)"] + (["predict_proba(%(m)s, t)"] if case.classifier else [])
        sql = f"SELECT id, {', '.join(row)} FROM {case.table} t ORDER BY id"
        plan = "\n".join(r[0] for r in env.query("EXPLAIN (costs off) " + sql, {"m": model}))
        kernel = re.search(r"Kernel: (.*)", plan).group(1)
        if depth > 12 and leaves <= 256 and not kernel.startswith("bitvector"):
            raise Failure(f"{model}: depth {depth}, {leaves} leaves, yet Kernel: {kernel}")
        if depth <= 8 and (kernel.startswith("bitvector") or kernel == "generic"):
            raise Failure(f"{model}: depth {depth}, yet Kernel: {kernel}")
        for threads in (1, 2):
            with env.conn.transaction():
                env.conn.execute(f"SET LOCAL pg_predict.threads = {threads}")
                check_rows(case, f"{model} ({kernel}, {threads} threads)", env.query(sql, {"m": model}), 1)
        if kernel.startswith("bitvector"):
            # pg_predict.bitvector_layout = off (US patent 11,106,685, docs/design.md): the generic
            # walk scores the same model, the same values bit for bit, batched and in parallel
            # workers (the setting reaches them)
            on = env.query(sql, {"m": model})
            with env.conn.transaction():
                env.conn.execute("SET LOCAL pg_predict.bitvector_layout = off")
                plan = "\n".join(r[0] for r in env.query("EXPLAIN (costs off) " + sql, {"m": model}))
                off_kernel = re.search(r"Kernel: (.*)", plan).group(1)
                if off_kernel != "generic":
                    raise Failure(f"{model}: bitvector_layout = off, yet Kernel: {off_kernel}")
                off = env.query(sql, {"m": model})
                for k, v in {"max_parallel_workers_per_gather": 2, "parallel_setup_cost": 0, "parallel_tuple_cost": 0,
                             "min_parallel_table_scan_size": 0, "force_parallel_mode": "on"}.items():
                    env.conn.execute(f"SET LOCAL {k} = '{v}'")
                off_parallel = env.query(sql, {"m": model})
            if on != off or on != off_parallel:
                raise Failure(f"{model}: bitvector_layout = off changed a score")
        env.conn.execute("SELECT drop_model(%s)", [model])
    return run


SUPPORTED = CASES
for _case in SUPPORTED:
    if _case.name != "linear_tree":  # linear leaves: only tree_traversal evaluates them
        add_test(f"{_case.name}[kernel]", kernel_test(_case))
    for _strategy in STRATEGIES:
        add_test(f"{_case.name}[{_strategy}]", strategy_test(_case, _strategy))
    add_test(f"{_case.name}[arrays]", arrays_test(_case))
    add_test(f"{_case.name}[raw_score]", raw_score_test(_case))
add_test("hostile_text", test_hostile_text)
add_test("python_client", test_python_client)

if __name__ == "__main__":
    main(fixture=make_env)
