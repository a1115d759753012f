#!/usr/bin/env bash
# Installs (apt only) everything pg_predict needs to build, test and benchmark on Debian 12,
# including what building the vendored Citus needs (scripts/install-citus.sh, which `make test`
# runs; `make run` does not need Citus).
#
#   bash scripts/install-deps.sh         # everything (make test)
#   bash scripts/install-deps.sh --run   # what make run needs: the build and the demo
#   bash scripts/install-deps.sh --deb   # what make deb needs: the build and Debian's packaging
#
# Idempotent: when every package is already installed it touches nothing (no apt-get update).
# The PostgreSQL packages are pinned to one version: the installed server's version when the
# dev/plpython/client packages are available at it, otherwise the candidate version of all of
# them together, so apt never upgrades the server behind our back or mixes 15.x versions.
set -euo pipefail

PG_MAJOR=15
# `--run`: only what `make run` needs (build the extension, run the demo), the first minutes of
# a new user; `make test` installs the rest.
MODE=all
[ "${1:-}" = "--run" ] && MODE=run
[ "${1:-}" = "--deb" ] && MODE=deb
PG_RUN_PACKAGES=(postgresql-$PG_MAJOR postgresql-client-$PG_MAJOR postgresql-server-dev-$PG_MAJOR)
RUN_PACKAGES=(
  # build the extension
  cmake g++ make pkg-config libtorch-dev nlohmann-json3-dev libxgboost-dev libonnx-dev libprotobuf-dev
  # the demo (run with /usr/bin/python3): train with xgboost, register with psycopg
  python3 python3-xgboost python3-numpy python3-psycopg
  # initdb runs as an unprivileged user through runuser
  util-linux
)
# `make deb` (scripts/deb.sh) and its test
DEB_PACKAGES=(debhelper dpkg-dev fakeroot postgresql-server-dev-all)
TEST_PACKAGES=(
  # the unit tests
  libgtest-dev
  # tests and benchmark (run with /usr/bin/python3)
  python3-sklearn python3-torch python3-matplotlib python3-pandas python3-joblib
  # the TAP suite (regress/t/, PostgreSQL::Test::Cluster): IPC::Run and prove
  libipc-run-perl perl
  # the libFuzzer targets (scripts/fuzz.sh)
  clang-14 libfuzzer-14-dev
  # the ONNX importer's tests (python3-onnx)
  python3-onnx
  # `pip install ./python` into a venv (python/pyproject.toml's backend) and its test
  python3-venv python3-setuptools python3-wheel python3-pip
  # building the vendored Citus (scripts/install-citus.sh: keep its BUILD_PACKAGES in sync)
  libzstd-dev liblz4-dev libkrb5-dev libssl-dev libicu-dev
  "${DEB_PACKAGES[@]}"
)
PG_TEST_PACKAGES=(postgresql-plpython3-$PG_MAJOR)
if [ "$MODE" = run ]; then
  PG_PACKAGES=("${PG_RUN_PACKAGES[@]}")
  PACKAGES=("${RUN_PACKAGES[@]}")
elif [ "$MODE" = deb ]; then
  PG_PACKAGES=("${PG_RUN_PACKAGES[@]}")
  PACKAGES=("${RUN_PACKAGES[@]}" "${DEB_PACKAGES[@]}")
else
  PG_PACKAGES=("${PG_RUN_PACKAGES[@]}" "${PG_TEST_PACKAGES[@]}")
  PACKAGES=("${RUN_PACKAGES[@]}" "${TEST_PACKAGES[@]}")
fi

log() { echo "install-deps: $*" >&2; }
die() { echo "install-deps: ERROR: $*" >&2; exit 1; }

[ -r /etc/debian_version ] && command -v apt-get >/dev/null && command -v dpkg-query >/dev/null \
  || die "this script supports Debian (apt) only"

# Installed version of a package, empty when it is not (fully) installed.
installed_version() {
  local status
  status=$(dpkg-query -W -f='${db:Status-Abbrev} ${Version}' "$1" 2>/dev/null) || return 0
  case "$status" in
    ii*) echo "${status##* }" ;;
  esac
}

