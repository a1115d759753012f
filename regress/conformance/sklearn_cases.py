"""Fitted scikit-learn pipelines on seeded random data, shared by test_export.py (the exporter
against a NumPy reference) and test_sklearn.py (PostgreSQL against scikit-learn).

The frame has numeric columns with NaN where the pipelines impute (age, score), NaN-free ones
(income, visits, tenure), a constant one (const), and text columns (city, plan, channel). The
models are fitted on the first N_TRAIN rows; the rows after them also carry categories never
seen at fit time ('lisbon', 'enterprise'), and 'channel' has NULLs that only a text imputer
handles. Numbers are float32-representable, so real and float8 columns carry them exactly."""

import functools
import os
import sys

import numpy as np
import pandas as pd

# python/ (the pg_predict package) on the path, whoever runs us.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

N_ROWS = 400
N_TRAIN = 300
NUMERIC = ["age", "income", "visits", "score", "tenure", "rate", "const"]
NAN_FREE = ["income", "visits", "tenure", "rate", "const"]
TEXT = ["city", "plan", "channel"]
SQL_TYPES = {"age": "double precision", "income": "double precision", "visits": "integer",
             "score": "real", "tenure": "smallint", "rate": "real", "const": "double precision",
             "city": "text", "plan": "text", "channel": "text"}


def load_frame(conn, table):
    """frame()'s rows as `table` (id 1..N_ROWS in the frame's order, one column of SQL_TYPES per
    frame column, NaN as NULL), analyzed: the table the conformance files score."""
    df, _ = frame()
    cols = list(df.columns)
    conn.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, "
                 + ", ".join(f"{c} {SQL_TYPES[c]}" for c in cols) + ")")

    def value(c, v):
        if v is None or (isinstance(v, float) and np.isnan(v)):
            return None
        if SQL_TYPES[c] == "text":
            return str(v)
        return int(v) if SQL_TYPES[c] in ("integer", "smallint") else float(v)

    with conn.cursor() as cur:
        with cur.copy(f"COPY {table} (id, {', '.join(cols)}) FROM STDIN") as cp:
            for i, row in enumerate(df.itertuples(index=False)):
                cp.write_row([i + 1] + [value(c, v) for c, v in zip(cols, row)])
    conn.execute(f"ANALYZE {table}")


@functools.lru_cache(maxsize=None)
def frame(seed=1):
    """(DataFrame of all N_ROWS rows, dict of targets computed on it)."""
    rng = np.random.default_rng(seed)
    n = N_ROWS
    f32 = lambda a: np.asarray(a, dtype=np.float32).astype(np.float64)  # noqa: E731
    df = pd.DataFrame({
        "age": f32(rng.normal(40, 12, n)),
        "income": f32(rng.lognormal(10, 0.6, n)),
        "visits": rng.integers(0, 7, n).astype(np.float64),
        "score": f32(rng.normal(0, 1, n)),
        "tenure": rng.integers(0, 72, n).astype(np.float64),
        "rate": f32(rng.uniform(0, 1, n)),
        "const": np.full(n, 3.5),
        "city": rng.choice(["berlin", "madrid", "oslo", "paris", "rome"], n),
        "plan": rng.choice(["basic", "plus", "pro"], n, p=[0.5, 0.3, 0.2]),
        "channel": rng.choice(["email", "phone", "web"], n).astype(object),
    })
    for col in ("age", "score"):
        df.loc[rng.random(n) < 0.1, col] = np.nan
    df.loc[1, ["age", "score"]] = np.nan
    df.loc[rng.random(n) < 0.1, "channel"] = np.nan
    # Categories the models never saw: only in the rows after N_TRAIN.
    late = np.arange(N_TRAIN, n)
    df.loc[late[rng.random(len(late)) < 0.15], "city"] = "lisbon"
    df.loc[late[rng.random(len(late)) < 0.15], "plan"] = "enterprise"

    age = df["age"].fillna(40).to_numpy()
    score = df["score"].fillna(0).to_numpy()
    city = df["city"].map({"berlin": 0.8, "madrid": -0.5, "oslo": 0.3, "paris": 0.0,
                           "rome": -0.9, "lisbon": 0.0}).to_numpy()
    plan = df["plan"].map({"basic": -0.6, "plus": 0.2, "pro": 1.0, "enterprise": 0}).to_numpy()
    s = (0.05 * (age - 40) + 0.6 * (np.log(df["income"]) - 10) + 0.3 * (df["visits"] - 3)
         - np.sin(2 * score) + city + plan + 0.02 * (df["tenure"] - 36)).to_numpy()
    noisy = s + rng.normal(0, 0.4, n)
    targets = {
        "binary": (noisy > 0).astype(int),
        "multiclass": np.digitize(noisy, np.quantile(noisy, [1 / 3, 2 / 3])),
        "labels": np.array([-1, 1])[(noisy > 0).astype(int)],   # non-0/1 labels
        "four": np.array([2, 5, 7, 11])[np.digitize(noisy, np.quantile(noisy, [.25, .5, .75]))],
        "regression": 100 * s + 500 + rng.normal(0, 10, n),
    }
    targets["count"] = np.round(np.exp(s / 2))   # Poisson-like counts (no new draws)
    targets["one"] = np.full(n, 3)               # a single class
    return df, targets


class Case:
    """A fitted estimator, the columns it reads, and scikit-learn's answers on every row."""

    def __init__(self, name, estimator, columns, target, classifier, data=None,
                 probabilities=True):
        df, targets = (data or frame)()
        self.name = name
        self.columns = list(columns)
        X = df[self.columns]
        y = targets[target]
        self.estimator = estimator.fit(X.iloc[:N_TRAIN], y[:N_TRAIN])
        self.X = X
        self.classifier = classifier
        # The labels predict returns: classes_, a clusterer's cluster indices, or an outlier
        # detector's -1 / 1 (IsolationForest has no classes_).
        final = estimator.steps[-1][1] if hasattr(estimator, "steps") else estimator
        self.classes = None
        if classifier:
            self.classes = getattr(final, "classes_", None)
            if self.classes is None and hasattr(final, "cluster_centers_"):
                self.classes = np.arange(len(final.cluster_centers_))
            if self.classes is None and hasattr(final, "subcluster_labels_"):  # Birch
                self.classes = np.unique(final.subcluster_labels_)
            if self.classes is None and hasattr(final, "precisions_cholesky_"):  # mixtures
                self.classes = np.arange(len(final.means_))
            if self.classes is None:
                self.classes = np.array([-1, 1])
            self.classes = list(self.classes)
        self.predict = np.asarray(self.estimator.predict(X), dtype=np.float64)
        if self.predict.ndim == 2 and self.predict.shape[1] == 1:  # PLSRegression's [n × 1]
            self.predict = self.predict[:, 0]
        self.proba = None
        if classifier and probabilities and hasattr(self.estimator, "predict_proba"):
            try:
                self.proba = np.asarray(self.estimator.predict_proba(X), dtype=np.float64)
            except AttributeError:  # e.g. SGDClassifier(hinge) has no probabilities
                self.proba = None
        # Rows whose label is a near tie: either label is right.
        self.ambiguous = np.zeros(len(X), dtype=bool)
        scores = self.proba
        if getattr(final, "loss", None) == "modified_huber":
            scores = None  # its probabilities tie where predict's decision values do not
        if scores is None and classifier and hasattr(self.estimator, "decision_function"):
            d = np.asarray(self.estimator.decision_function(X), dtype=np.float64)
            scores = np.column_stack([-d, d]) if d.ndim == 1 else d
        centers = getattr(final, "cluster_centers_", getattr(final, "subcluster_centers_", None))
        if scores is None and classifier and centers is not None:
            from sklearn.metrics.pairwise import euclidean_distances  # MeanShift has no transform
            Xt = self.estimator[:-1].transform(X) if hasattr(self.estimator, "steps") else X
            scores = -euclidean_distances(np.asarray(Xt, dtype=np.float64), centers)
        if scores is not None and scores.shape[1] >= 2:
            top = np.sort(scores, axis=1)
            self.ambiguous = (top[:, -1] - top[:, -2]) < 1e-6
        # Nearest neighbours: rows whose k-th and (k+1)-th nearest training rows are (nearly)
        # equally far. Which one counts is a tie-break (the lower training row here; scikit-learn's
        # depends on its search algorithm), so neither predict nor predict_proba is compared there.
        self.tied = np.zeros(len(X), dtype=bool)
        if hasattr(final, "kneighbors") and final.n_neighbors < final.n_samples_fit_:
            Xt = self.estimator[:-1].transform(X) if hasattr(self.estimator, "steps") else X
            d, _ = final.kneighbors(Xt, final.n_neighbors + 1)
            k = final.n_neighbors
            self.tied = np.abs(d[:, k] - d[:, k - 1]) <= 1e-9 * np.maximum(1.0, d[:, k])
            # Equal vote counts are no near tie: both sides take the first class in classes_.
            self.ambiguous = self.tied
        if hasattr(final, "radius") and hasattr(final, "radius_neighbors"):
            # A training row (nearly) at the radius: in or out depends on how the distance is
            # summed (scikit-learn's brute force uses the matmul form).
            from sklearn.metrics import pairwise_distances
            Xt = self.estimator[:-1].transform(X) if hasattr(self.estimator, "steps") else X
            d = pairwise_distances(np.asarray(Xt, dtype=np.float64), final._fit_X,
                                   metric=final.effective_metric_, **final.effective_metric_params_)
            self.tied = (np.abs(d - final.radius) <= 1e-7 * max(1.0, final.radius)).any(axis=1)
            self.ambiguous = self.ambiguous | self.tied


