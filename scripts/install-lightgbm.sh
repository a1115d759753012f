#!/usr/bin/env bash
# Builds LightGBM's library (lib_lightgbm.so) and installs its Python package from the pinned
# source archives in third_party/lightgbm/ (LightGBM 4.6.0, fast_double_parser 0.8.0, fmt 11.1.2;
# Eigen from Debian's libeigen3-dev), with no network except Debian's apt. A bench-only
# dependency (bench/deep_trees.py): `make test`, `make run` and .ci/run never call this script.
#
#   bash scripts/install-lightgbm.sh
#   /usr/bin/python3 -c "import sys; sys.path.insert(0, '/usr/local/lib/pg_predict-bench/lightgbm'); import lightgbm"
#
# Result: $LIGHTGBM_PREFIX/lightgbm/ is LightGBM's python-package/lightgbm/ with VERSION.txt and
# lib/lib_lightgbm.so (where lightgbm/libpath.py looks for the library). Nothing is put on
# Python's default path: the bench inserts $LIGHTGBM_PREFIX into sys.path itself (so the
# extension's own test suites, which skip what needs an importable lightgbm, behave as before);
# `PYTHONPATH=$LIGHTGBM_PREFIX /usr/bin/python3 ...` does the same by hand.
#
# Idempotent: the stamp $LIGHTGBM_PREFIX/pg_predict-bench.stamp records the version, the three
# archives' sha256 and the installed library's sha256. When it matches, the script prints one
# line and exits 0 (well under a second; no apt, no build). Otherwise it checks the archives'
# sha256, installs the missing apt packages, unpacks into $LIGHTGBM_BUILD_DIR (outside the
# source tree; removed after a successful install, kept with its logs after a failure), builds
# with cmake (Release, OpenMP, LightGBM's own flags: -O3 -funroll-loops, no -march, as its
# wheels), checks that the package imports, trains and predicts, and installs.
#
# Environment: LIGHTGBM_PREFIX (default /usr/local/lib/pg_predict-bench/lightgbm),
# LIGHTGBM_BUILD_DIR (default ${TMPDIR:-/tmp}/pg_predict-lightgbm-build), LIGHTGBM_JOBS (make -j,
# default nproc), LIGHTGBM_NICE (nice level of the compile, default 15), LIGHTGBM_FORCE=1
# (rebuild anyway), PYTHON (default /usr/bin/python3).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

LIGHTGBM_VERSION=4.6.0
# sha256 of the archives in third_party/lightgbm/ (see third_party/lightgbm/README.md).
ARCHIVES=(
  "lightgbm-$LIGHTGBM_VERSION.tar.gz 75de6390b5c74cb54b12746b33f788561144d2cc52f4248bad8c949a30a92ca4"
  "fast_double_parser-0.8.0.tar.gz b4f267165e78bbd7e4c16cdf644039a8f6d08db47af32af46b74072bc98660dc"
  "fmt-11.1.2.tar.gz bce8ffe0d737d1f5d5a7f0bcba60ac3eedbccac92dab50b20595c54fabea05e9"
)
# cmake and a C++ compiler with OpenMP (g++ brings libgomp), Eigen's headers (linear trees), and
# what the Python package imports (numpy, scipy; scikit-learn and pandas are optional for it).
APT_PACKAGES=(cmake make g++ libeigen3-dev python3-numpy python3-scipy)
EIGEN_INCLUDE=/usr/include/eigen3

PREFIX=${LIGHTGBM_PREFIX:-/usr/local/lib/pg_predict-bench/lightgbm}
BUILD_DIR=${LIGHTGBM_BUILD_DIR:-${TMPDIR:-/tmp}/pg_predict-lightgbm-build}
STAMP=$PREFIX/pg_predict-bench.stamp
LIB=$PREFIX/lightgbm/lib/lib_lightgbm.so
DIST=$ROOT/third_party/lightgbm
LOCK=${TMPDIR:-/tmp}/pg_predict-install-lightgbm.lock

log() { echo "install-lightgbm: $*" >&2; }
die() { echo "install-lightgbm: ERROR: $*" >&2; exit 1; }

# The stamp's expected lines but the last (which records lib_lightgbm.so's sha256).
want_stamp() {
  echo "version=$LIGHTGBM_VERSION"
  local entry
  for entry in "${ARCHIVES[@]}"; do echo "${entry% *}=${entry#* }"; done
}

