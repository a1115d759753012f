"""Naive Bayes classifiers: `export_<name>(est, n_features, ctx)` returns the model step.

The fitted attributes go out as scikit-learn names them; the importer turns each joint
log-likelihood into a linear function of (featurized) x and predict_proba into a softmax."""

import numbers

from ._common import floats, to_json_number


def _check_width(est, attr, n_features, ctx):
    got = getattr(est, attr).shape[1]
    if got != n_features:
        ctx.refuse(est, None, f"{attr} has {got} columns, the vector it reads has {n_features}")


def export_gaussian_nb(est, n_features, ctx):
    _check_width(est, "theta_", n_features, ctx)
    return {"type": "GaussianNB", "theta": floats(est.theta_), "var": floats(est.var_),
            "class_prior": floats(est.class_prior_)}


def export_multinomial_nb(est, n_features, ctx):
    _check_width(est, "feature_log_prob_", n_features, ctx)
    return {"type": "MultinomialNB", "feature_log_prob": floats(est.feature_log_prob_),
            "class_log_prior": floats(est.class_log_prior_)}


def export_complement_nb(est, n_features, ctx):
    """ComplementNB's scores are X · feature_log_prob_ᵀ, without the prior (with it for a single
    class): MultinomialNB's importer with a zero prior."""
    _check_width(est, "feature_log_prob_", n_features, ctx)
    prior = est.class_log_prior_ if len(est.classes_) == 1 else [0.0] * len(est.classes_)
    return {"type": "ComplementNB", "feature_log_prob": floats(est.feature_log_prob_),
            "class_log_prior": floats(prior)}


def export_bernoulli_nb(est, n_features, ctx):
    _check_width(est, "feature_log_prob_", n_features, ctx)
    if est.binarize is not None and not isinstance(est.binarize, numbers.Number):
        ctx.refuse(est, "binarize", "must be a number or None")
    return {"type": "BernoulliNB", "feature_log_prob": floats(est.feature_log_prob_),
            "class_log_prior": floats(est.class_log_prior_),
            "binarize": None if est.binarize is None else to_json_number(float(est.binarize))}


CLASSIFIERS = {
    "GaussianNB": export_gaussian_nb,
    "MultinomialNB": export_multinomial_nb,
    "ComplementNB": export_complement_nb,
    "BernoulliNB": export_bernoulli_nb,
}
