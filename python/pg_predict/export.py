"""export(estimator) -> the sklearn format document (src/spec/SKLEARN_FORMAT.md).

The walk: a Pipeline is flattened into its steps; the last one is a model, the others are
featurizers (featurizers.py) or the two ways of combining them, ColumnTransformer and
FeatureUnion (here). A pipeline (or a lone featurizer) whose last step is a featurizer too is a
"transformer": transform() in SQL gives its output columns. Models are in linear.py, trees.py,
naive_bayes.py, neural.py, svm.py, cluster.py, mixture.py, calibration.py, neighbors.py,
multioutput.py and ensemble.py (meta-estimators over whole member models), each class looked up
in estimator_registry.py; model_selection.py puts a GridSearchCV's or RandomizedSearchCV's
best_estimator_ in its place."""

import numbers

import numpy as np

from . import cluster, mixture, model_selection, multioutput, trees
from ._common import (Context, ExportError, NotFittedExportError, class_labels, describe, label,
                      label_kind)
from .estimator_registry import CLASSIFIERS, FEATURIZERS, MODELS

FORMAT_VERSION = 1


def supported():
    """The estimator class names export() knows: {'featurizers': [...], 'models': [...]}."""
    return {"composition": ["Pipeline", "ColumnTransformer", "FeatureUnion",
                            *model_selection.SEARCHES],
            "featurizers": sorted(FEATURIZERS),
            "models": sorted(MODELS)}


def export(estimator, feature_names=None):
    """The sklearn-format document (a JSON-ready dict) for a fitted estimator or pipeline.

    feature_names: the input column names, for an estimator fitted without them (on a NumPy
    array); default: the fitted `feature_names_in_`, else x0, x1, ... Raises ExportError for
    anything the format cannot express, naming the estimator and the parameter."""
    import sklearn

    _check_fitted(estimator)
    estimator = model_selection.unwrap(estimator)
    names = _input_names(estimator, feature_names)
    ctx = Context(names)
    chain = _flatten(estimator, ctx)
    if not chain:
        raise ExportError("cannot export an empty pipeline")
    model_name, model = chain[-1]
    if type(model).__name__ not in MODELS:
        ctx.path = [model_name] if model_name else []
        if not _is_transformer(model):
            _unsupported(model, ctx)
        return _export_transformer(chain, names, ctx)

    steps, sources = _transform_chain(chain[:-1], list(range(len(names))), ctx)

    ctx.path = [model_name] if model_name else []
    kind = type(model).__name__
    step = MODELS[kind](model, len(sources), ctx)  # the model's step (or steps, the last its own)
    ctx.read_numeric(model, sources)
    ctx.check_types()

    doc = {"format": "sklearn", "version": FORMAT_VERSION, "sklearn_version": sklearn.__version__,
           "inputs": [{"name": n, "type": "text" if i in ctx.text_by else "numeric"}
                      for i, n in enumerate(names)]}
    if kind in multioutput.CLASSIFIERS:
        # predict gives each output's label: numbers, as predict_outputs() returns them.
        doc["task"] = "classification"
        doc["outputs"] = step["n_outputs"]
        doc["classes"] = multioutput.output_classes(step)
    elif kind in trees.CLASSIFIERS and getattr(model, "n_outputs_", 1) > 1:
        # A tree classifier of a 2-D y: one label per output, each output's two labels.
        doc["task"] = "classification"
        doc["outputs"] = int(model.n_outputs_)
        doc["classes"] = [_numeric_pair(model, k, c, ctx) for k, c in enumerate(model.classes_)]
    elif kind in CLASSIFIERS:
        doc["task"] = "classification"
        doc["classes"] = [-1, 1] if kind in trees.OUTLIER_DETECTORS else class_labels(model, ctx)
    elif kind in cluster.CLUSTERERS:
        # predict gives the cluster index: a classifier over 0..k-1 without probabilities.
        doc["task"] = "classification"
        doc["classes"] = cluster.classes(model)
    elif kind in mixture.MIXTURES:
        # predict gives the component index, predict_proba the responsibilities.
        doc["task"] = "classification"
        doc["classes"] = mixture.classes(model)
    else:
        doc["task"] = "regression"
        model_step = step[-1] if isinstance(step, list) else step
        if model_step.get("n_outputs", 1) > 1:
            doc["outputs"] = model_step["n_outputs"]  # predict gives that many values per row
    doc["steps"] = steps + (step if isinstance(step, list) else [step])
    return doc


