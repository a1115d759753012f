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
            "value": floats(tree.value),
            # TreeSHAP's covers (predict_contributions); the document reads without them
            "weighted_n_node_samples": floats(tree.weighted_n_node_samples)}


def _check(est, n_features, ctx):
    # A multi-output regressor (2-D y) predicts n_outputs_ values per row; a multi-output
    # classifier one label per output, each output of two classes.
    if getattr(est, "n_outputs_", 1) != 1 and hasattr(est, "classes_"):
        if type(est).__name__ not in ("DecisionTreeClassifier", "RandomForestClassifier",
                                      "ExtraTreesClassifier"):
            ctx.refuse(est, None, f"multi-output classifiers ({est.n_outputs_} outputs) are not supported")
        for k, classes in enumerate(est.classes_):
            if len(classes) != 2:
                ctx.refuse(est, None, f"output {k} has {len(classes)} classes: a multi-output tree "
                           "classifier must have two classes per output (multi-label)")
    if est.n_features_in_ != n_features:
        ctx.refuse(est, None, f"it was fitted on {est.n_features_in_} features, the vector it "
                   f"reads has {n_features}")


def _n_classes(est):
    if getattr(est, "n_outputs_", 1) > 1 and hasattr(est, "classes_"):
        return [int(len(c)) for c in est.classes_]  # per output
    return int(len(est.classes_)) if hasattr(est, "classes_") else 1


def export_decision_tree(est, n_features, ctx):
    _check(est, n_features, ctx)
    return {"type": type(est).__name__, "n_classes": _n_classes(est), "n_outputs": int(est.n_outputs_),
            "trees": [tree_dict(est.tree_)]}


def export_forest(est, n_features, ctx):
    _check(est, n_features, ctx)
    return {"type": type(est).__name__, "n_classes": _n_classes(est), "n_outputs": int(est.n_outputs_),
            "trees": [tree_dict(t.tree_) for t in est.estimators_]}


def export_gradient_boosting(est, n_features, ctx):
    _check(est, n_features, ctx)
    init = est.init_
    if not (init == "zero" or type(init).__name__ in ("DummyClassifier", "DummyRegressor")):
        ctx.refuse(est, "init", "only the default prior (or 'zero') is supported: another "
                   "estimator's prediction depends on the row")
    if getattr(init, "strategy", None) == "stratified":
        ctx.refuse(est, "init", "DummyClassifier(strategy='stratified') draws a random "
                   "prediction for every row")
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


# ---- HistGradientBoosting* -----------------------------------------------------------------

# The loss object's class → the format's loss name (scikit-learn 1.2's _loss module).
_HIST_LOSSES = {"HalfBinomialLoss": "log_loss", "HalfMultinomialLoss": "log_loss",
                "HalfSquaredError": "squared_error", "AbsoluteError": "absolute_error",
                "PinballLoss": "quantile", "HalfPoissonLoss": "poisson"}


def hist_tree_dict(predictor):
    """A TreePredictor's `nodes` fields that predict() reads, as they are; with categorical
    splits also is_categorical, bitset_idx and raw_left_cat_bitsets (8 uint32 words per
    categorical split: the raw categories that go left)."""
    nodes = predictor.nodes
    d = {"feature_idx": ints(nodes["feature_idx"]),
         "num_threshold": floats(nodes["num_threshold"]),
         "missing_go_to_left": ints(nodes["missing_go_to_left"]),
         "left": ints(nodes["left"]), "right": ints(nodes["right"]),
         "is_leaf": ints(nodes["is_leaf"]), "value": floats(nodes["value"]),
         "count": ints(nodes["count"])}  # TreeSHAP's covers (predict_contributions)
    if np.any(nodes["is_categorical"]):
        d["is_categorical"] = ints(nodes["is_categorical"])
        d["bitset_idx"] = ints(nodes["bitset_idx"])
        d["raw_left_cat_bitsets"] = np.asarray(predictor.raw_left_cat_bitsets,
                                               dtype=np.int64).tolist()
    return d


def export_hist_gradient_boosting(est, n_features, ctx):
    _check(est, n_features, ctx)
    loss = _HIST_LOSSES.get(type(est._loss).__name__)
    if loss is None:
        ctx.refuse(est, "loss", "supported: " + ", ".join(sorted(set(_HIST_LOSSES.values()))))
    out = {"type": type(est).__name__, "n_classes": _n_classes(est), "loss": loss,
           "baseline": floats(np.asarray(est._baseline_prediction, dtype=np.float64).ravel()),
           "trees": [[hist_tree_dict(p) for p in it] for it in est._predictors]}
    categorical = getattr(est, "is_categorical_", None)
    if categorical is not None and np.any(categorical):
        # The categories seen at fit, per categorical feature (predict sends the others, like
        # NaN and negative values, where missing values go).
        known, f_idx_map = est._bin_mapper.make_known_categories_bitsets()
        out["known_cat_bitsets"] = np.asarray(known, dtype=np.int64).tolist()
        out["f_idx_map"] = ints(f_idx_map)
        out["is_categorical"] = ints(categorical)
    return out


# ---- IsolationForest ---------------------------------------------------------------------------

def export_isolation_forest(est, n_features, ctx):
    """Trees read the whole vector: with max_features < 1 each tree's feature indices (into its
    column subset estimators_features_) are mapped back to the full vector here."""
    _check(est, n_features, ctx)
    offset = float(est.offset_)
    if not offset < 0:
        ctx.refuse(est, "offset_", f"is {offset}; scores are negative, so it must be too")
    subset = est._max_features != est.n_features_in_  # as _compute_chunked_score_samples
    trees = []
    for tree, features in zip(est.estimators_, est.estimators_features_):
        d = tree_dict(tree.tree_)
        if subset:
            features = np.asarray(features, dtype=np.int64)
            d["feature"] = [int(features[f]) if f >= 0 else f for f in d["feature"]]
        d["n_node_samples"] = ints(tree.tree_.n_node_samples)
        trees.append(d)
    return {"type": "IsolationForest", "max_samples": int(est.max_samples_), "offset": offset,
            "trees": trees}


# Outlier detectors: predict gives -1 (outlier) / 1 (inlier); exported as classifiers with
# classes [-1, 1] and no probabilities.
OUTLIER_DETECTORS = {"IsolationForest": export_isolation_forest}

CLASSIFIERS = {
    "DecisionTreeClassifier": export_decision_tree,
    "RandomForestClassifier": export_forest,
    "ExtraTreesClassifier": export_forest,
    "GradientBoostingClassifier": export_gradient_boosting,
    "HistGradientBoostingClassifier": export_hist_gradient_boosting,
    **OUTLIER_DETECTORS,
}

REGRESSORS = {
    "DecisionTreeRegressor": export_decision_tree,
    "RandomForestRegressor": export_forest,
    "ExtraTreesRegressor": export_forest,
    "GradientBoostingRegressor": export_gradient_boosting,
    "HistGradientBoostingRegressor": export_hist_gradient_boosting,
}
