#!/usr/bin/python3
"""Conformance: HistGradientBoosting with categorical features against scikit-learn.

scikit-learn 1.2's HistGradientBoostingClassifier / Regressor(categorical_features=...) split
integer-coded categories by bitsets. Models fitted here on seeded random data (categories with
NaN at fit, so both missing directions occur; a bare model and an OrdinalEncoder pipeline over
text columns) are deployed with the Python client and scored over rows that also carry NULL,
categories never seen at fit, negative and fractional values. predict, predict_proba and
decision_function must equal scikit-learn's on every row within max(1e-5, 1e-5 * |expected|),
batched, per row and in one-row batches, with every tree strategy; every native-kernel path
this machine runs (pg_predict.cpu_kernel) must give the portable path's margins bit for bit.
Values >= 256 (undefined behaviour in scikit-learn's C cast) must score like NULL.

Run: /usr/bin/python3 regress/conformance/test_hist_categorical.py [-k name] [--list]
"""

import contextlib
import functools
import os
import sys
import warnings

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

from harness import Failure, add_test, assert_close, assert_equal, main, test, to_floats  # noqa: E402
from pgcluster import Cluster  # noqa: E402

import pg_predict  # noqa: E402

N_ROWS = 600
N_TRAIN = 400
TABLE = "shop"
SQL_TYPES = {"color": "double precision", "shape": "integer", "size": "double precision",
             "weight": "real", "city": "text", "plan": "text"}
STRATEGIES = ("native", "gemm", "tree_traversal", "perfect_tree_traversal")


@functools.lru_cache(maxsize=None)
def frame():
    """(DataFrame, targets). color 0..11 without 7 at fit, shape 0..4, NaN in both at fit; the
    rows after N_TRAIN also hold 7, 12, 15, 200 (unseen), -1, -0.5 (negative), 2.5, 3.75
    (fractional), 6 for shape, and text categories the encoder never saw."""
    rng = np.random.default_rng(7)
    n = N_ROWS
    color = rng.choice([c for c in range(12) if c != 7], n).astype(np.float64)
    shape = rng.integers(0, 5, n).astype(np.float64)
    size = np.asarray(rng.normal(0, 1, n), dtype=np.float32).astype(np.float64)
    weight = np.asarray(rng.uniform(0, 10, n), dtype=np.float32).astype(np.float64)
    city = rng.choice(["berlin", "madrid", "oslo", "paris", "rome", "vienna"], n).astype(object)
    plan = rng.choice(["basic", "plus", "pro"], n).astype(object)
    effect = rng.normal(0, 1.5, 16)  # per color category
    s = (effect[color.astype(int)] + np.array([0.8, -0.4, 0.0, 1.2, -1.0])[shape.astype(int)]
         + 0.7 * size - 0.1 * (weight - 5)
         + pd.Series(city).map({"berlin": 0.9, "madrid": -0.7, "oslo": 0.2, "paris": -0.2,
                                "rome": 1.1, "vienna": -1.2}).to_numpy()
         + pd.Series(plan).map({"basic": -0.5, "plus": 0.3, "pro": 0.8}).to_numpy())
    noisy = s + rng.normal(0, 0.3, n)
    color[rng.random(n) < 0.12] = np.nan
    shape[rng.random(n) < 0.08] = np.nan
    size[rng.random(n) < 0.1] = np.nan
    city[rng.random(n) < 0.1] = np.nan
    late = np.arange(N_TRAIN, n)
    odd = [7, 12, 15, 200, -1, -0.5, 2.5, 3.75]
    pick = late[rng.random(len(late)) < 0.35]
    color[pick] = rng.choice(odd, len(pick))
    shape[late[rng.random(len(late)) < 0.1]] = 6
    city[late[rng.random(len(late)) < 0.15]] = "lisbon"
    plan[late[rng.random(len(late)) < 0.15]] = "enterprise"
    df = pd.DataFrame({"color": color, "shape": shape, "size": size, "weight": weight,
                       "city": city, "plan": plan})
    targets = {"binary": (noisy > np.median(noisy)).astype(int),
               "multiclass": np.digitize(noisy, np.quantile(noisy, [1 / 3, 2 / 3])),
               "regression": 10 * s + 50}
    return df, targets


NUMERIC = ["color", "shape", "size", "weight"]


def build_models():
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OrdinalEncoder

    def encoded(unknown):
        # Text NULLs become their own category; unseen text is `unknown` (-1 or NaN).
        return ColumnTransformer([
            ("cat", make_pipeline(
                SimpleImputer(strategy="constant", fill_value="none"),
                OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=unknown)),
             ["city", "plan"]),
            ("num", "passthrough", ["size", "weight"])])

    return {
        "binary": (HistGradientBoostingClassifier(
            categorical_features=[True, True, False, False], max_iter=30, max_leaf_nodes=15,
            random_state=0), NUMERIC, "binary"),
        "multiclass": (HistGradientBoostingClassifier(
            categorical_features=[0, 1], max_iter=12, max_leaf_nodes=10, random_state=0),
            NUMERIC, "multiclass"),
        "regressor": (HistGradientBoostingRegressor(
            categorical_features=[0, 1], max_iter=40, learning_rate=0.2, random_state=0),
            NUMERIC, "regression"),
        "ordinal_pipeline": (make_pipeline(encoded(-1), HistGradientBoostingClassifier(
            categorical_features=[0, 1], max_iter=25, random_state=0)),
            ["city", "plan", "size", "weight"], "binary"),
        "ordinal_pipeline_nan_unknown": (make_pipeline(encoded(np.nan), HistGradientBoostingRegressor(
            categorical_features=[True, True, False, False], max_iter=25, random_state=0)),
            ["city", "plan", "size", "weight"], "regression"),
    }


