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
  - a run that dies after step 23, past its checkpoint of step 20, run again: restore_path of
    the resume point says "dlx: resuming from .../step-20.h5" and records the resume, so the
    dead run's metric rows 21-23 are replaced, not repeated (the rows equal the reference's);
  - the checkpoints are dlx checkpoints (step-<steps_completed>.h5) kept by the experiment's
    keep_latest;
  - two ranks (DDP over gloo, no dlx-launch: the processes as torchrun would start them), Slurm's
    notice on rank 1 only after step 13: should_preempt() agrees on both, rank 0 records that
    SIGUSR1 stopped the trial, and the requeued run
    ends bit-identical to an uninterrupted two-rank run; the same with sharded checkpoints
    (store_path(shard=True): each rank's own files in the one checkpoint);
  - the running trial's CPU and memory in `dlx status` (dlx-launch's system sampler) and its
    system log in trials/0/system/;
  - ASHA (async_halving, rungs at 10, 20 and 40 batches) over sequential tickets: operations()
    follows the searcher, a paused trial ends, a later ticket resumes it from its rung checkpoint
    (latest_checkpoint) and trains to the next rung;
  - PBT: a replacement member starts from its parent's checkpoint (latest_checkpoint names the
    parent's file; restore_path reads it);
  - a Core API method that does not exist ends the trial at once (exit 78) with the closest name;
  - store_path without steps_completed in its metadata fails the trial at once (exit 78) with
    the fix in the message.

    core_api_test.py DLX_LAUNCH SOURCE_DIR      (DLX_LIBRARY, PYTHONPATH=python/)
"""
import glob
import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import h5py
import numpy
import torch

from launching import Launcher, states_of

LAUNCH, SOURCE = sys.argv[1], sys.argv[2]
TRAINER = os.path.join(SOURCE, "tests", "determined_api", "core_trainer.py")
ROOT = tempfile.mkdtemp(prefix="dlx-determined-core-")
LAUNCHER = Launcher(LAUNCH, SOURCE, "CORE_")


SINGLE = "{name: single, metric: validation_loss, max_length: {batches: 40}}"


def experiment(name, searcher=SINGLE, hyperparameters="{lr: 0.05}", checkpoint="{keep_latest: 2}", more=""):
    directory = os.path.join(ROOT, name)
    os.makedirs(os.path.join(directory, "trials"))
    with open(os.path.join(directory, "experiment.yaml"), "w") as f:
        f.write(f"name: {name}\nentrypoint: {json.dumps(['/usr/bin/python3', TRAINER])}\nseed: 3\n"
                f"hyperparameters: {hyperparameters}\nsearcher: {searcher}\ncheckpoint: {checkpoint}\n{more}")
    return directory


def run_two_ranks(directory, expect, **extra):
    return LAUNCHER.two_ranks(directory, expect, **extra)


def launch(directory, expect, ticket=0, **extra):
    return LAUNCHER.one_rank(directory, expect, ticket, **extra)


def result_of(output):
    lines = [line for line in output.splitlines() if line.startswith('{"trial"')]
    assert lines, f"no result line in:\n{output}"
    return json.loads(lines[-1])


def final_state(directory, trial=0):
    """The files of the newest checkpoint, as the trainer stored them (bytes of state.pt)."""
    newest = max(glob.glob(f"{directory}/trials/{trial}/checkpoints/step-*.h5"),
                 key=lambda p: int(p.rsplit("-", 1)[1][:-3]))
    with h5py.File(newest, "r") as f:
        names = []
        f.visit(names.append)
        data = [n for n in names if n.endswith("state.pt") and isinstance(f[n], h5py.Dataset)]
        assert data, f"no state.pt in {newest}: {names}"
        return newest, torch.load(io.BytesIO(numpy.asarray(f[data[0]]).tobytes()))


def metrics(directory, table, trial=0):
    """The table's columns but its wall_time (when each row was reported)."""
    with h5py.File(f"{directory}/trials/{trial}/trial.h5", "r") as f:
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

    print("crashed after step 23 (its last checkpoint at 20), restarted as Slurm requeues it:")
    crashed = experiment("crashed")
    host = socket.gethostname()
    step = dict(SLURM_JOB_ID="4242", SLURM_PROCID="0", SLURM_LOCALID="0", SLURM_NODEID="0",
                SLURM_STEP_NUM_TASKS="1", SLURM_STEP_NUM_NODES="1", SLURM_STEP_TASKS_PER_NODE="1",
                SLURM_STEP_NODELIST=host, SLURMD_NODENAME=host)
    launch(crashed, 85, CORE_CRASH_AT="23", **step)  # a crash within max_restarts: requeued
    assert metrics(crashed, "training")["steps"][-1] == 23, "the crashed run's reports past step 20 were not kept"
    out = launch(crashed, 0, SLURM_RESTART_COUNT="1", **step)
    assert "core_trainer: resumed at step 20" in out, out
    assert re.search(r"dlx: resuming from \S*/trials/0/checkpoints/step-20\.h5 \(step 20, epoch 0\)", out), out
    for table in ("training", "validation"):  # the crashed run's rows 21-23 dropped, not repeated
        assert metrics(reference, table) == metrics(crashed, table), f"after the crash, the {table} metrics differ"
    with h5py.File(f"{crashed}/trials/0/trial.h5", "r") as f:
        restart = dict(f["restart_events/1"].attrs)
    assert (restart["cause"], restart["resumed_step"], restart["steps_lost"]) == ("crash", 20, 3), restart
    print("  restore_path of the resume point recorded the resume: the rows after step 20 replaced, not "
          "repeated; the restart resumed at 20 and lost 3 steps")

    two_ranks()
    system_metrics()
    asha()
    pbt()
    print("store_path without steps_completed:")
    bad = experiment("bad-metadata")
    out = launch(bad, 78, CORE_BAD_METADATA="1")
    assert 'checkpoint metadata needs "steps_completed"' in out, out
    print("  exit 78 with the fix in the message")
    print("a Core API method that does not exist (report_training_metric):")
    out = launch(experiment("typo"), 78, CORE_TYPO="1")
    assert "determined on dlx: TrainContext has no 'report_training_metric' (did you mean " \
           "'report_training_metrics'? docs/determined.md lists what runs)" in out, out
    print("  exit 78 at once, with the closest name")
    shutil.rmtree(ROOT)


