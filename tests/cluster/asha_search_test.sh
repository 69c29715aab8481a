#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ASHA end to end as an unprivileged user: 8 trials through 2 slots. Each array task asks the
# searcher for its work through the journal; trials that are not promotable at their rung pause
# with a checkpoint and later tasks resume the promotable ones from it; tasks left without work
# end at once. `dlx status` names the best trial and `dlx replay` rebuilds every decision from
# the journal, agreeing with what was recorded. experiment.h5, written by the array tasks under
# the journal lock, reflects the whole journal and its tables equal what `dlx replay` rebuilds.
source "$(dirname "$0")/lib.sh"

submitted=$(as_user sbatch --parsable --dl-experiment=examples/asha.yaml \
  --output=asha-%A_%a.out examples/job.sh 2> "$WORK/asha.sbatch.err") ||
  fail "sbatch failed: $(cat "$WORK/asha.sbatch.err")"
job=$(job_id_of "$submitted")
note "submitted job $job: $(cat "$WORK/asha.sbatch.err")"
expect_contains "sbatch's report" "$(cat "$WORK/asha.sbatch.err")" "8 trials as array 0-15%2"
wait_for_job "$job" 360

dir=$(readlink "$(user_storage)/.jobs/$job")
# Before any tool runs (dlx status would refresh a stale file): the tasks themselves wrote it.
[ -f "$dir/experiment.h5" ] || fail "no experiment.h5 in $dir after the experiment"
summary=$(/usr/bin/python3 "$SOURCE_DIR/tests/unit/experiment_summary_check.py" "$dir" "$PREFIX/bin/dlx" \
  --expect-written-by-trials 2>&1) || fail "experiment.h5 does not match dlx replay: $summary"
echo "$summary"
status=$(as_user dlx status "$job") || fail "dlx status failed"
echo "$status"
expect_contains "dlx status" "$status" "# best: trial"
expect_contains "dlx status" "$status" "completed at 64"
# Not every trial trains to the end: some stay paused at a lower rung.
grep -q "paused at 16" <<< "$status" || fail "no trial stayed paused at rung 0 (16 batches)"
[ "$(echo "$status" | grep -c '^[0-7] ')" = 8 ] || fail "dlx status should print 8 trial rows"

replay=$(as_user dlx replay "$job") || fail "dlx replay found a problem: $replay"
echo "$replay" | head -40
expect_contains "dlx replay" "$replay" "pause"
expect_contains "dlx replay" "$replay" "# best: trial"
# Every array task ran (no accounting here: their output files say it); the tickets left
# without work ended at once and said why.
for task in $(seq 0 15); do
  out=$WORK/asha-${job}_${task}.out
  [ -f "$out" ] || fail "array task $task left no output"
  if grep -q "error" "$out"; then fail "array task $task: $(cat "$out")"; fi
done
idle=$(grep -l "has no work" "$WORK"/asha-"${job}"_*.out | wc -l)
[ "$idle" -ge 1 ] || fail "no ticket ended without work: the array was not larger than needed"
note "$idle of 16 tickets had no work left"
# Resumed trials started from their rung checkpoint: trial.h5 of the best trial has 3 rungs.
best=$(echo "$status" | sed -n 's/^# best: trial \([0-9]*\).*/\1/p')
/usr/bin/python3 - "$dir/trials/$best/trial.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    steps = list(f["metrics/validation/steps"][:])
    for rung in (16, 32, 64):
        assert rung in steps, (rung, steps)
print("best trial reported at every rung:", steps)
PY
note "ASHA experiment verified"
