"""One backend's memory stays flat: over create / replace / drop cycles of a small model, over
create / drop cycles of a 2000-tree model, and over 10^7 predictions.

The backend's private resident memory (RssAnon of /proc/<backend pid>/status: its heap, libtorch's
tensors, PostgreSQL's memory contexts) is read while the backend is idle, after a warm-up
(libtorch's lazily built state, PostgreSQL's caches, the allocator's arenas), and must not grow
by more than a few MB over the measured cycles. VmRSS is printed too but not bounded: it also
counts the shared buffers the backend has touched (RssShmem), which grow as the catalog table is
written until shared_buffers is reached, shared by every backend. Memory bounds only; never a
time.

    /usr/bin/python3 regress/runtime/test_soak.py [-k name]     (scripts/test.sh: suite soak)
"""

import contextlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conformance"))
from harness import Failure, main, test
from pgcluster import Cluster
from synthetic_models import create_feature_table, xgboost_model

FEATURES = 4
SMALL_CYCLES = int(os.environ.get("SOAK_SMALL_CYCLES", "120"))
BIG_CYCLES = int(os.environ.get("SOAK_BIG_CYCLES", "12"))
MB = 1 << 20


def memory(pid):
    """{"RssAnon": bytes, "VmRSS": bytes, ...} of a process."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssShmem"):
                out[key] = int(value.split()[0]) * 1024
    if "RssAnon" not in out:
        raise Failure(f"no RssAnon for backend {pid}")
    return out


@contextlib.contextmanager
def make_env():
    with Cluster() as pg:
        with pg.connect() as conn:
            conn.execute("CREATE EXTENSION pg_predict")
            create_feature_table(conn, 1000000, FEATURES)
            conn.execute("CREATE TABLE docs (name text PRIMARY KEY, doc jsonb)")
            for name, doc in {"small_a": xgboost_model(10, 3, FEATURES, seed=1),
                              "small_b": xgboost_model(12, 3, FEATURES, seed=2),
                              "big": xgboost_model(2000, 6, FEATURES, seed=3)}.items():
                conn.execute("INSERT INTO docs VALUES (%s, %s::jsonb)", (name, doc))
        yield pg


def measure(pg, cycle, warmup, cycles, allowed_mb):
    """Runs cycle(conn) warmup times, then `cycles` times; fails when the backend's private
    memory grew by more than allowed_mb over the measured cycles. Returns the growth in MB."""
    with pg.connect() as conn:
        pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        for _ in range(warmup):
            cycle(conn)
        before = memory(pid)
        for _ in range(cycles):
            cycle(conn)
        after = memory(pid)
    print("    " + ", ".join(f"{k} {before[k] / MB:.1f} -> {after[k] / MB:.1f} MB"
                             for k in ("RssAnon", "RssShmem", "VmRSS")) + f" over {cycles} cycles",
          flush=True)
    grown = (after["RssAnon"] - before["RssAnon"]) / MB
    if grown > allowed_mb:
        raise Failure(f"the backend's private memory grew {grown:.1f} MB over {cycles} cycles "
                      f"(from {before['RssAnon'] / MB:.1f} MB), allowed {allowed_mb} MB")
    return grown


def small_cycle(conn):
    conn.execute("SELECT create_model('s', doc) FROM docs WHERE name = 'small_a'")
    conn.execute("SELECT sum(predict('s', t)) FROM t WHERE id <= 2000")
    conn.execute("SELECT create_model('s', doc, options => '{\"replace\": true}') "
                 "FROM docs WHERE name = 'small_b'")
    conn.execute("SELECT sum(predict('s', t)) FROM t WHERE id <= 2000")
    conn.execute("SELECT drop_model('s')")


def big_cycle(conn):
    conn.execute("SELECT create_model('b', doc) FROM docs WHERE name = 'big'")
    conn.execute("SELECT sum(predict('b', t)) FROM t WHERE id <= 2000")
    conn.execute("SELECT drop_model('b')")


@test
def replace_cycles_small_model(pg):
    measure(pg, small_cycle, warmup=50, cycles=SMALL_CYCLES, allowed_mb=4)


@test
def create_drop_cycles_2000_trees(pg):
    measure(pg, big_cycle, warmup=5, cycles=BIG_CYCLES, allowed_mb=6)


@test
def ten_million_predictions(pg):
    with pg.connect() as conn:
        conn.execute("SELECT create_model('p', doc) FROM docs WHERE name = 'small_a'")

    def scan(conn):
        n = conn.execute("SELECT count(predict('p', t)) FROM t").fetchone()[0]
        if n != 1000000:
            raise Failure(f"scored {n} rows, expected 1000000")
    measure(pg, scan, warmup=2, cycles=10, allowed_mb=2)


if __name__ == "__main__":
    main(fixture=make_env, suite="soak")
