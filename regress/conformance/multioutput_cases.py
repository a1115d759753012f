"""Multi-output scikit-learn estimators fitted on seeded random data (sklearn_cases.frame()),
shared by test_multioutput.py (PostgreSQL against scikit-learn) and test_export.py (every
registered class has a conformance case): regressors on three targets, classifiers on three
targets of numeric labels. Each case: (estimator, columns, numeric: whether the array forms
apply)."""

import numpy as np

import sklearn_cases

NAN_FREE = sklearn_cases.NAN_FREE
NUMERIC = ["age", "income", "visits", "score", "tenure", "rate", "const"]
ALL = sklearn_cases.ALL


def targets():
    """Three positive targets of different scales (a PoissonRegressor fits each): the frame's
    regression target, its counts, and a mix of the counts and a column."""
    df, t = sklearn_cases.frame()
    return np.column_stack([t["regression"], t["count"], 2 * t["count"] + 10 * df["rate"].to_numpy()])


def label_targets():
    """Three binary targets with numeric labels: {0, 1}, {-1, 1}, {3, 7}."""
    df, t = sklearn_cases.frame()
    return np.column_stack([t["binary"], t["labels"], np.where(df["tenure"].to_numpy() > 36, 7, 3)])


def cases():
    from sklearn.cross_decomposition import PLSRegression
    from sklearn.ensemble import (ExtraTreesRegressor, GradientBoostingRegressor,
                                  RandomForestRegressor)
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import ElasticNet, Lasso, LinearRegression, PoissonRegressor, Ridge
    from sklearn.multioutput import MultiOutputRegressor, RegressorChain
    from sklearn.neighbors import KNeighborsRegressor
    from sklearn.neural_network import MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVR
    from sklearn.tree import DecisionTreeRegressor
    prep = sklearn_cases._prep
    imputed = lambda step: make_pipeline(SimpleImputer(strategy="median"), step)  # noqa: E731
    return {
        # (estimator, columns, numeric: whether the array forms apply)
        "linear_regression": (make_pipeline(prep(), LinearRegression()), ALL, False),
        "ridge": (Ridge(alpha=2.0), NAN_FREE, True),
        "lasso": (make_pipeline(prep(), Lasso(alpha=0.5)), ALL, False),
        "elastic_net": (make_pipeline(prep(), ElasticNet(alpha=0.2, l1_ratio=0.3)), ALL, False),
        "decision_tree": (DecisionTreeRegressor(max_depth=6, random_state=0), NAN_FREE, True),
        "random_forest": (RandomForestRegressor(n_estimators=12, max_depth=5, random_state=0), NAN_FREE, True),
        "extra_trees_imputed": (imputed(ExtraTreesRegressor(n_estimators=8, random_state=0)), NUMERIC, True),
        "knn_distance": (imputed(make_pipeline(StandardScaler(), KNeighborsRegressor(n_neighbors=4, weights="distance"))),
                         NUMERIC, True),
        "knn_uniform_manhattan": (make_pipeline(prep(), KNeighborsRegressor(n_neighbors=5, p=1)), ALL, False),
        "multi_output_gradient_boosting": (MultiOutputRegressor(GradientBoostingRegressor(
            n_estimators=15, max_depth=3, random_state=0)), NAN_FREE, True),
        "multi_output_forest_imputed": (imputed(MultiOutputRegressor(RandomForestRegressor(
            n_estimators=5, max_depth=4, random_state=0))), NUMERIC, True),
        "multi_output_ridge": (make_pipeline(prep(), MultiOutputRegressor(Ridge())), ALL, False),
        "multi_output_knn": (imputed(MultiOutputRegressor(KNeighborsRegressor(n_neighbors=3))), NUMERIC, True),
        "multi_output_svr": (make_pipeline(prep(), MultiOutputRegressor(SVR(C=50.0))), ALL, False),
        "multi_output_poisson": (make_pipeline(prep(), MultiOutputRegressor(PoissonRegressor(alpha=0.1, max_iter=300))),
                                 ALL, False),
        "chain_ridge": (make_pipeline(prep(), RegressorChain(Ridge(), order=[2, 0, 1])), ALL, False),
        "chain_ridge_random_order": (RegressorChain(Ridge(alpha=0.5), order="random", random_state=3), NAN_FREE, True),
        "chain_knn": (imputed(RegressorChain(KNeighborsRegressor(n_neighbors=4, weights="distance"))), NUMERIC, True),
        "chain_mlp": (make_pipeline(prep(), RegressorChain(MLPRegressor(hidden_layer_sizes=(8,), max_iter=300,
                                                                        random_state=0))), ALL, False),
        # PLSRegression on a 2-D y: one coef_ row per target (const has x_std 0, taken as 1)
        "pls_two_components": (make_pipeline(prep(), PLSRegression(n_components=2)), ALL, False),
        "pls_bare_unscaled": (PLSRegression(n_components=3, scale=False), NAN_FREE, True),
        # chains of tree ensembles: each member an op model step whose prediction the later
        # members read (as float32, as scikit-learn's trees read them)
        "chain_decision_tree": (RegressorChain(DecisionTreeRegressor(max_depth=6, random_state=0), order=[2, 0, 1]),
                                NAN_FREE, True),
        "chain_forest_imputed": (imputed(RegressorChain(RandomForestRegressor(
            n_estimators=6, max_depth=5, random_state=0))), NUMERIC, True),
        "chain_gradient_boosting": (make_pipeline(prep(), RegressorChain(GradientBoostingRegressor(
            n_estimators=12, max_depth=3, random_state=0), order="random", random_state=2)), ALL, False),
    }


