#!/usr/bin/python3
"""Conformance: classifiers whose labels are not (only) numbers, against scikit-learn.

Classifiers fitted by /usr/bin/python3's scikit-learn on seeded random data with string labels
('no'/'yes', 'gold'/'silver'/'bronze'), boolean labels, integer labels that are not 0..k-1,
float labels, a pipeline (imputer + scaler on numbers, one-hot on a text column with categories
it never saw, NULLs where it imputes) ending in a string-label classifier, and the estimators
whose labels are fixed numbers (KMeans, IsolationForest). For each, deployed with
pg_predict.deploy():
  - the models view lists classes_ as text, in scikit-learn's order;
  - predict_label(name, row) equals str(scikit-learn's predict) on every row (booleans as
    PostgreSQL writes them, 'true'/'false'; numbers as float8's text), through the
    PredictBatch node and per row (pg_predict.enable_batching = off), and for single rows given
    as real[] / float8[];
  - predict_proba(name, row) equals scikit-learn's predict_proba within 1e-5, columns in the
    classes' order;
  - predict() equals scikit-learn's predict for numeric labels and is an ERROR naming
    predict_label() for the others.
Rows where the two most probable classes are within 1e-5 (a near tie that float32 may break
either way) are not compared for the label.

Run: /usr/bin/python3 regress/conformance/test_labels.py [-k name] [--list]
"""

import contextlib

import numpy as np
import pandas as pd
import psycopg

import sklearn_cases  # noqa: F401  (puts python/ on sys.path)
from harness import Failure, add_test, assert_close, assert_equal, main, to_floats
from pgcluster import Cluster

import pg_predict  # noqa: E402

TABLE = "points"
N_ROWS = 260
N_TRAIN = 200
NUMERIC = ["x0", "x1", "x2", "x3"]


def frame(seed=13):
    """(DataFrame of all rows, a latent score per row the targets are cut from)."""
    rng = np.random.default_rng(seed)
    f32 = lambda a: np.asarray(a, dtype=np.float32).astype(np.float64)  # noqa: E731
    df = pd.DataFrame({c: f32(rng.normal(0, 1, N_ROWS)) for c in NUMERIC})
    df["color"] = rng.choice(["red", "green", "blue"], N_ROWS).astype(object)
    z = (df["x0"] - 0.7 * df["x1"] + 0.4 * df["x2"] + df["color"].map(
        {"red": 0.5, "green": 0.0, "blue": -0.5}) + rng.normal(0, 0.5, N_ROWS)).to_numpy()
    df.loc[rng.random(N_ROWS) < 0.1, "x0"] = np.nan
    late = np.arange(N_TRAIN, N_ROWS)
    df.loc[late[rng.random(len(late)) < 0.2], "color"] = "purple"  # never seen at fit
    return df, z


DF, Z = frame()
TRAIN = DF.iloc[:N_TRAIN]
NUM_TRAIN = TRAIN[NUMERIC].fillna(0.0)  # the models without an imputer are fitted NaN-free
BINARY = np.where(Z > 0, "yes", "no")
MEDALS = np.select([Z < -0.6, Z < 0.6], ["bronze", "silver"], "gold")
BOOLS = Z > 0.3
INTS = np.select([Z < -0.5, Z < 0.5], [-3, 7], 12)
FLOATS = np.where(Z > 0, 4.0, -1.0)  # scikit-learn's classifiers take integral floats only


def label_text(c):
    """A label as predict_label() writes it."""
    if isinstance(c, (bool, np.bool_)):
        return "true" if c else "false"
    if isinstance(c, (str, np.str_)):
        return str(c)
    x = float(c)
    return str(int(x)) if x.is_integer() else repr(x)


def full_pipeline(model):
    """Imputed + scaled numbers, one-hot colors (unknown ignored) -> model."""
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    prep = ColumnTransformer([
        ("num", Pipeline([("impute", SimpleImputer()), ("scale", StandardScaler())]), NUMERIC),
        ("cat", OneHotEncoder(handle_unknown="ignore"), ["color"])])
    return Pipeline([("prep", prep), ("model", model)])


class Case:
    def __init__(self, name, make, target=None, pipeline=False):
        self.name = name
        self.make = make
        self.target = target
        self.pipeline = pipeline


