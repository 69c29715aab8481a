#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Everything CI checks, from a fresh clone: install what is needed, build with warnings as errors,
# compile every source of the product alone (scripts/compile-check.sh --product: the missing
# #include the unity build hides; the tests' and benchmarks' sources too without --product), fuzz
# the experiment parser and the HDF5 readers for a bounded time (scripts/fuzz.sh), run every test
# (unit, MPI, cluster) with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase's wall-clock and CPU time go to the log (bash's `time`: real, then user + sys of the
# phase and its children), to see where CI's minutes go.
phase() { local TIMEFORMAT="# test.sh: $1 took %R s wall, %U s user + %S s sys"; shift; time "$@"; }
phase "install" bash scripts/install-deps.sh
phase "build" bash scripts/build.sh
# The bounded fuzz run (ASan + UBSan, its own clang build; DLX_FUZZ_SECONDS per target, 30 by
# default: a smoke run from the committed corpus; `bash scripts/fuzz.sh 600` is the long one) and the
# compile check (the product's sources compiled alone, no code generation) go beside ctest rather
# than before it: most of ctest's time is cluster tests waiting on Slurm, so their builds and the
# fuzz run use the CPU the tests leave idle, at lower priority (the compile check at the lowest:
# nothing in it is timed; the fuzz run at nice 10, since libFuzzer's -timeout is wall-clock time).
# Their output is printed after ctest's; the run fails if any of the three fails.
mkdir -p build-fuzz
fuzz_log=build-fuzz/fuzz.log check_log=build-check.log
set -m  # each in a process group of its own, so that the trap below ends all of it
{ TIMEFORMAT="# fuzz.sh took %R s wall, %U s user + %S s sys"; time nice -n 10 env DLX_FUZZ_JOBS="$(nproc)" bash scripts/fuzz.sh "${DLX_FUZZ_SECONDS:-30}"; } > "$fuzz_log" 2>&1 &
fuzz_pid=$!
{ TIMEFORMAT="# compile-check.sh took %R s wall, %U s user + %S s sys"; time nice -n 19 env DLX_CHECK_JOBS="$(nproc)" bash scripts/compile-check.sh --product --unity-build build; } > "$check_log" 2>&1 &
check_pid=$!
set +m
# An interrupted run leaves no fuzzer or compiler behind.
trap 'kill -- -"$fuzz_pid" -"$check_pid" 2> /dev/null || true' EXIT
# Open MPI refuses root without these; CI runs as root. Loopback-only TCP across local "nodes".
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_tcp_if_include=lo
# Tests in parallel: the cluster tests take turns on each of two clusters (RESOURCE_LOCK,
# tests/cluster/CMakeLists.txt) while the unit and MPI tests run beside them. One slot more than
# cores: the two chains hold two slots while mostly waiting on Slurm, and the unit tests must not
# wait for both to end.
ctest_status=0
phase "ctest" ctest --test-dir build --output-on-failure --timeout 900 --parallel "$(($(nproc) + 1))" ${DLX_CTEST_ARGS:-} ||
  ctest_status=$?
echo "# test.sh: ctest ended; waiting for the compile check and the fuzz run"
wait_start=$SECONDS
fuzz_status=0 check_status=0
wait "$fuzz_pid" || fuzz_status=$?
wait "$check_pid" || check_status=$?
trap - EXIT
echo "# test.sh: $((SECONDS - wait_start)) s waited after ctest"
echo "# ---- scripts/compile-check.sh (ran beside ctest), exit status $check_status:"
if [ "$check_status" -eq 0 ]; then tail -2 "$check_log"; else tail -300 "$check_log"; fi
echo "# ---- scripts/fuzz.sh (ran beside ctest), exit status $fuzz_status:"
cat "$fuzz_log"
verdict() { if [ "$1" -eq 0 ]; then echo passed; else echo "FAILED (exit status $1)"; fi; }
echo "# test.sh: ctest $(verdict "$ctest_status"); compile check $(verdict "$check_status"); fuzz $(verdict "$fuzz_status")"
[ "$ctest_status" -eq 0 ] && [ "$check_status" -eq 0 ] && [ "$fuzz_status" -eq 0 ]
