"""convert(model, backend, test_input, device, extra_config): deploy a fitted model into
pg_predict with its Python client and return a SqlModel that scores rows with SQL.

The backend ('torch', 'torch.jit', 'onnx', 'tvm', ...) names what Hummingbird would compile
to; here every backend is the same server, so it only has to be one Hummingbird knows. The
device is ignored (the server places the model). extra_config: `tree_implementation` becomes
create_model's strategy; `batch_size` and the others do not change what SQL computes."""

import itertools
import os
import sys

from . import _server
from .constants import TREE_IMPLEMENTATION
from .container import SqlModel
from .exceptions import MissingBackend, MissingConverter

# python/ (the pg_predict client) of this repository.
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "..", "python")))
import pg_predict  # noqa: E402

BACKENDS = {"torch", "pytorch", "torch.jit", "torchscript", "onnx", "tvm"}
STRATEGIES = {"gemm": "gemm", "tree_trav": "tree_traversal", "perf_tree_trav": "perfect_tree_traversal"}
_names = itertools.count(1)

try:
    from sklearn.exceptions import NotFittedError
except ImportError:
    class NotFittedError(Exception):
        pass


def convert(model, backend, test_input=None, device="cpu", extra_config=None):
    extra_config = dict(extra_config or {})
    if backend is None or str(backend).lower() not in BACKENDS:
        raise MissingBackend(f"backend {backend!r} is not one Hummingbird knows")
    strategy = None
    if TREE_IMPLEMENTATION in extra_config:
        tree = extra_config[TREE_IMPLEMENTATION]
        if tree not in STRATEGIES:
            raise MissingConverter(f"tree_implementation {tree!r} is not one of {sorted(STRATEGIES)}")
        strategy = STRATEGIES[tree]
    conn = _server.connection()
    name = f"hb_{os.getpid()}_{next(_names)}"  # one pytest process per file, one server
    options = {}
    if _kind(model).startswith("xgboost."):
        options = _xgboost_feature_names(model)
    try:
        pg_predict.deploy(conn, name, model, strategy=strategy, options=options)
    except NotFittedError:  # as Hummingbird (scikit-learn's check_is_fitted) raises it
        raise
    except pg_predict.ExportError as e:
        raise MissingConverter(f"pg_predict's exporter: {e}") from None
    except Exception as e:  # psycopg.Error: create_model refused it
        if type(e).__module__.startswith("psycopg"):
            raise MissingConverter(f"create_model: {e}") from None
        raise
    return SqlModel(conn, name, model)


def _kind(model):
    return f"{type(model).__module__}.{type(model).__qualname__}"


def _xgboost_feature_names(model):
    """An XGBoost model fitted on NumPy has no feature names: name them f0, f1, ... (XGBoost's
    own default) so that rows of a table can be scored by name."""
    booster = model.get_booster() if hasattr(model, "get_booster") else model
    if booster.feature_names:
        return {}
    return {"features": [f"f{i}" for i in range(booster.num_features())]}
