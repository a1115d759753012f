#!/usr/bin/python3
"""Conformance: transform(), decision_function() and score_samples() against scikit-learn.

Pipelines that end in a featurizer (every featurizer the exporter knows as the last step, a
ColumnTransformer with imputed, scaled and one-hot encoded columns, a FeatureUnion) are fitted
by /usr/bin/python3's scikit-learn on the first rows of sklearn_cases.frame() (NULLs where they
impute, a constant column, categories never seen at fit time in the last rows), deployed with
the Python client, and transform(name, row) must equal scikit-learn's transform on every row
within max(1e-5, 1e-5 * |expected|) (a NaN scikit-learn passes on must be NaN), through the
PredictBatch node, with pg_predict.enable_batching = off, for a single-row batch, and through
the float8[] / real[] overloads. decision_function (LogisticRegression binary and multiclass,
LinearSVC, SGDClassifier, RidgeClassifier, SVC and NuSVC in both shapes, GradientBoosting,
HistGradientBoosting, IsolationForest) and score_samples (IsolationForest) likewise.

Run: /usr/bin/python3 regress/conformance/test_transform.py [-k name] [--list]
Needs the extension installed (make install). Last line: 'conformance: N passed, M failed'.
"""

import contextlib
import warnings

import numpy as np

import sklearn_cases
from harness import Failure, add_test, assert_close, assert_equal, main, test, to_floats
from pgcluster import Cluster

import pg_predict  # noqa: E402  (python/ is put on sys.path by sklearn_cases)

TABLE = "customers"
NAN_FREE = sklearn_cases.NAN_FREE          # income, visits, tenure, rate, const
WITH_NAN = ["age", "score"]                # NULL in some rows
NUMERIC = ["age", "income", "visits", "score", "tenure", "rate", "const"]


class Env:
    def __init__(self, pg):
        self.pg = pg
        self.conn = pg.connect()
        self.loaded = False

    def query(self, sql, params=None):
        return self.conn.execute(sql, params).fetchall()

    def load(self):
        if not self.loaded:
            sklearn_cases.load_frame(self.conn, TABLE)
            self.loaded = True

    def deploy(self, name, estimator):
        self.conn.execute("SELECT drop_model(name) FROM models WHERE name = %s", [name])
        return pg_predict.deploy(self.conn, name, estimator)


@contextlib.contextmanager
def make_env():
    with Cluster() as pg:
        env = Env(pg)
        env.conn.execute("CREATE EXTENSION pg_predict")
        try:
            yield env
        finally:
            env.conn.close()


def fit(estimator, columns, target="binary"):
    df, targets = sklearn_cases.frame()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit(df[columns].iloc[:sklearn_cases.N_TRAIN], targets[target][:sklearn_cases.N_TRAIN])
    return estimator, df[columns]


def assert_same(what, got, want, ids):
    """assert_close, where a NaN expected must be NaN (or NULL) too."""
    want = np.asarray(want, dtype=np.float64)
    got = to_floats(got, want.shape[1] if want.ndim == 2 else None)
    nan = np.isnan(want)
    if (np.isnan(got) != nan).any():
        r = int(np.argwhere(np.isnan(got) != nan)[0][0])
        raise Failure(f"{what}: row {ids[r]}: NaN where scikit-learn has {want[r]!r} (or the reverse): {got[r]!r}")
    assert_close(what, np.where(nan, 0.0, got), np.where(nan, 0.0, want), ids=ids)


def run_function(env, function, model, batching, where=""):
    sql = f"SELECT id, {function}(%(m)s, t) FROM {TABLE} t {where} ORDER BY id"
    with env.conn.transaction():
        env.conn.execute(f"SET LOCAL pg_predict.enable_batching = {'on' if batching else 'off'}")
        if batching and not where:
            plan = "\n".join(r[0] for r in env.query("EXPLAIN (costs off) " + sql, {"m": model}))
            if "PredictBatch" not in plan:
                raise Failure(f"{model}: no PredictBatch node in the plan of {function}:\n{plan}")
        rows = env.query(sql, {"m": model})
    return [r[0] for r in rows], [r[1] for r in rows]


