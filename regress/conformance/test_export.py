#!/usr/bin/python3
"""The Python exporter alone (python/pg_predict), no database.

Every pipeline of sklearn_cases.py is exported, written as JSON and read back, and evaluated by
sklearn_reference.py (a NumPy reading of src/spec/SKLEARN_FORMAT.md): its predict and
predict_proba must equal scikit-learn's on every row within 1e-9. Then: what the exporter
refuses (each message names the estimator and the parameter), input names and types, column
selections, the JSON encoding of NaN, deploy() and the command line.

Run: /usr/bin/python3 regress/conformance/test_export.py [-k name] [--list]
Last line: 'export: N passed, M failed'.
"""

import json
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import pandas as pd

import sklearn_cases
import sklearn_reference
from harness import Failure, add_test, assert_close, assert_equal, main

import pg_predict  # noqa: E402  (python/ is put on sys.path by sklearn_cases)
from pg_predict import ExportError, export

PYTHON_DIR = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                          "python"))


def round_trip(doc):
    return json.loads(json.dumps(doc, allow_nan=False))


# ---- every case against the reference evaluator ------------------------------------------------

def reference_test(name):
    def run(_env):
        case = sklearn_cases.cases()[name]
        doc = round_trip(export(case.estimator))
        assert_equal(f"{name}: inputs", [i["name"] for i in doc["inputs"]], case.columns)
        want_types = ["text" if c in sklearn_cases.TEXT else "numeric" for c in case.columns]
        assert_equal(f"{name}: input types", [i["type"] for i in doc["inputs"]], want_types)
        assert_equal(f"{name}: task", doc["task"],
                     "classification" if case.classifier else "regression")
        if case.classifier:
            assert_equal(f"{name}: classes", doc["classes"], [int(c) for c in case.classes])
        data = {c: case.X[c].tolist() for c in case.columns}
        predict, proba = sklearn_reference.evaluate(doc, data)
        got = np.where(case.ambiguous, case.predict, predict)
        assert_close(f"{name}: predict", got, case.predict, atol=1e-9, rtol=1e-9)
        if case.proba is not None:
            if proba is None:
                raise Failure(f"{name}: the document gives no probabilities")
            proba = np.where(case.tied[:, None], case.proba, proba)
            assert_close(f"{name}: predict_proba", proba, case.proba, atol=1e-9, rtol=1e-9)
    return run


for _name in [
        "ct_logistic_binary", "ct_logistic_multinomial", "ct_logistic_ovr",
        "ct_logistic_binary_multinomial", "ct_random_forest", "ct_random_forest_multiclass",
        "decision_tree_regressor", "decision_tree_classifier_ordinal",
        "gradient_boosting_binary", "gradient_boosting_multiclass",
        "gradient_boosting_exponential", "gradient_boosting_regressor",
        "random_forest_regressor", "extra_trees_classifier", "extra_trees_regressor",
        "linear_regression_minmax", "ridge_robust", "lasso_maxabs", "elastic_net",
        "sgd_regressor", "linear_svr", "linear_regression_bare", "sgd_classifier_log",
        "sgd_classifier_hinge", "sgd_classifier_modified_huber_binary",
        "sgd_classifier_modified_huber_multiclass", "linear_svc", "perceptron", "ridge_classifier",
        "ordinal_encoder_logistic", "one_hot_drop_first_numeric_categories",
        "column_selection_by_index_and_mask", "feature_union", "function_transformer_log1p",
        "text_imputer",
        "selectors_variance_kbest", "selectors_percentile_from_model", "binarizer_normalizer_l1",
        "normalizer_l2_max", "missing_indicator", "pca_whiten", "pca_truncated_svd",
        "kbins_ordinal_onehot", "polynomial_features",
        "hist_gradient_boosting_binary_nan", "hist_gradient_boosting_multiclass_ct",
        "hist_gradient_boosting_regressor_early_stopping", "hist_gradient_boosting_poisson",
        "isolation_forest_auto", "isolation_forest_contamination_max_features",
        "isolation_forest_pipeline", "power_yeo_johnson", "power_box_cox",
        "quantile_uniform", "quantile_normal", "kernel_pca_rbf",
        "kernel_pca_linear_poly_sigmoid"]:
    add_test(f"reference[{_name}]", reference_test(_name))

# classifiers fitted on one class
for _name in [
        "one_class_decision_tree", "one_class_random_forest", "one_class_extra_trees",
        "one_class_gaussian_nb", "one_class_multinomial_nb", "one_class_bernoulli_nb",
        "one_class_ridge_classifier", "one_class_kmeans", "one_class_hist_gradient_boosting",
        "one_class_mlp"]:
    add_test(f"reference[{_name}]", reference_test(_name))

# parameters scikit-learn's predict does not read (the audit)
for _name in [
        "audit_logistic_no_intercept_class_weight",
        "audit_linear_regression_positive_no_intercept", "audit_linear_svc_intercept_scaling",
        "audit_svc_ovo_class_weight", "audit_sgd_average", "audit_scaler_parameters",
        "audit_random_forest_class_weight", "audit_gradient_boosting_early_stopping"]:
    add_test(f"reference[{_name}]", reference_test(_name))

# transformer_weights
for _name in [
        "weights_some_parts_logistic", "weights_zero_and_remainder_ridge", "weights_svc_rbf",
        "weights_random_forest_regressor", "weights_feature_union"]:
    add_test(f"reference[{_name}]", reference_test(_name))

# Naive Bayes, k-means, MLP, kernel SVMs.
for _name in [
        "gaussian_nb", "gaussian_nb_binary_bare", "bernoulli_nb", "bernoulli_nb_no_binarize",
        "multinomial_nb", "multinomial_nb_binary", "kmeans", "minibatch_kmeans",
        "mlp_classifier_binary_tanh", "mlp_classifier_multiclass_relu",
        "mlp_classifier_logistic", "mlp_classifier_identity_labels", "mlp_regressor_relu",
        "mlp_regressor_tanh", "svc_rbf_multiclass", "svc_poly_binary", "svc_sigmoid_binary",
        "svc_linear_multiclass", "nusvc", "svr_rbf", "nusvr_poly"]:
    add_test(f"reference[{_name}]", reference_test(_name))

# ColumnTransformer → selector → model, one per model family
for _name in [
        "select_linear_regression", "select_decision_tree", "select_random_forest",
        "select_extra_trees_regressor", "select_gradient_boosting",
        "select_hist_gradient_boosting", "select_isolation_forest", "select_svc", "select_svr",
        "select_gaussian_nb", "select_multinomial_nb", "select_mlp_classifier",
        "select_mlp_regressor", "select_kmeans"]:
    add_test(f"reference[{_name}]", reference_test(_name))


