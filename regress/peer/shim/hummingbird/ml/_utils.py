"""The `*_installed()` checks the tests skip on: whether the library is importable here
(Debian lacks onnxruntime, onnxmltools, tvm, lightgbm, prophet, pyspark)."""

import importlib.util
import os


def _importable(name):
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def torch_installed():
    return _importable("torch")


def sklearn_installed():
    return _importable("sklearn")


def xgboost_installed():
    return _importable("xgboost")


def lightgbm_installed():
    return _importable("lightgbm")


def onnx_runtime_installed():
    return _importable("onnxruntime") and _importable("onnx")


def onnx_ml_tools_installed():
    return _importable("onnxmltools")


def sparkml_installed():
    return _importable("pyspark")


def tvm_installed():
    return _importable("tvm")


def pandas_installed():
    return _importable("pandas")


def prophet_installed():
    return _importable("prophet")


def is_on_github_actions():
    return os.environ.get("GITHUB_ACTIONS") == "true"


def is_pandas_dataframe(df):
    return type(df).__module__.startswith("pandas.") and type(df).__name__ == "DataFrame"