def check_function(env, function, model, want, numeric_columns=None):
    """function(model, row) over the table, batched and per row, equals `want` row for row;
    also one row alone (a batch of one) and, for numeric inputs, the float8[] / real[] forms."""
    want = np.asarray(want, dtype=np.float64)
    for batching in (True, False):
        ids, got = run_function(env, function, model, batching)
        assert_equal(f"{model}: rows", len(ids), len(want))
        assert_same(f"{model} {function} ({'batched' if batching else 'per-row'})", got, want, ids)
        ids, got = run_function(env, function, model, batching, "WHERE id = 7")
        assert_same(f"{model} {function} (one row, {'batched' if batching else 'per-row'})", got,
                    want[6:7], ids)
    if numeric_columns:
        cols = ", ".join(numeric_columns)
        for cast in ("float8[]", "real[]"):
            rows = env.query(f"SELECT id, {function}(%(m)s, ARRAY[{cols}]::{cast}) FROM {TABLE} ORDER BY id",
                             {"m": model})
            # real[] rounds each value to float32: the frame's numbers are float32 already.
            assert_same(f"{model} {function} ({cast})", [r[1] for r in rows], want, [r[0] for r in rows])


# ---- transform ------------------------------------------------------------------------------

def transformer_cases():
    from sklearn.compose import ColumnTransformer
    from sklearn.decomposition import PCA, FastICA, KernelPCA, TruncatedSVD
    from sklearn.feature_selection import SelectKBest, VarianceThreshold, f_classif
    from sklearn.impute import MissingIndicator, SimpleImputer
    from sklearn.pipeline import FeatureUnion, make_pipeline
    from sklearn.preprocessing import (Binarizer, FunctionTransformer, KBinsDiscretizer,
                                       MaxAbsScaler, MinMaxScaler, Normalizer, OneHotEncoder,
                                       OrdinalEncoder, PolynomialFeatures, PowerTransformer,
                                       QuantileTransformer, RobustScaler, SplineTransformer,
                                       StandardScaler)
    imputed = lambda step: make_pipeline(SimpleImputer(strategy="median"), step)  # noqa: E731
    return {
        # (estimator, columns, numeric: whether the array forms apply)
        "standard_scaler": (StandardScaler(), NAN_FREE, True),
        "standard_scaler_passes_nan": (StandardScaler(), NUMERIC, True),   # NaN stays NaN
        "min_max_scaler_clip": (MinMaxScaler(clip=True), NAN_FREE, True),
        "max_abs_scaler": (MaxAbsScaler(), NAN_FREE, True),
        "robust_scaler": (RobustScaler(), NAN_FREE, True),
        "simple_imputer": (SimpleImputer(strategy="mean"), NUMERIC, True),
        "missing_indicator": (MissingIndicator(), NUMERIC, True),
        "one_hot_encoder_text_unseen": (OneHotEncoder(handle_unknown="ignore"), ["city", "plan"], False),
        "ordinal_encoder_text_unseen": (OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1),
                                        ["city", "plan"], False),
        "binarizer": (Binarizer(threshold=0.5), NAN_FREE, True),
        "normalizer": (Normalizer(norm="l2"), NAN_FREE, True),
        "pca_whiten": (imputed(PCA(n_components=3, whiten=True, random_state=0)), NUMERIC, True),
        "truncated_svd": (imputed(TruncatedSVD(n_components=2, random_state=0)), NUMERIC, True),
        "kbins_onehot_dense": (KBinsDiscretizer(n_bins=4, encode="onehot-dense"), ["income", "rate"], True),
        "kbins_ordinal": (KBinsDiscretizer(n_bins=5, encode="ordinal"), ["income", "rate", "tenure"], True),
        "polynomial_features": (imputed(PolynomialFeatures(degree=2)), ["age", "rate", "visits"], True),
        "function_transformer_log1p": (FunctionTransformer(np.log1p), ["income", "visits"], True),
        "variance_threshold": (VarianceThreshold(), NAN_FREE, True),             # drops const
        "select_k_best": (imputed(SelectKBest(f_classif, k=3)), NUMERIC, True),
        "column_transformer": (sklearn_cases._prep(), sklearn_cases.ALL, False),
        "column_transformer_remainder": (ColumnTransformer(
            [("imp", SimpleImputer(), ["age", "score"]), ("oh", OneHotEncoder(handle_unknown="ignore"), ["city"])],
            remainder=StandardScaler()), ["age", "score", "city", "income", "tenure"], False),
        "feature_union": (make_pipeline(SimpleImputer(), FeatureUnion(
            [("pca", PCA(n_components=2, random_state=0)), ("scale", StandardScaler())])), NUMERIC, True),
        "power_yeo_johnson_passes_nan": (PowerTransformer(), NUMERIC, True),   # NaN stays NaN
        "power_yeo_johnson_raw": (PowerTransformer(standardize=False), ["age", "score", "visits"], True),
        "power_box_cox": (PowerTransformer(method="box-cox"), ["income", "rate"], True),
        "power_box_cox_raw": (PowerTransformer(method="box-cox", standardize=False), ["income"], True),
        "quantile_uniform_passes_nan": (QuantileTransformer(n_quantiles=40), NUMERIC, True),
        "quantile_normal": (QuantileTransformer(n_quantiles=100, output_distribution="normal"),
                            NUMERIC, True),
        "kernel_pca_rbf": (imputed(KernelPCA(n_components=3, kernel="rbf", gamma=1e-4)),
                           ["age", "score", "rate", "const"], True),
        "kernel_pca_poly": (KernelPCA(n_components=2, kernel="poly", degree=3, gamma=0.1, coef0=1.0),
                            ["rate", "visits"], True),
        "kernel_pca_cosine": (KernelPCA(n_components=3, kernel="cosine"), NAN_FREE, True),
        "one_hot_encoder_infrequent": (OneHotEncoder(max_categories=3, handle_unknown="infrequent_if_exist"),
                                       ["city", "plan"], False),
        "spline_transformer_linear": (SplineTransformer(n_knots=4, degree=3, extrapolation="linear"),
                                      ["income", "rate", "tenure"], True),
        "spline_transformer_periodic_no_bias": (SplineTransformer(
            n_knots=5, degree=2, extrapolation="periodic", include_bias=False), ["visits", "rate"], True),
        "fast_ica": (imputed(FastICA(3, whiten="unit-variance", random_state=0)), NUMERIC, True),
        # missing_values a number: visits and tenure hold zeros, income none (missing-only
        # leaves it out of the indicator)
        "simple_imputer_zero_marker": (SimpleImputer(missing_values=0, strategy="most_frequent"),
                                       ["visits", "tenure", "income"], True),
        "missing_indicator_zero_marker": (MissingIndicator(missing_values=0), ["visits", "tenure", "income"], True),
    }


