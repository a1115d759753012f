"""deploy(conn, name, estimator): export and register a model over a psycopg 3 connection."""

import json
import os

from .export import export


def create_model_options(replace=False, strategy=None, options=None, stage=False):
    opts = dict(options or {})
    if replace:
        opts["replace"] = True
    if stage:
        opts["deploy"] = False
    if strategy is not None:
        opts["strategy"] = strategy
    return opts


def deploy(conn, name, estimator, feature_names=None, replace=False, strategy=None,
           options=None, format=None, stage=False, categories=None):
    """Register a model with create_model(name, artifact, format, options) on `conn`.

    conn: a psycopg 3 connection (or a DSN string: connect, deploy, commit, close).
    estimator, and the SQL type it is sent as:
      - a fitted scikit-learn estimator or pipeline, or an exported document (a dict): exported
        and sent as jsonb, format 'sklearn';
      - bytes (an ONNX file, a torch.jit.save archive, any artifact read in binary): bytea;
      - str (a LightGBM model file's text, or a JSON document): text;
      - a path (pathlib.Path, os.PathLike): the file's contents, as text when it is UTF-8 (a
        LightGBM model.txt, a JSON document), else as bytea;
      - an xgboost.Booster or a fitted XGBModel (XGBClassifier, XGBRegressor, ...): its JSON
        model (Booster.save_raw("json")) as text, format 'xgboost';
      - a lightgbm.Booster or a fitted LGBMModel (LGBMClassifier, LGBMRegressor, ...; needs the
        lightgbm package, which Debian lacks: untested here): its model_to_string() as text,
        format 'lightgbm'. Like Booster.predict, a classifier's predict gives the class index
        (0..k-1), not the LGBMClassifier's own labels;
      - a torch.jit.ScriptModule: saved with torch.jit.save and sent as bytea, format
        'torchscript' (options must give "features"; see create_model);
      - an onnx.ModelProto: serialized and sent as bytea, format 'onnx'.
    format: create_model's format for bytes and str (default 'auto': the server detects it).
    An existing name gets a new version, deployed unless stage=True (deploy_model() in SQL later).
    replace: accepted from before versions (the server replaced the model only then); strategy: how trees are compiled ('auto', 'native',
    'gemm', 'tree_traversal', 'perfect_tree_traversal'); options: other create_model options
    (e.g. {"columns": {"feature": "column"}}, {"features": [...]} for a TorchScript module).
    categories: for an XGBoost model trained with enable_categorical on pandas `category`
    columns, the training frame (or {column: categories}): XGBoost's model holds the codes, not
    the names. A column whose categories are strings is sent as option "categories" and scores
    from a text column (a value outside them is missing, as pandas makes it); one whose
    categories are the integers 0..k-1 is read as its codes, from an integer column. Other
    categories are refused (ValueError): their codes are not their values.

    Runs in the connection's current transaction: with autocommit off, commit it (psycopg's
    `with psycopg.connect(...) as conn:` commits when the block ends). Returns what it sent: the
    document for scikit-learn, else the artifact (bytes or str)."""
    sql_type, artifact, fmt = to_artifact(estimator, feature_names)
    if format is not None:
        if sql_type == "jsonb" and not isinstance(estimator, dict):
            raise ValueError("format applies to artifacts (bytes, str, dict), not to a scikit-learn estimator")
        fmt = format
    opts = create_model_options(replace, strategy, options, stage)
    if categories is not None:
        if fmt != "xgboost":
            raise ValueError("categories applies to XGBoost models (their JSON holds category codes)")
        text_categories = categories_option(categories)
        if text_categories:
            opts["categories"] = text_categories
    if isinstance(conn, str):
        import psycopg
        with psycopg.connect(conn) as c:  # commits on success
            _create(c, name, sql_type, artifact, fmt, opts)
        return artifact
    _create(conn, name, sql_type, artifact, fmt, opts)
    return artifact


