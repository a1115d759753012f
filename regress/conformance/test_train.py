#!/usr/bin/python3
"""Conformance: train() in SQL against the same training done by the libraries in Python.

A seeded random table (float8 and real columns with NULLs, a text column with NULLs, a boolean
column; text, numeric and integer targets) is trained on in SQL with train(), and the same rows
are trained on in Python:
  - XGBoost (binary, multiclass, regression, count:poisson): xgb.train on the rows train()
    puts in its training split (reproduced here from the documented hash of (seed, row)),
    expanded the documented way (each text column one-hot over its sorted categories, a NULL
    text all zeros), with the same parameters, seed and nthread. Every row of the table is then
    scored by predict / predict_proba in SQL (batched and per row) and by the Python booster:
    they agree within 1e-6. The metrics train() returns equal the ones computed here from
    Python's predictions on the test split.
  - linear (alpha 0 and > 0) and logistic (binary, multinomial): scikit-learn's
    LinearRegression / Ridge / LogisticRegression(lbfgs) in a pipeline of the same one-hot
    encoding and a mean SimpleImputer, fitted on the same rows: predictions agree within 1e-6
    (closed form); for logistic regression train()'s coefficients reach scikit-learn's
    objective or a lower one (scikit-learn's lbfgs stops short of the optimum by up to 1e-3 in
    the coefficients), and the probabilities agree within 1e-3.

Run: /usr/bin/python3 regress/conformance/test_train.py [-k name] [--list]
"""

import contextlib
import json

import numpy as np
import pandas as pd
import xgboost as xgb
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

import sklearn_cases  # noqa: F401  (puts python/ on sys.path)
from harness import Failure, add_test, assert_close, assert_equal, main
from pgcluster import Cluster

N_ROWS = 1500
FEATURES = ["x0", "x1", "x2", "color", "flag", "k"]  # the query's feature columns, in order
M64 = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def is_test_row(seed, row, test_size):
    """train()'s split (include/pg_predict/training/train.hpp: is_test_row)."""
    h = splitmix64(splitmix64(seed & M64) ^ row)
    return (h >> 11) * 2.0 ** -53 < test_size


def frame(seed=29):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "id": np.arange(1, N_ROWS + 1),
        "x0": rng.normal(0, 2, N_ROWS),
        "x1": rng.uniform(-1, 1, N_ROWS).astype(np.float32).astype(np.float64),  # a real column
        "x2": rng.normal(5, 1, N_ROWS),
        "color": rng.choice(["red", "green", "blue", "amber"], N_ROWS).astype(object),
        "flag": rng.random(N_ROWS) < 0.4,
    })
    z = (df["x0"] - 1.5 * df["x1"] + 0.3 * (df["x2"] - 5) + df["color"].map(
        {"red": 0.8, "green": -0.4, "blue": 0.0, "amber": 0.3}) + 0.5 * df["flag"]
        + rng.normal(0, 0.6, N_ROWS)).to_numpy()
    df["churned"] = np.where(z > 0.2, "yes", "no")
    df["tier"] = np.select([z < -1, z < 1], ["bronze", "silver"], "gold")
    df["amount"] = 3 * z + rng.normal(0, 0.3, N_ROWS)
    df["visits"] = rng.poisson(np.exp(0.4 * np.clip(z, -3, 3)))
    df["k"] = 1.5  # a constant column
    df.loc[rng.random(N_ROWS) < 0.08, "x0"] = np.nan
    df.loc[rng.random(N_ROWS) < 0.05, "x2"] = np.nan
    df.loc[rng.random(N_ROWS) < 0.06, "color"] = None
    return df


DF = frame()
COLORS = sorted(c for c in DF["color"].unique() if c is not None)


def fresh_frame(seed=31, n=60):
    """Rows scored but never trained on: colors never seen ('purple', 'teal'), NULL, known ones."""
    rng = np.random.default_rng(seed)
    df = frame(seed)[:n].copy()
    df["color"] = rng.choice(["purple", "teal", "red", None], n)
    df["id"] = np.arange(1, n + 1)
    return df


FRESH = fresh_frame()


