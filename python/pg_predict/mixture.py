"""Gaussian mixtures: GaussianMixture and BayesianGaussianMixture predict the component of the
highest weighted log-likelihood and predict_proba its softmax. Exported as a classifier whose
classes are the component indices 0..k-1 (src/importers/sklearn/mixture.cpp compiles it)."""

import numpy as np

from ._common import floats


def _log_weights(est):
    """What scikit-learn 1.2 adds per component to the Gaussian log-density
    (-½ d log 2π + log det P - ½ ‖(x - μ) P‖²): log weights_ for GaussianMixture; for
    BayesianGaussianMixture its _estimate_log_weights plus _estimate_log_prob's terms."""
    if type(est).__name__ == "GaussianMixture":
        return np.log(est.weights_)
    from scipy.special import digamma
    d = est.means_.shape[1]
    conc = est.weight_concentration_
    if est.weight_concentration_prior_type == "dirichlet_process":
        total = digamma(conc[0] + conc[1])
        log_w = digamma(conc[0]) - total + np.hstack((0, np.cumsum(digamma(conc[1]) - total)[:-1]))
    else:
        log_w = digamma(conc) - digamma(np.sum(conc))
    dof = est.degrees_of_freedom_
    log_lambda = d * np.log(2.0) + np.sum(digamma(0.5 * (dof - np.arange(d)[:, np.newaxis])), 0)
    return log_w - 0.5 * d * np.log(dof) + 0.5 * (log_lambda - d / est.mean_precision_)


def export_mixture(est, n_features, ctx):
    means = np.asarray(est.means_, dtype=np.float64)
    if means.shape[1] != n_features:
        ctx.refuse(est, None, f"means_ has {means.shape[1]} columns, the vector it reads has "
                   f"{n_features}")
    log_w = _log_weights(est)
    if not np.all(np.isfinite(log_w)):
        ctx.refuse(est, "weights_", "a component of weight 0 (its log is -inf)")
    return {"type": type(est).__name__, "covariance_type": est.covariance_type,
            "means": floats(means), "precisions_cholesky": floats(est.precisions_cholesky_),
            "log_weights": floats(log_w)}


def classes(est):
    return list(range(len(est.means_)))


MIXTURES = {"GaussianMixture": export_mixture, "BayesianGaussianMixture": export_mixture}