def categories_option(categories):
    """Option "categories" of a frame's category columns (or a {column: categories} dict): the
    columns with string categories; integer categories 0..k-1 are their own codes and need
    none. Raises ValueError for any other categories."""
    if hasattr(categories, "dtypes"):  # a pandas DataFrame
        columns = {str(c): list(categories[c].cat.categories)
                   for c, t in categories.dtypes.items() if str(t) == "category"}
    else:
        columns = {str(c): list(v) for c, v in dict(categories).items()}
    option = {}
    for column, values in columns.items():
        if all(isinstance(v, str) for v in values):
            option[column] = values
        elif not all(isinstance(v, (int,)) or (hasattr(v, "is_integer") and float(v).is_integer())
                     for v in values) or [int(v) for v in values] != list(range(len(values))):
            raise ValueError(
                f"column {column!r} has categories {values[:5]!r}{' ...' if len(values) > 5 else ''}, which are "
                "neither strings nor the integers 0..k-1: XGBoost's model holds their codes, which pg_predict "
                "reads from a text column (string categories) or as the codes themselves (an integer column "
                "holding 0..k-1); train on string categories (df[col].cat.rename_categories(str)) or on the codes")
    return option


def to_artifact(estimator, feature_names=None):
    """(SQL type, value, format) of what create_model is sent for `estimator`. Raises
    ExportError (a scikit-learn estimator it cannot export) or ValueError (an unfitted model)."""
    if isinstance(estimator, (bytes, bytearray, memoryview)):
        return "bytea", bytes(estimator), "auto"
    if isinstance(estimator, str):
        return "text", estimator, "auto"
    if isinstance(estimator, dict):
        return "jsonb", estimator, "sklearn"
    if isinstance(estimator, os.PathLike):
        with open(estimator, "rb") as f:
            data = f.read()
        try:
            return "text", data.decode("utf-8"), "auto"
        except UnicodeDecodeError:
            return "bytea", data, "auto"
    kind = _kind(estimator)
    if kind.startswith("xgboost."):
        # A Booster, or a scikit-learn wrapper (XGBClassifier, XGBRegressor, ...) holding one.
        try:
            booster = estimator.get_booster() if hasattr(estimator, "get_booster") else estimator
        except ValueError as e:  # NotFittedError
            raise ValueError(f"{type(estimator).__name__} is not a fitted XGBoost model: {e}") from None
        return "text", bytes(booster.save_raw(raw_format="json")).decode("utf-8"), "xgboost"
    if kind.startswith("lightgbm."):
        # A Booster, or a scikit-learn wrapper (LGBMModel) holding one once fitted.
        booster = estimator if hasattr(estimator, "model_to_string") else getattr(estimator, "booster_", None)
        if booster is None:
            raise ValueError(f"{kind} is not a fitted LightGBM model (no booster_)")
        return "text", booster.model_to_string(), "lightgbm"
    if kind.startswith("torch.jit.") or kind.startswith("torch._C.ScriptModule"):
        import io
        import torch
        buf = io.BytesIO()
        torch.jit.save(estimator, buf)
        return "bytea", buf.getvalue(), "torchscript"
    if kind.startswith("onnx.") and hasattr(estimator, "SerializeToString"):
        return "bytea", estimator.SerializeToString(), "onnx"
    return "jsonb", export(estimator, feature_names), "sklearn"


def _kind(estimator):
    return f"{type(estimator).__module__}.{type(estimator).__qualname__}"


def is_artifact_object(model):
    """Whether deploy() sends `model` in its library's own format (an XGBoost, LightGBM, ONNX
    or TorchScript model object) rather than exporting it as a scikit-learn estimator."""
    return _kind(model).startswith(("xgboost.", "lightgbm.", "torch.jit.", "torch._C.ScriptModule",
                                    "onnx."))


def _create(conn, name, sql_type, artifact, fmt, opts):
    value = json.dumps(artifact, allow_nan=False) if sql_type == "jsonb" else artifact
    conn.execute(f"SELECT create_model(%s, %s::{sql_type}, %s, %s::jsonb)",
                 [name, value, fmt, json.dumps(opts)])
