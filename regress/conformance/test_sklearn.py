#!/usr/bin/python3
"""Conformance: pg_predict against scikit-learn, row for row, for pipelines deployed with the
Python client (python/pg_predict).

Every pipeline of sklearn_cases.py (ColumnTransformer with imputed + scaled numeric columns and
one-hot / ordinal encoded text columns, into each linear and tree model family; the scalers;
FeatureUnion; column selections; numeric categories; a text imputer) is fitted by
/usr/bin/python3's scikit-learn on seeded random data, deployed with pg_predict.deploy(), and
scored over one table holding every column (NULLs where the pipelines impute, text as text,
categories the models never saw in the last rows). predict(name, row) and predict_proba(name,
row) must equal scikit-learn's predict / predict_proba on every row within
max(1e-5, 1e-5 * |expected|), through the PredictBatch node and with
pg_predict.enable_batching = off. Labels of near ties may take either side.

The wide cases (50 columns into SelectKBest or an L1 logistic regression, table `wide`) also
check the optimizer: explain_model() and the scan's Output in EXPLAIN VERBOSE must name only
the columns the fitted model uses.

Run: /usr/bin/python3 regress/conformance/test_sklearn.py [-k name] [--list]
Needs the extension installed (make install). Last line: 'conformance: N passed, M failed'.
"""

import contextlib
import os
import subprocess
import sys
import tempfile

import numpy as np

import sklearn_cases
from harness import Failure, add_test, assert_close, assert_equal, main, to_floats
from pgcluster import Cluster

import pg_predict  # noqa: E402  (python/ is put on sys.path by sklearn_cases)

TABLE = "customers"
PYTHON_DIR = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                          "python"))


class Env:
    def __init__(self, pg):
        self.pg = pg
        self._conn = None
        self.loaded = False

    @property
    def conn(self):
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._conn = self.pg.connect()
        return self._conn

    def query(self, sql, params=None):
        return self.conn.execute(sql, params).fetchall()

    def load(self):
        """One table with every column of the frame; ids 1..n in the frame's order."""
        if self.loaded:
            return
        df, _ = sklearn_cases.frame()
        cols = list(df.columns)
        types = sklearn_cases.SQL_TYPES
        self.conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
        self.conn.execute(f"CREATE TABLE {TABLE} (id int PRIMARY KEY, note text, "
                          + ", ".join(f"{c} {types[c]}" for c in cols) + ")")

        def value(c, v):
            if v is None or (isinstance(v, float) and np.isnan(v)):
                return None
            if types[c] == "text":
                return str(v)
            if types[c] in ("integer", "smallint"):
                return int(v)
            return float(v)

        with self.conn.cursor() as cur:
            with cur.copy(f"COPY {TABLE} (id, note, {', '.join(cols)}) FROM STDIN") as cp:
                for i, row in enumerate(df.itertuples(index=False)):
                    cp.write_row([i + 1, f"row {i + 1}"]
                                 + [value(c, v) for c, v in zip(cols, row)])
        self.conn.execute(f"ANALYZE {TABLE}")
        self.loaded = True

    def drop_model(self, name):
        self.conn.execute("SELECT drop_model(name) FROM models WHERE name = %s", [name])

    def model_info(self, name):
        cur = self.conn.execute("SELECT * FROM models WHERE name = %s", [name])
        row = cur.fetchone()
        if row is None:
            raise Failure(f"model {name} is not in the models view")
        return dict(zip([d.name for d in cur.description], row))


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


def score(env, model, classifier, batching, proba, table=TABLE):
    """[(id, predict, predict_proba)] over the whole table, ordered by id."""
    cols = ["id", "predict(%(m)s, t)"]
    if proba:
        cols.append("predict_proba(%(m)s, t)")
    sql = f"SELECT {', '.join(cols)} FROM {table} t ORDER BY id"
    with env.conn.transaction():
        env.conn.execute(f"SET LOCAL pg_predict.enable_batching = {'on' if batching else 'off'}")
        if batching:  # the batched path must really be taken
            plan = "\n".join(r[0] for r in env.query("EXPLAIN (costs off) " + sql, {"m": model}))
            if "PredictBatch" not in plan:
                raise Failure(f"{model}: no PredictBatch node in the plan:\n{plan}")
        return env.query(sql, {"m": model})


