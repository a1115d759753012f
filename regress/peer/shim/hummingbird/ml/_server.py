"""The pg_predict server the stand-in deploys into: $PEER_DSN when set, else a throwaway
cluster (regress/pgcluster.py, run as an unprivileged user when we are root) started on first
use and stopped when the interpreter exits."""

import atexit
import os
import sys

_conn = None
_cluster = None


def connection():
    global _conn, _cluster
    if _conn is not None and not _conn.closed:
        return _conn
    import psycopg
    dsn = os.environ.get("PEER_DSN")
    if not dsn:
        regress = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..")
        sys.path.insert(0, os.path.abspath(regress))
        from pgcluster import Cluster
        _cluster = Cluster(prefix="pg_predict-peer-")
        _cluster.__enter__()
        atexit.register(_stop)
        dsn = _cluster.dsn
    _conn = psycopg.connect(dsn, autocommit=True)
    _conn.execute("CREATE EXTENSION IF NOT EXISTS pg_predict")
    return _conn


def _stop():
    global _conn
    if _conn is not None:
        _conn.close()
        _conn = None
    if _cluster is not None:
        _cluster.__exit__(None, None, None)
