# SPDX-License-Identifier: Apache-2.0
"""PBT end to end without Slurm: dlx-launch asks the journal for each ticket's work and runs the
logreg example trainer (an MPI singleton) on an experiment in a temporary directory.

Round 0 (trials 0 and 1, tickets 0 and 1) trains from scratch to 25 batches. Round 1 (tickets 2
and 3), with Determined's trial numbering: the better member goes on as the same trial from its
own checkpoint, the other is replaced by new trial 2, a copy of the better one: dlx-launch points
DLX_LATEST_CHECKPOINT into the parent trial's directory, and libdlx's resume() accepts that file
because it is the searcher's start checkpoint, recording started_from in trial.h5. Exploration is
off (perturb_factor 0, resample_probability 0), so trial 2 trains with its parent's
hyperparameters; resumed from the parent's exact bytes, both round-1 trials must end with the
same weights and metrics as one uninterrupted run of those hyperparameters to 50 batches (the
reference experiment below), and trial 2's first metrics come after step 25.

Also: retention with keep_latest 1 keeps a checkpoint the searcher still references (round 1's
start checkpoint) and says why in `dlx ckpt ls` and `dlx ckpt gc --dry-run`; with the journal
gone the same save deletes it (the control). `dlx replay` is clean.
Needs DLX_LIBRARY, DLX_LAUNCH, DLX_CLI, DLX_LOGREG and PYTHONPATH (python/)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy

HPARAMS = """  batch_size: 16
  epochs: 1
  samples: 400
  features: 8
  seed: 11
"""

PBT = """name: pbt-e2e
entrypoint: [unused]
seed: 3
hyperparameters:
  learning_rate: {type: double, minval: 0.05, maxval: 0.6}
""" + HPARAMS + """searcher:
  name: pbt
  metric: loss
  population_size: 2
  num_rounds: 2
  length_per_round: {batches: 25}
  replace_function: {truncate_fraction: 0.5}
  explore_function: {resample_probability: 0, perturb_factor: 0}
checkpoint: {keep_latest: 1, keep_best: 0}
"""

REFERENCE = """name: straight
entrypoint: [unused]
hyperparameters:
  learning_rate: {lr}
""" + HPARAMS + """searcher: {{name: single, metric: loss, max_length: {{batches: 50}}}}
checkpoint: {{keep_latest: 1, keep_best: 0}}
"""

# Saves checkpoints of trial 0 at steps 27 and 30 through the dlx package (retention after each).
SAVER = """
import numpy, dlx
with dlx.Trial() as trial:
    for step in (27, 30):
        trial.save_checkpoint(step, {"model/weights": numpy.zeros(8)}, metric=0.5)
        trial.wait_for_checkpoint()
"""


# Resumes through the dlx package and prints which checkpoint of which trial it got.
RESUMER = """
import dlx, h5py
with dlx.Trial() as trial:
    resumed = trial.resume()
    with h5py.File(resumed.path, "r") as f:
        print("resumed", resumed.path, "trial", int(f.attrs["trial_id"]))
