#!/usr/bin/python3
"""Conformance: evaluate_model()'s metrics against sklearn.metrics on the same predictions.

Models fitted by /usr/bin/python3's scikit-learn and XGBoost on seeded random data (a binary
classifier with string labels in a pipeline that imputes NULLs and one-hot encodes a text
column with a category it never saw, a multiclass forest with string labels, XGBoost binary and
multiclass with integer labels, a classifier without probabilities, regressors), deployed with
pg_predict.deploy(). For each, evaluate_model(name, query, target) over the held-out rows is
compared with sklearn.metrics computed on the same rows from the model's own outputs read back
with predict_proba() / predict_label() / predict() (which themselves agree with the library
within 1e-5, checked here too):
  - accuracy, precision/recall/F1 per class and macro/weighted (precision_recall_fscore_support
    with labels = the model's classes then the unseen ones, zero_division=0), the confusion
    matrix (confusion_matrix with the same labels) exactly;
  - log_loss (labels = the classes), roc_auc_score, mean_squared_error, mean_absolute_error,
    r2_score, explained_variance_score within 1e-9 relative;
  - a binary model's threshold: the positive class where its probability is above it;
  - edge cases: a target value the model does not know, a single row, a constant target;
  - the scoring query runs through the PredictBatch node (auto_explain of the nested statement).

Run: /usr/bin/python3 regress/conformance/test_evaluate.py [-k name] [--list]
"""

import contextlib
import json
import warnings

import numpy as np
import pandas as pd

import sklearn_cases  # noqa: F401  (puts python/ on sys.path)
from harness import Failure, assert_close, assert_equal, main, test
from pgcluster import Cluster

import pg_predict  # noqa: E402

TABLE = "samples"
N_ROWS = 400
N_TRAIN = 250
NUMERIC = ["x0", "x1", "x2", "x3"]
EXACT = 1e-9  # relative tolerance where both sides compute the same formula in float64


def frame(seed=29):
    rng = np.random.default_rng(seed)
    f32 = lambda a: np.asarray(a, dtype=np.float32).astype(np.float64)  # noqa: E731  (real columns)
    df = pd.DataFrame({c: f32(rng.normal(0, 1, N_ROWS)) for c in NUMERIC})
    df["color"] = rng.choice(["red", "green", "blue"], N_ROWS).astype(object)
    z = (df["x0"] - 0.8 * df["x1"] + 0.5 * df["x2"] + df["color"].map(
        {"red": 0.5, "green": 0.0, "blue": -0.5}) + rng.normal(0, 0.7, N_ROWS)).to_numpy()
    df["churned"] = np.where(z > 0, "yes", "no")
    df["medal"] = np.select([z < -0.6, z < 0.6], ["bronze", "silver"], "gold")
    df["flag"] = (z > 0.2).astype(int)
    df["level"] = np.select([z < -0.5, z < 0.5], [0, 1], 2)
    df["y"] = 3 * df["x0"] - 2 * df["x1"] + df["x2"] * df["x3"] + rng.normal(0, 0.3, N_ROWS)
    # NULLs where the pipeline imputes; a color the pipeline never saw in the held-out rows
    df["x0_missing"] = df["x0"].where(rng.random(N_ROWS) > 0.1)
    late = np.arange(N_TRAIN, N_ROWS)
    df.loc[late[rng.random(len(late)) < 0.15], "color"] = "purple"
    return df


DF = frame()
TRAIN = DF.iloc[:N_TRAIN]
TEST = DF.iloc[N_TRAIN:]
HELD_OUT = f"SELECT * FROM {TABLE} WHERE id > {N_TRAIN}"


def fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    return est


def pipeline(model):
    """Imputed x0 and scaled numbers, one-hot colors (unknown ignored) -> model."""
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    prep = ColumnTransformer([
        ("num", Pipeline([("impute", SimpleImputer()), ("scale", StandardScaler())]),
         ["x0_missing", "x1", "x2", "x3"]),
        ("cat", OneHotEncoder(handle_unknown="ignore"), ["color"])])
    return Pipeline([("prep", prep), ("model", model)])


