"""Tree models: `export_<name>(est, n_features, ctx)` returns the model step.

Trees are sklearn's `tree_` arrays as they are: children_left/right (-1 at leaves), feature and
threshold (-2 at leaves), value [nodes × outputs × classes] (weighted class counts for a
classifier in scikit-learn 1.2; the importer normalizes each leaf)."""

import numpy as np

from ._common import floats, ints


def tree_dict(tree):
    return {"children_left": ints(tree.children_left),
            "children_right": ints(tree.children_right),
            "feature": ints(tree.feature),
            "threshold": floats(tree.threshold),
            "value": floats(tree.value)}


def _check(est, n_features, ctx):
    if getattr(est, "n_outputs_", 1) != 1:
        ctx.refuse(est, None, f"multi-output models ({est.n_outputs_} outputs) are not supported")
    if est.n_features_in_ != n_features:
        ctx.refuse(est, None, f"it was fitted on {est.n_features_in_} features, the vector it "
                   f"reads has {n_features}")


def _n_classes(est):
    return int(len(est.classes_)) if hasattr(est, "classes_") else 1


def export_decision_tree(est, n_features, ctx):
    _check(est, n_features, ctx)
    return {"type": type(est).__name__, "n_classes": _n_classes(est), "n_outputs": 1,
            "trees": [tree_dict(est.tree_)]}


def export_forest(est, n_features, ctx):
    _check(est, n_features, ctx)
    return {"type": type(est).__name__, "n_classes": _n_classes(est), "n_outputs": 1,
            "trees": [tree_dict(t.tree_) for t in est.estimators_]}


def export_gradient_boosting(est, n_features, ctx):
    _check(est, n_features, ctx)
    init = est.init_
    if not (init == "zero" or type(init).__name__ in ("DummyClassifier", "DummyRegressor")):
        ctx.refuse(est, "init", "only the default prior (or 'zero') is supported: another "
                   "estimator's prediction depends on the row")
    # The raw prior does not depend on the row for these inits: take it from one zero row.
    raw = est._raw_predict_init(np.zeros((1, est.n_features_in_), dtype=np.float32))
    loss = est.loss
    if loss == "deviance":
        loss = "log_loss"
    elif loss == "ls":
        loss = "squared_error"
    elif loss == "lad":
        loss = "absolute_error"
    stages = [[tree_dict(t.tree_) for t in stage] for stage in est.estimators_]
    return {"type": type(est).__name__, "n_classes": _n_classes(est), "n_outputs": 1,
            "init": floats(np.asarray(raw, dtype=np.float64)[0]),
            "learning_rate": float(est.learning_rate), "loss": loss, "trees": stages}


CLASSIFIERS = {
    "DecisionTreeClassifier": export_decision_tree,
    "RandomForestClassifier": export_forest,
    "ExtraTreesClassifier": export_forest,
    "GradientBoostingClassifier": export_gradient_boosting,
}

REGRESSORS = {
    "DecisionTreeRegressor": export_decision_tree,
    "RandomForestRegressor": export_forest,
    "ExtraTreesRegressor": export_forest,
    "GradientBoostingRegressor": export_gradient_boosting,
}
