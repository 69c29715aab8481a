#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Bounded libFuzzer runs (ASan + UBSan), one target after another, each from its committed seed
# corpus tests/fuzz/corpus/<target>/ for SECONDS. Exit status non-zero when any target reports a
# crash, leak, hang, out-of-memory or sanitizer finding; every target runs either way.
#   bash scripts/fuzz.sh [SECONDS] [TARGET...]   (default 60 s each; default targets: ci_targets)
# DLX_FUZZ_JOBS=N limits the build's parallel jobs (scripts/test.sh runs it beside ctest with 1).
# A finding's input is kept as build-fuzz/artifacts/<target>-crash-... (rerun: the target's
# executable with that file as its argument).
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keyed on paths relative to the checkout, so a fresh clone elsewhere reuses earlier builds.
export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
seconds=${1:-60}
shift || true

# The targets: <target> is the executable <target>_fuzz (tests/fuzz/CMakeLists.txt), its seed
# corpus is tests/fuzz/corpus/<target>/, and these are its libFuzzer options. To add one: a line
# here, the corpus directory, the executable, and its name in ci_targets if CI should run it.
#   -rss_limit_mb bounds the whole process (alias bombs, files that declare gigabytes must stay
#   small); -malloc_limit_mb flags any single allocation above it (a reader sizing memory by what
#   a file declares); -timeout flags any input that takes longer (a hang, a quadratic scan).
declare -A options=(
  [config]="-max_len=8192 -dict=tests/fuzz/experiment.dict -rss_limit_mb=1024 -timeout=2"
  [checkpoint]="-max_len=2048 -rss_limit_mb=2048 -malloc_limit_mb=256 -timeout=10"
  [trial_record]="-max_len=2048 -rss_limit_mb=2048 -malloc_limit_mb=256 -timeout=10"
  # The metrics log reader: its heap counted, aborting past 4x the log's bytes + 2 MiB
  # (metrics_log_fuzz.cpp); the timeout catches a quadratic replay of a 4 MiB log.
  [metrics_log]="-max_len=4096 -rss_limit_mb=1024 -malloc_limit_mb=64 -timeout=10"
  # The journal scan, searcher-event replay and snapshot decoding (journal_fuzz.cpp).
  [journal]="-max_len=65536 -dict=tests/fuzz/journal.dict -rss_limit_mb=2048 -timeout=5"
  # Raw bytes as an HDF5 file: by hand only (libhdf5 1.10.8's own crash bugs, h5_raw_fuzz.cpp).
  [h5_raw]="-max_len=65536 -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=10"
)
ci_targets=(config checkpoint trial_record metrics_log journal)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${ci_targets[@]}")
for target in "${targets[@]}"; do
  [ -n "${options[$target]+set}" ] || { echo "fuzz.sh: unknown target '$target' (known: ${!options[*]})" >&2; exit 2; }
done

# A unity build with line tables (-g1) at -O1 (libFuzzer's and ASan's recommended level: a
# sanitizer's report still names each frame's file and line, and it compiles faster than -O2: CI
# builds this beside its tests on two cores).
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DDLX_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_UNITY_BUILD=ON -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DDLX_WITH_CUDA=OFF > build-fuzz.configure.log 2>&1 || { cat build-fuzz.configure.log; exit 1; }
executables=()
for target in "${targets[@]}"; do executables+=("${target}_fuzz"); done
cmake --build build-fuzz --target "${executables[@]}" ${DLX_FUZZ_JOBS:+--parallel "$DLX_FUZZ_JOBS"}

# Leaks inside libhdf5 itself (its own bugs on malformed files) are not findings; dlx's are.
export LSAN_OPTIONS="suppressions=$PWD/tests/fuzz/lsan-hdf5.supp:print_suppressions=0"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p build-fuzz/artifacts
failed=()
for target in "${targets[@]}"; do
  mkdir -p "$work/$target"
  cp tests/fuzz/corpus/"$target"/* "$work/$target"/
  echo "# fuzz: $target, ${seconds}s"
  status=0
  # shellcheck disable=SC2086  # the options are words
  build-fuzz/bin/"${target}_fuzz" "$work/$target" -max_total_time="$seconds" ${options[$target]} \
    -artifact_prefix="build-fuzz/artifacts/$target-" -print_final_stats=1 2>&1 | tail -20 || status=$?
  if [ "$status" -eq 0 ]; then
    echo "# fuzz: $target: no crash, leak, hang, out-of-memory or sanitizer report"
  else
    echo "# fuzz: $target: FAILED (exit status $status)"
    failed+=("$target")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "# fuzz: FAILED: ${failed[*]}"
  exit 1
fi
echo "# fuzz: ${seconds}s each over ${targets[*]}: no finding"
