#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Debian packages of dlx into dist/ (docs/admin-guide.md): dlx, slurm-spank-plugin-dlx, libdlx0.1,
# libdlx-c0, libdlx-dev and their -dbgsym packages; with --portable, libdlx-c0-portable too.
#
# Why debian/ and dpkg-buildpackage on the build tree, rather than CPack DEB or a debian/ that
# compiles: debhelper does what Debian policy asks of a package (stripping into -dbgsym packages,
# shlibs files and ldconfig triggers for the libraries, dependencies from the ELF files,
# compressed man pages and changelogs, the Python module byte-compiled at install, maintainer
# scripts) and lintian judges the result; CPack DEB leaves each of those to hand-written CMake.
# And the packages hold the very binaries that scripts/build.sh built and ctest tested: no second
# compile (CI's 2 cores would need about 15 more minutes), the same compile and link flags
# (hardening included, cmake/DlxCompilerSettings.cmake). debian/rules therefore packages a built
# tree (DLX_BUILD_DIR) and compiles nothing itself.
#
# Usage: bash scripts/package.sh [--no-build] [--portable LIBRARY]
#   By default scripts/build.sh first brings ./build up to date (configure with the Debian
#   layout, incremental build) for what the packages hold: the target `product`, everything but the
#   tests and benchmarks (cmake/DlxProduct.cmake). --no-build packages ./build as it is (the ctest
#   test `package.*`, which runs after the build it tests, must not reconfigure it).
#   --portable LIBRARY: also libdlx-c0-portable, the portable libdlx_c for container images
#   (scripts/portable-c.sh builds it; docs/containers.md), with the build profile
#   pkg.dlx.portable. LIBRARY must pass tests/portable/portable_library_check.py (its libraries
#   glibc's and libgcc_s, no glibc symbol after DLX_PORTABLE_MAX_GLIBC, default 2.28) and export
#   the same C API (dlx_*) as the build's libdlx_c: one built from another dlx would not match the
#   Python module that comes with it.
# DLX_PACKAGE_BUILD_DIR: another configured and built tree to package (default ./build).
# DLX_PACKAGE_OUT: where the packages go (default ./dist, -dbgsym packages in dist/dbgsym);
#   dpkg-buildpackage works in DIR.work.
# DEB_BUILD_OPTIONS=noautodbgsym: no -dbgsym packages (their compression takes most of the time).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=$(realpath -m "${DLX_PACKAGE_BUILD_DIR:-$root/build}")

usage="usage: bash scripts/package.sh [--no-build] [--portable LIBRARY]"
build_first=yes portable=
while [ $# -gt 0 ]; do
  case $1 in
    --no-build) build_first= ;;
    --portable)
      [ $# -ge 2 ] || { echo "package.sh: --portable needs the portable libdlx_c's path ($usage)" >&2; exit 2; }
      portable=$(realpath -m -- "$2"); shift ;;
    *) echo "package.sh: unknown argument '$1' ($usage)" >&2; exit 2 ;;
  esac
  shift
done
if [ -n "$portable" ]; then
  # Refused before anything is built: a library that is not portable, or not this dlx's.
  [ -f "$portable" ] ||
    { echo "package.sh: --portable $portable: no such file (build it with bash scripts/portable-c.sh)" >&2; exit 1; }
  /usr/bin/python3 -c 'import elftools' 2> /dev/null ||
    { echo "package.sh: --portable needs python3-pyelftools (bash scripts/install-deps.sh installs it)" >&2; exit 1; }
  check=$(/usr/bin/python3 tests/portable/portable_library_check.py "$portable" \
            --max-glibc "${DLX_PORTABLE_MAX_GLIBC:-2.28}" 2>&1) ||
    { printf '%s\n' "$check" >&2
      echo "package.sh: --portable $portable is not a portable libdlx_c (above: why); build one with bash scripts/portable-c.sh" >&2
      exit 1; }
fi
if [ -n "$build_first" ] && [ -z "${DLX_PACKAGE_BUILD_DIR:-}" ]; then bash scripts/build.sh product; fi
[ -f "$build/CMakeCache.txt" ] ||
  { echo "package.sh: $build is not a configured build directory: run bash scripts/build.sh" >&2; exit 1; }
grep -qx 'CMAKE_INSTALL_PREFIX:PATH=/usr' "$build/CMakeCache.txt" ||
  { echo "package.sh: $build is not configured with the prefix /usr: reconfigure it with bash scripts/build.sh (which sets the Debian layout)" >&2; exit 1; }
profiles=()
if [ -n "$portable" ]; then
  exports() { nm -D --defined-only "$1" | awk '$2 == "T" && $3 ~ /^dlx_/ { print $3 }' | sort; }
  built=$(find "$build/lib" -maxdepth 1 -name 'libdlx_c.so.*' -type f | head -1)
  [ -n "$built" ] || { echo "package.sh: $build/lib has no libdlx_c to compare the portable one with" >&2; exit 1; }
  drift=$(diff <(exports "$built") <(exports "$portable") | grep '^[<>]' || true)
  [ -z "$drift" ] || {
    echo "package.sh: --portable $portable exports another C API than this build's libdlx_c ($built):" >&2
    sed -e 's/^< / only in the build: /' -e 's/^> / only in the portable one: /' <<< "$drift" | head -20 >&2
    echo "package.sh: rebuild it from this checkout with bash scripts/portable-c.sh" >&2
    exit 1
  }
  profiles=(--build-profiles=pkg.dlx.portable)
  export DLX_PORTABLE_LIB=$portable
fi

# dpkg-buildpackage in a copy of what the packages take from the tree (debian/, the docs), so
# that nothing is written into the checkout but dist/; its .changes and .buildinfo stay there.
out=$(realpath -m "${DLX_PACKAGE_OUT:-$root/dist}")
work=$out.work
rm -rf "$work"
mkdir -p "$work/src"
cp -a debian README.md docs "$work/src/"
(cd "$work/src" &&
 DLX_BUILD_DIR=$build dpkg-buildpackage --build=binary --no-sign "${profiles[@]}" > "$work/dpkg-buildpackage.log" 2>&1) ||
  { tail -40 "$work/dpkg-buildpackage.log"; echo "package.sh: dpkg-buildpackage failed (log: $work/dpkg-buildpackage.log)" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out"
# The debugging symbols apart, so that dist/*.deb is what a host installs.
mkdir "$out/dbgsym"
for deb in "$work"/*.deb; do
  case $deb in *-dbgsym_*) cp "$deb" "$out/dbgsym/" ;; *) cp "$deb" "$out/" ;; esac
done
(cd "$out" && ls -1 *.deb && ls -1 dbgsym/*.deb 2> /dev/null) || true