# model selection, generalized linear models and the other linear regressors
for _name in [
        "grid_search_pipeline", "randomized_search_in_pipeline", "grid_search_bare_tree",
        "halving_grid_search_pipeline", "halving_random_search_in_pipeline",
        "logistic_regression_cv", "logistic_regression_cv_binary", "ridge_classifier_cv",
        "ridge_cv", "lasso_cv", "elastic_net_cv", "lars", "lars_cv", "lasso_lars",
        "lasso_lars_cv", "lasso_lars_ic", "orthogonal_matching_pursuit",
        "orthogonal_matching_pursuit_cv", "huber_regressor", "quantile_regressor",
        "bayesian_ridge", "ard_regression", "theil_sen_regressor", "poisson_regressor",
        "gamma_regressor", "tweedie_log", "tweedie_power0_identity", "tweedie_power0_log_link",
        "pls_regression", "pls_regression_bare_unscaled"]:
    add_test(f"reference[{_name}]", reference_test(_name))

# Gaussian mixtures
for _name in [
        "gaussian_mixture_full", "gaussian_mixture_tied", "gaussian_mixture_diag",
        "gaussian_mixture_spherical", "gaussian_mixture_bare", "gaussian_mixture_one_component",
        "bayesian_gaussian_mixture_process_full", "bayesian_gaussian_mixture_distribution_diag",
        "bayesian_gaussian_mixture_tied", "bayesian_gaussian_mixture_spherical"]:
    add_test(f"reference[{_name}]", reference_test(_name))

# CalibratedClassifierCV
for _name in [
        "calibrated_sigmoid_binary", "calibrated_isotonic_binary_labels",
        "calibrated_isotonic_multiclass", "calibrated_sigmoid_four_no_ensemble",
        "calibrated_isotonic_four_no_ensemble", "calibrated_isotonic_zero_sum_rows"]:
    add_test(f"reference[{_name}]", reference_test(_name))

# nearest neighbours
for _name in [
        "knn_k1_classifier", "knn_k5_classifier_uniform", "knn_k5_classifier_distance",
        "knn_k5_classifier_manhattan_labels", "knn_k7_classifier_distance_manhattan_brute",
        "knn_k1_regressor", "knn_k5_regressor_uniform", "knn_k5_regressor_distance",
        "knn_k4_regressor_distance_manhattan_bare", "knn_k3_classifier_integer_ties",
        "knn_k6_regressor_distance_integer_ties", "one_class_knn",
        "knn_k5_classifier_seuclidean", "knn_k3_classifier_mahalanobis_distance",
        "knn_k5_regressor_mahalanobis", "knn_k5_classifier_minkowski_p5",
        "knn_k3_classifier_minkowski_p5_metric_params", "knn_k4_regressor_minkowski_p1_5_distance",
        "knn_k5_classifier_chebyshev", "knn_k3_regressor_p_inf_distance"]:
    add_test(f"reference[{_name}]", reference_test(_name))
for _name in sklearn_cases.build_ensemble_cases():
    add_test(f"reference[{_name}]", reference_test(_name))


for _name in ["one_hot_infrequent_if_exist", "one_hot_infrequent_numeric_drop_first",
              "one_hot_infrequent_if_binary_imputed", "spline_constant_and_linear_quantile",
              "spline_continue_periodic", "spline_degree0_and_linear_no_bias",
              "spline_error_given_knots", "fast_ica_unit_variance",
              "fast_ica_arbitrary_variance", "fast_ica_no_whiten", "mean_shift",
              "birch_three_clusters", "birch_subclusters", "birch_kmeans_global",
              "radius_classifier_most_frequent", "radius_classifier_distance_label",
              "radius_classifier_manhattan", "radius_regressor_uniform",
              "radius_regressor_distance_bare", "imputer_zero_marker_ridge",
              "missing_indicator_zero_marker_logistic"]:
    add_test(f"reference[{_name}]", reference_test(_name))

# the one-output linear pipelines of the fused native margin
for _name in sklearn_cases.build_linear_margin_cases():
    add_test(f"reference[{_name}]", reference_test(_name))


def test_every_case_is_checked(_env):
    names = {n[len("reference["):-1] for n, _ in __import__("harness")._TESTS
             if n.startswith("reference[")}
    missing = sorted(set(sklearn_cases.cases()) - names)
    if missing:
        raise Failure(f"cases without a reference test: {missing}")


# ---- refusals ------------------------------------------------------------------------------

def small_frame():
    df, targets = sklearn_cases.frame()
    return df.iloc[:sklearn_cases.N_TRAIN], targets["binary"][:sklearn_cases.N_TRAIN]


def fit_quiet(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y)


def expect_refusal(est, *needles, feature_names=None):
    try:
        export(est, feature_names)
    except ExportError as e:
        msg = str(e)
        for needle in needles:
            if needle not in msg:
                raise Failure(f"the refusal {msg!r} does not mention {needle!r}")
        return msg
    raise Failure(f"export() of {est!r} did not refuse")


def test_refuse_missing_text_category(_env):
    from sklearn.preprocessing import OneHotEncoder
    from sklearn.linear_model import LogisticRegression
    X, y = small_frame()
    enc = fit_quiet(OneHotEncoder(handle_unknown="ignore"), X[["channel"]], y)
    if not any(v is None or v != v for v in enc.categories_[0]):
        raise Failure("the test data has no missing channel")
    from sklearn.pipeline import make_pipeline
    pipe = fit_quiet(make_pipeline(OneHotEncoder(handle_unknown="ignore"), LogisticRegression()),
                     X[["channel"]], y)
    expect_refusal(pipe, "OneHotEncoder", "missing value")


def test_refuse_function_transformer_not_ufunc(_env):
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer
    X, y = small_frame()

    def double(z):
        return 2 * z
    pipe = fit_quiet(make_pipeline(FunctionTransformer(double), Ridge()), X[["income"]], y)
    expect_refusal(pipe, "FunctionTransformer(func=", "double", "ufunc")
    pipe = fit_quiet(make_pipeline(FunctionTransformer(np.log1p, kw_args={"where": True}), Ridge()),
                     X[["income"]], y)
    expect_refusal(pipe, "FunctionTransformer(kw_args=")


def test_labels_of_every_type(_env):
    """classes_ go into the document as JSON values of their type, in scikit-learn's order."""
    from sklearn.linear_model import LogisticRegression
    X, y = small_frame()
    X = X[["income", "tenure"]]
    for labels, want in ((np.array(["no", "yes"]), ["no", "yes"]),
                         (np.array([True, False]), [False, True]),
                         (np.array([7, -3], dtype=np.int64), [-3, 7]),
                         (np.array([2.0, -1.0], dtype=np.float32), [-1, 2])):
        clf = fit_quiet(LogisticRegression(), X, labels[y])
        doc = export(clf)
        assert_equal(f"classes of labels {labels.dtype}", doc["classes"], want)
        assert_equal(f"types of labels {labels.dtype}", [type(c) for c in doc["classes"]],
                     [type(c) for c in want])


def test_refuse_mixed_labels(_env):
    from sklearn.linear_model import LogisticRegression
    X, y = small_frame()
    clf = fit_quiet(LogisticRegression(), X[["income", "tenure"]], np.array(["no", "yes"])[y])
    clf.classes_ = np.array([1, "yes"], dtype=object)  # scikit-learn's fit refuses such a mix
    expect_refusal(clf, "LogisticRegression", "mix", "numbers and strings")
    clf.classes_ = np.array([None, "yes"], dtype=object)
    expect_refusal(clf, "LogisticRegression", "NoneType", "numbers, strings or booleans")


