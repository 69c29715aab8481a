#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The code snapshot (issue 22), as the unprivileged test user on the local cluster:
#   - over the size cap, sbatch fails at once naming the biggest file: nothing queued, no directory;
#   - from a work tree another user owns, no snapshot, with a warning (never git's advice to trust
#     the directory); the submission goes on;
#   - a git repository is submitted held, its trainer edited and committed before the trials run,
#     and edited again before a requeued attempt: every trial and the requeued attempt run the
#     submitted (uncommitted) version, from a node-local copy, with DLX_CODE_DIR set and the
#     relative entrypoint resolved there;
#   - the commit, branch, status and diff are in the experiment directory (code.json, code.diff),
#     experiment.h5 (/code), `dlx status` and `dlx report`'s page;
#   - .dlxignore'd files, a submodule, and links pointing outside the tree are not copied, and
#     no byte of a file outside the tree is;
#   - what the trainer writes in its working directory is kept in trials/<id>/outputs/ (not the
#     code, not __pycache__), including by the attempt the requeue ended; the requeued attempt
#     starts with those files in its working directory, its file replaces the first one's, and a
#     file only the first wrote stays.
source "$(dirname "$0")/lib.sh"

repo=$WORK/coderepo
as_user bash -c "rm -rf coderepo snaplib && mkdir coderepo snaplib && echo 'SECRET OUTSIDE THE TREE' > secret.txt"
git_as_user() { as_user git -c user.name=t -c user.email=t@example.org -c protocol.file.allow=always -c init.defaultBranch=main "$@"; }
git_as_user -C snaplib init -q
as_user bash -c "echo 'LIB = 1' > snaplib/lib.py"
git_as_user -C snaplib add lib.py
git_as_user -C snaplib commit -qm lib

git_as_user -C coderepo init -q
as_user bash -c 'cd coderepo && cat > train.sh' <<'SH'
#!/bin/sh
VERSION=v1-committed
out=$DLX_EXPERIMENT_DIR/ran-$DLX_TRIAL_ID-${SLURM_RESTART_COUNT:-0}.txt
echo "$VERSION pwd=$(pwd) code=$DLX_CODE_DIR" > "$out"
ls -a > "$out.ls"
# What a training script leaves in its working directory: kept in the trial's outputs/.
echo "attempt ${SLURM_RESTART_COUNT:-0}" > model.pt
mkdir -p "runs/$DLX_TRIAL_ID" __pycache__ && echo scalars > "runs/$DLX_TRIAL_ID/events" && echo pyc > __pycache__/x.pyc
if [ -z "${SLURM_RESTART_COUNT:-}" ]; then echo first > first-attempt.txt; fi
# Trial 0's first attempt asks Slurm to requeue it; the requeued attempt must run the same code.
if [ "$DLX_TRIAL_ID" = 0 ] && [ -z "${SLURM_RESTART_COUNT:-}" ]; then
  touch "$DLX_EXPERIMENT_DIR/requeue-asked"
  scontrol requeue "${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"
  sleep 120
fi
SH
as_user bash -c 'cd coderepo && printf "data/\n" > .dlxignore && printf "*.log\n" > .gitignore'
git_as_user -C coderepo add train.sh .dlxignore .gitignore
git_as_user -C coderepo submodule add -q "$WORK/snaplib" lib
git_as_user -C coderepo commit -qm first
commit=$(as_user git -C coderepo rev-parse HEAD)
# The submitted version: an uncommitted edit, plus what must stay out of the snapshot.
as_user sed -i 's/^VERSION=.*/VERSION=v2-submitted/' coderepo/train.sh
as_user bash -c 'cd coderepo && mkdir data && head -c 1048576 /dev/zero > data/big.bin && echo noise > run.log &&
  ln -s ../secret.txt leak.txt && ln -s /etc/hostname absolute-link && echo untracked > notes.txt'