def check(env, case, model, table=TABLE):
    proba = case.proba is not None
    for batching in (True, False):
        path = "batched" if batching else "per-row"
        rows = score(env, model, case.classifier, batching, proba, table)
        assert_equal(f"{model} ({path}): rows", len(rows), len(case.X))
        ids = [r[0] for r in rows]
        got = to_floats([r[1] for r in rows])
        if case.classifier:
            got = np.where(case.ambiguous, case.predict, got)
        got = np.where(case.tied, case.predict, got)  # equally near neighbours: a tie-break
        assert_close(f"{model} ({path}): predict(row)", got, case.predict, ids=ids)
        if proba:
            got = to_floats([r[2] for r in rows], case.proba.shape[1])
            assert_close(f"{model} ({path}): predict_proba(row)",
                         np.where(case.tied[:, None], case.proba, got), case.proba, ids=ids)


def case_test(name):
    def run(env):
        case = sklearn_cases.cases()[name]
        env.load()
        model = f"sk_{name}"
        env.drop_model(model)
        doc = pg_predict.deploy(env.conn, model, case.estimator)
        info = env.model_info(model)
        assert_equal(f"{model}: models.format", info["format"], "sklearn")
        assert_equal(f"{model}: models.task", info["task"], doc["task"])
        if case.classifier:
            # text (0.4.0): float8's text of each numeric label
            assert_equal(f"{model}: models.classes", [float(c) for c in info["classes"] or []],
                         [float(c) for c in case.classes])
        check(env, case, model)
        env.drop_model(model)
    return run


# One test per pipeline; the names say which operator or model family each one covers.
for _name in sklearn_cases.cases():
    add_test(f"sklearn[{_name}]", case_test(_name))


def test_linear_margin_equals_the_tensor_program(env):
    """The one-output linear pipelines whose program takes the fused native margin
    (sklearn_cases.LINEAR_MARGIN_CASES): predict and predict_proba, batched and per row, are
    value for value what the all-tensor program of the same spec gives (pg_predict.strategy =
    gemm compiles it), NULLs and unseen categories included; check() holds them to scikit-learn.
    A program stored before the fused op existed (the tensor program, here the one deploy
    stores with strategy gemm, copied into the native model's catalog row) still runs and
    gives the same values."""
    env.load()

    def stored_fused(model):
        return env.query("SELECT position('linear_terms'::bytea IN program) > 0 FROM model_catalog "
                         "WHERE name = %s", [model])[0][0]

    for name in sklearn_cases.LINEAR_MARGIN_CASES:
        case = sklearn_cases.cases()[name]
        model, old = f"sk_lm_{name}", f"sk_lm_{name}_old"
        env.drop_model(model)
        env.drop_model(old)
        pg_predict.deploy(env.conn, model, case.estimator)
        assert_equal(f"{model}: strategy", env.model_info(model)["strategy"], "native")
        assert_equal(f"{model}: the stored program takes the fused op", stored_fused(model), True)
        proba = case.proba is not None
        fused = {}
        for batching in (True, False):
            fused[batching] = score(env, model, case.classifier, batching, proba)
            with env.conn.transaction():
                env.conn.execute("SET LOCAL pg_predict.strategy = gemm")
                tensor = score(env, model, case.classifier, batching, proba)
            assert_equal(f"{model} (batching {batching}): fused vs tensor program", fused[batching], tensor)
        pg_predict.deploy(env.conn, old, case.estimator, strategy="gemm")
        assert_equal(f"{old}: a tensor program", stored_fused(old), False)
        with env.conn.transaction():
            env.conn.execute("UPDATE model_catalog SET program = (SELECT program FROM model_catalog "
                             "WHERE name = %s) WHERE name = %s", [old, model])
        assert_equal(f"{model}: the old program is stored", stored_fused(model), False)
        env.conn.close()  # a new backend: no program cached
        for batching in (True, False):
            assert_equal(f"{model} (batching {batching}): old stored program",
                         score(env, model, case.classifier, batching, proba), fused[batching])
        env.drop_model(model)
        env.drop_model(old)


def test_deploy_replace_and_strategy(env):
    """deploy() over an existing name adds a version and deploys it (replace=True, from before
    versions, the same; stage=True stages it); strategy reaches create_model's options."""
    env.load()
    c = sklearn_cases.cases()
    env.drop_model("sk_replace")
    pg_predict.deploy(env.conn, "sk_replace", c["ct_random_forest"].estimator,
                      strategy="tree_traversal")
    assert_equal("strategy", env.model_info("sk_replace")["strategy"], "tree_traversal")
    pg_predict.deploy(env.conn, "sk_replace", c["gradient_boosting_binary"].estimator)
    check(env, c["gradient_boosting_binary"], "sk_replace")
    pg_predict.deploy(env.conn, "sk_replace", c["ct_random_forest"].estimator, stage=True)
    check(env, c["gradient_boosting_binary"], "sk_replace")
    pg_predict.deploy(env.conn, "sk_replace", c["gradient_boosting_binary"].estimator,
                      replace=True)
    check(env, c["gradient_boosting_binary"], "sk_replace")
    versions = env.conn.execute("SELECT count(*) FROM model_versions WHERE name = 'sk_replace'").fetchone()[0]
    assert_equal("versions", versions, 4)
    env.drop_model("sk_replace")


