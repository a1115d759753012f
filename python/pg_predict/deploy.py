"""deploy(conn, name, estimator): export and register a model over a psycopg 3 connection."""

import json

from .export import export


def create_model_options(replace=False, strategy=None, options=None):
    opts = dict(options or {})
    if replace:
        opts["replace"] = True
    if strategy is not None:
        opts["strategy"] = strategy
    return opts


def deploy(conn, name, estimator, feature_names=None, replace=False, strategy=None,
           options=None):
    """Export `estimator` and call create_model(name, document, 'sklearn', options) on `conn`.

    conn: a psycopg 3 connection (or a DSN string: connect, deploy, commit, close).
    estimator: a fitted scikit-learn estimator or pipeline, or an already exported document
    (a dict). replace: replace a model of that name; strategy: how trees are compiled
    ('auto', 'native', 'gemm', 'tree_traversal', 'perfect_tree_traversal'); options: other
    create_model options (e.g. {"columns": {"feature": "column"}}).

    Runs in the connection's current transaction: with autocommit off, commit it (psycopg's
    `with psycopg.connect(...) as conn:` commits when the block ends). Returns the document."""
    doc = estimator if isinstance(estimator, dict) else export(estimator, feature_names)
    opts = create_model_options(replace, strategy, options)
    if isinstance(conn, str):
        import psycopg
        with psycopg.connect(conn) as c:  # commits on success
            _create(c, name, doc, opts)
        return doc
    _create(conn, name, doc, opts)
    return doc


def _create(conn, name, doc, opts):
    conn.execute("SELECT create_model(%s, %s::jsonb, 'sklearn', %s::jsonb)",
                 [name, json.dumps(doc, allow_nan=False), json.dumps(opts)])
