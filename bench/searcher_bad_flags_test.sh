#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench_searcher refuses bad flags with a message that names the flag: every case must exit
# non-zero and print its message (no run starts).
#   searcher_bad_flags_test.sh PATH/TO/bench_searcher
set -u
bench="$1"
failures=0
expect() {  # expect MESSAGE ARGS...: bench_searcher ARGS fails and prints MESSAGE
  local message="$1"; shift
  local out rc
  out="$("$bench" "$@" 2>&1)" && rc=0 || rc=$?
  if [ "$rc" -ne 0 ] && grep -qF -- "$message" <<<"$out"; then
    echo "ok   $* -> $message"
  else
    echo "FAIL $*: expected a non-zero exit and '$message', got exit $rc: $out"
    failures=$((failures + 1))
  fi
}
expect "bench_searcher: --seeds, --workers and --trials must be at least 1" --seeds 0
expect "bench_searcher: --seeds, --workers and --trials must be at least 1" --workers 0
expect "bench_searcher: --noise must be a standard deviation, 0 or more" --noise -0.5
expect "bench_searcher: --asha-method must be async_halving or adaptive_asha, not 'grid'" --asha-method grid
expect "bench_searcher: missing value for --asha" --asha
expect "bench_searcher: unknown flag --sedes" --sedes 3
exit "$failures"
