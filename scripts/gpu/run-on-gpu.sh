#!/usr/bin/env bash
# Run ON THE GPU MACHINE, from the repository root, with .gpu-carry/ carried along
# (scripts/gpu/fetch-postgres.sh fills it here first; see scripts/gpu/README.md):
#
#   bash scripts/gpu/run-on-gpu.sh                 # everything below, results under $OUT
#   bash scripts/gpu/run-on-gpu.sh --smoke-only    # no 1M-row benchmark
#   bash scripts/gpu/run-on-gpu.sh --cpu           # CPU flavour, no GPU needed: checks the
#                                                  # script itself (used on the dev machine)
#   --build-only / --no-build                      # split one run into two device calls (each
#                                                  # call has a 10-minute limit): build, then run
#   --regress                                      # also run the pg_regress suite on a temporary
#                                                  # instance with pg_predict.device = cuda
#                                                  # (before the benchmark; diffs in $OUT)
# Steps: unpack PostgreSQL 15 from the carried .debs into a private prefix (plus the shared
# libraries the image lacks), build pg_predict (-DPG_PREDICT_CUDA=ON against PyTorch's libtorch)
# and its unit tests, install it into that prefix, initdb + start a server as a non-root user
# with shared_preload_libraries = pg_predict, run bench/gpu.py (smoke: device = cuda equals
# device = cpu on every row; then the benchmark with GPU memory per backend), stop the server.
# Logs and results: $OUT (default ./gpu-out). Environment: GPU_PREFIX (default /tmp/pgp-gpu),
# GPU_CARRY (default .gpu-carry), GPU_JOBS, ROWS (1000000), PGPORT (54329), GPU_RUN_USER (pgpredict),
# GPU_BUILD_TYPE (Release).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${OUT:-$ROOT/gpu-out}
CARRY=${GPU_CARRY:-$ROOT/.gpu-carry}
PREFIX=${GPU_PREFIX:-/tmp/pgp-gpu}
PORT=${PGPORT:-54329}
ROWS=${ROWS:-1000000}
JOBS=${GPU_JOBS:-$(nproc)}
MODE=cuda
BUILD_STEP=1
RUN_STEP=1
BENCH_ARGS=()
REGRESS=0
for arg in "$@"; do
  case $arg in
    --cpu) MODE=cpu ;;
    --smoke-only) BENCH_ARGS+=(--smoke-only) ;;
    --build-only) RUN_STEP=0 ;;
    --no-build) BUILD_STEP=0 ;;
    --regress) REGRESS=1 ;;
    *) echo "usage: $0 [--cpu] [--smoke-only] [--regress] [--build-only | --no-build]" >&2; exit 2 ;;
  esac
done
mkdir -p "$OUT"
exec > >(tee -a "$OUT/run.log") 2>&1
step() { echo; echo "=== [$(date -u +%H:%M:%S)] $*"; }
die() { echo "run-on-gpu: ERROR: $*" >&2; exit 1; }
RUN_USER=${GPU_RUN_USER:-pgpredict}   # the OS user the server runs as when we are root

# ---- 0. what this machine has ---------------------------------------------------------------
step "environment (-> $OUT/env.txt)"
{
  echo "mode: $MODE"; uname -a; sed -n 1,2p /etc/os-release 2>/dev/null || true
  ldd --version 2>&1 | sed -n 1p
  nproc; free -g | sed -n 1,2p
  command -v nvidia-smi >/dev/null && nvidia-smi || echo "no nvidia-smi"
  command -v nvcc >/dev/null && nvcc --version | tail -2 || echo "no nvcc on PATH"
  for t in cmake make g++ gcc python3 dpkg-deb; do printf '%-10s %s\n' "$t" "$(command -v $t || echo MISSING)"; done
  command -v g++ >/dev/null && g++ --version | sed -n 1p
  for f in /usr/local/cuda/include/cublas_v2.h /usr/local/cuda/include/cusparse.h /usr/local/cuda/lib64/libnvrtc.so; do
    printf '%-45s %s\n' "$f" "$([ -e "$f" ] && echo present || echo MISSING)"; done
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(), "cxx11abi", torch.compiled_with_cxx11_abi())' 2>&1 || echo "python3 cannot import torch"
} | tee "$OUT/env.txt"
[ -d "$CARRY/debs" ] || die "no $CARRY/debs: run scripts/gpu/fetch-postgres.sh on the dev machine and carry .gpu-carry"
if [ -f "$CARRY/debs/GLIBC_REQUIRED" ]; then
  need=$(sed 's/GLIBC_//' "$CARRY/debs/GLIBC_REQUIRED")
  have=$(ldd --version 2>&1 | sed -n 1p | grep -o '[0-9]\+\.[0-9]\+$' || echo 0)
  [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | sed -n 1p)" = "$need" ] ||
    die "the carried PostgreSQL needs glibc $need, this image has $have"
