#!/usr/bin/env bash
# Configure and build dlx into ./build (Ninja, ccache when present, warnings as errors).
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keyed on paths relative to the checkout, so a fresh clone elsewhere reuses earlier builds.
export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
cmake -S . -B build -G Ninja -DDLX_WERROR=ON ${DLX_CMAKE_ARGS:-} > build.configure.log 2>&1 ||
  { cat build.configure.log; exit 1; }
cmake --build build --parallel "$(nproc)"