cat > "$WORK/snap.yaml" <<'YAML'
name: codesnap
entrypoint: sh train.sh
hyperparameters: {width: {type: categorical, vals: [1, 2, 3]}}
searcher: {name: random, metric: loss, max_trials: 3}
resources: {nodes_per_trial: 1, tasks_per_node: 1}
YAML
sed -e 's/^name: .*/name: codesnap-capped/' "$WORK/snap.yaml" > "$WORK/snap-capped.yaml"
echo "code: {max_size: 200kB}" >> "$WORK/snap-capped.yaml"
chmod a+r "$WORK/snap.yaml" "$WORK/snap-capped.yaml"

# ---- over the cap: sbatch fails at once, nothing queued, no experiment directory ----
as_user bash -c 'head -c 300000 /dev/zero > coderepo/weights.bin'
queued_before=$(squeue -h -u "$DLX_TEST_USER" | wc -l)
dirs_before=$(count_entries "$(user_storage)")
if as_user bash -c 'cd coderepo && sbatch --parsable --dl-experiment=../snap-capped.yaml ../examples/job.sh' \
    > "$WORK/capped.out" 2> "$WORK/capped.err"; then
  fail "an over-cap snapshot was submitted: $(cat "$WORK/capped.out")"
fi
capped=$(cat "$WORK/capped.err")
expect_contains "over-cap message" "$capped" "dlx: --dl-experiment: the code snapshot of $repo would be"
expect_contains "over-cap message" "$capped" "over the limit of 200 kB; the biggest: weights.bin (300 kB)"
expect_contains "over-cap message" "$capped" "code: {max_size: 500MB}"
case "$capped" in *big.bin*) fail ".dlxignore'd data/big.bin counted: $capped" ;; esac
[ "$(squeue -h -u "$DLX_TEST_USER" | wc -l)" = "$queued_before" ] || fail "over-cap submission queued a job"
[ "$(count_entries "$(user_storage)")" = "$dirs_before" ] || fail "over-cap submission left a directory"
ls "$(user_storage)" | grep -q '^codesnap-capped' && fail "over-cap submission left codesnap-capped"
as_user rm coderepo/weights.bin
note "over-cap snapshot refused, nothing queued or created"

# ---- a work tree another user owns (root's here): never read; no snapshot, with a warning, and
# never git's advice to trust it ----
rm -rf "$WORK/rootrepo" && git init -q "$WORK/rootrepo" && echo 'print(1)' > "$WORK/rootrepo/train.py"
chmod -R a+rX "$WORK/rootrepo"
sed -e 's/^name: .*/name: codesnap-foreign/' "$WORK/snap.yaml" > "$WORK/snap-foreign.yaml" && chmod a+r "$WORK/snap-foreign.yaml"
submitted=$(as_user bash -c 'cd rootrepo && sbatch --parsable --hold --output=/dev/null --dl-experiment=../snap-foreign.yaml ../examples/job.sh' \
    2> "$WORK/foreign.err") || fail "a submission from another user's work tree failed: $(cat "$WORK/foreign.err")"
scancel "$(job_id_of "$submitted")"
foreign=$(cat "$WORK/foreign.err")
expect_contains "foreign work tree" "$foreign" \
  "dlx: no code snapshot: $WORK/rootrepo is inside a git repository that is not yours ($WORK/rootrepo/.git belongs to root)"
expect_contains "foreign work tree" "$foreign" "do not trust it with safe.directory"
case "$foreign" in *"git config --global"*) fail "sbatch relayed git's advice to trust another user's directory: $foreign" ;; esac
foreign_dir=$(grep -o "trials as array .* in /.*" "$WORK/foreign.err" | sed 's/.* in //')
[ -d "$foreign_dir" ] && [ ! -e "$foreign_dir/code" ] || fail "another user's work tree was snapshotted [$foreign_dir]: $foreign"
rm -rf "$WORK/rootrepo"
note "another user's work tree: no snapshot, with a warning"

# ---- submitted held; the trainer is edited and committed before any trial runs ----
submitted=$(as_user bash -c "cd coderepo && sbatch --parsable -H --output=$WORK/snap-%A_%a.out \
  --dl-experiment=../snap.yaml ../examples/job.sh" 2> "$WORK/snap.sbatch.err")
