"""SqlModel: what convert() returns. Each method sends the rows to the server and runs one
SQL statement over them, so the model is scored by the PredictBatch node:

  PEER_INPUT=table (default): a temporary table with one column per feature, named as the
      model's columns (a DataFrame's own column names, else the model's, by position), text for
      string columns, NULL for NaN (pg_predict's missing value); `fn(model, t)` per row t;
  PEER_INPUT=array: a temporary table of float8[] rows (NaN as a NULL element);
      `fn(model, x)`. Inputs with strings use the table form; numeric rows wider than
      WIDEST_TABLE columns use this form whatever PEER_INPUT says (a heap row is at most 8 kB).

Results come back in scikit-learn's shapes: a classifier's labels in the fitted classes' own
type (through predict_label for strings and booleans), decision_function as (n,) for one
column, transform / predict_proba as (n, k)."""

import itertools
import os
import types

import numpy as np

from .operator_converters import _tree_implementations as trees
from .operator_converters.sklearn import iforest

_tables = itertools.count(1)
WIDEST_TABLE = 1000  # feature columns of the temp table form


class SqlModel:
    def __init__(self, conn, name, model):
        self.conn = conn
        self.name = name
        self.original = model
        (self.task, self.classes, self.columns, self.strategy, self.outputs) = conn.execute(
            "SELECT task, classes, columns, strategy, outputs FROM models WHERE name = %s",
            [name]).fetchone()
        # Hummingbird's containers hold the compiled module in .model; the tests read which
        # tree strategy it used from its operators.
        self.model = types.SimpleNamespace(_operators=_tree_operators(model, self.strategy))

    # -- scikit-learn's API -------------------------------------------------------------------
    def predict(self, X):
        # Several values per row (scikit-learn's (n, outputs) array): a regressor's outputs > 1,
        # or a classifier's without classes (models.outputs is a classifier's class count).
        multi = (self.outputs or 1) > 1 and (self.task == "regression" or
                                             (self.task == "classification" and self.classes is None))
        if multi:
            values = self._matrix("predict_outputs", X)
            labels = getattr(self.original, "classes_", None)
            return values.astype(np.int64) if self.task == "classification" and labels is not None \
                and all(np.asarray(c).dtype.kind in "iu" for c in labels) else values
        if self.task == "classification":
            labels = getattr(self.original, "classes_", None)
            if labels is not None and np.asarray(labels).dtype.kind not in "iuf":
                by_text = {_label_text(c): c for c in labels}
                return np.array([by_text[v] if v is not None else None
                                 for v in self._scalar("predict_label", X)])
            values = np.array(self._scalar("predict", X), dtype=np.float64)
            if labels is not None and np.asarray(labels).dtype.kind in "iu":
                return values.astype(np.asarray(labels).dtype)
            return values
        return np.array(self._scalar("predict", X), dtype=np.float64)

    def predict_proba(self, X):
        return self._matrix("predict_proba", X)

    def transform(self, X):
        if type(self.original).__name__ != "LabelEncoder":
            return self._matrix("transform", X)
        try:
            out = self._matrix("transform", X)
        except Exception as e:
            # Hummingbird's LabelEncoder signals a label it was not fitted on by a failed assert;
            # the server's ERROR names the value (SQLSTATE 22023, invalid_parameter_value).
            if getattr(e, "sqlstate", None) == "22023" and "does not know the value" in str(e):
                raise AssertionError(f"an unseen label: {e}") from e
            raise
        # LabelEncoder.transform returns one label per row, shape (n,); SQL gives 1-element arrays.
        return out.ravel()

    def decision_function(self, X):
        out = self._matrix("decision_function", X)
        return out.ravel() if out.ndim == 2 and out.shape[1] == 1 else out

    def score_samples(self, X):
        return np.array(self._scalar("score_samples", X), dtype=np.float64)

    def to(self, device):
        return self

    # -- SQL ----------------------------------------------------------------------------------
    def _scalar(self, function, X):
        return self._run(function, X)

    def _matrix(self, function, X):
        rows = self._run(function, X)
        return np.array([[np.nan if v is None else v for v in r] if r is not None else [np.nan]
                         for r in rows], dtype=np.float64)

    def _run(self, function, X):
        names, columns = _columns(X, self.columns)
        table = f"pg_temp.hb_rows_{next(_tables)}"
        text = [c.dtype.kind in "OUS" for c in columns]
        n = len(columns[0]) if columns else 0
        # A heap row holds at most ~1000 float8 columns (8 kB pages): wider numeric rows go as arrays.
        as_array = not any(text) and (os.environ.get("PEER_INPUT", "table") == "array"
                                      or len(columns) > WIDEST_TABLE)
        with self.conn.transaction():
            if as_array:
                self.conn.execute(f"CREATE TABLE {table} (id int, x float8[]) ON COMMIT DROP")
                rows = ([_number(c[i]) for c in columns] for i in range(n))
                with self.conn.cursor().copy(f"COPY {table} (id, x) FROM STDIN") as cp:
                    for i, row in enumerate(rows):
                        cp.write_row([i, row])
                arg = "t.x"
            else:
                cols = ", ".join(f'"{c}" {"text" if t else "float8"}' for c, t in zip(names, text))
                self.conn.execute(f"CREATE TABLE {table} (hb_row_id int, {cols}) ON COMMIT DROP")
                quoted = ", ".join(f'"{c}"' for c in names)
                with self.conn.cursor().copy(f"COPY {table} (hb_row_id, {quoted}) FROM STDIN") as cp:
                    for i in range(n):
                        cp.write_row([i] + [_text(c[i]) if t else _number(c[i])
                                            for c, t in zip(columns, text)])
                arg = "t"
            return [r[0] for r in self.conn.execute(
                f"SELECT {function}(%s, {arg}) FROM {table} t ORDER BY {'id' if as_array else 'hb_row_id'}",
                [self.name]).fetchall()]


