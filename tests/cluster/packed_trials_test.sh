#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Packed array tasks on real Slurm, as the unprivileged user (issue 36): an ASHA search of 8
# trials at 4 per array task (resources.trials_per_task: 4):
#  - sbatch says how the tickets map to tasks; each task runs its trials 4 at once, in slots;
#  - every trial has its own id, record and checkpoints; ASHA promotes some to the full length;
#  - trial 5 fails (exit 3, max_restarts 0) while its task-mates run on and complete;
#  - `scontrol requeue` of task 0 while its trials run: each interrupted trial checkpoints on the
#    notice and resumes in the requeued task from that checkpoint, bit-identically (its final
#    value equals the value the same steps give without interruption, to the last bit);
#  - dlx status shows every trial; tasks/<task>.json lists every ticket done;
#  - dlx report shows the packing (the array's mapping, each trial's array task);
#  - every trainer holds a torch.distributed process group (world size 1, gloo) for its whole
#    run, as scripts written for torchrun do: a task's slots share its job id, and each needs a
#    MASTER_PORT of its own;
#  - the trials of a task run in node-local code copies of their own (code: {dir: ...}): each
#    appends its id to whoami.txt in its working directory (restored from outputs/ into each
#    later attempt's copy), and each trial's outputs/ holds its own, one line per run.
source "$(dirname "$0")/resume_lib.sh"

name=packed-trials
cat > "$WORK/$name.yaml" <<YAML
name: $name
entrypoint: [/usr/bin/python3, $WORK/$name.py]
seed: 5
hyperparameters:
  lr: {type: double, minval: 0.05, maxval: 0.5}
searcher: {name: async_halving, metric: loss, max_trials: 8, num_rungs: 2, divisor: 4, max_concurrent_trials: 8,
           max_length: {batches: 12}}
resources: {nodes_per_trial: 1, tasks_per_node: 1, trials_per_task: 4}
max_restarts: 0
code: {dir: $WORK/$name-code}
YAML
as_user bash -c "rm -rf $name-code && mkdir $name-code && echo 'a packed trial runs here' > $name-code/README"
cat > "$WORK/$name.py" <<'PY'
import os, sys, time
import numpy
import torch.distributed
import dlx
trial = dlx.Trial()
torch.distributed.init_process_group("gloo")  # binds MASTER_PORT until the process ends
here = os.path.dirname(trial.checkpoint_dir)
with open("whoami.txt", "a") as f:  # in this trial's own copy of the code
    f.write(f"{trial.id}\n")
resumed = trial.resume()
step, w = (resumed.step, float(resumed.state["w"])) if resumed else (0, 0.0)
with open(os.path.join(here, "runs.txt"), "a") as f:
    f.write(f"{os.environ['SLURM_ARRAY_TASK_ID']} {os.environ.get('SLURM_RESTART_COUNT', '0')} "
            f"{os.environ['DLX_SLOT']} {step} {trial.target_length} {time.time()} {os.environ['DLX_TICKET']} {os.environ['MASTER_PORT']}\n")
lr = trial.hparam("lr")
while True:
    while step < trial.target_length:
        time.sleep(1.0)
        step += 1
        w = w * (1 - lr) + step
        trial.report_training(step, loss=w)
        with open(os.path.join(here, "step.txt"), "w") as f:
            f.write(f"{os.environ['SLURM_ARRAY_TASK_ID']} {step} {trial.target_length}\n")
        if trial.id == 5 and step == 2:
            with open(os.path.join(here, "failed-at"), "w") as f:
                f.write(f"{time.time()}\n")
            sys.exit(3)
        if trial.checkpoint_requested():
            trial.save_checkpoint(step, {"w": numpy.full(1, w)}, state={"w": w})
            sys.exit(trial.checkpoint_and_exit(step))
    trial.save_checkpoint(step, {"w": numpy.full(1, w)}, state={"w": w})
    if trial.report_validation(step, loss=(lr - 0.3) ** 2 + 1.0 / step) != "train":
        break
with open(os.path.join(here, "final.txt"), "w") as f:
    f.write(f"{step} {w!r} {time.time()}\n")
trial.finish()
PY
cat > "$WORK/$name.sh" <<'SH'
#!/bin/bash
srun dlx-launch
SH
chmod a+rx "$WORK/$name.sh"
chmod a+r "$WORK/$name.yaml" "$WORK/$name.py"

