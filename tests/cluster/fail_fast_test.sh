#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A deterministic mistake fails the trial in one attempt (issue 32), as the unprivileged test user:
# a Python trial whose validation report at the searcher's target lacks the searcher's metric
# (accuracy) gets dlx.ConfigError, which ends it with exit 78; dlx-launch marks the trial failed
# at once with the error's line instead of restarting it max_restarts (5) times. Asserts: one
# attempt (no requeue, failures 1, no restart event), trial.h5's last_error and stop_reason name
# the dlx.ConfigError line, and `dlx status` shows it. The same trial reads `batch_size` with a
# default while the experiment defines `batch_sise`: both warnings (the default taken, the name
# never read) are kept in trial.h5 and `dlx status` shows them under its table with the
# did-you-mean, the unread name once for the experiment. Then a trainer Python cannot compile: failed
# in one attempt too. Then a file .gitignore left out of the code snapshot, read by rank 1 of two:
# failed in one attempt on both ranks, the message naming the file, the rule's command and the fix.
source "$(dirname "$0")/resume_lib.sh"

name=fail-fast
cat > "$WORK/$name.yaml" <<YAML
name: $name
entrypoint: [/usr/bin/python3, $WORK/$name.py]
seed: 5
max_restarts: 5
hyperparameters: {batch_sise: 32}
searcher: {name: single, metric: accuracy, smaller_is_better: false, max_length: {batches: 4}}
resources: {nodes_per_trial: 1, tasks_per_node: 1}
YAML
cat > "$WORK/$name.py" <<'PY'
import dlx
trial = dlx.Trial()
batch_size = trial.hparam("batch_size", 64)
trial.check_hparam_names()
for step in range(1, trial.target_length + 1):
    trial.report_training(step, {"loss": 1.0 / step})
trial.report_validation(trial.target_length, {"loss": 0.25})
trial.finish()
PY
cat > "$WORK/$name.sh" <<'SH'
#!/bin/bash
srun --mpi=pmix dlx-launch
echo "dlx-test: srun exited $? (restart ${SLURM_RESTART_COUNT:-0})"
SH
chmod a+rx "$WORK/$name.sh"
chmod a+r "$WORK/$name.yaml" "$WORK/$name.py"

job=$(submit_trial "$name")
note "submitted $job"
wait_for_job "$job" 180
out=$(cat "$WORK/$name-${job}_0.out")
echo "$out"
expect_contains "the job's output" "$out" "dlx-test: srun exited 78 (restart 0)"
grep -q "(restart 1)" <<< "$out" && fail "the trial was restarted: $out"
expect_contains "the job's output" "$out" "dlx-launch: trial 0 is failed: exit 78: dlx.ConfigError: "

status=$(as_user dlx status "$job")
echo "$status"
grep -Eq "^0 +failed " <<< "$status" || fail "trial 0 is not failed in dlx status"
expect_contains "dlx status" "$status" "# trial 0 failed: exit 78: dlx.ConfigError: "
expect_contains "dlx status" "$status" "has no 'accuracy', the metric the experiment's searcher optimises"
expect_contains "dlx status" "$status" \
  "# warning: trial 0: hyperparameter 'batch_size' is not defined by the experiment, so trial.hparam(\"batch_size\", ...) uses its default 64 (did you mean 'batch_sise'?"
expect_contains "dlx status" "$status" \
  "# warning: hyperparameter 'batch_sise' is defined but never read by any trial (1 finished)"

dir=$(readlink "$(user_storage)/.jobs/$job")
/usr/bin/python3 - "$dir/trials/0/trial.h5" <<'PY'
import json, sys, h5py
text = lambda v: v.decode() if isinstance(v, bytes) else v
with h5py.File(sys.argv[1], "r") as f:
    attrs = {k: text(v) for k, v in f.attrs.items()}
    assert "restart_events" not in f or len(f["restart_events"]) == 0, list(f["restart_events"])
print(f"# trial.h5: state {attrs['state']}, failures {attrs['failures']}, restarts {attrs['restarts']}, "
      f"exit {attrs['exit_code']}, last_error {attrs['last_error']!r}")
assert attrs["state"] == "failed" and int(attrs["failures"]) == 1 and int(attrs["restarts"]) == 0, attrs
assert int(attrs["exit_code"]) == 78, attrs
assert attrs["last_error"].startswith("exit 78: dlx.ConfigError: "), attrs["last_error"]
assert "has no 'accuracy'" in attrs["last_error"], attrs["last_error"]
assert "not restarted" in attrs["stop_reason"], attrs["stop_reason"]
warnings = json.loads(attrs["hparam_warnings"])
assert [(w["kind"], w["name"]) for w in warnings] == [("default", "batch_size"), ("unread", "batch_sise")], warnings
PY
note "a configuration error failed the trial in one attempt, its message in dlx status"