fi

# ---- 1. unpack the carried packages ---------------------------------------------------------
step "unpack $(ls "$CARRY"/debs/*.deb | wc -l) packages into $PREFIX/root"
unpack() {  # deb dir: dpkg-deb when there is one, else the ar archive by hand (python3)
  if command -v dpkg-deb >/dev/null; then dpkg-deb -x "$1" "$2"; return; fi
  python3 - "$1" "$2" <<'PY'
import io, sys, tarfile
data = open(sys.argv[1], "rb").read()
pos = 8  # "!<arch>\n", then 60-byte member headers
while pos < len(data):
    name, size = data[pos:pos + 16].decode().strip().rstrip("/"), int(data[pos + 48:pos + 58])
    body = data[pos + 60:pos + 60 + size]
    if name.startswith("data.tar"):
        tarfile.open(fileobj=io.BytesIO(body)).extractall(sys.argv[2])  # gz / xz / bz2
        break
    pos += 60 + size + (size & 1)
else:
    sys.exit(f"{sys.argv[1]}: no data.tar member")
PY
}
if [ "$BUILD_STEP" = 1 ]; then
  rm -rf "$PREFIX"
  mkdir -p "$PREFIX/root" "$PREFIX/libs"
  for d in "$CARRY"/debs/*.deb; do unpack "$d" "$PREFIX/root"; done
else
  [ -d "$PREFIX/root" ] || die "--no-build: nothing unpacked in $PREFIX (run --build-only first, on the same machine)"
  echo "(--no-build: reusing $PREFIX)"
fi
PGBIN=$PREFIX/root/usr/lib/postgresql/15/bin
PG_CONFIG=$PGBIN/pg_config
[ -x "$PGBIN/postgres" ] && [ -x "$PG_CONFIG" ] || die "no postgres / pg_config after unpacking"

# Libraries the image lacks: symlinked one by one into $PREFIX/libs (never the whole carried
# set, which would shadow the image's own newer ones), until ldd finds everything.
CARRIED_LIBS=("$PREFIX/root/usr/lib/x86_64-linux-gnu" "$PREFIX/root/lib/x86_64-linux-gnu")
export LD_LIBRARY_PATH=$PREFIX/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
elves=("$PGBIN/postgres" "$PGBIN/initdb" "$PGBIN/pg_ctl" "$PGBIN/psql" "$PG_CONFIG"
       "$PREFIX/root/usr/lib/postgresql/15/lib/dict_snowball.so" "$PREFIX/root/usr/lib/postgresql/15/lib/pg_prewarm.so")
command -v cmake >/dev/null || elves+=("$PREFIX/root/usr/bin/cmake")
command -v make >/dev/null || elves+=("$PREFIX/root/usr/bin/make")
for round in 1 2 3 4 5; do
  missing=$(for f in "${elves[@]}"; do ldd "$f" 2>/dev/null; done | awk '/not found/ {print $1}' | sort -u)
  [ -z "$missing" ] && break
  for lib in $missing; do
    found=
    for dir in "${CARRIED_LIBS[@]}"; do
      [ -e "$dir/$lib" ] && { ln -sf "$(readlink -f "$dir/$lib")" "$PREFIX/libs/$lib"; found=1; break; }
    done
    [ -n "$found" ] || die "$lib is needed but neither the image nor the carried packages have it"
  done
  echo "linked from the carried packages: $missing" | tr '\n' ' '; echo
done
# Libraries pg_predict itself links that come only from the carried packages (XGBoost's C API,
# dmlc, the ONNX protobuf classes and Debian's protobuf): their sonames are Debian's own, so
# linking them cannot shadow a different version in the image.
for lib in libxgboost.so.0 libdmlc.so.0 libonnx_proto.so.1 libonnx.so.1 libprotobuf.so.32; do
  for dir in "${CARRIED_LIBS[@]}"; do
    [ -e "$dir/$lib" ] && { ln -sf "$(readlink -f "$dir/$lib")" "$PREFIX/libs/$lib"; break; }
  done
done
"$PGBIN/postgres" --version
echo "pg_config --pkglibdir: $("$PG_CONFIG" --pkglibdir)"   # relative to the binary: relocated

# ---- 2. tools and libtorch -------------------------------------------------------------------
CMAKE=$(command -v cmake || echo "$PREFIX/root/usr/bin/cmake")
MAKE_BIN=$(command -v make || echo "$PREFIX/root/usr/bin/make")
command -v g++ >/dev/null || die "no g++ on this machine (needed for the C++ build and by nvcc)"
if [ "$MODE" = cuda ]; then
  command -v nvcc >/dev/null || for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
    [ -x "$d/nvcc" ] && { export PATH=$d:$PATH; break; }; done
  command -v nvcc >/dev/null || die "no nvcc (looked on PATH and in /usr/local/cuda*/bin)"
  TORCH_PREFIX=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)') ||
    die "python3 cannot import torch"
  TORCH_LIB=$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
  TORCH_DIR=$TORCH_PREFIX/Torch
  # One CUDA in the process: nvcc's major version must be the one PyTorch was built with.
  NVCC_CUDA=$(nvcc --version | grep -o 'release [0-9]\+' | grep -o '[0-9]\+$' || echo "?")
  TORCH_CUDA=$(python3 -c 'import torch; print((torch.version.cuda or "none").split(".")[0])')
  [ "$NVCC_CUDA" = "$TORCH_CUDA" ] ||
    echo "run-on-gpu: WARNING: nvcc is CUDA $NVCC_CUDA, PyTorch was built with CUDA $TORCH_CUDA: two CUDA runtimes may load"
  CUDA_ROOT=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
  export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}   # PyTorch's config ignores CMAKE_CUDA_ARCHITECTURES
  # --copy-dt-needed-entries: libonnx_proto's own protobuf is the one the unit tests call
  # (PyTorch's CMake config defines protobuf::libprotobuf, which does not name that library).
  EXTRA_CMAKE=(-DCMAKE_EXE_LINKER_FLAGS=-Wl,--copy-dt-needed-entries
               -DPG_PREDICT_CUDA=ON -DCMAKE_CUDA_COMPILER="$(command -v nvcc)"
               -DCUDAToolkit_ROOT="$CUDA_ROOT" -DCUDA_TOOLKIT_ROOT_DIR="$CUDA_ROOT")
