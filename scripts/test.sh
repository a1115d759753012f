#!/usr/bin/env bash
# `make test`: install what is missing, build, install the extension, then run every suite:
#   unit         build/unit_tests (GoogleTest)
#   pg_regress   regress/sql + regress/expected with regress/schedule, on a temporary instance
#                (its output goes to a temporary directory, never into the source tree)
#   conformance  every regress/conformance/test_*.py (/usr/bin/python3)
#   isolation    regress/isolation/specs with pg_isolation_regress (concurrent sessions)
#   tap          regress/t/*.pl with PostgreSQL's TAP framework (prove): hot standby,
#                dump/restore, crash recovery, upgrades, Citus (a coordinator and two workers)
#   cancel       regress/runtime/test_cancel.py: cancel, timeout, terminate in every phase
#   soak         regress/runtime/test_soak.py: one backend's private memory over many cycles
#   fuzz         each libFuzzer target of regress/fuzz/ over a fixed series of inputs (scripts/fuzz.sh replay)
# Each suite reports its counts; the last line is '<N> passed, <M> failed' summed over all
# suites. A suite that cannot run counts as failed, never as skipped. Exit status 0 iff M = 0.
#
# Environment: PGPREDICT_USER (OS user for initdb/pg_regress when root; default postgres),
# TEST_SUITES (subset, e.g. "unit regress"), SKIP_DEPS=1 / SKIP_BUILD=1 (developer shortcuts).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$ROOT"

SUITES=${TEST_SUITES:-"unit regress isolation conformance tap cancel soak fuzz"}
RESULTS_DIR=$ROOT/build/test-results
TOTAL_PASS=0
TOTAL_FAIL=0
SUMMARY=()

MARK=$SECONDS  # when the step that record() closes began: each line gives its wall time
record() {  # suite passed failed [note]
  local took=$((SECONDS - MARK))
  MARK=$SECONDS
  TOTAL_PASS=$((TOTAL_PASS + $2))
  TOTAL_FAIL=$((TOTAL_FAIL + $3))
  SUMMARY+=("$(printf '  %-28s %4d passed, %4d failed %5ds%s' "$1" "$2" "$3" "$took" "${4:+  ($4)}")")
  echo "--- $1: $2 passed, $3 failed, ${took}s${4:+ ($4)}"
}

finish() {
  echo
  echo "=== summary (wall seconds per step; ${SECONDS}s in all)"
  printf '%s\n' "${SUMMARY[@]}"
  echo "$TOTAL_PASS passed, $TOTAL_FAIL failed"
  [ "$TOTAL_FAIL" -eq 0 ]
  exit $?
}

# Everything failed before any suite could run: count each requested suite as one failure.
fail_all() {
  local s
  for s in $SUITES; do
    case $s in regress) record pg_regress 0 1 "$1" ;; *) record "$s" 0 1 "$1" ;; esac
  done
  finish
}

show_tail() {  # file lines
  echo "----- last $2 lines of $1"
  tail -n "$2" "$1"
  echo "-----"
}

# ---- setup --------------------------------------------------------------------------------
mkdir -p "$RESULTS_DIR"
if [ "${SKIP_DEPS:-0}" != 1 ]; then
  echo "=== dependencies"
  bash "$ROOT/scripts/install-deps.sh" || fail_all "install-deps failed"
  # Citus for regress/t/007_citus.pl and 009_citus_upgrade.pl (built once from third_party/citus/; a no-op afterwards).
  # A failed build fails that test, not the others.
  bash "$ROOT/scripts/install-citus.sh" || echo "WARNING: installing Citus failed: 007_citus.pl and 009_citus_upgrade.pl will fail"
fi
pg_setup || fail_all "no PostgreSQL"

build_ok=1
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  echo "=== build (log: build/test-results/build.log)"
  if ! make --no-print-directory build >"$RESULTS_DIR/build.log" 2>&1; then
    show_tail "$RESULTS_DIR/build.log" 60
    build_ok=0
  elif ! make --no-print-directory install >"$RESULTS_DIR/install.log" 2>&1; then
    show_tail "$RESULTS_DIR/install.log" 30
    build_ok=0
  fi
fi
[ "$build_ok" -eq 1 ] || fail_all "build or install failed"
SUMMARY+=("$(printf '  %-28s %5ds' "dependencies and build" "$SECONDS")")
MARK=$SECONDS