as_user dlx plan "$name.yaml" | grep '^# ' > "$WORK/$name.plan"
tasks=$(as_user dlx plan --json "$name.yaml" | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["array_tasks"])')
job=$(submit_trial "$name")
expect_contains "sbatch" "$(cat "$WORK/$name.sbatch.err")" "array tasks (resources.trials_per_task): each task runs up to"
expect_contains "dlx plan" "$(cat "$WORK/$name.plan")" "(resources.trials_per_task): task t runs tickets t, t+$tasks"
wait_until 60 "the experiment link" test -L "$(user_storage)/.jobs/$job"
dir=$(readlink "$(user_storage)/.jobs/$job")
# Task 0 with at least two trials past their first step and short of their target (a step takes
# 1 s, the first rung 3): requeue it then, so that both are interrupted mid-rung.
running_trials() {
  local count=0 t task step target
  for t in $(seq 0 7); do
    [ -f "$dir/trials/$t/step.txt" ] || continue
    read -r task step target < "$dir/trials/$t/step.txt"
    [ "$task" = 0 ] && [ "$step" -ge 1 ] && [ "$step" -lt "$target" ] && count=$((count + 1))
  done
  [ "$count" -ge 2 ]
}
wait_until 120 "two trials of task 0 running" running_trials
scontrol requeue "${job}_0"
note "requeued task 0 while its trials ran"
wait_for_job "$job" 400
as_user dlx status "$job" | tee "$WORK/$name.status"
/usr/bin/python3 - "$dir" "$tasks" <<'PY'
import json, os, sys
import h5py
directory, tasks = sys.argv[1], int(sys.argv[2])
text = lambda v: v.decode() if isinstance(v, bytes) else v
states, resumed, full, mates_of_5 = {}, [], [], []
for trial in range(8):
    with h5py.File(f"{directory}/trials/{trial}/trial.h5", "r") as f:
        states[trial] = text(f.attrs["state"])
    runs = [line.split() for line in open(f"{directory}/trials/{trial}/runs.txt")]
    assert all(int(run[0]) == int(run[6]) % tasks for run in runs), (trial, runs)  # ticket k in task k % tasks
    assert all(0 <= int(slot) < 4 for _, _, slot, *_ in runs), (trial, runs)
    assert os.path.isdir(f"{directory}/trials/{trial}/checkpoints"), trial
    # Each trial ran in copies of its own, each attempt's with the earlier attempts' whoami.txt
    # restored: a line per run at most (a run the requeue ended may not have had its file kept),
    # each its own id (another trial's would be a shared directory).
    whoami = open(f"{directory}/trials/{trial}/outputs/whoami.txt").read().split("\n")[:-1]
    assert whoami and set(whoami) == {str(trial)} and len(whoami) <= len(runs), (trial, whoami, runs)
    if trial == 5:
        assert states[5] == "failed", states
        continue
    assert states[trial] in ("completed", "stopped", "paused"), (trial, states[trial])  # paused: not promoted
    step, w, ended = open(f"{directory}/trials/{trial}/final.txt").read().split()
    if any(int(start) > 0 and restart != "0" for _, restart, _, start, *_ in runs):
        resumed.append(trial)
    if int(step) == 12:
        full.append(trial)
    mates_of_5.append(({int(run[0]) for run in runs}, trial, float(ended)))
# The slots of a task held their process groups on ports of their own (a collision would have
# failed the trial at init_process_group: the states above).
ports_of_slot = {}
for trial in range(8):
    for task, restart, slot, *_, port in (line.split() for line in open(f"{directory}/trials/{trial}/runs.txt")):
        assert 20000 <= int(port) < 30000, (trial, port)
        ports_of_slot.setdefault((task, restart), {}).setdefault(slot, set()).add(int(port))
for run, slots in ports_of_slot.items():
    every = [port for ports in slots.values() for port in ports]
    assert len(every) == len(set(every)), (run, slots)  # no port in two slots
failed_at = float(open(f"{directory}/trials/5/failed-at").read())
task_of_5 = int(open(f"{directory}/trials/5/runs.txt").readline().split()[0])
mates_of_5 = [(trial, ended) for ran_in, trial, ended in mates_of_5 if task_of_5 in ran_in]
assert any(ended > failed_at for _, ended in mates_of_5), (mates_of_5, failed_at)  # they ran on
assert resumed, "no trial of task 0 resumed from a checkpoint after the requeue"
assert full, "ASHA promoted no trial to the full length"
done = set()
for task in range(tasks):
    progress = json.load(open(f"{directory}/tasks/{task}.json"))
    assert progress["done"] == progress["tickets"], progress
    done |= set(progress["done"])
print(f"# h5py: 8 trials, states {states}; resumed after the requeue: {resumed}; trained to 12: {full}; "
      f"tickets done {sorted(done)}; MASTER_PORT of each (task, restart)'s slots {ports_of_slot}")
PY
# Bit-identical resume: each trial's final value against the same steps without interruption.
as_user dlx status --json "$job" > "$WORK/$name.status.json"
/usr/bin/python3 - "$dir" "$WORK/$name.status.json" <<'PY'
import json, sys
directory, status = sys.argv[1], json.load(open(sys.argv[2]))
for row in status["trials"]:
    if row["id"] == 5:
        continue
    step, w, _ = open(f"{directory}/trials/{row['id']}/final.txt").read().split()
    lr, expected = row["hparams"]["lr"], 0.0
    for s in range(1, int(step) + 1):
        expected = expected * (1 - lr) + s
    assert float(w) == expected, (row["id"], w, repr(expected))
print("# every trial's final value is bit-identical to an uninterrupted run's")
PY
expect_contains "dlx status" "$(cat "$WORK/$name.status")" "# 8 trials:"
# The report shows the packing: the array's mapping, and the array task each trial ran in.
report=$(as_user dlx report "$job" --output "$WORK/$name.html" 2>&1) || fail "dlx report failed: $report"
/usr/bin/python3 - "$dir" "$WORK/$name.html" "$tasks" <<'PY'
import json, sys
directory, page, tasks = sys.argv[1], open(sys.argv[2], encoding="utf-8").read(), int(sys.argv[3])
tag = '<script id="dlx-data" type="application/json">'
start = page.index(tag) + len(tag)
model = json.loads(page[start:page.index("</script>", start)])
array = model["meta"]["array"]
# ASHA's tickets: its 8 trials and those that may run its promotions (dlx plan's array).
assert array.pop("tickets") > 8, array
assert array == {"tasks": tasks, "at_once": 4, "trials_per_gpu": None, "load": "up to 4 at once",
                 "cause": "resources.trials_per_task"}, array
for trial in model["trials"]:
    last_run = open(f"{directory}/trials/{trial['id']}/runs.txt").read().split("\n")[-2].split()
    assert trial["task"] == int(last_run[0]), (trial["id"], trial["task"], last_run)
print(f"# report: meta.array {array}; each trial's array task matches the task it last ran in")
PY
note "8 trials at 4 per task: each its own slot and record, trial 5 failed alone, task 0 requeued and resumed"