# ---- the pipelines ------------------------------------------------------------------------------

def _prep(num_cols=("age", "income", "visits", "score", "tenure", "const"),
          text_cols=("city", "plan"), scaler=None, encoder=None):
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    return ColumnTransformer([
        ("num", make_pipeline(SimpleImputer(strategy="median"), scaler or StandardScaler()),
         list(num_cols)),
        ("text", encoder or OneHotEncoder(handle_unknown="ignore"), list(text_cols)),
    ])


ALL = ["age", "income", "visits", "score", "tenure", "const", "city", "plan"]


def build_cases():
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import (ExtraTreesClassifier, ExtraTreesRegressor,
                                  GradientBoostingClassifier, GradientBoostingRegressor,
                                  RandomForestClassifier, RandomForestRegressor)
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import (ElasticNet, Lasso, LinearRegression, LogisticRegression,
                                      Perceptron, Ridge, RidgeClassifier, SGDClassifier,
                                      SGDRegressor)
    from sklearn.pipeline import FeatureUnion, make_pipeline
    from sklearn.preprocessing import (FunctionTransformer, MaxAbsScaler, MinMaxScaler,
                                       OneHotEncoder, OrdinalEncoder, RobustScaler,
                                       StandardScaler)
    from sklearn.decomposition import PCA, KernelPCA, TruncatedSVD
    from sklearn.feature_selection import (SelectFromModel, SelectKBest, SelectPercentile,
                                           VarianceThreshold, f_classif, f_regression)
    from sklearn.impute import MissingIndicator
    from sklearn.preprocessing import (Binarizer, KBinsDiscretizer, Normalizer,
                                       PolynomialFeatures, PowerTransformer,
                                       QuantileTransformer)
    from sklearn.svm import LinearSVC, LinearSVR
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    ordinal = OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1)
    C = Case
    cases = [
        # The brief's core: ColumnTransformer(imputer + scaler, one-hot) → model.
        C("ct_logistic_binary", make_pipeline(_prep(), LogisticRegression(max_iter=2000)),
          ALL, "binary", True),
        C("ct_logistic_multinomial", make_pipeline(_prep(), LogisticRegression(max_iter=2000)),
          ALL, "multiclass", True),
        C("ct_logistic_ovr", make_pipeline(_prep(), LogisticRegression(multi_class="ovr",
                                                                       max_iter=2000)),
          ALL, "four", True),
        C("ct_logistic_binary_multinomial",
          make_pipeline(_prep(), LogisticRegression(multi_class="multinomial", max_iter=2000)),
          ALL, "labels", True),
        C("ct_random_forest", make_pipeline(_prep(), RandomForestClassifier(
            n_estimators=25, max_depth=7, random_state=0)), ALL, "binary", True),
        C("ct_random_forest_multiclass", make_pipeline(_prep(), RandomForestClassifier(
            n_estimators=15, max_depth=6, random_state=0)), ALL, "four", True),
        C("decision_tree_regressor", DecisionTreeRegressor(max_depth=8, random_state=0),
          NAN_FREE, "regression", False),
        C("decision_tree_classifier_ordinal", make_pipeline(
            _prep(encoder=ordinal), DecisionTreeClassifier(max_depth=6, random_state=0)),
          ALL, "multiclass", True),
        C("gradient_boosting_binary", make_pipeline(_prep(), GradientBoostingClassifier(
            n_estimators=30, max_depth=3, random_state=0)), ALL, "binary", True),
        C("gradient_boosting_multiclass", make_pipeline(_prep(), GradientBoostingClassifier(
            n_estimators=20, max_depth=3, random_state=0)), ALL, "multiclass", True),
        C("gradient_boosting_exponential", make_pipeline(_prep(), GradientBoostingClassifier(
            loss="exponential", n_estimators=20, max_depth=2, random_state=0)),
          ALL, "labels", True),
        C("gradient_boosting_regressor", make_pipeline(_prep(encoder=ordinal),
                                                       GradientBoostingRegressor(
            n_estimators=40, max_depth=4, learning_rate=0.2, random_state=0)),
          ALL, "regression", False),
        C("random_forest_regressor", make_pipeline(_prep(encoder=ordinal), RandomForestRegressor(
            n_estimators=10, max_depth=6, random_state=0)), ALL, "regression", False),
        C("extra_trees_classifier", make_pipeline(_prep(encoder=ordinal), ExtraTreesClassifier(
            n_estimators=10, max_depth=6, random_state=0)), ALL, "binary", True),
        C("extra_trees_regressor", ExtraTreesRegressor(n_estimators=10, max_depth=6,
                                                       random_state=0),
          NAN_FREE, "regression", False),
        C("linear_regression_minmax", make_pipeline(_prep(scaler=MinMaxScaler()),
                                                    LinearRegression()),
          ALL, "regression", False),
        C("ridge_robust", make_pipeline(_prep(scaler=RobustScaler()), Ridge(alpha=2.0)),
          ALL, "regression", False),
        C("lasso_maxabs", make_pipeline(_prep(scaler=MaxAbsScaler()), Lasso(alpha=0.5)),
          ALL, "regression", False),
        C("elastic_net", make_pipeline(_prep(), ElasticNet(alpha=0.1)), ALL, "regression", False),
        C("sgd_regressor", make_pipeline(_prep(), SGDRegressor(random_state=0)),
          ALL, "regression", False),
        C("linear_svr", make_pipeline(_prep(), LinearSVR(random_state=0, max_iter=5000)),
          ALL, "regression", False),
        C("linear_regression_bare", LinearRegression(), NAN_FREE, "regression", False),
        C("sgd_classifier_log", make_pipeline(_prep(), SGDClassifier(
            loss="log_loss", random_state=0)), ALL, "multiclass", True),
        C("sgd_classifier_hinge", make_pipeline(_prep(), SGDClassifier(random_state=0)),
          ALL, "binary", True),
        # modified_huber has predict_proba; with more than two classes clipping ties the
        # probabilities where the decision values (predict's argmax) do not.
        C("sgd_classifier_modified_huber_binary", make_pipeline(_prep(), SGDClassifier(
            loss="modified_huber", random_state=0)), ALL, "labels", True),
        C("sgd_classifier_modified_huber_multiclass", make_pipeline(_prep(), SGDClassifier(
            loss="modified_huber", random_state=0)), ALL, "four", True),
        C("linear_svc", make_pipeline(_prep(), LinearSVC(random_state=0, max_iter=5000)),
          ALL, "multiclass", True),
        C("perceptron", make_pipeline(_prep(), Perceptron(random_state=0)), ALL, "binary", True),
        C("ridge_classifier", make_pipeline(_prep(), RidgeClassifier()), ALL, "four", True),
        # Featurizer variety.
        C("ordinal_encoder_logistic", make_pipeline(
            _prep(encoder=OrdinalEncoder(handle_unknown="use_encoded_value",
                                         unknown_value=np.nan)),
            SimpleImputer(strategy="constant", fill_value=-1), LogisticRegression(max_iter=2000)),
          ALL, "binary", True),
        C("one_hot_drop_first_numeric_categories", make_pipeline(ColumnTransformer([
            ("num", make_pipeline(SimpleImputer(), StandardScaler()), ["age", "score"]),
            ("visits", OneHotEncoder(handle_unknown="error", drop="first"), ["visits"]),
            ("text", OneHotEncoder(drop="if_binary", handle_unknown="ignore"), ["city"]),
        ], remainder="passthrough"), LogisticRegression(max_iter=3000)),
          ["age", "visits", "score", "tenure", "city"], "binary", True),
        C("column_selection_by_index_and_mask", make_pipeline(ColumnTransformer([
            ("a", StandardScaler(), [1, 3]),
            ("b", MinMaxScaler(), np.array([False, False, True, False, False, False])),
            ("c", OneHotEncoder(handle_unknown="ignore"), slice(5, 6)),
            ("d", "drop", [0]),
        ], remainder=RobustScaler()), Ridge()),
          ["const", "income", "visits", "tenure", "rate", "plan"], "regression", False),
        C("feature_union", make_pipeline(
            SimpleImputer(), FeatureUnion([("std", StandardScaler()), ("mm", MinMaxScaler()),
                                           ("raw", "passthrough")]),
            LogisticRegression(max_iter=3000)),
          ["age", "income", "score", "tenure"], "binary", True),
        C("function_transformer_log1p", make_pipeline(ColumnTransformer([
            ("log", FunctionTransformer(np.log1p), ["income", "tenure"]),
            ("rest", "passthrough", ["visits"]),
        ]), StandardScaler(), Ridge()), ["income", "visits", "tenure"], "regression", False),
        C("selectors_variance_kbest", make_pipeline(
            _prep(), VarianceThreshold(0.1), SelectKBest(f_regression, k=6), Ridge()),
          ALL, "regression", False),
        C("selectors_percentile_from_model", make_pipeline(
            _prep(), SelectPercentile(f_classif, percentile=60),
            SelectFromModel(Lasso(alpha=0.01)), LogisticRegression(max_iter=2000)),
          ALL, "binary", True),
        C("binarizer_normalizer_l1", make_pipeline(ColumnTransformer([
            ("bin", make_pipeline(SimpleImputer(), Binarizer(threshold=40.5)), ["age", "score"]),
            ("vis", Binarizer(threshold=2.5), ["visits"]),
            ("norm", Normalizer("l1"), ["income", "tenure", "rate"]),
            ("raw", StandardScaler(), ["income", "tenure"]),
        ]), LogisticRegression(max_iter=2000)),
          ["age", "income", "visits", "score", "tenure", "rate"], "binary", True),
        C("normalizer_l2_max", make_pipeline(ColumnTransformer([
            ("l2", Normalizer(), ["visits", "tenure", "rate"]),
            ("max", make_pipeline(SimpleImputer(), Normalizer("max")), ["age", "score", "rate"]),
        ]), Ridge(alpha=0.1)), ["age", "visits", "score", "tenure", "rate"], "regression", False),
        C("missing_indicator", make_pipeline(ColumnTransformer([
            ("imp", make_pipeline(SimpleImputer(), StandardScaler()),
             ["age", "income", "score", "tenure"]),
            ("ind", MissingIndicator(), ["age", "income", "score", "tenure"]),
            ("all", MissingIndicator(features="all"), ["age", "income"]),
        ]), LogisticRegression(max_iter=2000)),
          ["age", "income", "score", "tenure"], "binary", True),
        C("pca_whiten", make_pipeline(
            _prep(), PCA(n_components=4, whiten=True), LogisticRegression(max_iter=2000)),
          ALL, "multiclass", True),
        C("pca_truncated_svd", make_pipeline(ColumnTransformer([
            ("pca", make_pipeline(SimpleImputer(), StandardScaler(), PCA(n_components=2)),
             ["age", "income", "score", "tenure"]),
            ("svd", TruncatedSVD(n_components=2, random_state=0), ["visits", "tenure", "rate"]),
        ]), Ridge()), ["age", "income", "visits", "score", "tenure", "rate"], "regression", False),
        C("kbins_ordinal_onehot", make_pipeline(ColumnTransformer([
            ("ord", make_pipeline(SimpleImputer(), KBinsDiscretizer(4, encode="ordinal")),
             ["age", "income"]),
            ("oh", KBinsDiscretizer(5, encode="onehot-dense", strategy="uniform"),
             ["income", "tenure", "rate"]),
            ("sp", KBinsDiscretizer(3, encode="onehot", strategy="kmeans"), ["visits", "rate"]),
        ]), LogisticRegression(max_iter=3000)),
          ["age", "income", "visits", "tenure", "rate"], "multiclass", True),
        C("polynomial_features", make_pipeline(ColumnTransformer([
            ("poly", make_pipeline(SimpleImputer(), StandardScaler(), PolynomialFeatures(3)),
             ["age", "score", "tenure"]),
            ("inter", PolynomialFeatures(2, interaction_only=True, include_bias=False),
             ["visits", "rate"]),
        ]), Ridge()), ["age", "visits", "score", "tenure", "rate"], "regression", False),
        C("text_imputer", make_pipeline(ColumnTransformer([
            ("num", make_pipeline(SimpleImputer(), StandardScaler()), ["age", "income"]),
            ("channel", make_pipeline(SimpleImputer(strategy="constant", fill_value="missing"),
                                      OneHotEncoder(handle_unknown="ignore")), ["channel"]),
        ]), LogisticRegression(max_iter=2000)), ["age", "income", "channel"], "binary", True),
        # PowerTransformer: imputed NaN, a constant column, standardize on and off.
        C("power_yeo_johnson", make_pipeline(ColumnTransformer([
            ("imp", make_pipeline(SimpleImputer(), PowerTransformer()), ["age", "score"]),
            ("raw", PowerTransformer(standardize=False), ["visits", "tenure", "const"]),
        ]), LogisticRegression(max_iter=3000)),
          ["age", "visits", "score", "tenure", "const"], "binary", True),
        C("power_box_cox", make_pipeline(ColumnTransformer([
            ("std", PowerTransformer(method="box-cox"), ["income", "rate"]),
            ("raw", PowerTransformer(method="box-cox", standardize=False), ["income"]),
        ]), Ridge()), ["income", "rate"], "regression", False),
        # QuantileTransformer: repeated quantiles (integer visits / tenure), a constant column,
        # imputed NaN, both outputs.
        C("quantile_uniform", make_pipeline(ColumnTransformer([
            ("imp", make_pipeline(SimpleImputer(), QuantileTransformer(n_quantiles=50)),
             ["age", "score"]),
            ("raw", QuantileTransformer(n_quantiles=100), ["visits", "tenure", "const", "rate"]),
        ]), LogisticRegression(max_iter=3000)),
          ["age", "visits", "score", "tenure", "rate", "const"], "multiclass", True),
        C("quantile_normal", make_pipeline(ColumnTransformer([
            ("imp", make_pipeline(SimpleImputer(strategy="median"),
                                  QuantileTransformer(n_quantiles=64, output_distribution="normal")),
             ["age", "score"]),
            ("raw", QuantileTransformer(n_quantiles=300, output_distribution="normal"),
             ["income", "visits", "const"]),
        ]), Ridge()), ["age", "income", "visits", "score", "const"], "regression", False),
        # KernelPCA: each kernel, the centering against the training rows, a constant column.
        C("kernel_pca_rbf", make_pipeline(
            SimpleImputer(), StandardScaler(), KernelPCA(n_components=4, kernel="rbf", gamma=0.2),
            LogisticRegression(max_iter=3000)),
          ["age", "score", "tenure", "rate", "const"], "binary", True),
        C("kernel_pca_linear_poly_sigmoid", make_pipeline(ColumnTransformer([
            ("lin", make_pipeline(SimpleImputer(), StandardScaler(), KernelPCA(n_components=2)),
             ["age", "score"]),
            ("poly", make_pipeline(StandardScaler(), KernelPCA(
                n_components=3, kernel="poly", degree=2, coef0=1.0)), ["visits", "tenure", "rate"]),
            ("sig", make_pipeline(StandardScaler(), KernelPCA(
                n_components=2, kernel="sigmoid", gamma=0.1, coef0=0.5)), ["rate", "const", "tenure"]),
        ]), Ridge()), ["age", "visits", "score", "tenure", "rate", "const"], "regression", False),
    ]
    cases += (_hist_and_outlier_cases() + _weighted_cases() + _one_class_cases()
              + _audit_cases())
    return {c.name: c for c in cases}