# ---- unit: GoogleTest ---------------------------------------------------------------------
suite_unit() {
  echo
  echo "=== unit tests (build/unit_tests)"
  local bin=$ROOT/build/unit_tests log=$RESULTS_DIR/unit.log
  if [ ! -x "$bin" ]; then
    record unit 0 1 "build/unit_tests was not built (no regress/unit/*/*_test.cpp?)"
    return
  fi
  timeout -k 10 900 "$bin" --gtest_color=no >"$log" 2>&1
  local rc=$?
  cat "$log"
  local passed failed
  passed=$(grep -cE '^\[ +OK \] ' "$log")
  failed=$(grep -cE '^\[ +FAILED \] [^ ]+ .*\([0-9]+ ms\)$' "$log")
  if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
    record unit "$passed" 1 "unit_tests exited with status $rc"
  else
    record unit "$passed" "$failed"
  fi
}

# ---- pg_regress ---------------------------------------------------------------------------
# Runs a pg_regress-style driver (pg_regress, pg_isolation_regress) on a temporary instance in
# TMP/instance as the unprivileged user, shows its log and records its counts; sets DRIVER_RC
# (its exit status), DRIVER_PASSED and DRIVER_FAILED.
#   run_regress_driver SUITE DRIVER INPUTDIR TMP TEMP_CONFIG SCHEDULE N_SCHEDULED LOG
run_regress_driver() {
  local suite=$1 driver=$2 input=$3 tmp=$4 conf=$5 schedule=$6 n_sched=$7 log=$8
  local as_user=()
  [ "$(id -u)" -eq 0 ] && as_user=(runuser -u "$PG_OS_USER" --)
  (cd "$input" && timeout -k 30 1800 "${as_user[@]}" "$driver" \
      --temp-instance="$tmp/instance" \
      --inputdir="$input" \
      --outputdir="$tmp/out" \
      --bindir="$PG_BINDIR" \
      --temp-config="$conf" \
      --schedule="$schedule" \
      --encoding=UTF8 --no-locale) >"$log" 2>&1
  DRIVER_RC=$?
  cat "$log"
  local passed failed ignored
  # PG 15: "test name ... ok 12 ms" / "     name ... FAILED"; PG 16+: TAP "ok 1 - name".
  passed=$(grep -cE '\.\.\. ok( |$)|^ok [0-9]+ +[-+] ' "$log")
  failed=$(grep -ciE '\.\.\. failed|^not ok [0-9]+ ' "$log")
  # "failed (ignored)" tests do not fail the run.
  ignored=$(grep -ciE '\.\.\. failed \(ignored\)' "$log")
  failed=$((failed - ignored))
  DRIVER_PASSED=$passed DRIVER_FAILED=$failed
  if [ "$DRIVER_RC" -ne 0 ] && [ "$failed" -eq 0 ]; then
    local missing=$((n_sched - passed))
    [ "$missing" -gt 0 ] || missing=1
    record "$suite" "$passed" "$missing" "$(basename "$driver") exited with status $DRIVER_RC"
  else
    record "$suite" "$passed" "$failed"
  fi
}

suite_regress() {
  echo
  echo "=== pg_regress (regress/sql, regress/expected, regress/schedule)"
  local pg_regress
  pg_regress="$("$PG_CONFIG" --pkglibdir)/pgxs/src/test/regress/pg_regress"
  local n_sched=1
  if [ -f "$ROOT/regress/schedule" ]; then
    n_sched=$(grep -E '^test:' "$ROOT/regress/schedule" | sed 's/^test://' | wc -w)
    [ "$n_sched" -gt 0 ] || n_sched=1
  fi
  [ -x "$pg_regress" ] || { record pg_regress 0 "$n_sched" "no $pg_regress"; return; }
  [ -f "$ROOT/regress/schedule" ] || { record pg_regress 0 1 "no regress/schedule"; return; }

  local tmp
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/pg_predict-regress.XXXXXX")
  # Inputs: the repository itself when the unprivileged user can read it, else a copy.
  local src=$ROOT
  if ! as_pg_user test -r "$ROOT/regress/schedule" -a -x "$ROOT/regress/sql"; then
    src=$tmp/src
    mkdir -p "$src/regress"
    cp -r "$ROOT/regress/." "$src/regress/"
  fi
  mkdir -p "$tmp/out"
  give_to_pg_user "$tmp"

  local log=$RESULTS_DIR/regress.log
  run_regress_driver pg_regress "$pg_regress" "$src/regress" "$tmp" "$src/regress/regression.conf" \
                     "$src/regress/schedule" "$n_sched" "$log"
  local rc=$DRIVER_RC passed=$DRIVER_PASSED failed=$DRIVER_FAILED
  if [ "$rc" -ne 0 ] || [ "$failed" -gt 0 ]; then
    if [ -s "$tmp/out/regression.diffs" ]; then
      cp "$tmp/out/regression.diffs" "$RESULTS_DIR/regression.diffs"
      echo "----- regression.diffs (full copy: build/test-results/regression.diffs)"
      head -n 500 "$tmp/out/regression.diffs"
      echo "-----"
    fi
    # The server log helps when the instance did not start or a backend crashed.
    if { [ "$failed" -eq 0 ] || grep -q 'server closed the connection' "$tmp/out/regression.diffs" 2>/dev/null; } \
       && [ -f "$tmp/out/log/postmaster.log" ]; then
      show_tail "$tmp/out/log/postmaster.log" 40
    fi
    if [ "$passed" -eq 0 ] && [ "$failed" -eq 0 ] && [ -f "$tmp/out/log/initdb.log" ]; then
      show_tail "$tmp/out/log/initdb.log" 20
    fi
  fi
  rm -rf "$tmp"
}

