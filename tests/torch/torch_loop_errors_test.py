# SPDX-License-Identifier: Apache-2.0
"""dlx.torch.Loop refuses what it cannot do right, each with a message that says what and how to
fix it: a state name the loop already saves, validate_every below 1, no length at all (no
searcher length, no max_epochs), a searcher length without validate(), validate() returning no
dict or nothing at the searcher's target, an attribute neither the loop nor its loader has (named
as the loop's, with how to report metrics), an epoch whose body does not iterate the loop, the loop
iterated inside its own iteration or beside an iterator of it kept open, records counted over
batches of unknown size, several ranks without torch.distributed, and a
checkpoint whose loop position disagrees with its step (the loop's own error alone: not also
"the script left the loop", which a break is told). Also: outside a trial (no checkpoint
directory) the loop trains as the plain script would and saves nothing.
Needs DLX_LIBRARY and PYTHONPATH (python/)."""
import contextlib
import io
import os
import shutil
import tempfile

import torch

import dlx
import dlx.torch

ROOT = tempfile.mkdtemp(prefix="dlx-torch-loop-errors-")


def environment(**variables):
    for name in [n for n in os.environ if n.startswith("DLX_") and n != "DLX_LIBRARY"]:
        del os.environ[name]
    os.environ.update({"RANK": "0", "WORLD_SIZE": "1", **variables})


def in_trial(name, **variables):
    directory = os.path.join(ROOT, name)
    os.makedirs(directory)
    environment(DLX_EXPERIMENT_DIR=directory, DLX_TRIAL_ID="0", DLX_HPARAMS="{}",
                DLX_CHECKPOINT_DIR=os.path.join(directory, "checkpoints"), DLX_RUN_ID=name,
                **variables)
    return directory


ITERATED = ("dlx.torch.Loop: the loop is already being iterated in this epoch (an iterator of it kept "
            "open, or a loop over it inside another): iterate it once per epoch; a look at one "
            "batch, next(iter(loop)), is free where its iterator is not kept")


def refused(expected, action):
    try:
        action()
    except dlx.Error as error:
        assert str(error) == expected, f"\n got: {error}\nwant: {expected}"
        print(f"  refused: {str(error)[:110]}...")
        return
    raise AssertionError(f"not refused: {expected}")


def parts():
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = [torch.ones(3, 2) for _ in range(4)]
    return model, optimizer, batches


def train(loop, model, optimizer, **options):
    for _ in loop.epochs(**options):
        for x in loop:
            optimizer.zero_grad()
            model(x).sum().backward()
            optimizer.step()


