"""Multi-output wrappers: `export_<name>(est, n_features, ctx)` returns the model step.

MultiOutputRegressor holds one fitted regressor per target (`estimators_`), each reading the
row. RegressorChain's `estimators_` are in chain order: member j reads the row followed by the
predictions of members 0..j-1 and predicts target `order_[j]`. Each member is exported as a
model of its own (any regressor export() knows, tree ensembles too, not a Pipeline); the
document's `outputs` is their number.

MultiOutputClassifier and ClassifierChain (whose members read the predicted labels of the
members before them) hold binary classifiers with numeric labels (multi-label
classification): linear classifiers, KNeighborsClassifier and the tree ensembles. Each member
step carries its `classes`, the document's `classes` lists them per output."""

from . import linear, neighbors, neural, svm, trees
from ._common import class_labels


def _regressors():
    return {**linear.REGRESSORS, **trees.REGRESSORS, **neural.REGRESSORS, **svm.REGRESSORS,
            **neighbors.REGRESSORS}


def _one_step(est, kind, step, ctx):
    """A member must export as one model step; a k-NN of metric seuclidean or mahalanobis
    exports as a scaling step before its model, which the wrappers cannot combine."""
    if not isinstance(step, dict):
        ctx.refuse(est, "estimator", f"its member {kind} exports as several steps (a k-NN of metric "
                   f"seuclidean or mahalanobis scales its input first): export it alone")
    return step


def _members(est, n_features, ctx, chain):
    regressors = _regressors()
    steps = []
    for j, member in enumerate(est.estimators_):
        kind = type(member).__name__
        if kind not in regressors:
            ctx.refuse(est, "estimator", f"its member {kind} is not a regressor pg_predict scores "
                       f"(supported: {', '.join(sorted(regressors))})")
        step = _one_step(est, kind, regressors[kind](member, n_features + (j if chain else 0), ctx), ctx)
        if step.get("n_outputs", 1) != 1:
            ctx.refuse(est, "estimator", f"its member {kind} predicts several targets")
        steps.append(step)
    return steps


def export_multi_output_regressor(est, n_features, ctx):
    members = _members(est, n_features, ctx, chain=False)
    return {"type": "MultiOutputRegressor", "n_outputs": len(members), "estimators": members}


def export_regressor_chain(est, n_features, ctx):
    members = _members(est, n_features, ctx, chain=True)
    return {"type": "RegressorChain", "n_outputs": len(members),
            "order": [int(i) for i in est.order_], "estimators": members}


def _classifier_members(est, n_features, ctx, chain):
    classifiers = {**linear.CLASSIFIERS, **neighbors.CLASSIFIERS,
                   **{k: v for k, v in trees.CLASSIFIERS.items() if k not in trees.OUTLIER_DETECTORS}}
    if len(est.estimators_) < 2:
        ctx.refuse(est, None, "it has one output: export its estimator alone")
    steps = []
    for j, member in enumerate(est.estimators_):
        kind = type(member).__name__
        if kind not in classifiers:
            ctx.refuse(est, "estimator", f"its member {kind} cannot be combined: pg_predict combines "
                       f"binary {', '.join(sorted(classifiers))} members")
        classes = class_labels(member, ctx)
        if len(classes) != 2 or not all(isinstance(c, (int, float)) and not isinstance(c, bool)
                                        for c in classes):
            ctx.refuse(est, "estimator", f"member {j} ({kind}) has the classes {classes!r}: pg_predict "
                       "combines members of two numeric labels (multi-label classification)")
        step = _one_step(est, kind, classifiers[kind](member, n_features + (j if chain else 0), ctx), ctx)
        step["classes"] = classes
        steps.append(step)
    return steps


def export_multi_output_classifier(est, n_features, ctx):
    members = _classifier_members(est, n_features, ctx, chain=False)
    return {"type": "MultiOutputClassifier", "n_outputs": len(members), "estimators": members}


def export_classifier_chain(est, n_features, ctx):
    members = _classifier_members(est, n_features, ctx, chain=True)
    return {"type": "ClassifierChain", "n_outputs": len(members),
            "order": [int(i) for i in est.order_], "estimators": members}


def output_classes(step):
    """The document's `classes` of a multi-output classifier step: each output's labels (a
    chain's member j predicts output order[j])."""
    order = step.get("order", list(range(len(step["estimators"]))))
    classes = [None] * len(order)
    for member, output in zip(step["estimators"], order):
        classes[output] = member["classes"]
    return classes


REGRESSORS = {"MultiOutputRegressor": export_multi_output_regressor,
              "RegressorChain": export_regressor_chain}
CLASSIFIERS = {"MultiOutputClassifier": export_multi_output_classifier,
               "ClassifierChain": export_classifier_chain}
