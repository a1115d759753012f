#!/usr/bin/env bash
# The differential oracle over generated query shapes (regress/conformance/test_query_shapes.py),
# a long series with a random seed: `bash scripts/query-shapes.sh [QUERIES] [SEED]`
# (default 100000 queries, a random seed). Every query that disagreed is appended to
# build/query-shapes/failures-SEED.sql; make it a fixed case in regress/sql/query_shapes.sql.
# Needs the extension installed (make install). make test runs the same oracle with 300 queries
# and seed 46.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
QUERIES=${1:-100000}
SEED=${2:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
mkdir -p "$ROOT/build/query-shapes"
FAILURES=$ROOT/build/query-shapes/failures-$SEED.sql
echo "query-shapes: $QUERIES queries, seed $SEED; failures go to $FAILURES"
SHAPES_QUERIES=$QUERIES SHAPES_SEED=$SEED SHAPES_FAILURES=$FAILURES \
  /usr/bin/python3 "$ROOT/regress/conformance/test_query_shapes.py"
