# SPDX-License-Identifier: Apache-2.0
"""What task_tickets_test.py and task_slots_test.py share: an array task's dlx-launch run without
Slurm (a requeue is the same run again), and what it leaves in the experiment directory.
DLX_LAUNCH and DLX_LIBRARY come from CMake."""
import glob
import json
import os
import subprocess
import time

import h5py


def launch(directory, task, expect, extra=None):
    """Runs dlx-launch as array task `task` (rank 0 of 1) of the experiment in `directory`, with
    `extra` variables; asserts its exit status. Returns its output and the seconds it took."""
    env = {name: value for name, value in os.environ.items() if not name.startswith(("SLURM_", "DLX_", "CUDA_"))}
    env.update(DLX_LIBRARY=os.environ["DLX_LIBRARY"], DLX_EXPERIMENT_DIR=directory, DLX_TICKET=str(task),
               DLX_TRIAL_ID=str(task), RANK="0", WORLD_SIZE="1", PATH="/usr/bin:" + env.get("PATH", ""))
    env.update(extra or {})
    started = time.time()
    result = subprocess.run([os.environ["DLX_LAUNCH"]], env=env, capture_output=True, text=True, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == expect, f"task {task}: dlx-launch exited {result.returncode}, not {expect}:\n{output}"
    return output, time.time() - started


def runs(directory):
    """The lines the trainer appended to runs.txt, one JSON object each."""
    with open(os.path.join(directory, "runs.txt")) as f:
        return [json.loads(line) for line in f]


def states(directory):
    """Each trial's state in its trial.h5, by trial id."""
    out = {}
    for path in glob.glob(os.path.join(directory, "trials", "*", "trial.h5")):
        with h5py.File(path, "r") as f:
            state = f.attrs["state"]
            out[int(path.split("/")[-2])] = state.decode() if isinstance(state, bytes) else state
    return out


def progress(directory, task):
    """tasks/<task>.json."""
    with open(os.path.join(directory, "tasks", f"{task}.json")) as f:
        return json.load(f)