def expanded(df):
    """The input vector train() builds: numbers as they are (NULL = NaN), each text column as
    one 0/1 column per sorted category (NULL: all 0), in the query's column order."""
    cols = []
    for f in FEATURES:
        if f == "color":
            cols += [(df["color"] == c).to_numpy(dtype=np.float64) for c in COLORS]
        else:
            cols.append(df[f].to_numpy(dtype=np.float64))
    return np.column_stack(cols)


def split(seed, test_size):
    test = np.array([is_test_row(seed, i, test_size) for i in range(N_ROWS)])
    return ~test, test


class Env:
    def __init__(self, pg):
        self.pg = pg
        self.conn = pg.connect()

    def query(self, sql, params=None):
        return self.conn.execute(sql, params).fetchall()

    def load(self):
        for table, df in (("rows", DF), ("fresh", FRESH)):
            self.conn.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, x0 float8, x1 real, x2 float8, color text, "
                              "flag bool, k float8, churned text, tier text, amount float8, visits int)")
            with self.conn.cursor() as cur:
                with cur.copy(f"COPY {table} FROM STDIN") as cp:
                    for r in df.itertuples(index=False):
                        num = lambda v: None if v is None or np.isnan(v) else float(v)  # noqa: E731
                        cp.write_row([int(r.id), num(r.x0), num(r.x1), num(r.x2), r.color, bool(r.flag), float(r.k),
                                      r.churned, r.tier, float(r.amount), int(r.visits)])
            self.conn.execute(f"ANALYZE {table}")

    def train(self, name, target, algorithm, hyperparams, seed, test_size=0.25):
        sql = (f"SELECT train(%s, 'SELECT {', '.join(FEATURES)}, {target} FROM rows ORDER BY id', %s, %s, "
               "%s::jsonb, %s, %s)")
        (result,), = self.query(sql, (name, target, algorithm, json.dumps(hyperparams), test_size, seed))
        return result

    def scores(self, name, fn, batched=True, table="rows"):
        """fn(name, r) over every row of table in id order, batched or on the per-row path."""
        self.conn.execute(f"SET pg_predict.enable_batching = {'on' if batched else 'off'}")
        rows = self.query(f"SELECT {fn}(%s, r) FROM {table} r ORDER BY id", (name,))
        self.conn.execute("RESET pg_predict.enable_batching")
        return np.array([np.nan if v is None else v for (v,) in rows], dtype=np.float64)


@contextlib.contextmanager
def make_env():
    with Cluster() as pg:
        env = Env(pg)
        env.conn.execute("CREATE EXTENSION pg_predict")
        env.load()
        try:
            yield env
        finally:
            env.conn.close()


def labels_of(target):
    values = DF[target].to_numpy()
    classes = sorted(set(values))
    return np.searchsorted(classes, values), classes


XGB_CASES = {
    # name: (target, objective train() picks or is given, hyperparams, seed)
    "binary": ("churned", "binary:logistic", {"max_depth": 4, "n_estimators": 30, "eta": 0.3, "nthread": 2}, 5),
    "multiclass": ("tier", "multi:softprob", {"max_depth": 3, "n_estimators": 15, "nthread": 2,
                                              "subsample": 0.8, "colsample_bytree": 0.7}, 11),
    "regression": ("amount", "reg:squarederror", {"max_depth": 5, "n_estimators": 40, "eta": 0.2,
                                                  "min_child_weight": 2, "lambda": 2.0, "nthread": 1}, 0),
    "count": ("visits", "count:poisson", {"objective": "count:poisson", "max_depth": 3, "n_estimators": 25,
                                          "nthread": 2}, 3),
}