def test_cli_deploy(env):
    """python3 -m pg_predict deploy --dsn ... --name ... model.joblib [--replace]: every deploy
    of the name adds a version."""
    import joblib
    env.load()
    case = sklearn_cases.cases()["ct_logistic_binary"]
    env.drop_model("sk_cli")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.joblib")
        joblib.dump(case.estimator, path)
        cmd = [sys.executable, "-m", "pg_predict", "deploy", "--dsn", env.pg.dsn,
               "--name", "sk_cli", path]
        run_env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
        for extra in ([], ["--replace"]):
            p = subprocess.run(cmd + extra, capture_output=True, text=True, env=run_env,
                               timeout=300)
            if p.returncode != 0:
                raise Failure(f"deploy {' '.join(extra)} exited with {p.returncode}: {p.stderr}")
        p = subprocess.run(cmd, capture_output=True, text=True, env=run_env, timeout=300)
        if p.returncode != 0:
            raise Failure(f"deploy over an existing name exited with {p.returncode}: {p.stderr}")
    versions = env.conn.execute("SELECT count(*) FROM model_versions WHERE name = 'sk_cli'").fetchone()[0]
    assert_equal("versions", versions, 3)
    check(env, case, "sk_cli")
    env.drop_model("sk_cli")


def test_no_probabilities_kmeans_svc(env):
    """KMeans and SVC (even with probability=True) predict; their predict_proba refuses."""
    import warnings
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import SVC
    env.load()
    df, targets = sklearn_cases.frame()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        svc = make_pipeline(sklearn_cases._prep(), SVC(probability=True, random_state=0))
        svc.fit(df[sklearn_cases.ALL].iloc[:sklearn_cases.N_TRAIN],
                targets["multiclass"][:sklearn_cases.N_TRAIN])
    for model, est in (("sk_kmeans_noproba", sklearn_cases.cases()["kmeans"].estimator),
                       ("sk_svc_noproba", svc)):
        env.drop_model(model)
        pg_predict.deploy(env.conn, model, est)
        got = to_floats([r[1] for r in score(env, model, True, True, False)])
        assert_close(f"{model}: predict(row)", got,
                     np.asarray(est.predict(df[sklearn_cases.ALL]), dtype=np.float64))
        try:
            with env.conn.transaction():
                env.query(f"SELECT predict_proba(%(m)s, t) FROM {TABLE} t LIMIT 1", {"m": model})
        except Exception as e:  # noqa: BLE001
            if "does not give class probabilities" not in str(e):
                raise Failure(f"{model}: predict_proba failed with {e}") from None
        else:
            raise Failure(f"{model}: predict_proba did not refuse")
        env.drop_model(model)


def test_outlier_detector_has_no_probabilities(env):
    """IsolationForest is a classifier of -1 / 1 without predict_proba: the SQL function says so."""
    env.load()
    case = sklearn_cases.cases()["isolation_forest_auto"]
    env.drop_model("sk_outliers")
    pg_predict.deploy(env.conn, "sk_outliers", case.estimator)
    try:
        with env.conn.transaction():
            env.query(f"SELECT predict_proba(%(m)s, t) FROM {TABLE} t LIMIT 1", {"m": "sk_outliers"})
    except Exception as e:
        if "does not give class probabilities" not in str(e):
            raise Failure(f"predict_proba refused with {e!r}")
    else:
        raise Failure("predict_proba of an IsolationForest did not refuse")
    env.drop_model("sk_outliers")


def load_wide(env):
    """Table `wide`: id and the 50 columns of sklearn_cases.wide_frame()."""
    df, _ = sklearn_cases.wide_frame()
    cols = list(df.columns)
    env.conn.execute("DROP TABLE IF EXISTS wide")
    env.conn.execute("CREATE TABLE wide (id int PRIMARY KEY, "
                     + ", ".join(f"{c} double precision" for c in cols) + ")")
    with env.conn.cursor() as cur:
        with cur.copy(f"COPY wide (id, {', '.join(cols)}) FROM STDIN") as cp:
            for i, row in enumerate(df.itertuples(index=False)):
                cp.write_row([i + 1] + [float(v) for v in row])
    env.conn.execute("ANALYZE wide")


