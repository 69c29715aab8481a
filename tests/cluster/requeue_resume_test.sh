#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `scontrol requeue` of a running trial: Slurm sends SIGTERM to the batch shell and the steps at
# once; dlx-launch forwards it to the trainer, which checkpoints after the current step and exits
# 85; Slurm starts the array task again (SLURM_RESTART_COUNT=1) and it resumes from that
# checkpoint. It ends with final tensors byte-identical to the same trial run without
# interruption, the same metrics, and one "requeue" restart recorded in trial.h5 (a SIGTERM with
# the time limit far off: scontrol requeue, scancel or a preemption without the user signal).
source "$(dirname "$0")/resume_lib.sh"

start_resume_trial requeue-resume
wait_until 120 "a checkpoint" checkpoint_past "$dir" 1000
job_running "$job" || fail "trial finished before the requeue (make the training longer)"
scontrol requeue "${job}_0"
note "scontrol requeue ${job}_0 issued"
wait_until 120 "the requeued run" restarts_at_least "$dir" 1
wait_for_job "$job" 300
out="$WORK/requeue-resume-${job}_0.out"
grep -q "exiting 85 for a requeue" "$out" ||
  fail "no checkpoint-and-exit in the job output: $(tail -20 "$out")"
grep -q "after SIGTERM" "$out" || fail "the notice was not SIGTERM: $(grep -i requeue "$out")"
compare_trials "$REFERENCE" "$dir" 1 0
causes=$(restart_causes "$dir")
[ "$causes" = requeue ] || fail "the restart's cause is '$causes', not requeue"
status=$(as_user dlx status "$job")
expect_contains "dlx status" "$status" "# 1 trial: 1 completed"
note "requeued by scontrol, resumed, identical"