else
  # --cpu: the system libtorch (Debian's) if there is one, else PyTorch's.
  TORCH_DIR=$(ls -d /usr/lib/x86_64-linux-gnu/cmake/Torch 2>/dev/null ||
              echo "$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')/Torch")
  TORCH_LIB=$(dirname "$(dirname "$TORCH_DIR")")
  EXTRA_CMAKE=(-DPG_PREDICT_CUDA=OFF)
fi
export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$TORCH_LIB
echo "Torch_DIR=$TORCH_DIR"

# ---- 3. build, unit tests, install ----------------------------------------------------------
BUILD=$ROOT/build-gpu-$MODE
if [ "$BUILD_STEP" = 1 ]; then
step "configure + build ($BUILD, log $OUT/build.log)"
USR=$PREFIX/root/usr
configure() {
  "$CMAKE" -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE="${GPU_BUILD_TYPE:-Release}" -DCMAKE_MAKE_PROGRAM="$MAKE_BIN" \
    -DPG_CONFIG="$PG_CONFIG" -DTorch_DIR="$TORCH_DIR" \
    -Dnlohmann_json_DIR="$USR/share/cmake/nlohmann_json" -DGTest_DIR="$USR/lib/x86_64-linux-gnu/cmake/GTest" \
    -DCMAKE_PREFIX_PATH="$USR" "${EXTRA_CMAKE[@]}" "$@"
}
TESTS=ON
# -k: a compile error does not stop the other files, so one call shows every error.
if ! { configure -DPG_PREDICT_BUILD_TESTS=ON && "$CMAKE" --build "$BUILD" -j "$JOBS" -- -k; } >"$OUT/build.log" 2>&1; then
  grep -E "error:" "$OUT/build.log" | head -40
  tail -20 "$OUT/build.log"
  # A compile error in our own sources fails the build without the unit tests too: stop here.
  grep -qE "^$ROOT/(src|include)/.*error:" "$OUT/build.log" && die "compile errors (build.log)"
  echo "build with unit tests failed; trying without them (log $OUT/build-notests.log)"
  TESTS=OFF
  rm -rf "$BUILD"
  { configure -DPG_PREDICT_BUILD_TESTS=OFF && "$CMAKE" --build "$BUILD" -j "$JOBS"; } >"$OUT/build-notests.log" 2>&1 ||
    { tail -60 "$OUT/build-notests.log"; die "build failed"; }