# The archives present and as pinned (cheap: under 1 MB in all).
archives_ok() {
  local entry file sum
  for entry in "${ARCHIVES[@]}"; do
    file=$DIST/${entry% *}
    [ -f "$file" ] || { log "missing $file"; return 1; }
    sum=$(sha256sum "$file" | cut -d' ' -f1)
    [ "$sum" = "${entry#* }" ] || { log "$file has sha256 $sum, expected ${entry#* } (update both together)"; return 1; }
  done
}

installed_ok() {
  [ "${LIGHTGBM_FORCE:-0}" != 1 ] && [ -f "$STAMP" ] && [ -f "$LIB" ] \
    && [ -f "$PREFIX/lightgbm/__init__.py" ] || return 1
  local n
  n=$(want_stamp | wc -l)
  [ "$(head -n "$n" "$STAMP")" = "$(want_stamp)" ] || return 1
  [ "$(sed -n "$((n + 1))p" "$STAMP")" = "lib_lightgbm_so_sha256=$(sha256sum "$LIB" | cut -d' ' -f1)" ]
}

archives_ok || die "the archives in $DIST do not match this script"
if installed_ok; then
  log "LightGBM $LIGHTGBM_VERSION already installed in $PREFIX; nothing to do"
  exit 0
fi

# ---- slow path: one build at a time ---------------------------------------------------------
command -v flock >/dev/null || die "no flock (apt-get install util-linux)"
exec 9>"$LOCK"
flock 9
if installed_ok; then
  log "LightGBM $LIGHTGBM_VERSION was installed by a concurrent run; nothing to do"
  exit 0
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null && SUDO=(sudo)
fi

# apt packages (apt-get update only when something is missing).
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^ii' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  [ "$(id -u)" -eq 0 ] || [ "${#SUDO[@]}" -gt 0 ] || die "not root and no sudo: cannot apt-get install ${missing[*]}"
  log "installing apt packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt_log=${TMPDIR:-/tmp}/pg_predict-install-lightgbm-apt.log
  if ! { "${SUDO[@]}" apt-get update -q -o Dpkg::Use-Pty=0 \
         && "${SUDO[@]}" apt-get install -y -q -o Dpkg::Use-Pty=0 "${missing[@]}"; } >"$apt_log" 2>&1; then
    tail -n 30 "$apt_log" >&2
    die "apt-get install ${missing[*]} failed (full log: $apt_log)"
  fi
fi
[ -f "$EIGEN_INCLUDE/Eigen/Dense" ] || die "no $EIGEN_INCLUDE/Eigen/Dense (libeigen3-dev)"