# ---- conformance: Python suites -------------------------------------------------------------
suite_conformance() {
  echo
  echo "=== conformance (regress/conformance/test_*.py with $PYTHON)"
  local files=("$ROOT"/regress/conformance/test_*.py)
  if [ ! -f "${files[0]}" ]; then
    record conformance 0 1 "no regress/conformance/test_*.py"
    return
  fi
  # test_deb last: its package is built in the background meanwhile (below).
  local deb=$ROOT/regress/conformance/test_deb.py
  [ -f "$deb" ] && files=("${files[@]/$deb}" "$deb")
  local f
  for f in "${files[@]}"; do
    [ -n "$f" ] || continue
    local name log
    name=$(basename "$f" .py)
    log=$RESULTS_DIR/$name.log
    echo "--- $name"
    PYTHONPATH="$ROOT/regress${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 \
      timeout -k 30 2700 "$PYTHON" "$f" 2>&1 | tee "$log"
    local rc=${PIPESTATUS[0]}
    local line passed=0 failed=0
    line=$(grep -oE '[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    if [ -n "$line" ]; then
      read -r passed _ failed _ <<<"${line//,/}"
    fi
    if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
      record "conformance/$name" "$passed" 1 "exited with status $rc"
    else
      record "conformance/$name" "$passed" "$failed"
    fi
  done
}

# The Debian package for test_deb.py (a build of the extension with debug info, minutes of CPU)
# is built in the background from the start, at the lowest priority, as the fuzz suite is;
# test_deb.py waits for it (PG_PREDICT_DEB_PREBUILT: dist/, log, and status once it is done).
if [[ " $SUITES " == *" conformance "* ]] && [ -f "$ROOT/regress/conformance/test_deb.py" ]; then
  export PG_PREDICT_DEB_PREBUILT=$RESULTS_DIR/deb
  rm -rf "$PG_PREDICT_DEB_PREBUILT"
  mkdir -p "$PG_PREDICT_DEB_PREBUILT"
  (
    DEB_DIR=$PG_PREDICT_DEB_PREBUILT/dist nice -n 19 bash "$ROOT/scripts/deb.sh" >"$PG_PREDICT_DEB_PREBUILT/log" 2>&1
    echo $? >"$PG_PREDICT_DEB_PREBUILT/status.part" && mv "$PG_PREDICT_DEB_PREBUILT/status.part" "$PG_PREDICT_DEB_PREBUILT/status"
  ) &
fi

# ---- isolation: concurrent sessions (pg_isolation_regress) ---------------------------------
# The specs read fixtures written by regress/isolation/make_fixtures.py (XGBoost models and
# their own predictions) from @fixtures@, replaced here by the directory they were written to.
suite_isolation() {
  echo
  echo "=== isolation (regress/isolation: specs/, expected/, schedule)"
  local isolation_regress n_sched
  isolation_regress="$("$PG_CONFIG" --pkglibdir)/pgxs/src/test/isolation/pg_isolation_regress"
  n_sched=$(grep -E '^test:' "$ROOT/regress/isolation/schedule" | sed 's/^test://' | wc -w)
  [ -x "$isolation_regress" ] || { record isolation 0 "$n_sched" "no $isolation_regress"; return; }

  local tmp
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/pg_predict-isolation.XXXXXX")
  mkdir -p "$tmp/src/specs" "$tmp/fixtures" "$tmp/out"
  if ! "$PYTHON" "$ROOT/regress/isolation/make_fixtures.py" "$tmp/fixtures" \
       >"$RESULTS_DIR/isolation-fixtures.log" 2>&1; then
    show_tail "$RESULTS_DIR/isolation-fixtures.log" 20
    record isolation 0 "$n_sched" "make_fixtures.py failed"
    rm -rf "$tmp"
    return
  fi
  local spec
  for spec in "$ROOT"/regress/isolation/specs/*.spec; do
    sed "s|@fixtures@|$tmp/fixtures|g" "$spec" >"$tmp/src/specs/$(basename "$spec")"
  done
  cp -r "$ROOT/regress/isolation/expected" "$ROOT/regress/isolation/schedule" \
        "$ROOT/regress/regression.conf" "$tmp/src/"
  give_to_pg_user "$tmp"

  run_regress_driver isolation "$isolation_regress" "$tmp/src" "$tmp" "$tmp/src/regression.conf" \
                     "$tmp/src/schedule" "$n_sched" "$RESULTS_DIR/isolation.log"
  local rc=$DRIVER_RC
  local diffs
  diffs=$(find "$tmp/out" -name regression.diffs -size +0 | head -n 1)
  if [ -n "$diffs" ]; then
    cp "$diffs" "$RESULTS_DIR/isolation.diffs"
    echo "----- isolation diffs (full copy: build/test-results/isolation.diffs)"
    head -n 300 "$diffs"
    echo "-----"
  fi
  if [ "$rc" -ne 0 ] && [ -f "$tmp/out/log/postmaster.log" ]; then
    show_tail "$tmp/out/log/postmaster.log" 40
  fi
  rm -rf "$tmp"
}

# ---- tap: PostgreSQL::Test::Cluster tests, run by prove --------------------------------------
# Counts test files: a file passes when all its subtests do.
suite_tap() {
  echo
  echo "=== tap (regress/t/*.pl with prove)"
  local perl_lib tests
  perl_lib="$("$PG_CONFIG" --pkglibdir)/pgxs/src/test/perl"
  tests=("$ROOT"/regress/t/*.pl)
  [ -f "${tests[0]}" ] || { record tap 0 1 "no regress/t/*.pl"; return; }
  [ -f "$perl_lib/PostgreSQL/Test/Cluster.pm" ] || { record tap 0 "${#tests[@]}" "no $perl_lib"; return; }
  command -v prove >/dev/null || { record tap 0 "${#tests[@]}" "no prove (perl)"; return; }
  local tmp log=$RESULTS_DIR/tap.log
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/pg_predict-tap.XXXXXX")
  # The tests and the fixtures the servers read: the repository itself when the unprivileged
  # user can read it, else a copy.
  local src=$ROOT
  if ! as_pg_user test -r "$ROOT/regress/t/PgPredictTest.pm" -a -r "$ROOT/regress/fixtures/binary_tiny.json"; then
    src=$tmp/src
    mkdir -p "$src/regress"
    cp -r "$ROOT/regress/t" "$ROOT/regress/fixtures" "$src/regress/"
    tests=("$src"/regress/t/*.pl)
  fi
  give_to_pg_user "$tmp"
  (cd "$tmp" && as_pg_user timeout -k 30 1500 env PATH="$PG_BINDIR:$PATH" PGPREDICT_ROOT="$src" \
      TESTDIR="$tmp" PG_REGRESS="$("$PG_CONFIG" --pkglibdir)/pgxs/src/test/regress/pg_regress" \
      prove -v -I "$perl_lib" -I "$src/regress/t" "${tests[@]}") >"$log" 2>&1
  local rc=$?
  cat "$log"
  # Counts subtests (prove -v prints each "ok N - ..." / "not ok N - ..."); a file that dies
  # before its plan ends makes prove fail, counted as one more failure below.
  local passed failed
  passed=$(grep -cE '^ok [0-9]+' "$log")
  failed=$(grep -cE '^not ok [0-9]+' "$log")
  if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
    record tap "$passed" 1 "prove exited with status $rc"
  else
    record tap "$passed" "$failed"
  fi
  if [ "$rc" -ne 0 ] && [ -d "$tmp/tmp_check/log" ]; then
    mkdir -p "$RESULTS_DIR/tap-logs" && cp -r "$tmp/tmp_check/log/." "$RESULTS_DIR/tap-logs/"
    echo "----- server logs of the failed run: build/test-results/tap-logs/"
  fi
  rm -rf "$tmp"
}

# ---- Python suites of regress/runtime ----------------------------------------------------------
suite_runtime_file() {  # suite file
  echo
  echo "=== $1 ($2 with $PYTHON)"
  local log=$RESULTS_DIR/$1.log
  PYTHONPATH="$ROOT/regress${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 \
    timeout -k 30 900 "$PYTHON" "$ROOT/$2" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]} line passed=0 failed=0
  line=$(grep -oE '[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
  [ -n "$line" ] && read -r passed _ failed _ <<<"${line//,/}"
  if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
    record "$1" "$passed" 1 "exited with status $rc"
  else
    record "$1" "$passed" "$failed"
  fi
}

# ---- fuzz: libFuzzer targets (regress/fuzz/, scripts/fuzz.sh) ------------------------------
# The fuzz suite builds and runs in the background from the start, at the lowest priority: the
# other suites wait on servers more than they compute, and it takes the core they leave idle
# (make test's wall time: 31 min 51 s with fuzz in line). Each target replays a fixed series of
# inputs (scripts/fuzz.sh replay: a fixed seed over the seeds alone, RUNS inputs), so make test
# never fails by chance: a failure here fails on every machine. Sized to about 20 s each on a
# busy 2-core machine; FUZZ_RUNS_SCALE multiplies them. Long random runs: scripts/fuzz.sh run.
FUZZ_TARGETS="xgboost sklearn spec detect lightgbm onnx text"
fuzz_runs() {  # target
  local runs
  case $1 in
    xgboost) runs=6000 ;; sklearn) runs=30000 ;; spec) runs=30000 ;; detect) runs=60000 ;;
    lightgbm) runs=3000 ;; onnx) runs=10000 ;; text) runs=300000 ;; *) runs=5000 ;;
  esac
  echo $((runs * ${FUZZ_RUNS_SCALE:-1}))
}
FUZZ_PID=
fuzz_in_background() {
  local t
  if ! FUZZ_JOBS=1 bash "$ROOT/scripts/fuzz.sh" build >"$RESULTS_DIR/fuzz-build.log" 2>&1; then
    echo build >"$RESULTS_DIR/fuzz-failed"
    return
  fi
  # A crash, leak, timeout or out-of-memory ends libFuzzer with a non-zero status.
  for t in $FUZZ_TARGETS; do
    bash "$ROOT/scripts/fuzz.sh" replay "$t" "$(fuzz_runs "$t")" >"$RESULTS_DIR/fuzz-$t.log" 2>&1 \
      || echo "$t" >>"$RESULTS_DIR/fuzz-failed"
  done
}
if [[ " $SUITES " == *" fuzz "* ]]; then
  rm -f "$RESULTS_DIR/fuzz-failed"
  nice -n 19 bash -c "$(declare -f fuzz_in_background fuzz_runs); ROOT='$ROOT' RESULTS_DIR='$RESULTS_DIR' \
    FUZZ_TARGETS='$FUZZ_TARGETS' fuzz_in_background" &
  FUZZ_PID=$!
fi

suite_fuzz() {
  echo
  echo "=== fuzz (regress/fuzz/: a fixed series of inputs per target (seed 46), clang-14 with ASan and UBSan; in the background since the build)"
  wait "$FUZZ_PID"
  if grep -qx build "$RESULTS_DIR/fuzz-failed" 2>/dev/null; then
    show_tail "$RESULTS_DIR/fuzz-build.log" 40
    record fuzz 0 6 "the fuzz targets did not build"
    return
  fi
  local t passed=0 failed=0 log
  for t in $FUZZ_TARGETS; do
    log=$RESULTS_DIR/fuzz-$t.log
    if grep -qx "$t" "$RESULTS_DIR/fuzz-failed" 2>/dev/null; then
      failed=$((failed + 1))
      echo "  $t: FAILED (reproducer in build/fuzz/artifacts/)"
      show_tail "$log" 40
    else
      passed=$((passed + 1))
      echo "  $t: $(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}') executions, no crash"
    fi
  done
  record fuzz "$passed" "$failed"
}

for s in $SUITES; do
  case $s in
    unit) suite_unit ;;
    regress) suite_regress ;;
    conformance) suite_conformance ;;
    isolation) suite_isolation ;;
    tap) suite_tap ;;
    cancel) suite_runtime_file cancel regress/runtime/test_cancel.py ;;
    soak) suite_runtime_file soak regress/runtime/test_soak.py ;;
    fuzz) suite_fuzz ;;
    *) record "$s" 0 1 "unknown suite" ;;
  esac
done
finish