def xgb_case(name, target, objective, hyper, seed):
    def run(env):
        result = env.train(f"xgb_{name}", target, "xgboost", hyper, seed)
        train, test = split(seed, 0.25)
        assert_equal("test rows", result["test_rows"], int(test.sum()))
        X = expanded(DF)
        classifier = objective in ("binary:logistic", "multi:softprob")
        if classifier:
            y, classes = labels_of(target)
        else:
            y, classes = DF[target].to_numpy(dtype=np.float64), None
        params = {k: v for k, v in hyper.items() if k not in ("n_estimators", "objective")}
        params.update({"objective": objective, "tree_method": "hist", "seed": seed})
        if objective == "multi:softprob":
            params["num_class"] = len(classes)
        booster = xgb.train(params, xgb.DMatrix(X[train], label=y[train], missing=np.nan),
                            num_boost_round=hyper["n_estimators"])
        want = booster.predict(xgb.DMatrix(X, missing=np.nan))
        # rows it never saw: unseen colors and NULL are no category (every one-hot column 0)
        fresh = booster.predict(xgb.DMatrix(expanded(FRESH), missing=np.nan))
        fresh = np.column_stack([1 - fresh, fresh]) if classifier and fresh.ndim == 1 else fresh
        assert_close("unseen categories", env.scores(f"xgb_{name}", "predict_proba" if classifier else "predict",
                                                     table="fresh"), fresh, atol=1e-6, rtol=1e-6)
        if classifier:
            want = np.column_stack([1 - want, want]) if want.ndim == 1 else want
            for batched in (True, False):
                got = env.scores(f"xgb_{name}", "predict_proba", batched)
                assert_close(f"predict_proba (batched={batched})", got, want, atol=1e-6, rtol=0)
            labels = [v for (v,) in env.query("SELECT predict_label(%s, r) FROM rows r ORDER BY id", (f"xgb_{name}",))]
            assert_equal("models.classes", env.query("SELECT classes FROM models WHERE name = %s",
                                                      (f"xgb_{name}",))[0][0], list(classes))
            sure = np.sort(want, 1)[:, -1] - np.sort(want, 1)[:, -2] > 1e-6
            assert_equal("predict_label", [l for l, s in zip(labels, sure) if s],
                         [classes[k] for k, s in zip(np.argmax(want, 1), sure) if s])
            p = want[test]
            accuracy = float(np.mean(np.argmax(p, 1) == y[test]))
            log_loss = float(np.mean(-np.log(np.clip(p[np.arange(len(p)), y[test]] / p.sum(1), 1e-15, 1 - 1e-15))))
            assert_close("metrics.accuracy", [result["metrics"]["accuracy"]], [accuracy], atol=1e-12, rtol=0)
            assert_close("metrics.log_loss", [result["metrics"]["log_loss"]], [log_loss], atol=1e-6, rtol=0)
        else:
            for batched in (True, False):
                got = env.scores(f"xgb_{name}", "predict", batched)
                assert_close(f"predict (batched={batched})", got, want, atol=1e-6, rtol=1e-6)
            e = want[test] - y[test]
            assert_close("metrics.rmse", [result["metrics"]["rmse"]], [np.sqrt(np.mean(e * e))], atol=1e-5, rtol=1e-5)
    return run


def encoder():
    return ColumnTransformer([("n0", "passthrough", [0, 1, 2]),
                              ("c", OneHotEncoder(categories=[COLORS], handle_unknown="ignore"), [3]),
                              ("n1", "passthrough", [4, 5])])


def sk_frame(df=DF):
    df = df[FEATURES].copy()
    df["color"] = df["color"].fillna("__null__")  # all zeros: not a category
    df["flag"] = df["flag"].astype(np.float64)
    return df


LINEAR_CASES = {
    "linear": ({}, lambda: LinearRegression()),
    "ridge": ({"alpha": 3.5}, lambda: Ridge(alpha=3.5)),
}


def linear_case(name, hyper, make):
    def run(env):
        seed = 17
        env.train(f"lin_{name}", "amount", "linear", hyper, seed)
        train, _ = split(seed, 0.25)
        X, y = sk_frame(), DF["amount"].to_numpy()
        pipe = make_pipeline(encoder(), SimpleImputer(strategy="mean"), make()).fit(X[train], y[train])
        for batched in (True, False):
            assert_close(f"predict (batched={batched})", env.scores(f"lin_{name}", "predict", batched),
                         pipe.predict(X), atol=1e-6, rtol=1e-6)
        assert_close("unseen categories", env.scores(f"lin_{name}", "predict", table="fresh"),
                     pipe.predict(sk_frame(FRESH)), atol=1e-6, rtol=1e-6)
    return run


