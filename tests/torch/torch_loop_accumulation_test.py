# SPDX-License-Identifier: Apache-2.0
"""dlx.torch.Loop and a script that accumulates gradients (python/dlx/torch/_steps.py): the
usual pattern, `(loss / N).backward()` on every batch of `enumerate(loop)` and
optimizer.step() + zero_grad() on every N-th (tests/torch/loop_trainer.py, LOOP_ACCUMULATE=3:
13 batches an epoch, so the 13th's gradient is carried into the next epoch).

A checkpoint between two optimizer steps would hold none of the accumulated gradients, and the
resumed `enumerate` would count its groups from another batch: so the loop takes a requested or
periodic checkpoint after the next batch that steps, and the resumed run ends with the same
bytes as the uninterrupted one.

  one rank:   requeued inside a group (epoch 2, batch 5: saved at 19 = 13 + 6) and at an epoch's
              end with a gradient pending (1:13: saved in epoch 2 after its 3rd batch, step 16);
              the docs' idiom (loop.batch, the last group stepped) requeued at 2:5 and 3:13;
              and an optimizer never stepped in the batch loop: the request waits for the end
              of the epoch, no longer
  two ranks:  DDP with no_sync() on the batches that do not step, rank 1 signalled inside a group
  dlx-launch: checkpoint.period {batches: 5} saves at the first step at or after each multiple of
              5; a searcher target between two steps, and an epoch's end with a gradient pending
              in a length of epochs, are said in the log

    torch_loop_accumulation_test.py DLX_LAUNCH SOURCE_DIR      (DLX_LIBRARY, PYTHONPATH=python/)
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_loop_test as base  # noqa: E402  (its helpers: the trainer's runs, the comparison)

ACCUMULATE = {"LOOP_ACCUMULATE": "3"}
DEFERRED = ("dlx.torch.Loop: checkpoint requested at step {}, between two optimizer steps: it is "
            "taken after the next batch that steps the optimizer, where a resumed run goes on as "
            "this one would (docs/sdk.md, \"Gradient accumulation\")")
RESUMES = "dlx.torch.Loop: checkpoint requested: the requeued trial resumes at step {}"


def requeued_once(ranks, reference, name, point, asked, saved):
    """Interrupted at `point`; the request (at step `asked`) waits for the step at `saved`."""
    directory = base.fresh(name)
    at, _, rank = point.partition("@")
    outputs = base.run_ranks(directory, ranks, 85, LOOP_SIGNAL_AT=at, LOOP_SIGNAL_RANK=rank or "0",
                             **ACCUMULATE)
    assert outputs[0].count(DEFERRED.format(asked)) == 1, outputs[0]
    assert RESUMES.format(saved) in outputs[0], outputs[0]
    assert base.checkpoint_steps(directory) == [saved], base.checkpoint_steps(directory)
    final = base.run_ranks(directory, ranks, 0, **ACCUMULATE)
    base.identical(reference, directory, name)
    return final


def one_and_two_ranks():
    print("one rank, gradients accumulated over 3 batches (13 a epoch), 3 epochs:")
    reference = base.fresh("acc-one-reference")
    want = base.result_of(base.run_ranks(reference, 1, 0, **ACCUMULATE)[0])
    assert (want["step"], want["epoch"]) == (39, 3), want
    final = requeued_once(1, reference, "acc-inside-a-group", "2:5", asked=18, saved=19)
    assert base.result_of(final[0])["digest"] == want["digest"]
    requeued_once(1, reference, "acc-epoch-end-pending", "1:13", asked=13, saved=16)

    print("the docs' idiom (loop.batch, the epoch's last group stepped): a request inside a group "
          "in epoch 2 waits for the step after its 6th batch; one on an epoch's last batch does "
          "not wait:")
    last = dict(ACCUMULATE, LOOP_STEP_LAST="1")
    reference = base.fresh("acc-last-reference")
    base.run_ranks(reference, 1, 0, **last)
    directory = base.fresh("acc-last-requeued")
    for point in ("2:5", "3:13"):
        base.run_ranks(directory, 1, 85, LOOP_SIGNAL_AT=point, **last)
    assert base.checkpoint_steps(directory) == [19, 39], base.checkpoint_steps(directory)
    base.run_ranks(directory, 1, 0, **last)
    base.identical(reference, directory, "acc-last-requeued")

    print("an optimizer the batch loop never steps: the request waits for the epoch's end only:")
    directory = base.fresh("acc-never-stepped")
    out = base.run_ranks(directory, 1, 85, LOOP_SIGNAL_AT="1:5", LOOP_ACCUMULATE="100")[0]
    assert out.count(DEFERRED.format(5)) == 1, out
    assert RESUMES.format(13) in out, out
    assert base.checkpoint_steps(directory) == [13], base.checkpoint_steps(directory)

    print("two ranks, DDP with no_sync() between steps (7 batches a epoch on each rank):")
    reference = base.fresh("acc-two-reference")
    want = [base.result_of(out) for out in base.run_ranks(reference, 2, 0, **ACCUMULATE)]
    # Epoch 2 starts at 7; its steps fall after its 3rd and 6th batches: 10, 13.
    final = requeued_once(2, reference, "acc-two-rank-1-inside-a-group", "2:4@1", asked=11,
                          saved=13)
    assert [base.result_of(out)["digest"] for out in final] == [w["digest"] for w in want]


def under_dlx_launch():
    print("checkpoint.period {batches: 5} with steps after batches 3, 6, ... of each epoch:")
    directory = base.experiment("acc-period", "{name: single, metric: accuracy}",
                                "checkpoint: {period: {batches: 5}, keep_latest: 20}")
    base.launch(directory, 0, **ACCUMULATE)
    # Steps at 3, 6, 9, 12 | 16, 19, 22, 25 | 29, 32, 35, 38 (each epoch counts its groups from
    # its first batch); due at 5, 10, ..., each saved at the first step from there; 39 is the end.
    steps = base.checkpoint_steps(directory)
    assert steps == [6, 12, 16, 22, 25, 32, 35, 39], steps

    print("a searcher target between two steps, said in the log:")
    single = "{name: single, metric: accuracy, smaller_is_better: false, max_length: {batches: 20}}"
    out = base.launch(base.experiment("acc-target", single), 0, LOOP_EPOCHS="99", **ACCUMULATE)
    said = ("dlx.torch.Loop: the searcher's target, step 20, fell between two optimizer steps "
            "(gradient accumulation?): its checkpoint holds none of the gradients accumulated "
            "since the last step, so a trial resumed from it does not train as one that went on.")
    assert out.count(said) == 1, out

    print("a length in epochs, an epoch's end with a gradient pending, said in the log:")
    single = "{name: single, metric: accuracy, smaller_is_better: false, max_length: {epochs: 2}}"
    out = base.launch(base.experiment("acc-epochs", single), 0, **ACCUMULATE)
    said = "dlx.torch.Loop: the end of epoch 1 fell between two optimizer steps"
    assert out.count(said) == 1, out
    out = base.launch(base.experiment("acc-epochs-every-batch", single), 0)
    assert "between two optimizer steps" not in out, out


def main():
    try:
        one_and_two_ranks()
        under_dlx_launch()
    finally:
        shutil.rmtree(base.ROOT, ignore_errors=True)
    print("torch loop accumulation: ok")


if __name__ == "__main__":
    main()
