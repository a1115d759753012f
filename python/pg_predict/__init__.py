"""pg_predict's Python client: export fitted scikit-learn pipelines to pg_predict's sklearn
format (src/spec/SKLEARN_FORMAT.md) and register them in PostgreSQL.

    from pg_predict import export, deploy
    doc = export(pipeline)                      # a JSON-ready dict
    deploy(conn, "churn", pipeline)             # SELECT create_model('churn', doc, 'sklearn', ...)
"""

from . import ensemble  # adds the meta-estimators to estimator_registry.py's tables
from ._common import ExportError
from .deploy import deploy
from .export import export, supported

__all__ = ["export", "deploy", "supported", "ExportError"]
__version__ = "0.9.0"  # = default_version in control/pg_predict.control