def _audit_cases():
    """Parameters the exporter does not read because scikit-learn's predict does not either (or
    reads through the fitted attributes): they must change nothing here."""
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LinearRegression, LogisticRegression, SGDClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import (MinMaxScaler, OneHotEncoder, OrdinalEncoder, RobustScaler,
                                       StandardScaler)
    from sklearn.svm import SVC, LinearSVC
    from sklearn.linear_model import Ridge

    C = Case
    scalers = ColumnTransformer([
        ("mm", make_pipeline(SimpleImputer(), MinMaxScaler(feature_range=(-3, 2))), ["age"]),
        # One later row leaves income's fitted range (test_sklearn's min_max_scaler_clip
        # clips many).
        ("clip", MinMaxScaler(feature_range=(-1, 4), clip=True), ["visits", "income"]),
        ("rob", RobustScaler(with_centering=False, unit_variance=True, quantile_range=(10, 90)),
         ["income", "tenure"]),
        ("std", make_pipeline(SimpleImputer(), StandardScaler(with_mean=False)), ["score"]),
        ("oh", OneHotEncoder(dtype=np.float32, handle_unknown="ignore"), ["city"]),
        ("ord", OrdinalEncoder(dtype=np.int64, handle_unknown="use_encoded_value",
                               unknown_value=-1), ["plan"]),
    ])
    return [
        C("audit_logistic_no_intercept_class_weight", make_pipeline(_prep(), LogisticRegression(
            fit_intercept=False, class_weight="balanced", max_iter=2000)), ALL, "four", True),
        C("audit_linear_regression_positive_no_intercept", make_pipeline(
            _prep(), LinearRegression(positive=True, fit_intercept=False)),
          ALL, "regression", False),
        C("audit_linear_svc_intercept_scaling", make_pipeline(_prep(), LinearSVC(
            intercept_scaling=5.0, class_weight={0: 2.0}, random_state=0, max_iter=5000)),
          ALL, "multiclass", True),
        C("audit_svc_ovo_class_weight", make_pipeline(_prep(), SVC(
            decision_function_shape="ovo", class_weight="balanced")), ALL, "four", True),
        C("audit_sgd_average", make_pipeline(_prep(), SGDClassifier(
            loss="log_loss", average=True, random_state=0)), ALL, "binary", True),
        C("audit_scaler_parameters", make_pipeline(scalers, Ridge()), ALL, "regression", False),
        C("audit_random_forest_class_weight", make_pipeline(_prep(), RandomForestClassifier(
            n_estimators=10, class_weight="balanced_subsample", max_samples=0.5,
            max_depth=6, random_state=0)), ALL, "multiclass", True),
        C("audit_gradient_boosting_early_stopping", make_pipeline(
            _prep(), GradientBoostingClassifier(n_estimators=200, n_iter_no_change=3,
                                                validation_fraction=0.2, subsample=0.8,
                                                max_depth=2, random_state=0)),
          ALL, "binary", True),
    ]


