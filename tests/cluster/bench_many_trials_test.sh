#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The large-search benchmark (bench/scale/bench_many_trials.sh) in a small form, so that it keeps
# working: 24 trials on 4 array tasks against an 8-trial reference. Its checks are the real ones
# (every trial completed once, every ticket done by one task); the ratio is printed, not judged
# (docs/benchmarks.md has the 5,000-trial figure). Usage: bench_many_trials_test.sh BUILD_DIR
source "$(dirname "$0")/lib.sh"
build_dir=${1:?usage: bench_many_trials_test.sh BUILD_DIR}
out=$(bash "$SOURCE_DIR/bench/scale/bench_many_trials.sh" --state-dir "$CLUSTER" --build-dir "$build_dir" \
  --trials 24 --reference 8 --max-array-tasks 4 2>&1) || fail "the benchmark failed: $out"
echo "$out"
expect_contains "bench_many_trials" "$out" \
  "# 24 trials on 4 array tasks: every trial completed with one validation report, each ticket done once"
expect_contains "bench_many_trials" "$out" "# result: per_trial_wall_many_vs_8 "
note "the benchmark ran: $(grep '^# result:' <<< "$out")"