job=$(job_id_of "$submitted")
report=$(cat "$WORK/snap.sbatch.err")
expect_contains "sbatch's report" "$report" "dlx: code snapshot: 5 files"
expect_contains "sbatch's report" "$report" "commit ${commit:0:12}, dirty"
expect_contains "sbatch's report" "$report" "entries not copied"
# What the trials' working directory will lack, named at submission (not the skipped links and
# submodule, said above).
expect_contains "sbatch's report" "$report" \
  "dlx: code snapshot: left out of it (.gitignore or .dlxignore), so no trial finds them in its working directory: data/, run.log (6 B); read data from an absolute path or stage it with data: stage:"
dir=$(grep -o "trials as array .* in /.*" "$WORK/snap.sbatch.err" | sed 's/.* in //')
[ -d "$dir/code" ] || fail "no code/ in the experiment directory [$dir]: $report"
as_user sed -i 's/^VERSION=.*/VERSION=v3-edited-after-sbatch/' coderepo/train.sh
git_as_user -C coderepo commit -qam "edited after submission"
scontrol release "$job"
deadline=$((SECONDS + 120))
until [ -f "$dir/requeue-asked" ]; do
  [ "$SECONDS" -lt "$deadline" ] || fail "trial 0 never ran: $(cat "$WORK"/snap-"$job"_0.out 2>/dev/null)"
  sleep 0.25
done
# Edited again while trial 0 waits for its requeued attempt.
as_user sed -i 's/^VERSION=.*/VERSION=v4-edited-before-requeue/' coderepo/train.sh
wait_for_job "$job" 300

for ran in 0-0 0-1 1-0 2-0; do
  file=$dir/ran-$ran.txt
  [ -f "$file" ] || fail "no record of attempt $ran: $(tail -5 "$WORK"/snap-"$job"_"${ran%-*}".out)"
  line=$(cat "$file")
  # The node-local copy is under the site's node-local directory (the local cluster's plugstack
  # local_dir=<state>/tmp/%n), in the user's own dlx-<uid>.
  expect_contains "attempt $ran" "$line" "v2-submitted pwd=$CLUSTER/tmp/n"
  expect_contains "attempt $ran" "$line" "/dlx-$(id -u "$DLX_TEST_USER")/code-"
  code_dir=${line##*code=}
  expect_contains "attempt $ran" "$line" "pwd=$code_dir "
  case "$code_dir" in "$dir"*) fail "attempt $ran ran on shared storage: $line" ;; esac
  listing=$(cat "$file.ls")
  for absent in data run.log leak.txt absolute-link; do
    if grep -qx "$absent" "$file.ls"; then fail "attempt $ran: $absent was copied: $listing"; fi
  done
  grep -qx notes.txt "$file.ls" || fail "attempt $ran: the untracked notes.txt is missing: $listing"
done
note "4 attempts (3 trials and a requeue) ran the submitted version from node-local copies"

# ---- what the trainers wrote in their working directories ----
for trial in 0 1 2; do
  outputs=$dir/trials/$trial/outputs
  attempt=0; [ "$trial" = 0 ] && attempt=1
  [ "$(cat "$outputs/model.pt" 2>/dev/null)" = "attempt $attempt" ] ||
    fail "trial $trial: outputs/model.pt is not attempt $attempt's: $(ls -laR "$outputs" 2>&1)"
  [ "$(cat "$outputs/first-attempt.txt" 2>/dev/null)" = first ] || fail "trial $trial: no outputs/first-attempt.txt"
  [ "$(cat "$outputs/runs/$trial/events" 2>/dev/null)" = scalars ] || fail "trial $trial: no outputs/runs/$trial/events"
  [ ! -e "$outputs/train.sh" ] && [ ! -e "$outputs/__pycache__" ] && [ ! -e "$outputs/notes.txt" ] ||
    fail "trial $trial: the code or __pycache__ was kept as an output: $(ls -laR "$outputs")"
  [ "$(stat -c %U "$outputs/model.pt")" = "$DLX_TEST_USER" ] || fail "trial $trial: outputs/model.pt is not the user's"
