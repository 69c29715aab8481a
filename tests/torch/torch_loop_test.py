# SPDX-License-Identifier: Apache-2.0
"""dlx.torch.Loop with real DataLoaders (2 worker processes, shuffling), dropout, Adadelta and a
StepLR per epoch (tests/torch/loop_trainer.py), requeued at chosen points by a checkpoint signal
(SIGUSR1, as Slurm's notice) and resumed: the final checkpoint (model, optimizer, scheduler, every
rank's RNG and DataLoader generator states) and the metric tables are byte-identical to the
uninterrupted run's (tests/tools/compare_checkpoints.py).

  one rank:   requeued mid-epoch, on an epoch's last batch (before its end: validation and
              scheduler.step() still to run), during the end-of-epoch validation, on the last
              batch of the training (the final checkpoint follows the last end); and with
              SIGTERM to the trainer and its DataLoader workers at once, as Slurm signals a step
  two ranks:  DDP over gloo with a DistributedSampler, rank 1 signalled mid-epoch, then both at an
              epoch's end
  under dlx-launch with the searcher (no Slurm; a requeue is dlx-launch run again):
              max_length in records (the target inside a batch: the checkpoint and report carry
              the target), in epochs (a checkpoint at every epoch's end, a mid-epoch requeue trains
              that epoch again), checkpoint.period in batches, ASHA paused at mid-epoch rungs
              and promoted from them, PBT exploiting a parent's mid-epoch checkpoint (the copy
              ends as its parent when the explored hyperparameter is not used); and
              examples/pytorch/mnist.py with a misspelt hyperparameter
              in the experiment, named in the first trial's log both ways.
  unseeded:   a script that never seeds torch, requeued: the resumed run warns once, naming the
              checkpoint and both initial seeds (the seeded runs above never do).
  transforms: samples given random transforms in the workers (torch, random, numpy), requeued
              mid-epoch, during validation, by SIGTERM to the workers, and with
              persistent_workers (whose run equals the one without)

    torch_loop_test.py DLX_LAUNCH SOURCE_DIR [SECTION...]      (DLX_LIBRARY, PYTHONPATH=python/)

SECTION: run only these (unseeded, ranks, transforms, searcher, pbt, typo); the first three run
the trainer directly, so DLX_LAUNCH may be "-" for them (scripts/torch2-check.sh runs them in an
image of another PyTorch).
"""
import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

import h5py

LAUNCH, SOURCE = sys.argv[1], sys.argv[2]
TRAINER = os.path.join(SOURCE, "tests", "torch", "loop_trainer.py")
COMPARE = os.path.join(SOURCE, "tests", "tools", "compare_checkpoints.py")
ROOT = tempfile.mkdtemp(prefix="dlx-torch-loop-")
RUNS = iter(range(1000))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def trial_env(directory, **extra):
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("DLX_", "LOOP_", "SLURM_")) or name == "DLX_LIBRARY"}
    env.update(DLX_EXPERIMENT_DIR=directory, DLX_TRIAL_ID="0", DLX_HPARAMS="{}",
               DLX_CHECKPOINT_DIR=os.path.join(directory, "trials", "0", "checkpoints"),
               DLX_LATEST_CHECKPOINT="", DLX_RUN_ID=f"run-{next(RUNS)}", DLX_RESUME_WAIT_S="60",
               **extra)
    return env


def result_of(output):
    lines = [line for line in output.splitlines() if line.startswith('{"rank"')]
    assert lines, f"no result line in:\n{output}"
    return json.loads(lines[-1])