def test_refuse_imputer_missing_values(_env):
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder
    X, y = small_frame()
    # A number is a missing value marker (test_transform scores it); a string is not supported.
    doc = export(fit_quiet(make_pipeline(SimpleImputer(missing_values=0.0), Ridge()), X[["visits"]], y))
    assert_equal("SimpleImputer(missing_values=0.0): missing_values", doc["steps"][0]["missing_values"], 0.0)
    pipe = fit_quiet(make_pipeline(SimpleImputer(missing_values="", strategy="most_frequent"),
                                   OneHotEncoder(), Ridge()), X[["city"]], y)
    expect_refusal(pipe, "SimpleImputer(missing_values='')", "'simpleimputer'", "finite number")
    pipe = fit_quiet(make_pipeline(SimpleImputer(add_indicator=True), Ridge()), X[["age"]], y)
    expect_refusal(pipe, "SimpleImputer(add_indicator=True)")


def test_refuse_imputer_dropped_column(_env):
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    X = pd.DataFrame({"a": [1.0, 2.0, np.nan, 4.0], "b": [np.nan] * 4})
    pipe = fit_quiet(make_pipeline(SimpleImputer(), Ridge()), X, [1.0, 2.0, 3.0, 4.0])
    expect_refusal(pipe, "SimpleImputer(keep_empty_features=False)", "column 1")
    pipe = fit_quiet(make_pipeline(SimpleImputer(keep_empty_features=True), Ridge()), X,
                     [1.0, 2.0, 3.0, 4.0])
    export(pipe)  # kept columns are fine


def test_refuse_multi_output(_env):
    from sklearn.linear_model import LinearRegression
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
    X, y = small_frame()
    Y = np.column_stack([y, 1 - y])
    # A tree classifier of binary outputs is exported (one label per output); an output of
    # three classes is refused.
    doc = export(fit_quiet(DecisionTreeClassifier(max_depth=2), X[["income"]], Y))
    assert_equal("DecisionTreeClassifier of two binary outputs: (task, outputs, classes)",
                 (doc["task"], doc.get("outputs"), doc["classes"]), ("classification", 2, [[0, 1], [0, 1]]))
    expect_refusal(fit_quiet(DecisionTreeClassifier(max_depth=2), X[["income"]],
                             np.column_stack([y, np.arange(len(y)) % 3])),
                   "DecisionTreeClassifier", "output 1 has 3 classes")
    # Multi-output regressors are exported, their document saying how many outputs
    # (test_multioutput.py scores them).
    for est in (DecisionTreeRegressor(max_depth=2), LinearRegression()):
        doc = export(fit_quiet(est, X[["income"]], Y))
        assert_equal(f"{type(est).__name__}: (task, outputs)", (doc["task"], doc.get("outputs")),
                     ("regression", 2))


def test_refuse_unknown_estimators(_env):
    from sklearn.decomposition import FactorAnalysis
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.semi_supervised import LabelSpreading
    X, y = small_frame()
    expect_refusal(fit_quiet(LabelSpreading(), X[["income", "tenure"]], y),
                   "LabelSpreading", "supported:")
    pipe = fit_quiet(Pipeline([("reduce", FactorAnalysis(1)), ("model", LogisticRegression())]),
                     X[["income", "tenure"]], y)
    expect_refusal(pipe, "FactorAnalysis", "'reduce'")


def test_refuse_radius_outlier_label_not_a_class(_env):
    from sklearn.neighbors import RadiusNeighborsClassifier
    X, y = small_frame()
    est = fit_quiet(RadiusNeighborsClassifier(1.0, outlier_label=7), X[["income", "tenure"]], y)
    expect_refusal(est, "RadiusNeighborsClassifier", "outlier_label", "not one of the classes")


def test_refuse_target_encoders(_env):
    """LabelEncoder / LabelBinarizer encode y: no fitted Pipeline or ColumnTransformer can hold
    one (scikit-learn's fit fails). A pipeline assembled from a fitted LabelBinarizer is refused
    with why (a LabelEncoder is exported as the ordinal encoding of its one column, see
    test_transform's label_encoder cases); a TransformedTargetRegressor over either is refused
    as a classifier in disguise."""
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.linear_model import LinearRegression, LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import LabelBinarizer, LabelEncoder
    X, y = small_frame()
    for enc in (LabelEncoder, LabelBinarizer):
        try:
            make_pipeline(enc(), LogisticRegression()).fit(X[["city"]], y)
            raise Failure(f"scikit-learn fitted a Pipeline holding a {enc.__name__}")
        except TypeError:
            pass  # fit_transform() takes 2 positional arguments but 3 were given
        if enc is LabelBinarizer:  # a LabelEncoder is one column's ordinal encoding (test_transform)
            fitted = enc().fit(X["city"])
            pipe = make_pipeline(fitted, fit_quiet(LogisticRegression(), X[["income"]], y))
            expect_refusal(pipe, enc.__name__, "encodes a target", "OneHotEncoder or OrdinalEncoder",
                           feature_names=["city"])
        ttr = fit_quiet(TransformedTargetRegressor(LinearRegression(), transformer=enc()),
                        X[["income", "tenure"]], y)
        expect_refusal(ttr, "TransformedTargetRegressor", enc.__name__, "fit a classifier")


def test_refuse_other_parameters(_env):
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.linear_model import LinearRegression, Ridge
    from sklearn.pipeline import FeatureUnion, make_pipeline
    from sklearn.preprocessing import MinMaxScaler, StandardScaler
    X, y = small_frame()
    X = X[["income", "tenure"]]
    for bad in (float("nan"), float("inf"), "2"):
        fu = FeatureUnion([("a", StandardScaler()), ("b", MinMaxScaler())])
        pipe = fit_quiet(make_pipeline(fu, Ridge()), X, y)
        fu.transformer_weights = {"a": bad}   # scikit-learn could not have fitted with it
        expect_refusal(pipe, "FeatureUnion(transformer_weights=", "'a'", "not a finite number")
    gb = fit_quiet(GradientBoostingRegressor(init=LinearRegression(), n_estimators=3), X, y)
    expect_refusal(gb, "GradientBoostingRegressor(init=LinearRegression())")