def logistic_objective(X, y, coef, intercept, C):
    """scikit-learn's lbfgs objective over n rows, divided by C·n: the mean log loss plus
    ||W||^2 / (2 C n) (the intercept unpenalized)."""
    W, b = np.atleast_2d(coef), np.asarray(intercept)
    Z = X @ W.T + b
    if W.shape[0] == 1:  # binary: the margin of the second class
        z = Z[:, 0]
        loss = np.logaddexp(0, np.where(y == 1, -z, z))
    else:
        loss = np.logaddexp.reduce(Z, axis=1) - Z[np.arange(len(y)), y]
    return loss.mean() + (W * W).sum() / (2 * C * len(y))


def logistic_case(name, target, C):
    def run(env):
        seed = 23
        env.train(f"log_{name}", target, "logistic", {"C": C}, seed)
        train, _ = split(seed, 0.25)
        X, y = sk_frame(), DF[target].to_numpy()
        pipe = make_pipeline(encoder(), SimpleImputer(strategy="mean"),
                             LogisticRegression(C=C, tol=1e-10, max_iter=100000)).fit(X[train], y[train])
        # Both solve one strictly convex problem; scikit-learn's lbfgs stops where its line
        # search does (a multinomial fit here: 3e-9 above the optimum, coefficients 7e-4 off),
        # so train()'s fit must be at least as good, and its probabilities close.
        (step,), = env.query("SELECT source #> '{steps,-1}' FROM model_catalog WHERE name = %s", (f"log_{name}",))
        Xt = pipe[:-1].transform(X[train])
        yi = np.searchsorted(pipe.classes_, y[train])
        ours = logistic_objective(Xt, yi, step["coef"], step["intercept"], C)
        theirs = logistic_objective(Xt, yi, pipe[-1].coef_, pipe[-1].intercept_, C)
        if ours > theirs + 1e-12:
            raise Failure(f"train()'s objective {ours!r} is above scikit-learn's {theirs!r}")
        want = pipe.predict_proba(X)
        got = env.scores(f"log_{name}", "predict_proba")
        assert_close("predict_proba", got, want, atol=1e-3, rtol=0)
        sure = np.sort(want, 1)[:, -1] - np.sort(want, 1)[:, -2] > 1e-2
        labels = [v for (v,) in env.query("SELECT predict_label(%s, r) FROM rows r ORDER BY id", (f"log_{name}",))]
        assert_equal("predict_label", [l for l, s in zip(labels, sure) if s],
                     list(pipe.predict(X)[sure]))
    return run


def one_row_batches(env):
    """A model trained in SQL scores single rows (one-row batches and literal rows) as its
    Python twin does."""
    env.train("one_row", "churned", "xgboost", {"n_estimators": 10, "nthread": 1}, 2)
    train, _ = split(2, 0.25)
    y, _ = labels_of("churned")
    X = expanded(DF)
    booster = xgb.train({"objective": "binary:logistic", "tree_method": "hist", "seed": 2, "nthread": 1},
                        xgb.DMatrix(X[train], label=y[train], missing=np.nan), num_boost_round=10)
    want = booster.predict(xgb.DMatrix(X[:5], missing=np.nan))
    for i in range(5):
        (got,), = env.query("SELECT (predict_proba('one_row', r))[2] FROM rows r WHERE id = %s", (i + 1,))
        assert_close(f"row {i + 1}", [got], [want[i]], atol=1e-6, rtol=0)


for _name, (_t, _o, _h, _s) in XGB_CASES.items():
    add_test(f"xgboost[{_name}]", xgb_case(_name, _t, _o, _h, _s))
for _name, (_h, _m) in LINEAR_CASES.items():
    add_test(f"linear[{_name}]", linear_case(_name, _h, _m))
add_test("logistic[binary]", logistic_case("binary", "churned", 0.5))
add_test("logistic[multinomial]", logistic_case("multinomial", "tier", 2.0))
add_test("one_row_batches", one_row_batches)

if __name__ == "__main__":
    main(fixture=make_env)