def cases():
    from sklearn.cluster import KMeans
    from sklearn.ensemble import (GradientBoostingClassifier, HistGradientBoostingClassifier,
                                  IsolationForest, RandomForestClassifier)
    from sklearn.ensemble import ExtraTreesClassifier
    from sklearn.linear_model import LogisticRegression, RidgeClassifier
    from sklearn.naive_bayes import BernoulliNB, GaussianNB
    from sklearn.svm import LinearSVC
    from sklearn.neural_network import MLPClassifier
    from sklearn.svm import SVC
    from sklearn.tree import DecisionTreeClassifier
    return [
        Case("logreg_str_binary", lambda: LogisticRegression(), BINARY),
        Case("logreg_str_multi", lambda: LogisticRegression(max_iter=500), MEDALS),
        Case("forest_bool", lambda: RandomForestClassifier(n_estimators=7, max_depth=4,
                                                           random_state=0), BOOLS),
        Case("tree_int", lambda: DecisionTreeClassifier(max_depth=4, random_state=0), INTS),
        Case("gb_float", lambda: GradientBoostingClassifier(n_estimators=10, random_state=0), FLOATS),
        Case("hgb_str_multi", lambda: HistGradientBoostingClassifier(max_iter=10), MEDALS),
        Case("nb_str", lambda: GaussianNB(), MEDALS),
        Case("mlp_str_binary", lambda: MLPClassifier(hidden_layer_sizes=(5,), max_iter=300,
                                                      random_state=0), BINARY),
        Case("svc_str_binary", lambda: SVC(), BINARY),
        Case("ridge_bool", lambda: RidgeClassifier(), BOOLS),
        Case("linear_svc_str_multi", lambda: LinearSVC(max_iter=5000), MEDALS),
        Case("extra_trees_str_multi", lambda: ExtraTreesClassifier(n_estimators=5, max_depth=4,
                                                                   random_state=0), MEDALS),
        Case("bernoulli_nb_bool", lambda: BernoulliNB(), BOOLS),
        Case("pipe_str_multi", lambda: LogisticRegression(max_iter=500), MEDALS, pipeline=True),
        Case("pipe_str_binary", lambda: RandomForestClassifier(n_estimators=5, max_depth=3,
                                                               random_state=1), BINARY, pipeline=True),
        Case("kmeans", lambda: KMeans(n_clusters=3, n_init=3, random_state=0)),
        Case("isolation_forest", lambda: IsolationForest(n_estimators=10, random_state=0)),
    ]