def test_transformer_weights_are_written(_env):
    """A weighted part carries its weight; the same pipeline without weights has none; a weight
    on a text column that flows on to an encoder is refused."""
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    X, y = small_frame()
    X = X[["income", "tenure", "city"]]

    def parts(weights):
        ct = ColumnTransformer([("num", StandardScaler(), ["income"]),
                                ("oh", OneHotEncoder(), ["city"])], remainder="passthrough",
                               transformer_weights=weights)
        doc = export(fit_quiet(make_pipeline(ct, LogisticRegression()), X, y))
        step = doc["steps"][0]
        return [p.get("weight") for p in step["transformers"] + [step["remainder"]]]

    assert_equal("no weights", parts(None), [None, None, None])
    assert_equal("weights", parts({"oh": 0.0, "remainder": 2, "absent": 5.0}), [None, 0.0, 2.0])
    ct = ColumnTransformer([("txt", "passthrough", ["city"])], transformer_weights={"txt": 1})
    pipe = fit_quiet(make_pipeline(ct, OneHotEncoder(), LogisticRegression()), X, y)
    expect_refusal(pipe, "OneHotEncoder", "not an input column")


def test_refuse_kernel_svm_and_mlp_parameters(_env):
    from sklearn.neural_network import MLPClassifier, MLPRegressor
    from sklearn.svm import SVC, SVR
    X, y = small_frame()
    X = X[["income", "tenure"]] / 1000
    expect_refusal(fit_quiet(SVC(kernel="precomputed"), X @ X.T, y), "SVC(kernel='precomputed')",
                   "not supported")
    expect_refusal(fit_quiet(SVR(kernel=lambda a, b: a @ b.T), X, y), "SVR(kernel=", "<lambda>",
                   feature_names=["income", "tenure"])
    y3 = sklearn_cases.frame()[1]["multiclass"][:sklearn_cases.N_TRAIN]
    expect_refusal(fit_quiet(SVC(break_ties=True), X, y3), "SVC(break_ties=True)", "one-vs-one")
    fit_quiet(SVC(break_ties=True), X, y)  # binary: break_ties changes nothing
    export(fit_quiet(SVC(break_ties=True), X, y))
    Y = np.column_stack([y, 1 - y])
    expect_refusal(fit_quiet(MLPClassifier((3,), max_iter=20), X, Y), "MLPClassifier",
                   "multilabel")
    expect_refusal(fit_quiet(MLPRegressor((3,), max_iter=20), X, Y), "MLPRegressor",
                   "multi-output")


def test_kmeans_and_svm_documents(_env):
    """KMeans is a classifier over its cluster indices; SVC keeps libsvm's signs."""
    from sklearn.cluster import KMeans
    from sklearn.svm import SVC
    X, y = small_frame()
    X = X[["income", "tenure"]] / 1000
    doc = export(fit_quiet(KMeans(3, n_init=2, random_state=0), X, y))
    assert_equal("kmeans task", (doc["task"], doc["classes"]), ("classification", [0, 1, 2]))
    svc = fit_quiet(SVC(probability=True, random_state=0), X, y)
    step = export(svc)["steps"][-1]
    assert_equal("binary SVC intercept is -rho", step["intercept"], [-svc.intercept_[0]])
    predict, proba = sklearn_reference.evaluate(export(svc), {c: X[c].tolist() for c in X})
    assert_close("SVC(probability=True) predict", predict, svc.predict(X).astype(float))


def test_transformer_and_unfitted(_env):
    """A pipeline that ends in a featurizer is a transformer (every step a featurizer, no
    classes); an unfitted one is refused."""
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    X, y = small_frame()
    doc = export(fit_quiet(make_pipeline(StandardScaler(), StandardScaler()), X[["income"]], y))
    assert_equal("transformer document", (doc["task"], "classes" in doc, [s["type"] for s in doc["steps"]]),
                 ("transformer", False, ["StandardScaler", "StandardScaler"]))
    expect_refusal(make_pipeline(StandardScaler(), Ridge()), "not fitted")
    # ... with an error that is scikit-learn's NotFittedError too, for code that catches that.
    from sklearn.exceptions import NotFittedError
    try:
        export(make_pipeline(StandardScaler(), Ridge()))
    except NotFittedError as e:
        if not isinstance(e, ExportError):
            raise Failure(f"the NotFittedError {e!r} is not an ExportError")
    else:
        raise Failure("export() of an unfitted pipeline did not refuse")


# ---- inputs, names, encoding ------------------------------------------------------------------

def test_names_from_numpy(_env):
    from sklearn.linear_model import Ridge
    X, y = small_frame()
    A = X[["income", "tenure"]].to_numpy()
    r = fit_quiet(Ridge(), A, y)
    assert_equal("default names", [i["name"] for i in export(r)["inputs"]], ["x0", "x1"])
    doc = export(r, feature_names=["income", "tenure"])
    assert_equal("given names", [i["name"] for i in doc["inputs"]], ["income", "tenure"])
    expect_refusal(r, "3 feature_names", feature_names=["a", "b", "c"])
    named = fit_quiet(Ridge(), X[["income", "tenure"]], y)
    expect_refusal(named, "differ", feature_names=["tenure", "income"])
    expect_refusal(r, "duplicate", feature_names=["a", "a"])


def test_numeric_columns_with_numeric_categories_stay_numeric(_env):
    doc = export(sklearn_cases.cases()["one_hot_drop_first_numeric_categories"].estimator)
    types = {i["name"]: i["type"] for i in doc["inputs"]}
    assert_equal("types", types, {"age": "numeric", "visits": "numeric", "score": "numeric",
                                  "tenure": "numeric", "city": "text"})
    ct = doc["steps"][0]
    enc = ct["transformers"][1]["steps"][0]
    assert_equal("visits categories", enc["categories"], [[0, 1, 2, 3, 4, 5, 6]])
    assert_equal("visits drop_idx", enc["drop_idx"], [0])
    assert_equal("remainder", ct["remainder"], {"columns": [3], "steps": []})


def test_column_selections_resolved(_env):
    doc = export(sklearn_cases.cases()["column_selection_by_index_and_mask"].estimator)
    ct = doc["steps"][0]
    assert_equal("columns", [p["columns"] for p in ct["transformers"]], [[1, 3], [2], [5]])
    assert_equal("remainder columns", ct["remainder"]["columns"], [4])
    assert_equal("remainder steps", [s["type"] for s in ct["remainder"]["steps"]],
                 ["RobustScaler"])


def test_nan_is_a_string(_env):
    doc = export(sklearn_cases.cases()["ordinal_encoder_logistic"].estimator)
    text = json.dumps(doc, allow_nan=False)  # would raise on a float NaN
    enc = doc["steps"][0]["transformers"][1]["steps"][0]
    assert_equal("unknown_value", enc["unknown_value"], "NaN")
    if '"NaN"' not in text:
        raise Failure("no NaN string in the document")


# ---- the operator registry (python/pg_predict/operators.py) -----------------------------------

README = os.path.join(PYTHON_DIR, "..", "docs", "operators.md")  # the page with the table
CLIENT_README = os.path.join(PYTHON_DIR, "README.md")  # the overview and the refusals
# The blocks each page generates from the registry (operators.BLOCKS).
GENERATED_PAGES = ((README, "docs/operators.md", ["operators"]),
                   (CLIENT_README, "python/README.md", ["overview", "refused"]))