def _one_class_cases():
    """Classifiers fitted on a single class (those scikit-learn can fit so): predict is that
    class, predict_proba [1.0]. HistGradientBoostingClassifier and MLPClassifier predict it
    too, but their predict_proba has two columns for the one class: pg_predict refuses it
    (probabilities=False here; test_sklearn checks the refusal)."""
    from sklearn.cluster import KMeans
    from sklearn.ensemble import (ExtraTreesClassifier, HistGradientBoostingClassifier,
                                  RandomForestClassifier)
    from sklearn.linear_model import RidgeClassifier
    from sklearn.naive_bayes import BernoulliNB, GaussianNB, MultinomialNB
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MinMaxScaler
    from sklearn.tree import DecisionTreeClassifier

    raw = ["age", "income", "visits", "score", "tenure", "rate"]   # age, score carry NaN
    C = Case
    return [
        C("one_class_decision_tree", make_pipeline(_prep(), DecisionTreeClassifier()),
          ALL, "one", True),
        C("one_class_random_forest", RandomForestClassifier(5, random_state=0), NAN_FREE,
          "one", True),
        C("one_class_extra_trees", make_pipeline(_prep(), ExtraTreesClassifier(
            5, random_state=0)), ALL, "one", True),
        C("one_class_gaussian_nb", make_pipeline(_prep(), GaussianNB()), ALL, "one", True),
        C("one_class_multinomial_nb", make_pipeline(_prep(scaler=MinMaxScaler()),
                                                    MultinomialNB()), ALL, "one", True),
        C("one_class_bernoulli_nb", make_pipeline(_prep(), BernoulliNB()), ALL, "one", True),
        C("one_class_ridge_classifier", make_pipeline(_prep(), RidgeClassifier()),
          ALL, "one", True),
        C("one_class_kmeans", make_pipeline(_prep(), KMeans(1, n_init=1, random_state=0)),
          ALL, "one", True),
        C("one_class_hist_gradient_boosting", HistGradientBoostingClassifier(
            max_iter=5, random_state=0), raw, "one", True, probabilities=False),
        C("one_class_mlp", make_pipeline(_prep(), MLPClassifier(
            (4,), max_iter=50, random_state=0)), ALL, "one", True, probabilities=False),
    ]


def _weighted_cases():
    """transformer_weights: each part's output times its weight (some parts only, a weight of
    0, the remainder by its name 'remainder', a FeatureUnion), into linear models and trees."""
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.pipeline import FeatureUnion, make_pipeline
    from sklearn.preprocessing import MinMaxScaler, OneHotEncoder, StandardScaler
    from sklearn.svm import SVC

    def ct(weights, remainder="drop"):
        return ColumnTransformer([
            ("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()),
             ["age", "income", "score"]),
            ("text", OneHotEncoder(handle_unknown="ignore"), ["city", "plan"]),
            ("raw", "passthrough", ["visits"]),
        ], remainder=remainder, transformer_weights=weights)

    C = Case
    cols = ["age", "income", "visits", "score", "tenure", "city", "plan"]
    return [
        C("weights_some_parts_logistic", make_pipeline(
            ct({"num": 2.5, "text": 0.25}), LogisticRegression(max_iter=3000)),
          cols, "multiclass", True),
        C("weights_zero_and_remainder_ridge", make_pipeline(
            ct({"num": 0.5, "text": 0.0, "raw": 3.0, "remainder": -1.5},
               remainder=MinMaxScaler()), Ridge(alpha=0.5)), cols, "regression", False),
        C("weights_svc_rbf", make_pipeline(ct({"num": 3.0, "raw": 0.1}), SVC()),
          cols, "binary", True),
        C("weights_random_forest_regressor", make_pipeline(
            ct({"num": 7.0, "text": 2.0, "raw": 0.5}), RandomForestRegressor(
                n_estimators=8, max_depth=6, random_state=0)), cols, "regression", False),
        C("weights_feature_union", make_pipeline(
            SimpleImputer(), FeatureUnion([("std", StandardScaler()), ("mm", MinMaxScaler()),
                                           ("raw", "passthrough")],
                                          transformer_weights={"std": 3.0, "raw": 0.0}),
            LogisticRegression(max_iter=3000)),
          ["age", "income", "score", "tenure"], "binary", True),
    ]


def _hist_and_outlier_cases():
    """HistGradientBoosting (NaN handled natively, no imputer) and IsolationForest."""
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import (HistGradientBoostingClassifier, HistGradientBoostingRegressor,
                                  IsolationForest)
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    raw = ["age", "income", "visits", "score", "tenure", "rate"]   # age, score carry NaN
    C = Case
    return [
        C("hist_gradient_boosting_binary_nan", HistGradientBoostingClassifier(
            max_iter=30, random_state=0), raw, "binary", True),
        C("hist_gradient_boosting_multiclass_ct", make_pipeline(ColumnTransformer([
            ("num", "passthrough", ["age", "income", "score", "tenure"]),
            ("text", OneHotEncoder(handle_unknown="ignore"), ["city", "plan"]),
        ]), HistGradientBoostingClassifier(max_iter=15, max_leaf_nodes=8, random_state=0)),
          ALL, "multiclass", True),
        C("hist_gradient_boosting_regressor_early_stopping", HistGradientBoostingRegressor(
            max_iter=300, early_stopping=True, n_iter_no_change=3, validation_fraction=0.2,
            learning_rate=0.3, random_state=0), raw, "regression", False),
        C("hist_gradient_boosting_poisson", HistGradientBoostingRegressor(
            loss="poisson", max_iter=20, max_depth=4, random_state=0), raw, "count", False),
        C("isolation_forest_auto", IsolationForest(n_estimators=40, random_state=0),
          NAN_FREE, "binary", True),
        C("isolation_forest_contamination_max_features", IsolationForest(
            n_estimators=30, contamination=0.1, max_features=0.6, max_samples=128,
            random_state=0), NAN_FREE, "binary", True),
        C("isolation_forest_pipeline", make_pipeline(_prep(), IsolationForest(
            n_estimators=25, contamination=0.05, bootstrap=True, random_state=0)),
          ALL, "binary", True),
    ]


@functools.lru_cache(maxsize=None)
def cases():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings of the small fits
        return {**build_cases(), **build_model_cases(), **build_selector_cases(),
                **build_search_and_glm_cases(), **build_mixture_cases(),
                **build_calibration_cases(), **build_neighbors_cases(),
                **build_ensemble_cases(),
                **build_misc_cases(), **build_linear_margin_cases()}


def build_model_cases():
    """Naive Bayes, k-means, multi-layer perceptrons and kernel SVMs."""
    from sklearn.cluster import KMeans, MiniBatchKMeans
    from sklearn.compose import ColumnTransformer
    from sklearn.feature_selection import VarianceThreshold
    from sklearn.naive_bayes import BernoulliNB, GaussianNB, MultinomialNB
    from sklearn.neural_network import MLPClassifier, MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import Binarizer, MinMaxScaler, OneHotEncoder, StandardScaler
    from sklearn.svm import SVC, SVR, NuSVC, NuSVR

    C = Case
    cases = [
        C("gaussian_nb", make_pipeline(_prep(), GaussianNB()), ALL, "multiclass", True),
        C("gaussian_nb_binary_bare", GaussianNB(), NAN_FREE, "binary", True),
        C("bernoulli_nb", make_pipeline(_prep(), BernoulliNB(binarize=0.0)), ALL, "four", True),
        C("bernoulli_nb_no_binarize", make_pipeline(ColumnTransformer([
            ("oh", OneHotEncoder(handle_unknown="ignore"), ["city", "plan"]),
            ("bin", Binarizer(threshold=2.5), ["visits"]),
        ]), BernoulliNB(binarize=None, alpha=0.5)), ["visits", "city", "plan"], "binary", True),
        C("multinomial_nb", make_pipeline(_prep(scaler=MinMaxScaler()), VarianceThreshold(),
                                          MultinomialNB()), ALL, "multiclass", True),
        C("multinomial_nb_binary", make_pipeline(_prep(scaler=MinMaxScaler()), MultinomialNB(
            alpha=0.3)), ALL, "labels", True),
        C("kmeans", make_pipeline(_prep(), KMeans(n_clusters=4, n_init=3, random_state=0)),
          ALL, "binary", True),
        C("minibatch_kmeans", make_pipeline(StandardScaler(), MiniBatchKMeans(
            n_clusters=3, n_init=3, random_state=0)), NAN_FREE, "binary", True),
        C("mlp_classifier_binary_tanh", make_pipeline(_prep(), MLPClassifier(
            (8,), activation="tanh", max_iter=300, random_state=0)), ALL, "binary", True),
        C("mlp_classifier_multiclass_relu", make_pipeline(_prep(), MLPClassifier(
            (10, 6), max_iter=300, random_state=0)), ALL, "four", True),
        C("mlp_classifier_logistic", make_pipeline(_prep(), MLPClassifier(
            (6,), activation="logistic", max_iter=300, random_state=0)), ALL, "multiclass", True),
        C("mlp_classifier_identity_labels", make_pipeline(_prep(), MLPClassifier(
            (5,), activation="identity", max_iter=200, random_state=0)), ALL, "labels", True),
        C("mlp_regressor_relu", make_pipeline(_prep(), MLPRegressor(
            (10,), max_iter=300, learning_rate_init=0.05, random_state=0)),
          ALL, "regression", False),
        C("mlp_regressor_tanh", make_pipeline(_prep(), MLPRegressor(
            (6, 4), activation="tanh", max_iter=200, random_state=0)), ALL, "regression", False),
        C("svc_rbf_multiclass", make_pipeline(_prep(), SVC()), ALL, "four", True),
        C("svc_poly_binary", make_pipeline(_prep(), SVC(kernel="poly", degree=3, gamma="auto",
                                                        coef0=0.5)), ALL, "labels", True),
        C("svc_sigmoid_binary", make_pipeline(_prep(), SVC(kernel="sigmoid", gamma=0.05,
                                                           coef0=-0.5)), ALL, "binary", True),
        C("svc_linear_multiclass", make_pipeline(_prep(), SVC(kernel="linear", C=0.5)),
          ALL, "multiclass", True),
        C("nusvc", make_pipeline(_prep(), NuSVC(nu=0.3)), ALL, "multiclass", True),
        C("svr_rbf", make_pipeline(_prep(), SVR(C=100.0, epsilon=5.0)), ALL, "regression", False),
        C("nusvr_poly", make_pipeline(_prep(), NuSVR(kernel="poly", degree=2, C=50.0)),
          ALL, "regression", False),
    ]
    return {c.name: c for c in cases}