def _columns(X, model_columns):
    """(column names, one NumPy array per column) of the rows X: a DataFrame's own columns,
    else the model's column names by position."""
    if type(X).__module__.startswith("pandas.") and type(X).__name__ == "DataFrame":
        return [str(c) for c in X.columns], [X[c].to_numpy() for c in X.columns]
    if hasattr(X, "detach"):  # a torch tensor
        X = X.detach().cpu().numpy()
    X = np.asarray(X)
    if X.ndim == 1:
        X = X.reshape(1, -1) if len(X) == len(model_columns) else X.reshape(-1, 1)
    if X.shape[1] != len(model_columns):
        raise ValueError(f"X has {X.shape[1]} features, the model reads {len(model_columns)}")
    return list(model_columns), [X[:, j] for j in range(X.shape[1])]


def _number(v):
    if v is None:
        return None
    v = float(v)
    return None if np.isnan(v) else v


def _text(v):
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return None
    return str(v)


def _label_text(c):
    """A label as predict_label writes it: strings as they are, booleans as 'true'/'false'."""
    if isinstance(c, (bool, np.bool_)):
        return "true" if c else "false"
    return str(c)


def _tree_operators(model, strategy):
    kind = type(model).__name__
    if kind == "IsolationForest":
        family = {"gemm": iforest.GEMMIsolationForestImpl, "tree_traversal": iforest.TreeTraversalIsolationForestImpl,
                  "perfect_tree_traversal": iforest.PerfectTreeTraversalIsolationForestImpl}
    elif "GradientBoosting" in kind or kind.startswith("XGB") or kind == "Booster":
        family = {"gemm": trees.GEMMGBDTImpl, "tree_traversal": trees.TreeTraversalGBDTImpl,
                  "perfect_tree_traversal": trees.PerfectTreeTraversalGBDTImpl}
    elif "Tree" in kind or "Forest" in kind:
        family = {"gemm": trees.GEMMDecisionTreeImpl, "tree_traversal": trees.TreeTraversalDecisionTreeImpl,
                  "perfect_tree_traversal": trees.PerfectTreeTraversalDecisionTreeImpl}
    else:
        return []
    return [family.get(strategy, trees.NativeTreeImpl)(strategy)]
