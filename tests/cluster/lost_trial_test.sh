#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A trial whose array task ends without a word is found by the ticket that waits for it
# (lost_trials.hpp). ASHA, two trials, three tickets at once: two tickets start the trials, the
# third has no trial to start (max_trials) and nothing to promote while they run, so it waits. The
# user cancels one trial's task (`scancel JOB_T`): nothing reports for that trial again, and before,
# the waiting ticket waited DLX_WORK_WAIT_S (a day) on its node. Now it sees in squeue that the
# task has ended (CANCELLED), still so two checks later (DLX_LOST_TRIAL_CHECK_S=2 here), reports
# the trial failed as lost, and the experiment ends. Which ticket gets which trial depends on who
# asks first: the test reads it from the tasks' output.
source "$(dirname "$0")/resume_lib.sh"

cat > "$WORK/lost.yaml" <<'YAML'
name: lost-trial
entrypoint: [dlx-example-logreg]
seed: 3
hyperparameters:
  learning_rate: {type: log, minval: -2, maxval: 0, base: 10}
  batch_size: 16
  epochs: 1
  step_delay_us: 1000000
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
# On a failure: where Slurm had the tasks, and what each had printed.
show_job() {
  squeue -r -j "$job" -o "%i %T %r %N" || true
  for out in "$WORK"/lost-"${job}"_*.out; do [ -e "$out" ] && { echo "== $out"; tail -n 20 "$out"; }; done
}
trap show_job EXIT
# The ticket told to wait, and a ticket training a new trial (with the trial's id), by their output.
waiting=""
waiting_ticket_found() {
  local out
  for out in "$WORK"/lost-"${job}"_*.out; do
    if [ -e "$out" ] && grep -q "waits: no paused trial can be promoted yet" "$out"; then
      waiting=${out##*_}; waiting=${waiting%.out}
      return 0
    fi
  done
  return 1
}
wait_until 120 "a ticket to wait" waiting_ticket_found
cancelled="" trial=""
for t in 0 1 2; do
  [ "$t" != "$waiting" ] || continue
  trial=$(sed -n "s/^dlx-launch: ticket $t: trial \([0-9]*\): new trial.*/\1/p" "$WORK/lost-${job}_$t.out")
  if [ -n "$trial" ]; then cancelled=$t; break; fi
done
[ -n "$cancelled" ] || fail "no ticket trains a new trial"
# Cancelled once it trains (its trainer has opened the trial's record).
wait_until 60 "trial $trial's record" test -e "$(user_storage)/lost-trial/trials/$trial/trial.h5"
as_user scancel "${job}_$cancelled" || fail "scancel ${job}_$cancelled failed"
note "cancelled task $cancelled (trial $trial) while ticket $waiting waited"
wait_for_job "$job" 180
out=$(cat "$WORK/lost-${job}_$waiting.out")
echo "$out"
expect_contains "ticket $waiting" "$out" \
  "dlx-launch: ticket $waiting: trial $trial is lost: its array task ${job}_$cancelled ended (CANCELLED) without reporting to the searcher; no run will continue it (found by ticket $waiting)"
replay=$(as_user dlx replay "$job") || fail "dlx replay found a problem: $replay"
echo "$replay"
expect_contains "dlx replay" "$replay" "lost: its array task ${job}_$cancelled ended (CANCELLED)"
status=$(as_user dlx status "$job")
echo "$status"
# The lost trial's record still says running (its writer is gone): dlx status shows it lost, from
# Slurm; the other trial went on and finished.
# Its searcher column says the searcher counts it failed; no cpu% or memory of "now" is shown for it.
grep -Eq "^$trial +lost .* failed at [0-9]+( +-)*$" <<< "$status" || fail "trial $trial is not shown lost: $status"
grep -Eq "^$((1 - trial)) .*(completed|paused|stopped)" <<< "$status" || fail "the other trial did not finish: $status"
trap - EXIT
note "the waiting ticket reported the cancelled trial lost, and the experiment ended"
