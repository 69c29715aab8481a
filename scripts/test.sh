#!/usr/bin/env bash
# Everything CI checks, from a fresh clone: install what is needed, build with warnings as errors,
# run every test (unit, MPI, cluster) with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
# Open MPI refuses root without these; CI runs as root. Loopback-only TCP across local "nodes".
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_tcp_if_include=lo
ctest --test-dir build --output-on-failure --timeout 900 ${DLX_CTEST_ARGS:-}
