#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench_startup.sh: time from `srun` to the first training step of a trial under dlx-launch, over
# the time from `srun` to a bare MPI hello's first instruction after MPI_Init on the same nodes
# (target <= 1.3). Both run as steps of the same array tasks of one experiment on a running local
# cluster (`dlx cluster up`), alternating which goes first; each is timed from the job script's
# clock just before `srun` to rank 0's clock at its first step (same host: one clock).
#
#   bench/launch/bench_startup.sh --state-dir /tmp/dlx-cluster --build-dir build [--repeats 8]
# Prints `# result: srun_to_first_step_vs_mpi_hello <ratio> (target <= 1.3)`.
set -euo pipefail
repeats=8
. "$(dirname "$0")/../cluster_bench_args.sh"
for program in dlx dlx-launch bench_first_step bench_mpi_hello; do
  [ -x "$build_dir/bin/$program" ] || { echo "bench_startup: $build_dir/bin/$program is missing: build first" >&2; exit 2; }
done
eval "$("$build_dir/bin/dlx" cluster env --state-dir "$state_dir")"
export PATH=$build_dir/bin:$PATH

work=$(mktemp -d /tmp/dlx-bench-startup.XXXXXX)
chmod 0755 "$work"
reps=$(seq -s, 0 $((repeats - 1)))
cat > "$work/startup.yaml" <<YAML
name: bench-startup
entrypoint: [$build_dir/bin/bench_first_step]
seed: 1
hyperparameters: {repetition: {type: categorical, vals: [$reps]}}
searcher: {name: grid, metric: loss, max_trials: $repeats, max_concurrent_trials: 1}
resources: {nodes_per_trial: 2, tasks_per_node: 1}
YAML
cat > "$work/startup.sh" <<'SH'
#!/bin/bash
# TCP between the local cluster's "nodes" (they share one /dev/shm), as in the cluster tests.
export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
hello() { local t0; t0=$(date +%s%N); srun --mpi=pmix bench_mpi_hello | sed -n "s/^first_step_unix_ns /hello $t0 /p"; }
trial() { local t0; t0=$(date +%s%N); srun --mpi=pmix dlx-launch | sed -n "s/^first_step_unix_ns /dlx $t0 /p"; }
srun --mpi=pmix true  # the first step of an allocation pays for node set-up: not measured
if [ $((DLX_TRIAL_ID % 2)) = 0 ]; then hello; trial; else trial; hello; fi
SH
chmod a+rx "$work/startup.sh"
cd "$work"
sbatch --wait --quiet --output="$work/startup-%A_%a.out" --dl-experiment=startup.yaml startup.sh > /dev/null || true
cat "$work"/startup-*.out | grep -E "^(hello|dlx) " > "$work/times.txt" || true
/usr/bin/python3 - "$work/times.txt" "$repeats" <<'PY'
import statistics, sys
times = {"hello": [], "dlx": []}
for line in open(sys.argv[1]):
    kind, start, end = line.split()
    times[kind].append((int(end) - int(start)) / 1e9)
wanted = int(sys.argv[2])
for kind, values in times.items():
    if len(values) != wanted:
        sys.exit(f"bench_startup: {len(values)} of {wanted} {kind} runs reported a first step (see the job outputs)")
hello, dlx = statistics.median(times["hello"]), statistics.median(times["dlx"])
print(f"# srun to first step, median of {wanted}: bare MPI hello {hello:.3f} s "
      f"(min {min(times['hello']):.3f}, max {max(times['hello']):.3f}); dlx-launch trainer {dlx:.3f} s "
      f"(min {min(times['dlx']):.3f}, max {max(times['dlx']):.3f})")
print(f"# result: srun_to_first_step_vs_mpi_hello {dlx / hello:.2f} (target <= 1.3)")
PY
echo "# job outputs: $work"