def _classes_in(est, out):
    """The class names of an estimator and of everything it is composed of."""
    out.add(type(est).__name__)
    if hasattr(est, "best_estimator_"):  # GridSearchCV, RandomizedSearchCV
        _classes_in(est.best_estimator_, out)
    for attr in ("steps", "transformers_", "transformer_list"):
        for part in getattr(est, attr, None) or []:
            sub = part[1]
            if not isinstance(sub, str):  # 'drop' / 'passthrough'
                _classes_in(sub, out)
    return out


def test_operator_registry_matches_exporter(_env):
    from pg_predict import operators
    known = pg_predict.supported()
    exported = set(known["composition"]) | set(known["featurizers"]) | set(known["models"])
    assert_equal("classes in operators.py but not exportable",
                 sorted(set(operators.BY_NAME) - exported), [])
    assert_equal("exportable classes missing from operators.py",
                 sorted(exported - set(operators.BY_NAME)), [])


def test_readme_operator_table_is_current(_env):
    """docs/operators.md's table, python/README.md's overview and refusals: as generated."""
    from pg_predict import operators
    for path, name, blocks in GENERATED_PAGES:
        assert_equal(f"{name}: generated blocks", operators.generated_blocks(path), blocks)
        if not operators.readme_is_current(path):
            raise Failure(f"{name}'s generated blocks ({', '.join(blocks)}) differ from "
                          "python/pg_predict/operators.py: "
                          "run PYTHONPATH=python /usr/bin/python3 -m pg_predict operators "
                          f"--readme {name}")


def test_operator_families(_env):
    """Every registered class is in one family of the overview, which names it once."""
    import re
    from pg_predict import operators
    used = {op.family for op in operators.OPERATORS}
    assert_equal("families of no FAMILIES entry", sorted(used - set(operators.FAMILIES)), [])
    assert_equal("FAMILIES without an operator", [f for f in operators.FAMILIES if f not in used], [])
    rows = operators.overview_markdown().splitlines()[2:]
    assert_equal("overview rows", [r.split(" | ")[0].lstrip("| ") for r in rows],
                 list(operators.FAMILIES))
    named = []
    for row in rows:
        # `XClassifier`/`Regressor` names both classes
        for name, pair in re.findall(r"`(\w+)`(/`Regressor`)?", row):
            named += [name, name[:-len("Classifier")] + "Regressor"] if pair else [name]
    assert_equal("classes the overview names twice",
                 sorted({n for n in named if named.count(n) > 1}), [])
    assert_equal("overview vs registry", sorted(named), sorted(operators.BY_NAME))


def test_refused_examples_are_refused(_env):
    """python/README.md's examples of unsupported classes: real scikit-learn classes, none in the
    registry, each refused once fitted with the exporter's message for a class it has none for."""
    from sklearn.utils import all_estimators
    from pg_predict import operators
    classes = dict(all_estimators())
    X, y = small_frame()
    X = X[sklearn_cases.NAN_FREE].iloc[:60]
    y = y[:60]
    for name in operators.UNSUPPORTED_EXAMPLES:
        if name in operators.BY_NAME:
            raise Failure(f"{name} is registered, yet python/README.md gives it as refused")
        if name not in classes:
            raise Failure(f"{name} is no scikit-learn estimator")
        expect_refusal(fit_quiet(classes[name](), X, y), f"cannot export {name}",
                       f"the sklearn format has no {name}")


def test_every_operator_has_a_conformance_case(_env):
    from pg_predict import operators
    seen = set()
    for case in sklearn_cases.cases().values():
        _classes_in(case.estimator, seen)
    # test_multioutput.py's multi-output estimators (predict_outputs(), not predict())
    import multioutput_cases
    for est, _, _ in [*multioutput_cases.cases().values(), *multioutput_cases.classifier_cases().values()]:
        _classes_in(est, seen)
    # test_text.py's text pipelines
    import text_cases
    for case in text_cases.cases().values():
        _classes_in(case.estimator, seen)
    # Classes no pipeline can hold (fitted on y alone): their cases are elsewhere.
    seen |= {"LabelEncoder"}  # test_transform.py: transform[label_encoder_*]
    assert_equal("registered classes no conformance case uses",
                 sorted(set(operators.BY_NAME) - seen), [])


def test_families_have_one_name(_env):
    """Each scikit-learn family is one name on both sides: src/importers/sklearn/<family>.cpp
    and python/pg_predict/<family>.py (the C++ side's parts of a family excepted)."""
    cpp_dir = os.path.join(PYTHON_DIR, "..", "src", "importers", "sklearn")
    parts = {"document", "estimator_registry", "splines", "xgboost_estimators"}  # not families
    cpp = {f[:-4] for f in os.listdir(cpp_dir) if f.endswith(".cpp")} - parts
    py = {f[:-3] for f in os.listdir(os.path.join(PYTHON_DIR, "pg_predict")) if f.endswith(".py")}
    assert_equal("C++ families without a Python module of the same name", sorted(cpp - py), [])


def test_document_header(_env):
    import sklearn
    doc = export(sklearn_cases.cases()["ct_logistic_binary"].estimator)
    assert_equal("header", {k: doc[k] for k in ("format", "version", "sklearn_version")},
                 {"format": "sklearn", "version": 1, "sklearn_version": sklearn.__version__})
    assert_equal("step types", [s["type"] for s in doc["steps"]],
                 ["ColumnTransformer", "LogisticRegression"])
    lr = doc["steps"][1]
    assert_equal("logistic", (lr["multi_class"], lr["loss"]), ("ovr", "log"))


def test_logistic_multi_class_resolved(_env):
    c = sklearn_cases.cases()
    assert_equal("multinomial", export(c["ct_logistic_multinomial"].estimator)["steps"][-1]
                 ["multi_class"], "multinomial")
    assert_equal("binary multinomial", export(c["ct_logistic_binary_multinomial"].estimator)
                 ["steps"][-1]["multi_class"], "multinomial")
    assert_equal("ovr", export(c["ct_logistic_ovr"].estimator)["steps"][-1]["multi_class"], "ovr")
    assert_equal("labels", export(c["ct_logistic_binary_multinomial"].estimator)["classes"],
                 [-1, 1])


# ---- deploy and the command line --------------------------------------------------------------

class FakeConnection:
    def __init__(self):
        self.calls = []

    def execute(self, sql, params=None):
        self.calls.append((sql, params))


def test_deploy_calls_create_model(_env):
    est = sklearn_cases.cases()["ct_random_forest"].estimator
    conn = FakeConnection()
    doc = pg_predict.deploy(conn, "churn", est, replace=True, strategy="native")
    assert_equal("calls", len(conn.calls), 1)
    sql, params = conn.calls[0]
    if "create_model(%s, %s::jsonb, %s, %s::jsonb)" not in sql:
        raise Failure(f"unexpected SQL {sql!r}")
    assert_equal("name", params[0], "churn")
    assert_equal("document", json.loads(params[1]), round_trip(export(est)))
    assert_equal("format", params[2], "sklearn")
    assert_equal("options", json.loads(params[3]), {"replace": True, "strategy": "native"})
    assert_equal("returned document", round_trip(doc), round_trip(export(est)))
    conn = FakeConnection()
    pg_predict.deploy(conn, "plain", est)
    assert_equal("default options", json.loads(conn.calls[0][1][3]), {})


