#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Requeue downtime under max_concurrent_trials, for docs/benchmarks.md ("Requeue downtime"; issue
# 32's target: requeue-to-running <= 20 s on the local cluster). A random search of 4 long logreg
# trials through one slot (`%1`); trial 0's array task is requeued with `scontrol requeue` while it
# trains, --requeues times, and each time the script measures from the requeue to the moment the
# resumed trainer has opened trial.h5 again (its `restarts` attribute counts the run: polled every
# 0.1 s). Meanwhile the freed slot goes to new tickets, which must give it back at once
# (slot_yield.hpp) instead of starting trials 1-3: the script counts their "gives its slot back"
# lines. Prints one line per requeue and
#   # result: requeue_to_running_s <median> (target <= 20 s; max <max>, n <N>)
# Not registered in ctest: about 30 s a requeue, and it needs root.
#
#   bench/preemption/bench_requeue_downtime.sh --state-dir DIR [--requeues N]
#
# DIR: a running cluster laid out by tests/cluster/setup.sh (the ctest one, or
# `DLX_TEST_STATE=DIR DLX_TEST_PORT_BASE=P bash tests/cluster/setup.sh build`).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
state_dir="" requeues=3
die() { echo "bench_requeue_downtime: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --state-dir) [ $# -ge 2 ] || die "--state-dir needs a value"; state_dir=$2; shift 2 ;;
    --requeues) [ $# -ge 2 ] || die "--requeues needs a value"; requeues=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $1 (see --help)" ;;
  esac
done
[ -n "$state_dir" ] || die "give --state-dir DIR (a cluster laid out by tests/cluster/setup.sh)"
[[ "$requeues" =~ ^[1-9][0-9]?$ ]] || die "--requeues $requeues: give 1 to 99"
[ "$(id -u)" = 0 ] || die "run as root: it runs the cluster's commands as its test user"
[ -x "$state_dir/prefix/bin/dlx" ] && [ -d "$state_dir/work" ] ||
  die "--state-dir $state_dir: not laid out by tests/cluster/setup.sh (prefix/, cluster/, work/)"
export DLX_TEST_STATE=$state_dir
source "$repo/tests/cluster/resume_lib.sh"

name=bench-downtime
cat > "$WORK/$name.yaml" <<'YAML'
name: bench-downtime
entrypoint: [dlx-example-logreg]
seed: 3
hyperparameters:
  learning_rate: {type: log, minval: -2, maxval: 0, base: 10}
  batch_size: 8
  epochs: 100
  samples: 2000
  step_delay_us: 20000
searcher: {name: random, metric: accuracy, smaller_is_better: false, max_trials: 4, max_concurrent_trials: 1}
checkpoint: {period: {batches: 20}}
resources: {nodes_per_trial: 1, tasks_per_node: 1}
YAML
printf '#!/bin/bash\nsrun --mpi=pmix dlx-launch\n' > "$WORK/$name.sh"
chmod a+rx "$WORK/$name.sh"
chmod a+r "$WORK/$name.yaml"
echo "# bench_requeue_downtime: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)," \
  "cluster in $state_dir, $requeues requeues of trial 0 through one slot"
job=$(submit_trial "$name")
trap 'scancel "$job" 2> /dev/null || true' EXIT
wait_until 120 "the job link" test -L "$(user_storage)/.jobs/$job"
trial=$(trial_dir "$job")
wait_until 120 "trial 0's first checkpoint" checkpoint_past "$trial" 20

figures=()
for round in $(seq 1 "$requeues"); do
  wait_until 120 "trial 0 running (run $round)" job_running "$job"
  sleep 3  # some training after the (re)start
  yields_before=$(cat "$WORK/$name-${job}"_*.out 2> /dev/null | grep -c "gives its slot back" || true)
  start=$(date +%s.%N)
  as_user scontrol requeue "${job}_0" || die "scontrol requeue ${job}_0 failed"
  until restarts_at_least "$trial" "$round" 2> /dev/null; do
    sleep 0.1
    [ "$(echo "$(date +%s.%N) - $start > 300" | bc)" = 0 ] || die "trial 0 did not run again within 300 s"
  done
  seconds=$(echo "$(date +%s.%N) - $start" | bc)
  yields=$(( $(cat "$WORK/$name-${job}"_*.out 2> /dev/null | grep -c "gives its slot back" || true) - yields_before ))
  printf '# requeue %d: running again after %.1f s (%d slot yields by other tickets meanwhile)\n' "$round" "$seconds" "$yields"
  figures+=("$seconds")
done
/usr/bin/python3 - "${figures[@]}" <<'PY'
import statistics, sys
values = [float(v) for v in sys.argv[1:]]
print(f"# result: requeue_to_running_s {statistics.median(values):.1f} (target <= 20 s; max {max(values):.1f}, n {len(values)})")
PY