fi
grep -E "pg_predict: CUDA|Torch|CUDA" "$OUT/build.log" | head -5 || true
if [ "$TESTS" = ON ]; then
  step "unit tests (log $OUT/unit.log)"
  # From the build dir: some tests find their fixtures relative to __FILE__.
  (cd "$BUILD" && ./unit_tests --gtest_color=no) >"$OUT/unit.log" 2>&1 && echo "unit tests: all passed" ||
    echo "unit tests: FAILURES (see unit.log)"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^SKIP |^\[  FAILED  \] " "$OUT/unit.log" | head -30 || true
fi
"$CMAKE" --install "$BUILD" >"$OUT/install.log" 2>&1 || { cat "$OUT/install.log"; die "install failed"; }
fi
ls -la "$("$PG_CONFIG" --pkglibdir)/pg_predict.so" || die "pg_predict is not installed in $PREFIX"
[ "$RUN_STEP" = 1 ] || { step "built (--build-only)"; exit 0; }

# ---- 4. a server, as a non-root user --------------------------------------------------------
step "initdb + start (port $PORT, log $OUT/postgres.log)"
as_user() { "$@"; }
if [ "$(id -u)" = 0 ]; then
  if ! id "$RUN_USER" >/dev/null 2>&1; then
    useradd -M -d "$PREFIX" -s /bin/sh "$RUN_USER" 2>/dev/null ||
      { echo "$RUN_USER:x:54329:54329::$PREFIX:/bin/sh" >>/etc/passwd; echo "$RUN_USER:x:54329:" >>/etc/group; }
  fi
  uid=$(id -u "$RUN_USER"); gid=$(id -g "$RUN_USER")
  as_user() {  # keeps the environment (LD_LIBRARY_PATH, CUDA variables)
    python3 -c 'import os, sys; os.setgroups([]); os.setgid(int(sys.argv[2])); os.setuid(int(sys.argv[1])); os.execvp(sys.argv[3], sys.argv[3:])' "$uid" "$gid" "$@"
  }
fi

