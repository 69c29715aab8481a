#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A ticket gives its array slot to a requeued trial (slot_yield.hpp). ASHA (promotion variant) with
# one slot: ticket 1 runs trial 1 and is requeued by `scontrol requeue` mid-run; its slot goes to
# ticket 2, which has no work yet, while ticket 1 is pending behind the `%1` limit. Taking the slot
# (a new trial, or waiting for trial 1's result: DLX_WORK_WAIT_S, 24 h) would stall trial 1;
# instead ticket 2 sees in squeue that trial 1's task waits for its turn and exits 85 at once,
# before it asks the searcher (a ticket already waiting would do the same after DLX_WORK_HOLD_S,
# here 3 s); ticket 1 resumes trial 1 from its checkpoint, and ticket 2, requeued, asks again and
# ends the experiment.
source "$(dirname "$0")/resume_lib.sh"

cat > "$WORK/waiting.yaml" <<'YAML'
name: waiting-ticket
entrypoint: [dlx-example-logreg]
seed: 3
hyperparameters:
  learning_rate: {type: log, minval: -2, maxval: 0, base: 10}
  batch_size: 16
  epochs: 1
  step_delay_us: 150000
searcher:
  name: async_halving
  metric: loss
  max_trials: 2
  max_length: {batches: 32}
  divisor: 2
  max_rungs: 2
  max_concurrent_trials: 1
checkpoint: {period: {batches: 4}}
resources: {nodes_per_trial: 1, tasks_per_node: 1}
YAML
cat > "$WORK/waiting.sh" <<'SH'
#!/bin/bash
export DLX_WORK_HOLD_S=3
srun --mpi=pmix dlx-launch
SH
chmod a+rx "$WORK/waiting.sh"
chmod a+r "$WORK/waiting.yaml"
job=$(submit_trial waiting)
out1=$WORK/waiting-${job}_1.out
wait_until 120 "ticket 1 to train trial 1" grep -q "ticket 1: trial 1" "$out1"
sleep 1
as_user scontrol requeue "${job}_1" || fail "scontrol requeue ${job}_1 failed"
note "requeued ticket 1 while it trained trial 1"
wait_for_job "$job" 240
out2=$WORK/waiting-${job}_2.out
grep "gives its slot back" "$out2" || true
expect_contains "ticket 2" "$(cat "$out2")" "dlx-launch: ticket 2 gives its slot back"
expect_contains "ticket 2" "$(cat "$out2")" ": trial 1 (array task 1) waits to resume (Slurm: "
status=$(as_user dlx status "$job")
echo "$status"
replay=$(as_user dlx replay "$job") || fail "dlx replay found a problem: $replay"
# Trial 1 ran again from its checkpoint and reported: no trial is left running.
grep -Eq "^1 .*(completed|paused|stopped)" <<< "$status" || fail "trial 1 did not finish: $status"
if grep -q "running" <<< "$status"; then fail "a trial is still running: $status"; fi
note "the waiting ticket gave its slot back; the experiment finished"
