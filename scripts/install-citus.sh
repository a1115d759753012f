#!/usr/bin/env bash
# Builds and installs Citus from the vendored, pinned source archive
# third_party/citus/citus-$CITUS_VERSION.tar.gz (no network except apt for its build packages)
# into the PostgreSQL that pg_config names ($PG_CONFIG, default pg_config on PATH).
# Run by scripts/install-deps.sh after the apt packages; needs root or sudo to install.
#
# Idempotent: a stamp file next to citus.control records the version, the archive's sha256 and
# the installed citus.so's sha256. When the stamp matches the archive and the citus.so now
# installed, it prints one line and exits 0 without building (and without touching apt).
# Otherwise it installs the missing build packages, builds in build-citus/ (git-ignored;
# removed after a successful install, kept with its logs after a failure) and installs.
#
# Environment: PG_CONFIG, CITUS_JOBS (make -j, default nproc), CITUS_FORCE=1 (rebuild anyway).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

CITUS_VERSION=13.2.2
# sha256 of third_party/citus/citus-$CITUS_VERSION.tar.gz (see third_party/citus/README.md).
CITUS_TARBALL_SHA256=56fa053b379fb9f9cd235819bcad1043a6ac7a472a2dafb37c106bf87dce7921
# Build packages beyond what postgresql-server-dev-15 brings (it brings gcc, clang-14 for the
# JIT bitcode, libssl-dev, libicu-dev): columnar's compressors and the gssapi headers that
# PostgreSQL's libpq-be.h includes. Keep in sync with scripts/install-deps.sh.
BUILD_PACKAGES=(make gcc libzstd-dev liblz4-dev libkrb5-dev libssl-dev libicu-dev)

TARBALL=$ROOT/third_party/citus/citus-$CITUS_VERSION.tar.gz
BUILD_DIR=$ROOT/build-citus
LOCK=${TMPDIR:-/tmp}/pg_predict-install-citus.lock

log() { echo "install-citus: $*" >&2; }
die() { echo "install-citus: ERROR: $*" >&2; exit 1; }

PG_CONFIG=${PG_CONFIG:-pg_config}
PG_CONFIG=$(command -v "$PG_CONFIG") || die "no pg_config (run scripts/install-deps.sh first)"
PKGLIBDIR=$("$PG_CONFIG" --pkglibdir)
EXTDIR=$("$PG_CONFIG" --sharedir)/extension
STAMP=$EXTDIR/citus.pg_predict-vendored

# The stamp's expected first two lines; the third records citus.so's sha256.
want_stamp() { printf 'version=%s\ntarball_sha256=%s\n' "$CITUS_VERSION" "$CITUS_TARBALL_SHA256"; }

installed_ok() {
  [ "${CITUS_FORCE:-0}" != 1 ] && [ -f "$PKGLIBDIR/citus.so" ] && [ -f "$EXTDIR/citus.control" ] \
    && [ -f "$STAMP" ] || return 1
  [ "$(head -n 2 "$STAMP")" = "$(want_stamp)" ] || return 1
  local so
  so=$(sha256sum "$PKGLIBDIR/citus.so" | cut -d' ' -f1)
  [ "$(sed -n 3p "$STAMP")" = "citus_so_sha256=$so" ]
}

if installed_ok; then
  log "Citus $CITUS_VERSION (vendored) already installed in $PKGLIBDIR; nothing to do"
  exit 0
fi

# ---- slow path: one build at a time (make test and make run may both call us) ---------------
command -v flock >/dev/null || die "no flock (apt-get install util-linux)"
exec 9>"$LOCK"
flock 9
if installed_ok; then
  log "Citus $CITUS_VERSION (vendored) was installed by a concurrent run; nothing to do"
  exit 0
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || die "not root and no sudo: cannot install Citus into $PKGLIBDIR"
  SUDO=(sudo)
fi

[ -f "$TARBALL" ] || die "missing $TARBALL"
sum=$(sha256sum "$TARBALL" | cut -d' ' -f1)
[ "$sum" = "$CITUS_TARBALL_SHA256" ] \
  || die "$TARBALL has sha256 $sum, expected $CITUS_TARBALL_SHA256 (update both together)"

# Build packages (apt only; apt-get update only when something is missing).
missing=()
for p in "${BUILD_PACKAGES[@]}"; do
  dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^ii' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing build packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt_log=${TMPDIR:-/tmp}/pg_predict-install-citus-apt.log
  if ! { "${SUDO[@]}" apt-get update -q -o Dpkg::Use-Pty=0 \
         && "${SUDO[@]}" apt-get install -y -q -o Dpkg::Use-Pty=0 "${missing[@]}"; } >"$apt_log" 2>&1; then
    tail -n 30 "$apt_log" >&2
    die "apt-get install ${missing[*]} failed (full log: $apt_log)"
  fi
fi

jobs=${CITUS_JOBS:-$(nproc 2>/dev/null || echo 2)}
log "building Citus $CITUS_VERSION for $("$PG_CONFIG" --version) in $BUILD_DIR (make -j$jobs; a few minutes)"
start=$SECONDS
rm -rf "$BUILD_DIR"
mkdir -p "$BUILD_DIR"
tar -xzf "$TARBALL" -C "$BUILD_DIR"
SRC=$BUILD_DIR/citus-$CITUS_VERSION
[ -x "$SRC/configure" ] || die "$TARBALL has no citus-$CITUS_VERSION/configure"

# step NAME CMD...: runs CMD in $SRC with its output in $BUILD_DIR/NAME.log; on failure shows
# the errors and the log's tail and stops.
step() {
  local name=$1 log=$BUILD_DIR/$1.log
  shift
  if ! (cd "$SRC" && "$@") >"$log" 2>&1; then
    grep -E 'error:|Error [0-9]|\*\*\*' "$log" | head -n 20 >&2 || true
    echo "----- last 30 lines of $log" >&2
    tail -n 30 "$log" >&2
    die "Citus $name failed (log: $log)"
  fi
}
# libcurl only serves Citus's anonymous statistics collection: built without it.
step configure env PG_CONFIG="$PG_CONFIG" ./configure --without-libcurl
step make make -j"$jobs"
step install "${SUDO[@]}" make install

[ -f "$PKGLIBDIR/citus.so" ] || die "make install left no $PKGLIBDIR/citus.so"
so=$(sha256sum "$PKGLIBDIR/citus.so" | cut -d' ' -f1)
{ want_stamp; echo "citus_so_sha256=$so"; } | "${SUDO[@]}" tee "$STAMP" >/dev/null
installed_ok || die "the stamp $STAMP does not match after installing"
rm -rf "$BUILD_DIR"
log "installed Citus $CITUS_VERSION into $PKGLIBDIR in $((SECONDS - start)) s" \
    "(default_version $(sed -n "s/^default_version = '\(.*\)'/\1/p" "$EXTDIR/citus.control"))"
