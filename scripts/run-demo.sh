#!/usr/bin/env bash
# `make run`: install what is missing, build and install pg_predict, start (or restart) a local
# PostgreSQL 15 in ./.pgdata, load a demo `customers` table, train a demo XGBoost churn model
# with /usr/bin/python3, register it with create_model and show predictions.
#
#   bash scripts/run-demo.sh          # all of the above (idempotent; reuses ./.pgdata)
#   bash scripts/run-demo.sh --stop   # stop the demo server
#
# The server listens only on a unix socket inside ./.pgdata. As root, the cluster belongs to an
# unprivileged OS user ($PGPREDICT_USER, default `postgres`), because initdb refuses root.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

PGDATA_DIR=$ROOT/.pgdata
CONF_NAME=pg_predict_demo.conf
DB=postgres
DB_USER=postgres

running() { as_pg_user "$PG_BINDIR/pg_ctl" -D "$PGDATA_DIR" status >/dev/null 2>&1; }

if [ "${1:-}" = "--stop" ]; then
  pg_setup
  if [ -f "$PGDATA_DIR/PG_VERSION" ] && running; then
    as_pg_user "$PG_BINDIR/pg_ctl" -D "$PGDATA_DIR" -m fast -w stop
  else
    echo "no demo server running in $PGDATA_DIR"
  fi
  exit 0
fi

note "dependencies"
bash "$ROOT/scripts/install-deps.sh" --run
pg_setup

note "build and install"
make -C "$ROOT" --no-print-directory build-extension
make -C "$ROOT" --no-print-directory install >/dev/null

# ---- the cluster --------------------------------------------------------------------------
if [ "$(id -u)" -eq 0 ]; then
  # The unprivileged user must reach ./.pgdata through every parent directory.
  runuser -u "$PG_OS_USER" -- test -x "$ROOT" \
    || die "OS user $PG_OS_USER cannot enter $ROOT; move the checkout or chmod o+x its parents"
