#!/usr/bin/env bash
# `dlx status` tells the truth (issue 32), as the unprivileged test user, from trial.h5 and what
# squeue says of the experiment's array job (tools/dlx/status/trial_status.hpp):
#   - launch failed: a job whose --output directory does not exist shows `launch failed` with
#     Slurm's reason and the output path (not `pending` forever);
#   - requeued: a logreg trial requeued by `scontrol requeue` shows `requeued` with its recorded
#     reason and Slurm's while its task waits to run again (not `running`);
#   - crash-looping: a trial that raises the same ZeroDivisionError on every run shows
#     `crash-looping (2 of 5)` after its second crash, and after the third it is `failed` with
#     "the same crash 3 times in a row", although max_restarts (5) allows more.
# Each state is polled for (dlx status every 0.5 s while it lasts), never timed.
source "$(dirname "$0")/resume_lib.sh"

# 1. A launch that fails: Slurm cannot open the output file (submitted first: it stays so).
cat > "$WORK/states-launch.yaml" <<YAML
name: states-launch
entrypoint: [dlx-example-logreg]
seed: 5
hyperparameters: {learning_rate: 0.05, batch_size: 8, epochs: 1}
searcher: {name: single, metric: accuracy, smaller_is_better: false}
resources: {nodes_per_trial: 1, tasks_per_node: 1}
YAML
cat > "$WORK/states-launch.sh" <<'SH'
#!/bin/bash
srun --mpi=pmix dlx-launch
SH
chmod a+rx "$WORK/states-launch.sh"
chmod a+r "$WORK/states-launch.yaml"
launch_out=$(as_user sbatch --parsable --output="$WORK/no-such-directory/%A_%a.out" \
  --dl-experiment=states-launch.yaml states-launch.sh 2> "$WORK/states-launch.sbatch.err") ||
  fail "sbatch states-launch failed: $(cat "$WORK/states-launch.sbatch.err")"
launch_job=$(job_id_of "$launch_out")

# 2. Requeued.
RESUME_HPARAMS="{learning_rate: 0.05, batch_size: 8, epochs: 12, samples: 20000, step_delay_us: 1000}"
write_resume_experiment states-requeue
sed -i 's/nodes_per_trial: 2/nodes_per_trial: 1/' "$WORK/states-requeue.yaml"
requeue_job=$(submit_trial states-requeue)
loop_job=""
trap 'scancel "$launch_job" "$requeue_job" $loop_job 2> /dev/null || true' EXIT
note "submitted launch failure $launch_job, requeue $requeue_job"

status_of() { as_user dlx status "$1" 2>&1 || true; }
# shows JOB PATTERN: dlx status JOB has a row matching PATTERN (kept in $WORK/last.status).
shows() { status_of "$1" > "$WORK/last.status"; grep -Eq "$2" "$WORK/last.status"; }

wait_until 60 "dlx status to show trial 0 launch failed" shows "$launch_job" "^0 +launch failed "
status=$(cat "$WORK/last.status")
echo "$status"
expect_contains "dlx status (launch failed)" "$status" "# trial 0 launch failed: Slurm: "
expect_contains "dlx status (launch failed)" "$status" "$WORK/no-such-directory/"

# Requeued: once it has checkpointed (so that the requeued run resumes), requeue it.
wait_until 120 "the job link of states-requeue" test -L "$(user_storage)/.jobs/$requeue_job"
dir=$(readlink "$(user_storage)/.jobs/$requeue_job")
wait_until 120 "a checkpoint of states-requeue" checkpoint_past "$dir/trials/0" 0
as_user scontrol requeue "${requeue_job}_0" || fail "scontrol requeue ${requeue_job}_0 failed"
wait_until 60 "dlx status to show trial 0 requeued" shows "$requeue_job" "^0 +requeued "
status=$(cat "$WORK/last.status")
echo "$status"
expect_contains "dlx status (requeued)" "$status" "# trial 0 requeued: requeue: checkpoint at step "
expect_contains "dlx status (requeued)" "$status" "; Slurm: "
expect_contains "dlx status (requeued)" "$status" "# slurm job $requeue_job: tasks 1 "
scancel "$requeue_job"

# 3. A crash loop: crash-looping after the second crash, failed after the third.
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
cp "$WORK/states-launch.sh" "$WORK/states-loop.sh"
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
note "dlx status showed launch failed, requeued, crash-looping then failed"
