#!/usr/bin/env bash
# Everything CI checks, from a fresh clone: install what is needed, build with warnings as errors,
# fuzz the experiment parser for a bounded time, run every test (unit, MPI, cluster) with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
# A bounded fuzz run of the experiment parser (ASan + UBSan) first, so ctest's summary ends the log.
bash scripts/fuzz.sh "${DLX_FUZZ_SECONDS:-45}"
# Open MPI refuses root without these; CI runs as root. Loopback-only TCP across local "nodes".
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_tcp_if_include=lo
ctest --test-dir build --output-on-failure --timeout 900 ${DLX_CTEST_ARGS:-}