@functools.lru_cache(maxsize=None)
def fitted(name):
    est, columns, target = build_models()[name]
    df, targets = frame()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(df[columns].iloc[:N_TRAIN], targets[target][:N_TRAIN])
    return est, columns


def final(est):
    return est.steps[-1][1] if hasattr(est, "steps") else est


def expected(est, X):
    """{function: scikit-learn's answers} for predict, predict_proba, decision_function."""
    out = {"predict": np.asarray(est.predict(X), dtype=np.float64)}
    if hasattr(est, "predict_proba"):
        out["predict_proba"] = np.asarray(est.predict_proba(X), dtype=np.float64)
        d = np.asarray(est.decision_function(X), dtype=np.float64)
        out["decision_function"] = d[:, None] if d.ndim == 1 else d
    return out


class Env:
    def __init__(self, pg):
        self.pg = pg
        self.conn = pg.connect()

    def query(self, sql, params=None):
        return self.conn.execute(sql, params).fetchall()

    def load(self, table, df):
        cols = list(df.columns)
        self.conn.execute(f"DROP TABLE IF EXISTS {table}")
        self.conn.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, "
                          + ", ".join(f"{c} {SQL_TYPES[c]}" for c in cols) + ")")

        def value(c, v):
            if v is None or (isinstance(v, float) and np.isnan(v)):
                return None
            if SQL_TYPES[c] == "text":
                return str(v)
            return int(v) if SQL_TYPES[c] == "integer" else float(v)

        with self.conn.cursor() as cur:
            with cur.copy(f"COPY {table} (id, {', '.join(cols)}) FROM STDIN") as cp:
                for i, row in enumerate(df.itertuples(index=False)):
                    cp.write_row([i + 1] + [value(c, v) for c, v in zip(cols, row)])
        self.conn.execute(f"ANALYZE {table}")


@contextlib.contextmanager
def make_env():
    with Cluster() as pg:
        env = Env(pg)
        env.conn.execute("CREATE EXTENSION pg_predict")
        env.load(TABLE, frame()[0])
        try:
            yield env
        finally:
            env.conn.close()


def score(env, model, functions, settings, table=TABLE):
    """{function: [value per row]} ordered by id, under SET LOCAL settings."""
    sql = (f"SELECT {', '.join(f'{f}(%(m)s, t)' for f in functions)} FROM {table} t ORDER BY id")
    with env.conn.transaction():
        for k, v in settings.items():
            env.conn.execute(f"SET LOCAL {k} = '{v}'")
        if settings.get("pg_predict.enable_batching") == "on":
            plan = "\n".join(r[0] for r in env.query("EXPLAIN (costs off) " + sql, {"m": model}))
            if "PredictBatch" not in plan:
                raise Failure(f"{model}: no PredictBatch node in the plan:\n{plan}")
        rows = env.query(sql, {"m": model})
    return {f: [r[i] for r in rows] for i, f in enumerate(functions)}


def compare(what, got, want):
    # A label of a near tie (float32 leaves against scikit-learn's float64) may take either side.
    tie = np.zeros(len(want["predict"]), dtype=bool)
    if "predict_proba" in want:
        top = np.sort(want["predict_proba"], axis=1)
        tie = top[:, -1] - top[:, -2] < 1e-6
    for f, w in want.items():
        g = to_floats(got[f], w.shape[1]) if w.ndim == 2 else to_floats(got[f])
        if f == "predict":
            g = np.where(tie, w, g)
        assert_close(f"{what}: {f}", g, w, ids=np.arange(1, len(w) + 1))


def deploy(env, name, est):
    model = f"hgbcat_{name}"
    env.conn.execute("SELECT drop_model(name) FROM models WHERE name = %s", [model])
    pg_predict.deploy(env.conn, model, est, strategy="native")
    return model


def model_test(name):
    def run(env):
        est, columns = fitted(name)
        df = frame()[0]
        want = expected(est, df[columns])
        functions = list(want)
        model = deploy(env, name, est)
        nodes = [p.nodes for it in final(est)._predictors for p in it]
        cat = np.concatenate([n["missing_go_to_left"][n["is_categorical"] == 1] for n in nodes])
        if not (len(cat) and (cat == 0).any() and (cat == 1).any()):
            raise Failure(f"{name}: the fit should have categorical splits sending missing values "
                          f"both ways (missing_go_to_left of its categorical splits: {set(cat)})")
        for strategy in STRATEGIES:
            for batching, batch_size in (("on", 1024), ("off", 1024), ("on", 1)):
                settings = {"pg_predict.strategy": strategy, "pg_predict.enable_batching": batching,
                            "pg_predict.batch_size": batch_size}
                got = score(env, model, functions, settings)
                compare(f"{model} ({strategy}, batching {batching}, batch_size {batch_size})",
                        got, want)
        env.conn.execute("SELECT drop_model(%s)", [model])
    return run


