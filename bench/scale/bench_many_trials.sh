#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench_many_trials.sh: a random search larger than the cluster's MaxArraySize (Slurm's default,
# 1001) runs with an array the cluster accepts, each array task running several trials in turn
# (resources.max_array_tasks, set by sbatch). This measures what that costs per trial: the wall
# time per trial of a search of --trials trials (default 5,000, on 1001 tasks) over that of a
# 100-trial search (one task per trial), same trainer (bench_trivial_trainer: no work, one
# report), same concurrency, on the same running local cluster (`dlx cluster up`). The reference
# runs before and after the large search and their mean is used (this machine is noisy). Every
# trial of the large search must be recorded exactly once: completed, one validation report, its
# ticket done by exactly one task.
#
#   bench/scale/bench_many_trials.sh --state-dir /tmp/dlx-cluster --build-dir build [--trials 5000]
#       [--reference 100] [--max-array-tasks N]   (N: the large search's own cap, for a small run)
# Prints `# result: per_trial_wall_many_vs_100 <ratio> (target <= 1.2)`.
set -euo pipefail
trials=5000
reference=100
concurrency=12  # the local cluster's 3 nodes x 4 CPUs
max_array_tasks=""
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --trials) trials=$2; shift 2 ;;
    --reference) reference=$2; shift 2 ;;
    --max-array-tasks) max_array_tasks=$2; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
. "$(dirname "$0")/../cluster_bench_args.sh" "${args[@]}"
for program in dlx dlx-launch bench_trivial_trainer; do
  [ -x "$build_dir/bin/$program" ] || { echo "bench_many_trials: $build_dir/bin/$program is missing: build first" >&2; exit 2; }
done
eval "$("$build_dir/bin/dlx" cluster env --state-dir "$state_dir")"
export PATH=$build_dir/bin:$PATH
max_array=$(scontrol show config | awk '/^MaxArraySize/ {print $3}')
if [ -z "$max_array_tasks" ] && [ "$trials" -le "$max_array" ]; then
  echo "bench_many_trials: note: $trials trials fit MaxArraySize $max_array: one task per trial" >&2
fi

work=$(mktemp -d /tmp/dlx-bench-many.XXXXXX)
chmod 0755 "$work"
cat > "$work/job.sh" <<'SH'
#!/bin/bash
srun dlx-launch
SH
chmod a+rx "$work/job.sh"
cd "$work"

# run NAME TRIALS [RESOURCES]: submits the search, waits for it, prints "<job id> <seconds>".
run() {
  local name=$1 count=$2 resources=${3:-} t0 t1 job
  cat > "$work/$name.yaml" <<YAML
name: $name
entrypoint: [$build_dir/bin/bench_trivial_trainer]
seed: 5
hyperparameters: {x: {type: double, minval: 0, maxval: 1}}
searcher: {name: random, metric: loss, max_trials: $count, max_concurrent_trials: $concurrency}
resources: {nodes_per_trial: 1, tasks_per_node: 1$resources}
YAML
  t0=$(date +%s.%N)
  job=$(sbatch --parsable --wait --output=/dev/null --dl-experiment="$name.yaml" job.sh 2> "$work/$name.sbatch.err") || true
  t1=$(date +%s.%N)
  [ -n "$job" ] || { echo "bench_many_trials: sbatch failed: $(cat "$work/$name.sbatch.err")" >&2; exit 1; }
  echo "$job $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')"
}

# The cluster's first jobs pay for its nodes' first start: a one-trial search first, not measured.
run warm-up 1 > /dev/null
read -r ref1_job ref1_s < <(run ref-before "$reference")
read -r big_job big_s < <(run many "$trials" "${max_array_tasks:+, max_array_tasks: $max_array_tasks}")
read -r ref2_job ref2_s < <(run ref-after "$reference")
grep -h "dlx:" "$work/many.sbatch.err" || true
experiment_of() { readlink -f "$("$build_dir/bin/dlx" status --json "$1" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["directory"])')"; }
big_dir=$(experiment_of "$big_job")

/usr/bin/python3 - "$big_dir" "$trials" "$reference" "$ref1_s" "$big_s" "$ref2_s" <<'PY'
import glob, json, os, sys
import h5py
directory, trials, reference = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ref1, big, ref2 = (float(v) for v in sys.argv[4:7])
# Every trial recorded once: completed, one validation report; each ticket done by one task.
states, reports, reported_at = {}, {}, []
for trial in range(trials):
    with h5py.File(f"{directory}/trials/{trial}/trial.h5", "r") as f:
        state = f.attrs["state"]
        states[trial] = state.decode() if isinstance(state, bytes) else state
        reports[trial] = len(f["metrics/validation/steps"])
        reported_at += list(f["metrics/validation/wall_time"][:1])
extra = sorted(set(int(d) for d in os.listdir(f"{directory}/trials") if d.isdigit()) - set(range(trials)))
bad = {t: s for t, s in states.items() if s != "completed"}
twice = {t: n for t, n in reports.items() if n != 1}
done = []
for path in glob.glob(f"{directory}/tasks/*.json"):
    progress = json.load(open(path))
    done += progress["done"]
tasks = len(glob.glob(f"{directory}/tasks/*.json"))
if bad or twice or extra or sorted(done) != list(range(trials)):
    sys.exit(f"bench_many_trials: not every trial recorded once: not completed {dict(list(bad.items())[:5])}, "
             f"reports != 1 {dict(list(twice.items())[:5])}, unexpected trials {extra[:5]}, "
             f"tickets done {len(done)} ({len(set(done))} distinct) of {trials}")
print(f"# {trials} trials on {tasks} array tasks: every trial completed with one validation report, "
      f"each ticket done once")
# Does a trial cost more late in the search (a longer journal, more records) than early on? The
# rate of reports between 10% and 30% of them against that between 70% and 90%.
reported_at.sort()
def rate(low, high):
    first, last = int(low * len(reported_at)), int(high * len(reported_at))
    return (last - first) / max(reported_at[last] - reported_at[first], 1e-9)
early, late = rate(0.1, 0.3), rate(0.7, 0.9)
print(f"# trials reported per second: {early:.1f} between 10% and 30% of the search, {late:.1f} between 70% "
      f"and 90% (late/early {late / early:.2f})")
ref = (ref1 + ref2) / 2
per_ref, per_big = ref / reference, big / trials
print(f"# {reference}-trial search: {ref1:.1f} s before, {ref2:.1f} s after ({1000 * per_ref:.0f} ms per trial); "
      f"{trials}-trial search: {big:.1f} s ({1000 * per_big:.0f} ms per trial)")
print(f"# result: per_trial_wall_many_vs_{reference} {per_big / per_ref:.2f} (target <= 1.2)")
PY
echo "# experiments: $big_dir; files: $work"