def transform_test(name):
    def run(env):
        est, columns, numeric = transformer_cases()[name]
        est, X = fit(est, columns)
        want = est.transform(X)
        want = np.asarray(want.toarray() if hasattr(want, "toarray") else want, dtype=np.float64)  # sparse one-hot
        env.load()
        model = f"tr_{name}"
        doc = env.deploy(model, est)
        assert_equal(f"{model}: document task", doc["task"], "transformer")
        info = env.query("SELECT task, outputs, inputs, estimator FROM models WHERE name = %s", [model])[0]
        assert_equal(f"{model}: models (task, outputs, inputs, estimator)", tuple(info),
                     ("transformer", want.shape[1], len(columns), "none"))
        check_function(env, "transform", model, want, columns if numeric else None)
        env.conn.execute("SELECT drop_model(%s)", [model])
    return run


for _name in transformer_cases():
    add_test(f"transform[{_name}]", transform_test(_name))


# LabelEncoder on its own (fitted on one column, as on y) and KernelPCA over a precomputed
# kernel do not fit the way transformer_cases() are fitted.

def redeploy(env, model, est, feature_names=None):
    env.conn.execute("SELECT drop_model(name) FROM models WHERE name = %s", [model])
    pg_predict.deploy(env.conn, model, est, feature_names=feature_names)


def label_encoder_test(column):
    def run(env):
        from sklearn.preprocessing import LabelEncoder
        df, _ = sklearn_cases.frame()
        est = LabelEncoder().fit(df[column].iloc[:sklearn_cases.N_TRAIN])
        env.load()
        model = f"tr_label_encoder_{column}"
        redeploy(env, model, est, feature_names=[column])
        seen = df[column].isin(est.classes_).to_numpy()
        want = est.transform(df[column][seen])[:, None]
        where = f"WHERE id = ANY(ARRAY{[int(i) + 1 for i in np.flatnonzero(seen)]})"
        for batching in (True, False):
            ids, got = run_function(env, "transform", model, batching, where)
            assert_same(f"{model} ({'batched' if batching else 'per-row'})", got, want, ids)
        unseen = np.flatnonzero(~seen)
        if len(unseen):  # a label it was not fitted on is an error, as in scikit-learn
            try:
                run_function(env, "transform", model, True, f"WHERE id = {int(unseen[0]) + 1}")
            except Exception as e:
                if "does not know the value" not in str(e):
                    raise Failure(f"{model}: an unseen label: {e}")
            else:
                raise Failure(f"{model}: an unseen label gave no error")
        env.conn.execute("SELECT drop_model(%s)", [model])
    return run