def wide_test(name):
    """50 columns into a selector or an L1 model: the optimizer must make the model read only the
    columns it uses (explain_model, and the scan's Output in EXPLAIN VERBOSE), and still score
    like scikit-learn."""
    def run(env):
        case = sklearn_cases.wide_cases()[name]
        load_wide(env)
        model = f"sk_{name}"
        env.drop_model(model)
        pg_predict.deploy(env.conn, model, case.estimator)
        used = sklearn_cases.wide_columns_read(case)
        if not 0 < len(used) < 25:
            raise Failure(f"{model}: the fit uses {len(used)} of 50 columns; the case tests nothing")
        if name == "wide_select_k_best":
            assert_equal(f"{model}: columns used", len(used), 5)
        info = env.query("SELECT explain_model(%s)", [model])[0][0]
        assert_equal(f"{model}: explain_model columns_read", info["columns_read"], used)
        assert_equal(f"{model}: models.columns_read", env.model_info(model)["columns_read"], used)
        assert_equal(f"{model}: explain_model columns_not_read", info["columns_not_read"],
                     [c for c in sklearn_cases.WIDE if c not in used])
        plan = [r[0] for r in env.query(
            "EXPLAIN (costs off, verbose) SELECT id, predict(%s, t) FROM wide t", [model])]
        scan = [i for i, line in enumerate(plan) if "Seq Scan on" in line]
        if not scan or "PredictBatch" not in "\n".join(plan):
            raise Failure(f"{model}: no PredictBatch over a Seq Scan:\n" + "\n".join(plan))
        output = plan[scan[0] + 1].strip()
        assert_equal(f"{model}: the scan's output", output,
                     "Output: " + ", ".join("t." + c for c in ["id"] + used))
        check(env, case, model, table="wide")
        env.drop_model(model)
    return run


for _name in sklearn_cases.wide_cases():
    add_test(f"sklearn[{_name}]", wide_test(_name))


def test_float8_columns_reach_float64_models_unrounded(env):
    """Models that compute in float64 read float8 and numeric columns as float64. Two columns
    near 1e6 whose difference is the signal: rounded to float32 (a step of 0.0625 there) the
    difference would be off by up to 0.06 of values around 5, so the 1e-6 bound below holds only
    when the batch is float64 (the result itself is float32: relative 6e-8)."""
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    import pandas as pd

    rng = np.random.default_rng(5)
    n = 500
    base = 1e6 + rng.uniform(0, 100, n)
    df = pd.DataFrame({"a": base + rng.uniform(0, 2, n), "b": base, "c": rng.uniform(-1, 1, n)})
    y = 5 * (df["a"] - df["b"]) + 0.5 * df["c"]
    estimators = {"plain": LinearRegression(),
                  "scaled": make_pipeline(StandardScaler(), LinearRegression())}
    env.conn.execute("DROP TABLE IF EXISTS near_1e6")
    env.conn.execute("CREATE TABLE near_1e6 (id int PRIMARY KEY, a float8, b numeric, c float8)")
    with env.conn.cursor() as cur:
        with cur.copy("COPY near_1e6 (id, a, b, c) FROM STDIN") as cp:
            for i, row in enumerate(df.itertuples(index=False)):
                cp.write_row([i + 1, repr(row.a), repr(row.b), repr(row.c)])
    for name, estimator in estimators.items():
        estimator.fit(df, y)
        want = estimator.predict(df)
        if np.abs(want - y).max() > 1e-6:
            raise Failure(f"near_1e6 {name}: scikit-learn's own fit is off; the case tests nothing")
        model = f"sk_near_1e6_{name}"
        env.drop_model(model)
        pg_predict.deploy(env.conn, model, estimator)
        for batching in (True, False):
            with env.conn.transaction():
                env.conn.execute(f"SET LOCAL pg_predict.enable_batching = {'on' if batching else 'off'}")
                rows = env.query("SELECT id, predict(%s, t), predict(%s, ARRAY[a, b, c]::float8[]) "
                                 "FROM near_1e6 t ORDER BY id", [model, model])
            ids = [r[0] for r in rows]
            path = "batched" if batching else "per-row"
            for k, arg in ((1, "row"), (2, "float8[]")):
                assert_close(f"{model} ({path}): predict({arg})", to_floats([r[k] for r in rows]),
                             want, atol=1e-6, rtol=1e-6, ids=ids)
        env.drop_model(model)
    env.conn.execute("DROP TABLE near_1e6")


def _proba_error(env, model):
    """The error predict_proba(model, row) raises, or a Failure when it scores."""
    try:
        with env.conn.transaction():
            env.query(f"SELECT predict_proba(%(m)s, t) FROM {TABLE} t LIMIT 1", {"m": model})
    except Exception as e:  # noqa: BLE001
        return e
    raise Failure(f"{model}: predict_proba did not refuse")


