# SPDX-License-Identifier: Apache-2.0
"""Where a training loop is, and what length the searcher counts it as: the pure arithmetic of
dlx.torch.Loop (no torch, no files), unit-tested on its own (tests/torch/torch_loop_logic_test.py).

A searcher's length is in max_length's unit (DLX_LENGTH_UNIT: batches, records or epochs; batches
without one), and a checkpoint's step, a metric's step and the length reported to the searcher are
all that same number: dlx-launch starts a PBT exploit from step-<start_length>.h5 and resume
discovery takes the highest step. So the loop labels every point of training with a length:

  batches  the batches trained (on each rank: every rank trains the same number)
  records  the records trained over all ranks (each batch's size x the world size); the batch
           that reaches a target inside it is labelled with the target itself, so the checkpoint
           and report the searcher asked for carry its number (the next batch goes on with the
           exact count)
  epochs   the epochs completed; a batch counts toward the epoch it is in (epoch 3's batches are
           labelled 3), a checkpoint holds whole epochs only
"""
from __future__ import annotations

import enum
from typing import Mapping


class Unit(enum.Enum):
    BATCHES = "batches"
    RECORDS = "records"
    EPOCHS = "epochs"


def unit_of(text: str | None) -> Unit:
    """DLX_LENGTH_UNIT's value (unset or empty: batches, as a bare max_length counts)."""
    if not text:
        return Unit.BATCHES
    try:
        return Unit(text)
    except ValueError:
        raise ValueError(f"DLX_LENGTH_UNIT is '{text}', not batches, records or epochs "
                         f"(dlx-launch sets it from the experiment's searcher)") from None


def batch_records(batch_index: int, batch_size: int, samples: int | None, drop_last: bool) -> int:
    """Records in batch `batch_index` (0-based) of an epoch on one rank: a BatchSampler's batches
    are full except the last when `samples` does not divide (and drop_last is off)."""
    if samples is None or drop_last:
        return batch_size
    return max(0, min(batch_size, samples - batch_index * batch_size))


class Position:
    """The loop's position, saved in every checkpoint as a plain dict (the object 'dlx_loop').

    epoch     epochs completed (the index of the epoch in progress)
    batch     batches of that epoch trained
    batches   batches trained in all
    records   records trained in all, over every rank
    ended     the epoch's batches are all trained (its end, validation and scheduler, is not done)
    label     the length of the last trained point (see the module's docstring)
    stopped   loop.stop() was called: the epoch in progress (or ended) is the last; optional, a
              checkpoint of a dlx without it resumes as False
    body_done the epoch has ended and the script's code after its batch loop has run too (a
              checkpoint request on the epoch's last batch, taken at its end): a resumed run
              does the epoch's end at once, without its body; optional (False)
    torch_seed  rank 0's torch.initial_seed() when the run that saved it made the loop: a run
              resumed with another one did not seed torch's global generator (optional: None)
    pending   validation metrics at `label` saved but not yet reported to the searcher: a run
              resumed there reports them instead of validating again
    """
    FIELDS = ("epoch", "batch", "batches", "records", "ended", "label", "pending")  # required
    OPTIONAL = {"stopped": False, "torch_seed": None, "body_done": False}

    def __init__(self, state: Mapping | None = None):
        self.state: dict = {"format": 1, "epoch": 0, "batch": 0, "batches": 0, "records": 0,
                            "ended": False, "label": 0, "pending": None, **self.OPTIONAL}
        if state is not None:
            self.state.update({key: state[key] for key in (*self.FIELDS, *self.OPTIONAL) if key in state})

    def __getattr__(self, name: str):
        if name in Position.FIELDS:
            return self.state[name]
        if name in Position.OPTIONAL:
            return self.state.get(name, Position.OPTIONAL[name])
        raise AttributeError(name)

    def set(self, **values) -> None:
        for key, value in values.items():
            if key not in self.FIELDS and key not in self.OPTIONAL:
                raise KeyError(key)
            self.state[key] = value

    def __repr__(self) -> str:
        return f"Position({self.state})"

    def train_batch(self, unit: Unit, records: int, target: int) -> int:
        """Counts one more batch of `records` records (over all ranks) and labels it: its length
        in `unit`, a records count clamped to `target` (> 0) when the batch reaches it."""
        before = self.records
        self.set(batch=self.batch + 1, batches=self.batches + 1, records=before + records)
        if unit is Unit.BATCHES:
            label = self.batches
        elif unit is Unit.RECORDS:
            label = target if 0 < target and before < target <= self.records else self.records
        else:
            label = self.epoch + 1
        self.set(label=label)
        return label

    def end_epoch(self, unit: Unit) -> int:
        """The epoch's end is done: the next epoch starts. Returns the label of this point."""
        self.set(epoch=self.epoch + 1, batch=0, ended=False, body_done=False)
        if unit is Unit.EPOCHS:
            self.set(label=self.epoch)
        return self.label

    def reached(self, unit: Unit, target: int) -> bool:
        """Whether the searcher's target (> 0) is reached at this point."""
        if target <= 0:
            return False
        if unit is Unit.EPOCHS:
            return not self.batch and self.epoch >= target
        return self.label >= target
