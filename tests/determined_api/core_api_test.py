# SPDX-License-Identifier: Apache-2.0
"""Determined's Core API on dlx (python/dlx/compat/determined), through a trainer written in its
tutorial's style (core_trainer.py) under the real dlx-launch (no Slurm: a requeue is dlx-launch
run again, as in tests/torch/torch_loop_test.py):
  - `import determined` in the trainer is dlx's layer (dlx-launch's PYTHONPATH), and
    get_cluster_info() gives the trial's hyperparameters and id;
  - an uninterrupted run to the searcher's max_length, and the same run with Slurm's notice
    (SIGUSR1) after step 17: it stores a checkpoint through store_path, exits 85, and run again
    resumes from get_cluster_info().latest_checkpoint through restore_path: the final model,
    optimizer and scheduler state and every metric row are identical to the uninterrupted run's;
  - the checkpoints are dlx checkpoints (step-<steps_completed>.h5) kept by the experiment's
    keep_latest;
  - store_path without steps_completed in its metadata fails the trial at once (exit 78) with
    the fix in the message.

    core_api_test.py DLX_LAUNCH SOURCE_DIR      (DLX_LIBRARY, PYTHONPATH=python/)
"""
import glob
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy
import torch

LAUNCH, SOURCE = sys.argv[1], sys.argv[2]
TRAINER = os.path.join(SOURCE, "tests", "determined_api", "core_trainer.py")
ROOT = tempfile.mkdtemp(prefix="dlx-determined-core-")


def experiment(name, extra=""):
    directory = os.path.join(ROOT, name)
    os.makedirs(os.path.join(directory, "trials"))
    with open(os.path.join(directory, "experiment.yaml"), "w") as f:
        f.write(f"name: {name}\nentrypoint: {json.dumps(['/usr/bin/python3', TRAINER])}\nseed: 3\n"
                "hyperparameters: {lr: 0.05}\n"
                "searcher: {name: single, metric: validation_loss, max_length: {batches: 40}}\n"
                f"checkpoint: {{keep_latest: 2}}\n{extra}")
    return directory


def launch(directory, expect, **extra):
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("DLX_", "CORE_", "SLURM_")) or name == "DLX_LIBRARY"}
    # Only dlx-launch's PYTHONPATH may make `import determined` work.
    env["PYTHONPATH"] = os.path.join(SOURCE, "python")
    env.update(DLX_EXPERIMENT_DIR=directory, DLX_TRIAL_ID="0", RANK="0", WORLD_SIZE="1", **extra)
    result = subprocess.run([LAUNCH], env=env, capture_output=True, text=True, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == expect, f"dlx-launch exited {result.returncode}, not {expect} ({extra}):\n{output}"
    return output


def result_of(output):
    lines = [line for line in output.splitlines() if line.startswith('{"trial"')]
    assert lines, f"no result line in:\n{output}"
    return json.loads(lines[-1])


def final_state(directory):
    """The files of the newest checkpoint, as the trainer stored them (bytes of state.pt)."""
    newest = max(glob.glob(f"{directory}/trials/0/checkpoints/step-*.h5"),
                 key=lambda p: int(p.rsplit("-", 1)[1][:-3]))
    with h5py.File(newest, "r") as f:
        names = []
        f.visit(names.append)
        data = [n for n in names if n.endswith("state.pt") and isinstance(f[n], h5py.Dataset)]
        assert data, f"no state.pt in {newest}: {names}"
        return newest, torch.load(io.BytesIO(numpy.asarray(f[data[0]]).tobytes()))


def metrics(directory, table):
    """The table's columns but its wall_time (when each row was reported)."""
    with h5py.File(f"{directory}/trials/0/trial.h5", "r") as f:
        group = f[f"metrics/{table}"]
        return {name: numpy.asarray(group[name]).tolist() for name in group if name != "wall_time"}


def same_state(a, b, where=""):
    if isinstance(a, torch.Tensor):
        assert torch.equal(a, b), f"{where} differs"
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), f"{where}: keys {a.keys()} != {b.keys()}"
        for key in a:
            same_state(a[key], b[key], f"{where}/{key}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{where}: lengths differ"
        for i, (x, y) in enumerate(zip(a, b)):
            same_state(x, y, f"{where}[{i}]")
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def main():
    print("uninterrupted run:")
    reference = experiment("reference")
    out = launch(reference, 0)
    done = result_of(out)
    assert done["version"].endswith("+dlx"), f"import determined was not dlx's layer: {done}"
    assert done["steps"] == 40 and done["trial"] == 0, done
    assert done["storage_id"].endswith("/trials/0/checkpoints/step-40.h5"), done
    kept = sorted(os.path.basename(p) for p in glob.glob(f"{reference}/trials/0/checkpoints/step-*.h5"))
    assert kept == ["step-30.h5", "step-40.h5"], f"keep_latest 2 kept {kept}"

    print("requeued after step 17 (SIGUSR1), then run again:")
    requeued = experiment("requeued")
    out = launch(requeued, 85, CORE_SIGNAL_AT="17")
    assert "core_trainer: preempted at step 17" in out, out
    out = launch(requeued, 0)
    assert "core_trainer: resumed at step 17" in out, out
    assert result_of(out)["steps"] == 40
    _, want = final_state(reference)
    _, got = final_state(requeued)
    same_state(want, got, "state.pt")
    for table in ("training", "validation"):
        assert metrics(reference, table) == metrics(requeued, table), f"the {table} metrics differ"
    print("  the final model, optimizer, scheduler and RNG state and every metric row are identical")

    print("store_path without steps_completed:")
    bad = experiment("bad-metadata")
    out = launch(bad, 78, CORE_BAD_METADATA="1")
    assert 'checkpoint metadata needs "steps_completed"' in out, out
    print("  exit 78 with the fix in the message")
    shutil.rmtree(ROOT)


if __name__ == "__main__":
    main()
