"""Meta-estimators over whole models: VotingClassifier / VotingRegressor, BaggingClassifier /
BaggingRegressor, StackingClassifier / StackingRegressor (scikit-learn 1.2).

Each fitted member (a model or a Pipeline ending in one) is exported on its own, as the
sub-document {"task", "classes", "steps"} of the columns it reads; scikit-learn fits a classifier
ensemble's members on the labels encoded 0..k-1, so their classes are indices into the
ensemble's. src/importers/sklearn/ensemble.cpp compiles the document (SKLEARN_FORMAT.md).

Members are exported by export() itself, so this module imports export.py and adds its classes
to the registry when it is imported (estimator_registry.py says why)."""

from . import estimator_registry, model_selection
from ._common import ExportError, describe, ints
from .export import export


def _member(owner, name, est, ctx):
    """The sub-document of one fitted member."""
    try:
        doc = export(est)
    except ExportError as e:
        raise ExportError(f"cannot export {describe(owner)}{ctx.where()}: its estimator {name!r}: {e}") from None
    if doc["task"] == "transformer":
        ctx.refuse(owner, "estimators", f"the estimator {name!r} is a transformer, not a model")
    text = [i["name"] for i in doc["inputs"] if i["type"] == "text"]
    if text:
        ctx.refuse(owner, "estimators", f"the estimator {name!r} reads the text column {text[0]!r}; "
                   "members read numbers only: encode text before the ensemble "
                   "(make_pipeline(ColumnTransformer(...), " + type(owner).__name__ + "(...)))")
    member = {"task": doc["task"], "steps": doc["steps"]}
    if "classes" in doc:
        member["classes"] = doc["classes"]
    return member


def _kept_names(est):
    """The names of the members that are not 'drop', in the order of estimators_."""
    return [n for n, e in est.estimators if not (isinstance(e, str) and e == "drop") and e is not None]


def export_voting_classifier(est, n_features, ctx):
    names = _kept_names(est)
    weights = est._weights_not_none
    if est.voting == "soft" and weights is not None and sum(weights) == 0:
        ctx.refuse(est, "weights", "the weights sum to 0")
    return {"type": "VotingClassifier", "voting": est.voting,
            "weights": None if weights is None else [float(w) for w in weights],
            "estimators": [_member(est, n, e, ctx) for n, e in zip(names, est.estimators_)]}


def export_voting_regressor(est, n_features, ctx):
    names = _kept_names(est)
    weights = est._weights_not_none
    if weights is not None and sum(weights) == 0:
        ctx.refuse(est, "weights", "the weights sum to 0")
    return {"type": "VotingRegressor",
            "weights": None if weights is None else [float(w) for w in weights],
            "estimators": [_member(est, n, e, ctx) for n, e in zip(names, est.estimators_)]}


def _bagging(est, ctx, kind):
    members = [_member(est, f"estimators_[{i}]", e, ctx) for i, e in enumerate(est.estimators_)]
    doc = {"type": kind, "estimators": members,
           "features": [ints(f) for f in est.estimators_features_]}
    if kind == "BaggingClassifier":
        # _parallel_predict_proba: the members' predict_proba where they have one, else votes.
        doc["proba"] = all(hasattr(e, "predict_proba") for e in est.estimators_)
        if not doc["proba"] and any(hasattr(e, "predict_proba") for e in est.estimators_):
            ctx.refuse(est, "estimator", "members of which only some have predict_proba")
    return doc


def export_bagging_classifier(est, n_features, ctx):
    return _bagging(est, ctx, "BaggingClassifier")


def export_bagging_regressor(est, n_features, ctx):
    return _bagging(est, ctx, "BaggingRegressor")


def _stacking(est, ctx, kind):
    if isinstance(getattr(est, "_label_encoder", None), list):
        ctx.refuse(est, None, "multilabel stacking is not supported")
    names = _kept_names(est)
    final = model_selection.unwrap(est.final_estimator_, ctx)
    final_kind = type(final).__name__
    if final_kind not in estimator_registry.MODELS:
        ctx.refuse(est, "final_estimator", f"a {final_kind} (the final estimator must be one model "
                   "pg_predict supports, not a pipeline)")
    n_meta = getattr(final, "n_features_in_", None)
    if n_meta is None:
        ctx.refuse(est, "final_estimator", f"{final_kind} does not say how many features it reads")
    final_step = estimator_registry.MODELS[final_kind](final, int(n_meta), ctx)
    if isinstance(final_step, list):  # k-NN with seuclidean / mahalanobis: a projection first
        ctx.refuse(est, "final_estimator", f"a {final_kind} whose rows need a linear map first "
                   "(metric seuclidean or mahalanobis) is not supported as the final estimator")
    return {"type": kind,
            "estimators": [_member(est, n, e, ctx) for n, e in zip(names, est.estimators_)],
            "stack_methods": list(est.stack_method_),
            "passthrough": bool(est.passthrough),
            "final_estimator": final_step}


def export_stacking_classifier(est, n_features, ctx):
    return _stacking(est, ctx, "StackingClassifier")


def export_stacking_regressor(est, n_features, ctx):
    return _stacking(est, ctx, "StackingRegressor")


CLASSIFIERS = {"VotingClassifier": export_voting_classifier,
               "BaggingClassifier": export_bagging_classifier,
               "StackingClassifier": export_stacking_classifier}
REGRESSORS = {"VotingRegressor": export_voting_regressor,
              "BaggingRegressor": export_bagging_regressor,
              "StackingRegressor": export_stacking_regressor}
estimator_registry.add_models(CLASSIFIERS, REGRESSORS)
