# Shared by the scripts in scripts/ (sourced, not run).
# ROOT: the repository root. PG_BINDIR: the bin dir of the PostgreSQL we build for.
# PG_OS_USER: the OS user that runs initdb/postgres/pg_regress (ourselves, or an unprivileged
# one when we are root: $PGPREDICT_USER, default `postgres`). as_pg_user CMD...: runs CMD as it.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}   # Debian's python: sees python3-xgboost, psycopg, torch

die() { echo "$(basename "$0"): ERROR: $*" >&2; exit 1; }
note() { echo "==> $*" >&2; }

pg_setup() {
  PG_CONFIG=${PG_CONFIG:-pg_config}
  PG_BINDIR=$("$PG_CONFIG" --bindir) || die "pg_config failed (bash scripts/install-deps.sh)"
  if [ "$(id -u)" -eq 0 ]; then
    PG_OS_USER=${PGPREDICT_USER:-postgres}
    id "$PG_OS_USER" >/dev/null 2>&1 \
      || die "running as root and OS user '$PG_OS_USER' does not exist (install postgresql-15 or set PGPREDICT_USER)"
  else
    PG_OS_USER=$(id -un)
  fi
  export PG_CONFIG PG_BINDIR PG_OS_USER
}

as_pg_user() {
  if [ "$(id -u)" -eq 0 ] && [ "$PG_OS_USER" != root ]; then
    runuser -u "$PG_OS_USER" -- "$@"
  else
    "$@"
  fi
}

# chown a path (recursively) to PG_OS_USER when we are root.
give_to_pg_user() {
  if [ "$(id -u)" -eq 0 ]; then chown -R "$PG_OS_USER:" "$@"; fi
}

# A TCP port that is free now.
free_port() {
  "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