def build_search_and_glm_cases():
    """Model-selection wrappers (a search over a whole Pipeline, a search as a Pipeline's model,
    the *CV linear models), generalized linear models and the other linear regressors."""
    from sklearn.cross_decomposition import PLSRegression
    from sklearn.linear_model import (ARDRegression, BayesianRidge, ElasticNetCV,
                                      GammaRegressor, HuberRegressor, Lars, LarsCV, LassoCV,
                                      LassoLars, LassoLarsCV, LassoLarsIC, LogisticRegression,
                                      LogisticRegressionCV, OrthogonalMatchingPursuit,
                                      OrthogonalMatchingPursuitCV, PoissonRegressor,
                                      QuantileRegressor, Ridge, RidgeClassifierCV, RidgeCV,
                                      TheilSenRegressor, TweedieRegressor)
    from sklearn.experimental import enable_halving_search_cv  # noqa: F401
    from sklearn.model_selection import (GridSearchCV, HalvingGridSearchCV,
                                         HalvingRandomSearchCV, RandomizedSearchCV)
    from sklearn.pipeline import make_pipeline
    from sklearn.tree import DecisionTreeRegressor

    def pipe(model, **prep):
        return make_pipeline(_prep(**prep), model)

    C = Case
    cases = [
        C("grid_search_pipeline", GridSearchCV(
            make_pipeline(_prep(), LogisticRegression(max_iter=2000)),
            {"logisticregression__C": [0.05, 1.0, 20.0]}, cv=3), ALL, "multiclass", True),
        C("randomized_search_in_pipeline", pipe(RandomizedSearchCV(
            Ridge(), {"alpha": [0.01, 0.3, 3.0, 30.0]}, n_iter=3, cv=3, random_state=0)),
          ALL, "regression", False),
        C("grid_search_bare_tree", GridSearchCV(
            DecisionTreeRegressor(random_state=0),
            {"max_depth": [2, 5]}, cv=3), NAN_FREE, "regression", False),
        C("halving_grid_search_pipeline", HalvingGridSearchCV(
            make_pipeline(_prep(), Ridge()), {"ridge__alpha": [0.1, 1.0, 10.0, 100.0]}, cv=3,
            random_state=0), ALL, "regression", False),
        C("halving_random_search_in_pipeline", pipe(HalvingRandomSearchCV(
            LogisticRegression(max_iter=2000), {"C": [0.01, 0.1, 1.0, 10.0]}, cv=3,
            random_state=0)), ALL, "binary", True),
        C("logistic_regression_cv", pipe(LogisticRegressionCV(Cs=3, cv=3, max_iter=2000)),
          ALL, "four", True),
        C("logistic_regression_cv_binary", pipe(LogisticRegressionCV(Cs=4, cv=3, max_iter=2000)),
          ALL, "labels", True),
        C("ridge_classifier_cv", pipe(RidgeClassifierCV(alphas=[0.1, 1.0, 10.0])),
          ALL, "multiclass", True),
        C("ridge_cv", pipe(RidgeCV(alphas=[0.1, 1.0, 10.0])), ALL, "regression", False),
        C("lasso_cv", pipe(LassoCV(cv=3, random_state=0)), ALL, "regression", False),
        C("elastic_net_cv", pipe(ElasticNetCV(l1_ratio=[0.2, 0.8], cv=3, random_state=0)),
          ALL, "regression", False),
        C("lars", pipe(Lars(n_nonzero_coefs=5)), ALL, "regression", False),
        C("lars_cv", pipe(LarsCV(cv=3)), ALL, "regression", False),
        C("lasso_lars", pipe(LassoLars(alpha=0.5)), ALL, "regression", False),
        C("lasso_lars_cv", pipe(LassoLarsCV(cv=3)), ALL, "regression", False),
        C("lasso_lars_ic", pipe(LassoLarsIC(criterion="bic")), ALL, "regression", False),
        C("orthogonal_matching_pursuit", pipe(OrthogonalMatchingPursuit(n_nonzero_coefs=4)),
          ALL, "regression", False),
        C("orthogonal_matching_pursuit_cv", pipe(OrthogonalMatchingPursuitCV(cv=3)),
          ALL, "regression", False),
        C("huber_regressor", pipe(HuberRegressor(epsilon=1.5, max_iter=500)),
          ALL, "regression", False),
        C("quantile_regressor", pipe(QuantileRegressor(quantile=0.8, alpha=0.01,
                                                       solver="highs")),
          ALL, "regression", False),
        C("bayesian_ridge", pipe(BayesianRidge()), ALL, "regression", False),
        C("ard_regression", pipe(ARDRegression()), ALL, "regression", False),
        C("theil_sen_regressor", TheilSenRegressor(max_subpopulation=200, random_state=0),
          ["income", "visits", "tenure", "rate"], "regression", False),
        C("poisson_regressor", pipe(PoissonRegressor(alpha=0.1, max_iter=500)),
          ALL, "count", False),
        C("gamma_regressor", pipe(GammaRegressor(alpha=0.1, max_iter=500)),
          ALL, "regression", False),
        C("tweedie_log", pipe(TweedieRegressor(power=1.5, alpha=0.1, max_iter=500)),
          ALL, "regression", False),
        C("tweedie_power0_identity", pipe(TweedieRegressor(power=0, alpha=0.1, max_iter=500)),
          ALL, "regression", False),
        C("tweedie_power0_log_link", pipe(TweedieRegressor(power=0, link="log", alpha=0.1,
                                                           max_iter=500)),
          ALL, "count", False),
        # The constant column's x_std is 0 in the data: scikit-learn makes it 1.
        C("pls_regression", pipe(PLSRegression(n_components=3)), ALL, "regression", False),
        C("pls_regression_bare_unscaled", PLSRegression(n_components=2, scale=False),
          NAN_FREE, "regression", False),
    ]
    return {c.name: c for c in cases}


def build_mixture_cases():
    """Gaussian mixtures of every covariance type over imputed, scaled columns (the constant
    one included), a Bayesian mixture of each weight prior, a one-component mixture."""
    from sklearn.impute import SimpleImputer
    from sklearn.mixture import BayesianGaussianMixture, GaussianMixture
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    cols = ["age", "income", "score", "tenure", "const"]

    def pipe(model):
        return make_pipeline(SimpleImputer(), StandardScaler(), model)

    C = Case
    cases = [C(f"gaussian_mixture_{kind}", pipe(GaussianMixture(
        3, covariance_type=kind, random_state=0)), cols, "binary", True)
        for kind in ("full", "tied", "diag", "spherical")]
    cases += [
        C("gaussian_mixture_bare", GaussianMixture(4, random_state=0),
          ["income", "visits", "rate"], "binary", True),
        C("gaussian_mixture_one_component", pipe(GaussianMixture(1, random_state=0)),
          cols, "binary", True),
        C("bayesian_gaussian_mixture_process_full", pipe(BayesianGaussianMixture(
            n_components=4, random_state=0, max_iter=300)), cols, "binary", True),
        C("bayesian_gaussian_mixture_distribution_diag", pipe(BayesianGaussianMixture(
            n_components=3, covariance_type="diag",
            weight_concentration_prior_type="dirichlet_distribution", random_state=0,
            max_iter=300)), cols, "binary", True),
        C("bayesian_gaussian_mixture_tied", pipe(BayesianGaussianMixture(
            n_components=3, covariance_type="tied", random_state=0, max_iter=300)),
          cols, "binary", True),
        C("bayesian_gaussian_mixture_spherical", pipe(BayesianGaussianMixture(
            n_components=3, covariance_type="spherical", random_state=0, max_iter=300)),
          cols, "binary", True),
    ]
    return {c.name: c for c in cases}


def build_calibration_cases():
    """CalibratedClassifierCV over linear classifiers: sigmoid and isotonic, binary and
    multiclass, ensemble=True (one member per fold) and False."""
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.linear_model import LogisticRegression, RidgeClassifier, SGDClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import LinearSVC

    def pipe(model):
        return make_pipeline(_prep(), model)

    C = Case
    cases = [
        C("calibrated_sigmoid_binary", pipe(CalibratedClassifierCV(
            LinearSVC(random_state=0, max_iter=5000), cv=3)), ALL, "binary", True),
        C("calibrated_isotonic_binary_labels", pipe(CalibratedClassifierCV(
            SGDClassifier(random_state=0), method="isotonic", cv=4)), ALL, "labels", True),
        C("calibrated_isotonic_multiclass", pipe(CalibratedClassifierCV(
            LogisticRegression(max_iter=2000), method="isotonic", cv=3)),
          ALL, "multiclass", True),
        C("calibrated_sigmoid_four_no_ensemble", pipe(CalibratedClassifierCV(
            RidgeClassifier(), cv=3, ensemble=False)), ALL, "four", True),
        C("calibrated_isotonic_four_no_ensemble", pipe(CalibratedClassifierCV(
            LinearSVC(random_state=0, max_iter=5000), method="isotonic", cv=3,
            ensemble=False)), ALL, "four", True),
        # One member's isotonic calibrators give 0 for every class on two rows: scikit-learn
        # makes them uniform.
        C("calibrated_isotonic_zero_sum_rows", pipe(CalibratedClassifierCV(
            SGDClassifier(random_state=0), method="isotonic", cv=3)), ALL, "four", True),
    ]
    return {c.name: c for c in cases}


