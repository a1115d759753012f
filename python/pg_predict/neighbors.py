"""Nearest neighbours (KNeighborsClassifier, KNeighborsRegressor, and the RadiusNeighbors ones
over every training row within `radius`): the fitted training rows
(`_fit_X`) and their targets (`_y`: class indices into classes_, or the regression values) go
into the document, and the program computes the distances to all of them (brute force).

Supported: the Minkowski metric with any p >= 1 (2 euclidean, scikit-learn's default,
1 manhattan, inf chebyshev; below 1 scikit-learn's predict fails), under any of the names
scikit-learn gives them; `seuclidean` (metric_params V) and
`mahalanobis` (VI or V), which are the euclidean distance after a linear map of the rows
(x / sqrt(V); x @ L where VI = L Lᵀ), exported as a step before the model with the training rows
mapped alike; uniform or distance weights.
`algorithm`, `leaf_size` and `n_jobs` only choose how scikit-learn searches and are not needed.
The training rows may hold at most MAX_VALUES numbers (rows × columns)."""

import math
import numbers

import numpy as np

from ._common import floats, ints, to_json_number

MAX_VALUES = 1 << 22  # as spec::kMaxNeighborsValues (include/pg_predict/spec/limits.hpp)
WEIGHTS = ("uniform", "distance")
METRIC_P = {"euclidean": 2, "l2": 2, "manhattan": 1, "l1": 1, "cityblock": 1,
            "chebyshev": math.inf, "infinity": math.inf}
SUPPORTED = "minkowski with any p >= 1, euclidean, manhattan, chebyshev, seuclidean, mahalanobis"


def _metric_p(est, ctx):
    """Minkowski's p (inf: chebyshev) and a whitening matrix or None, from the metric
    scikit-learn resolved at fit (effective_metric_)."""
    metric = est.effective_metric_
    params = {key: v for key, v in (est.effective_metric_params_ or {}).items()
              if not (key == "w" and v is None)}  # w=None: no feature weights
    if callable(metric):
        ctx.refuse(est, "metric", f"a callable metric is not supported (only {SUPPORTED})")
    p = params.pop("p", None)
    if metric in ("seuclidean", "mahalanobis"):
        return 2, _whitening(est, metric, params, ctx)
    if metric == "minkowski":
        if not (isinstance(p, numbers.Real) and p >= 1):
            ctx.refuse(est, "p", f"minkowski with p={p!r} is not supported (a number >= 1; "
                       "scikit-learn's predict fails below 1)")
        p = float(p)
    elif metric in METRIC_P:
        p = METRIC_P[metric]
    else:
        ctx.refuse(est, "metric", f"metric {metric!r} is not supported (only {SUPPORTED})")
    if params:
        ctx.refuse(est, "metric_params", f"{sorted(params)} are not supported")
    return p, None


def _whitening(est, metric, params, ctx):
    """The matrix W with distance(x, y) = ||x W - y W||: diag(1 / sqrt(V)) for seuclidean,
    the Cholesky factor L of VI (VI = L Lᵀ) for mahalanobis."""
    n = est.n_features_in_
    if metric == "seuclidean":
        V = params.pop("V", None)
        if V is None:  # scipy would derive it from each query's own rows
            ctx.refuse(est, "metric_params", "seuclidean needs V (without it the variances come "
                       "from each query's rows)")
        V = np.asarray(V, dtype=np.float64).ravel()
        if V.shape != (n,) or not (V > 0).all():
            ctx.refuse(est, "metric_params", f"V must hold {n} positive variances")
        W = np.diag(1.0 / np.sqrt(V))
    else:
        VI = params.pop("VI", None)
        if VI is None and "V" in params:
            VI = np.linalg.inv(np.asarray(params.pop("V"), dtype=np.float64))
        if VI is None:
            ctx.refuse(est, "metric_params", "mahalanobis needs VI (or V)")
        VI = np.asarray(VI, dtype=np.float64)
        if VI.shape != (n, n):
            ctx.refuse(est, "metric_params", f"VI must be {n} x {n}")
        try:  # the quadratic form only sees VI's symmetric part
            W = np.linalg.cholesky((VI + VI.T) / 2)
        except np.linalg.LinAlgError:
            ctx.refuse(est, "metric_params", "VI is not positive definite")
    if params:
        ctx.refuse(est, "metric_params", f"{sorted(params)} are not supported")
    return W


