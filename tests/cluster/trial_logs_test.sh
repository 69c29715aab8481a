#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# dlx logs on a real requeue: a trial of two ranks whose trainer (a shell command) exits 85 on its
# first run, so that Slurm requeues the array task (RequeueExit=85), and completes on the second.
# dlx-launch keeps each rank's output of each attempt in the trial's logs directory (0640, the
# user's), the output still reaches Slurm's file, and `dlx logs JOBID 0` as the user prints attempt
# 0 and attempt 1 of both ranks; --attempt and --json pick and list them.
source "$(dirname "$0")/resume_lib.sh"

name=trial-logs
cat > "$WORK/$name.yaml" <<'YAML'
name: trial-logs
entrypoint: [sh, -c, 'echo "stdout of rank $RANK attempt ${SLURM_RESTART_COUNT:-0}"; echo "stderr of rank $RANK" >&2; [ -n "$SLURM_RESTART_COUNT" ] || exit 85']
seed: 3
hyperparameters: {x: 1}
searcher: {name: single, metric: loss}
resources: {nodes_per_trial: 1, tasks_per_node: 2}
YAML
cat > "$WORK/$name.sh" <<'SH'
#!/bin/bash
srun --mpi=pmix dlx-launch
SH
chmod a+rx "$WORK/$name.sh"
chmod a+r "$WORK/$name.yaml"

job=$(submit_trial "$name")
note "submitted $job"
wait_for_job "$job" 120
dir=$(readlink "$(user_storage)/.jobs/$job")
logs=$dir/trials/0/logs
out=$(as_user dlx logs "$job" 0) || fail "dlx logs $job 0 failed: $out"
echo "$out"
for attempt in 0 1; do
  for rank in 0 1; do
    expect_contains "dlx logs" "$out" "# trial 0 attempt $attempt rank $rank (run "
    expect_contains "dlx logs" "$out" "$logs/attempt-$attempt.rank-$rank.log
"
    expect_contains "dlx logs" "$out" "stdout of rank $rank attempt $attempt"
    [ "$(stat -c '%a %U' "$logs/attempt-$attempt.rank-$rank.log")" = "640 $DLX_TEST_USER" ] ||
      fail "$logs/attempt-$attempt.rank-$rank.log: $(stat -c '%a %U' "$logs/attempt-$attempt.rank-$rank.log"), not 640 $DLX_TEST_USER"
  done
done
expect_contains "dlx logs" "$out" "stderr of rank 1"
[ "$(stat -c '%a' "$logs")" = 750 ] || fail "$logs is mode $(stat -c '%a' "$logs"), not 750"
# Passed through unchanged: Slurm's file has both attempts too.
slurm_out=$(cat "$WORK/$name-${job}"_0.out)
expect_contains "Slurm's file" "$slurm_out" "stdout of rank 1 attempt 0"
expect_contains "Slurm's file" "$slurm_out" "stdout of rank 0 attempt 1"
one=$(as_user dlx logs "$job" 0 --attempt 1 --rank 0)
[ "$(sed -n 2p <<<"$one")" = "stdout of rank 0 attempt 1" ] || fail "--attempt 1 --rank 0: $one"
as_user dlx logs "$job" 0 --json | /usr/bin/python3 -c '
import json, sys
doc = json.load(sys.stdin)
attempts = doc["attempts"]
assert [a["attempt"] for a in attempts] == [0, 1], attempts
assert [a["run"].split(".")[1] for a in attempts] == ["0", "1"], attempts  # SLURM_RESTART_COUNT
assert all([f["rank"] for f in a["files"]] == [0, 1] for a in attempts), attempts
print("# --json:", [(a["attempt"], a["run"]) for a in attempts])
'
note "dlx logs showed attempt 0 and attempt 1 of both ranks"

# Without the copy (moved aside here; DLX_LOG_MAX_MB=0 or an older dlx-launch leave none), dlx logs
# shows Slurm's own file: the trial's array task from the journal (this trainer writes no
# trial.h5), its StdOut from scontrol.
mv "$logs" "$logs.aside"
fallback=$(as_user dlx logs "$job" 0) || { mv "$logs.aside" "$logs"; fail "dlx logs without the copy: $fallback"; }
mv "$logs.aside" "$logs"
expect_contains "Slurm's file" "$fallback" "Slurm's output file of job ${job}_0 (every attempt, as Slurm wrote it): $WORK/$name-${job}_0.out"
expect_contains "Slurm's file" "$fallback" "stdout of rank 0 attempt 1"
note "without the copy, dlx logs showed Slurm's file"

# A job script that runs the trainer itself instead of through `srun dlx-launch` (a common first
# mistake: `python3 train.py`, whose `import dlx` then fails). No trial.h5 and no log of dlx-launch:
# dlx status says the trial was not started and asks about the job script, and dlx logs shows
# Slurm's file of the trial's array task (found from the job id given: no journal names it).
name=no-launch
cat > "$WORK/$name.yaml" <<'YAML'
name: no-launch
entrypoint: [/usr/bin/python3, train.py]
hyperparameters: {x: {type: categorical, vals: [1, 2]}}
searcher: {name: grid, metric: loss}
YAML
cat > "$WORK/$name.sh" <<'SH'
#!/bin/bash
echo "the trainer of task $SLURM_ARRAY_TASK_ID, run by the job script itself"
exit 3
SH
chmod a+rx "$WORK/$name.sh"
chmod a+r "$WORK/$name.yaml"
job=$(submit_trial "$name")
wait_for_job "$job" 120
status=$(as_user dlx status "$job")
echo "$status"
# One line for both trials: they say the same.
expect_contains "dlx status" "$status" "# trials 0-1 not started: its array task in job $job ended (FAILED), and dlx-launch kept no log of the trial: does the job script run the trainer through \`srun dlx-launch\` (examples/job.sh), not by itself? \`dlx logs $job TRIAL\` shows what the task printed"
shown=$(as_user dlx logs "$job" 1) || fail "dlx logs $job 1: $shown"
expect_contains "dlx logs" "$shown" "Slurm's output file of job ${job}_1 (every attempt, as Slurm wrote it): $WORK/$name-${job}_1.out"
expect_contains "dlx logs" "$shown" "the trainer of task 1, run by the job script itself"
note "a job script without dlx-launch: dlx status asks about it, dlx logs shows the task's output"
