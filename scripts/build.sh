#!/usr/bin/env bash
# Configure and build dlx into ./build (Ninja, ccache when present, warnings as errors).
# With CI=true (a fresh clone, nothing cached) debug info is line tables only (-g1): the same
# optimized code, backtraces still name functions, files and lines, and every object compiles
# about 30% faster than with full -g (g++ 12).
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keyed on paths relative to the checkout, so a fresh clone elsewhere reuses earlier builds.
export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
ci_args=()
if [ "${CI:-}" = true ]; then
  ci_args=(-DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
           -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG")
fi
cmake -S . -B build -G Ninja -DDLX_WERROR=ON "${ci_args[@]}" ${DLX_CMAKE_ARGS:-} > build.configure.log 2>&1 ||
  { cat build.configure.log; exit 1; }
cmake --build build --parallel "$(nproc)"
