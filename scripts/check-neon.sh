#!/usr/bin/env bash
# Cross-compiles the native tree kernel for AArch64 and runs regress/unit/cross/neon_check.cpp
# under qemu: the NEON path must agree with the portable one bit for bit. Not part of
# `make test`. Needs: apt-get install -y g++-aarch64-linux-gnu qemu-user
set -euo pipefail
cd "$(dirname "$0")/.."
CXX=${CXX:-aarch64-linux-gnu-g++}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# nlohmann/json is header-only; take the host's copy without the rest of /usr/include
mkdir -p "$out/include"
ln -s /usr/include/nlohmann "$out/include/nlohmann"
# every torch-free kernel file (the op file registers the torch operator; the x86 SIMD files
# compile to their stubs here)
kernels=$(ls src/kernels/tree_ensemble*.cpp | grep -v '_op\.cpp$')
"$CXX" -std=c++17 -O2 -Wall -Wextra -Iinclude -I"$out/include" \
    regress/unit/cross/neon_check.cpp src/spec/pipeline.cpp $kernels -o "$out/neon_check"
qemu-aarch64 -L /usr/aarch64-linux-gnu "$out/neon_check"
