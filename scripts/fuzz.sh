#!/usr/bin/env bash
# The libFuzzer targets (regress/fuzz/): xgboost, sklearn, spec, detect (format detection),
# lightgbm (LightGBM model texts), onnx (ONNX ModelProtos), text (documents through the text
# analyzers and vectorizers).
#   scripts/fuzz.sh build                    configure + build them into build/fuzz (clang-14)
#   scripts/fuzz.sh run TARGET SECONDS [ARGS] fuzz one target; exit status 0 = no crash, leak,
#                                            timeout or out-of-memory
#   scripts/fuzz.sh all SECONDS              every target in turn, SECONDS each
#   scripts/fuzz.sh replay TARGET RUNS       what make test runs: RUNS inputs from a fixed seed,
#                                            starting from the seeds alone (a fresh corpus), so
#                                            every run tries the same inputs in the same order
#                                            and a failure is never a matter of chance
# The working corpus is build/fuzz/corpus/TARGET (kept between runs, so a longer run goes on
# where the last stopped); it is seeded from the fixtures (regress/fixtures, the documents
# inside regress/fixtures/sklearn_trees) and regress/fuzz/seeds/TARGET, which holds the
# inputs that once crashed (add each new one there). Crash reproducers land in
# build/fuzz/artifacts/. Run one by hand: build/fuzz/fuzz_TARGET FILE.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$ROOT/build/fuzz
TARGETS="xgboost sklearn spec detect lightgbm onnx text"

build() {
  local launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake -S "$ROOT/regress/fuzz" -B "$OUT" -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE= \
    "${launcher[@]}" >/dev/null
  cmake --build "$OUT" -j "${FUZZ_JOBS:-2}" >/dev/null
}

# Seeds per target, written once into build/fuzz/seeds/TARGET.
seed() {
  local s=$OUT/seeds
  [ -d "$s/onnx" ] && return 0
  mkdir -p "$s/xgboost" "$s/sklearn" "$s/spec" "$s/detect" "$s/lightgbm" "$s/onnx"
  # LightGBM texts under libFuzzer's -max_len (the 1 MB deep model would only be cut).
  find "$ROOT/regress/fixtures/lightgbm" -name '*.model.txt' -size -256k -exec cp {} "$s/lightgbm/" \;
  cp "$ROOT"/regress/fixtures/binary_tiny.json "$ROOT"/regress/fixtures/sklearn_city.json "$s/detect/"
  cp "$ROOT"/regress/fixtures/onnx/*.onnx "$s/onnx/"
  for f in "$ROOT"/regress/fixtures/*.json; do
    if grep -q '"learner"' "$f"; then cp "$f" "$s/xgboost/"; else cp "$f" "$s/sklearn/"; fi
  done
  /usr/bin/python3 - "$ROOT/regress/fixtures/sklearn_trees" "$s/sklearn" <<'PY'
import json, pathlib, sys
for f in pathlib.Path(sys.argv[1]).glob("*.json"):
    doc = json.loads(f.read_text())
    (pathlib.Path(sys.argv[2]) / f.name).write_text(json.dumps(doc.get("document", doc)))
PY
  # The spec target starts from the specs the importers make of those documents.
  for t in xgboost sklearn; do
    FUZZ_WRITE_SPECS=$s/spec "$OUT/fuzz_$t" -runs=0 "$s/$t" >/dev/null 2>&1
  done
}

run() {
  local target=$1 seconds=$2
  shift 2
  local corpus=$OUT/corpus/$target
  mkdir -p "$corpus" "$OUT/artifacts"
  local dirs=("$corpus") d dict=$ROOT/regress/fuzz/$target.dict
  [ -f "$dict" ] || dict=$ROOT/regress/fuzz/json.dict  # a target's own tokens, else JSON's
  for d in "$OUT/seeds/$target" "$ROOT/regress/fuzz/seeds/$target"; do [ -d "$d" ] && dirs+=("$d"); done
  "$OUT/fuzz_$target" "${dirs[@]}" \
    -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2560 -max_len=262144 \
    -dict="$dict" -artifact_prefix="$OUT/artifacts/$target-" \
    -print_final_stats=1 "$@"
}

# The same inputs on every machine: libFuzzer's mutations are a function of its seed and the
# corpus it starts from. max_total_time only guards a machine far slower than ours (it stops
# the series early, so such a run tries a prefix of the same inputs).
replay() {
  local target=$1 runs=$2
  shift 2
  local corpus
  corpus=$(mktemp -d "${TMPDIR:-/tmp}/pg_predict-fuzz-$target.XXXXXX")
  mkdir -p "$OUT/artifacts"
  local dirs=("$corpus") d dict=$ROOT/regress/fuzz/$target.dict rc=0
  [ -f "$dict" ] || dict=$ROOT/regress/fuzz/json.dict
  for d in "$OUT/seeds/$target" "$ROOT/regress/fuzz/seeds/$target"; do [ -d "$d" ] && dirs+=("$d"); done
  "$OUT/fuzz_$target" "${dirs[@]}" \
    -seed=46 -runs="$runs" -max_total_time=600 -timeout=20 -rss_limit_mb=2560 -max_len=262144 \
    -dict="$dict" -artifact_prefix="$OUT/artifacts/$target-" -print_final_stats=1 "$@" || rc=$?
  rm -rf "$corpus"
  return $rc
}

case ${1:-} in
  build) build; seed ;;
  run) run "$2" "$3" "${@:4}" ;;
  replay) replay "$2" "$3" "${@:4}" ;;
  all)
    rc=0
    for t in $TARGETS; do run "$t" "$2" || rc=1; done
    exit $rc ;;
  *) sed -n '2,12p' "$0"; exit 2 ;;
esac