def classifier_cases():
    from sklearn.linear_model import LogisticRegression, RidgeClassifier, SGDClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.multioutput import ClassifierChain, MultiOutputClassifier
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC
    from sklearn.ensemble import ExtraTreesClassifier, GradientBoostingClassifier, RandomForestClassifier
    from sklearn.tree import DecisionTreeClassifier
    prep = sklearn_cases._prep
    imputed = lambda step: make_pipeline(SimpleImputer(strategy="median"), step)  # noqa: E731
    return {
        "multi_output_logistic": (make_pipeline(prep(), MultiOutputClassifier(LogisticRegression(max_iter=500))),
                                  ALL, False),
        "multi_output_linear_svc": (make_pipeline(StandardScaler(), MultiOutputClassifier(LinearSVC(max_iter=5000))),
                                    NAN_FREE, True),
        "multi_output_knn": (imputed(make_pipeline(StandardScaler(), MultiOutputClassifier(
            KNeighborsClassifier(n_neighbors=5)))), NUMERIC, True),
        "multi_output_sgd_log": (make_pipeline(prep(), MultiOutputClassifier(SGDClassifier(loss="log_loss",
                                                                                           random_state=0))),
                                 ALL, False),
        "chain_logistic_random_order": (make_pipeline(prep(), ClassifierChain(LogisticRegression(max_iter=500),
                                                                              order="random", random_state=1)),
                                        ALL, False),
        "chain_ridge_classifier": (make_pipeline(prep(), ClassifierChain(RidgeClassifier(), order=[2, 0, 1])),
                                   ALL, False),
        "chain_knn_distance": (imputed(make_pipeline(StandardScaler(), ClassifierChain(
            KNeighborsClassifier(n_neighbors=4, weights="distance")))), NUMERIC, True),
        # trees fitted on the 2-D y itself: binary outputs
        "decision_tree": (DecisionTreeClassifier(max_depth=5, random_state=0), NAN_FREE, True),
        "random_forest": (RandomForestClassifier(n_estimators=7, random_state=0), NAN_FREE, True),
        "extra_trees_imputed": (imputed(ExtraTreesClassifier(n_estimators=5, random_state=0)), NUMERIC, True),
        # tree ensembles as members: model steps, d = P(c1) - P(c0)
        "multi_output_random_forest": (MultiOutputClassifier(RandomForestClassifier(
            n_estimators=5, max_depth=4, random_state=0)), NAN_FREE, True),
        "chain_decision_tree": (ClassifierChain(DecisionTreeClassifier(max_depth=4, random_state=0), order=[2, 0, 1]),
                                NAN_FREE, True),
        "chain_gradient_boosting": (make_pipeline(prep(), ClassifierChain(GradientBoostingClassifier(
            n_estimators=10, max_depth=2, random_state=0))), ALL, False),
    }
