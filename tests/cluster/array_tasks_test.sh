#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Array tasks that run several trials in turn, on real Slurm, as the unprivileged user:
#  1. a random search of 12 trials with resources.max_array_tasks 3: sbatch says how the trials
#     map to tasks, the array has 3 tasks, task t runs trials t, t+3, t+6, t+9; `scontrol requeue`
#     of task 1 after its first trial: the requeued task skips the trials it finished, resumes the
#     one it was running from its checkpoint, and every trial ends completed, each run in its own
#     task;
#  2. a 1,200-trial search on this cluster (MaxArraySize 1001, Slurm's default): dlx validate and
#     dlx plan, asking slurmctld for the limit, say so; submitted held, it is accepted as 1001
#     tasks instead of refused, the cap frozen into the snapshot.
source "$(dirname "$0")/resume_lib.sh"

name=array-tasks
cat > "$WORK/$name.yaml" <<YAML
name: $name
entrypoint: [/usr/bin/python3, $WORK/$name.py]
seed: 11
hyperparameters:
  lr: {type: double, minval: 0.001, maxval: 1}
searcher: {name: random, metric: loss, max_trials: 12, max_concurrent_trials: 3, max_length: {batches: 8}}
resources: {nodes_per_trial: 1, tasks_per_node: 1, max_array_tasks: 3}
YAML
cat > "$WORK/$name.py" <<'PY'
import os, sys, time
import numpy
import dlx
trial = dlx.Trial()
with open(os.path.join(os.path.dirname(trial.checkpoint_dir), "runs.txt"), "a") as f:
    f.write(f"{os.environ['SLURM_ARRAY_TASK_ID']} {os.environ.get('SLURM_RESTART_COUNT', '0')}\n")
resumed = trial.resume()
start = resumed.step if resumed else 0
for step in range(start + 1, 9):
    time.sleep(0.3)
    trial.report_training(step, loss=1.0 / step)
    if trial.checkpoint_requested():
        trial.save_checkpoint(step, {"w": numpy.full(1, step, dtype=numpy.float64)})
        sys.exit(trial.checkpoint_and_exit(step))
trial.report_validation(8, loss=trial.hparam("lr"))
trial.finish()
PY
cat > "$WORK/$name.sh" <<'SH'
#!/bin/bash
srun dlx-launch
SH
chmod a+rx "$WORK/$name.sh"
chmod a+r "$WORK/$name.yaml" "$WORK/$name.py"

job=$(submit_trial "$name")
expect_contains "sbatch" "$(cat "$WORK/$name.sbatch.err")" \
  "dlx: --dl-experiment: 12 trials on 3 array tasks (resources.max_array_tasks): each task runs up to 4 in turn"
# Every record of the array (its pending rest, "1-2", and each task that started, "0"), ranges
# expanded: exactly tasks 0, 1 and 2, however far Slurm has got with starting them.
array_tasks=$(scontrol show job "$job" | tr ' ' '\n' | sed -n 's/^ArrayTaskId=//p' | sed 's/%.*//' | tr ',' '\n' |
  while IFS=- read -r first last; do seq "$first" "${last:-$first}"; done | sort -n | uniq | tr '\n' ' ')
[ "$array_tasks" = "0 1 2 " ] || fail "the array: expected tasks 0 1 2, scontrol shows: $array_tasks"
wait_until 60 "the experiment link" test -L "$(user_storage)/.jobs/$job"
dir=$(readlink "$(user_storage)/.jobs/$job")
wait_until 120 "task 1's first trial" test -f "$dir/tasks/1.json"
scontrol requeue "${job}_1"
note "requeued task 1 after: $(cat "$dir/tasks/1.json")"
wait_for_job "$job" 400
as_user dlx status "$job" | tee "$WORK/$name.status"
expect_contains "dlx status" "$(cat "$WORK/$name.status")" "# 12 trials: 12 completed"
as_user dlx status --json "$job" > "$WORK/$name.status.json"
/usr/bin/python3 - "$dir" "$WORK/$name.status.json" <<'PY'
import json, sys, h5py
directory, status = sys.argv[1], json.load(open(sys.argv[2]))
text = lambda v: v.decode() if isinstance(v, bytes) else v
lr_of = {row["id"]: row["hparams"]["lr"] for row in status["trials"]}
lrs, resumed = set(), []
for trial in range(12):
    with h5py.File(f"{directory}/trials/{trial}/trial.h5", "r") as f:
        state, lr = text(f.attrs["state"]), lr_of[trial]
    runs = [line.split() for line in open(f"{directory}/trials/{trial}/runs.txt")]
    assert state == "completed", (trial, state)
    assert all(int(task) == trial % 3 for task, _ in runs), (trial, runs)  # run by its own task
    assert len(runs) in (1, 2), (trial, runs)
    if len(runs) == 2:
        resumed.append(trial)
        assert trial % 3 == 1 and runs[1][1] != "0", (trial, runs)  # task 1, after its requeue
    lrs.add(lr)
assert len(lrs) == 12, lrs
assert len(resumed) <= 1, resumed
for task in range(3):
    progress = json.load(open(f"{directory}/tasks/{task}.json"))
    tickets = [task, task + 3, task + 6, task + 9]
    assert progress == {"task": task, "tickets": tickets, "done": tickets}, progress
print(f"# h5py: 12 trials completed, each in task id % 3, 12 distinct lr; run twice (requeued mid-trial): {resumed}")
PY
note "12 trials on 3 array tasks; the requeued task skipped what it had finished"

# 2. More trials than MaxArraySize: accepted, the array capped.
big=array-cap
sed -e "s/^name: $name/name: $big/" -e 's/max_trials: 12, max_concurrent_trials: 3/max_trials: 1200/' \
  -e 's/, max_array_tasks: 3//' "$WORK/$name.yaml" > "$WORK/$big.yaml"
cp "$WORK/$name.sh" "$WORK/$big.sh"
chmod a+r "$WORK/$big.yaml" "$WORK/$big.sh"
# dlx validate and dlx plan ask this cluster's slurmctld for MaxArraySize and show sbatch's array.
validated=$(as_user dlx validate "$WORK/$big.yaml")
expect_contains "dlx validate" "$validated" \
  "valid: 1200 trials, array 0-1000%16 (each task runs up to 2 in turn: this cluster's MaxArraySize 1001)"
expect_contains "dlx plan" "$(as_user dlx plan "$WORK/$big.yaml" | grep '^# ')" \
  "# 1200 tickets on 1001 array tasks (this cluster's MaxArraySize 1001): task t runs tickets t, t+1001, t+2002, ... in turn, up to 2 each"
note "dlx validate: $validated"
capped=$(submit_trial "$big" --hold)
scancel "$capped"
expect_contains "sbatch" "$(cat "$WORK/$big.sbatch.err")" \
  "dlx: --dl-experiment: 1200 trials on 1001 array tasks (this cluster's MaxArraySize): each task runs up to 2 in turn"
# A held job never starts, so there is no .jobs link: the newest directory of that name.
snapshot="$(ls -td "$(user_storage)/$big"*/ | head -1)experiment.yaml"
grep -q "max_array_tasks: 1001" "$snapshot" || fail "the cap is not frozen: $(cat "$snapshot")"
note "1200 trials accepted as 1001 array tasks (MaxArraySize), frozen in the snapshot"
