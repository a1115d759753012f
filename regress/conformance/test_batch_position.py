#!/usr/bin/python3
"""Conformance: a row's score does not depend on which rows share its batch (issue 32, item 1).

Every model here is scored over the same table in batches of 1, 7, 69 and 4096 rows, one row per
query (`WHERE id = k`, a one-row batch), and through the per-row path (an ARRAY argument outside
a batch); every value must be the same float32, bit for bit. The logistic link is where it went
wrong: ATen's sigmoid runs a vectorized exp over whole vector blocks and a scalar exp over the
tail, so the same margin gave two probabilities one bit apart (kernels/logistic.hpp).

- XGBoost binary:logistic (native kernel, logistic link), multi:softprob (softmax), reg:logistic;
- scikit-learn LogisticRegression (linear, logistic link), GradientBoostingClassifier, an
  MLPClassifier with logistic activations (expit in the program) and a one-vs-rest
  LogisticRegression (the ovr link);
- and against the libraries: the probabilities agree with XGBoost's and scikit-learn's own.

Run: /usr/bin/python3 regress/conformance/test_batch_position.py [-k name] [--list]
Needs the extension installed (make install). Last line: 'conformance: N passed, M failed'.
"""

import contextlib

import numpy as np

import sklearn_cases  # noqa: F401  (puts python/ on sys.path)
from harness import Failure, main, test
from pgcluster import Cluster
from tables import load_table

import pg_predict  # noqa: E402

TABLE = "bp_rows"
N_ROWS, N_FEATURES = 300, 5
FEATURES = [f"f{i}" for i in range(N_FEATURES)]
BATCH_SIZES = (1, 7, 69, 4096)
ONE_ROW_QUERIES = 40  # rows scored alone, one query each


class Env:
    def __init__(self, conn, X):
        self.conn, self.X = conn, X


@contextlib.contextmanager
def make_env():
    import xgboost as xgb
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    with Cluster() as pg:
        conn = pg.connect()
        conn.execute("CREATE EXTENSION pg_predict")
        rng = np.random.default_rng(32)
        X = rng.normal(size=(N_ROWS, N_FEATURES)).astype(np.float32)
        load_table(conn, TABLE, FEATURES, X)
        x = X.astype(np.float64)
        y = x[:, 0] - 0.7 * x[:, 1] + np.sin(2 * x[:, 2])
        labels = (y > 0).astype(int)
        three = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
        env = Env(conn, X)
        env.libraries = {}

        def boost(name, params, target, rounds):
            dtrain = xgb.DMatrix(X, label=target, feature_names=FEATURES)
            booster = xgb.train(dict(params, seed=0, nthread=1), dtrain, rounds)
            conn.execute("SELECT create_model(%s, %s)", [name, booster.save_raw("json").decode()])
            env.libraries[name] = booster.predict(xgb.DMatrix(X, feature_names=FEATURES))

        boost("bp_xgb", {"objective": "binary:logistic", "max_depth": 4, "eta": 0.3}, labels, 40)
        boost("bp_multi", {"objective": "multi:softprob", "num_class": 3, "max_depth": 3}, three, 20)
        boost("bp_reglog", {"objective": "reg:logistic", "max_depth": 3}, (y - y.min()) / np.ptp(y), 20)
        for name, model in (
                ("bp_lr", LogisticRegression()),
                ("bp_ovr", LogisticRegression(multi_class="ovr")),
                ("bp_gb", GradientBoostingClassifier(n_estimators=30, max_depth=3, random_state=0)),
                ("bp_mlp", MLPClassifier(hidden_layer_sizes=(6,), activation="logistic", max_iter=300,
                                         random_state=0))):
            target = three if name == "bp_ovr" else labels
            model.fit(x, target)
            pg_predict.deploy(conn, name, model, feature_names=FEATURES)
            env.libraries[name] = model.predict_proba(x)
        try:
            yield env
        finally:
            conn.close()


def values(v):
    return tuple(v) if isinstance(v, list) else (v,)


def scores(env, model, batch_size, fn):
    with env.conn.transaction():
        env.conn.execute(f"SET LOCAL pg_predict.batch_size = {batch_size}")
        rows = env.conn.execute(f"SELECT id, {fn}('{model}', t) FROM {TABLE} t ORDER BY id").fetchall()
    return {i: values(p) for i, p in rows}


def one_row_queries(env, model, ids, fn):
    return {i: values(env.conn.execute(f"SELECT {fn}('{model}', t) FROM {TABLE} t WHERE id = %s", [i]).fetchone()[0])
            for i in ids}


def per_row_path(env, model, ids, fn):
    return {i: values(env.conn.execute(f"SELECT {fn}('{model}', %s::real[])",
                                       [[float(v) for v in env.X[i - 1]]]).fetchone()[0])
            for i in ids}


def check(env, model, fn="predict_proba"):
    reference = scores(env, model, BATCH_SIZES[-1], fn)
    if len(reference) != N_ROWS:
        raise Failure(f"{model}: {len(reference)} rows scored, expected {N_ROWS}")
    ids = sorted(reference)[:ONE_ROW_QUERIES]
    ways = {f"batch_size {b}": scores(env, model, b, fn) for b in BATCH_SIZES[:-1]}
    ways["one row per query"] = one_row_queries(env, model, ids, fn)
    ways["per-row path"] = per_row_path(env, model, ids, fn)
    for way, got in ways.items():
        differ = [(i, got[i], reference[i]) for i in got if got[i] != reference[i]]
        if differ:
            raise Failure(f"{model}: {len(differ)} rows differ between {way} and batch_size {BATCH_SIZES[-1]}; "
                          f"first (id, that, batched): {differ[:3]}")
    library = np.asarray(env.libraries[model], dtype=np.float64)
    if library.ndim == 1 and fn == "predict":
        library = library[:, None]
    elif library.ndim == 1:
        library = np.stack([1 - library, library], axis=1)
    ours = np.array([reference[i] for i in sorted(reference)], dtype=np.float64)
    if ours.shape != library.shape or not np.allclose(ours, library, rtol=0, atol=2e-6):
        worst = np.abs(ours - library).max() if ours.shape == library.shape else None
        raise Failure(f"{model}: probabilities differ from the library's (shape {ours.shape} vs {library.shape}, "
                      f"worst {worst})")


@test
def xgboost_binary_logistic(env):
    check(env, "bp_xgb")


@test
def xgboost_multiclass_softmax(env):
    check(env, "bp_multi")


@test
def xgboost_reg_logistic(env):
    check(env, "bp_reglog", fn="predict")


@test
def sklearn_logistic_regression(env):
    check(env, "bp_lr")


@test
def sklearn_one_vs_rest(env):
    check(env, "bp_ovr")


@test
def sklearn_gradient_boosting(env):
    check(env, "bp_gb")


@test
def sklearn_mlp_logistic_activation(env):
    check(env, "bp_mlp")


if __name__ == "__main__":
    main(make_env)
