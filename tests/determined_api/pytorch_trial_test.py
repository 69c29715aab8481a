# SPDX-License-Identifier: Apache-2.0
"""Determined's PyTorchTrial on dlx (python/dlx/compat/determined/pytorch): model_def.py's
RegressionTrial, named as Determined names it (`entrypoint: model_def:RegressionTrial`, which dlx
runs as `python3 -m determined.exec.harness model_def:RegressionTrial`), under the real
dlx-launch (no Slurm: a requeue is dlx-launch run again):
  - an uninterrupted run to max_length {batches: 40} (16 batches an epoch: the target inside
    epoch 3), validated at every epoch's end and at the target;
  - the same run with Slurm's notice during batch 21: it saves between two batches, exits 85, and
    run again resumes there (models, optimizer, StepLR, every RNG and the shuffling DataLoader's
    position): the final checkpoint's tensors and every metric row are identical;
  - the Trainer API (trainer_script.py: det.pytorch.init, Trainer.fit(max_length=Epoch(2))) with
    no searcher length: two epochs, validated at each end, completed;
  - a PyTorchTrial that is not one (a name that is no subclass) fails at once with exit 78.

    pytorch_trial_test.py DLX_LAUNCH SOURCE_DIR      (DLX_LIBRARY)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy

LAUNCH, SOURCE = sys.argv[1], sys.argv[2]
HERE = os.path.join(SOURCE, "tests", "determined_api")
COMPARE = os.path.join(SOURCE, "tests", "tools", "compare_checkpoints.py")
ROOT = tempfile.mkdtemp(prefix="dlx-determined-pytorch-")


def experiment(name, entrypoint="model_def:RegressionTrial",
               searcher="{name: single, metric: validation_loss, max_length: {batches: 40}}"):
    directory = os.path.join(ROOT, name)
    os.makedirs(os.path.join(directory, "trials"))
    with open(os.path.join(directory, "experiment.yaml"), "w") as f:
        f.write(f"name: {name}\nentrypoint: {entrypoint}\nseed: 3\n"
                "hyperparameters: {lr: 0.05, global_batch_size: 16}\n"
                f"searcher: {searcher}\n"
                "checkpoint: {keep_latest: 2}\n")
    return directory


def launch(directory, expect, **extra):
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("DLX_", "TRIAL_", "SLURM_")) or name == "DLX_LIBRARY"}
    env["PYTHONPATH"] = os.path.join(SOURCE, "python")
    env["PATH"] = "/usr/bin:" + env.get("PATH", "")  # Debian's python3, with torch
    env.update(DLX_EXPERIMENT_DIR=directory, DLX_TRIAL_ID="0", RANK="0", WORLD_SIZE="1", **extra)
    result = subprocess.run([LAUNCH], env=env, cwd=HERE, capture_output=True, text=True, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == expect, f"dlx-launch exited {result.returncode}, not {expect} ({extra}):\n{output}"
    return output


def metrics(directory, table):
    with h5py.File(f"{directory}/trials/0/trial.h5", "r") as f:
        group = f[f"metrics/{table}"]
        return {name: numpy.asarray(group[name]).tolist() for name in group if name != "wall_time"}


def main():
    print("uninterrupted run (max_length 40 batches, 16 an epoch):")
    reference = experiment("reference")
    launch(reference, 0)
    steps = metrics(reference, "validation")["steps"]
    assert steps == [16, 32, 40], f"validation at {steps}, not at each epoch's end and the target"
    with h5py.File(f"{reference}/trials/0/trial.h5", "r") as f:
        state = f.attrs["state"]
        assert (state.decode() if isinstance(state, bytes) else state) == "completed", state

    print("Slurm's notice during batch 21, then run again:")
    requeued = experiment("requeued")
    launch(requeued, 85, TRIAL_SIGNAL_AT="21")
    launch(requeued, 0)
    check = subprocess.run([sys.executable, COMPARE, os.path.join(reference, "trials", "0"),
                            os.path.join(requeued, "trials", "0"), "--tensor", "model_0/0.weight",
                            "--tensor", "rng/rank-0/torch"], capture_output=True, text=True)
    assert check.returncode == 0, f"not identical to the uninterrupted run:\n{check.stdout}{check.stderr}"
    for table in ("training", "validation"):
        assert metrics(reference, table) == metrics(requeued, table), f"the {table} metrics differ"
    print(f"  {check.stdout.strip()}")

    print("the Trainer API, max_length Epoch(2), no searcher length:")
    script = experiment("trainer", "python3 trainer_script.py --epochs 2",
                        "{name: single, metric: validation_loss}")
    launch(script, 0)
    steps = metrics(script, "validation")["steps"]
    assert steps == [16, 32], f"validation at {steps}, not at the two epochs' ends"
    with h5py.File(f"{script}/trials/0/trial.h5", "r") as f:
        state = f.attrs["state"]
        assert (state.decode() if isinstance(state, bytes) else state) == "completed", state
    print("  two epochs, validated at 16 and 32, completed")

    print("a class that is no PyTorchTrial:")
    out = launch(experiment("not-a-trial", "model_def:synthetic"), 78)
    assert "model_def:synthetic is not a det.pytorch.PyTorchTrial subclass" in out, out
    print("  exit 78, named")
    shutil.rmtree(ROOT)


if __name__ == "__main__":
    main()
