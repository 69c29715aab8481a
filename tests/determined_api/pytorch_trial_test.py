# SPDX-License-Identifier: Apache-2.0
"""Determined's PyTorchTrial on dlx (python/dlx/compat/determined/pytorch): model_def.py's
RegressionTrial, named as Determined names it (`entrypoint: model_def:RegressionTrial`, which dlx
runs as `python3 -m determined.exec.harness model_def:RegressionTrial`), under the real
dlx-launch (no Slurm: a requeue is dlx-launch run again):
  - an uninterrupted run to max_length {batches: 40} (16 batches an epoch: the target inside
    epoch 3), validated at every epoch's end and at the target;
  - the same run with Slurm's notice during batch 21: it saves between two batches, exits 85, and
    run again resumes there (models, optimizer, StepLR, every RNG and the shuffling DataLoader's
    position): the final checkpoint's tensors and every metric row are identical; and during
    batch 32, the second epoch's last: saved after the epoch's body, the run again validates that
    epoch (the context's current_train_epoch() a validation metric) and ends identical;
  - the Trainer API (trainer_script.py: det.pytorch.init, Trainer.fit(max_length=Epoch(2))) with
    no searcher length: two epochs, validated at the tutorial's Batch(100) period (never, in
    32 batches) and at the end, completed;
  - Determined's min_validation_period: {batches: 10} and optimizations.aggregation_frequency: 2
    (the harness's arguments): validation at 10, 20, 30 and the target 40, not at epoch ends;
    the optimizer steps every second batch; Slurm's notice during global batch 20, the first of
    an aggregation (the checkpoint is taken after the next batch, which steps), resumes
    bit-identically;
  - autocast_forward_pass (Determined's AMP; bfloat16 on this CPU): every forward pass
    autocast, and a requeue during batch 21 bit-identical;
  - ASHA with promotions (async_halving, rungs at 10, 20 and 40 batches) over sequential
    tickets: a paused PyTorchTrial is resumed from its rung checkpoint by a later ticket;
  - PBT (2 members, rounds of 10 batches): the replacement starts from its parent's checkpoint
    at step 10 and trains to 20;
  - two ranks (`mpirun -np 2 dlx-launch`: DDP over gloo, each rank its shard of the data, no
    DataLoader workers: model_def.py says why),
    Slurm's notice on rank 1 only during batch 21: both save, and the requeued run ends identical
    to an uninterrupted two-rank run; entered through Determined's older entrypoint
    `python3 -m determined.launch.torch_distributed --trial model_def:RegressionTrial`;
  - evaluation_reducer() (SUM, MAX), wrap_reducer with a function and a MetricReducer (validation)
    and a training one, on one and two ranks (the ranks' values reduced together), a reducer
    returning the wrong kind refused; get_tensorboard_writer() and set_profiler() said once;
  - context.set_stop_requested(True) during batch 20 of 40: training ends after it, validated
    and completed with the searcher told; on two ranks, asked on rank 1 only, both end there;
  - the Trainer API through `python3 -m determined.launch.torch_distributed -- python3
    trainer_script.py`, validation_period=Batch(12): validation at 12, 24 and the end;
  - what dlx refuses, each at once (exit 78) with its fix: a class that is no PyTorchTrial,
    Trainer.fit(max_length=Batch(N)) without a searcher length, `import determined.keras`.

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

from launching import Launcher, states_of

LAUNCH, SOURCE = sys.argv[1], sys.argv[2]
HERE = os.path.join(SOURCE, "tests", "determined_api")
COMPARE = os.path.join(SOURCE, "tests", "tools", "compare_checkpoints.py")
ROOT = tempfile.mkdtemp(prefix="dlx-determined-pytorch-")
LAUNCHER = Launcher(LAUNCH, SOURCE, "TRIAL_", cwd=HERE)


def experiment(name, entrypoint="model_def:RegressionTrial",
               searcher="{name: single, metric: validation_loss, max_length: {batches: 40}}", more="",
               lr="0.05"):
    directory = os.path.join(ROOT, name)
    os.makedirs(os.path.join(directory, "trials"))
    with open(os.path.join(directory, "experiment.yaml"), "w") as f:
        f.write(f"name: {name}\nentrypoint: {entrypoint}\nseed: 3\n"
                f"hyperparameters: {{lr: {lr}, global_batch_size: 16}}\n"
                f"searcher: {searcher}\n"
                f"checkpoint: {{keep_latest: 2}}\n{more}")
    return directory


def launch(directory, expect, ticket=0, **extra):
    return LAUNCHER.one_rank(directory, expect, ticket, **extra)


def state_of(directory):
    with h5py.File(f"{directory}/trials/0/trial.h5", "r") as f:
        state = f.attrs["state"]
        return state.decode() if isinstance(state, bytes) else state


def same_run(reference, requeued, what, tensors=("model_0/0.weight", "rng/rank-0/torch")):
    """The final checkpoints alike (`tensors` must be among them) and every metric row."""
    check = subprocess.run([sys.executable, COMPARE, os.path.join(reference, "trials", "0"),
                            os.path.join(requeued, "trials", "0")] +
                           [arg for tensor in tensors for arg in ("--tensor", tensor)], capture_output=True, text=True)
    assert check.returncode == 0, f"{what}: not identical to the uninterrupted run:\n{check.stdout}{check.stderr}"
    for table in ("training", "validation"):
        assert metrics(reference, table) == metrics(requeued, table), f"{what}: the {table} metrics differ"
    return check.stdout.strip()


def metrics(directory, table, trial=0):
    with h5py.File(f"{directory}/trials/{trial}/trial.h5", "r") as f:
        group = f[f"metrics/{table}"]
        return {name: numpy.asarray(group[name]).tolist() for name in group if name != "wall_time"}


def main():
    print("uninterrupted run (max_length 40 batches, 16 an epoch):")
    reference = experiment("reference")
    launch(reference, 0)
    steps = metrics(reference, "validation")["steps"]
    assert steps == [16, 32, 40], f"validation at {steps}, not at each epoch's end and the target"
    assert state_of(reference) == "completed", state_of(reference)
    assert set(metrics(reference, "training")["stepped"]) == {1.0}, "a batch without an optimizer step"

    print("Slurm's notice during batch 21, then run again:")
    requeued = experiment("requeued")
    launch(requeued, 85, TRIAL_SIGNAL_AT="21")
    launch(requeued, 0)
    print(f"  {same_run(reference, requeued, 'requeued')}")
    assert metrics(reference, "validation")["train_epoch"] == [0.0, 1.0, 2.0], metrics(reference, "validation")

    print("Slurm's notice during batch 32, the second epoch's last: saved at the epoch's end, after "
          "its body; run again, it validates epoch 2 (as epoch 2) and goes on:")
    requeued = experiment("requeued-epoch-end")
    out = launch(requeued, 85, TRIAL_SIGNAL_AT="31")
    assert "the requeued trial resumes at step 32, the end of epoch 2" in out, out
    launch(requeued, 0)
    print(f"  {same_run(reference, requeued, 'requeued-epoch-end')}")

    periods_and_aggregation()
    amp()
    asha()
    pbt()
    two_ranks()
    early_stop()
    reducers()
    trainer_api()
    refusals()
    shutil.rmtree(ROOT)


PERIODIC = "min_validation_period: {batches: 10}\noptimizations: {aggregation_frequency: 2}\n"


def periods_and_aggregation():
    print("min_validation_period {batches: 10}, aggregation_frequency 2:")
    reference = experiment("periodic", more=PERIODIC)
    launch(reference, 0)
    steps = metrics(reference, "validation")["steps"]
    assert steps == [10, 20, 30, 40], f"validation at {steps}, not every 10 batches"
    stepped = metrics(reference, "training")["stepped"]
    assert stepped == [0.0, 1.0] * 20, f"optimizer steps after the batches {stepped}, not every second one"
    requeued = experiment("periodic-requeued", more=PERIODIC)
    # A notice on global batch 20, the first of an aggregation: dlx.torch.Loop saves after the
    # next batch, which steps (python/dlx/torch/_steps.py); a checkpoint that must fall inside
    # an aggregation (a searcher's target) holds the sums so far (_Gradients).
    launch(requeued, 85, TRIAL_SIGNAL_AT="20")
    launch(requeued, 0)
    print(f"  validated at {steps}; stepped every second batch; requeued mid-aggregation: "
          f"{same_run(reference, requeued, 'aggregation')}")


def asha():
    print("ASHA (promotions), rungs at 10, 20 and 40 batches, sequential tickets:")
    searcher = ("{name: async_halving, metric: validation_loss, max_trials: 4, max_length: {batches: 40}, "
                "divisor: 2, max_rungs: 3, max_concurrent_trials: 1}")
    directory = experiment("asha", searcher=searcher, lr="{type: double, minval: 0.01, maxval: 0.1}")
    LAUNCHER.tickets(directory, 16)
    states = states_of(directory)
    assert sorted(states) == [0, 1, 2, 3] and "completed" in states.values(), states
    promoted = [t for t in states if 20 in metrics(directory, "validation", t)["steps"]]
    assert promoted, f"no trial promoted past rung 10: {states}"
    for trial in states:
        steps = [int(step) for step in metrics(directory, "validation", trial)["steps"]]
        # Validation at the rungs and at the epochs' ends (16, 32), each once.
        assert steps == sorted(set(steps)) and set(steps) <= {10, 16, 20, 32, 40}, (trial, steps)
    print(f"  trials {states}, promoted past rung 10: {promoted}")


def amp():
    print("autocast_forward_pass (AMP: bfloat16 on a CPU), requeued during batch 21:")
    reference = experiment("amp")
    launch(reference, 0, TRIAL_AMP="1")
    assert set(metrics(reference, "training")["autocast"]) == {1.0}, "a forward pass ran without autocast"
    requeued = experiment("amp-requeued")
    launch(requeued, 85, TRIAL_AMP="1", TRIAL_SIGNAL_AT="21")
    launch(requeued, 0, TRIAL_AMP="1")
    print(f"  every forward pass in bfloat16; {same_run(reference, requeued, 'amp')}")


def pbt():
    print("PBT, 2 members, rounds of 10 batches, sequential tickets:")
    searcher = ("{name: pbt, metric: validation_loss, population_size: 2, num_rounds: 2, "
                "length_per_round: {batches: 10}, replace_function: {truncate_fraction: 0.5}, "
                "explore_function: {resample_probability: 0.5, perturb_factor: 0.2}}")
    directory = experiment("pbt", searcher=searcher, lr="{type: double, minval: 0.01, maxval: 0.1}")
    for ticket in range(4):
        launch(directory, 0, ticket, DLX_WORK_WAIT_S="30")
    with h5py.File(f"{directory}/trials/2/trial.h5", "r") as f:
        parent, step = int(f.attrs["started_from_trial"]), int(f.attrs["started_from_step"])
    assert parent in (0, 1) and step == 10, (parent, step)
    steps = [int(s) for s in metrics(directory, "validation", 2)["steps"]]
    assert steps and steps[-1] == 20 and steps[0] > 10, f"trial 2 validated at {steps}, not from 10 to 20"
    print(f"  trial 2 started from trial {parent}'s step 10 and trained to 20 (validated at {steps})")


def two_ranks():
    print("two ranks (torch_distributed --trial), Slurm's notice on rank 1 during batch 21:")
    entrypoint = "python3 -m determined.launch.torch_distributed --trial model_def:RegressionTrial"
    reference = experiment("ranks-reference", entrypoint)
    LAUNCHER.two_ranks(reference, 0, TRIAL_WORKERS="0")
    assert metrics(reference, "validation")["steps"] == [16, 32, 40]
    requeued = experiment("ranks-requeued", entrypoint)
    LAUNCHER.two_ranks(requeued, 85, TRIAL_SIGNAL_AT="21", TRIAL_SIGNAL_RANK="1", TRIAL_WORKERS="0")
    LAUNCHER.two_ranks(requeued, 0, TRIAL_WORKERS="0")
    # The model is wrapped in DistributedDataParallel (module.); each rank's RNG is its own.
    print(f"  {same_run(reference, requeued, 'two ranks', ('model_0/module.0.weight', 'rng/rank-1/torch'))}")


def early_stop():
    print("context.set_stop_requested(True) during global batch 20 of max_length 40:")
    reason = "the trainer ended training before the searcher's length 40"
    stopped = experiment("stopped")
    launch(stopped, 0, TRIAL_STOP_AT="20")
    steps = metrics(stopped, "validation")["steps"]
    assert steps == [16, 21], f"validation at {steps}, not at the first epoch's end and the stop"
    with h5py.File(f"{stopped}/trials/0/trial.h5", "r") as f:
        attrs = {name: (v.decode() if isinstance(v, bytes) else v) for name, v in f.attrs.items()}
    assert (attrs["state"], attrs["stop_reason"]) == ("completed", reason), attrs
    print("  trained to 21, validated, completed: " + reason)

    print("two ranks, set_stop_requested on rank 1 only, during batch 20:")
    entrypoint = "python3 -m determined.launch.torch_distributed --trial model_def:RegressionTrial"
    stopped = experiment("ranks-stopped", entrypoint)
    LAUNCHER.two_ranks(stopped, 0, TRIAL_STOP_AT="20", TRIAL_STOP_RANK="1", TRIAL_WORKERS="0")
    steps = metrics(stopped, "validation")["steps"]
    assert steps == [16, 21], f"validation at {steps}: the ranks did not stop together"
    assert state_of(stopped) == "completed", state_of(stopped)
    print("  both ranks ended after batch 21, completed")


def reducers():
    print("evaluation_reducer(), wrap_reducer (a function, a MetricReducer, a training one), the "
          "TensorBoard writer and set_profiler:")
    entrypoint = "model_def:ReducerTrial"
    one = experiment("reducers", entrypoint)
    out = launch(one, 0)
    validation = metrics(one, "validation")
    assert validation["steps"] == [16, 32, 40], validation["steps"]
    assert validation["validation_batches"] == [2.0] * 3, validation  # SUM: 64 records in 32s
    assert validation["validation_records"] == [64.0] * 3, validation
    assert validation["errors_counted"] == [64.0] * 3, validation
    assert all(high >= mean for high, mean in zip(validation["max_loss"], validation["validation_loss"])), validation
    training = metrics(one, "training")
    # Reported with the validations, as training metrics of their steps: the batches since the last.
    counted = [count for count in training["trained_batches"] if count == count]
    assert counted == [16.0, 16.0, 8.0], training["trained_batches"]
    # A reducer of both kinds: each window's own updates (16 training batches, 2 validation ones).
    assert [c for c in training["updates"] if c == c] == [16.0, 16.0, 8.0], training["updates"]
    assert validation["updates"] == [2.0] * 3, validation["updates"]
    for said in ("determined on dlx: get_tensorboard_writer(): PyTorch's SummaryWriter needs the "
                 "tensorboard package", "determined on dlx: set_profiler() is accepted and not used"):
        assert out.count(said) == 1, out

    print("  the same on two ranks (each validates 32 records, trains 16 batches an epoch):")
    two = experiment("reducers-two-ranks", "python3 -m determined.launch.torch_distributed --trial " + entrypoint)
    LAUNCHER.two_ranks(two, 0, TRIAL_WORKERS="0")
    validation = metrics(two, "validation")
    assert validation["validation_batches"] == [2.0] * 3, validation  # one batch on each rank
    assert validation["validation_records"] == [64.0] * 3, validation
    assert validation["errors_counted"] == [64.0] * 3, validation
    counted = [count for count in metrics(two, "training")["trained_batches"] if count == count]
    assert counted == [32.0, 32.0, 16.0], counted
    print(f"  validation {sorted(validation)}; trained_batches {counted}")

    print("  a reducer with a name that returns a dict: refused (exit 78):")
    bad = experiment("reducer-bad", entrypoint)
    out = launch(bad, 78, TRIAL_BAD_REDUCER="1")
    assert "determined: the reducer AbsError (name='abs') returned a dict from cross_slot_reduce(); " \
           "with a name it returns one value" in out, out
    print("  a context method that does not exist: exit 78 at once, with the closest name:")
    out = launch(experiment("typo", entrypoint), 78, TRIAL_TYPO="1")
    assert "determined on dlx: PyTorchTrialContext has no 'get_tensorboard_writter' (did you mean " \
           "'get_tensorboard_writer'? docs/determined.md lists what runs)" in out, out
    print("  a reducer named as an evaluate_batch metric, an evaluation_reducer() of a string: exit 78:")
    out = launch(experiment("clash", entrypoint), 78, TRIAL_CLASH="1")
    assert "determined: the validation metric 'validation_loss' comes both from evaluate_batch (or " \
           "evaluate_full_dataset) and from a reducer: rename one" in out, out
    out = launch(experiment("bad-evaluation-reducer", entrypoint), 78, TRIAL_BAD_EVAL_REDUCER="1")
    assert "determined: evaluation_reducer() gives 'max' for 'max_loss': give a det.pytorch.Reducer (AVG, " \
           "SUM, MAX, MIN), or a dict of them" in out, out
    print("  configure_apex_amp(): refused (exit 78), naming PyTorch's own AMP:")
    out = launch(experiment("apex", entrypoint), 78, TRIAL_APEX="1")
    assert "determined on dlx: configure_apex_amp() is not supported (NVIDIA apex is not installed with " \
           "dlx): use context.autocast_forward_pass(model)" in out, out


def trainer_api():
    print("the Trainer API, max_length Epoch(2), no searcher length:")
    script = experiment("trainer", "python3 trainer_script.py --epochs 2",
                        "{name: single, metric: validation_loss}")
    launch(script, 0)
    steps = metrics(script, "validation")["steps"]
    assert steps == [32], f"validation at {steps}, not at the end only (Batch(100) falls in no 32 batches)"
    assert state_of(script) == "completed", state_of(script)
    print("  two epochs, validated at the end (32), completed")

    print("the Trainer API through determined.launch.torch_distributed, validation_period Batch(12):")
    script = experiment("launched", "python3 -m determined.launch.torch_distributed --nproc_per_node 4 -- "
                        "python3 trainer_script.py --epochs 2 --validation-batches 12",
                        "{name: single, metric: validation_loss}")
    out = launch(script, 0)
    assert "ignoring torch.distributed.run's --nproc_per_node 4" in out, out
    steps = metrics(script, "validation")["steps"]
    assert steps == [12, 24, 32], f"validation at {steps}, not at 12, 24 and the end"
    print("  validated at 12, 24 and 32; the launcher's own options named as ignored")


def refusals():
    print("what dlx refuses, at once with exit 78:")
    out = launch(experiment("not-a-trial", "model_def:synthetic"), 78)
    assert "model_def:synthetic is not a det.pytorch.PyTorchTrial subclass" in out, out
    out = launch(experiment("batches", "python3 trainer_script.py --max-batches 20",
                            "{name: single, metric: validation_loss}"), 78)
    assert "det.pytorch.Trainer.fit(max_length=Batch(20)): without searcher.max_length in the experiment, " \
           "dlx's loop trains whole epochs: give max_length=det.pytorch.Epoch(N)" in out, out
    out = launch(experiment("keras", "python3 -c 'import determined.keras'",
                            "{name: single, metric: validation_loss}"), 78)
    assert "determined on dlx: determined.keras (TFKerasTrial, TensorFlow) is not supported: port the model to " \
           "det.pytorch.PyTorchTrial" in out, out
    print("  no PyTorchTrial, Trainer.fit(max_length=Batch(20)) without a searcher length, determined.keras: "
          "each named with its fix")


if __name__ == "__main__":
    main()
