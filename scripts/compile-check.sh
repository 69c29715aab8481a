#!/usr/bin/env bash
# Every C and C++ source of dlx compiled alone, warnings as errors, as the build compiles it but
# without code generation (-fsyntax-only): the check for a missing #include, which the unity build
# of scripts/build.sh hides whenever an earlier file of the same batch includes the header (a
# plain `cmake -S . -B build-dev` build, one object per source, then fails). CI runs it beside
# ctest (scripts/test.sh). It configures build-check/ with DLX_COMPILE_CHECK=ON, generates what the
# sources include (protobuf headers, embedded assets) and compiles every object; nothing links.
#   bash scripts/compile-check.sh      DLX_CHECK_JOBS=N parallel compiles (default: nproc)
# Exit status non-zero when a source does not compile alone or warns; ninja prints each (-k 0).
set -euo pipefail
cd "$(dirname "$0")/.."
# The configure of scripts/build.sh: the same flags, so the same warnings.
cmake -S . -B build-check -G Ninja -DDLX_WERROR=ON -DDLX_COMPILE_CHECK=ON \
  -DCMAKE_INSTALL_PREFIX=/usr -DDLX_PYTHON_INSTALL_DIR=lib/python3/dist-packages ${DLX_CMAKE_ARGS:-} \
  > build-check.configure.log 2>&1 || { cat build-check.configure.log; exit 1; }
# Every C and C++ object of every target (CUDA's nvcc has no -fsyntax-only; its one source is
# compiled by the real build).
mapfile -t objects < <(ninja -C build-check -t targets all | sed -n 's/^\(.*\.o\): C\(XX\)\{0,1\}_COMPILER_.*/\1/p')
[ "${#objects[@]}" -gt 0 ] || { echo "compile-check: no object targets in build-check/" >&2; exit 1; }
start=$SECONDS
# Without ccache: a compile without output is nothing it can keep.
CCACHE_DISABLE=1 ninja -C build-check -k 0 -j "${DLX_CHECK_JOBS:-$(nproc)}" "${objects[@]}"
echo "# compile-check: ${#objects[@]} sources compiled alone, warnings as errors, in $((SECONDS - start)) s"
