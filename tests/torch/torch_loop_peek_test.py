# SPDX-License-Identifier: Apache-2.0
"""dlx.torch.Loop and a look at a batch: PyTorch's DDP tutorial (multigpu_torchrun.py) starts each
epoch's body with `b_sz = len(next(iter(self.train_data))[0])`, then iterates the data. With a
plain DataLoader the look costs nothing; the loop once counted the batch it handed out as trained
and went on from the next one, so every epoch skipped its first batch, silently (loop.py,
_undo_peek). tests/torch/loop_trainer.py with LOOP_PEEK=1 does what the tutorial does:

  - the run with the look is byte for byte the run without it (checkpoint, metric tables, the
    generators), its body trains every batch: 39 in 3 epochs of 13
  - requeued mid-epoch (epoch 2, batch 5), it resumes where it was and ends as the run without
    the look (the library's resume line names the epoch as the loop's does: "(step 18, epoch 2)");
    requeued on an epoch's last batch, it exits after the epoch's body, and the resumed run does
    the epoch's end without running the body again (whose look would find no batch left)
  - a look outside the training (LOOP_LOOK=1: a batch before loop.epochs() and in each
    validate(), a pass after the training) is the loader's own batches: counted nowhere, the training's order untouched

    torch_loop_peek_test.py DLX_LAUNCH SOURCE_DIR      (DLX_LIBRARY, PYTHONPATH=python/)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_loop_test as base  # noqa: E402  (its helpers: the trainer's runs, the comparison)

PEEK = {"LOOP_PEEK": "1"}
AT_EPOCH_END = ("dlx.torch.Loop: checkpoint requested: the requeued trial resumes at step 13, the "
                "end of epoch 1 (its validation and checkpoint run then)")


def main():
    print("one rank, 13 batches an epoch, 3 epochs; the reference does not look:")
    reference = base.fresh("peek-reference")
    want = base.result_of(base.run_ranks(reference, 1, 0)[0])
    assert (want["step"], want["trained"]) == (39, 39), want

    print("each epoch's body looks at a batch first (the DDP tutorial's batch size):")
    directory = base.fresh("peek-uninterrupted")
    got = base.result_of(base.run_ranks(directory, 1, 0, **PEEK)[0])
    assert (got["step"], got["batches"], got["trained"]) == (39, 39, 39), got
    assert got["digest"] == want["digest"], (got, want)
    base.identical(reference, directory, "peek-uninterrupted")

    print("requeued at epoch 2, batch 5, with the look in every run:")
    directory = base.fresh("peek-requeued")
    out = base.run_ranks(directory, 1, 85, LOOP_SIGNAL_AT="2:5", **PEEK)[0]
    assert "dlx.torch.Loop: checkpoint requested: the requeued trial resumes at step 18" in out, out
    assert base.checkpoint_steps(directory) == [18], base.checkpoint_steps(directory)
    out = base.run_ranks(directory, 1, 0, **PEEK)[0]
    # The library's resume line and the loop's name the same epoch, numbered as loop.epochs() does.
    assert "step-18.h5 (step 18, epoch 2)" in out, out
    assert "dlx.torch.Loop: resuming inside epoch 2, after its batch 5 of 13" in out, out
    final = base.result_of(out)
    assert final["trained"] == 39 - 18, final  # batches 6..13 of epoch 2, all of epoch 3
    assert final["digest"] == want["digest"], (final, want)
    base.identical(reference, directory, "peek-requeued")

    print("requeued on epoch 1's last batch: saved after the epoch's body, the resumed run does "
          "epoch 1's end at once (no body again: nothing to look at) and goes on with epoch 2:")
    directory = base.fresh("peek-at-batches-end")
    out = base.run_ranks(directory, 1, 85, LOOP_SIGNAL_AT="1:13", **PEEK)[0]
    assert AT_EPOCH_END in out, out
    out = base.run_ranks(directory, 1, 0, **PEEK)[0]
    assert "step-13.h5 (step 13, epoch 1)" in out, out
    final = base.result_of(out)
    assert final["trained"] == 26 and final["digest"] == want["digest"], (final, want)
    base.identical(reference, directory, "peek-at-batches-end")

    print("a look before loop.epochs() and in validate(), a pass after the training:")
    directory = base.fresh("look-outside")
    out = base.run_ranks(directory, 1, 0, LOOP_LOOK="1")[0]
    assert "a look before the training: a batch of 16" in out, out
    assert "a pass after the training: 13 batches" in out, out
    got = base.result_of(out)
    assert (got["step"], got["trained"], got["digest"]) == (39, 39, want["digest"]), (got, want)
    base.identical(reference, directory, "look-outside")
    print("torch_loop_peek_test: ok")


if __name__ == "__main__":
    main()