class Env:
    def __init__(self, pg):
        self.pg = pg
        self.conn = pg.connect()
        self.conn.autocommit = True
        self.models = {}  # name -> fitted estimator, deployed once (tests may run alone: -k)

    def model(self, name, make):
        if name not in self.models:
            self.models[name] = make()
            pg_predict.deploy(self.conn, name, self.models[name])
        return self.models[name]

    def query(self, sql, params=None):
        return self.conn.execute(sql, params).fetchall()

    def load(self):
        self.conn.execute(f"CREATE TABLE {TABLE} (id int PRIMARY KEY, x0 real, x1 real, x2 real, x3 real, "
                          "x0_missing real, color text, churned text, medal text, flag int, level int, "
                          "y float8)")
        cols = ["x0", "x1", "x2", "x3", "x0_missing", "color", "churned", "medal", "flag", "level", "y"]
        with self.conn.cursor() as cur:
            with cur.copy(f"COPY {TABLE} (id, {', '.join(cols)}) FROM STDIN") as cp:
                for i, row in enumerate(DF[cols].itertuples(index=False)):
                    cp.write_row([i + 1] + [None if isinstance(v, float) and np.isnan(v) else
                                            v.item() if hasattr(v, "item") else v for v in row])
        self.conn.execute(f"ANALYZE {TABLE}")

    def evaluate(self, name, query, target, threshold=None):
        if threshold is None:
            row = self.query("SELECT evaluate_model(%s, %s, %s)", (name, query, target))
        else:
            row = self.query("SELECT evaluate_model(%s, %s, %s, %s)", (name, query, target, threshold))
        doc = row[0][0]
        return doc if isinstance(doc, dict) else json.loads(doc)

    def column(self, sql):
        return [r[0] for r in self.query(sql)]


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


def close(what, got, want, rtol=EXACT):
    if got is None:
        raise Failure(f"{what}: null, expected {want!r}")
    assert_close(what, [got], [want], atol=0.0 if want != 0 else 1e-15, rtol=rtol)


def label_text(c):
    if isinstance(c, (str, np.str_)):
        return str(c)
    x = float(c)
    return str(int(x)) if x.is_integer() else repr(x)


def check_classification(doc, y_true, y_pred, labels, model_classes, proba=None, threshold=None):
    """The document against sklearn.metrics on (y_true, y_pred), labels as text."""
    from sklearn.metrics import (accuracy_score, confusion_matrix, log_loss,
                                 precision_recall_fscore_support, roc_auc_score)
    assert_equal("task", doc["task"], "classification")
    assert_equal("rows", doc["rows"], len(y_true))
    assert_equal("classes", doc["classes"], list(model_classes))
    assert_equal("unseen_classes", doc["unseen_classes"], [c for c in labels if c not in model_classes])
    close("accuracy", doc["accuracy"], accuracy_score(y_true, y_pred))
    assert_equal("confusion_matrix", doc["confusion_matrix"],
                 confusion_matrix(y_true, y_pred, labels=labels).tolist())
    p, r, f, s = precision_recall_fscore_support(y_true, y_pred, labels=labels, zero_division=0)
    for i, c in enumerate(labels):
        got = doc["per_class"][c]
        close(f"precision[{c}]", got["precision"], p[i])
        close(f"recall[{c}]", got["recall"], r[i])
        close(f"f1[{c}]", got["f1"], f[i])
        assert_equal(f"support[{c}]", got["support"], int(s[i]))
    for average in ("macro", "weighted"):
        p, r, f, _ = precision_recall_fscore_support(y_true, y_pred, labels=labels, average=average,
                                                     zero_division=0)
        got = doc[f"{average}_avg"]
        close(f"{average} precision", got["precision"], p)
        close(f"{average} recall", got["recall"], r)
        close(f"{average} f1", got["f1"], f)
    unseen = len(labels) > len(model_classes)
    if proba is None or unseen:
        assert_equal("log_loss", doc["log_loss"], None)
    else:
        close("log_loss", doc["log_loss"], log_loss(y_true, proba, labels=list(model_classes)))
    if len(model_classes) == 2:
        assert_equal("positive_class", doc["positive_class"], model_classes[1])
        assert_equal("threshold", doc["threshold"], threshold)
        if proba is None or unseen or len(set(y_true)) < 2:
            assert_equal("roc_auc", doc["roc_auc"], None)
        else:
            close("roc_auc", doc["roc_auc"], roc_auc_score(np.asarray(y_true) == model_classes[1], proba[:, 1]))
    elif "roc_auc" in doc:
        raise Failure("a multiclass document has roc_auc")