def test_predict_proba_refusals_say_why(env):
    """'as in scikit-learn' only where scikit-learn has no predict_proba either: SGDClassifier
    with the hinge loss; not for a one-class HistGradientBoostingClassifier or MLPClassifier
    (scikit-learn gives two columns for their one class) nor for an SVC."""
    env.load()
    cases = sklearn_cases.cases()
    want = {"sgd_classifier_hinge": "Its estimator, SGDClassifier, has only a decision function, "
                                    "as in scikit-learn.",
            "one_class_hist_gradient_boosting": "pg_predict computes no probabilities for its "
                                                "estimator (HistGradientBoostingClassifier).",
            "one_class_mlp": "pg_predict computes no probabilities for its estimator "
                             "(MLPClassifier).",
            "svc_rbf_multiclass": "pg_predict computes no probabilities for its estimator (SVC).",
            "ridge_classifier_cv": "Its estimator, RidgeClassifierCV, has only a decision "
                                   "function, as in scikit-learn."}
    for name, detail in want.items():
        model = f"sk_why_{name}"
        env.drop_model(model)
        pg_predict.deploy(env.conn, model, cases[name].estimator)
        e = _proba_error(env, model)
        if "does not give class probabilities" not in str(e):
            raise Failure(f"{model}: predict_proba failed with {e}")
        assert_equal(f"{model}: detail", getattr(getattr(e, "diag", None), "message_detail", None),
                     detail)
        env.drop_model(model)


def test_one_class_document_of_a_model_that_needs_two(env):
    """classes with one label is refused, naming the estimator, where scikit-learn itself cannot
    fit one class (LogisticRegression), and with no label at all."""
    import json
    doc = pg_predict.export(sklearn_cases.cases()["ct_logistic_binary"].estimator)
    for classes, needle in (([3], "scikit-learn cannot fit LogisticRegression on one class"),
                            ([], "must list at least one label")):
        doc["classes"] = classes
        try:
            with env.conn.transaction():
                env.query("SELECT create_model('sk_one_bad', %s::jsonb, 'sklearn')",
                          [json.dumps(doc)])
        except Exception as e:  # noqa: BLE001
            if needle not in str(e):
                raise Failure(f"classes {classes}: refused with {e}") from None
        else:
            raise Failure(f"classes {classes}: create_model did not refuse")


def test_min_max_scaler_clip(env):
    """MinMaxScaler(clip=True): values outside the fitted range are clipped to feature_range
    (fitted on [0, 1], scored on [-1, 2]: most rows clip), NULL stays missing."""
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MinMaxScaler
    import pandas as pd

    rng = np.random.default_rng(7)
    f32 = lambda a: a.astype(np.float32).astype(np.float64)  # noqa: E731
    train = pd.DataFrame({"a": f32(rng.uniform(0, 1, 200)), "b": f32(rng.uniform(0, 1, 200))})
    y = 3 * train["a"] - 2 * train["b"] ** 2
    test = pd.DataFrame({"a": f32(rng.uniform(-1, 2, 300)), "b": f32(rng.uniform(-1, 2, 300))})
    est = make_pipeline(MinMaxScaler(feature_range=(-0.5, 2.0), clip=True), LinearRegression())
    est.fit(train, y)
    want = est.predict(test)
    scaled = est[0].transform(test)
    if not ((scaled == -0.5) | (scaled == 2.0)).any(axis=1).mean() > 0.5:
        raise Failure("fewer than half the rows clip; the case tests nothing")
    env.conn.execute("DROP TABLE IF EXISTS clip_rows")
    env.conn.execute("CREATE TABLE clip_rows (id int PRIMARY KEY, a real, b real)")
    with env.conn.cursor() as cur:
        with cur.copy("COPY clip_rows (id, a, b) FROM STDIN") as cp:
            for i, row in enumerate(test.itertuples(index=False)):
                cp.write_row([i + 1, float(row.a), float(row.b)])
    env.drop_model("sk_clip")
    pg_predict.deploy(env.conn, "sk_clip", est)
    for batching in (True, False):
        with env.conn.transaction():
            env.conn.execute(f"SET LOCAL pg_predict.enable_batching = {'on' if batching else 'off'}")
            rows = env.query("SELECT id, predict('sk_clip', t) FROM clip_rows t ORDER BY id")
        assert_close(f"sk_clip ({'batched' if batching else 'per-row'})",
                     to_floats([r[1] for r in rows]), want, ids=[r[0] for r in rows])
    env.drop_model("sk_clip")
    env.conn.execute("DROP TABLE clip_rows")


