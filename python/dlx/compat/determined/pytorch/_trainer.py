# SPDX-License-Identifier: Apache-2.0
"""Determined's Trainer API (0.27+): `with det.pytorch.init() as context:` then
`det.pytorch.Trainer(trial, context).fit(max_length=...)`, run by the same loop as
`entrypoint: model_def:MyTrial` (exec/harness.py)."""
from __future__ import annotations

import contextlib
from typing import Any, Iterator, Optional

import dlx

from .._session import session
from .._unsupported import RefusesUnknownAttributes
from ._trial import PyTorchTrial


class TrainUnit:
    def __init__(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{type(self).__name__}({value!r}): give a whole number of 1 or more")
        self.value = value

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.value})"


class Batch(TrainUnit):
    pass


class Epoch(TrainUnit):
    pass


class Record(TrainUnit):
    pass


@contextlib.contextmanager
def init(*, hparams: Any = None, exp_conf: Any = None, distributed: Any = None,
         **_: Any) -> Iterator[Any]:
    """The PyTorchTrialContext of this trial (its hyperparameters are the trial's: `hparams`
    given here are not used under dlx)."""
    from ..exec.harness import new_context

    yield new_context()


class Trainer(RefusesUnknownAttributes):
    def __init__(self, trial: PyTorchTrial, context: Any = None) -> None:
        self._trial = trial
        self._context = context if context is not None else getattr(trial, "context", None)
        if self._context is None:
            raise dlx.ConfigError("det.pytorch.Trainer(trial, context): give the context of det.pytorch.init()")

    def fit(self, checkpoint_period: Optional[TrainUnit] = None, validation_period: Optional[TrainUnit] = None,
            max_length: Optional[TrainUnit] = None, reporting_period: Optional[TrainUnit] = None,
            latest_checkpoint: Optional[str] = None, step_zero_validation: bool = False,
            test_mode: bool = False, **_: Any) -> None:
        """Trains to the searcher's max_length (the experiment's, which a trial under a searcher
        must follow), else to `max_length` given in epochs. Validation runs on
        `validation_period` (Batch, Record or Epoch; without one at every epoch's end) and at the
        searcher's targets; checkpoints on the experiment's checkpoint.period and Slurm's notice;
        `latest_checkpoint` is the loop's own resume point under dlx."""
        from ..exec.harness import Period, train

        period = None
        if validation_period is not None:
            if not isinstance(validation_period, TrainUnit):
                raise dlx.ConfigError(f"det.pytorch.Trainer.fit(validation_period={validation_period!r}): give "
                                      "det.pytorch.Batch(N), Record(N) or Epoch(N)")
            unit = {Batch: "batches", Record: "records", Epoch: "epochs"}[type(validation_period)]
            period = Period(unit, validation_period.value)

        max_epochs = None
        if not session().trial.target_length:
            if isinstance(max_length, Epoch):
                max_epochs = max_length.value
            else:
                raise dlx.ConfigError(
                    f"det.pytorch.Trainer.fit(max_length={max_length!r}): without searcher.max_length in the "
                    "experiment, dlx's loop trains whole epochs: give max_length=det.pytorch.Epoch(N), or set "
                    "searcher.max_length (in batches, records or epochs)")
        train(self._trial, self._context, max_epochs, period)