def run_ranks(directory, ranks, expect, **extra):
    """One run of the trainer on `ranks` ranks (no dlx-launch); their outputs."""
    env = trial_env(directory, WORLD_SIZE=str(ranks), MASTER_ADDR="127.0.0.1",
                    MASTER_PORT=str(free_port()), **extra)
    processes = [subprocess.Popen([sys.executable, TRAINER], env=dict(env, RANK=str(r),
                                                                      LOCAL_RANK=str(r)),
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                 for r in range(ranks)]
    outputs = []
    for rank, process in enumerate(processes):
        try:
            out, _ = process.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            process.kill()
            out = process.communicate()[0] + "\n(timed out)"
        assert process.returncode == expect, \
            f"rank {rank} exited {process.returncode}, not {expect} ({extra}):\n{out}"
        outputs.append(out)
    return outputs


def identical(reference, directory, name):
    check = subprocess.run([sys.executable, COMPARE, os.path.join(reference, "trials", "0"),
                            os.path.join(directory, "trials", "0"),
                            "--tensor", "model/fc1.weight", "--tensor", "rng/rank-0/torch",
                            "--tensor", "rng/rank-0/loader/generator"],
                           capture_output=True, text=True)
    assert check.returncode == 0, f"{name}: not identical to the uninterrupted run:\n" \
                                  f"{check.stdout}{check.stderr}"
    print(f"  {name}: {check.stdout.strip()}")


def fresh(name):
    directory = os.path.join(ROOT, name)
    os.makedirs(directory)
    return directory


def requeued(ranks, reference, name, signals, **extra):
    """A run interrupted at each of `signals` in turn ("E:B", "E:validate"; rank with "@R"),
    then run to the end; checked identical to `reference`."""
    directory = fresh(name)
    for point in signals:
        at, _, rank = point.partition("@")
        outputs = run_ranks(directory, ranks, 85, LOOP_SIGNAL_AT=at, LOOP_SIGNAL_RANK=rank or "0",
                            **extra)
        sent = f"SIG{'TERM' if extra.get('LOOP_SIGNAL_TREE') else 'USR1'}"
        assert f"{sent} at {at}" in "".join(outputs), outputs
        # Rank 0 records the signal that stopped the trial, also when only another rank got it.
        with h5py.File(f"{directory}/trials/0/trial.h5", "r") as f:
            reason = f.attrs["stop_reason"]
        reason = reason.decode() if isinstance(reason, bytes) else reason
        assert reason.startswith("requeue: checkpoint at step ") and reason.endswith(f"after {sent}"), \
            f"{name} at {point}: stop_reason {reason!r}, not a requeue after {sent}"
    final = run_ranks(directory, ranks, 0, **extra)
    identical(reference, directory, name)
    assert not any(UNSEEDED in out for out in final), final  # every generator is seeded
    return directory, final


UNSEEDED = "dlx.torch.Loop: warning: torch's global generator was not seeded as in the run that saved"


def unseeded_script_warned():
    """A script that never calls torch.manual_seed draws other numbers in every run: the resumed
    run says so once, naming the checkpoint and both initial seeds."""
    print("a script that does not seed torch, requeued mid-epoch:")
    directory = fresh("unseeded")
    run_ranks(directory, 1, 85, LOOP_SIGNAL_AT="2:5", LOOP_UNSEEDED="1")
    final = run_ranks(directory, 1, 0, LOOP_UNSEEDED="1")[0]
    said = [line for line in final.splitlines() if UNSEEDED in line]
    assert len(said) == 1, final
    assert re.search(r"saved step-18\.h5 \(its initial seed was \d+, this run's is \d+\)", said[0]), said
    assert "call torch.manual_seed(...)" in said[0], said
    print(f"  {said[0][:150]}...")


def single_and_two_ranks():
    print("one rank, 200 samples in batches of 16 (13 a epoch, the last of 8), 3 epochs:")
    reference = fresh("one-reference")
    want = result_of(run_ranks(reference, 1, 0)[0])
    assert (want["step"], want["epoch"], want["records"]) == (39, 3, 600), want
    directory, final = requeued(1, reference, "one-mid-epoch", ["2:5"])
    assert result_of(final[0])["digest"] == want["digest"]
    said = ("dlx.torch.Loop: resuming inside epoch 2, after its batch 5 of 13: a count of the "
            "script's own (enumerate(loop), i += 1) starts from 0 here, where the uninterrupted run "
            "was at 5; where such a count decides what runs")
    assert final[0].count(said) == 1, final[0]
    steps = sorted(int(re.search(r"step-(\d+)", f).group(1))
                   for f in glob.glob(directory + "/trials/0/checkpoints/step-*.h5"))
    assert steps == [18, 39], steps  # the requeue's checkpoint (epoch 2, batch 5) and the end
    requeued(1, reference, "one-last-batch-then-validation", ["1:13", "2:validate", "3:4"])
    # The last batch of the whole training: the final checkpoint is saved again after the last
    # epoch's end (scheduler.step() included), not left as the requeue's, taken before it.
    requeued(1, reference, "one-last-batch-of-training", ["3:13"])
    # As Slurm signals a step: SIGTERM to the trainer and to its DataLoader workers, the training
    # loader's mid-epoch, then the test loader's during validation. The workers must survive it.
    requeued(1, reference, "one-sigterm-to-the-workers-too", ["2:5", "2:validate"],
             LOOP_SIGNAL_TREE="1")

    print("two ranks, DDP over gloo, DistributedSampler (7 batches a epoch on each rank):")
    reference = fresh("two-reference")
    want = [result_of(out) for out in run_ranks(reference, 2, 0)]
    assert [w["records"] for w in want] == [600, 600], want
    _, final = requeued(2, reference, "two-rank-1-mid-epoch-then-end",
                        ["2:3@1", "2:validate@0"])
    assert [result_of(out)["digest"] for out in final] == [w["digest"] for w in want]


def random_transforms_in_workers():
    """Samples drawn through the worker's own generators (torch.rand, random, numpy, as
    torchvision's random transforms do): a resumed epoch's workers never loaded the skipped
    samples, yet each later sample draws what it drew in the uninterrupted run; with
    persistent_workers too, whose first iterator is made in the resumed epoch."""
    print("random transforms in the DataLoader's workers:")
    augment = dict(LOOP_AUGMENT="1")
    reference = fresh("augment-reference")
    want = result_of(run_ranks(reference, 1, 0, **augment)[0])
    requeued(1, reference, "augment-mid-epoch-and-validation", ["2:5", "2:validate"], **augment)
    requeued(1, reference, "augment-sigterm-to-the-workers-too", ["1:7"], LOOP_SIGNAL_TREE="1",
             **augment)
    persistent = dict(augment, LOOP_PERSISTENT="1")
    # The same samples in the same order whether the workers are kept or not: each sample's place
    # and seed come from the epoch's start state, not from the workers' seed.
    kept = fresh("augment-persistent-reference")
    assert result_of(run_ranks(kept, 1, 0, **persistent)[0])["digest"] == want["digest"]
    requeued(1, reference, "augment-persistent-workers-mid-epoch", ["2:5", "3:2"], **persistent)
    print("  persistent_workers=True: the digest of the run without it")


# ---- under dlx-launch, with the searcher


def experiment(name, searcher, extra="", hyperparameters="{}", entrypoint=None):
    directory = fresh(name)
    with open(os.path.join(directory, "experiment.yaml"), "w") as f:
        f.write(f"name: {name}\n"
                f"entrypoint: {entrypoint or json.dumps(['/usr/bin/python3', TRAINER])}\n"
                f"seed: 4\nhyperparameters: {hyperparameters}\nsearcher: {searcher}\n{extra}")
    return directory


def launch(directory, ticket, expect=0, **extra):
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("DLX_", "LOOP_", "SLURM_")) or name == "DLX_LIBRARY"}
    env.update(DLX_EXPERIMENT_DIR=directory, DLX_TRIAL_ID=str(ticket), RANK="0", WORLD_SIZE="1",
               **extra)
    result = subprocess.run([LAUNCH], env=env, capture_output=True, text=True, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == expect, f"ticket {ticket} exited {result.returncode}, not " \
                                        f"{expect} ({extra}):\n{output}"
    return output


def checkpoint_steps(directory, trial=0):
    return sorted(int(re.search(r"step-(\d+)", f).group(1)) for f in
                  glob.glob(f"{directory}/trials/{trial}/checkpoints/step-*.h5"))


def validation_steps(directory, trial=0):
    with h5py.File(f"{directory}/trials/{trial}/trial.h5", "r") as f:
        return [int(s) for s in f["metrics/validation/steps"][:]]


def searcher_lengths():
    print("max_length in records (450: inside batch 30; epochs of 200 records, the 13th batch of "
          "8), requeued in epoch 2:")
    single = ("{name: single, metric: accuracy, smaller_is_better: false, "
              "max_length: {records: 450}}")
    reference = experiment("records-reference", single)
    want = result_of(launch(reference, 0, LOOP_EPOCHS="99"))
    assert (want["step"], want["records"], want["batches"]) == (450, 464, 30), want
    assert checkpoint_steps(reference)[-1] == 450 and validation_steps(reference) == [200, 400, 450]
    directory = experiment("records-requeued", single)
    out = launch(directory, 0, 85, LOOP_SIGNAL_AT="2:4")
    assert "resumes at step 264" in out, out  # epoch 1's 200 records + 4 batches of 16
    launch(directory, 0)
    identical(reference, directory, "records")

    print("max_length in epochs (3), requeued mid-epoch 2: epoch 2 is trained again:")
    single = "{name: single, metric: accuracy, smaller_is_better: false, max_length: {epochs: 3}}"
    reference = experiment("epochs-reference", single, "checkpoint: {keep_latest: 5}")
    want = result_of(launch(reference, 0))
    assert (want["step"], want["epoch"]) == (3, 3), want
    assert checkpoint_steps(reference) == [0, 1, 2, 3], checkpoint_steps(reference)
    directory = experiment("epochs-requeued", single, "checkpoint: {keep_latest: 5}")
    out = launch(directory, 0, 85, LOOP_SIGNAL_AT="2:6")
    assert "resumes at the end of epoch 1: this epoch is trained again" in out, out
    assert checkpoint_steps(directory) == [0, 1], checkpoint_steps(directory)
    launch(directory, 0)
    identical(reference, directory, "epochs")

    print("checkpoint.period {batches: 5}, batches unit, no searcher length (3 epochs of 13):")
    directory = experiment("period", "{name: single, metric: accuracy}",
                           "checkpoint: {period: {batches: 5}, keep_latest: 20}")
    launch(directory, 0)
    # Due at 5, 10, 15, ...; 26 and 39 end epochs; 13 is no multiple of 5, the final 39 is saved.
    steps = checkpoint_steps(directory)
    assert steps == [5, 10, 15, 20, 25, 30, 35, 39], steps

    print("ASHA in records, rungs at 150, 300 and 600 records (mid-epoch), sequential tickets:")
    asha = ("{name: async_halving, metric: accuracy, smaller_is_better: false, max_trials: 4, "
            "max_length: {records: 600}, divisor: 2, max_rungs: 3, max_concurrent_trials: 1}")
    directory = experiment("asha", asha,
                           hyperparameters="{lr: {type: double, minval: 0.1, maxval: 2}}")
    outputs = []
    for ticket in range(12):
        out = launch(directory, ticket, LOOP_EPOCHS="99")
        outputs.append(out)
        if "has no work" in out and ticket >= 4:
            break
    everything = "\n".join(outputs)
    assert "Traceback" not in everything, everything
    states = {}
    for record in glob.glob(directory + "/trials/*/trial.h5"):
        with h5py.File(record, "r") as f:
            state = f.attrs["state"]
            state = state.decode() if isinstance(state, bytes) else state
            states[int(record.split("/")[-2])] = state
    assert sorted(states) == [0, 1, 2, 3] and "completed" in states.values(), states
    promoted = [t for t in states if 300 in validation_steps(directory, t)]
    assert promoted, f"no trial promoted past 150 records: {states}"
    assert re.search(r"resuming from .*/checkpoints/step-150\.h5", everything), \
        "no paused trial resumed from its rung checkpoint"
    for trial in states:
        steps = validation_steps(directory, trial)
        assert steps == sorted(set(steps)), (trial, steps)  # each row once
        assert set(steps) <= {150, 200, 300, 400, 600}, (trial, steps)
    print(f"  trials {dict(sorted(states.items()))}, promoted past rung 0: {promoted}")


def pbt_exploit_mid_epoch():
    print("PBT, 2 members, rounds of 150 records (mid-epoch), sequential tickets:")
    pbt = ("{name: pbt, metric: accuracy, smaller_is_better: false, population_size: 2, "
           "num_rounds: 2, length_per_round: {records: 150}, "
           "replace_function: {truncate_fraction: 0.5}, "
           "explore_function: {resample_probability: 0.5, perturb_factor: 0.2}}")
    directory = experiment("pbt", pbt,
                           hyperparameters="{lr: {type: double, minval: 0.1, maxval: 2}}")
    results = {}
    for ticket in range(4):
        out = launch(directory, ticket, LOOP_EPOCHS="99", DLX_WORK_WAIT_S="30")
        result = result_of(out)
        trial = int(re.search(r"dlx-launch: ticket \d+: trial (\d+)", out).group(1))
        results[trial] = result
    # Round 1: member 0 continues its own step-150.h5; trial 2 replaces member 1, starting from
    # member 0's checkpoint (taken inside an epoch) and its DataLoader position. The trainer does
    # not read lr (the experiment's only hyperparameter), so the copy trains exactly as the
    # original: the same final bytes.
    assert sorted(results) == [0, 1, 2], results
    parent = os.path.join(directory, "trials", "0", "checkpoints", "step-150.h5")
    assert results[2]["started_from"] == parent, results[2]
    assert results[0]["started_from"] is None, results[0]
    assert results[2]["step"] == results[0]["step"] == 300, results
    assert results[2]["digest"] == results[0]["digest"], results
    print(f"  trial 2 started from {parent} and ended as trial 0 did")


def typo_named_on_the_first_trial():
    print("examples/pytorch/mnist.py, batch_sise in the experiment:")
    mnist = os.path.join(SOURCE, "examples", "pytorch", "mnist.py")
    entrypoint = json.dumps(["/usr/bin/python3", mnist,
                             "--epochs", "1", "--train-size", "256", "--workers", "1"])
    directory = experiment("typo", "{name: single, metric: accuracy, smaller_is_better: false}",
                           hyperparameters="{batch_sise: 32, lr: 0.5}", entrypoint=entrypoint)
    out = launch(directory, 0)
    want = ["dlx: warning: hyperparameter 'batch_size' is not defined by the experiment, so "
            "trial.hparam(\"batch_size\", ...) uses its default 64 (did you mean 'batch_sise'? the "
            "experiment defines: batch_sise, lr)",
            "dlx: warning: hyperparameter 'gamma' is not defined by the experiment, so "
            "trial.hparam(\"gamma\", ...) uses its default 0.7 (the experiment defines: "
            "batch_sise, lr)",
            "dlx: warning: the experiment defines hyperparameter 'batch_sise', which this trial "
            "has not read: did you mean 'batch_size', which it asked for and got the default 64?"]
    for line in want:
        assert out.count(line) == 1, f"missing or repeated [{line}] in:\n{out}"
    print("  " + "\n  ".join(want))


SECTIONS = {"unseeded": unseeded_script_warned, "ranks": single_and_two_ranks,
            "transforms": random_transforms_in_workers, "searcher": searcher_lengths,
            "pbt": pbt_exploit_mid_epoch, "typo": typo_named_on_the_first_trial}


def main():
    chosen = sys.argv[3:] or list(SECTIONS)
    unknown = [name for name in chosen if name not in SECTIONS]
    assert not unknown, f"no section {unknown}: the sections are {list(SECTIONS)}"
    try:
        for name in chosen:
            SECTIONS[name]()
    finally:
        shutil.rmtree(ROOT, ignore_errors=True)
    print("torch loop: ok")


if __name__ == "__main__":
    main()