# A trainer Python cannot compile (a parenthesis left open) is the same mistake on every run: failed
# in one attempt with Python's error line, where max_restarts 5 would have requeued it five times,
# each after waiting in the queue again.
name=fail-fast-syntax
sed -e "s/^name: fail-fast$/name: $name/" -e "s|fail-fast.py|$name.py|" "$WORK/fail-fast.yaml" > "$WORK/$name.yaml"
printf 'import dlx\ntrial = dlx.Trial()\nprint("training"\n' > "$WORK/$name.py"
cp "$WORK/fail-fast.sh" "$WORK/$name.sh"
chmod a+r "$WORK/$name.yaml" "$WORK/$name.py"
chmod a+rx "$WORK/$name.sh"
job=$(submit_trial "$name")
note "submitted $job"
wait_for_job "$job" 180
out=$(cat "$WORK/$name-${job}_0.out")
expect_contains "the job's output" "$out" "dlx-test: srun exited 1 (restart 0)"
grep -q "(restart 1)" <<< "$out" && fail "the trial was restarted: $out"
expect_contains "the job's output (Python's own words)" "$out" "$name.py\", line 3"
status=$(as_user dlx status "$job")
expect_contains "dlx status" "$status" "# trial 0 failed: exit 1: SyntaxError: "
expect_contains "dlx status" "$status" "(Python could not compile the trainer's code: a restart would fail alike, so it is not restarted"
note "a trainer Python cannot compile failed in one attempt: $(sed -n 's/^# trial 0 failed: \(.*\) (Python could not.*/\1/p' <<< "$status")"

# A file the trainer reads beside itself that .gitignore leaves out of the code snapshot (`*.pt`,
# a dataset made by hand in the work tree): every attempt runs a copy of the same snapshot, so it
# fails in one attempt, saying which file the snapshot lacks, why and how to get it to the trials,
# where it used to be requeued until the same crash came three times. Two ranks, and only rank 1
# reads the file: rank 0 takes the crash, explanation included, from rank 1's announcement.
name=fail-fast-ignored
git_as_user() { as_user git -c user.name=t -c user.email=t@example.org -c init.defaultBranch=main "$@"; }
as_user bash -c "rm -rf ignored-repo && mkdir ignored-repo"
git_as_user -C ignored-repo init -q
as_user bash -c 'cd ignored-repo && printf "*.pt\n" > .gitignore && echo weights > traindata.pt && cat > train.py' <<'PY'
import os, time
import dlx
trial = dlx.Trial()
if os.environ["RANK"] == "1":
    open("traindata.pt").read()
time.sleep(120)  # rank 0: ended by rank 1's crash
PY
as_user bash -c "cd ignored-repo && cat > exp.yaml" <<YAML
name: $name
entrypoint: [/usr/bin/python3, train.py]
max_restarts: 5
searcher: {name: single, metric: loss}
resources: {nodes_per_trial: 1, tasks_per_node: 2}
YAML
git_as_user -C ignored-repo add .gitignore train.py exp.yaml
git_as_user -C ignored-repo commit -qm first
out=$(as_user bash -c "cd ignored-repo && sbatch --parsable --output=$WORK/$name-%A_%a.out --dl-experiment=exp.yaml \
  $WORK/fail-fast.sh" 2> "$WORK/$name.sbatch.err") || fail "sbatch $name failed: $(cat "$WORK/$name.sbatch.err")"
job=$(job_id_of "$out")
note "submitted $job"
wait_for_job "$job" 180
out=$(cat "$WORK/$name-${job}_0.out")
echo "$out"
expect_contains "the job's output" "$out" "dlx-test: srun exited 1 (restart 0)"
grep -q "(restart 1)" <<< "$out" && fail "the trial was restarted: $out"
gap="'traindata.pt' is not in the experiment's code snapshot, but is in $WORK/ignored-repo: .gitignore or .dlxignore excludes it (\`git check-ignore -v traindata.pt\` there names the rule); un-ignore it (\`git add -f traindata.pt\`, or a \`!traindata.pt\` line in .gitignore)"
expect_contains "the job's output" "$out" \
  "dlx-launch: trial 0 is failed: rank 1 on n1: exit 1: FileNotFoundError: [Errno 2] No such file or directory: 'traindata.pt' ($gap"
status=$(as_user dlx status "$job")
expect_contains "dlx status" "$status" "# trial 0 failed: rank 1 on n1: exit 1: FileNotFoundError: "
expect_contains "dlx status" "$status" "$gap"
expect_contains "dlx status" "$status" "trials run a copy of the snapshot, so a restart would fail alike: not restarted)"
dir=$(readlink "$(user_storage)/.jobs/$job")
/usr/bin/python3 - "$dir/trials/0/trial.h5" <<'PY'
import sys, h5py
text = lambda v: v.decode() if isinstance(v, bytes) else v
with h5py.File(sys.argv[1], "r") as f:
    attrs = {k: text(v) for k, v in f.attrs.items()}
print(f"# trial.h5: state {attrs['state']}, failures {attrs['failures']}, restarts {attrs['restarts']}")
assert attrs["state"] == "failed" and int(attrs["failures"]) == 1 and int(attrs["restarts"]) == 0, attrs
assert "git check-ignore -v traindata.pt" in attrs["stop_reason"], attrs["stop_reason"]
PY
note "a file .gitignore left out of the snapshot failed the trial in one attempt, named with the fix"