# ---- 4a. pg_regress with device = cuda (--regress) -----------------------------------------
# The repository's own pg_regress suite on a temporary instance whose postgresql.conf adds
# pg_predict.device = cuda: every batch and every per-row call is scored on the GPU. Expected
# outputs were written on the CPU, so a test that prints its device differs there; the diffs
# are kept for reading ($OUT/regress-cuda.diffs).
if [ "$REGRESS" = 1 ]; then
  step "pg_regress with pg_predict.device = cuda (log $OUT/regress-cuda.log)"
  RSRC=$PREFIX/regress-src
  rm -rf "$RSRC" && mkdir -p "$RSRC"
  cp -r "$ROOT/regress" "$RSRC/"
  RINPUT=$RSRC/regress
  { cat "$RSRC/regress/regression.conf"; echo "pg_predict.device = 'cuda'"; echo "pg_predict.max_gpu_backends = 8"; echo "jit = off  # no LLVM carried"; } >"$RSRC/cuda.conf"
  mkdir -p "$RSRC/out"
  chmod 755 "$PREFIX"
  [ "$(id -u)" = 0 ] && chown -R "$RUN_USER" "$RSRC"
  PG_REGRESS=$PREFIX/root/usr/lib/postgresql/15/lib/pgxs/src/test/regress/pg_regress
  (cd "$RINPUT" && as_user timeout -k 10 420 "$PG_REGRESS" --temp-instance="$RSRC/instance" \
      --inputdir="$RINPUT" --outputdir="$RSRC/out" --bindir="$PGBIN" --temp-config="$RSRC/cuda.conf" \
      --schedule="$RSRC/regress/schedule" --encoding=UTF8 --no-locale) >"$OUT/regress-cuda.log" 2>&1 || true
  tail -40 "$OUT/regress-cuda.log"
  cp -f "$RSRC/out/regression.diffs" "$OUT/regress-cuda.diffs" 2>/dev/null || echo "(no regression.diffs: every test matched)"
  cp -f "$RSRC/out/log/postmaster.log" "$OUT/regress-cuda-postmaster.log" 2>/dev/null || true
fi

DATA=$PREFIX/data
SOCK=$PREFIX/sock
rm -rf "$DATA"
mkdir -p "$DATA" "$SOCK"
chmod 755 "$PREFIX"
[ "$(id -u)" = 0 ] && chown "$RUN_USER" "$DATA" "$SOCK" && chmod 700 "$DATA" && chmod o+w "$OUT" 2>/dev/null || true
# The server writes its log under $PREFIX ($OUT may sit below /root, which the server's user
# cannot enter); it is copied to $OUT/postgres.log when the script exits.
SERVER_LOG=$PREFIX/postgres.log
touch "$SERVER_LOG" && chmod 666 "$SERVER_LOG"
trap 'cp -f "$SERVER_LOG" "$OUT/postgres.log" 2>/dev/null || true' EXIT
as_user "$PGBIN/initdb" -D "$DATA" -U postgres --auth=trust -E UTF8 --locale=C >"$OUT/initdb.log" 2>&1 ||
  { cat "$OUT/initdb.log"; die "initdb failed"; }
cat >>"$DATA/postgresql.conf" <<EOF
shared_preload_libraries = 'pg_predict'
port = $PORT
listen_addresses = ''
unix_socket_directories = '$SOCK'
shared_buffers = 2GB
max_connections = 40
jit = off
max_parallel_workers_per_gather = 0
lc_messages = 'C'
fsync = off
synchronous_commit = off
full_page_writes = off
pg_predict.max_gpu_backends = 2
EOF
stop_server() {
  as_user "$PGBIN/pg_ctl" -D "$DATA" -m fast stop >/dev/null 2>&1 || true
  cp -f "$SERVER_LOG" "$OUT/postgres.log" 2>/dev/null || true
}
trap stop_server EXIT
as_user "$PGBIN/pg_ctl" -D "$DATA" -l "$SERVER_LOG" -w -t 120 start || { tail -30 "$SERVER_LOG"; die "server did not start"; }

# ---- 5. smoke test + benchmark --------------------------------------------------------------
step "bench/gpu.py (smoke, then benchmark)"
GPU_ARGS=(--psql "$PGBIN/psql" --host "$SOCK" --port "$PORT" --user postgres --inputs "$CARRY/bench"
          --out "$OUT" --rows "$ROWS" "${BENCH_ARGS[@]}")
[ "$MODE" = cpu ] && GPU_ARGS+=(--expect-cpu)
status=0
python3 "$ROOT/bench/gpu.py" "${GPU_ARGS[@]}" || status=$?
stop_server
trap - EXIT
step "done (status $status): $OUT"
ls -la "$OUT"
exit $status
