"""Linear models: `export_<name>(est, n_features, ctx)` returns the model step."""

import numpy as np

from ._common import floats


def _coef_2d(est, n_features, ctx):
    coef = np.asarray(est.coef_, dtype=np.float64)
    if coef.ndim == 1:
        coef = coef[None, :]
    if coef.shape[1] != n_features:
        ctx.refuse(est, None, f"coef_ has {coef.shape[1]} columns, the vector it reads has "
                   f"{n_features}")
    intercept = np.broadcast_to(np.asarray(est.intercept_, dtype=np.float64),
                                (coef.shape[0],))
    return coef, intercept


def _classifier(est, type_name, loss, multi_class, n_features, ctx):
    coef, intercept = _coef_2d(est, n_features, ctx)
    n_classes = len(est.classes_)
    want = 1 if n_classes == 2 else n_classes
    if coef.shape[0] != want:
        ctx.refuse(est, None, f"coef_ has {coef.shape[0]} rows for {n_classes} classes")
    return {"type": type_name, "coef": floats(coef), "intercept": floats(intercept),
            "multi_class": multi_class, "loss": loss}


def export_logistic_regression(est, n_features, ctx):
    # scikit-learn 1.2's LogisticRegression.predict_proba: one-vs-rest (normalized sigmoids)
    # unless multinomial; a binary multinomial model is softmax([-d, d]).
    mc = est.multi_class
    if mc == "auto":
        mc = "ovr" if (len(est.classes_) <= 2 or est.solver == "liblinear") else "multinomial"
    elif mc == "warn":
        mc = "ovr"
    return _classifier(est, type(est).__name__, "log", mc, n_features, ctx)


def export_sgd_classifier(est, n_features, ctx):
    loss = est.loss
    if loss in ("log", "log_loss"):
        loss = "log"
    return _classifier(est, type(est).__name__, loss, "ovr", n_features, ctx)


def export_linear_svc(est, n_features, ctx):
    # crammer_singer predicts by the argmax of the decision function too.
    return _classifier(est, "LinearSVC", est.loss, "ovr", n_features, ctx)


def export_perceptron(est, n_features, ctx):
    return _classifier(est, "Perceptron", "perceptron", "ovr", n_features, ctx)


def export_ridge_classifier(est, n_features, ctx):
    return _classifier(est, type(est).__name__, "squared_error", "ovr", n_features, ctx)


def export_linear_regressor(est, n_features, ctx):
    coef, intercept = _coef_2d(est, n_features, ctx)
    if coef.shape[0] != 1:
        # Fitted on a 2-D y: one coef_ row per target, predict gives them all.
        return {"type": type(est).__name__, "coef": floats(coef), "intercept": floats(intercept),
                "n_outputs": int(coef.shape[0])}
    return {"type": type(est).__name__, "coef": floats(coef[0]),
            "intercept": floats(intercept[0])}


def export_glm(est, n_features, ctx):
    """Poisson / Gamma / TweedieRegressor: the inverse link of the linear predictor. Tweedie's
    link 'auto' is the identity for power <= 0 and log otherwise (scikit-learn 1.2)."""
    step = export_linear_regressor(est, n_features, ctx)
    link = getattr(est, "link", "log")
    if link == "auto":
        link = "identity" if est.power <= 0 else "log"
    if link not in ("log", "identity"):
        ctx.refuse(est, "link", "only the log and identity links are supported")
    step["link"] = link
    return step


def export_pls_regression(est, n_features, ctx):
    """predict = ((x - x_mean) / x_std) · coefᵀ + intercept (scikit-learn 1.2; 1.3 made the
    private _coef_ the public coef_ of the same [targets × features] shape); one value per
    target when fitted on a 2-D y (predict_outputs())."""
    coef = np.asarray(est._coef_ if hasattr(est, "_coef_") else est.coef_, dtype=np.float64)
    mean = getattr(est, "_x_mean", None)
    std = getattr(est, "_x_std", None)
    if mean is None or std is None:
        ctx.refuse(est, None, "it has no _x_mean / _x_std (a scikit-learn version whose "
                   "PLSRegression.predict this exporter does not know)")
    if coef.shape[1] != n_features:
        ctx.refuse(est, None, f"coef_ has {coef.shape[1]} columns, the vector it reads has "
                   f"{n_features}")
    intercept = np.ravel(est.intercept_)
    step = {"type": "PLSRegression", "x_mean": floats(mean), "x_std": floats(std)}
    if coef.shape[0] != 1:
        # Fitted on a 2-D y: one coef_ row per target, predict gives them all.
        return {**step, "coef": floats(coef), "intercept": floats(intercept),
                "n_outputs": int(coef.shape[0])}
    return {**step, "coef": floats(coef[0]), "intercept": floats(intercept[0])}


CLASSIFIERS = {
    "LogisticRegression": export_logistic_regression,
    "SGDClassifier": export_sgd_classifier,
    "LinearSVC": export_linear_svc,
    "Perceptron": export_perceptron,
    "RidgeClassifier": export_ridge_classifier,
    # the *CV classifiers are the plain model once fitted
    "LogisticRegressionCV": export_logistic_regression,
    "RidgeClassifierCV": export_ridge_classifier,
}

REGRESSORS = {name: export_linear_regressor for name in (
    "LinearRegression", "Ridge", "Lasso", "ElasticNet", "SGDRegressor", "LinearSVR",
    # the *CV regressors are the plain model once fitted
    "RidgeCV", "LassoCV", "ElasticNetCV", "Lars", "LarsCV", "LassoLars", "LassoLarsCV",
    "LassoLarsIC", "OrthogonalMatchingPursuit", "OrthogonalMatchingPursuitCV",
    # other linear predictors: X · coef_ + intercept_
    "HuberRegressor", "QuantileRegressor", "BayesianRidge", "ARDRegression",
    "TheilSenRegressor")}
REGRESSORS.update({"PoissonRegressor": export_glm, "GammaRegressor": export_glm,
                   "TweedieRegressor": export_glm, "PLSRegression": export_pls_regression})