def check_regression(doc, y_true, y_pred):
    from sklearn.metrics import (explained_variance_score, mean_absolute_error, mean_squared_error,
                                 r2_score)
    assert_equal("task", doc["task"], "regression")
    assert_equal("rows", doc["rows"], len(y_true))
    close("mse", doc["mse"], mean_squared_error(y_true, y_pred))
    close("rmse", doc["rmse"], mean_squared_error(y_true, y_pred, squared=False))
    close("mae", doc["mae"], mean_absolute_error(y_true, y_pred))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r2 = r2_score(y_true, y_pred)
    if np.isnan(r2):
        assert_equal("r2", doc["r2"], None)
    else:
        close("r2", doc["r2"], r2)
    close("explained_variance", doc["explained_variance"], explained_variance_score(y_true, y_pred))


def read_proba(env, name, where="", width=None):
    rows = env.query(f"SELECT predict_proba(%s, t) FROM {TABLE} t WHERE id > {N_TRAIN} {where} ORDER BY id", (name,))
    return np.array([r[0] for r in rows], dtype=np.float64)


def read_labels(env, name, where=""):
    return env.column(f"SELECT predict_label('{name}', t) FROM {TABLE} t WHERE id > {N_TRAIN} {where} ORDER BY id")


# ---- classifiers ------------------------------------------------------------------------

PIPELINE_FEATURES = ["x0_missing", "x1", "x2", "x3", "color"]


def binary_pipeline(env):
    from sklearn.linear_model import LogisticRegression
    return env.model("ev_binary", lambda: fit(pipeline(LogisticRegression()), TRAIN[PIPELINE_FEATURES],
                                              TRAIN["churned"]))


def medal_forest(env):
    from sklearn.ensemble import RandomForestClassifier
    return env.model("ev_medal", lambda: fit(RandomForestClassifier(n_estimators=15, max_depth=5, random_state=0),
                                             TRAIN[NUMERIC], TRAIN["medal"]))


def gradient_boosting(env):
    from sklearn.ensemble import GradientBoostingRegressor
    return env.model("ev_gbr", lambda: fit(GradientBoostingRegressor(n_estimators=20, max_depth=3, random_state=0),
                                           TRAIN[NUMERIC], TRAIN["y"]))


@test
def binary_strings_pipeline(env):
    est = binary_pipeline(env)
    classes = [str(c) for c in est.classes_]
    proba = read_proba(env, "ev_binary")
    assert_close("predict_proba vs scikit-learn", proba, est.predict_proba(TEST[PIPELINE_FEATURES]))
    y_true = TEST["churned"].tolist()
    for threshold in (0.5, 0.3, 0.9):
        doc = env.evaluate("ev_binary", HELD_OUT, "churned", threshold)
        y_pred = np.where(proba[:, 1] > threshold, classes[1], classes[0])
        check_classification(doc, y_true, y_pred, classes, classes, proba, threshold)
    assert_equal("model", doc["model"], "ev_binary")


@test
def binary_unseen_label_and_single_row(env):
    # rows whose target the model never saw: an extra class, counted wrong, no log loss or AUC
    binary_pipeline(env)
    proba = read_proba(env, "ev_binary")
    classes = ["no", "yes"]
    y_true = [("maybe" if i % 7 == 0 else v) for i, v in zip(TEST.index, TEST["churned"])]
    doc = env.evaluate("ev_binary", f"SELECT *, CASE WHEN (id - 1) % 7 = 0 THEN 'maybe' ELSE churned END AS answer "
                                    f"FROM {TABLE} WHERE id > {N_TRAIN}", "answer")
    y_pred = np.where(proba[:, 1] > 0.5, "yes", "no")
    check_classification(doc, y_true, y_pred, classes + ["maybe"], classes, proba, 0.5)
    # a single row
    first = N_TRAIN + 1
    doc = env.evaluate("ev_binary", f"SELECT * FROM {TABLE} WHERE id = {first}", "churned")
    check_classification(doc, [TEST["churned"].iloc[0]], y_pred[:1], classes, classes, proba[:1], 0.5)