done
expect_contains "trial 0's first attempt (requeued)" "$(cat "$dir/trials/0/logs/attempt-0.rank-0.log")" \
  "dlx-launch: kept 3 files (24 B) the trainer wrote in its working directory, in $dir/trials/0/outputs/: first-attempt.txt, model.pt, runs/0/events"
expect_contains "trial 0's requeued attempt" "$(cat "$dir/trials/0/logs/attempt-1.rank-0.log")" \
  "dlx-launch: kept 2 files (18 B) the trainer wrote in its working directory, in $dir/trials/0/outputs/: model.pt, runs/0/events"
# The requeued attempt started with the first one's files in its working directory, as a trainer
# running in a shared directory would have found them.
expect_contains "trial 0's requeued attempt" "$(cat "$dir/trials/0/logs/attempt-1.rank-0.log")" \
  "dlx-launch: restored 3 files (24 B) that earlier attempts kept in $dir/trials/0/outputs/ into the working directory: first-attempt.txt, model.pt, runs/0/events"
grep -qx first-attempt.txt "$dir/ran-0-1.txt.ls" ||
  fail "the requeued attempt did not find the first one's files: $(cat "$dir/ran-0-1.txt.ls")"
grep -qx model.pt "$dir/ran-0-0.txt.ls" && fail "the first attempt found a model.pt before writing one"
note "each trial's files kept in trials/<id>/outputs/, restored into the requeued attempt's directory, its own replacing the first's"

# ---- what the experiment directory records ----
info=$dir/code.json
[ "$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['commit'])" "$info")" = "$commit" ] ||
  fail "code.json names another commit: $(cat "$info")"
/usr/bin/python3 - "$info" <<'PY' || fail "code.json: $(cat "$info")"
import json, sys
info = json.load(open(sys.argv[1]))
assert info["dirty"] is True and info["branch"] == "main", info
assert " M train.sh" in info["status"], info["status"]
skipped = {entry["path"]: entry["reason"] for entry in info["skipped"]}
assert "leak.txt" in skipped and "absolute-link" in skipped and "lib" in skipped, skipped
assert "submodule" in skipped["lib"], skipped
PY
grep -q '^+VERSION=v2-submitted' "$dir/code.diff" || fail "code.diff lacks the uncommitted edit: $(cat "$dir/code.diff")"
[ ! -e "$dir/code/data" ] && [ ! -e "$dir/code/leak.txt" ] && [ ! -e "$dir/code/lib/lib.py" ] ||
  fail "ignored, outside or submodule files in code/: $(find "$dir/code")"
if grep -rq "SECRET OUTSIDE" "$dir/code"; then fail "a file outside the tree was copied"; fi
grep -q "VERSION=v2-submitted" "$dir/code/train.sh" || fail "code/train.sh is not the submitted version"
status=$(as_user dlx status "$job")
expect_contains "dlx status" "$status" "# code commit ${commit:0:12} (dirty) on main"
as_user dlx report "$job" -o "$WORK/snap-report.html" > /dev/null
/usr/bin/python3 - "$WORK/snap-report.html" "${commit:0:12}" <<'PY' || fail "dlx report does not show the code's commit"
import json, sys
text = open(sys.argv[1], encoding="utf-8").read()
start = text.index('<script id="dlx-data" type="application/json">')
model = json.loads(text[text.index(">", start) + 1:text.index("</script>", start)])
assert model["meta"]["code"] == f"commit {sys.argv[2]} (dirty) on main", model["meta"]["code"]
PY
/usr/bin/python3 - "$dir/experiment.h5" "$commit" <<'PY' || fail "experiment.h5 lacks /code"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    code = f["code"]
    commit = code.attrs["commit"]
    assert (commit.decode() if isinstance(commit, bytes) else commit) == sys.argv[2], commit
    assert bool(code.attrs["dirty"])
    diff = code["diff"][()]
    assert b"v2-submitted" in (diff if isinstance(diff, bytes) else diff.encode())
PY
note "commit, status and diff recorded in code.json, code.diff, experiment.h5, dlx status and dlx report"