def _export_transformer(chain, names, ctx):
    """A pipeline that ends in a featurizer: every step is one, the output is the last one's."""
    import sklearn

    ctx.path = []
    steps, sources = _transform_chain(chain, list(range(len(names))), ctx)
    if not sources:
        raise ExportError("cannot export a transformer that outputs no columns")
    ctx.path = [chain[-1][0]] if chain[-1][0] else []
    ctx.read_numeric(chain[-1][1], sources)  # its output is float8[]: no text column passes through
    ctx.check_types()
    return {"format": "sklearn", "version": FORMAT_VERSION, "sklearn_version": sklearn.__version__,
            "inputs": [{"name": n, "type": "text" if i in ctx.text_by else "numeric"}
                       for i, n in enumerate(names)],
            "task": "transformer", "steps": steps}


# ---- inputs ---------------------------------------------------------------------------------

def _check_fitted(est):
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted
    try:
        check_is_fitted(est)
    except NotFittedError:
        raise NotFittedExportError(f"cannot export {describe(est)}: it is not fitted") from None
    except TypeError as e:  # not an estimator at all
        raise ExportError(f"cannot export {type(est).__name__}: {e}") from None


def _input_names(est, feature_names):
    fitted = getattr(est, "feature_names_in_", None)
    n = getattr(est, "n_features_in_", None)
    if n is None and type(est).__name__ == "LabelEncoder":
        n = 1  # fitted on y alone: it reads one column
    if fitted is not None:
        fitted = [str(x) for x in fitted]
    if feature_names is not None:
        names = [str(x) for x in feature_names]
        if fitted is not None and names != fitted:
            raise ExportError(f"cannot export {describe(est)}: feature_names {names} differ from "
                              f"the names it was fitted with, {fitted} (map columns with "
                              "create_model's options.columns instead)")
        if n is not None and len(names) != n:
            raise ExportError(f"cannot export {describe(est)}: {len(names)} feature_names for "
                              f"an estimator fitted on {n} features")
    elif fitted is not None:
        names = fitted
    elif n is not None:
        names = [f"x{i}" for i in range(n)]
    elif _starts_with_vectorizer(est):
        raise ExportError(f"cannot export {describe(est)}: it starts with a text vectorizer, which reads "
                          "one text column: name it, feature_names=['column']")
    else:
        raise ExportError(f"cannot export {describe(est)}: it does not say how many features "
                          "it reads (no n_features_in_); pass feature_names")
    if len(set(names)) != len(names):
        raise ExportError(f"cannot export {describe(est)}: duplicate feature names in {names}")
    return names


def _starts_with_vectorizer(est):
    from . import text
    while type(est).__name__ == "Pipeline" and est.steps:
        est = est.steps[0][1]
    return type(est).__name__ in text.VECTORIZERS


# ---- the walk -------------------------------------------------------------------------------

def _numeric_pair(model, k, classes, ctx):
    """Output k's two labels of a multi-output classifier, as JSON numbers."""
    labels = list(classes)
    if len(labels) != 2 or label_kind(labels[0]) != "number" or label_kind(labels[1]) != "number":
        ctx.refuse(model, None, f"output {k} has the classes {labels!r}: a multi-output classifier "
                   "needs two numeric labels per output (predict_outputs() returns float8)")
    return [label(c) for c in labels]


def _is_passthrough(est):
    return est is None or (isinstance(est, str) and est == "passthrough")


def _is_transformer(est):
    return hasattr(est, "transform") and not hasattr(est, "predict")