def _common(est, n_features, ctx):
    if callable(est.weights) or est.weights not in WEIGHTS:
        ctx.refuse(est, "weights", "only 'uniform' and 'distance' are supported")
    p, whitening = _metric_p(est, ctx)
    fit_x = est._fit_X
    if not isinstance(fit_x, np.ndarray):  # a sparse matrix (fitted on sparse input)
        ctx.refuse(est, None, "a model fitted on sparse input is not supported")
    fit_x = np.asarray(fit_x, dtype=np.float64)
    if fit_x.shape[1] != n_features:
        ctx.refuse(est, None, f"it was fitted on {fit_x.shape[1]} columns, the vector it reads "
                   f"has {n_features}")
    if fit_x.size > MAX_VALUES:
        ctx.refuse(est, None, f"{fit_x.shape[0]} training rows of {fit_x.shape[1]} values "
                   f"({fit_x.size}) are more than the {MAX_VALUES} a nearest-neighbours program "
                   "may keep")
    if np.asarray(est._y).ndim != 1 and type(est).__name__ != "KNeighborsRegressor":
        ctx.refuse(est, None, "a model fitted on several targets (2-D y) is not supported")
    step = {"type": type(est).__name__, "p": to_json_number(p), "weights": est.weights}
    if type(est).__name__.startswith("Radius"):
        step["radius"] = float(est.radius)
    else:
        if est.n_neighbors > fit_x.shape[0]:
            ctx.refuse(est, "n_neighbors", f"more neighbours than the {fit_x.shape[0]} training "
                       "rows (scikit-learn's predict fails)")
        step["n_neighbors"] = int(est.n_neighbors)
    if whitening is None:
        step["fit_X"] = floats(fit_x)
        return step, None
    # The rows, and the training rows, through x @ W first: a projection step before the model.
    step["fit_X"] = floats(fit_x @ whitening)
    return step, {"type": "TruncatedSVD", "components": [floats(r) for r in whitening.T],
                  "mean": None, "whiten": False}


def _with_prefix(step, prefix):
    """The model's step, or [prefix, step] where the rows need a linear map first."""
    return step if prefix is None else [prefix, step]


def export_classifier(est, n_features, ctx):
    step, prefix = _common(est, n_features, ctx)
    step["y"] = ints(est._y)  # indices into classes_
    outlier = getattr(est, "outlier_label_", None)  # RadiusNeighborsClassifier
    if outlier is not None:
        where = np.flatnonzero(est.classes_ == outlier[0])
        if where.size != 1:
            ctx.refuse(est, "outlier_label", f"{outlier[0]!r} is not one of the classes "
                       f"{list(est.classes_)!r}: predict would return a label predict_proba has "
                       "no column for")
        step["outlier_label"] = int(where[0])
    return _with_prefix(step, prefix)


def export_regressor(est, n_features, ctx):
    step, prefix = _common(est, n_features, ctx)
    y = np.asarray(est._y, dtype=np.float64)
    if y.ndim == 2 and y.shape[1] > 1:
        step["n_outputs"] = int(y.shape[1])  # a 2-D y: predict gives the mean of each target
    step["y"] = floats(y if y.ndim == 1 or y.shape[1] > 1 else y[:, 0])
    return _with_prefix(step, prefix)


CLASSIFIERS = {"KNeighborsClassifier": export_classifier,
               "RadiusNeighborsClassifier": export_classifier}
REGRESSORS = {"KNeighborsRegressor": export_regressor,
              "RadiusNeighborsRegressor": export_regressor}