jobs=${LIGHTGBM_JOBS:-$(nproc 2>/dev/null || echo 2)}
log "building LightGBM $LIGHTGBM_VERSION in $BUILD_DIR (cmake, make -j$jobs, nice ${LIGHTGBM_NICE:-15}; several minutes)"
start=$SECONDS
rm -rf "$BUILD_DIR"
mkdir -p "$BUILD_DIR"
for entry in "${ARCHIVES[@]}"; do tar -xzf "$DIST/${entry% *}" -C "$BUILD_DIR"; done
SRC=$BUILD_DIR/lightgbm-$LIGHTGBM_VERSION
[ -f "$SRC/CMakeLists.txt" ] || die "no $SRC/CMakeLists.txt"
# LightGBM's CMakeLists.txt takes its header-only dependencies from the git submodules'
# paths (EIGEN_DIR, FAST_DOUBLE_PARSER_INCLUDE_DIR, FMT_INCLUDE_DIR under external_libs/),
# empty directories in the archive: the two other archives go there, and Eigen is Debian's.
for dep in fast_double_parser:fast_double_parser-0.8.0 fmt:fmt-11.1.2 eigen:$EIGEN_INCLUDE; do
  name=${dep%%:*} target=${dep#*:}
  [ "${target#/}" != "$target" ] || target=$BUILD_DIR/$target
  rmdir "$SRC/external_libs/$name"
  ln -s "$target" "$SRC/external_libs/$name"
done
# 4.6.0 asks for CMake 3.28 (raised upstream for FetchContent_MakeAvailable in
# cmake/IntegratedOpenCL.cmake, which only the __INTEGRATE_OPENCL Windows build includes);
# Debian 12 has 3.25. 3.18 is what it asked for before (LightGBM commit 3175a9122).
sed -i 's/^cmake_minimum_required(VERSION 3\.28)$/cmake_minimum_required(VERSION 3.18)/' "$SRC/CMakeLists.txt"
grep -q '^cmake_minimum_required(VERSION 3.18)$' "$SRC/CMakeLists.txt" || die "unexpected cmake_minimum_required in $SRC/CMakeLists.txt"

# step NAME CMD...: runs CMD with its output in $BUILD_DIR/NAME.log; on failure shows the
# errors and the log's tail and stops.
step() {
  local name=$1 log=$BUILD_DIR/$1.log
  shift
  if ! "$@" >"$log" 2>&1; then
    grep -E 'error:|Error [0-9]|CMake Error' "$log" | head -n 20 >&2 || true
    echo "----- last 30 lines of $log" >&2
    tail -n 30 "$log" >&2
    die "LightGBM $name failed (log: $log)"
  fi
}
# __BUILD_FOR_PYTHON: the library alone (no CLI, no headers installed), as its wheels are built.
step configure cmake -S "$SRC" -B "$BUILD_DIR/cmake" -DCMAKE_BUILD_TYPE=Release -DUSE_OPENMP=ON \
  -D__BUILD_FOR_PYTHON=ON -DBUILD_CLI=OFF
step build nice -n "${LIGHTGBM_NICE:-15}" cmake --build "$BUILD_DIR/cmake" -j "$jobs"
[ -f "$SRC/lib_lightgbm.so" ] || die "the build left no $SRC/lib_lightgbm.so"
log "built lib_lightgbm.so in $((SECONDS - start)) s"

# The package as the wheel lays it out: lightgbm/VERSION.txt, lightgbm/lib/lib_lightgbm.so.
STAGE=$BUILD_DIR/prefix
mkdir -p "$STAGE"
cp -r "$SRC/python-package/lightgbm" "$STAGE/lightgbm"
cp "$SRC/VERSION.txt" "$STAGE/lightgbm/VERSION.txt"
mkdir -p "$STAGE/lightgbm/lib"
cp "$SRC/lib_lightgbm.so" "$STAGE/lightgbm/lib/lib_lightgbm.so"
cp "$SRC/LICENSE" "$STAGE/lightgbm/LICENSE"
"$PYTHON" -m compileall -q "$STAGE/lightgbm" >/dev/null

# Check before installing: it imports, trains, predicts, writes and reads a model.
step check env -u PYTHONPATH "$PYTHON" - "$STAGE" "$LIGHTGBM_VERSION" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import lightgbm
assert lightgbm.__version__ == sys.argv[2], lightgbm.__version__
assert lightgbm.basic._LIB._name.startswith(sys.argv[1]), lightgbm.basic._LIB._name
rng = np.random.default_rng(0)
X = rng.standard_normal((2000, 5)).astype(np.float32)
y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(np.float64)
booster = lightgbm.train({"objective": "binary", "num_leaves": 15, "verbose": -1, "num_threads": 1},
                         lightgbm.Dataset(X, y), num_boost_round=20)
p = booster.predict(X, num_threads=2)
text = booster.model_to_string()
again = lightgbm.Booster(model_str=text).predict(X, num_threads=1)
assert text.startswith("tree\nversion=v4"), text[:40]
assert np.array_equal(p, again) and ((p > 0.5) == (y > 0.5)).mean() > 0.8
print("lightgbm", lightgbm.__version__, "ok:", lightgbm.basic._LIB._name)
EOF

so=$(sha256sum "$STAGE/lightgbm/lib/lib_lightgbm.so" | cut -d' ' -f1)
{ want_stamp; echo "lib_lightgbm_so_sha256=$so"; } >"$STAGE/pg_predict-bench.stamp"

# Install: replace $PREFIX by the staged tree (sudo only when its parent is not ours to write).
PSUDO=()
parent=$(dirname "$PREFIX")
probe=$parent
while [ ! -d "$probe" ]; do probe=$(dirname "$probe"); done
if [ ! -w "$probe" ] || { [ -e "$PREFIX" ] && [ ! -w "$parent" ]; }; then
  [ "${#SUDO[@]}" -gt 0 ] || die "cannot write $PREFIX (not root, no sudo): set LIGHTGBM_PREFIX"
  PSUDO=("${SUDO[@]}")
fi
"${PSUDO[@]}" mkdir -p "$parent"
"${PSUDO[@]}" rm -rf "$PREFIX.new"
"${PSUDO[@]}" cp -r "$STAGE" "$PREFIX.new"
"${PSUDO[@]}" rm -rf "$PREFIX"
"${PSUDO[@]}" mv "$PREFIX.new" "$PREFIX"
installed_ok || die "the stamp $STAMP does not match after installing"
rm -rf "$BUILD_DIR"
log "installed LightGBM $LIGHTGBM_VERSION into $PREFIX in $((SECONDS - start)) s" \
    "(use: PYTHONPATH=$PREFIX $PYTHON -c 'import lightgbm')"
