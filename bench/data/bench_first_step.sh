#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Time to first step of the 2nd..Nth trial on a node: a dataset staged by `data:` (the trainer
# reads DLX_DATA_DIR, the node's cached copy) against the same dataset read from its source path.
#   bash bench/data/bench_first_step.sh --build-dir build [--trials 6] [--mib 1024] [--dir DIR]
#                                       [--state-dir CLUSTER_STATE | --slurm] [--node NAME]
# Without --state-dir it runs dlx-launch directly (as a trial outside Slurm: DLX_EXPERIMENT_DIR +
# DLX_TRIAL_ID), on this host, alternating the two kinds of trial; each trial's clock starts just
# before dlx-launch. With --state-dir it submits both experiments to that running local cluster
# (`dlx cluster up`; --slurm: the cluster whose sbatch is on PATH, e.g. from a real login node,
# with --dir on shared storage), every trial on node n1 (--node), one at a time (max_concurrent_trials: 1), the staged
# experiment first; the cache goes where the site puts it (the plugin's local_dir=), and each
# trial's clock starts in its job script just before `srun dlx-launch`. Either way the clock
# stops when the trainer has read its first batch (the first 4 shards, 1/16 of the dataset):
# dlx-launch's own work (the frozen snapshot, the searcher, the staging: for trial 1 the copy,
# for the later ones the manifest walk, the lock and the marker) is inside it. The source lives
# on the same disk here: this measures what staging costs the trials that reuse the copy, not
# what a slow shared file system would cost (see docs/benchmarks.md, "Data staging").
set -euo pipefail
build_dir="" trials=6 mib=1024 dir="" state_dir="" slurm="" node=n1
usage="usage: $0 --build-dir BUILD [--trials N] [--mib MIB] [--dir DIR] [--state-dir CLUSTER_STATE | --slurm] [--node NAME]"
while [ $# -gt 0 ]; do
  case $1 in
    --build-dir) build_dir=$(cd "$2" && pwd); shift 2 ;;
    --trials) trials=$2; shift 2 ;;
    --mib) mib=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --state-dir) state_dir=$2; slurm=yes; shift 2 ;;
    --slurm) slurm=yes; shift ;;
    --node) node=$2; shift 2 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
[ -n "$build_dir" ] && [ "$trials" -ge 2 ] && [ "$mib" -ge 16 ] || { echo "$usage" >&2; exit 2; }
launch=$build_dir/bin/dlx-launch
[ -x "$launch" ] || { echo "no $launch: build dlx-launch first" >&2; exit 2; }
own_dir=""
if [ -z "$dir" ]; then dir=$(mktemp -d /var/tmp/dlx-bench-data.XXXXXX); own_dir=$dir; fi
cleanup() { [ -z "$own_dir" ] || rm -rf "$own_dir"; }
trap cleanup EXIT

shards=$((mib / 16))
source_dir=$dir/shared/dataset
mkdir -p "$source_dir" "$dir/local"
for i in $(seq 1 "$shards"); do head -c $((16 << 20)) /dev/urandom > "$source_dir/shard-$(printf %04d "$i").bin"; done