def two_ranks():
    print("two ranks, Slurm's notice on rank 1 after step 13:")
    reference = experiment("ranks-reference")
    run_two_ranks(reference, 0)
    requeued = experiment("ranks-requeued")
    outputs = run_two_ranks(requeued, 85, CORE_SIGNAL_AT="13", CORE_SIGNAL_RANK="1")
    assert all("core_trainer: preempted at step 13" in out for out in outputs), outputs
    with h5py.File(os.path.join(requeued, "trials", "0", "trial.h5"), "r") as f:
        reason = f.attrs["stop_reason"]
    reason = reason.decode() if isinstance(reason, bytes) else reason
    # Rank 0 got no signal: it records the one that reached rank 1 (should_preempt agreed on it).
    assert reason == "requeue: checkpoint at step 13 after SIGUSR1", reason
    outputs = run_two_ranks(requeued, 0)
    assert all("core_trainer: resumed at step 13" in out for out in outputs), outputs
    same_state(final_state(reference)[1], final_state(requeued)[1], "state.pt")
    for table in ("training", "validation"):
        assert metrics(reference, table) == metrics(requeued, table), f"two ranks: the {table} metrics differ"
    print("  both ranks stopped at 13 and resumed there; the final state is identical")

    print("the same with sharded checkpoints (store_path(shard=True) on every rank):")
    reference = experiment("shards-reference")
    run_two_ranks(reference, 0, CORE_SHARD="1")
    requeued = experiment("shards-requeued")
    run_two_ranks(requeued, 85, CORE_SIGNAL_AT="13", CORE_SIGNAL_RANK="1", CORE_SHARD="1")
    outputs = run_two_ranks(requeued, 0, CORE_SHARD="1")
    assert all("core_trainer: resumed at step 13" in out for out in outputs), outputs
    same_state(final_state(reference)[1], final_state(requeued)[1], "state.pt")
    for table in ("training", "validation"):
        assert metrics(reference, table) == metrics(requeued, table), f"shards: the {table} metrics differ"
    def shard_files(directory):
        with h5py.File(final_state(directory)[0], "r") as f:
            names = []
            f.visit(names.append)
            return {n.rsplit("/", 1)[1]: numpy.asarray(f[n]).tobytes() for n in names
                    if n.rsplit("/", 1)[-1].startswith("rng-") and isinstance(f[n], h5py.Dataset)}

    shards = shard_files(requeued)
    assert sorted(shards) == ["rng-0.pt", "rng-1.pt"], sorted(shards)
    assert shards == shard_files(reference), "shards: the ranks' RNG files differ from the uninterrupted run's"
    print("  each rank's rng-<rank>.pt in the one checkpoint; resumed at 13 on both; identical")
    outputs = run_two_ranks(experiment("shards-clash"), 78, CORE_SHARD="clash")
    refusal = "determined: sharded checkpoint: ranks 0 and 1 both wrote 'state.pt'; give each rank's files their own names"
    assert all(refusal in out for out in outputs), outputs
    print("  two ranks writing one file name: both fail at once (exit 78), named")


