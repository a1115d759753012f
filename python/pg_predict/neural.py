"""Multi-layer perceptrons (MLPClassifier, MLPRegressor): the layers' weights as fitted."""

from ._common import floats

ACTIVATIONS = ("identity", "logistic", "tanh", "relu")


def _layers(est, n_features, ctx):
    if est.activation not in ACTIVATIONS:
        ctx.refuse(est, "activation", f"only {', '.join(ACTIVATIONS)} are supported")
    if est.coefs_[0].shape[0] != n_features:
        ctx.refuse(est, None, f"coefs_[0] has {est.coefs_[0].shape[0]} rows, the vector it "
                   f"reads has {n_features}")
    if est.n_outputs_ != 1 and est.out_activation_ != "softmax":
        what = "multilabel classification" if est.out_activation_ == "logistic" \
            else "multi-output regression"
        ctx.refuse(est, None, f"{what} ({est.n_outputs_} outputs) is not supported")
    return {"type": type(est).__name__, "activation": est.activation,
            "out_activation": est.out_activation_,
            "coefs": [floats(c) for c in est.coefs_],
            "intercepts": [floats(b) for b in est.intercepts_]}


def export_mlp(est, n_features, ctx):
    return _layers(est, n_features, ctx)


CLASSIFIERS = {"MLPClassifier": export_mlp}
REGRESSORS = {"MLPRegressor": export_mlp}
