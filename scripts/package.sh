#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Debian packages of dlx into dist/ (docs/admin-guide.md): dlx, slurm-spank-plugin-dlx, libdlx0.1,
# libdlx-c0, libdlx-dev and their -dbgsym packages.
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
# Usage: bash scripts/package.sh [--no-build]
#   By default scripts/build.sh first brings ./build up to date (configure with the Debian
#   layout, incremental build) for what the packages hold: the target `product`, everything but the
#   tests and benchmarks (cmake/DlxProduct.cmake). --no-build packages ./build as it is (the ctest
#   test `package.*`, which runs after the build it tests, must not reconfigure it).
# DLX_PACKAGE_BUILD_DIR: another configured and built tree to package (default ./build).
# DLX_PACKAGE_OUT: where the packages go (default ./dist, -dbgsym packages in dist/dbgsym);
#   dpkg-buildpackage works in DIR.work.
# DEB_BUILD_OPTIONS=noautodbgsym: no -dbgsym packages (their compression takes most of the time).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=$(realpath -m "${DLX_PACKAGE_BUILD_DIR:-$root/build}")

case "${1:-}" in
  "") [ -n "${DLX_PACKAGE_BUILD_DIR:-}" ] || bash scripts/build.sh product ;;
  --no-build) ;;
  *) echo "package.sh: unknown argument '$1' (usage: bash scripts/package.sh [--no-build])" >&2; exit 2 ;;
esac
[ -f "$build/CMakeCache.txt" ] ||
  { echo "package.sh: $build is not a configured build directory: run bash scripts/build.sh" >&2; exit 1; }
grep -qx 'CMAKE_INSTALL_PREFIX:PATH=/usr' "$build/CMakeCache.txt" ||
  { echo "package.sh: $build is not configured with the prefix /usr: reconfigure it with bash scripts/build.sh (which sets the Debian layout)" >&2; exit 1; }

# dpkg-buildpackage in a copy of what the packages take from the tree (debian/, the docs), so
# that nothing is written into the checkout but dist/; its .changes and .buildinfo stay there.
out=$(realpath -m "${DLX_PACKAGE_OUT:-$root/dist}")
work=$out.work
rm -rf "$work"
mkdir -p "$work/src"
cp -a debian README.md docs "$work/src/"
(cd "$work/src" &&
 DLX_BUILD_DIR=$build dpkg-buildpackage --build=binary --no-sign > "$work/dpkg-buildpackage.log" 2>&1) ||
  { tail -40 "$work/dpkg-buildpackage.log"; echo "package.sh: dpkg-buildpackage failed (log: $work/dpkg-buildpackage.log)" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out"
# The debugging symbols apart, so that dist/*.deb is what a host installs.
mkdir "$out/dbgsym"
for deb in "$work"/*.deb; do
  case $deb in *-dbgsym_*) cp "$deb" "$out/dbgsym/" ;; *) cp "$deb" "$out/" ;; esac
done
(cd "$out" && ls -1 *.deb && ls -1 dbgsym/*.deb 2> /dev/null) || true