for _name in ("binary", "multiclass", "regressor", "ordinal_pipeline",
              "ordinal_pipeline_nan_unknown"):
    add_test(f"hist_categorical[{_name}]", model_test(_name))


@test
def test_string_labels(env):
    """A classifier fitted on string labels with categorical features: predict_label equals
    scikit-learn's predict, batched and per row, and models.classes lists the labels."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    df, targets = frame()
    y = np.array(["low", "mid", "high"], dtype=object)[targets["multiclass"]]
    est = HistGradientBoostingClassifier(categorical_features=[0, 1], max_iter=10, random_state=0)
    est.fit(df[NUMERIC].iloc[:N_TRAIN], y[:N_TRAIN])
    model = deploy(env, "string_labels", est)
    (classes,), = env.query("SELECT classes FROM models WHERE name = %s", [model])
    assert_equal(f"{model}: models.classes", classes, list(est.classes_))
    want = est.predict(df[NUMERIC])
    top = np.sort(est.predict_proba(df[NUMERIC]), axis=1)
    tie = top[:, -1] - top[:, -2] < 1e-6
    for batching in ("on", "off"):
        got = score(env, model, ["predict_label"], {"pg_predict.enable_batching": batching})
        bad = [(i + 1, g, w) for i, (g, w, t) in enumerate(zip(got["predict_label"], want, tie))
               if g != w and not t]
        if bad:
            raise Failure(f"{model} (batching {batching}): predict_label differs on {len(bad)} "
                          f"rows, e.g. (id, got, want) {bad[:3]}")
    env.conn.execute("SELECT drop_model(%s)", [model])


@test
def test_cpu_kernels_bit_for_bit(env):
    """Every native-kernel path the machine runs gives the portable path's margins exactly."""
    for name in ("binary", "multiclass", "regressor"):
        est, _ = fitted(name)
        model = deploy(env, name, est)
        fn = "decision_function" if hasattr(est, "predict_proba") else "predict"
        base = {"pg_predict.strategy": "native", "pg_predict.enable_batching": "on"}
        ref = score(env, model, [fn, "predict"], {**base, "pg_predict.cpu_kernel": "portable"})
        ran = 0
        for kernel in ("avx512", "avx2", "neon"):
            try:
                with env.conn.transaction():
                    env.conn.execute(f"SET LOCAL pg_predict.cpu_kernel = {kernel}")
            except Exception:  # noqa: BLE001  (this machine lacks the path: refused at SET)
                continue
            ran += 1
            got = score(env, model, [fn, "predict"], {**base, "pg_predict.cpu_kernel": kernel})
            assert_equal(f"{model}: {kernel} against portable", got, ref)
        print(f"    {name}: {ran} kernel path(s) besides portable")
        env.conn.execute("SELECT drop_model(%s)", [model])


@test
def test_large_values_score_like_null(env):
    """Category values >= 256 go where missing values go (scikit-learn's own uint8 cast of them is
    undefined behaviour), so they score as scikit-learn scores NaN there."""
    est, columns = fitted("binary")
    df = frame()[0].iloc[N_TRAIN:N_TRAIN + 60].copy()
    df["color"] = np.where(np.arange(len(df)) % 2 == 0, 256.0, 1e6)
    env.load("shop_large", df)
    model = deploy(env, "binary_large", est)
    as_nan = df[columns].copy()
    as_nan["color"] = np.nan
    want = expected(est, as_nan)
    for batching in ("on", "off"):
        got = score(env, model, list(want), {"pg_predict.enable_batching": batching},
                    table="shop_large")
        compare(f"{model} (batching {batching})", got, want)
    env.conn.execute("SELECT drop_model(%s)", [model])


@test
def test_exported_document(env):
    """The exporter writes the categorical fields as scikit-learn holds them."""
    est, columns = fitted("binary")
    doc = pg_predict.export(est, feature_names=columns)
    step = doc["steps"][-1] if "steps" in doc else doc
    assert_equal("is_categorical", step["is_categorical"], [1, 1, 0, 0])
    known, f_idx_map = est._bin_mapper.make_known_categories_bitsets()
    assert_equal("known_cat_bitsets", step["known_cat_bitsets"], known.astype(np.int64).tolist())
    assert_equal("f_idx_map", step["f_idx_map"], f_idx_map.astype(np.int64).tolist())
    tree = step["trees"][0][0]
    p = est._predictors[0][0]
    assert_equal("raw_left_cat_bitsets", tree["raw_left_cat_bitsets"],
                 p.raw_left_cat_bitsets.astype(np.int64).tolist())
    assert_equal("bitset_idx", tree["bitset_idx"], p.nodes["bitset_idx"].astype(np.int64).tolist())


if __name__ == "__main__":
    main(fixture=make_env)