def test_box_cox_outside_its_domain_is_null(env):
    """Box-Cox of a value <= 0 (scikit-learn raises) and of NULL predicts NULL, batched and per
    row; the rows inside the domain predict what scikit-learn does."""
    import pandas as pd
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import PowerTransformer

    df, targets = sklearn_cases.frame()
    n = sklearn_cases.N_TRAIN
    est = make_pipeline(PowerTransformer(method="box-cox"), Ridge())
    est.fit(df[["income", "rate"]].iloc[:n], targets["regression"][:n])
    rows = [(1, 20000.0, 0.5), (2, 0.0, 0.5), (3, -4.0, 0.25), (4, None, 0.5), (5, 310.5, 0.125),
            (6, 1000.0, 0.0)]
    inside = [r for r in rows if r[1] is not None and r[1] > 0 and r[2] > 0]
    want = dict(zip([r[0] for r in inside], est.predict(
        pd.DataFrame({"income": [r[1] for r in inside], "rate": [r[2] for r in inside]}))))
    env.conn.execute("DROP TABLE IF EXISTS box_cox_rows")
    env.conn.execute("CREATE TABLE box_cox_rows (id int PRIMARY KEY, income float8, rate real)")
    with env.conn.cursor() as cur:
        cur.executemany("INSERT INTO box_cox_rows VALUES (%s, %s, %s)", rows)
    env.drop_model("sk_box_cox")
    pg_predict.deploy(env.conn, "sk_box_cox", est)
    for batching in (True, False):
        path = "batched" if batching else "per-row"
        with env.conn.transaction():
            env.conn.execute(f"SET LOCAL pg_predict.enable_batching = {'on' if batching else 'off'}")
            got = env.query("SELECT id, predict('sk_box_cox', t) FROM box_cox_rows t ORDER BY id")
        for i, v in got:
            if i in want:
                assert_close(f"sk_box_cox ({path}) row {i}", [v], [want[i]])
            elif v is not None:
                raise Failure(f"sk_box_cox ({path}) row {i}: {v}, not NULL, outside box-cox's domain")
    env.drop_model("sk_box_cox")
    env.conn.execute("DROP TABLE box_cox_rows")


def test_ensembles_string_labels_and_refusals(env):
    """String labels through Voting and Stacking (predict_label = scikit-learn's predict). A
    hard-voting VotingClassifier has no predict_proba (as in scikit-learn); Voting has no
    decision_function; a stacking member's decision_function must be a linear classifier's;
    a soft vote over a member without probabilities is refused at create_model."""
    import json
    env.load()
    cases = sklearn_cases.cases()
    model = "sk_ens_hard"
    env.drop_model(model)
    pg_predict.deploy(env.conn, model, cases["ens_voting_hard_four"].estimator)
    e = _proba_error(env, model)
    assert_equal(f"{model}: detail", getattr(getattr(e, "diag", None), "message_detail", None),
                 "Its estimator, VotingClassifier with voting='hard', has no predict_proba, as in "
                 "scikit-learn.")
    try:
        with env.conn.transaction():
            env.query(f"SELECT decision_function(%(m)s, t) FROM {TABLE} t LIMIT 1", {"m": model})
    except Exception as err:  # noqa: BLE001
        if "decision_function is not available for scikit-learn's VotingClassifier" not in str(err):
            raise Failure(f"{model}: decision_function refused with {err}") from None
    else:
        raise Failure(f"{model}: decision_function did not refuse")
    env.drop_model(model)

    def refused(doc, *needles):
        try:
            with env.conn.transaction():
                env.query("SELECT create_model('sk_ens_bad', %s::jsonb, 'sklearn')", [json.dumps(doc)])
        except Exception as err:  # noqa: BLE001
            for needle in needles:
                if needle not in str(err):
                    raise Failure(f"refused with {err}, which does not say {needle!r}") from None
            return
        raise Failure(f"create_model of {json.dumps(doc)[:200]} did not refuse")

    # String labels: the members predict indices into the ensemble's classes; predict_label
    # gives scikit-learn's label on every row, batched and per row.
    from sklearn.ensemble import StackingClassifier, VotingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.tree import DecisionTreeClassifier
    df, targets = sklearn_cases.frame()
    cols = sklearn_cases.ALL
    y = np.array(["bronze", "gold", "silver"])[targets["multiclass"]]
    for kind, ens in (("voting", VotingClassifier(
            [("dt", DecisionTreeClassifier(max_depth=3, random_state=0)),
             ("lr", LogisticRegression(max_iter=2000))], voting="soft")),
                      ("stacking", StackingClassifier(
            [("dt", DecisionTreeClassifier(max_depth=3, random_state=0)),
             ("lr", LogisticRegression(max_iter=2000))],
            final_estimator=LogisticRegression(max_iter=2000)))):
        est = make_pipeline(sklearn_cases._prep(), ens).fit(df[cols].iloc[:sklearn_cases.N_TRAIN],
                                                            y[:sklearn_cases.N_TRAIN])
        want = [str(v) for v in est.predict(df[cols])]
        name = f"sk_ens_{kind}_strings"
        env.drop_model(name)
        pg_predict.deploy(env.conn, name, est)
        for batching in (True, False):
            with env.conn.transaction():
                env.conn.execute(f"SET LOCAL pg_predict.enable_batching = {'on' if batching else 'off'}")
                got = [r[0] for r in env.query(
                    f"SELECT predict_label(%(m)s, t) FROM {TABLE} t ORDER BY id", {"m": name})]
            assert_equal(f"{name} (batching {batching}): predict_label", got, want)
        env.drop_model(name)

    # A k-NN member gives no label for a row with NULL (scikit-learn refuses NaN there): the
    # hard vote is NULL on those rows, not a vote of the other members; scikit-learn's elsewhere.
    from sklearn.neighbors import KNeighborsClassifier
    train = df[["age", "income"]].iloc[:sklearn_cases.N_TRAIN].dropna()
    est = VotingClassifier([("knn", KNeighborsClassifier(3)),
                            ("dt", DecisionTreeClassifier(max_depth=3, random_state=0))]).fit(
        train, targets["binary"][train.index])
    name = "sk_ens_knn_null"
    env.drop_model(name)
    pg_predict.deploy(env.conn, name, est)
    rows = df[["age", "income"]]
    for batching in (True, False):
        with env.conn.transaction():
            env.conn.execute(f"SET LOCAL pg_predict.enable_batching = {'on' if batching else 'off'}")
            got = [r[0] for r in env.query(f"SELECT predict(%(m)s, t) FROM {TABLE} t ORDER BY id",
                                           {"m": name})]
        nan = rows["age"].isna().to_numpy()
        assert_equal(f"{name} (batching {batching}): NULL rows", [g is None for g in got], list(nan))
        assert_close(f"{name} (batching {batching}): predict",
                     to_floats([g for g, n in zip(got, nan) if not n]), est.predict(rows[~nan]))
    env.drop_model(name)

    stack = pg_predict.export(cases["ens_stacking_multiclass_auto"].estimator)
    stack["steps"][-1]["stack_methods"][0] = "decision_function"  # the forest
    refused(stack, "StackingClassifier", "stack_methods[0]", "decision_function",
            "RandomForestClassifier")
    soft = pg_predict.export(cases["ens_voting_hard_four"].estimator)
    soft["steps"][-1]["voting"] = "soft"  # over a RidgeClassifier
    refused(soft, "VotingClassifier", "estimators[2]", "voting=\"soft\" over RidgeClassifier")