def test_deploy_artifacts_with_their_sql_type(_env):
    """bytes go as bytea, str as text, an ONNX ModelProto as bytea 'onnx'; format says which."""
    import onnx
    cases = [
        (b"\x08\x07", {}, "bytea", "auto"),
        (b"\x08\x07", {"format": "onnx"}, "bytea", "onnx"),
        ("tree\nversion=v4\n", {}, "text", "auto"),
        ("tree\nversion=v4\n", {"format": "lightgbm"}, "text", "lightgbm"),
        (onnx.ModelProto(ir_version=7), {}, "bytea", "onnx"),
    ]
    for artifact, kwargs, sql_type, fmt in cases:
        conn = FakeConnection()
        sent = pg_predict.deploy(conn, "m", artifact, options={"features": ["a"]}, **kwargs)
        sql, params = conn.calls[0]
        if f"create_model(%s, %s::{sql_type}, %s, %s::jsonb)" not in sql:
            raise Failure(f"{artifact!r}: unexpected SQL {sql!r}")
        assert_equal(f"{artifact!r}: format", params[2], fmt)
        assert_equal(f"{artifact!r}: options", json.loads(params[3]), {"features": ["a"]})
        want = artifact.SerializeToString() if isinstance(artifact, onnx.ModelProto) else artifact
        assert_equal(f"{artifact!r}: value sent", params[1], want)
        assert_equal(f"{artifact!r}: returned", sent, want)
    try:
        pg_predict.deploy(FakeConnection(), "m", sklearn_cases.cases()["ct_random_forest"].estimator,
                          format="onnx")
    except ValueError:
        pass
    else:
        raise Failure("a format for a scikit-learn estimator was accepted")


def test_cli_export(_env):
    import joblib
    case = sklearn_cases.cases()["gradient_boosting_binary"]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.joblib")
        joblib.dump(case.estimator, path)
        env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
        p = subprocess.run([sys.executable, "-m", "pg_predict", "export", path],
                           capture_output=True, text=True, env=env, timeout=120)
        if p.returncode != 0:
            raise Failure(f"export exited with {p.returncode}: {p.stderr}")
        assert_equal("CLI document", json.loads(p.stdout), round_trip(export(case.estimator)))
        from sklearn.semi_supervised import LabelSpreading
        X, y = small_frame()
        joblib.dump(fit_quiet(LabelSpreading(), X[["income"]], y), path)
        p = subprocess.run([sys.executable, "-m", "pg_predict", "export", path],
                           capture_output=True, text=True, env=env, timeout=120)
        if p.returncode != 2 or "cannot export LabelSpreading" not in p.stderr:
            raise Failure(f"refusal: exit {p.returncode}, stderr {p.stderr!r}")


def test_refuse_hist_gradient_boosting_loss(_env):
    from sklearn._loss.loss import HalfGammaLoss
    from sklearn.ensemble import HistGradientBoostingRegressor
    X, y = small_frame()
    X = X[["age", "visits", "tenure"]]
    est = fit_quiet(HistGradientBoostingRegressor(max_iter=3), X, y.astype(float))
    est._loss = HalfGammaLoss()  # scikit-learn 1.2 has no gamma loss here yet; a later one does
    expect_refusal(est, "HistGradientBoostingRegressor", "loss")


def test_refuse_isolation_forest_offset(_env):
    from sklearn.ensemble import IsolationForest
    X, _ = small_frame()
    est = fit_quiet(IsolationForest(n_estimators=3, random_state=0), X[["income", "tenure"]], None)
    est.offset_ = 0.25  # set by hand: every score is below it
    expect_refusal(est, "IsolationForest", "offset_")


def test_isolation_forest_feature_subsets_remapped(_env):
    """With max_features < 1 each tree reads estimators_features_: its indices are remapped."""
    from sklearn.ensemble import IsolationForest
    X, _ = small_frame()
    cols = ["income", "visits", "tenure", "rate"]
    est = fit_quiet(IsolationForest(n_estimators=4, max_features=0.5, random_state=0), X[cols],
                    None)
    doc = export(est)
    assert_equal("classes", doc["classes"], [-1, 1])
    for tree, est_tree, features in zip(doc["steps"][-1]["trees"], est.estimators_,
                                        est.estimators_features_):
        want = [int(features[f]) if f >= 0 else int(f) for f in est_tree.tree_.feature]
        assert_equal("remapped features", tree["feature"], want)


for _fn in [test_refuse_hist_gradient_boosting_loss,
            test_refuse_isolation_forest_offset, test_isolation_forest_feature_subsets_remapped,
            test_every_case_is_checked,
            test_refuse_missing_text_category, test_refuse_function_transformer_not_ufunc,
            test_labels_of_every_type, test_refuse_mixed_labels, test_refuse_imputer_missing_values,
            test_refuse_imputer_dropped_column, test_refuse_multi_output,
            test_refuse_unknown_estimators, test_refuse_target_encoders,
            test_refuse_radius_outlier_label_not_a_class, test_refuse_other_parameters,
            test_transformer_and_unfitted, test_refuse_kernel_svm_and_mlp_parameters,
            test_kmeans_and_svm_documents, test_names_from_numpy,
            test_numeric_columns_with_numeric_categories_stay_numeric,
            test_column_selections_resolved, test_nan_is_a_string, test_document_header,
            test_logistic_multi_class_resolved, test_deploy_calls_create_model,
            test_deploy_artifacts_with_their_sql_type, test_cli_export]:
    add_test(_fn.__name__[len("test_"):], _fn)

for _fn in [test_operator_registry_matches_exporter, test_readme_operator_table_is_current,
            test_operator_families, test_refused_examples_are_refused,
            test_every_operator_has_a_conformance_case, test_families_have_one_name]:
    add_test(_fn.__name__[len("test_"):], _fn)

def test_refuse_what_scikit_learn_cannot_predict_alike(_env):
    """The audit's refusals: a random init, a break_ties scikit-learn's predict refuses, class
    labels predict's float8 cannot hold."""
    from sklearn.dummy import DummyClassifier
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import SVC
    X, y = small_frame()
    X = X[["income", "tenure"]] / 1000
    gb = fit_quiet(GradientBoostingClassifier(init=DummyClassifier(strategy="stratified"),
                                              n_estimators=3), X, y)
    expect_refusal(gb, "GradientBoostingClassifier(init=", "stratified", "random")
    export(fit_quiet(GradientBoostingClassifier(init=DummyClassifier(strategy="prior"),
                                                n_estimators=3), X, y))
    expect_refusal(fit_quiet(SVC(break_ties=True, decision_function_shape="ovo"), X, y),
                   "SVC(break_ties=True)", "decision_function_shape='ovo'")
    big = np.array([2 ** 60 + 1, 2 ** 60 + 3])[y]
    expect_refusal(fit_quiet(LogisticRegression(), X, big), "LogisticRegression",
                   str(2 ** 60 + 1), "float8")


