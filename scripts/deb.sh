#!/usr/bin/env bash
# make deb: the Debian package postgresql-<major>-pg-predict_<version>_<arch>.deb and its
# -dbgsym (the debug info), in dist/ (DEB_DIR=... elsewhere), for each PostgreSQL version of
# debian/pgversions that is installed. dpkg-buildpackage runs debian/rules on a copy of the
# sources under build/deb/ (nothing is written into the tree), and the CMake trees stay there, so
# a second run rebuilds only what changed. Installs what it needs first, as make run and make
# test do (scripts/install-deps.sh --deb: debhelper, postgresql-server-dev-all, the build's
# packages; nothing when they are there).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${DEB_DIR:-$ROOT/dist}
WORK=${PG_PREDICT_DEB_WORK:-$ROOT/build/deb}

die() { echo "deb: ERROR: $*" >&2; exit 1; }
bash "$ROOT/scripts/install-deps.sh" --deb || die "installing the packages make deb needs failed"
command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null && command -v pg_buildext >/dev/null \
  || die "dpkg-buildpackage, dh or pg_buildext missing: bash scripts/install-deps.sh (debhelper, postgresql-server-dev-all)"

version=$(dpkg-parsechangelog -l "$ROOT/debian/changelog" -S Version)
extension_version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$ROOT/control/pg_predict.control")
[ "$version" = "$extension_version" ] \
  || die "debian/changelog says $version, control/pg_predict.control says $extension_version: add a changelog entry"

# The sources: what git tracks (and new files not ignored), else the tree without build outputs.
src=$WORK/src/pg-predict-$version
rm -rf "$WORK/src"
mkdir -p "$src" "$OUT"
if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
  (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard --deduplicate \
     | tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -C "$src" -xf -
else
  tar -C "$ROOT" --exclude=./build --exclude=./dist --exclude=./.pgdata -cf - . | tar -C "$src" -xf -
fi

export PG_PREDICT_DEB_BUILD=$WORK/cmake
# A CMake tree configured from another version's source folder cannot be reused (CMake refuses).
for cache in "$PG_PREDICT_DEB_BUILD"/*/CMakeCache.txt; do
  [ -f "$cache" ] || continue
  grep -qxF "CMAKE_HOME_DIRECTORY:INTERNAL=$src" "$cache" || rm -rf "$(dirname "$cache")"
done
export DEB_BUILD_OPTIONS="parallel=$(nproc) ${DEB_BUILD_OPTIONS:-}"
(cd "$src" && dpkg-buildpackage -b -us -uc) >"$WORK/build.log" 2>&1 \
  || { tail -n 40 "$WORK/build.log" >&2; die "dpkg-buildpackage failed (log: $WORK/build.log)"; }

debs=("$WORK"/src/*.deb)
[ -e "${debs[0]}" ] || die "dpkg-buildpackage made no .deb (log: $WORK/build.log)"
mv -f "${debs[@]}" "$OUT"/
for d in "${debs[@]}"; do echo "$OUT/$(basename "$d")"; done