fi
sock_len=$(( ${#PGDATA_DIR} + 22 ))
[ "$sock_len" -le 107 ] || die "$PGDATA_DIR is too long a path for a unix socket"

if [ ! -f "$PGDATA_DIR/PG_VERSION" ]; then
  note "initdb $PGDATA_DIR (OS user $PG_OS_USER)"
  [ -e "$PGDATA_DIR" ] && [ -n "$(ls -A "$PGDATA_DIR" 2>/dev/null)" ] \
    && die "$PGDATA_DIR exists but is no PostgreSQL data directory; remove it"
  mkdir -p "$PGDATA_DIR"
  give_to_pg_user "$PGDATA_DIR"
  chmod 700 "$PGDATA_DIR"
  as_pg_user "$PG_BINDIR/initdb" -D "$PGDATA_DIR" -A trust -U "$DB_USER" -E UTF8 --locale=C \
    >"${TMPDIR:-/tmp}/pg_predict-initdb.log" 2>&1 \
    || { cat "${TMPDIR:-/tmp}/pg_predict-initdb.log" >&2; die "initdb failed"; }
  echo "include_if_exists = '$CONF_NAME'" | as_pg_user tee -a "$PGDATA_DIR/postgresql.conf" >/dev/null
fi

# Port: the running server's, else the configured one if still free, else a new free one.
port=""
if running; then
  port=$(sed -n 4p "$PGDATA_DIR/postmaster.pid")
elif [ -f "$PGDATA_DIR/$CONF_NAME" ]; then
  port=$(sed -n "s/^port = \([0-9]*\).*/\1/p" "$PGDATA_DIR/$CONF_NAME")
  if [ -n "$port" ] && ! "$PYTHON" -c "import socket,sys; s=socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1])))" "$port" 2>/dev/null; then
    port=""
  fi
fi
[ -n "$port" ] || port=$(free_port)

as_pg_user tee "$PGDATA_DIR/$CONF_NAME" >/dev/null <<EOF
# written by scripts/run-demo.sh
port = $port
listen_addresses = ''
unix_socket_directories = '$PGDATA_DIR'
shared_preload_libraries = 'pg_predict'
logging_collector = off
EOF

if running; then
  note "restarting the server in $PGDATA_DIR (port $port) to load the freshly installed pg_predict"
  as_pg_user "$PG_BINDIR/pg_ctl" -D "$PGDATA_DIR" -l "$PGDATA_DIR/server.log" -m fast -w -t 60 restart >/dev/null \
    || { tail -n 30 "$PGDATA_DIR/server.log" >&2; die "restart failed"; }
else
  note "starting the server in $PGDATA_DIR (port $port)"
  as_pg_user "$PG_BINDIR/pg_ctl" -D "$PGDATA_DIR" -l "$PGDATA_DIR/server.log" -w -t 60 start >/dev/null \
    || { tail -n 30 "$PGDATA_DIR/server.log" >&2; die "start failed"; }
fi

PSQL=("$PG_BINDIR/psql" -h "$PGDATA_DIR" -p "$port" -U "$DB_USER" -d "$DB" -X -v ON_ERROR_STOP=1)
psql_q() { "${PSQL[@]}" -q "$@"; }

# ---- demo data ----------------------------------------------------------------------------
note "demo table customers (10,000 rows)"
psql_q < "$ROOT/scripts/demo.sql"

note "train the demo model with $PYTHON xgboost and register it as 'churn'"
"$PYTHON" "$ROOT/scripts/demo_model.py" "$PGDATA_DIR" "$port" "$DB_USER" "$DB" "$ROOT/build/churn.json"

note "predictions"
"${PSQL[@]}" <<'SQL'
SELECT id, tenure, monthly_charges, plan_id,
       predict('churn', c)          AS churn,
       (predict_proba('churn', c))[2] AS p_churn
FROM customers c ORDER BY id LIMIT 10;
\x on
SELECT * FROM models;
SQL

note "train in SQL: a new version of 'churn', deployed only when it beats the deployed one on its test split"
"${PSQL[@]}" <<'SQL'
-- churned as 0/1 with a classification objective: labels 0 and 1 as the first version's, so
-- predict() keeps working (a boolean target would give the labels false/true: predict_label())
SELECT train('churn', 'SELECT tenure, monthly_charges, plan_id, churned::int AS churned FROM customers ORDER BY id',
             target => 'churned',
             hyperparams => '{"objective": "binary:logistic", "n_estimators": 50, "max_depth": 4, "eta": 0.2}',
             deploy => 'best') - 'metrics' AS trained;
SELECT name, version, deployed, metrics ->> 'accuracy' AS accuracy, metrics ->> 'roc_auc' AS roc_auc
  FROM model_versions WHERE name = 'churn' ORDER BY version;
SQL

note "versions: deploy one, roll back, and measure the deployed one on held-out rows"
"${PSQL[@]}" <<'SQL'
SELECT deploy_model('churn', 2);              -- the version train() added: predict() uses it now
SELECT name, version AS deployed_version, versions FROM models WHERE name = 'churn';
SELECT rollback_model('churn') AS rolled_back_to;   -- the version deployed before it
SELECT key, value
  FROM jsonb_each(evaluate_model('churn', 'SELECT * FROM customers WHERE id > 8000', target => 'churned'))
 WHERE key IN ('version', 'rows', 'accuracy', 'roc_auc', 'log_loss', 'confusion_matrix') ORDER BY key;
SQL

cat <<EOF

The demo server is running (data directory $PGDATA_DIR, log $PGDATA_DIR/server.log).
Connect:  ${PG_BINDIR}/psql -h $PGDATA_DIR -p $port -U $DB_USER $DB
Try:      SELECT id, predict('churn', c), predict_proba('churn', c) FROM customers c LIMIT 5;
          SELECT predict('churn', ARRAY[12, 70.5, 3]::real[]);
          SELECT * FROM model_versions;  SELECT * FROM model_stats;
The model file is $ROOT/build/churn.json:  \\set model \`cat $ROOT/build/churn.json\`
Stop:     make stop   (or: $( [ "$(id -u)" -eq 0 ] && echo "runuser -u $PG_OS_USER -- " )$PG_BINDIR/pg_ctl -D $PGDATA_DIR stop)
EOF