def test_one_class_documents(_env):
    """A classifier fitted on one class exports with that one label."""
    c = sklearn_cases.cases()
    for name in ("one_class_decision_tree", "one_class_gaussian_nb", "one_class_kmeans"):
        doc = export(c[name].estimator)
        assert_equal(f"{name}: classes", doc["classes"], [0 if "kmeans" in name else 3])


# Issue 10: transformer_weights, one-class classifiers, modified_huber, the audit's refusals.
for _fn in [test_transformer_weights_are_written, test_refuse_what_scikit_learn_cannot_predict_alike,
            test_one_class_documents]:
    add_test(_fn.__name__[len("test_"):], _fn)


def test_search_exports_best_estimator(_env):
    """A search's document is its best_estimator_'s, wherever the search sits."""
    c = sklearn_cases.cases()
    grid = c["grid_search_pipeline"].estimator
    assert_equal("GridSearchCV over a Pipeline", export(grid), export(grid.best_estimator_))
    outer = c["randomized_search_in_pipeline"].estimator
    best = outer[-1].best_estimator_
    assert_equal("RandomizedSearchCV as the model", export(outer)["steps"][-1]["coef"],
                 export(best, feature_names=[f"x{i}" for i in range(best.n_features_in_)])
                 ["steps"][-1]["coef"])


def test_refuse_search_without_refit_and_multi_target(_env):
    """refit=False is refused; models of two targets (RidgeCV, PLSRegression) are exported."""
    from sklearn.cross_decomposition import PLSRegression
    from sklearn.linear_model import Ridge, RidgeCV
    from sklearn.model_selection import GridSearchCV, RandomizedSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    X, y = small_frame()
    X = X[["income", "tenure", "rate"]]
    for search in (GridSearchCV(Ridge(), {"alpha": [0.1, 1.0]}, refit=False, cv=3),
                   RandomizedSearchCV(Ridge(), {"alpha": [0.1, 1.0]}, n_iter=2, refit=False,
                                      cv=3)):
        fit_quiet(search, X, y)
        name = type(search).__name__
        expect_refusal(search, f"{name}(refit=False)", "best_estimator_")
        expect_refusal(fit_quiet(make_pipeline(StandardScaler(), search), X, y),
                       f"{name}(refit=False)", "best_estimator_", "'" + name.lower() + "'")
    Y = np.column_stack([y, 1 - y])
    assert_equal("PLSRegression of two targets: outputs", export(fit_quiet(PLSRegression(2), X, Y)).get("outputs"), 2)
    assert_equal("RidgeCV of two targets: outputs", export(fit_quiet(RidgeCV(), X, Y)).get("outputs"), 2)


def test_refuse_calibrated_non_linear_and_pipeline(_env):
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC
    X, y = small_frame()
    X = X[["income", "tenure", "rate"]]
    for base, kind in ((RandomForestClassifier(n_estimators=3, random_state=0),
                        "RandomForestClassifier"),
                       (make_pipeline(StandardScaler(), LinearSVC()), "Pipeline")):
        cal = fit_quiet(CalibratedClassifierCV(base, cv=3), X, y)
        expect_refusal(cal, "CalibratedClassifierCV(estimator=", f"a calibrated {kind}",
                       "linear classifiers")


for _fn in [test_search_exports_best_estimator,
            test_refuse_search_without_refit_and_multi_target,
            test_refuse_calibrated_non_linear_and_pipeline]:
    add_test(_fn.__name__[len("test_"):], _fn)

def test_refuse_neighbors_parameters(_env):
    """Nearest neighbours: metrics other than minkowski (any p >= 1, chebyshev as p = inf),
    seuclidean and mahalanobis, callable weights, feature weights, a classifier of several
    targets, too many neighbours or training values are refused by name."""
    from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
    from pg_predict import neighbors
    X, y = small_frame()
    X = X[["income", "tenure", "rate"]]
    broken = fit_quiet(KNeighborsClassifier(p=3), X, y)
    broken.effective_metric_params_["p"] = -1  # no p scikit-learn fits with
    expect_refusal(broken, "KNeighborsClassifier(p=3)", "minkowski with p=-1", "not supported")
    expect_refusal(fit_quiet(KNeighborsClassifier(p=0.5), X, y), "KNeighborsClassifier(p=0.5)",
                   "minkowski with p=0.5", "predict fails below 1")
    expect_refusal(fit_quiet(KNeighborsRegressor(metric="cosine"), X, y),
                   "KNeighborsRegressor(metric='cosine')", "not supported")
    expect_refusal(fit_quiet(KNeighborsClassifier(metric="precomputed"), X @ X.T, y),
                   "KNeighborsClassifier(metric='precomputed')", "not supported",
                   feature_names=[f"d{i}" for i in range(len(X))])
    expect_refusal(fit_quiet(KNeighborsClassifier(weights=lambda d: 1 / (1 + d)), X, y),
                   "KNeighborsClassifier(weights=", "'uniform' and 'distance'")
    expect_refusal(fit_quiet(KNeighborsRegressor(metric_params={"w": np.array([1.0, 2.0, 1.0])}),
                             X, y), "KNeighborsRegressor(metric_params=", "['w']")
    expect_refusal(fit_quiet(KNeighborsClassifier(n_neighbors=5), X.iloc[:4], y[:4]),
                   "KNeighborsClassifier(n_neighbors=5)", "more neighbours than the 4")
    expect_refusal(fit_quiet(KNeighborsClassifier(), X, np.column_stack([y, y])),
                   "KNeighborsClassifier", "several targets")
    # seuclidean / mahalanobis need their V / VI (scipy would derive them from each query)
    expect_refusal(fit_quiet(KNeighborsClassifier(metric="seuclidean", algorithm="brute"), X, y),
                   "KNeighborsClassifier(metric_params=", "seuclidean needs V")
    expect_refusal(fit_quiet(KNeighborsClassifier(metric="mahalanobis", algorithm="brute",
                                                  metric_params={"VI": -np.eye(3)}), X, y),
                   "KNeighborsClassifier(metric_params=", "not positive definite")
    # a multi-output wrapper cannot combine a member that exports as a scaling step and a model
    from sklearn.multioutput import MultiOutputClassifier, MultiOutputRegressor
    expect_refusal(fit_quiet(MultiOutputRegressor(KNeighborsRegressor(metric="mahalanobis",
                                                                      metric_params={"VI": np.eye(3)})),
                             X, np.column_stack([X.iloc[:, 0], X.iloc[:, 1]])),
                   "MultiOutputRegressor", "its member KNeighborsRegressor exports as several steps")
    expect_refusal(fit_quiet(MultiOutputClassifier(KNeighborsClassifier(metric="seuclidean",
                                                                        metric_params={"V": np.ones(3)})),
                             X, np.column_stack([y, y])),
                   "MultiOutputClassifier", "its member KNeighborsClassifier exports as several steps")
    # equivalent names of the two metrics are accepted
    for kw, p in (({"metric": "l1"}, 1), ({"metric": "cityblock"}, 1), ({"metric": "l2"}, 2),
                  ({"metric": "minkowski", "p": 1}, 1), ({}, 2), ({"p": 3}, 3.0),
                  ({"p": 1.5}, 1.5), ({"p": np.inf}, "Infinity"),
                  ({"metric": "chebyshev"}, "Infinity"), ({"metric": "infinity"}, "Infinity")):
        assert_equal(f"p of {kw}", export(fit_quiet(KNeighborsClassifier(**kw), X, y))
                     ["steps"][-1]["p"], p)
    # the size limit: more training values than a program may keep
    limit = neighbors.MAX_VALUES
    try:
        neighbors.MAX_VALUES = 3 * len(X) - 1
        expect_refusal(fit_quiet(KNeighborsClassifier(), X, y), "KNeighborsClassifier",
                       f"{len(X)} training rows of 3 values", "more than the")
    finally:
        neighbors.MAX_VALUES = limit


