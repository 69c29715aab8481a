# SPDX-License-Identifier: Apache-2.0
# Sourced by the benchmarks that run on a local cluster (bench/launch, bench/snapshot): reads
# --state-dir CLUSTER_STATE --build-dir BUILD [--repeats N] into state_dir, build_dir (absolute)
# and repeats (the caller sets its default first).
state_dir="" build_dir=""
cluster_bench_usage="usage: $0 --state-dir CLUSTER_STATE --build-dir BUILD [--repeats N]"
while [ $# -gt 0 ]; do
  case $1 in
    --state-dir) state_dir=$2; shift 2 ;;
    --build-dir) build_dir=$(cd "$2" && pwd); shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    *) echo "$cluster_bench_usage" >&2; exit 2 ;;
  esac
done
[ -n "$state_dir" ] && [ -n "$build_dir" ] || { echo "$cluster_bench_usage" >&2; exit 2; }
