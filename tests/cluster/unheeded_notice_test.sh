#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A notice the trainer cannot act on before Slurm's kill, real Slurm: a 2-node trial whose steps
# last 12 s (longer than this cluster's KillWait of 5 s) is requeued by `scontrol requeue` in
# the middle of its first step. The trainer gets SIGTERM, cannot reach its next point between two
# steps in time, and is SIGKILLed with the step: its run records no exit. Rank 0's dlx-launch kept
# the notice beside trial.h5 (trials/0/last-notice.json), so the requeued run's restart event has
# the notice's cause, `requeue` (SIGTERM with the time limit far off), and a reason that says the
# trainer was killed before it could checkpoint, instead of `unknown`; `dlx status --json` shows it.
source "$(dirname "$0")/resume_lib.sh"

name=unheeded-notice
RESUME_HPARAMS="{learning_rate: 0.05, batch_size: 8, epochs: 1, samples: 16, step_delay_us: 12000000}"
write_resume_experiment "$name"
job=$(submit_trial "$name")
trap 'scancel "$job" 2> /dev/null || true' EXIT
wait_until 60 "trial $job to start" job_running "$job"
wait_until 30 "the job link" test -L "$(user_storage)/.jobs/$job"
dir=$(trial_dir "$job")
wait_until 60 "the trainer's record" test -e "$dir/trial.h5"
scontrol requeue "${job}_0"
note "scontrol requeue ${job}_0 inside the first 12 s step"
wait_until 120 "the requeued run" restarts_at_least "$dir" 1
wait_for_job "$job" 200

out=$(cat "$WORK/$name-${job}_0.out")
case "$out" in *"exiting 85 for a requeue"*) fail "the first run checkpointed after all (make its steps longer): $out" ;; esac
expect_contains "the first run's output" "$out" "dlx-launch: SIGTERM at "
[ "$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["signal"])' "$dir/last-notice.json")" = 15 ] ||
  fail "last-notice.json does not hold the SIGTERM: $(cat "$dir/last-notice.json")"
cause=$(restart_attr "$dir" 1 cause)
reason=$(restart_attr "$dir" 1 reason)
[ "$cause" = requeue ] || fail "the restart's cause is '$cause' ($reason), not requeue"
# The time left is far off or none: "SIGTERM with N s left before the time limit (...)" or
# "SIGTERM, no time limit (...)", as squeue tells it.
[[ $reason == "killed before it could checkpoint: a notice came at "*"Z (SIGTERM"*" (scontrol requeue, scancel, or a preemption without preempt_send_user_signal)) and the run recorded no exit (a batch or a save longer than Slurm's time between the notice and the kill)" ]] ||
  fail "the restart's reason does not say the trainer was killed after the notice: $reason"
status=$(as_user dlx status "$job" --json | /usr/bin/python3 -c \
  'import json,sys; t=json.load(sys.stdin)["trials"][0]; print(t["state"], " ".join(r["cause"] for r in t["restarts"]))')
[ "$status" = "completed requeue" ] || fail "dlx status --json: $status, not a completed trial with one requeue"
note "killed after a notice it could not act on: restart cause requeue, reason: $reason"
