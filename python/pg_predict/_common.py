"""Shared pieces of the exporter: the error type, the export context and JSON-safe numbers."""

import math
import numbers

import numpy as np


class ExportError(ValueError):
    """An estimator (or one of its parameters) that the sklearn format cannot express.
    The message names the estimator, the parameter and where it sits in the pipeline."""


try:
    from sklearn.exceptions import NotFittedError as _NotFittedError
except ImportError:  # the client also deploys XGBoost, ONNX, ... without scikit-learn
    class _NotFittedError(ValueError, AttributeError):
        pass


class NotFittedExportError(ExportError, _NotFittedError):
    """export() of an estimator that is not fitted: both an ExportError and scikit-learn's
    NotFittedError, so code that catches either (as scikit-learn's own callers do) sees it."""


def describe(est, param=None):
    """'OneHotEncoder' or 'OneHotEncoder(min_frequency=5)'."""
    name = type(est).__name__ if not isinstance(est, str) else est
    if param is None:
        return name
    value = getattr(est, param, None) if not isinstance(est, str) else None
    return f"{name}({param}={value!r})"


def to_json_number(x):
    """A Python int/float for JSON; NaN and ±inf become the strings the format names."""
    if isinstance(x, (bool, np.bool_)):
        return int(x)
    if isinstance(x, numbers.Integral):
        return int(x)
    x = float(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return x


def floats(a):
    """A float array (any shape) as nested lists of JSON numbers."""
    a = np.asarray(a, dtype=np.float64)
    if a.ndim == 0:
        return to_json_number(a.item())
    if np.isfinite(a).all():
        return a.tolist()
    return [floats(row) for row in a] if a.ndim > 1 else [to_json_number(v) for v in a.tolist()]


def ints(a):
    return np.asarray(a, dtype=np.int64).tolist()


def optional_floats(a):
    return None if a is None else floats(a)


def label(x):
    """A class label as a JSON number: an int when it is integral."""
    x = float(x)
    return int(x) if x.is_integer() and abs(x) < 2 ** 53 else to_json_number(x)


def label_kind(c):
    """'number', 'string' or 'boolean' for a class label, None for anything else."""
    if isinstance(c, (bool, np.bool_)):
        return "boolean"
    if isinstance(c, (numbers.Real, np.integer, np.floating)):
        return "number"
    if isinstance(c, (str, np.str_)):
        return "string"
    return None


def class_labels(model, ctx):
    """classes_ as JSON values of one type: numbers (predict() returns them), strings or booleans
    (predict_label() returns them as text)."""
    classes = getattr(model, "classes_", None)
    if classes is None:
        ctx.refuse(model, None, "it has no classes_")
    if isinstance(classes, list) or np.ndim(classes) != 1:
        ctx.refuse(model, None, "multi-output classification is not supported")
    kinds = [label_kind(c) for c in classes]
    for c, kind in zip(classes, kinds):
        if kind is None:
            ctx.refuse(model, None, f"the class label {c!r} is a {type(c).__name__}; labels must be "
                       "numbers, strings or booleans")
    if len(set(kinds)) > 1:
        ctx.refuse(model, None, f"its class labels mix {' and '.join(k + 's' for k in sorted(set(kinds)))} "
                   f"({list(classes)[:5]!r}); the labels of one classifier must have one type")
    out = []
    for c in classes:
        if isinstance(c, (bool, np.bool_)):
            out.append(bool(c))
        elif isinstance(c, (str, np.str_)):
            if "\0" in c:
                ctx.refuse(model, None, f"the class label {c!r} contains a NUL character, which "
                           "PostgreSQL's text cannot hold")
            out.append(str(c))
        elif isinstance(c, (numbers.Integral, np.integer)) and int(float(c)) != int(c):
            ctx.refuse(model, None, f"the class label {c} is not exactly a float8 (predict "
                       "returns float8); encode the labels, e.g. with LabelEncoder")
        elif not np.isfinite(float(c)):
            ctx.refuse(model, None, f"the class label {c} is not a finite number")
        else:
            out.append(label(c))
    return out


class Context:
    """What the exporter learns while it walks the pipeline.

    Each position of the vector a step reads is described by a *source*: the index of the input
    column it carries unchanged (or only imputed), or None for a derived value. Encoders whose
    categories are strings mark their sources as text inputs; every other step that reads an
    input column unchanged records a numeric use, and the two must not meet.
    """

    def __init__(self, input_names):
        self.input_names = list(input_names)
        self.path = []            # names of the enclosing steps, for messages
        self.text_by = {}         # input index -> describe(encoder) that reads it as text
        self.numeric_by = {}      # input index -> describe(step) that reads it as a number

    def where(self):
        return f" at step {' > '.join(repr(p) for p in self.path)}" if self.path else ""

    def refuse(self, est, param, why):
        raise ExportError(f"cannot export {describe(est, param)}{self.where()}: {why}")

    def read_numeric(self, est, sources):
        for s in sources:
            if s is not None:
                self.numeric_by.setdefault(s, describe(est) + self.where())

    def read_text(self, est, source, column):
        if source is None:
            self.refuse(est, "categories",
                        f"column {column} has string categories but is not an input column "
                        "(text may only flow from an input column, through SimpleImputer, "
                        "into a OneHotEncoder or OrdinalEncoder)")
        self.text_by.setdefault(source, describe(est) + self.where())

    def check_types(self):
        for s, reader in self.text_by.items():
            if s in self.numeric_by:
                raise ExportError(
                    f"cannot export: input column {self.input_names[s]!r} is read as text by "
                    f"{reader} and as a number by {self.numeric_by[s]}")
