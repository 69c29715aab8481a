# SPDX-License-Identifier: Apache-2.0
"""Early stopping with dlx.torch.Loop: loop.stop() ends training after the epoch it is called in
(tests/torch/loop_trainer.py, LOOP_STOP_AT), under the real dlx-launch with the searcher; a
`break` out of loop.epochs() is said in the log, with the fix.

  - stop() in validate() at epoch 2 of 5, no searcher length: that epoch is the last, validated
    once, saved, the trial completed at step 26 (13 batches an epoch);
  - stop() in epoch 2's body and a notice later in that epoch: the requeued run (which does not
    call it) ends after epoch 2 all the same (the checkpoint holds the stop);
  - stop() in epoch 2's body, max_length {epochs: 5}: epoch 2 is trained to its end, validated
    and saved; the searcher is told the trial completed before its length (journal: completed at
    2, trial.h5's stop_reason says why) instead of waiting for a report at 5;
  - two ranks, stop() on rank 1 only: both ranks end after the same epoch (they agree at its end);
  - a break out of loop.epochs(): exit 0, the record running, and the log says how to stop (the
    loop's line and dlx-launch's warning); an exception out of it: its traceback, and no such
    advice;
  - stop() before loop.epochs(): a configuration error (exit 78) naming where to call it.

    torch_loop_stop_test.py DLX_LAUNCH SOURCE_DIR      (DLX_LIBRARY, PYTHONPATH=python/)
"""
import json
import os
import shutil
import subprocess
import sys

import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_loop_test as base  # noqa: E402  (its helpers: the trainer's runs and experiments)

DLX = os.path.join(os.path.dirname(base.LAUNCH), "dlx")
NO_LENGTH = "{name: single, metric: accuracy, smaller_is_better: false}"
FIVE_EPOCHS = "{name: single, metric: accuracy, smaller_is_better: false, max_length: {epochs: 5}}"


def record(directory, trial=0):
    with h5py.File(f"{directory}/trials/{trial}/trial.h5", "r") as f:
        return {name: (value.decode() if isinstance(value, bytes) else value)
                for name, value in f.attrs.items()}


def status(directory):
    result = subprocess.run([DLX, "status", directory, "--json"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)["trials"][0]


def stop_in_validate():
    print("loop.stop() in validate() at epoch 2 of 5, no searcher length:")
    directory = base.experiment("stop-validate", NO_LENGTH)
    out = base.launch(directory, 0, LOOP_EPOCHS="5", LOOP_STOP_AT="2:validate")
    result = base.result_of(out)
    assert (result["epoch"], result["step"]) == (2, 26), result
    assert base.validation_steps(directory) == [13, 26], base.validation_steps(directory)
    assert base.checkpoint_steps(directory)[-1] == 26, base.checkpoint_steps(directory)
    assert record(directory)["state"] == "completed", record(directory)
    assert "left `for epoch in loop.epochs()`" not in out, out


def stop_survives_a_requeue():
    print("loop.stop() in epoch 2's body, then a notice at its 5th batch; the requeued run, which "
          "does not call it, ends after epoch 2 all the same:")
    directory = base.experiment("stop-requeued", NO_LENGTH)
    base.launch(directory, 0, 85, LOOP_EPOCHS="5", LOOP_STOP_AT="2:body", LOOP_SIGNAL_AT="2:5")
    result = base.result_of(base.launch(directory, 0, LOOP_EPOCHS="5"))
    assert (result["epoch"], result["step"]) == (2, 26), result
    assert base.validation_steps(directory) == [13, 26], base.validation_steps(directory)
    assert record(directory)["state"] == "completed", record(directory)


def stop_in_body_before_the_searchers_length():
    print("loop.stop() in epoch 2's body, max_length {epochs: 5}:")
    directory = base.experiment("stop-body", FIVE_EPOCHS)
    out = base.launch(directory, 0, LOOP_STOP_AT="2:body")
    result = base.result_of(out)
    assert (result["epoch"], result["step"]) == (2, 2), result  # epochs count the step
    assert base.validation_steps(directory) == [1, 2], base.validation_steps(directory)
    assert base.checkpoint_steps(directory)[-1] == 2, base.checkpoint_steps(directory)
    reason = "the trainer ended training before the searcher's length 5"
    attrs = record(directory)
    assert (attrs["state"], attrs["stop_reason"]) == ("completed", reason), attrs
    row = status(directory)
    assert (row["state"], row["searcher"]) == ("completed", "completed at 2"), row
    print(f"  dlx status: {row['state']}, searcher {row['searcher']!r}: {row['stop_reason']}")


def one_rank_stops_both():
    print("two ranks, loop.stop() in validate() on rank 1 only, at epoch 1 of 3:")
    directory = base.fresh("stop-two-ranks")
    outputs = base.run_ranks(directory, 2, 0, LOOP_STOP_AT="1:validate", LOOP_STOP_RANK="1")
    results = [base.result_of(out) for out in outputs]
    assert [r["epoch"] for r in results] == [1, 1], results  # 7 batches an epoch on each rank
    assert "loop.stop() at 1:validate" in outputs[1] and "loop.stop()" not in outputs[0], outputs
    assert record(directory)["state"] == "completed", record(directory)


def break_is_said():
    print("a break out of loop.epochs() at epoch 2:")
    directory = base.experiment("break", NO_LENGTH)
    out = base.launch(directory, 0, LOOP_BREAK_AT="2")
    said = ("dlx.torch.Loop: the script left `for epoch in loop.epochs()` in epoch 2 (step 13) "
            "before the loop ended, by a break or a return: the trial is not "
            "finished (its record stays running), and "
            "this epoch's end (validation, checkpoint) did not run. To end training early, call "
            "loop.stop() in the epoch's body or in validate() instead of a break")
    assert out.count(said) == 1, out
    assert record(directory)["state"] == "running", record(directory)
    warned = ("dlx-launch: warning: the trainer exited 0 without finishing trial 0: its record stays "
              "running, and `dlx status` will show it lost. End training with trial.finish() in "
              "Python (dlx.torch.Loop calls it when `for epoch in loop.epochs()` runs to its end: "
              "end training early with loop.stop(), not a break;")
    assert warned in out, out


def exception_is_its_own_story():
    print("an exception out of loop.epochs() at epoch 2: its traceback, no advice on breaks:")
    directory = base.experiment("raise", NO_LENGTH, extra="max_restarts: 0\n")
    out = base.launch(directory, 0, 1, LOOP_RAISE_AT="2")
    assert "RuntimeError: loop_trainer: raised in epoch 2" in out, out
    assert "left `for epoch in loop.epochs()`" not in out, out


def stop_outside_the_epochs():
    print("loop.stop() before loop.epochs():")
    directory = base.experiment("stop-before", NO_LENGTH)
    out = base.launch(directory, 0, 78, LOOP_STOP_AT="before")
    said = ("dlx.torch.Loop: loop.stop() was called outside `for epoch in loop.epochs()`: call it "
            "in an epoch's body or in validate(), and that epoch is the last")
    assert said in out, out


def main():
    try:
        stop_in_validate()
        stop_survives_a_requeue()
        stop_in_body_before_the_searchers_length()
        one_rank_stops_both()
        break_is_said()
        exception_is_its_own_story()
        stop_outside_the_epochs()
    finally:
        shutil.rmtree(base.ROOT, ignore_errors=True)
    print("torch loop stop: ok")


if __name__ == "__main__":
    main()