def _flatten(est, ctx, name=None):
    """A Pipeline's steps, nested Pipelines and searches' best estimators included, as
    [(name, estimator)]."""
    est = model_selection.unwrap(est, ctx)
    if type(est).__name__ == "Pipeline":
        out = []
        for step_name, step in est.steps:
            if _is_passthrough(step):
                continue
            label_ = f"{name}.{step_name}" if name else step_name
            outer = list(ctx.path)
            ctx.path = outer + [label_]  # for a refusal of a search's unwrapping
            out += _flatten(step, ctx, label_)
            ctx.path = outer
        return out
    return [(name, est)]


def _transform_chain(chain, sources, ctx):
    """Featurizer steps in order: (steps, sources of the result)."""
    steps = []
    outer = list(ctx.path)
    for name, est in chain:
        ctx.path = outer + ([name] if name else [])
        produced, sources = _transform(est, sources, ctx)
        steps += produced
    ctx.path = outer
    return steps, sources


def _transform(est, sources, ctx):
    """One featurizer (or a composition): (steps, sources)."""
    kind = type(est).__name__
    n_in = getattr(est, "n_features_in_", None)
    if n_in is not None and n_in != len(sources):
        ctx.refuse(est, None, f"it was fitted on {n_in} features, the vector it reads has "
                   f"{len(sources)}")
    if kind == "Pipeline" or kind in model_selection.SEARCHES:
        return _transform_chain(_flatten(est, ctx), sources, ctx)
    if kind == "ColumnTransformer":
        return _column_transformer(est, sources, ctx)
    if kind == "FeatureUnion":
        return _feature_union(est, sources, ctx)
    if kind in FEATURIZERS:
        step, out = FEATURIZERS[kind](est, sources, ctx)  # a step, a list or None
        return ([step] if isinstance(step, dict) else list(step or [])), out
    if kind in MODELS:
        ctx.refuse(est, None, "a model can only be the last step of the pipeline")
    _unsupported(est, ctx)


# Encoders of a target (y): scikit-learn's Pipeline and ColumnTransformer cannot fit them
# (fit_transform(y) takes no X) and their transform takes a 1-D array, so no fitted pipeline holds
# one as a feature step; a TransformedTargetRegressor may hold one as its target transformer.
# (A LabelEncoder never gets here as a step: featurizers.py exports it as its one column's
# ordinal encoding, for a LabelEncoder deployed on its own.)
TARGET_ENCODERS = ("LabelEncoder", "LabelBinarizer", "MultiLabelBinarizer")


def _unsupported(est, ctx):
    kind = type(est).__name__
    if kind in TARGET_ENCODERS:
        raise ExportError(
            f"cannot export {describe(est)}{ctx.where()}: {kind} encodes a target (y), not "
            "feature columns: a Pipeline or ColumnTransformer cannot fit it (its fit_transform "
            "takes y alone) nor call its transform on a table, so it has no place among the "
            "steps; encode feature columns with OneHotEncoder or OrdinalEncoder (string class "
            "labels need no encoding: predict_label returns them)")
    target = getattr(est, "transformer_", None)
    if kind == "TransformedTargetRegressor" and type(target).__name__ in TARGET_ENCODERS:
        raise ExportError(
            f"cannot export {describe(est)}{ctx.where()}: its transformer "
            f"{type(target).__name__} makes it a classifier in disguise (LabelEncoder's "
            "inverse_transform fails on the regressor's continuous predictions; LabelBinarizer "
            "thresholds one regression per class): fit a classifier on the labels instead")
    s = supported()
    raise ExportError(f"cannot export {describe(est)}{ctx.where()}: the sklearn format has no "
                      f"{type(est).__name__} (supported: "
                      + ", ".join(s["composition"] + s["featurizers"] + s["models"]) + ")")