for _column in ("city", "visits"):  # text (with unseen labels after N_TRAIN), numeric
    add_test(f"transform[label_encoder_{_column}]", label_encoder_test(_column))


@test(name="transform[missing_marker_and_null]")
def missing_marker_and_null(env):
    """missing_values = 0 over a column with NULLs (age): scikit-learn refuses NaN there, so a
    NULL is what scikit-learn gives for the marker itself (age's NaN read as 0)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import MissingIndicator, SimpleImputer
    from sklearn.pipeline import FeatureUnion
    df, _ = sklearn_cases.frame()
    columns = ["age", "visits"]
    X = df[columns].fillna(0.0)
    est = ColumnTransformer([("u", FeatureUnion([
        ("imp", SimpleImputer(missing_values=0, strategy="mean")),
        ("ind", MissingIndicator(missing_values=0, features="all"))]), columns)])
    est.fit(X.iloc[:sklearn_cases.N_TRAIN])
    env.load()
    model = "tr_missing_marker_and_null"
    env.deploy(model, est)
    check_function(env, "transform", model, est.transform(X), columns)
    env.conn.execute("SELECT drop_model(%s)", [model])


@test(name="transform[kernel_pca_precomputed]")
def kernel_pca_precomputed(env):
    """The model reads each row's kernel against the 40 training rows (as float8[])."""
    from sklearn.decomposition import KernelPCA
    df, _ = sklearn_cases.frame()
    X = df[["income", "visits", "tenure", "rate"]].to_numpy(dtype=np.float64)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    fit_rows = X[:40]
    est = KernelPCA(n_components=4, kernel="precomputed").fit(fit_rows @ fit_rows.T)
    K = X @ fit_rows.T
    want = est.transform(K)
    model = "tr_kernel_pca_precomputed"
    redeploy(env, model, est)
    env.conn.execute("DROP TABLE IF EXISTS kernel_rows")
    env.conn.execute("CREATE TABLE kernel_rows (id int, k float8[])")
    with env.conn.cursor().copy("COPY kernel_rows (id, k) FROM STDIN") as cp:
        for i, row in enumerate(K):
            cp.write_row([i + 1, [float(v) for v in row]])
    sql = "SELECT id, transform(%(m)s, k) FROM kernel_rows ORDER BY id"
    for batching in (True, False):
        with env.conn.transaction():
            env.conn.execute(f"SET LOCAL pg_predict.enable_batching = {'on' if batching else 'off'}")
            if batching:
                plan = "\n".join(r[0] for r in env.query("EXPLAIN (costs off) " + sql, {"m": model}))
                if "PredictBatch" not in plan:
                    raise Failure(f"{model}: no PredictBatch node in the plan:\n{plan}")
            rows = env.query(sql, {"m": model})
        assert_same(f"{model} ({'batched' if batching else 'per-row'})", [r[1] for r in rows], want,
                    [r[0] for r in rows])
    env.conn.execute("DROP TABLE kernel_rows")
    env.conn.execute("SELECT drop_model(%s)", [model])


# ---- decision_function / score_samples --------------------------------------------------------

