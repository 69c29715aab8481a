#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The checkpoint writer SIGKILLed in the middle of a save, real Slurm: a 2-node trial
# (max_restarts: 1, 16 MiB checkpoints); as soon as a periodic save's temporary file
# (checkpoints/.tmp.step-N.h5.<pid>...) appears, rank 0's trainer (the writer, the pid in that
# name, checked against the process list) is killed -9. The kill must land before the rename: the
# temporary file is still there afterwards and step-N.h5 never appears. The crash ends every rank
# (peer-crash protocol), Slurm requeues the trial, the resumed run skips the temporary file
# (dlx-launch says so) and resumes from the previous checkpoint. It ends with final tensors
# byte-identical to an uninterrupted run, the same metrics and one `crash` restart.
source "$(dirname "$0")/resume_lib.sh"

name=kill-during-save-resume
start_fault_trial "$name"
wait_until 120 "a first checkpoint" checkpoint_past "$dir" 500
writer=$(trainer_pid "$job" 0)
note "rank 0's trainer (the writer) is pid $writer"

# Poll the directory (0.5 ms) for the writer's next temporary file and kill the writer at once.
# Prints "<temporary name> <step> <latest complete checkpoint's step>" when the temporary file
# was still there after the kill (and its final name was not).
caught=$(/usr/bin/python3 - "$dir/checkpoints" "$writer" <<'PY'
import os, re, signal, sys, time
directory, writer = sys.argv[1], int(sys.argv[2])
pattern = re.compile(r"^\.tmp\.step-(\d+)\.h5\.(\d+)\.")
deadline = time.monotonic() + 90
while time.monotonic() < deadline:
    for name in os.listdir(directory):
        m = pattern.match(name)
        if m and int(m.group(2)) == writer:
            os.kill(writer, signal.SIGKILL)
            there = os.path.exists(os.path.join(directory, name))
            final = os.path.exists(os.path.join(directory, f"step-{m.group(1)}.h5"))
            if not there or final:
                sys.exit(f"FAIL: killed pid {writer} too late: the save of step {m.group(1)} "
                         f"had completed (temporary there: {there}, step-{m.group(1)}.h5 there: {final})")
            done = [int(n[5:-3]) for n in os.listdir(directory) if re.fullmatch(r"step-\d+\.h5", n)]
            print(name, m.group(1), max(done, default=0))
            sys.exit(0)
    try:
        os.kill(writer, 0)
    except ProcessLookupError:
        sys.exit(f"FAIL: the writer (pid {writer}) ended before a save could be caught")
    time.sleep(0.0005)
sys.exit("FAIL: no save by the writer within 90 s")
PY
) || fail "the kill did not land during a save"
read -r temporary step previous <<< "$caught"
note "killed the writer during the save of step $step: $temporary present after the kill;" \
  "latest complete checkpoint: step $previous"
[ "$previous" -gt 0 ] && [ "$previous" -lt "$step" ] || fail "no earlier checkpoint to resume from"
sleep 1
[ -e "$dir/checkpoints/$temporary" ] || fail "the temporary file $temporary vanished after the kill"
[ ! -e "$dir/checkpoints/step-$step.h5" ] ||
  fail "step-$step.h5 exists although its save was killed: the kill did not land in the save"
wait_until 120 "the requeued run" restarts_at_least "$dir" 1
wait_for_job "$job" 300

log=$(cat "$WORK/$name-${job}_0.out")
expect_contains "rank 0's dlx-launch" "$log" \
  "the trainer crashed (killed by SIGKILL (exit 137)): exiting 85 so that Slurm requeues the trial"
expect_contains "the batch script" "$log" "dlx-test: srun exited 85 (restart 0)"
expect_contains "the resumed dlx-launch (skips the unfinished save)" "$log" \
  "skipping checkpoint $dir/checkpoints/$temporary: temporary file of an unfinished save"
resumed=$(restart_attr "$dir" 1 resumed_step)
[ "$resumed" = "$previous" ] ||
  fail "resumed from step $resumed, not from the checkpoint before the killed save ($previous)"
reason=$(restart_attr "$dir" 1 reason)
[[ $reason == "crash: rank 0 on "*": killed by SIGKILL (exit 137); restart 1 of max_restarts 1" ]] ||
  fail "the crash restart does not name rank 0's SIGKILL: $reason"
compare_trials "$REFERENCE" "$dir" 0 1
expect_contains "dlx status" "$(as_user dlx status "$job")" "# 1 trial: 1 completed"
note "writer killed during the save of step $step: resumed from step $previous, identical"
