"""Kernel support vector machines (SVC, NuSVC, SVR, NuSVR) as libsvm predicts with them.

Exported are libsvm's own arrays, which scikit-learn keeps privately: `_dual_coef_` and
`_intercept_` (= -rho); for binary classifiers the public dual_coef_ / intercept_ have the
opposite sign."""

import numpy as np

from ._common import floats, ints

KERNELS = ("linear", "poly", "rbf", "sigmoid")


def _common(est, n_features, ctx):
    if callable(est.kernel) or est.kernel not in KERNELS:
        name = getattr(est.kernel, "__name__", est.kernel)
        ctx.refuse(est, "kernel", f"{name!r} is not supported (only {', '.join(KERNELS)})")
    if getattr(est, "_sparse", False):
        ctx.refuse(est, None, "a model fitted on sparse input is not supported")
    sv = np.asarray(est.support_vectors_, dtype=np.float64)
    if sv.shape[1] != n_features:
        ctx.refuse(est, None, f"support_vectors_ have {sv.shape[1]} columns, the vector it "
                   f"reads has {n_features}")
    return {"type": type(est).__name__, "kernel": est.kernel, "gamma": float(est._gamma),
            "coef0": float(est.coef0), "degree": int(est.degree),
            "support_vectors": floats(sv), "dual_coef": floats(est._dual_coef_),
            "intercept": floats(est._intercept_)}


def export_svc(est, n_features, ctx):
    if est.break_ties and len(est.classes_) > 2:
        ctx.refuse(est, "break_ties", "only libsvm's one-vs-one voting (break_ties=False) is "
                   "supported")
    if est.break_ties and est.decision_function_shape == "ovo":
        ctx.refuse(est, "break_ties", "scikit-learn's predict refuses break_ties=True with "
                   "decision_function_shape='ovo'")
    step = _common(est, n_features, ctx)
    step["n_support"] = ints(est.n_support_)
    step["decision_function_shape"] = est.decision_function_shape  # decision_function() only
    return step


def export_svr(est, n_features, ctx):
    return _common(est, n_features, ctx)


CLASSIFIERS = {"SVC": export_svc, "NuSVC": export_svc}
REGRESSORS = {"SVR": export_svr, "NuSVR": export_svr}