def decision_cases():
    from sklearn.ensemble import (GradientBoostingClassifier, HistGradientBoostingClassifier,
                                  IsolationForest, RandomForestClassifier, StackingClassifier)
    from sklearn.linear_model import LogisticRegression, RidgeClassifier, SGDClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC, LinearSVC, NuSVC
    prep, ALL = sklearn_cases._prep, sklearn_cases.ALL
    return {
        # (estimator, columns, target)
        "logistic_binary": (make_pipeline(prep(), LogisticRegression(max_iter=500)), ALL, "binary"),
        "logistic_multiclass": (make_pipeline(prep(), LogisticRegression(max_iter=500)), ALL, "multiclass"),
        "logistic_ovr_multiclass": (make_pipeline(prep(), LogisticRegression(multi_class="ovr", max_iter=500)),
                                    ALL, "four"),
        "linear_svc_binary": (make_pipeline(prep(), LinearSVC(max_iter=5000)), ALL, "labels"),
        "linear_svc_multiclass": (make_pipeline(prep(), LinearSVC(max_iter=5000)), ALL, "multiclass"),
        "sgd_modified_huber_multiclass": (make_pipeline(prep(), SGDClassifier(loss="modified_huber",
                                                                              random_state=0)), ALL, "multiclass"),
        "ridge_classifier": (make_pipeline(prep(), RidgeClassifier()), ALL, "binary"),
        "gradient_boosting_binary": (GradientBoostingClassifier(n_estimators=20, max_depth=3, random_state=0),
                                     NAN_FREE, "binary"),
        "gradient_boosting_exponential": (GradientBoostingClassifier(loss="exponential", n_estimators=15,
                                                                     random_state=0), NAN_FREE, "binary"),
        "gradient_boosting_multiclass": (make_pipeline(prep(), GradientBoostingClassifier(
            n_estimators=10, max_depth=2, random_state=0)), ALL, "multiclass"),
        "hist_gradient_boosting_nan": (HistGradientBoostingClassifier(max_iter=20, random_state=0),
                                       NUMERIC, "binary"),
        "svc_rbf_binary": (make_pipeline(prep(), SVC()), ALL, "binary"),
        "svc_rbf_multiclass_ovr": (make_pipeline(prep(), SVC(C=3.0)), ALL, "four"),
        "svc_poly_multiclass_ovo": (make_pipeline(prep(), SVC(kernel="poly", degree=2,
                                                              decision_function_shape="ovo")), ALL, "multiclass"),
        "nu_svc_linear_multiclass": (make_pipeline(prep(), NuSVC(kernel="linear", nu=0.3)), ALL, "multiclass"),
        "isolation_forest": (IsolationForest(n_estimators=30, random_state=0), NAN_FREE, "binary"),
        "isolation_forest_one_sample": (IsolationForest(n_estimators=5, max_samples=1, random_state=0),
                                        NAN_FREE, "binary"),
        "isolation_forest_pipeline": (make_pipeline(prep(), IsolationForest(
            n_estimators=25, contamination=0.05, max_samples=100, random_state=0)), ALL, "binary"),
        # StackingClassifier: its final estimator's decision_function over the members' columns
        # (Hummingbird's test_stacking_classifier_decision_function model, then a binary one)
        "stacking_logistic_final": (make_pipeline(prep(), StackingClassifier([
            ("rf", RandomForestClassifier(n_estimators=10, random_state=42)),
            ("svc", make_pipeline(StandardScaler(), LinearSVC(random_state=42)))],
            final_estimator=LogisticRegression())), ALL, "multiclass"),
        "stacking_ridge_final_passthrough": (make_pipeline(prep(), StackingClassifier([
            ("lr", LogisticRegression(max_iter=500)), ("gb", GradientBoostingClassifier(n_estimators=5, random_state=0))],
            final_estimator=RidgeClassifier(), passthrough=True)), ALL, "binary"),
        "stacking_gradient_boosting_final": (make_pipeline(prep(), StackingClassifier([
            ("lr", LogisticRegression(max_iter=500)), ("svc", LinearSVC(max_iter=5000))],
            final_estimator=GradientBoostingClassifier(n_estimators=10, max_depth=2, random_state=0))),
            ALL, "multiclass"),
    }


def decision_test(name):
    def run(env):
        est, columns, target = decision_cases()[name]
        est, X = fit(est, columns, target)
        want = np.asarray(est.decision_function(X), dtype=np.float64)
        if want.ndim == 1:
            want = want[:, None]  # a binary model: a one-element array
        env.load()
        model = f"df_{name}"
        env.deploy(model, est)
        numeric = all(c in NUMERIC for c in columns)
        check_function(env, "decision_function", model, want, columns if numeric else None)
        if hasattr(est, "score_samples"):
            check_function(env, "score_samples", model, np.asarray(est.score_samples(X), dtype=np.float64),
                           columns if numeric else None)
        # one statement asking for everything: two programs (the model's, decision_function's)
        rows = env.query(f"SELECT predict(%(m)s, t), decision_function(%(m)s, t) FROM {TABLE} t ORDER BY id",
                         {"m": model})
        assert_same(f"{model}: decision_function beside predict", [r[1] for r in rows], want,
                    list(range(1, len(rows) + 1)))
        env.conn.execute("SELECT drop_model(%s)", [model])
    return run


