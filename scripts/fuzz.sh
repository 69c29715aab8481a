#!/usr/bin/env bash
# A bounded libFuzzer run over the experiment parser (ASan + UBSan), starting from the committed
# seed corpus. Exit status non-zero on any crash, leak, hang or sanitizer report.
#   bash scripts/fuzz.sh [SECONDS]      (default 60)
# DLX_FUZZ_JOBS=N limits the build's parallel jobs (scripts/test.sh runs it beside ctest with 1).
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keyed on paths relative to the checkout, so a fresh clone elsewhere reuses earlier builds.
export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
seconds=${1:-60}
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DDLX_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DDLX_WITH_CUDA=OFF > build-fuzz.configure.log 2>&1 || { cat build-fuzz.configure.log; exit 1; }
cmake --build build-fuzz --target config_fuzz ${DLX_FUZZ_JOBS:+--parallel "$DLX_FUZZ_JOBS"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The parser's seeds are the files at the top; corpus/journal/ seeds journal_fuzz.
find tests/fuzz/corpus -maxdepth 1 -type f -exec cp {} "$work"/ \;
# -rss_limit_mb bounds memory (alias bombs must stay small); -timeout flags any input over 2 s.
build-fuzz/bin/config_fuzz "$work" -max_total_time="$seconds" -rss_limit_mb=1024 -timeout=2 \
  -max_len=8192 -dict=tests/fuzz/experiment.dict -print_final_stats=1 2>&1 | tail -20
echo "# fuzz: ${seconds}s over the experiment parser: no crash, leak, hang or sanitizer report"