def fit(case):
    import warnings
    est = case.make()
    if case.pipeline:
        est = full_pipeline(est)
        X_train, X_all = TRAIN[NUMERIC + ["color"]], DF[NUMERIC + ["color"]]
    else:
        X_train, X_all = NUM_TRAIN, DF[NUMERIC].fillna(0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings of the small fits
        if case.target is None:
            est.fit(X_train)
        else:
            est.fit(X_train, case.target[:N_TRAIN])
    return est, X_all


class Env:
    def __init__(self, pg):
        self.pg = pg
        self.conn = pg.connect()

    def query(self, sql, params=None):
        return self.conn.execute(sql, params).fetchall()

    def load(self):
        self.conn.execute(f"CREATE TABLE {TABLE} (id int PRIMARY KEY, "
                          + ", ".join(f"{c} real" for c in NUMERIC) + ", color text)")
        with self.conn.cursor() as cur:
            with cur.copy(f"COPY {TABLE} (id, {', '.join(NUMERIC)}, color) FROM STDIN") as cp:
                for i, row in enumerate(DF.itertuples(index=False)):
                    cp.write_row([i + 1] + [None if np.isnan(v) else float(v) for v in row[:4]]
                                 + [row[4]])
        # The numeric-only models read x0 NaN-free: a view gives them the 0 they were fitted on.
        self.conn.execute(f"CREATE VIEW {TABLE}_filled AS SELECT id, coalesce(x0, 0) AS x0, "
                          f"x1, x2, x3, color FROM {TABLE}")
        self.conn.execute(f"ANALYZE {TABLE}")


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


def near_ties(est, X):
    """Rows whose two best classes score within 1e-5 but not equal (float32 may break such a
    tie either way; an exact tie, such as a tree leaf's [0.5, 0.5], goes to the first class in
    both)."""
    if _has_proba(est):
        p = np.sort(est.predict_proba(X), axis=1)
        gap = p[:, -1] - p[:, -2]
        return (gap > 0) & (gap < 1e-5)
    if not hasattr(est, "decision_function"):  # KMeans: the nearest center, no near ties here
        return np.zeros(len(X), dtype=bool)
    d = est.decision_function(X)
    if d.ndim == 1:  # a binary classifier's, IsolationForest's: the sign
        return np.abs(d) < 1e-5
    d = np.sort(d, axis=1)
    return d[:, -1] - d[:, -2] < 1e-5


def _has_proba(est):
    """Whether scikit-learn gives the estimator a predict_proba (not SVC without probability)."""
    try:
        est.predict_proba
        return True
    except AttributeError:
        return False


def run(env, name, call, table, batching):
    sql = f"SELECT id, {call} FROM {table} t ORDER BY id"
    with env.conn.transaction():
        env.conn.execute(f"SET LOCAL pg_predict.enable_batching = {'on' if batching else 'off'}")
        if batching:
            plan = "\n".join(r[0] for r in env.query("EXPLAIN (costs off) " + sql, {"m": name}))
            if "PredictBatch" not in plan:
                raise Failure(f"{name}: no PredictBatch node in the plan of {call}:\n{plan}")
        return env.query(sql, {"m": name})


def check_case(case):
    def body(env):
        est, X = fit(case)
        name = case.name
        pg_predict.deploy(env.conn, name, est)
        classes = getattr(est, "classes_", None)
        if case.name == "kmeans":
            classes = np.arange(3)
        elif case.name == "isolation_forest":
            classes = np.array([-1, 1])
        want_classes = [label_text(c) for c in classes]
        (got_classes, types), = env.query("SELECT classes, pg_typeof(classes)::text FROM models "
                                          "WHERE name = %s", [name])
        assert_equal(f"{name}: models.classes", got_classes, want_classes)
        assert_equal(f"{name}: models.classes type", types, "text[]")

        want = [label_text(c) for c in est.predict(X)]
        tie = near_ties(est, X)
        table = TABLE if case.pipeline else TABLE + "_filled"
        proba = case.target is not None and _has_proba(est)
        numeric = all(isinstance(c, (np.integer, np.floating, int, float))
                      and not isinstance(c, (bool, np.bool_)) for c in classes)
        for batching in (True, False):
            path = "batched" if batching else "per-row"
            rows = run(env, name, "predict_label(%(m)s, t)", table, batching)
            assert_equal(f"{name} ({path}): rows", len(rows), len(want))
            bad = [(r[0], r[1], w) for r, w, t in zip(rows, want, tie) if r[1] != w and not t]
            if bad:
                raise Failure(f"{name} ({path}): predict_label differs from scikit-learn on "
                              f"{len(bad)} rows, e.g. (id, got, want) {bad[:3]}")
            if proba:
                rows = run(env, name, "predict_proba(%(m)s, t)", table, batching)
                want_p = est.predict_proba(X)
                assert_close(f"{name} ({path}): predict_proba(row)",
                             to_floats([r[1] for r in rows], want_p.shape[1]), want_p)
            if numeric:
                rows = run(env, name, "predict(%(m)s, t)", table, batching)
                got = to_floats([r[1] for r in rows])
                want_n = np.where(tie, got, est.predict(X).astype(np.float64))
                assert_close(f"{name} ({path}): predict(row)", got, want_n)
            else:
                try:
                    run(env, name, "predict(%(m)s, t)", table, batching)
                except psycopg.errors.WrongObjectType as e:
                    if "predict_label()" not in (e.diag.message_hint or ""):
                        raise Failure(f"{name} ({path}): predict() failed without naming "
                                      f"predict_label() in its hint: {e}")
                else:
                    raise Failure(f"{name} ({path}): predict() gave numbers for labels "
                                  f"{want_classes}")
        # A batch of one row, through the PredictBatch node.
        i = int(np.flatnonzero(~tie)[0])
        rows = run(env, name, "predict_label(%(m)s, t)", f"(SELECT * FROM {table} WHERE id = {i + 1})", True)
        assert_equal(f"{name}: predict_label of the single row {i + 1}, batched", rows, [(i + 1, want[i])])
        # Single rows given as arrays (the models without a pipeline read the numbers by position).
        if not case.pipeline:
            Xn = X.to_numpy()
            for i in (0, 7, len(Xn) - 1):
                if tie[i]:
                    continue
                for sql_type in ("real[]", "float8[]"):
                    (got,), = env.query(f"SELECT predict_label(%s, %s::{sql_type})",
                                        [name, [float(v) for v in Xn[i]]])
                    assert_equal(f"{name}: predict_label(row {i} as {sql_type})", got, want[i])
        env.conn.execute("SELECT drop_model(%s)", [name])
    return body


def export_refusals(env):
    """Mixed label types are refused by the exporter, naming the estimator."""
    from sklearn.tree import DecisionTreeClassifier
    est = DecisionTreeClassifier(max_depth=2).fit(NUM_TRAIN, BINARY[:N_TRAIN])
    est.classes_ = np.array(["no", 1], dtype=object)
    try:
        pg_predict.export(est)
    except pg_predict.ExportError as e:
        if "DecisionTreeClassifier" not in str(e) or "mix" not in str(e):
            raise Failure(f"unclear refusal: {e}")
    else:
        raise Failure("classes_ mixing strings and numbers were exported")
    est.classes_ = np.empty(2, dtype=object)
    est.classes_[:] = [(1, 2), (3, 4)]
    try:
        pg_predict.export(est)
    except pg_predict.ExportError as e:
        if "tuple" not in str(e):
            raise Failure(f"unclear refusal: {e}")
    else:
        raise Failure("tuple class labels were exported")


for _case in cases():
    add_test(_case.name, check_case(_case))
add_test("export_refusals", export_refusals)

if __name__ == "__main__":
    main(fixture=make_env)
