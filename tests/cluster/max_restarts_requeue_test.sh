#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# max_restarts: 1, real Slurm: a grid of two trials, one of which crashes on every run
# (learning_rate -1: the entrypoint, a Python script, opens its dlx.Trial, so that trial.h5 exists
# and a requeued run records a restart, then raises RuntimeError: an ordinary crash, exit 1; a
# hyperparameter dlx-example-logreg refuses would be a configuration error, exit 78, failed at
# once: cluster.fail_fast). dlx-launch turns the first crash into exit 85, Slurm requeues the
# array task, the second crash is past max_restarts and the trial ends `failed` with the crash,
# the trainer's last error line included, in stop_reason and last_error; the other trial of the
# experiment (dlx-example-logreg) completes normally.
source "$(dirname "$0")/resume_lib.sh"

name=max-restarts
cat > "$WORK/$name.yaml" <<YAML
name: $name
entrypoint: [/usr/bin/python3, $WORK/$name.py]
seed: 5
max_restarts: 1
hyperparameters:
  learning_rate: {type: categorical, vals: [-1.0, 0.05]}
  batch_size: 16
  epochs: 2
  samples: 2000
searcher: {name: grid, metric: accuracy, smaller_is_better: false, max_trials: 2, max_concurrent_trials: 2}
resources: {nodes_per_trial: 1, tasks_per_node: 1}
YAML
cat > "$WORK/$name.py" <<'PY'
import os
if float(os.environ["DLX_HP_LEARNING_RATE"]) < 0:
    import dlx
    trial = dlx.Trial()
    raise RuntimeError(f"learning rate {trial.hparam('learning_rate')} diverged")
os.execvp("dlx-example-logreg", ["dlx-example-logreg"])
PY
cat > "$WORK/$name.sh" <<'SH'
#!/bin/bash
srun --mpi=pmix dlx-launch
SH
chmod a+rx "$WORK/$name.sh"
chmod a+r "$WORK/$name.yaml" "$WORK/$name.py"

job=$(submit_trial "$name")
note "submitted $job: $(cat "$WORK/$name.sbatch.err")"
wait_for_job "$job" 300
dir=$(readlink "$(user_storage)/.jobs/$job")
as_user dlx status "$job" | tee "$WORK/$name.status"
expect_contains "dlx status" "$(cat "$WORK/$name.status")" "# 2 trials: "
as_user dlx status --json "$job" > "$WORK/$name.status.json"
/usr/bin/python3 - "$dir" "$WORK/$name.status.json" <<'PY'
import json, sys, h5py
directory, status = sys.argv[1], json.load(open(sys.argv[2]))
text = lambda v: v.decode() if isinstance(v, bytes) else v
states = {}
for trial in status["trials"]:
    lr = trial["hparams"]["learning_rate"]
    with h5py.File(f"{directory}/trials/{trial['id']}/trial.h5", "r") as f:
        attrs = {k: text(f.attrs[k]) for k in ("state", "stop_reason", "failures", "restarts")}
        attrs["last_error"] = text(f.attrs["last_error"]) if "last_error" in f.attrs else ""
        events = [{k: text(v) for k, v in f["restart_events"][k].attrs.items()}
                  for k in sorted(f["restart_events"], key=int)] if "restart_events" in f else []
    print(f"#   trial {trial['id']} lr {lr}: dlx status {trial['state']}, trial.h5 {attrs}, restarts {events}")
    states[lr] = (trial["state"], attrs, events)
state, attrs, events = states[-1.0]
assert state == "failed" and attrs["state"] == "failed", (state, attrs)
assert int(attrs["failures"]) == 2 and int(attrs["restarts"]) == 1, attrs
assert "past max_restarts 1" in attrs["stop_reason"], attrs["stop_reason"]
assert "exit 1: RuntimeError: learning rate -1.0 diverged" in attrs["stop_reason"], attrs["stop_reason"]
assert attrs["last_error"] == "exit 1: RuntimeError: learning rate -1.0 diverged", attrs
assert [e["cause"] for e in events] == ["crash"], events
assert "crash: exit 1: RuntimeError: learning rate -1.0 diverged" in events[0]["reason"], events
state, attrs, events = states[0.05]
assert state == "completed" and attrs["state"] == "completed", (state, attrs)
assert int(attrs["failures"]) == 0 and int(attrs["restarts"]) == 0 and not events, (attrs, events)
print("# h5py: crashing trial failed after 1 requeue; the other completed")
PY
grep -q "max_restarts" "$WORK/$name-${job}"_*.out || fail "no crash accounting in the job output"
note "max_restarts honoured: one requeue, then failed; the experiment went on"
