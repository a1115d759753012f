#!/usr/bin/env bash
# Run HERE (Debian 12, network to Debian's mirror), not on the GPU machine: downloads what
# scripts/gpu/run-on-gpu.sh needs there, where there is no PostgreSQL and no network, into
# .gpu-carry/ (ignored by git; the device tool's `carry` brings it along):
#   .gpu-carry/debs/      PostgreSQL 15 (server, client, server headers, libpq), the shared
#                         libraries its binaries need beyond glibc, nlohmann-json (headers +
#                         CMake config), GoogleTest, and cmake + make in case the image has none
#   .gpu-carry/bench/     the benchmark's table SQL and the 500-tree model (bench/gpu.py --prepare)
# Usage: bash scripts/gpu/fetch-postgres.sh [--no-bench]     (re-running replaces the folder)
#        BENCH_MODEL=path/to/m500.json bash scripts/gpu/fetch-postgres.sh   (the model to carry;
#        default bench/.cache/m500-*.json from `make bench`, else one trained on synthetic data)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CARRY=$ROOT/.gpu-carry
DEBS=$CARRY/debs
MAX_MB=${MAX_MB:-56}   # the carry limit is 64 MiB for everything

die() { echo "fetch-postgres: $*" >&2; exit 1; }
command -v apt-get >/dev/null || die "needs apt-get (run it on the Debian 12 development machine)"
command -v dpkg-deb >/dev/null || die "needs dpkg-deb"

# What run-on-gpu.sh unpacks. Server libraries are found below with ldd.
PACKAGES=(postgresql-15 postgresql-client-15 libpq5 postgresql-server-dev-15
          nlohmann-json3-dev libgtest-dev cmake cmake-data make
          # the ONNX importer (issue 11): onnx-ml.pb.h and libonnx_proto, Debian's libprotobuf
          libonnx-dev libonnx1 libprotobuf-dev libprotobuf32
          # train() links XGBoost's C API (src/training/): headers, library and dmlc beneath it
          libxgboost-dev libxgboost0 libdmlc-dev libdmlc0)
# glibc and the compiler's runtime: every image has them; never carried (they must match the
# image's own loader).
BASE_LIBS='^(libc|libm|libdl|libpthread|librt|libresolv|libutil|ld-linux-x86-64|libgcc_s|libstdc\+\+|linux-vdso)\.so'

rm -rf "$DEBS"
mkdir -p "$DEBS"
cd "$DEBS"
echo "=== apt-get download (${PACKAGES[*]})"
apt-get download "${PACKAGES[@]}" >/dev/null || die "apt-get download failed (run apt-get update first?)"

# Unpack into a scratch root and ask ldd which libraries the binaries load.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for d in ./*.deb; do dpkg-deb -x "$d" "$scratch/root"; done
PGBIN=$scratch/root/usr/lib/postgresql/15/bin
PGLIB=$scratch/root/usr/lib/postgresql/15/lib
ARCH_LIB=$scratch/root/usr/lib/x86_64-linux-gnu
[ -x "$PGBIN/postgres" ] || die "postgresql-15 did not unpack a server binary"
elves=("$PGBIN"/postgres "$PGBIN"/initdb "$PGBIN"/pg_ctl "$PGBIN"/psql "$PGBIN"/pg_config
       "$PGLIB"/plpgsql.so "$PGLIB"/dict_snowball.so "$PGLIB"/pg_prewarm.so
       "$scratch"/root/usr/bin/cmake "$scratch"/root/usr/bin/make)
declare -A needed=()
for f in "${elves[@]}"; do
  [ -e "$f" ] || continue
  while read -r lib arrow path _; do
    [ "$arrow" = "=>" ] || continue
    [[ $lib =~ $BASE_LIBS ]] && continue
    [ -e "$ARCH_LIB/$lib" ] && continue   # comes in a carried package (libpq5 ...)
    needed[$lib]=$path
  done < <(LD_LIBRARY_PATH=$ARCH_LIB ldd "$f")
done

# The package of each library, downloaded too.
declare -A pkgs=()
for lib in "${!needed[@]}"; do
  real=$(readlink -f "${needed[$lib]}")
  pkg=$(dpkg -S "$real" 2>/dev/null | head -1 | cut -d: -f1) || true
  [ -n "$pkg" ] || pkg=$(dpkg -S "${needed[$lib]}" 2>/dev/null | head -1 | cut -d: -f1) || true
  [ -n "$pkg" ] || die "no Debian package owns $lib (${needed[$lib]})"
  pkgs[$pkg]=1
done
echo "=== libraries beyond glibc: ${#needed[@]} in ${#pkgs[@]} packages: ${!pkgs[*]}"
apt-get download "${!pkgs[@]}" >/dev/null || die "apt-get download of the library packages failed"

# Highest glibc symbol version the carried binaries need: the image's glibc must be as new.
glibc=$(for f in "${elves[@]}"; do [ -e "$f" ] && objdump -T "$f" 2>/dev/null; done |
        grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
echo "$glibc" > "$DEBS/GLIBC_REQUIRED"
echo "=== the binaries need $glibc or newer on the GPU machine"

total=$(du -sm "$DEBS" | cut -f1)
ls -1sh "$DEBS"
echo "=== $DEBS: ${total} MiB"
[ "$total" -le "$MAX_MB" ] || die "${total} MiB is over MAX_MB=$MAX_MB (the carry limit is 64 MiB in all)"

if [ "${1:-}" != "--no-bench" ]; then
  echo "=== benchmark inputs (bench/gpu.py --prepare)"
  /usr/bin/python3 "$ROOT/bench/gpu.py" --prepare "$CARRY/bench" ${BENCH_MODEL:+--model "$BENCH_MODEL"}
fi
echo "=== done: $(du -sm "$CARRY" | cut -f1) MiB in $CARRY"
