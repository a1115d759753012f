#!/usr/bin/env bash
# make wheel: the Python client (python/) as a wheel in dist/ (WHEEL_DIR=... elsewhere). It is
# built from a temporary copy, so setuptools' build/ and *.egg-info never land in the source tree
# and a read-only checkout works; no network (Debian's setuptools and wheel, --no-index).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${WHEEL_DIR:-$ROOT/dist}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$ROOT/python" "$tmp/python"
rm -rf "$tmp/python/build" "$tmp/python"/*.egg-info
mkdir -p "$OUT"
(cd "$tmp" && /usr/bin/python3 -m pip wheel --isolated --no-deps --no-build-isolation --no-index -q -w "$OUT" ./python)
ls "$OUT"/pg_predict-*.whl
