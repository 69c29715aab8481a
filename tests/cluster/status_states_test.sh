#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `dlx status` tells the truth (issue 32), as the unprivileged test user, from trial.h5 and what
# squeue says of the experiment's array job (tools/dlx/status/trial_status.hpp):
#   - requeued: a logreg trial requeued by `scontrol requeue` shows `requeued` with its recorded
#     reason and Slurm's while its task waits to run again (not `running`);
#   - crash-looping: a trial that raises the same ZeroDivisionError on every run shows
#     `crash-looping (2 of 5)` after its second crash, and after the third it is `failed` with
#     "the same crash 3 times in a row", although max_restarts (5) allows more;
#   - launch failed: a job whose --output directory does not exist never starts its batch script
#     (JobLaunchFailure), so no task makes its .jobs link: `dlx status JOBID` and `dlx status DIR`
#     find it by its name (the experiment directory's, tools/dlx/slurm_job_name.hpp) and say why,
#     with the output path.
# Each state is polled for (dlx status every 0.5 s while it lasts), never timed.
source "$(dirname "$0")/resume_lib.sh"

# 1. Requeued.
RESUME_HPARAMS="{learning_rate: 0.05, batch_size: 8, epochs: 40, samples: 20000, step_delay_us: 1000}"
write_resume_experiment states-requeue
sed -i 's/nodes_per_trial: 2/nodes_per_trial: 1/' "$WORK/states-requeue.yaml"
requeue_job=$(submit_trial states-requeue)
loop_job=""
trap 'scancel "$requeue_job" $loop_job 2> /dev/null || true' EXIT
note "submitted $requeue_job"

status_of() { as_user dlx status "$1" 2>&1 || true; }
# shows JOB PATTERN: dlx status JOB has a row matching PATTERN (kept in $WORK/last.status).
shows() { status_of "$1" > "$WORK/last.status"; grep -Eq "$2" "$WORK/last.status"; }

# Requeued: once it has checkpointed (so that the requeued run resumes), requeue it.
wait_until 120 "the job link of states-requeue" test -L "$(user_storage)/.jobs/$requeue_job"
dir=$(readlink "$(user_storage)/.jobs/$requeue_job")
wait_until 120 "a checkpoint of states-requeue" checkpoint_past "$dir/trials/0" 0
job_running "$requeue_job" || fail "states-requeue finished before the requeue (make it longer)"
as_user scontrol requeue "${requeue_job}_0" || fail "scontrol requeue ${requeue_job}_0 failed"
# From the trainer's exit 85 until it runs again the row says requeued; once Slurm lists the
# task as waiting, its detail line says so too.
wait_until 60 "dlx status to show trial 0 requeued and waiting" \
  shows "$requeue_job" "^# trial 0 requeued: requeue: checkpoint at step [0-9]+ after SIGTERM; Slurm: (PENDING|REQUEUED)"
status=$(cat "$WORK/last.status")
echo "$status"
grep -Eq "^0 +requeued " <<< "$status" || fail "trial 0's row is not requeued: $status"
expect_contains "dlx status (requeued)" "$status" "# slurm job $requeue_job: tasks 1 "
scancel "$requeue_job"

# 2. A crash loop: crash-looping after the second crash, failed after the third.
cat > "$WORK/states-loop.yaml" <<YAML
name: states-loop
entrypoint: [/usr/bin/python3, $WORK/states-loop.py]
seed: 5
max_restarts: 5
hyperparameters: {x: 1}
searcher: {name: single, metric: loss}
resources: {nodes_per_trial: 1, tasks_per_node: 1}
YAML
cat > "$WORK/states-loop.py" <<'PY'
import dlx
trial = dlx.Trial()
print(1 / (trial.hparam("x") - 1))
PY
cat > "$WORK/states-loop.sh" <<'SH'
#!/bin/bash
srun --mpi=pmix dlx-launch
SH
chmod a+rx "$WORK/states-loop.sh"
chmod a+r "$WORK/states-loop.yaml" "$WORK/states-loop.py"
loop_job=$(submit_trial states-loop)
note "submitted crash loop $loop_job"
wait_until 120 "dlx status to show trial 0 crash-looping" shows "$loop_job" "^0 +crash-looping \(2 of 5\) "
status=$(cat "$WORK/last.status")
echo "$status"
expect_contains "dlx status (crash loop)" "$status" \
  "# trial 0 crash-looping: crash: exit 1: ZeroDivisionError: division by zero; restart 2 of max_restarts 5 (the same crash 2 times in a row"
wait_for_job "$loop_job" 120
status=$(status_of "$loop_job")
echo "$status"
grep -Eq "^0 +failed " <<< "$status" || fail "the crash-looping trial is not failed: $status"
expect_contains "dlx status (crash loop)" "$status" \
  "# trial 0 failed: the same crash 3 times in a row, not restarted again (max_restarts 5 would only repeat it): exit 1: ZeroDivisionError: division by zero"

# 3. Launch failed.
sed 's/^name: states-loop$/name: states-launch/' "$WORK/states-loop.yaml" > "$WORK/states-launch.yaml"
cp "$WORK/states-loop.sh" "$WORK/states-launch.sh"
chmod a+r "$WORK/states-launch.yaml"
chmod a+rx "$WORK/states-launch.sh"
launch_job=$(submit_trial states-launch --output=/nonexistent-dlx-output/launch-%A_%a.out)
trap 'scancel "$launch_job" 2> /dev/null || true' EXIT
note "submitted $launch_job with an --output directory that does not exist"
wait_until 120 "dlx status to show trial 0 launch failed" shows "$launch_job" "^0 +launch failed "
status=$(cat "$WORK/last.status")
echo "$status"
expect_contains "dlx status (launch failed)" "$status" "# trial 0 launch failed: "
expect_contains "dlx status (launch failed)" "$status" \
  "(can it write its output file /nonexistent-dlx-output/launch-${launch_job}_0.out?)"
[ ! -e "$(user_storage)/.jobs/$launch_job" ] || fail "job $launch_job has a .jobs link: the name lookup was not tested"
launch_dir=$(sed -n 's/^\(sbatch: \)\{0,1\}dlx: experiment states-launch: .* in \(\/.*\)$/\2/p' "$WORK/states-launch.sbatch.err")
[ -d "$launch_dir" ] || fail "sbatch did not name the experiment directory: $(cat "$WORK/states-launch.sbatch.err")"
status=$(status_of "$launch_dir")
grep -Eq "^0 +launch failed " <<< "$status" || fail "dlx status DIR does not show the launch failure: $status"
scancel "$launch_job"
note "dlx status showed requeued, crash-looping, then failed, and a launch failure with its output file"
