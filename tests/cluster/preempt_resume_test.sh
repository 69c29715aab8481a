#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Real Slurm preemption, twice: a 2-node logreg trial in partition `low` is preempted by a job in
# `high`; the plugin's --signal (USR2, sent to the steps at once with preempt_send_user_signal)
# reaches the trainer through dlx-launch, which checkpoints after the current step and exits 85;
# Slurm requeues it, it resumes from that checkpoint. It ends with final tensors byte-identical to
# the same trial run without interruption, the same metrics, and two "preemption" restarts
# recorded (the plugin's signal with the time limit far off), each with the nodes it ended on.
source "$(dirname "$0")/resume_lib.sh"

# The reference run ends before the trial starts: a preemption would requeue it too.
write_resume_experiment preempt-resume
reference_trial preempt-resume
start_resume_trial preempt-resume
for round in 1 2; do
  wait_until 120 "a checkpoint of run $round" checkpoint_past "$dir" $((round * 1000))
  job_running "$job" || fail "trial finished before preemption $round (make the training longer)"
  preempt_now
  note "preemption $round submitted"
  wait_until 120 "requeue $round" restarts_at_least "$dir" "$round"
done
wait_for_job "$job" 300
grep -q "exiting 85 for a requeue" "$WORK"/preempt-resume-"$job"_0.out ||
  fail "no checkpoint-and-exit in the job output: $(tail -20 "$WORK"/preempt-resume-"$job"_0.out)"
grep -q "after SIGUSR2" "$WORK"/preempt-resume-"$job"_0.out || fail "the notice was not SIGUSR2"
compare_trials "$REFERENCE" "$dir" 2 0
status=$(as_user dlx status "$job")
expect_contains "dlx status" "$status" "# 1 trial: 1 completed"
# dlx report of the real run: one page whose attempts are the two preemptions and the completed
# run, each on its nodes (trial.h5 records every attempt's).
report=$(as_user dlx report "$job" -o "$WORK/preempt-resume-report.html" --json)
expect_contains "dlx report" "$report" '"trials": 1'
/usr/bin/python3 - "$WORK/preempt-resume-report.html" <<'EOF' || fail "dlx report: the page does not tell the preemptions"
import json, sys
text = open(sys.argv[1], encoding="utf-8").read()
start = text.index('<script id="dlx-data" type="application/json">') + len('<script id="dlx-data" type="application/json">')
trial = json.loads(text[start:text.index("</script>", start)])["trials"][0]
hows = [a["how"] for a in trial["attempts"]]
print("# report: attempts", hows, "cuts", trial["cuts"], "nodes", trial["attempts"][-1].get("nodes"))
assert hows == ["preemption", "preemption", "completed"], hows
assert len(trial["cuts"]) == 2 and all(a.get("nodes") for a in trial["attempts"]), trial
EOF
causes=$(as_user dlx status "$job" --json | /usr/bin/python3 -c \
  'import json,sys; t=json.load(sys.stdin)["trials"][0]; print(" ".join(r["cause"] + "@" + r["previous_nodes"] for r in t["restarts"]))')
note "dlx status --json restarts: $causes"
[[ $causes == preemption@*" "preemption@* ]] || fail "dlx status --json does not show two preemptions with their nodes: $causes"
note "preempted twice, resumed, identical"