def main():
    in_trial("names")
    model, optimizer, batches = parts()
    with dlx.Trial() as trial:
        for name in ("model", "dlx_loop"):
            refused(f"dlx.torch.Loop: state names '{name}', which the loop already saves; give it "
                    f"another name",
                    lambda: dlx.torch.Loop(trial, batches, model, optimizer, state={name: {}}))
        loop = dlx.torch.Loop(trial, batches, model, optimizer)
        refused("dlx.torch.Loop: validate_every is 0; give 1 (every epoch) or more",
                lambda: train(loop, model, optimizer, max_epochs=1, validate_every=0))
        refused("dlx.torch.Loop: this trial has no searcher length (max_length), so the loop "
                "needs one: loop.epochs(max_epochs)", lambda: train(loop, model, optimizer))
        # An attribute neither the loop nor its loader has is named as the loop's, with Python's
        # own suggestion; one that looks like reporting metrics says how.
        assert len(loop) == 4  # the loader's length, through the loop
        try:
            loop.report(loss=1.0)
            raise AssertionError("loop.report must raise")
        except AttributeError as error:
            assert str(error) == ("dlx.torch.Loop has no attribute 'report', nor has the list it wraps; metrics go "
                                  "through the trial: trial.report_training(loop.step, loss=...) in the batch loop, "
                                  "and validation metrics are what validate() returns"), error
            assert error.name == "report" and error.obj is loop
            print(f"  refused: {str(error)[:110]}...")
        try:
            loop.epochz
            raise AssertionError("loop.epochz must raise")
        except AttributeError as error:
            assert str(error) == "dlx.torch.Loop has no attribute 'epochz', nor has the list it wraps", error
            assert error.name == "epochz" and error.obj is loop  # what Python's "Did you mean" reads

    in_trial("target", DLX_TARGET_LENGTH="6", DLX_SEARCHER_METRIC="accuracy")
    with dlx.Trial() as trial:
        loop = dlx.torch.Loop(trial, batches, model, optimizer)
        refused("dlx.torch.Loop: the searcher asks for validation metrics at length 6: give "
                "loop.epochs(..., validate=...) a function returning them (a dict with the "
                "searcher metric 'accuracy')", lambda: train(loop, model, optimizer))

    in_trial("no-metrics", DLX_TARGET_LENGTH="6", DLX_SEARCHER_METRIC="accuracy")
    with dlx.Trial() as trial:
        loop = dlx.torch.Loop(trial, batches, model, optimizer)
        refused("dlx.torch.Loop: validate() returned no metrics at the searcher's target (step "
                "6), where the searcher needs them: return a dict with 'accuracy'",
                lambda: train(loop, model, optimizer, validate=lambda: None))

    in_trial("validate")
    with dlx.Trial() as trial:
        loop = dlx.torch.Loop(trial, batches, model, optimizer)
        refused("dlx.torch.Loop: validate() returned a float; return the metrics as a dict, e.g. "
                "{\"loss\": 0.31, \"accuracy\": 0.92} (the same on every rank)",
                lambda: train(loop, model, optimizer, max_epochs=1, validate=lambda: 0.5))

    in_trial("no-batches")
    with dlx.Trial() as trial:
        loop = dlx.torch.Loop(trial, batches, model, optimizer)

        def idle():
            for _ in loop.epochs(2):
                pass
        refused("dlx.torch.Loop: epoch 1 ended without training a batch: iterate the loop in "
                "the body of `for epoch in loop.epochs()` (for batch in loop: ...)", idle)

    in_trial("nested")
    with dlx.Trial() as trial:
        loop = dlx.torch.Loop(trial, batches, model, optimizer)

        def nested():
            for _ in loop.epochs(1):
                for _ in loop:
                    for _ in loop:
                        pass
        refused(ITERATED, nested)

    in_trial("kept")  # a look at a batch whose iterator is kept open is an iteration going on
    with dlx.Trial() as trial:
        loop = dlx.torch.Loop(trial, batches, model, optimizer)

        def kept():
            for _ in loop.epochs(1):
                looked = iter(loop)
                next(looked)
                for _ in loop:
                    pass
        refused(ITERATED, kept)

    in_trial("records", DLX_LENGTH_UNIT="records", DLX_TARGET_LENGTH="10")
    with dlx.Trial() as trial, contextlib.redirect_stderr(io.StringIO()) as said:
        loop = dlx.torch.Loop(trial, batches, model, optimizer)
        refused("dlx.torch.Loop: the searcher counts records, but the loop cannot tell how many "
                "each batch holds: use a DataLoader with a batch_size, or give max_length in "
                "batches", lambda: train(loop, model, optimizer, validate=lambda: {"loss": 1.0}))
    # The loop's own error is the whole story: not also "the script left the loop".
    assert "the script left" not in said.getvalue(), said.getvalue()

    in_trial("ranks", WORLD_SIZE="2")
    with dlx.Trial() as trial:
        loop = dlx.torch.Loop(trial, batches, model, optimizer)
        refused("dlx.torch.Loop: this trial has 2 ranks, which agree through torch.distributed: "
                "call torch.distributed.init_process_group() before the first epoch",
                lambda: train(loop, model, optimizer, max_epochs=1))

    directory = in_trial("position")
    with dlx.Trial() as trial:
        dlx.torch.save_state(trial, 5, {"model": model, "optimizer": optimizer,
                                        "dlx_loop": {"label": 3, "batches": 3}})
        trial.wait_for_checkpoint()
    with dlx.Trial() as trial:
        loop = dlx.torch.Loop(trial, batches, model, optimizer)
        refused(f"dlx.torch.Loop: {directory}/checkpoints/step-5.h5 is step 5 but its loop "
                f"position lacks epoch, batch, records, ended, pending: was it saved by "
                f"another program?", loop.resume)
    with dlx.Trial() as trial:
        position = dlx.torch.Loop(trial, batches, model, optimizer).position.state
        dlx.torch.save_state(trial, 6, {"model": model, "optimizer": optimizer,
                                        "dlx_loop": dict(position, label=3)})
        trial.wait_for_checkpoint()
    with dlx.Trial() as trial:
        loop = dlx.torch.Loop(trial, batches, model, optimizer)
        refused(f"dlx.torch.Loop: {directory}/checkpoints/step-6.h5 is step 6 but its loop "
                f"position is 3: was it saved by another program?", loop.resume)

    # Outside a trial, no checkpoint directory: it trains and saves nothing.
    environment()
    with dlx.Trial() as trial:
        loop = dlx.torch.Loop(trial, batches, model, optimizer)
        before = model.weight.detach().clone()
        validated = []  # loop.epoch in validate(): the epoch that ended, as the plain script's
        train(loop, model, optimizer, max_epochs=2,
              validate=lambda: validated.append(loop.epoch) or {"loss": 1.0})
        assert validated == [1, 2], validated
        assert loop.step == 8 and loop.epoch == 3, (loop.step, loop.epoch)
        assert not torch.equal(before, model.weight), "it did not train"
    print("torch loop errors: ok")


if __name__ == "__main__":
    try:
        main()
    finally:
        shutil.rmtree(ROOT, ignore_errors=True)