"""


def run(command, env=None, check=True):
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if check:
        assert result.returncode == 0, (command, result.returncode, result.stdout, result.stderr)
    return result.stdout + result.stderr


def trial_env(directory, ticket):
    env = dict(os.environ, DLX_EXPERIMENT_DIR=directory, DLX_TRIAL_ID=str(ticket), RANK="0",
               WORLD_SIZE="1")
    for name in ("SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_PROCID", "DLX_LATEST_CHECKPOINT",
                 "DLX_CHECKPOINT_DIR", "DLX_HPARAMS"):
        env.pop(name, None)
    return env


def run_ticket(directory, ticket):
    return run([os.environ["DLX_LAUNCH"], "--", os.environ["DLX_LOGREG"]], trial_env(directory, ticket))


def attr(f, name):
    value = f.attrs[name]
    return value.decode() if isinstance(value, bytes) else value


def record(directory, trial):
    with h5py.File(os.path.join(directory, "trials", str(trial), "trial.h5"), "r") as f:
        out = {name: attr(f, name) for name in f.attrs}
        out["training_steps"] = list(f["metrics/training/steps"][:])
        out["training_loss"] = list(f["metrics/training/loss"][:])
        out["validation_steps"] = list(f["metrics/validation/steps"][:])
        out["validation_loss"] = list(f["metrics/validation/loss"][:])
    out["hparams"] = json.loads(out["hparams_json"])
    return out


def weights(directory, trial, step):
    path = os.path.join(directory, "trials", str(trial), "checkpoints", f"step-{step}.h5")
    with h5py.File(path, "r") as f:
        return f["tensors/model/weights"][()], f["tensors/model/bias"][()]


def steps_on_disk(directory, trial):
    folder = os.path.join(directory, "trials", str(trial), "checkpoints")
    return sorted(int(n[5:-3]) for n in os.listdir(folder) if n.startswith("step-") and n.endswith(".h5"))


with tempfile.TemporaryDirectory() as root:
    experiment = os.path.join(root, "pbt")
    os.makedirs(experiment)
    with open(os.path.join(experiment, "experiment.yaml"), "w") as f:
        f.write(PBT)

    # Round 0: both members from scratch to 25 batches; each keeps its step-25 checkpoint.
    for ticket in (0, 1):
        run_ticket(experiment, ticket)
        assert steps_on_disk(experiment, ticket) == [25], steps_on_disk(experiment, ticket)
        assert "started_from" not in record(experiment, ticket)

    # The last report of round 0 planned round 1: the better member's step 25 is where both
    # round-1 trials start (the member itself goes on, new trial 2 copies it).
    losses = {t: record(experiment, t)["validation_loss"][-1] for t in (0, 1)}
    best = min(losses, key=lambda t: (losses[t], t))

    # Retention keeps what the searcher references, and says why (on copies of the experiment):
    # the best trial saves steps 27 and 30 with keep_latest 1.
    # Ticket 2 (member 0) names the reason: trial 0 going on, or new trial 2 replacing member 0.
    why = f"referenced by searcher: PBT round 1: trial {0 if best == 0 else 2} starts from it"
    referenced = os.path.join(root, "referenced")
    shutil.copytree(experiment, referenced)
    run([sys.executable, "-c", SAVER], dict(trial_env(referenced, best),
        DLX_CHECKPOINT_DIR=os.path.join(referenced, "trials", str(best), "checkpoints")))
    # Step 27 was deleted when step 30 was saved, step 25 was not: round 1 starts from it.
    assert steps_on_disk(referenced, best) == [25, 30], steps_on_disk(referenced, best)
    listing = run([os.environ["DLX_CLI"], "ckpt", "ls", referenced])
    assert why in listing, listing
    dry = run([os.environ["DLX_CLI"], "ckpt", "gc", referenced, "--dry-run"])
    kept = os.path.join(referenced, "trials", str(best), "checkpoints", "step-25.h5")
    assert f"would keep {kept}  (kept by {why})" in dry, dry
    # A damaged journal: gc refuses to guess what is referenced; ls lists and warns.
    damaged = os.path.join(root, "damaged")
    shutil.copytree(experiment, damaged)
    with open(os.path.join(damaged, "journal"), "r+b") as f:
        f.seek(40)  # inside the first record's payload: valid records follow it
        byte = f.read(1)
        f.seek(40)
        f.write(bytes([byte[0] ^ 0x20]))
    gc = subprocess.run([os.environ["DLX_CLI"], "ckpt", "gc", damaged, "--dry-run"],
                        capture_output=True, text=True)
    assert gc.returncode != 0, gc.stdout
    assert "the searcher's checkpoint references cannot be read, so retention is not applied" in gc.stderr, gc.stderr
    ls = subprocess.run([os.environ["DLX_CLI"], "ckpt", "ls", damaged], capture_output=True, text=True)
    assert ls.returncode == 0 and "step" in ls.stdout, (ls.stdout, ls.stderr)
    assert "checkpoints the searcher references are not marked" in ls.stderr, ls.stderr

    # The control: without the journal nothing is referenced and the same saves delete step 25.
    control = os.path.join(root, "control")
    shutil.copytree(experiment, control)
    os.remove(os.path.join(control, "journal"))
    run([sys.executable, "-c", SAVER], dict(trial_env(control, best),
        DLX_CHECKPOINT_DIR=os.path.join(control, "trials", str(best), "checkpoints")))
    assert steps_on_disk(control, best) == [30], steps_on_disk(control, best)

    # A checkpoint of another trial that the searcher did not name is refused: trial `other`
    # (round 0, started from scratch) resumes its own step 25 instead, and the log says why.
    other = 1 - best
    foreign = os.path.join(root, "foreign")
    shutil.copytree(experiment, foreign)
    stranger = os.path.join(foreign, "trials", str(best), "checkpoints", "step-25.h5")
    out = run([sys.executable, "-c", RESUMER], dict(trial_env(foreign, other),
              DLX_CHECKPOINT_DIR=os.path.join(foreign, "trials", str(other), "checkpoints"),
              DLX_LATEST_CHECKPOINT=stranger))
    own = os.path.join(foreign, "trials", str(other), "checkpoints", "step-25.h5")
    assert f"resumed {own} trial {other}" in out, out
    assert (f"DLX_LATEST_CHECKPOINT={stranger} cannot be used: it is not in this trial's checkpoint "
            f"directory") in out and f"searcher named for trial {other}'s start (none)" in out, out

    # Round 1: ticket 2 + best goes on with trial `best` (its own step 25), ticket 2 + other runs
    # new trial 2 from the best's step 25.
    parent_file = os.path.join(experiment, "trials", str(best), "checkpoints", "step-25.h5")
    for ticket in (2, 3):
        out = run_ticket(experiment, ticket)
        if ticket - 2 == best:
            rec = record(experiment, best)
            assert "started_from" not in rec, rec  # its own checkpoint: a resume, not a start
            assert rec["validation_steps"][-2:] == [40, 50], rec["validation_steps"]
            # Step 25 stays while trial 2 (not run yet when best is member 0) may still start from it.
            assert steps_on_disk(experiment, best) in ([50], [25, 50]), steps_on_disk(experiment, best)
            continue
        rec = record(experiment, 2)
        assert int(rec["started_from_trial"]) == best, rec
        assert rec["started_from"] == f"trial {best} step 25", rec["started_from"]
        assert rec["started_from_path"] == parent_file, rec["started_from_path"]
        assert f"dlx: starting from {parent_file} (step 25" in out, out
        # With exploration off, the trial trains with its parent's hyperparameters.
        assert rec["hparams"] == record(experiment, best)["hparams"], (rec["hparams"], best)
        # Its first metrics are after the parent's step: nothing of steps 1..25 is redone.
        assert rec["training_steps"] == [40], rec["training_steps"]
        assert rec["validation_steps"] == [40, 50], rec["validation_steps"]
        assert steps_on_disk(experiment, 2) == [50]

    # The same hyperparameters trained straight to 50 batches: the same bytes and metrics.
    straight = os.path.join(root, "straight")
    os.makedirs(straight)
    lr = record(experiment, best)["hparams"]["learning_rate"]
    with open(os.path.join(straight, "experiment.yaml"), "w") as f:
        f.write(REFERENCE.format(lr=repr(lr)))
    run_ticket(straight, 0)
    reference = record(straight, 0)
    assert reference["hparams"]["learning_rate"] == lr
    assert reference["training_steps"] == [20, 40], reference["training_steps"]
    expected_w, expected_b = weights(straight, 0, 50)
    for trial in (best, 2):
        rec = record(experiment, trial)
        assert rec["training_loss"][-1:] == reference["training_loss"][1:], (rec["training_loss"], reference)
        assert rec["validation_loss"][-2:] == reference["validation_loss"][-2:], (rec, reference)
        w, b = weights(experiment, trial, 50)
        assert numpy.array_equal(w, expected_w) and b == expected_b, (trial, w, expected_w)

    replay = subprocess.run([os.environ["DLX_CLI"], "replay", experiment], capture_output=True, text=True)
    assert replay.returncode == 0, (replay.stdout, replay.stderr)
    assert "mismatch" not in replay.stdout + replay.stderr, replay.stdout
print("pbt checkpoint: ok")
