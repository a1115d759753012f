"""CalibratedClassifierCV over a linear classifier: each of its calibrated_classifiers_ (one per
fold with ensemble=True, one otherwise) maps the classifier's decision values through one
calibrator per class (sigmoid: expit(-(a d + b)); isotonic: the clipped piecewise-linear
interpolation of its thresholds), normalizes them (binary: [1 - p, p]; else p / Σ p, uniform
when Σ p = 0), and predict_proba averages the members (scikit-learn 1.2).
src/importers/sklearn/calibration.cpp compiles the document."""

import numpy as np

from . import linear
from ._common import floats, label


def _calibrator(cal, method, ctx, owner):
    if method == "sigmoid":
        return {"a": float(cal.a_), "b": float(cal.b_)}
    if getattr(cal, "out_of_bounds", "clip") != "clip":
        ctx.refuse(owner, "method", f"an isotonic calibrator with out_of_bounds="
                   f"{cal.out_of_bounds!r}")
    return {"x": floats(cal.X_thresholds_), "y": floats(cal.y_thresholds_)}


def export_calibrated_classifier(est, n_features, ctx):
    members = []
    for member in est.calibrated_classifiers_:
        base = getattr(member, "estimator", None) or getattr(member, "base_estimator", None)
        kind = type(base).__name__
        if kind not in linear.CLASSIFIERS:
            ctx.refuse(est, "estimator", f"a calibrated {kind}: only linear classifiers (whose "
                       "decision_function is linear: " + ", ".join(sorted(linear.CLASSIFIERS))
                       + ") are supported")
        if [label(c) for c in base.classes_] != [label(c) for c in est.classes_]:
            ctx.refuse(est, "cv", f"a calibrated {kind} fitted on the classes "
                       f"{list(base.classes_)} of {list(est.classes_)} (a fold lacked a class)")
        coef, intercept = linear._coef_2d(base, n_features, ctx)
        members.append({"coef": floats(coef), "intercept": floats(intercept),
                         "calibrators": [_calibrator(c, member.method, ctx, est)
                                         for c in member.calibrators]})
    return {"type": "CalibratedClassifierCV", "method": est.method, "members": members}


CLASSIFIERS = {"CalibratedClassifierCV": export_calibrated_classifier}