@test
def multiclass_strings_forest(env):
    est = medal_forest(env)
    classes = [str(c) for c in est.classes_]
    proba = read_proba(env, "ev_medal")
    assert_close("predict_proba vs scikit-learn", proba, est.predict_proba(TEST[NUMERIC]))
    labels = read_labels(env, "ev_medal")
    doc = env.evaluate("ev_medal", HELD_OUT, "medal")
    check_classification(doc, TEST["medal"].tolist(), labels, classes, classes, proba)
    # the threshold is refused for a multiclass model
    try:
        env.evaluate("ev_medal", HELD_OUT, "medal", 0.7)
    except Exception as e:  # psycopg.errors.InvalidParameterValue
        if "threshold" not in str(e):
            raise
    else:
        raise Failure("threshold 0.7 on a multiclass model was accepted")


@test
def multiclass_unseen_label(env):
    medal_forest(env)
    proba = read_proba(env, "ev_medal")
    labels = read_labels(env, "ev_medal")
    classes = ["bronze", "gold", "silver"]
    y_true = [("platinum" if i % 5 == 0 else v) for i, v in zip(TEST.index, TEST["medal"])]
    doc = env.evaluate("ev_medal", f"SELECT *, CASE WHEN (id - 1) % 5 = 0 THEN 'platinum' ELSE medal END AS m "
                                   f"FROM {TABLE} WHERE id > {N_TRAIN}", "m")
    check_classification(doc, y_true, labels, classes + ["platinum"], classes, proba)


@test
def xgboost_binary(env):
    import xgboost as xgb
    est = env.model("ev_xgb_binary", lambda: fit(xgb.XGBClassifier(n_estimators=20, max_depth=3, learning_rate=0.3,
                                                                   random_state=0), TRAIN[NUMERIC], TRAIN["flag"]))
    proba = read_proba(env, "ev_xgb_binary")
    assert_close("predict_proba vs XGBoost", proba, est.predict_proba(TEST[NUMERIC]))
    classes = ["0", "1"]
    y_true = [label_text(v) for v in TEST["flag"]]
    for threshold in (0.5, 0.25):
        doc = env.evaluate("ev_xgb_binary", HELD_OUT, "flag", threshold)  # an int target, numeric labels
        y_pred = np.where(proba[:, 1] > threshold, "1", "0")
        check_classification(doc, y_true, y_pred, classes, classes, proba, threshold)
    # the same target as text compares with the labels' text
    doc = env.evaluate("ev_xgb_binary", f"SELECT *, flag::text AS flag_text FROM {TABLE} WHERE id > {N_TRAIN}",
                       "flag_text")
    check_classification(doc, y_true, np.where(proba[:, 1] > 0.5, "1", "0"), classes, classes, proba, 0.5)


@test
def xgboost_multiclass(env):
    import xgboost as xgb
    est = env.model("ev_xgb_multi", lambda: fit(xgb.XGBClassifier(n_estimators=15, max_depth=3,
                                                                  objective="multi:softprob", random_state=0),
                                                TRAIN[NUMERIC], TRAIN["level"]))
    proba = read_proba(env, "ev_xgb_multi")
    assert_close("predict_proba vs XGBoost", proba, est.predict_proba(TEST[NUMERIC]))
    labels = read_labels(env, "ev_xgb_multi")
    classes = ["0", "1", "2"]
    doc = env.evaluate("ev_xgb_multi", HELD_OUT, "level")
    check_classification(doc, [label_text(v) for v in TEST["level"]], labels, classes, classes, proba)
    # a numeric target with a value no class has: unseen "7"
    doc = env.evaluate("ev_xgb_multi", f"SELECT x0, x1, x2, x3, CASE WHEN id % 9 = 0 THEN 7 ELSE level END AS level "
                                       f"FROM {TABLE} WHERE id > {N_TRAIN}", "level")
    y_true = [("7" if (i + 1) % 9 == 0 else label_text(v)) for i, v in zip(TEST.index, TEST["level"])]
    check_classification(doc, y_true, labels, classes + ["7"], classes, proba)