add_test("refuse_neighbors_parameters", test_refuse_neighbors_parameters)


def test_refuse_power_transformer_method(_env):
    """A method the exporter does not know (set after fitting) is refused, naming the parameter."""
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import PowerTransformer
    X, y = small_frame()
    pipe = fit_quiet(make_pipeline(PowerTransformer(), Ridge()), X[["income", "rate"]], y)
    pipe[0].method = "log"
    expect_refusal(pipe, "PowerTransformer", "method")


add_test("refuse_power_transformer_method", test_refuse_power_transformer_method)


def test_refuse_quantile_and_kernel_pca_parameters(_env):
    """QuantileTransformer: an unknown output_distribution, one quantile; KernelPCA: a kernel
    other than linear / rbf / poly / sigmoid. Each names the estimator and the parameter."""
    from sklearn.decomposition import KernelPCA
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import QuantileTransformer
    X, y = small_frame()
    X = X[["income", "rate"]]
    pipe = fit_quiet(make_pipeline(QuantileTransformer(n_quantiles=20), Ridge()), X, y)
    pipe[0].output_distribution = "lognormal"
    expect_refusal(pipe, "QuantileTransformer", "output_distribution")
    pipe = fit_quiet(make_pipeline(QuantileTransformer(n_quantiles=1), Ridge()), X, y)
    expect_refusal(pipe, "QuantileTransformer", "n_quantiles")
    def dot(a, b):  # a callable kernel: refused (cosine and precomputed are exported)
        return a @ b.T
    pipe = fit_quiet(make_pipeline(KernelPCA(n_components=2, kernel=dot), Ridge()), X, y)
    expect_refusal(pipe, "KernelPCA", "kernel", "dot")


add_test("refuse_quantile_and_kernel_pca_parameters", test_refuse_quantile_and_kernel_pca_parameters)



# ---- ensembles -----------------------------------------------------------------------------

def test_refuse_ensemble_parameters(_env):
    from sklearn.discriminant_analysis import QuadraticDiscriminantAnalysis
    from sklearn.ensemble import (BaggingClassifier, StackingClassifier, VotingClassifier,
                                  VotingRegressor)
    from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.tree import DecisionTreeClassifier
    X, y = small_frame()
    X = X[sklearn_cases.NAN_FREE]
    # A member the format has no class for: named with the ensemble and the member's name.
    voting = fit_quiet(VotingClassifier([("lr", LogisticRegression()),
                                         ("qda", QuadraticDiscriminantAnalysis())]), X, y)
    expect_refusal(voting, "VotingClassifier", "'qda'", "QuadraticDiscriminantAnalysis")
    bagging = fit_quiet(BaggingClassifier(QuadraticDiscriminantAnalysis(), n_estimators=2), X, y)
    expect_refusal(bagging, "BaggingClassifier", "QuadraticDiscriminantAnalysis")
    # Weights that sum to 0: scikit-learn's average divides by 0.
    zero = fit_quiet(VotingRegressor([("a", Ridge()), ("b", LinearRegression())],
                                     weights=[1, -1]), X, y.astype(float))
    expect_refusal(zero, "VotingRegressor(weights=[1, -1])", "sum to 0")
    # Members read numbers: text is encoded before the ensemble.
    from sklearn.preprocessing import OneHotEncoder
    df, targets = sklearn_cases.frame()
    texty = fit_quiet(VotingClassifier([("lr", make_pipeline(OneHotEncoder(handle_unknown="ignore"),
                                                             LogisticRegression()))]),
                      df[["city", "plan"]].iloc[:200], targets["binary"][:200])
    expect_refusal(texty, "VotingClassifier(estimators=", "'lr'", "text column 'city'")
    # The final estimator of a stacking ensemble must be one model.
    stack = fit_quiet(StackingClassifier(
        [("dt", DecisionTreeClassifier(max_depth=2))],
        final_estimator=make_pipeline(StandardScaler(), LogisticRegression())), X, y)
    expect_refusal(stack, "StackingClassifier(final_estimator=", "Pipeline")


def test_ensemble_documents(_env):
    """What the document carries: 'drop' members and their weights left out, the members'
    encoded classes, bagging's column subsets, stacking's fitted stack methods."""
    from sklearn.ensemble import BaggingClassifier, StackingClassifier, VotingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC
    from sklearn.tree import DecisionTreeClassifier
    df, targets = sklearn_cases.frame()
    X = df[sklearn_cases.NAN_FREE].iloc[:200]
    y = np.array(["no", "yes"])[targets["binary"][:200]]
    voting = fit_quiet(VotingClassifier([("a", LogisticRegression()), ("gone", "drop"),
                                         ("b", DecisionTreeClassifier(max_depth=2))],
                                        voting="soft", weights=[3, 7, 1]), X, y)
    step = round_trip(export(voting))["steps"][-1]
    assert_equal("voting weights", step["weights"], [3.0, 1.0])
    assert_equal("voting members", [m["steps"][-1]["type"] for m in step["estimators"]],
                 ["LogisticRegression", "DecisionTreeClassifier"])
    assert_equal("member classes", step["estimators"][0]["classes"], [0, 1])
    bagging = fit_quiet(BaggingClassifier(n_estimators=3, max_features=2, random_state=0), X, y)
    step = round_trip(export(bagging))["steps"][-1]
    assert_equal("bagging features", step["features"],
                 [list(map(int, f)) for f in bagging.estimators_features_])
    assert_equal("bagging proba", step["proba"], True)
    stack = fit_quiet(StackingClassifier([("svc", LinearSVC()), ("dt", DecisionTreeClassifier())],
                                         final_estimator=LogisticRegression()), X, y)
    step = round_trip(export(stack))["steps"][-1]
    assert_equal("stack methods", step["stack_methods"], ["decision_function", "predict_proba"])
    assert_equal("final estimator", step["final_estimator"]["type"], "LogisticRegression")


for _fn in [test_refuse_ensemble_parameters, test_ensemble_documents]:
    add_test(_fn.__name__[len("test_"):], _fn)

if __name__ == "__main__":
    main(suite="export")