# Is version $2 of package $1 downloadable/installable?
available() {
  apt-cache madison "$1" 2>/dev/null | awk -F'|' '{gsub(/ /, "", $2); print $2}' | grep -qxF -- "$2"
}

candidate_version() {
  apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2; exit}'
}

# ---- fast path: everything present and the PostgreSQL packages at one version -------------
missing=()
for p in "${PACKAGES[@]}"; do
  [ -n "$(installed_version "$p")" ] || missing+=("$p")
done
pg_versions=()
for p in "${PG_PACKAGES[@]}"; do
  v=$(installed_version "$p")
  if [ -z "$v" ]; then missing+=("$p"); else pg_versions+=("$v"); fi
done
pg_mixed=0
if [ "${#pg_versions[@]}" -gt 0 ] && [ "$(printf '%s\n' "${pg_versions[@]}" | sort -u | wc -l)" -gt 1 ]; then
  pg_mixed=1
fi
if [ "${#missing[@]}" -eq 0 ] && [ "$pg_mixed" -eq 0 ]; then
  log "all packages present (PostgreSQL ${pg_versions[0]}); nothing to do"
  exit 0
fi

# ---- slow path --------------------------------------------------------------------------------
SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || die "not root and no sudo: install as root: ${missing[*]}"
  SUDO=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
APT_OPTS=(-y -q -o Dpkg::Use-Pty=0 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)

[ "${#missing[@]}" -gt 0 ] && log "missing: ${missing[*]}"
[ "$pg_mixed" -eq 1 ] && log "PostgreSQL packages at mixed versions: ${pg_versions[*]}"
log "apt-get update"
"${SUDO[@]}" apt-get update -q -o Dpkg::Use-Pty=0 >/dev/null || die "apt-get update failed"

# Choose the PostgreSQL version.
server_v=$(installed_version postgresql-$PG_MAJOR)
pin=""
if [ -n "$server_v" ]; then
  ok=1
  for p in "${PG_PACKAGES[@]}"; do
    [ "$(installed_version "$p")" = "$server_v" ] || available "$p" "$server_v" || { ok=0; break; }
  done
  if [ "$ok" -eq 1 ]; then
    pin=$server_v
    log "pinning PostgreSQL packages to the installed server's version $pin"
  else
    log "the installed server $server_v has no matching dev/plpython packages in apt"
  fi
fi
if [ -z "$pin" ]; then
  pin=$(candidate_version postgresql-$PG_MAJOR)
  [ -n "$pin" ] && [ "$pin" != "(none)" ] || die "no installable postgresql-$PG_MAJOR in apt sources"
  for p in "${PG_PACKAGES[@]}"; do
    available "$p" "$pin" || die "$p=$pin is not installable (apt-cache madison $p)"
  done
  log "pinning PostgreSQL packages to the candidate version $pin"
fi

pinned=()
for p in "${PG_PACKAGES[@]}"; do pinned+=("$p=$pin"); done

log "apt-get install ${PACKAGES[*]} ${pinned[*]}"
if ! "${SUDO[@]}" apt-get install "${APT_OPTS[@]}" \
       "${PACKAGES[@]}" "${pinned[@]}" >/tmp/pg_predict-install-deps.log 2>&1; then
  tail -n 40 /tmp/pg_predict-install-deps.log >&2
  die "apt-get install failed (full log: /tmp/pg_predict-install-deps.log)"
fi

# Verify: everything installed, PostgreSQL at exactly one version.
for p in "${PACKAGES[@]}"; do
  [ -n "$(installed_version "$p")" ] || die "$p is still not installed"
done
for p in "${PG_PACKAGES[@]}"; do
  v=$(installed_version "$p")
  [ "$v" = "$pin" ] || die "$p is at '${v:-not installed}', expected $pin"
done
command -v pg_config >/dev/null || die "pg_config not on PATH after installing postgresql-server-dev-$PG_MAJOR"
log "done (PostgreSQL $pin)"
