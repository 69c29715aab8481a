#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configure and build dlx into ./build (Ninja, ccache when present, warnings as errors).
#   bash scripts/build.sh [TARGET...]   everything by default; else only TARGETs and what they need
#   (scripts/demo.sh: the programs and the plugin; scripts/package.sh: `product`, all but the tests).
# Debug info is line tables only (-g1): the same optimized code, backtraces (and the -dbgsym
# packages of scripts/package.sh) still name functions, files and lines, and every object compiles
# about 27% faster than with full -g (g++ 12): the first run of a fresh clone (scripts/demo.sh)
# and CI's are mostly compiling. Once CI's choice only; the demo, CI and the packages now build
# the same tree, so none rebuilds another's. Full -g for a debugger: a plain `cmake -S . -B DIR`
# build (RelWithDebInfo), or DLX_CMAKE_ARGS='-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g -DNDEBUG'.
# Always a unity build (CMAKE_UNITY_BUILD: each target's sources compiled in batches of 8):
# most of a dlx object's compile time is parsing the same heavy headers (nlohmann-json, fmt,
# HDF5, yaml-cpp, Catch2). The searcher and config libraries compile in 101 s of CPU instead of
# 311 (g++ 12, -O2 -g1, no ccache); the whole cold build takes 970 s. A plain `cmake -S . -B DIR`
# build (one object per source, quicker to rebuild after an edit) is the developers' build, so
# both must compile: a file-local name shared by two sources of one target breaks only this one,
# a missing #include only the other (scripts/compile-check.sh, run by CI, compiles each source alone).
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keyed on paths relative to the checkout, so a fresh clone elsewhere reuses earlier builds.
export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
line_tables=(-DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG")
# The Debian layout (prefix /usr, the Python module on python3's own path): scripts/package.sh
# packages this very tree (debian/rules); `cmake --install build --prefix DIR` installs elsewhere.
debian_layout=(-DCMAKE_INSTALL_PREFIX=/usr -DDLX_PYTHON_INSTALL_DIR=lib/python3/dist-packages)
cmake -S . -B build -G Ninja -DDLX_WERROR=ON "${debian_layout[@]}" -DCMAKE_UNITY_BUILD=ON "${line_tables[@]}" ${DLX_CMAKE_ARGS:-} > build.configure.log 2>&1 ||
  { cat build.configure.log; exit 1; }
targets=()
[ "$#" -eq 0 ] || targets=(--target "$@")
cmake --build build --parallel "$(nproc)" "${targets[@]}"