@test
def without_probabilities(env):
    from sklearn.svm import LinearSVC
    est = env.model("ev_svc", lambda: fit(LinearSVC(max_iter=5000), TRAIN[NUMERIC], TRAIN["medal"]))
    labels = read_labels(env, "ev_svc")
    d = est.decision_function(TEST[NUMERIC])
    d = np.sort(d, axis=1)
    clear = d[:, -1] - d[:, -2] > 1e-5  # float32 may break a near tie either way
    assert_equal("predict_label vs scikit-learn", list(np.asarray(labels)[clear]),
                 list(est.predict(TEST[NUMERIC])[clear]))
    classes = [str(c) for c in est.classes_]
    doc = env.evaluate("ev_svc", HELD_OUT, "medal")
    check_classification(doc, TEST["medal"].tolist(), labels, classes, classes)


# ---- regressors -------------------------------------------------------------------------

@test
def regression_sklearn_and_xgboost(env):
    import xgboost as xgb
    from sklearn.linear_model import Ridge
    models = {
        "ev_ridge": env.model("ev_ridge", lambda: fit(pipeline(Ridge(alpha=0.5)), TRAIN[PIPELINE_FEATURES], TRAIN["y"])),
        "ev_gbr": gradient_boosting(env),
        "ev_xgb_reg": env.model("ev_xgb_reg", lambda: fit(xgb.XGBRegressor(n_estimators=20, max_depth=3, random_state=0),
                                                          TRAIN[NUMERIC], TRAIN["y"])),
    }
    for name, est in models.items():
        pred = np.array(env.column(f"SELECT predict('{name}', t) FROM {TABLE} t WHERE id > {N_TRAIN} ORDER BY id"))
        X = TEST[PIPELINE_FEATURES] if name == "ev_ridge" else TEST[NUMERIC]
        assert_close(f"{name}: predict vs the library", pred, est.predict(X), atol=1e-4, rtol=1e-5)
        check_regression(env.evaluate(name, HELD_OUT, "y"), TEST["y"].to_numpy(), pred)
        # a single row: r2 is null (scikit-learn's NaN)
        check_regression(env.evaluate(name, f"SELECT * FROM {TABLE} WHERE id = {N_TRAIN + 1}", "y"),
                         TEST["y"].to_numpy()[:1], pred[:1])


@test
def regression_constant_target(env):
    gradient_boosting(env)
    pred = np.array(env.column(f"SELECT predict('ev_gbr', t) FROM {TABLE} t WHERE id > {N_TRAIN} ORDER BY id"))
    constant = np.full(len(pred), 2.5)
    doc = env.evaluate("ev_gbr", f"SELECT x0, x1, x2, x3, 2.5 AS target FROM {TABLE} WHERE id > {N_TRAIN}", "target")
    check_regression(doc, constant, pred)
    assert_equal("r2 of a constant target", doc["r2"], 0.0)
    # the prediction itself as the target of a single row: perfect
    doc = env.evaluate("ev_gbr", f"SELECT x0, x1, x2, x3, predict('ev_gbr', t) AS target FROM {TABLE} t "
                                 f"WHERE id = {N_TRAIN + 1}", "target")
    assert_equal("explained variance of one perfect row", doc["explained_variance"], 1.0)
    assert_equal("mse of one perfect row", doc["mse"], 0.0)


# ---- the scoring path ---------------------------------------------------------------------

@test
def scored_by_the_batch_node(env):
    """auto_explain shows the plan of the query evaluate_model runs: the calls are in a
    PredictBatch node, not evaluated per row."""
    binary_pipeline(env)
    medal_forest(env)
    gradient_boosting(env)
    plans = []
    conn = env.pg.connect()
    try:
        conn.add_notice_handler(lambda d: plans.append(d.message_primary or ""))
        conn.execute("LOAD 'auto_explain'")
        conn.execute("SET auto_explain.log_min_duration = 0")
        conn.execute("SET auto_explain.log_nested_statements = on")
        conn.execute("SET client_min_messages = log")
        for name, target in (("ev_binary", "churned"), ("ev_medal", "medal"), ("ev_gbr", "y")):
            plans.clear()
            conn.execute("SELECT evaluate_model(%s, %s, %s)", (name, HELD_OUT, target))
            nested = [p for p in plans if "evaluate_model" not in p and "predict" in p]
            if not nested:
                raise Failure(f"{name}: auto_explain logged no plan of the scoring query: {plans!r}")
            if not any("PredictBatch" in p for p in nested):
                raise Failure(f"{name}: the scoring query has no PredictBatch node: {nested[0]}")
    finally:
        conn.close()


if __name__ == "__main__":
    main(fixture=make_env)
