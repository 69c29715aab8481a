#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fault-tolerance figures for docs/benchmarks.md ("Fault tolerance"): work lost per preemption
# over the checkpoint period, notice-to-exit time over the save time, and requeue-to-first-step
# time over a fresh start's, on the 2-node example logreg trial of a local Slurm cluster
# (bench_preemption.py measures and prints the `# result:` lines). Not registered in ctest: it
# takes a few minutes and needs root.
#
#   bench/preemption/bench_preemption.sh [--build-dir DIR] [--port-base N] [-- BENCH_ARGS...]
#   bench/preemption/bench_preemption.sh --state-dir DIR [-- BENCH_ARGS...]
#
# Without --state-dir it installs --build-dir (default build/) into /tmp/dlx-bench-preempt-<pid>,
# brings a cluster up there (ports --port-base .. +3; default $DLX_TEST_PORT_BASE, else 17000)
# and stops it at the end. --state-dir: a running cluster laid out by tests/cluster/setup.sh.
# BENCH_ARGS: --period P (checkpoint period in batches, default 50), --step-delay-us (20000),
# --notices N (4), --kills N (4), --seed S (1); see bench_preemption.py --help.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
state_dir="" build_dir=$repo/build port_base=${DLX_TEST_PORT_BASE:-17000}
die() { echo "bench_preemption: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --state-dir) [ $# -ge 2 ] || die "--state-dir needs a value"; state_dir=$2; shift 2 ;;
    --build-dir) [ $# -ge 2 ] || die "--build-dir needs a value"; build_dir=$2; shift 2 ;;
    --port-base) [ $# -ge 2 ] || die "--port-base needs a value"; port_base=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $1 (see --help; arguments for the measurement go after --)" ;;
  esac
done
[ "$(id -u)" = 0 ] || die "run as root: it starts the cluster and SIGKILLs trainer ranks"
started=0
if [ -z "$state_dir" ]; then
  [ -x "$build_dir/bin/dlx" ] || die "--build-dir $build_dir: no bin/dlx (build first)"
  state_dir=/tmp/dlx-bench-preempt-$$
  DLX_TEST_STATE=$state_dir DLX_TEST_PORT_BASE=$port_base bash "$repo/tests/cluster/setup.sh" "$build_dir" > /dev/null ||
    die "could not bring the cluster up (see $state_dir/cluster/log)"
  started=1
  trap '"$state_dir/prefix/bin/dlx" cluster down --state-dir "$state_dir/cluster" > /dev/null 2>&1 || true; rm -rf "$state_dir"' EXIT
fi
[ -x "$state_dir/prefix/bin/dlx" ] && [ -d "$state_dir/work" ] ||
  die "--state-dir $state_dir: not laid out by tests/cluster/setup.sh (prefix/, cluster/, work/)"
echo "# bench_preemption: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)," \
  "Slurm $(SLURM_CONF=$state_dir/cluster/etc/slurm.conf sinfo --version 2> /dev/null | cut -d" " -f2), cluster in $state_dir$([ "$started" = 1 ] && echo ' (started here)')"
/usr/bin/python3 "$here/bench_preemption.py" --state-dir "$state_dir" "$@"