def test_radius_neighbors_without_neighbours_is_null(env):
    """A row with no training row within the radius: the regressor predicts NULL (scikit-learn:
    NaN and a warning), the classifier without outlier_label too (scikit-learn raises), with
    predict_proba NULL; the other rows as scikit-learn, batched and per row."""
    import warnings
    from sklearn.neighbors import RadiusNeighborsClassifier, RadiusNeighborsRegressor
    from sklearn.pipeline import make_pipeline
    df, targets = sklearn_cases.frame()
    n = sklearn_cases.N_TRAIN
    X = df[sklearn_cases.ALL]
    env.load()
    for model, est, target in (
            ("sk_radius_reg_null", RadiusNeighborsRegressor(1.2), "regression"),
            ("sk_radius_clf_null", RadiusNeighborsClassifier(1.2, weights="distance"), "multiclass")):
        pipe = make_pipeline(sklearn_cases._prep(), est).fit(X.iloc[:n], targets[target][:n])
        _, ind = pipe[-1].radius_neighbors(pipe[:-1].transform(X))
        empty = np.array([len(i) == 0 for i in ind])
        if not empty.any() or empty.all():
            raise Failure(f"{model}: want rows with and without neighbours, got {empty.sum()} empty")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = np.full(len(X), np.nan)
            want[~empty] = pipe.predict(X[~empty])
        env.drop_model(model)
        pg_predict.deploy(env.conn, model, pipe)
        for batching in (True, False):
            with env.conn.transaction():
                env.conn.execute(f"SET LOCAL pg_predict.enable_batching = {'on' if batching else 'off'}")
                got = env.query(f"SELECT id, predict(%(m)s, t) FROM {TABLE} t ORDER BY id", {"m": model})
            values = np.array([np.nan if r[1] is None else r[1] for r in got], dtype=np.float64)
            if (np.isnan(values) != empty).any():
                raise Failure(f"{model} (batching {batching}): NULL on rows "
                              f"{np.flatnonzero(np.isnan(values))[:5]}, no neighbours on {np.flatnonzero(empty)[:5]}")
            assert_close(f"{model} (batching {batching})", values[~empty], want[~empty])
        env.drop_model(model)


