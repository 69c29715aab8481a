#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Everything CI checks, from a fresh clone: install what is needed, build with warnings as errors,
# compile every source alone (scripts/compile-check.sh: the missing #include the unity build
# hides), fuzz the experiment parser and the HDF5 readers for a bounded time (scripts/fuzz.sh),
# run every test (unit, MPI, cluster) with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
# The bounded fuzz run (ASan + UBSan, its own clang build; DLX_FUZZ_SECONDS per target) and the
# compile check (every source compiled alone, no code generation) go beside ctest rather than
# before it: most of ctest's time is cluster tests waiting on Slurm, so their builds (one job each,
# at lower priority than the tests) and the fuzz run no longer add to the total. Their output is
# printed after ctest's; the run fails if any of the three fails.
mkdir -p build-fuzz
fuzz_log=build-fuzz/fuzz.log check_log=build-check.log
set -m  # each in a process group of its own, so that the trap below ends all of it
nice -n 10 env DLX_FUZZ_JOBS=1 bash scripts/fuzz.sh "${DLX_FUZZ_SECONDS:-45}" > "$fuzz_log" 2>&1 &
fuzz_pid=$!
nice -n 10 env DLX_CHECK_JOBS=1 bash scripts/compile-check.sh --unity-build build > "$check_log" 2>&1 &
check_pid=$!
set +m
# An interrupted run leaves no fuzzer or compiler behind.
trap 'kill -- -"$fuzz_pid" -"$check_pid" 2> /dev/null || true' EXIT
# Open MPI refuses root without these; CI runs as root. Loopback-only TCP across local "nodes".
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_tcp_if_include=lo
# Tests in parallel: the cluster tests take turns (RESOURCE_LOCK, tests/cluster/CMakeLists.txt)
# while the unit and MPI tests run beside them.
ctest_status=0
ctest --test-dir build --output-on-failure --timeout 900 --parallel "$(nproc)" ${DLX_CTEST_ARGS:-} ||
  ctest_status=$?
fuzz_status=0 check_status=0
wait "$fuzz_pid" || fuzz_status=$?
wait "$check_pid" || check_status=$?
trap - EXIT
echo "# ---- scripts/compile-check.sh (ran beside ctest), exit status $check_status:"
if [ "$check_status" -eq 0 ]; then tail -1 "$check_log"; else tail -300 "$check_log"; fi
echo "# ---- scripts/fuzz.sh (ran beside ctest), exit status $fuzz_status:"
cat "$fuzz_log"
verdict() { if [ "$1" -eq 0 ]; then echo passed; else echo "FAILED (exit status $1)"; fi; }
echo "# test.sh: ctest $(verdict "$ctest_status"); compile check $(verdict "$check_status"); fuzz $(verdict "$fuzz_status")"
[ "$ctest_status" -eq 0 ] && [ "$check_status" -eq 0 ] && [ "$fuzz_status" -eq 0 ]