def _column_indices(ct, name, columns, n, ctx):
    """A ColumnTransformer's column selection as input indices."""
    resolved = getattr(ct, "_transformer_to_input_indices", {}).get(name)
    if resolved is not None:
        return [int(i) for i in resolved]
    names = getattr(ct, "feature_names_in_", None)
    names = None if names is None else [str(x) for x in names]

    def by_name(key):
        if names is None or key not in names:
            ctx.refuse(ct, "transformers", f"column {key!r} of {name!r} is not one of the "
                       f"names it was fitted with ({names})")
        return names.index(key)

    if isinstance(columns, str):
        return [by_name(columns)]
    if isinstance(columns, numbers.Integral):
        return [int(columns) % n]
    if isinstance(columns, slice):
        if isinstance(columns.start, str) or isinstance(columns.stop, str):  # inclusive, by name
            start = 0 if columns.start is None else by_name(columns.start)
            stop = n - 1 if columns.stop is None else by_name(columns.stop)
            return list(range(start, stop + 1))[::columns.step or 1]
        return list(range(n))[columns]
    cols = list(np.asarray(columns).tolist()) if not isinstance(columns, list) else columns
    if cols and all(isinstance(c, bool) for c in cols):
        if len(cols) != n:
            ctx.refuse(ct, "transformers", f"the boolean mask of {name!r} has {len(cols)} "
                       f"entries for {n} columns")
        return [i for i, keep in enumerate(cols) if keep]
    if all(isinstance(c, str) for c in cols):
        return [by_name(c) for c in cols]
    if all(isinstance(c, numbers.Integral) for c in cols):
        return [int(c) % n for c in cols]
    ctx.refuse(ct, "transformers", f"cannot resolve the columns {columns!r} of {name!r}")


def _part(est, indices, sources, ctx, name):
    sub = [sources[i] for i in indices]
    if _is_passthrough(est):
        return {"columns": indices, "steps": []}, sub
    outer = list(ctx.path)
    ctx.path = outer + [name]
    steps, out = _transform(est, sub, ctx)
    ctx.path = outer
    return {"columns": indices, "steps": steps}, out


def _apply_weight(union, name, part, part_out, ctx):
    """transformer_weights: scikit-learn multiplies the part's whole output by its weight (a
    name without a weight, or a name that is no part, changes nothing). A weighted column is a
    derived number: text cannot flow through it."""
    weights = union.transformer_weights or {}
    if name not in weights or weights[name] is None:
        return part_out
    w = weights[name]
    if isinstance(w, (bool, np.bool_)) or not isinstance(w, (numbers.Real, np.number)) \
            or not np.isfinite(float(w)):
        ctx.refuse(union, "transformer_weights", f"the weight of {name!r} is {w!r}, not a "
                   "finite number")
    outer = list(ctx.path)
    ctx.path = outer + [name]
    ctx.read_numeric(union, part_out)
    ctx.path = outer
    part["weight"] = float(w)
    return [None] * len(part_out)


def _column_transformer(ct, sources, ctx):
    n = len(sources)
    parts, remainder, out = [], None, []
    n_declared = len(ct.transformers)  # transformers_ adds ('remainder', ...) after these
    for k, (name, est, columns) in enumerate(ct.transformers_):
        indices = _column_indices(ct, name, columns, n, ctx)
        if (isinstance(est, str) and est == "drop") or not indices:
            continue
        part, part_out = _part(est, indices, sources, ctx, name)
        part_out = _apply_weight(ct, name, part, part_out, ctx)
        if k >= n_declared:
            remainder = part
        else:
            parts.append(part)
        out += part_out
    return [{"type": "ColumnTransformer", "transformers": parts, "remainder": remainder}], out


def _feature_union(fu, sources, ctx):
    parts, out = [], []
    for name, est in fu.transformer_list:
        if isinstance(est, str) and est == "drop":
            continue
        part, part_out = _part(est, list(range(len(sources))), sources, ctx, name)
        part_out = _apply_weight(fu, name, part, part_out, ctx)
        del part["columns"]
        parts.append(part)
        out += part_out
    return [{"type": "FeatureUnion", "transformers": parts}], out