cat > "$dir/first_step.py" <<'PY'
import os, sys, time
data = os.environ.get("DLX_DATA_DIR") or sys.argv[1]
shards = sorted(os.listdir(data))
batch = 0
for name in shards[: max(1, len(shards) // 16)]:  # the first batch: 1/16 of the dataset
    with open(os.path.join(data, name), "rb") as f:
        while chunk := f.read(1 << 20):
            batch += len(chunk)
print(f"first-step {(time.time_ns() - int(os.environ['BENCH_T0'])) / 1e9:.4f} {batch} {data}", flush=True)
PY
write_experiment() {  # write_experiment NAME [DATA_YAML]
  mkdir -p "$dir/$1"
  {
    echo "name: $1"
    echo "entrypoint: [python3, $dir/first_step.py, $source_dir]"
    echo "hyperparameters: {x: {type: int, minval: 1, maxval: 1000000}}"
    echo "searcher: {name: random, metric: loss, max_trials: $trials, max_concurrent_trials: 1}"
    [ -z "${2:-}" ] || echo "$2"
  } > "$dir/$1/experiment.yaml"
}
if [ -n "$slurm" ]; then
  write_experiment staged "data: {stage: [$source_dir]}"  # the site's node-local directory
else
  write_experiment staged "data: {stage: [$source_dir], to: $dir/local}"
fi
write_experiment shared
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
report() {  # report STAGED_MEDIAN SHARED_MEDIAN
  echo "# result: time_to_first_step_trials_2_to_N_staged_median_s $1 shared_median_s $2 ratio $(awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}')"
}

if [ -n "$slurm" ]; then
  [ -z "$state_dir" ] || eval "$("$build_dir/bin/dlx" cluster env --state-dir "$state_dir")"
  export PATH=$build_dir/bin:$PATH
  printf '#!/bin/bash\nexport BENCH_T0=$(date +%%s%%N)\nsrun dlx-launch\n' > "$dir/job.sh"
  chmod -R a+rX "$dir"
  echo "# data staging on Slurm (${state_dir:-the cluster of $(command -v sbatch)}), node $node: time to first step, $trials trials per kind, ${mib} MiB in $shards shards, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
  echo "# trial  staged_s  shared_s  staging"
  for kind in staged shared; do
    (cd "$dir" && sbatch --wait --quiet -w "$node" --output="$dir/$kind-%A_%a.out" --dl-experiment="$dir/$kind/experiment.yaml" \
      "$dir/job.sh") > /dev/null || { echo "bench_first_step: the $kind experiment failed: $(cat "$dir/$kind"-*.out)" >&2; exit 1; }
  done
  staged=() shared=()
  for t in $(seq 0 $((trials - 1))); do
    s=$(awk '/^first-step/ {print $2}' "$dir"/staged-*_"$t".out)
    p=$(awk '/^first-step/ {print $2}' "$dir"/shared-*_"$t".out)
    how=$(grep -o 'copied [^)]*)\|reused [0-9.]* [kMG]*B' "$dir"/staged-*_"$t".out | head -1)
    where=$(awk '/^first-step/ {print $4}' "$dir"/staged-*_"$t".out)
    [ -n "$s" ] && [ -n "$p" ] || { echo "bench_first_step: trial $t reported no first step (see $dir/*-*_$t.out)" >&2; exit 1; }
    printf '  %-5s  %-8s  %-8s  %s in %s\n' "$((t + 1))" "$s" "$p" "$how" "$where"
    if [ "$t" -gt 0 ]; then staged+=("$s"); shared+=("$p"); fi
  done
  report "$(median "${staged[@]}")" "$(median "${shared[@]}")"
  exit 0
fi

run_trial() {  # run_trial KIND TRIAL: prints "first-step SECONDS BYTES" (and dlx-launch's data line)
  BENCH_T0=$(date +%s%N) DLX_EXPERIMENT_DIR=$dir/$1 DLX_TRIAL_ID=$2 "$launch" 2>&1
}
echo "# data staging: time to first step, $trials trials per kind, ${mib} MiB in $shards shards, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
echo "# trial  staged_s  shared_s  staging"
staged=() shared=()
for t in $(seq 0 $((trials - 1))); do
  out=$(run_trial staged "$t")
  s=$(echo "$out" | awk '/^first-step/ {print $2}')
  how=$(echo "$out" | grep -o 'copied [^)]*)\|reused [0-9.]* [kMG]*B' | head -1)
  out2=$(run_trial shared "$t")
  p=$(echo "$out2" | awk '/^first-step/ {print $2}')
  [ -n "$s" ] && [ -n "$p" ] || { echo "a trial failed: $out $out2" >&2; exit 1; }
  printf '  %-5s  %-8s  %-8s  %s\n' "$((t + 1))" "$s" "$p" "$how"
  if [ "$t" -gt 0 ]; then staged+=("$s"); shared+=("$p"); fi
done
report "$(median "${staged[@]}")" "$(median "${shared[@]}")"
