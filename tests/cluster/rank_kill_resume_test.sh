#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A rank SIGKILLed in the middle of training, real Slurm: a 2-node trial (max_restarts: 1) under
# `srun --mpi=pmix dlx-launch`; rank 1's trainer (found by pid in the process list) is killed -9
# after the first checkpoints. Neither Open MPI nor srun ends rank 0 by itself (its trainer stays
# blocked in the allreduce and srun waits for it), so dlx-launch's peer-crash protocol must:
# rank 1's dlx-launch announces the crash and exits 85, rank 0's sees it, ends its own trainer and
# exits 85 too, srun and the batch script exit 85, Slurm requeues the array task and it resumes
# from the last checkpoint. It ends with final tensors byte-identical to an uninterrupted run, the
# same metrics, one `crash` restart in trial.h5 naming rank 1, and failures = 1.
source "$(dirname "$0")/resume_lib.sh"

name=rank-kill-resume
start_fault_trial "$name"
wait_until 120 "a checkpoint at step 1000" checkpoint_past "$dir" 1000
victim=$(trainer_pid "$job" 1)
survivor=$(trainer_pid "$job" 0)
sleep 4  # into the next checkpoint interval: the steps since the checkpoint are lost and redone
job_running "$job" || fail "trial finished before the kill (make the training longer)"
kill -9 "$victim" 2> /dev/null ||
  fail "rank 1's trainer (pid $victim) ended before the kill: the trial reached checkpoint $(latest_checkpoint_step "$dir") of 2500 first (a machine too loaded for this 55 s trial?)"
killed_at=$SECONDS
last_checkpoint=$(latest_checkpoint_step "$dir")
note "killed rank 1's trainer (pid $victim) after the checkpoint of step $last_checkpoint; rank 0's trainer is pid $survivor"
survivor_gone() { ! kill -0 "$survivor" 2>/dev/null; }
wait_until 20 "rank 0's trainer to be ended after rank 1 crashed (left hanging in its allreduce?)" \
  survivor_gone
note "rank 0's trainer ended $((SECONDS - killed_at)) s after the kill"
wait_until 120 "the requeued run" restarts_at_least "$dir" 1
wait_for_job "$job" 300

out="$WORK/$name-${job}_0.out"
log=$(cat "$out")
expect_contains "rank 1's dlx-launch" "$log" \
  "the trainer crashed (killed by SIGKILL (exit 137)): exiting 85 so that Slurm requeues the trial (crash 1 of max_restarts 1)"
expect_contains "rank 0's dlx-launch" "$log" "killed by SIGKILL (exit 137) crashed; this rank's trainer cannot go on without it and was ended"
expect_contains "the batch script" "$log" "dlx-test: srun exited 85 (restart 0)"
expect_contains "the batch script" "$log" "dlx-test: srun exited 0 (restart 1)"
compare_trials "$REFERENCE" "$dir" 0 1
reason=$(restart_attr "$dir" 1 reason)
[[ $reason == "crash: rank 1 on n"*": killed by SIGKILL (exit 137); restart 1 of max_restarts 1" ]] ||
  fail "the crash restart does not name rank 1's SIGKILL: $reason"
resumed=$(restart_attr "$dir" 1 resumed_step)
[ "$resumed" = "$last_checkpoint" ] ||
  fail "resumed from step $resumed, not from the last checkpoint before the kill ($last_checkpoint)"
expect_contains "dlx status" "$(as_user dlx status "$job")" "# 1 trial: 1 completed"
note "rank 1 SIGKILLed: every rank exited 85, requeued, resumed, identical"
