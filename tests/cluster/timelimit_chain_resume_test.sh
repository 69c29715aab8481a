#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A time-limit chain, real Slurm: a 2-node trial that needs >= 44 s of training submitted with
# --time=1 --signal=USR2@20. slurmctld looks at time limits every 30 s and sends an @N signal
# when now + N + 30 >= the end, so each allocation gets its USR2 10-40 s after it starts (and its
# time limit 20-30 s later): no allocation can finish the trial. At each notice the trainer
# checkpoints after the agreed step and exits 85, Slurm requeues the array task with a fresh time
# limit, and the next allocation resumes from that checkpoint. It must take >= 2 allocations,
# never be killed by the limit itself, and end with final tensors byte-identical to an
# uninterrupted run, the same metrics, and one `time_limit` restart (reason: after SIGUSR2, with
# the seconds left) per requeue.
source "$(dirname "$0")/resume_lib.sh"

name=timelimit-chain-resume
RESUME_HPARAMS=$FAULT_HPARAMS
start_resume_trial "$name" "" --time=1 --signal=USR2@20
limit=$(scontrol show job "${job}_0" | grep -o 'TimeLimit=[^ ]*')
[ "$limit" = "TimeLimit=00:01:00" ] || fail "the trial's time limit is $limit, not 1 minute"
wait_for_job "$job" 400

log=$(cat "$WORK/$name-${job}_0.out")
case "$log" in *"DUE TO TIME LIMIT"*) fail "an allocation was killed by its time limit: $log" ;; esac
restarts=$(/usr/bin/python3 -c "import h5py,sys; print(int(h5py.File(sys.argv[1]+'/trial.h5','r').attrs['restarts']))" "$dir")
[ "$restarts" -ge 1 ] || fail "the trial finished in one allocation: no time-limit chain (make it longer)"
for ((run = 0; run < restarts; run++)); do
  expect_contains "allocation $((run + 1)) (checkpointed at the notice)" "$log" \
    "dlx-test: srun exited 85 (restart $run)"
  reason=$(restart_attr "$dir" $((run + 1)) reason)
  [[ $reason == "requeue: checkpoint at step "*" after SIGUSR2 (time_limit: SIGUSR2 with "*" s left before the job's time limit)" ]] ||
    fail "restart $((run + 1)) was not the time-limit notice: $reason"
  cause=$(restart_attr "$dir" $((run + 1)) cause)
  [ "$cause" = time_limit ] || fail "restart $((run + 1)) has cause '$cause', not time_limit"
  note "allocation $((run + 1)): $reason"
done
expect_contains "the last allocation" "$log" "dlx-test: srun exited 0 (restart $restarts)"
compare_trials "$REFERENCE" "$dir" "$restarts" 0
expect_contains "dlx status" "$(as_user dlx status "$job")" "# 1 trial: 1 completed"
note "time-limit chain of $((restarts + 1)) allocations of 1 minute: resumed each time, identical"