def build_neighbors_cases():
    """KNeighborsClassifier / KNeighborsRegressor: k = 1 and 5, uniform and distance weights,
    euclidean and manhattan, in a pipeline with imputer + scaler + one-hot and bare. The scored
    rows include the training rows themselves: a zero distance (distance weights count only the
    exact matches)."""
    from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
    from sklearn.pipeline import make_pipeline

    def pipe(model):
        return make_pipeline(_prep(), model)

    C = Case
    cases = [
        C("knn_k1_classifier", pipe(KNeighborsClassifier(n_neighbors=1)), ALL, "multiclass", True),
        C("knn_k5_classifier_uniform", pipe(KNeighborsClassifier()), ALL, "four", True),
        C("knn_k5_classifier_distance", pipe(KNeighborsClassifier(weights="distance")),
          ALL, "multiclass", True),
        C("knn_k5_classifier_manhattan_labels", pipe(KNeighborsClassifier(p=1)),
          ALL, "labels", True),
        C("knn_k7_classifier_distance_manhattan_brute", pipe(KNeighborsClassifier(
            7, weights="distance", p=1, algorithm="brute")), ALL, "binary", True),
        C("knn_k1_regressor", pipe(KNeighborsRegressor(n_neighbors=1)), ALL, "regression", False),
        C("knn_k5_regressor_uniform", pipe(KNeighborsRegressor()), ALL, "regression", False),
        C("knn_k5_regressor_distance", pipe(KNeighborsRegressor(weights="distance")),
          ALL, "regression", False),
        C("knn_k4_regressor_distance_manhattan_bare", KNeighborsRegressor(
            4, weights="distance", metric="manhattan"), NAN_FREE, "regression", False),
        # Integer columns only: many rows at equal distances (ties inside the k nearest are
        # compared, ties at the k-th place are not).
        C("knn_k3_classifier_integer_ties", KNeighborsClassifier(3), ["visits", "tenure"],
          "binary", True),
        C("knn_k6_regressor_distance_integer_ties", KNeighborsRegressor(6, weights="distance"),
          ["visits", "tenure"], "regression", False),
        # Fitted on one class: predicts it, predict_proba [1.0].
        C("one_class_knn", pipe(KNeighborsClassifier(3, weights="distance")), ALL, "one", True),
    ]
    # seuclidean (per-column variances V) and mahalanobis (VI, the inverse covariance of the
    # training rows): exported as a linear map of the rows before a euclidean search.
    cols = ["income", "visits", "tenure", "rate"]
    train = frame()[0][cols].to_numpy()[:N_TRAIN]
    V = np.random.default_rng(3).uniform(0.5, 2.0, len(cols)) * train.var(axis=0)
    VI = np.linalg.inv(np.cov(train.T))
    cases += [
        C("knn_k5_classifier_seuclidean", KNeighborsClassifier(metric="seuclidean", metric_params={"V": V}),
          cols, "multiclass", True),
        C("knn_k3_classifier_mahalanobis_distance", KNeighborsClassifier(
            3, weights="distance", metric="mahalanobis", metric_params={"VI": VI}), cols, "four", True),
        C("knn_k5_regressor_mahalanobis", KNeighborsRegressor(metric="mahalanobis", metric_params={"VI": VI}),
          cols, "regression", False),
    ]
    # Minkowski with p other than 1 and 2: (Σ |x - s|^p)^(1/p); p = inf (chebyshev) is the
    # largest difference (continuous columns there, so that no two rows tie on it).
    from sklearn.preprocessing import StandardScaler
    cases += [
        C("knn_k5_classifier_minkowski_p5", pipe(KNeighborsClassifier(p=5)), ALL, "multiclass", True),
        C("knn_k3_classifier_minkowski_p5_metric_params", KNeighborsClassifier(
            3, algorithm="brute", metric_params={"p": 5}), NAN_FREE, "four", True),
        C("knn_k4_regressor_minkowski_p1_5_distance", pipe(KNeighborsRegressor(
            4, weights="distance", p=1.5)), ALL, "regression", False),
        C("knn_k5_classifier_chebyshev", make_pipeline(StandardScaler(), KNeighborsClassifier(
            metric="chebyshev")), ["income", "rate"], "multiclass", True),
        C("knn_k3_regressor_p_inf_distance", make_pipeline(StandardScaler(), KNeighborsRegressor(
            3, weights="distance", p=np.inf)), ["income", "rate"], "regression", False),
    ]
    return {c.name: c for c in cases}


def build_ensemble_cases():
    """Voting, Bagging and Stacking over members of several families, pipelines among them
    (an imputer inside a member sees the NULLs), 'drop', weights, hard-vote ties, bagging
    members that lack a class or see a subset of the columns (duplicates included)."""
    from sklearn.ensemble import (BaggingClassifier, BaggingRegressor,
                                  HistGradientBoostingRegressor, RandomForestClassifier,
                                  StackingClassifier, StackingRegressor, VotingClassifier,
                                  VotingRegressor)
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge, RidgeClassifier
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MinMaxScaler, StandardScaler
    from sklearn.svm import LinearSVC
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    def pipe(model):
        return make_pipeline(_prep(), model)

    lr = lambda: LogisticRegression(max_iter=2000)  # noqa: E731
    forest = lambda: RandomForestClassifier(10, max_depth=5, random_state=0)  # noqa: E731
    nan_cols = ["age", "income", "visits", "score", "const"]
    C = Case
    cases = [
        C("ens_voting_soft_weighted_drop", pipe(VotingClassifier(
            [("lr", lr()), ("rf", forest()), ("gone", "drop"),
             ("nb", make_pipeline(MinMaxScaler(), GaussianNB()))],
            voting="soft", weights=[2, 1, 5, 1])), ALL, "multiclass", True),
        C("ens_voting_hard_labels", pipe(VotingClassifier(
            [("dt", DecisionTreeClassifier(max_depth=4, random_state=0)),
             ("svc", LinearSVC(max_iter=5000, random_state=0)), ("lr", lr())],
            weights=[1, 1, 1.5])), ALL, "labels", True),
        # Two members of equal weight: every disagreement is a tie, won by the first class.
        C("ens_voting_hard_ties", pipe(VotingClassifier(
            [("dt", DecisionTreeClassifier(max_depth=2, random_state=0)), ("lr", lr())])),
          ALL, "binary", True),
        C("ens_voting_hard_four", pipe(VotingClassifier(
            [("dt3", DecisionTreeClassifier(max_depth=3, random_state=0)),
             ("dt6", DecisionTreeClassifier(max_depth=6, random_state=1)),
             ("ridge", RidgeClassifier()), ("rf", forest())])), ALL, "four", True),
        # NULLs reach the members: imputers inside two of them, HistGradientBoosting's own
        # missing-value directions in the third; a constant column.
        C("ens_voting_regressor_nan", VotingRegressor(
            [("ridge", make_pipeline(SimpleImputer(), StandardScaler(), Ridge())),
             ("dt", make_pipeline(SimpleImputer(strategy="median"),
                                  DecisionTreeRegressor(max_depth=5, random_state=0))),
             ("hgb", HistGradientBoostingRegressor(max_iter=20, random_state=0))],
            weights=[1, 2, 0.5]), nan_cols, "regression", False),
        C("ens_bagging_trees_feature_subsets", pipe(BaggingClassifier(
            n_estimators=8, max_features=0.6, bootstrap_features=True, random_state=0)),
          ALL, "four", True),
        # RidgeClassifier has no predict_proba: the members vote.
        C("ens_bagging_votes", pipe(BaggingClassifier(
            RidgeClassifier(), n_estimators=5, max_features=0.7, random_state=0)),
          ALL, "multiclass", True),
        # 6 rows per member (k-NN takes no sample_weight: bagging fits it on the drawn rows):
        # some members never saw a class.
        C("ens_bagging_members_lack_classes", pipe(BaggingClassifier(
            KNeighborsClassifier(3), n_estimators=6, max_samples=6, random_state=1)),
          ALL, "four", True),
        C("ens_bagging_regressor", pipe(BaggingRegressor(
            n_estimators=6, max_features=0.5, random_state=0)), ALL, "regression", False),
        C("ens_bagging_regressor_linear_nan", BaggingRegressor(
            make_pipeline(SimpleImputer(), LinearRegression()), n_estimators=4,
            max_features=3, random_state=2), nan_cols, "regression", False),
        # stack_method auto: predict_proba (the forest, the logistic regression: binary keeps
        # P(classes[1])) and decision_function (LinearSVC); the raw features passed through.
        C("ens_stacking_binary_passthrough", pipe(StackingClassifier(
            [("rf", forest()), ("svc", LinearSVC(max_iter=5000, random_state=0)), ("lr", lr())],
            final_estimator=lr(), passthrough=True)), ALL, "binary", True),
        C("ens_stacking_multiclass_auto", pipe(StackingClassifier(
            [("rf", forest()), ("ridge", RidgeClassifier()), ("gone", "drop"),
             ("nb", make_pipeline(MinMaxScaler(), GaussianNB()))],
            final_estimator=lr())), ALL, "four", True),
        # Every member's predicted label, a tree on top.
        C("ens_stacking_predict_tree_final", pipe(StackingClassifier(
            [("dt", DecisionTreeClassifier(max_depth=4, random_state=0)), ("lr", lr()),
             ("svc", LinearSVC(max_iter=5000, random_state=0))], stack_method="predict",
            final_estimator=DecisionTreeClassifier(max_depth=3, random_state=0))),
          ALL, "labels", True),
        C("ens_stacking_regressor_passthrough", pipe(StackingRegressor(
            [("ridge", Ridge()), ("dt", DecisionTreeRegressor(max_depth=5, random_state=0))],
            final_estimator=Ridge(), passthrough=True)), ALL, "regression", False),
    ]
    return {c.name: c for c in cases}


