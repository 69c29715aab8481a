#!/usr/bin/env bash
# Everything CI checks, from a fresh clone: install what is needed, build with warnings as errors,
# fuzz the experiment parser and the HDF5 readers for a bounded time (scripts/fuzz.sh), run every
# test (unit, MPI, cluster) with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
# The bounded fuzz run (ASan + UBSan, its own clang build; DLX_FUZZ_SECONDS per target) goes beside
# ctest rather than before it: most of ctest's time is cluster tests waiting on Slurm, so the fuzz
# build (one job, at lower priority than the tests) and its run no longer add to the total. Its
# output is printed after ctest's; the run fails if either fails.
mkdir -p build-fuzz
fuzz_log=build-fuzz/fuzz.log
set -m  # the fuzz run in a process group of its own, so that the trap below ends all of it
nice -n 10 env DLX_FUZZ_JOBS=1 bash scripts/fuzz.sh "${DLX_FUZZ_SECONDS:-45}" > "$fuzz_log" 2>&1 &
fuzz_pid=$!
set +m
trap 'kill -- -"$fuzz_pid" 2> /dev/null || true' EXIT  # an interrupted run leaves no fuzzer behind
# Open MPI refuses root without these; CI runs as root. Loopback-only TCP across local "nodes".
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_tcp_if_include=lo
# Tests in parallel: the cluster tests take turns (RESOURCE_LOCK, tests/cluster/CMakeLists.txt)
# while the unit and MPI tests run beside them.
ctest_status=0
ctest --test-dir build --output-on-failure --timeout 900 --parallel "$(nproc)" ${DLX_CTEST_ARGS:-} ||
  ctest_status=$?
fuzz_status=0
wait "$fuzz_pid" || fuzz_status=$?
trap - EXIT
echo "# ---- scripts/fuzz.sh (ran beside ctest), exit status $fuzz_status:"
cat "$fuzz_log"
verdict() { if [ "$1" -eq 0 ]; then echo passed; else echo "FAILED (exit status $1)"; fi; }
echo "# test.sh: ctest $(verdict "$ctest_status"); fuzz $(verdict "$fuzz_status")"
[ "$ctest_status" -eq 0 ] && [ "$fuzz_status" -eq 0 ]