def test_tenants_sharing_one_featurizer(env):
    """Per-tenant models over one fitted ColumnTransformer (issue 30, PRETZEL), named per row:
    five models (two 3-class logistic regressions, a gradient-boosted classifier and
    regressor, a random forest) share the transformer, a sixth has its own, fitted on other
    rows. The logistic regressions read every column, so their compiled featurizers are the
    same and must be shared; the trees' may differ (the optimizer drops the columns a model
    never reads). Every row must equal its own pipeline's scikit-learn prediction with
    pg_predict.share_featurizers on (EXPLAIN ANALYZE counts shared runs) and off (it counts
    none), per row, and with pg_predict.cache_size = 0; NULL names give NULL."""
    from sklearn.ensemble import (GradientBoostingClassifier, GradientBoostingRegressor,
                                  RandomForestRegressor)
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    env.load()
    df, targets = sklearn_cases.frame()
    train = df.iloc[:sklearn_cases.N_TRAIN][sklearn_cases.ALL]
    shared = sklearn_cases._prep().fit(train)
    own = sklearn_cases._prep().fit(train.iloc[::2])
    z = shared.transform(train)
    tenants = [
        (shared, LogisticRegression(max_iter=2000), "multiclass"),
        (shared, LogisticRegression(C=0.05, max_iter=2000), "multiclass"),
        (shared, GradientBoostingClassifier(n_estimators=15, max_depth=3, random_state=0), "binary"),
        (shared, GradientBoostingRegressor(n_estimators=15, max_depth=3, random_state=0), "regression"),
        (shared, RandomForestRegressor(n_estimators=10, max_depth=6, random_state=0), "regression"),
        (own, LogisticRegression(max_iter=2000), "multiclass"),
    ]
    pipelines = []
    for k, (featurizer, model, target) in enumerate(tenants):
        model.fit(z if featurizer is shared else featurizer.transform(train),
                  targets[target][:sklearn_cases.N_TRAIN])
        pipelines.append(Pipeline([("features", featurizer), ("model", model)]))
        env.drop_model(f"shared_{k}")
        pg_predict.deploy(env.conn, f"shared_{k}", pipelines[-1])
    ids = np.arange(1, len(df) + 1)
    tenant = np.where(ids % 7 == 0, -1, ids % 6)
    want = np.full(len(df), np.nan)
    for k, pipe in enumerate(pipelines):
        rows = np.flatnonzero(tenant == k)
        want[rows] = pipe.predict(df.iloc[rows][sklearn_cases.ALL])
    query = (f"SELECT id, predict(CASE WHEN id % 7 = 0 THEN NULL ELSE 'shared_' || (id % 6) END, t) "
             f"FROM {TABLE} t ORDER BY id")
    for label, sets, shares in (("shared", [], True),
                                ("not shared", ["SET pg_predict.share_featurizers = off"], False),
                                ("cache_size 0", ["SET pg_predict.cache_size = 0"], None),
                                ("per-row path", ["SET pg_predict.enable_batching = off"], None)):
        with env.conn.transaction():
            for statement in sets:
                env.conn.execute(statement.replace("SET ", "SET LOCAL ", 1))
            if shares is not None:
                plan = "\n".join(r[0] for r in env.query("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + query))
                if "(per row)" not in plan or ("Shared Featurizer Runs" in plan) != shares:
                    raise Failure(f"{label}: the plan should {'' if shares else 'not '}count shared "
                                  f"featurizer runs:\n{plan}")
            got = env.query(query)
        assert_equal(f"{label}: ids", [r[0] for r in got], list(ids))
        values = np.array([np.nan if r[1] is None else r[1] for r in got], dtype=np.float64)
        assert_equal(f"{label}: NULL names give NULL", list(np.isnan(values)), list(np.isnan(want)))
        known = ~np.isnan(want)
        assert_close(f"{label}: every row by its own pipeline", values[known], want[known],
                     ids=list(ids[known]))
    for k in range(len(tenants)):
        env.drop_model(f"shared_{k}")


for _fn in (test_ensembles_string_labels_and_refusals, test_predict_proba_refusals_say_why,
            test_one_class_document_of_a_model_that_needs_two,
            test_min_max_scaler_clip, test_box_cox_outside_its_domain_is_null,
            test_radius_neighbors_without_neighbours_is_null):
    add_test(_fn.__name__[len("test_"):], _fn)

for _fn in (test_deploy_replace_and_strategy, test_cli_deploy, test_no_probabilities_kmeans_svc,
            test_outlier_detector_has_no_probabilities,
            test_float8_columns_reach_float64_models_unrounded,
            test_linear_margin_equals_the_tensor_program, test_tenants_sharing_one_featurizer):
    add_test(_fn.__name__[len("test_"):], _fn)

if __name__ == "__main__":
    main(fixture=make_env)