def system_metrics():
    print("system metrics of a running trial (resources.sample_period 0.2 s), in dlx status:")
    directory = experiment("system", more="resources: {sample_period: 0.2}\n")
    env = LAUNCHER.environment(directory, 0)
    env.update(RANK="0", WORLD_SIZE="1", CORE_STEP_DELAY_S="0.1")
    trainer = subprocess.Popen([LAUNCH], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    dlx = os.path.join(os.path.dirname(LAUNCH), "dlx")
    seen = None
    try:
        for _ in range(100):
            out = subprocess.run([dlx, "status", "--json", directory], capture_output=True, text=True).stdout
            trials = json.loads(out)["trials"] if out.strip() else []
            system = trials[0].get("system") if trials else None
            if system and system.get("cpu_percent", 0) > 0:
                seen = system
                table = subprocess.run([dlx, "status", directory], capture_output=True, text=True).stdout
                break
            time.sleep(0.2)
    finally:
        output, _ = trainer.communicate(timeout=300)
    assert trainer.returncode == 0, output
    assert seen, "dlx status never showed the running trial's CPU and memory"
    # A Python trainer with torch imported holds tens of MB; one rank.
    assert seen["ranks"] == 1 and seen["memory_bytes"] > 30e6, seen
    header = [line for line in table.splitlines() if line.startswith("# trial ")]
    assert header and "cpu%" in header[0] and "mem" in header[0], table
    logs = glob.glob(os.path.join(directory, "trials", "0", "system", "*.rank-0.attempt-0.0.log"))
    assert len(logs) == 1 and os.path.getsize(logs[0]) > 100, logs
    print(f"  cpu {seen['cpu_percent']:.0f}%, memory {seen['memory_bytes'] / 2**20:.0f} MiB, "
          f"log {os.path.basename(logs[0])}")


def validation_steps(directory, trial):
    return [int(s) for s in metrics(directory, "validation", trial).get("steps", [])]


def asha():
    print("ASHA, rungs at 10, 20 and 40 batches, sequential tickets:")
    searcher = ("{name: async_halving, metric: validation_loss, max_trials: 4, max_length: {batches: 40}, "
                "divisor: 2, max_rungs: 3, max_concurrent_trials: 1}")
    directory = experiment("asha", searcher, "{lr: {type: double, minval: 0.01, maxval: 0.1}}", "{keep_latest: 5}")
    everything = LAUNCHER.tickets(directory, 12)
    states = states_of(directory)
    assert sorted(states) == [0, 1, 2, 3] and "completed" in states.values(), states
    promoted = [t for t in states if 20 in validation_steps(directory, t)]
    assert promoted, f"no trial promoted past rung 10: {states}"
    assert re.search(r"core_trainer: resumed at step (10|20)", everything), "no paused trial resumed"
    for trial in states:
        steps = validation_steps(directory, trial)
        assert steps == sorted(set(steps)) and set(steps) <= {10, 20, 40}, (trial, steps)
    print(f"  trials {dict(sorted(states.items()))}, promoted past rung 10: {promoted}")


def pbt():
    print("PBT, 2 members, rounds of 10 batches, sequential tickets:")
    searcher = ("{name: pbt, metric: validation_loss, population_size: 2, num_rounds: 2, "
                "length_per_round: {batches: 10}, replace_function: {truncate_fraction: 0.5}, "
                "explore_function: {resample_probability: 0.5, perturb_factor: 0.2}}")
    directory = experiment("pbt", searcher, "{lr: {type: double, minval: 0.01, maxval: 0.1}}", "{keep_latest: 5}")
    results = {}
    for ticket in range(4):
        out = launch(directory, 0, ticket, DLX_WORK_WAIT_S="30")
        if "has no work" in out:
            continue
        result = result_of(out)
        results[result["trial"]] = result
    assert sorted(results) == [0, 1, 2], results
    parents = {os.path.join(directory, "trials", str(t), "checkpoints", "step-10.h5") for t in (0, 1)}
    assert results[2]["started_from"] in parents, results[2]
    assert results[2]["steps"] == 20, results[2]
    print(f"  trial 2 started from {results[2]['started_from']}")


if __name__ == "__main__":
    main()
