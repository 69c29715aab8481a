#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The build options (docs/admin-guide.md): with DLX_BUILD_TESTS=OFF the project configures with
# Catch2 unavailable and builds no test or benchmark, but the programs, the plugin, the libraries
# and the example; with DLX_BUILD_EXAMPLES=OFF no example either (and so no tests).
# Usage: build_options_test.sh SOURCE_DIR GENERATOR C_COMPILER CXX_COMPILER
set -euo pipefail
source=$1 generator=$2 cc=$3 cxx=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
configure() {  # DIR ARGS...: configure, then list the targets the build would make
  local dir=$work/$1; shift
  if ! cmake -S "$source" -B "$dir" -G "$generator" -DCMAKE_C_COMPILER="$cc" \
         -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_DISABLE_FIND_PACKAGE_Catch2=ON "$@" \
         > "$dir.log" 2>&1; then
    cat "$dir.log"; echo "FAIL: cmake $* does not configure without Catch2"; failures=$((failures + 1))
    return
  fi
  cmake --build "$dir" --target help > "$dir.targets"
}
has() { grep -Eq "(^|[ :.])$2(:|$| )" "$work/$1.targets"; }
expect() {  # BUILD yes|no TARGET...
  local build=$1 want=$2; shift 2
  for target in "$@"; do
    if has "$build" "$target"; then got=yes; else got=no; fi
    if [ "$got" = "$want" ]; then
      echo "ok: $build: $target built=$want"
    else
      echo "FAIL: $build: $target: expected built=$want"; failures=$((failures + 1))
    fi
  done
}
# With a distribution's directories, relative to the prefix as given (not made absolute).
configure no-tests -DDLX_BUILD_TESTS=OFF -DCMAKE_INSTALL_PREFIX=/usr \
  -DDLX_PYTHON_INSTALL_DIR=lib/python3/dist-packages -DDLX_SLURM_PLUGINDIR=lib/slurm-test
[ -f "$work/no-tests.targets" ] && {
  expect no-tests yes dlx dlx-launch dlx_spank dlx_sdk_shared dlx_c dlx-example-logreg
  expect no-tests no config_parse_test bench_searcher bench_checkpoint
  for entry in DLX_PYTHON_INSTALL_DIR:STRING=lib/python3/dist-packages \
               DLX_SLURM_PLUGINDIR:STRING=lib/slurm-test; do
    if grep -qx "$entry" "$work/no-tests/CMakeCache.txt"; then echo "ok: no-tests: $entry"
    else echo "FAIL: no-tests: the cache lacks $entry"; failures=$((failures + 1)); fi
  done
}
configure no-examples -DDLX_BUILD_EXAMPLES=OFF
[ -f "$work/no-examples.targets" ] && {
  expect no-examples yes dlx dlx-launch dlx_spank dlx_sdk_shared dlx_c
  expect no-examples no dlx-example-logreg config_parse_test bench_searcher
}
echo "# build_options_test: $failures failure(s)"
[ "$failures" -eq 0 ]