for _name in decision_cases():
    add_test(f"decision_function[{_name}]", decision_test(_name))


# ---- refusals -----------------------------------------------------------------------------------

def test_refusals(env):
    """Each wrong pairing of a function and a model is an ERROR that says what to use."""
    import psycopg
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.naive_bayes import GaussianNB
    from sklearn.preprocessing import StandardScaler
    env.load()
    env.deploy("ref_scaler", fit(StandardScaler(), NAN_FREE)[0])
    env.deploy("ref_forest", fit(RandomForestClassifier(n_estimators=3, random_state=0), NAN_FREE)[0])
    env.deploy("ref_nb", fit(GaussianNB(), NAN_FREE)[0])
    # a stacking classifier has decision_function only where its final estimator has one
    from sklearn.ensemble import StackingClassifier
    from sklearn.linear_model import LogisticRegression
    env.deploy("ref_stack_forest", fit(StackingClassifier(
        [("lr", LogisticRegression(max_iter=500))],
        final_estimator=RandomForestClassifier(n_estimators=3, random_state=0)), NAN_FREE)[0])
    expected = [
        ("predict", "ref_scaler", "is a transformer", "transform()"),
        ("predict_proba", "ref_scaler", "is a transformer", "transform()"),
        ("decision_function", "ref_scaler", "is a transformer", "transform()"),
        ("transform", "ref_forest", "is a classification model", "predict()"),
        ("decision_function", "ref_forest", "RandomForestClassifier", None),
        ("score_samples", "ref_forest", "RandomForestClassifier", None),
        ("decision_function", "ref_nb", "GaussianNB", None),
        ("decision_function", "ref_stack_forest", "StackingClassifier", None),
    ]
    for batching in ("on", "off"):
        for function, model, message, hint in expected:
            try:
                with env.conn.transaction():
                    env.conn.execute(f"SET LOCAL pg_predict.enable_batching = {batching}")
                    env.query(f"SELECT {function}(%s, t) FROM {TABLE} t", [model])
            except psycopg.Error as e:
                text = str(e) + " " + str(e.diag.message_hint or "")
                if message not in text or (hint and hint not in text):
                    raise Failure(f"{function}({model}) with batching {batching}: {text!r} lacks "
                                  f"{message!r} / {hint!r}")
            else:
                raise Failure(f"{function}({model}) with batching {batching} did not fail")


add_test("refusals", test_refusals)


def test_spline_error_beyond_the_knots_is_nan(env):
    """SplineTransformer(extrapolation='error'): scikit-learn raises for a value beyond the
    knots; transform() gives NaN there and a model after it predicts NULL, the other rows as
    scikit-learn."""
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import SplineTransformer
    est, X = fit(SplineTransformer(n_knots=4, degree=2, extrapolation="error"), ["income"])
    lo, hi = est.bsplines_[0].t[2], est.bsplines_[0].t[-3]
    outside = ((X["income"] < lo) | (X["income"] > hi)).to_numpy()
    if not outside.any():
        raise Failure("no row of the frame lies beyond the fitted knots")
    want = np.full((len(X), est.n_features_out_), np.nan)
    want[~outside] = est.transform(X[~outside])
    env.load()
    env.deploy("tr_spline_error", est)
    check_function(env, "transform", "tr_spline_error", want, ["income"])
    model, _ = fit(make_pipeline(SplineTransformer(n_knots=4, degree=2, extrapolation="error"), Ridge()),
                   ["income"], "regression")
    env.deploy("sk_spline_error", model)
    want = np.full(len(X), np.nan)
    want[~outside] = model.predict(X[~outside])
    for batching in (True, False):
        ids, got = run_function(env, "predict", "sk_spline_error", batching)
        got = np.array([np.nan if v is None else v for v in got], dtype=np.float64)
        if (np.isnan(got) != outside).any():
            raise Failure(f"predict (batching {batching}): NULL on rows {np.flatnonzero(np.isnan(got))[:5]}, "
                          f"beyond the knots: {np.flatnonzero(outside)[:5]}")
        assert_close(f"sk_spline_error predict (batching {batching})", got[~outside], want[~outside],
                     ids=[i for i, o in zip(ids, outside) if not o])


add_test("spline_error_beyond_the_knots_is_nan", test_spline_error_beyond_the_knots_is_nan)

if __name__ == "__main__":
    main(fixture=make_env)