def build_misc_cases():
    """OneHotEncoder's infrequent categories (min_frequency, max_categories; unknown values
    ignored, or grouped with the infrequent ones; drop of a frequent category and if_binary;
    text and numeric columns; NULLs imputed first)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    def encoded(*parts, model=None):
        return make_pipeline(ColumnTransformer([
            ("num", make_pipeline(SimpleImputer(), StandardScaler()), ["age", "income", "score"]),
            *parts]), model or LogisticRegression(max_iter=1000))

    C = Case
    cases = [
        # 'lisbon' (unseen) and the rare cities share the last column; 'enterprise' is ignored.
        C("one_hot_infrequent_if_exist", encoded(
            ("city", OneHotEncoder(max_categories=3, handle_unknown="infrequent_if_exist"), ["city"]),
            ("plan", OneHotEncoder(min_frequency=0.25, handle_unknown="ignore"), ["plan"])),
          ["age", "income", "score", "city", "plan"], "multiclass", True),
        # Numeric categories, counted (min_frequency an int), the first frequent one dropped.
        C("one_hot_infrequent_numeric_drop_first", encoded(
            ("visits", OneHotEncoder(min_frequency=40, drop="first",
                                     handle_unknown="infrequent_if_exist"), ["visits"]),
            ("city", OneHotEncoder(min_frequency=62, drop="first", handle_unknown="ignore"),
             ["city"]), model=Ridge()),
          ["age", "income", "score", "visits", "city"], "regression", False),
        # NULL channels imputed first; two groups left, so if_binary drops the first.
        C("one_hot_infrequent_if_binary_imputed", encoded(
            ("channel", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(
                max_categories=2, drop="if_binary", handle_unknown="error")), ["channel"]),
            ("plan", OneHotEncoder(max_categories=2, drop=["basic"],
                                   handle_unknown="infrequent_if_exist"), ["plan"])),
          ["age", "income", "score", "channel", "plan"], "binary", True),
    ]
    cases += _spline_cases() + _ica_and_cluster_cases() + _radius_cases() + _missing_marker_cases()
    return {c.name: c for c in cases}


def _ica_and_cluster_cases():
    """FastICA (each whiten of 1.2, and none), MeanShift, Birch (n_clusters an int, None, and a
    clusterer), after imputing and scaling; rows with unseen categories too."""
    from sklearn.cluster import Birch, KMeans, MeanShift
    from sklearn.decomposition import FastICA
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    num = ["age", "income", "visits", "score", "tenure", "const"]
    scaled = lambda *steps: make_pipeline(SimpleImputer(), StandardScaler(), *steps)  # noqa: E731
    C = Case
    return [
        C("fast_ica_unit_variance", scaled(FastICA(3, whiten="unit-variance", random_state=0,
                                                   max_iter=500), Ridge()), num, "regression", False),
        C("fast_ica_arbitrary_variance", scaled(FastICA(4, whiten="arbitrary-variance",
                                                        random_state=1), LogisticRegression()),
          num, "binary", True),
        C("fast_ica_no_whiten", scaled(FastICA(whiten=False, random_state=0, max_iter=300),
                                       Ridge()), num, "regression", False),
        C("mean_shift", make_pipeline(_prep(), MeanShift(bandwidth=2.5)), ALL, "binary", True),
        C("birch_three_clusters", scaled(Birch(n_clusters=3, threshold=0.8)), num, "binary", True),
        C("birch_subclusters", scaled(Birch(n_clusters=None, threshold=1.5)), num, "binary", True),
        C("birch_kmeans_global", make_pipeline(_prep(), Birch(
            n_clusters=KMeans(4, n_init=3, random_state=0), threshold=1.0)), ALL, "binary", True),
    ]


def _radius_cases():
    """RadiusNeighborsClassifier / Regressor: uniform and distance weights, euclidean and
    manhattan, outlier labels ('most_frequent' and a given class) for the rows with no training
    row within the radius (many of the rows after N_TRAIN), in a pipeline and bare."""
    from sklearn.neighbors import RadiusNeighborsClassifier, RadiusNeighborsRegressor
    from sklearn.pipeline import make_pipeline

    def pipe(model):
        return make_pipeline(_prep(), model)

    C = Case
    cases = [
        C("radius_classifier_most_frequent", pipe(RadiusNeighborsClassifier(
            1.5, outlier_label="most_frequent")), ALL, "multiclass", True),
        C("radius_classifier_distance_label", pipe(RadiusNeighborsClassifier(
            2.0, weights="distance", outlier_label=2)), ALL, "four", True),
        C("radius_classifier_manhattan", pipe(RadiusNeighborsClassifier(
            4.0, p=1, outlier_label=1)), ALL, "binary", True),
        C("radius_regressor_uniform", pipe(RadiusNeighborsRegressor(4.0)), ALL, "regression",
          False),
        C("radius_regressor_distance_bare", RadiusNeighborsRegressor(
            12000.0, weights="distance"), NAN_FREE, "regression", False),
    ]
    for c in cases:
        if np.isnan(c.predict).any():
            raise ValueError(f"{c.name}: a row without neighbours (sklearn predicts NaN)")
    return cases


def _missing_marker_cases():
    """SimpleImputer and MissingIndicator with missing_values a number (visits and tenure hold
    zeros; const is 3.5 on every row, so all of it is missing and filled with the constant)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import MissingIndicator, SimpleImputer
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.pipeline import FeatureUnion, make_pipeline
    from sklearn.preprocessing import StandardScaler

    C = Case
    cols = ["visits", "tenure", "income", "const"]
    return [
        C("imputer_zero_marker_ridge", make_pipeline(ColumnTransformer([
            ("zero", SimpleImputer(missing_values=0, strategy="median"), ["visits", "tenure"]),
            ("const", SimpleImputer(missing_values=3.5, strategy="constant", fill_value=-2.0), ["const"]),
            ("income", StandardScaler(), ["income"])]), StandardScaler(), Ridge()),
          cols, "regression", False),
        C("missing_indicator_zero_marker_logistic", make_pipeline(ColumnTransformer([("union", FeatureUnion([
            ("imp", SimpleImputer(missing_values=0.0, strategy="most_frequent")),
            ("ind", MissingIndicator(missing_values=0, features="all"))]), ["visits", "tenure", "income"])]),
            StandardScaler(), LogisticRegression(max_iter=1000)), ["visits", "tenure", "income"], "binary", True),
    ]


def _spline_cases():
    """SplineTransformer: every extrapolation, degrees 0 to 3, uniform, quantile and given knots,
    include_bias off; the given knots span less than the data, so many rows lie beyond them on
    both sides; NULLs imputed first; 'error' with given knots wide enough for every row."""
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import SplineTransformer, StandardScaler

    def splined(*parts, model=None):
        return make_pipeline(ColumnTransformer(list(parts)), model or Ridge(alpha=1e-3))

    def knots(*columns):
        return np.array(columns, dtype=np.float64).T

    scaled = lambda step: make_pipeline(SimpleImputer(), StandardScaler(), step)  # noqa: E731
    C = Case
    return [
        C("spline_constant_and_linear_quantile", splined(
            ("cubic", scaled(SplineTransformer(knots=knots([-1.5, 0, 0.5, 1.2], [-1, 0, 0.5, 1]),
                                               degree=3)), ["age", "score"]),
            ("quad", SplineTransformer(n_knots=4, degree=2, knots="quantile",
                                       extrapolation="linear"), ["income"]),
            ("narrow", SplineTransformer(knots=knots([0.2, 0.5, 0.8]), degree=3,
                                         extrapolation="linear"), ["rate"])),
          ["age", "score", "income", "rate"], "regression", False),
        C("spline_continue_periodic", splined(
            ("lin", SplineTransformer(knots=knots([10, 30, 50]), degree=1,
                                      extrapolation="continue"), ["tenure"]),
            ("per", SplineTransformer(n_knots=6, degree=3, extrapolation="periodic"), ["visits"]),
            ("per_narrow", SplineTransformer(knots=knots([0.1, 0.3, 0.45, 0.6]), degree=3,
                                             extrapolation="periodic"), ["rate"]),
            ("age", make_pipeline(SimpleImputer(), SplineTransformer(
                n_knots=4, degree=2, extrapolation="continue")), ["age"]),
            model=LogisticRegression(max_iter=5000)),
          ["tenure", "visits", "rate", "age"], "binary", True),
        C("spline_degree0_and_linear_no_bias", splined(
            ("step", SplineTransformer(n_knots=5, degree=0, include_bias=False), ["rate"]),
            ("step_lin", SplineTransformer(knots=knots([20000, 30000, 40000]), degree=0,
                                           extrapolation="linear"), ["income"]),
            ("one", SplineTransformer(knots=knots([15000, 25000, 35000, 45000]), degree=1,
                                      extrapolation="linear", include_bias=False), ["income"]),
            ("periodic0", SplineTransformer(knots=knots([5, 20, 40, 60]), degree=0,
                                            extrapolation="periodic"), ["tenure"])),
          ["rate", "income", "tenure"], "regression", False),
        C("spline_error_given_knots", splined(
            ("s", scaled(SplineTransformer(knots=knots([-8, -1, 0, 2, 8], [-8, -0.5, 0.5, 1.5, 8]),
                                           degree=2, extrapolation="error")), ["age", "score"])),
          ["age", "score"], "regression", False),
    ]


