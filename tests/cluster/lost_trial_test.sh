#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A trial whose array task ends without a word is found by the ticket that waits for it
# (lost_trials.hpp). ASHA, two trials: ticket 2 has no trial to start (max_trials) and nothing to
# promote while trial 0 runs, so it waits. The user cancels trial 0's task (`scancel JOB_0`):
# nothing reports for trial 0 again, and before, ticket 2 waited DLX_WORK_WAIT_S (a day) on its
# node. Now it sees in squeue that task 0 has ended (CANCELLED), still so two checks later
# (DLX_LOST_TRIAL_CHECK_S=2 here), reports trial 0 failed as lost, and the experiment ends.
source "$(dirname "$0")/resume_lib.sh"

cat > "$WORK/lost.yaml" <<'YAML'
name: lost-trial
entrypoint: [dlx-example-logreg]
seed: 3
hyperparameters:
  learning_rate: {type: log, minval: -2, maxval: 0, base: 10}
  batch_size: 16
  epochs: 1
  step_delay_us: 400000
searcher:
  name: async_halving
  metric: loss
  max_trials: 2
  max_length: {batches: 32}
  divisor: 2
  max_rungs: 2
  max_concurrent_trials: 3
resources: {nodes_per_trial: 1, tasks_per_node: 1}
YAML
cat > "$WORK/lost.sh" <<'SH'
#!/bin/bash
export DLX_LOST_TRIAL_CHECK_S=2
srun --mpi=pmix dlx-launch
SH
chmod a+rx "$WORK/lost.sh"
chmod a+r "$WORK/lost.yaml"
job=$(submit_trial lost)
out0=$WORK/lost-${job}_0.out
out2=$WORK/lost-${job}_2.out
wait_until 120 "ticket 0 to train trial 0" grep -q "ticket 0: trial 0" "$out0"
wait_until 120 "ticket 2 to wait" grep -q "ticket 2 waits" "$out2"
as_user scancel "${job}_0" || fail "scancel ${job}_0 failed"
note "cancelled trial 0's task while ticket 2 waited for it"
wait_for_job "$job" 180
cat "$out2"
expect_contains "ticket 2" "$(cat "$out2")" \
  "dlx-launch: ticket 2: trial 0 is lost: its array task ${job}_0 ended (CANCELLED) without reporting to the searcher; no run will continue it (found by ticket 2)"
replay=$(as_user dlx replay "$job") || fail "dlx replay found a problem: $replay"
echo "$replay"
expect_contains "dlx replay" "$replay" "lost: its array task ${job}_0 ended (CANCELLED)"
status=$(as_user dlx status "$job")
echo "$status"
# Trial 0's record still says running (its writer is gone): dlx status shows it lost, from Slurm.
grep -Eq "^0 .*lost" <<< "$status" || fail "trial 0 is not shown lost: $status"
grep -Eq "^1 .*(completed|paused|stopped)" <<< "$status" || fail "trial 1 did not finish: $status"
note "the waiting ticket reported the cancelled trial lost, and the experiment ended"