# ---- a wide frame: 50 numeric columns, a target that depends on 5 of them ------------------------
# For the optimizer: a selector (or an L1 model's zero weights) must make the scan read only the
# columns the model uses.

WIDE = [f"w{i:02d}" for i in range(50)]
WIDE_SIGNAL = [3, 17, 22, 40, 48]


def build_selector_cases():
    """The issue's shape for every model family: ColumnTransformer(imputed + scaled numbers,
    one-hot text) → a selector → the model. The selectors drop columns, so these also run the
    optimizer's pruning through one-hot categories and scalers into each kind of model."""
    from sklearn.cluster import KMeans
    from sklearn.ensemble import (ExtraTreesRegressor, GradientBoostingClassifier,
                                  HistGradientBoostingClassifier, IsolationForest,
                                  RandomForestClassifier)
    from sklearn.feature_selection import (SelectFromModel, SelectKBest, SelectPercentile,
                                           VarianceThreshold, f_classif, f_regression)
    from sklearn.linear_model import Lasso, LinearRegression
    from sklearn.naive_bayes import GaussianNB, MultinomialNB
    from sklearn.neural_network import MLPClassifier, MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MinMaxScaler
    from sklearn.svm import SVC, SVR
    from sklearn.tree import DecisionTreeClassifier

    def pipe(selector, model, **prep):
        return make_pipeline(_prep(**prep), selector, model)

    C = Case
    cases = [
        C("select_linear_regression", pipe(SelectKBest(f_regression, k=7), LinearRegression()),
          ALL, "regression", False),
        C("select_decision_tree", pipe(SelectPercentile(f_classif, percentile=50),
                                       DecisionTreeClassifier(max_depth=5, random_state=0)),
          ALL, "four", True),
        C("select_random_forest", pipe(SelectKBest(f_classif, k=8), RandomForestClassifier(
            n_estimators=20, max_depth=6, random_state=0)), ALL, "binary", True),
        C("select_extra_trees_regressor", pipe(SelectFromModel(Lasso(alpha=1.0)),
                                               ExtraTreesRegressor(n_estimators=10, max_depth=6,
                                                                   random_state=0)),
          ALL, "regression", False),
        C("select_gradient_boosting", pipe(SelectKBest(f_classif, k=6),
                                           GradientBoostingClassifier(
            n_estimators=20, max_depth=3, random_state=0)), ALL, "multiclass", True),
        C("select_hist_gradient_boosting", pipe(SelectKBest(f_classif, k=7),
                                                HistGradientBoostingClassifier(
            max_iter=20, max_leaf_nodes=8, random_state=0)), ALL, "binary", True),
        C("select_isolation_forest", pipe(VarianceThreshold(0.05), IsolationForest(
            n_estimators=25, random_state=0)), ALL, "binary", True),
        C("select_svc", pipe(SelectKBest(f_classif, k=6), SVC(C=2.0)), ALL, "multiclass", True),
        C("select_svr", pipe(SelectKBest(f_regression, k=6), SVR(C=100.0, epsilon=5.0)),
          ALL, "regression", False),
        C("select_gaussian_nb", pipe(SelectKBest(f_classif, k=6), GaussianNB()),
          ALL, "binary", True),
        C("select_multinomial_nb", pipe(SelectPercentile(f_classif, percentile=60),
                                        MultinomialNB(), scaler=MinMaxScaler()),
          ALL, "four", True),
        C("select_mlp_classifier", pipe(SelectKBest(f_classif, k=7), MLPClassifier(
            (8,), max_iter=300, random_state=0)), ALL, "multiclass", True),
        C("select_mlp_regressor", pipe(SelectKBest(f_regression, k=7), MLPRegressor(
            (8,), max_iter=300, learning_rate_init=0.05, random_state=0)),
          ALL, "regression", False),
        C("select_kmeans", pipe(SelectKBest(f_classif, k=5), KMeans(
            n_clusters=3, n_init=3, random_state=0)), ALL, "binary", True),
    ]
    return {c.name: c for c in cases}


@functools.lru_cache(maxsize=None)
def wide_frame(seed=2):
    """(DataFrame of N_ROWS rows × 50 NaN-free float32-representable columns, targets)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(0, 1, (N_ROWS, len(WIDE))) * rng.uniform(0.5, 20, len(WIDE)) \
        + rng.uniform(-10, 10, len(WIDE))
    X = X.astype(np.float32).astype(np.float64)
    z = (X - X.mean(axis=0)) / X.std(axis=0)
    s = z[:, WIDE_SIGNAL] @ np.array([1.0, -2.0, 0.8, 1.2, -1.0])
    return pd.DataFrame(X, columns=WIDE), {"binary": (s + rng.normal(0, 0.5, N_ROWS) > 0).astype(int)}


@functools.lru_cache(maxsize=None)
def wide_cases():
    from sklearn.feature_selection import SelectKBest
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    cases = [
        Case("wide_select_k_best", make_pipeline(StandardScaler(), SelectKBest(k=5),
                                                 LogisticRegression(max_iter=1000)),
             WIDE, "binary", True, data=wide_frame),
        Case("wide_l1_logistic", make_pipeline(StandardScaler(), LogisticRegression(
            penalty="l1", C=0.05, solver="liblinear")), WIDE, "binary", True, data=wide_frame),
    ]
    return {c.name: c for c in cases}


def wide_columns_read(case):
    """The columns of the wide frame the fitted pipeline really uses."""
    est = case.estimator
    if "selectkbest" in est.named_steps:
        return [WIDE[i] for i in est.named_steps["selectkbest"].get_support(indices=True)]
    coef = est[-1].coef_
    return [WIDE[i] for i in range(len(WIDE)) if np.any(coef[:, i] != 0)]


# Names of the cases whose program takes the fused native linear margin (kernels/linear_margin):
# test_sklearn.py also holds them to the tensor program (pg_predict.strategy = gemm), value for value.
LINEAR_MARGIN_CASES = ["lm_pipe_like", "lm_one_hot_only", "lm_impute_only", "lm_scaler_only",
                       "lm_missing_marker", "lm_drop_first_labels", "ct_logistic_binary",
                       "linear_regression_minmax", "linear_regression_bare"]


def build_linear_margin_cases():
    """One-output linear models over the featurizers the fused native margin computes (impute,
    scale, one-hot; each alone and together): the bench's `pipe` shape (NULL text imputed
    with a constant, then one-hot, SelectKBest, LogisticRegression), one-hot alone of text
    with unseen values and of numeric categories, an imputer alone, a scaler alone, an imputer
    with a numeric missing_values, and drop='first' with non-0/1 labels."""
    from sklearn.compose import ColumnTransformer
    from sklearn.feature_selection import SelectKBest, f_classif
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    numbers = ["age", "income", "visits", "score", "tenure", "rate"]
    C = Case
    cases = [
        C("lm_pipe_like", make_pipeline(ColumnTransformer([
            ("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), numbers),
            ("text", make_pipeline(SimpleImputer(strategy="constant", fill_value="none"),
                                   OneHotEncoder(handle_unknown="ignore")), TEXT),
        ]), SelectKBest(f_classif, k=12), LogisticRegression(max_iter=1000)),
          numbers + TEXT, "binary", True),
        C("lm_one_hot_only", make_pipeline(ColumnTransformer([
            ("text", OneHotEncoder(handle_unknown="ignore"), ["city", "plan", "visits"]),
        ], remainder="passthrough"), Ridge(alpha=0.3)),
          ["income", "tenure", "city", "plan", "visits"], "regression", False),
        C("lm_impute_only", make_pipeline(SimpleImputer(strategy="mean"), LinearRegression()),
          ["age", "score", "visits"], "regression", False),
        C("lm_scaler_only", make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)),
          NAN_FREE, "binary", True),
        C("lm_missing_marker", make_pipeline(ColumnTransformer([
            ("zero", SimpleImputer(missing_values=0.0, strategy="mean"), ["visits"]),
            ("num", SimpleImputer(strategy="median"), ["age", "income"]),
        ]), LogisticRegression(max_iter=1000)),
          ["visits", "age", "income"], "binary", True),
        C("lm_drop_first_labels", make_pipeline(ColumnTransformer([
            ("num", make_pipeline(SimpleImputer(), StandardScaler()), ["age", "score", "rate"]),
            ("text", OneHotEncoder(drop="first", handle_unknown="ignore"), ["city", "plan"]),
        ]), LogisticRegression(max_iter=1000)),
          ["age", "score", "rate", "city", "plan"], "labels", True),
    ]
    return {c.name: c for c in cases}
