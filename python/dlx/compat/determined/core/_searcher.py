# SPDX-License-Identifier: Apache-2.0
"""SearcherContext and PreemptContext. An operation is the searcher's next target length (dlx's
target_length, in the experiment's max_length unit); the validation reported at (or past) that
length asks dlx's searcher, and its answer decides: "train" yields the next operation (an ASHA
promotion, a longer PBT round); "stop", "pause" and "complete" end operations(), and after a stop
or a pause should_preempt() is true (Determined 0.38's way to end a trial early), so that the
trainer checkpoints and returns (a paused trial is resumed by a later task).
should_preempt() is also true once Slurm's notice arrives (preemption, the time limit: SIGTERM,
SIGUSR1/2), agreed by every rank."""
from __future__ import annotations

import enum
import math
import os
from typing import Any, Iterator

import dlx

from .._session import Session
from .._unsupported import RefusesUnknownAttributes
from ._distributed import DistributedContext
from ._train import TrainContext


class SearcherMode(enum.Enum):
    WorkersAskChief = "WORKERS_ASK_CHIEF"
    ChiefOnly = "CHIEF_ONLY"


class PreemptMode(enum.Enum):
    WorkersAskChief = "WORKERS_ASK_CHIEF"
    ChiefOnly = "CHIEF_ONLY"
    ExplicitWorkers = "EXPLICIT_WORKERS"


class Unit(enum.Enum):
    EPOCHS = "EPOCHS"
    RECORDS = "RECORDS"
    BATCHES = "BATCHES"


class SearcherOperation(RefusesUnknownAttributes):
    def __init__(self, context: "SearcherContext", length: int) -> None:
        self._context = context
        self.length = length
        self._completed = False

    def report_progress(self, length: float) -> None:
        """dlx status computes progress from the record: nothing to send."""

    def report_completed(self, searcher_metric: Any) -> None:
        """The operation's result. When no validation with the searcher's metric was reported at
        this length, it is reported now (as the experiment's searcher metric)."""
        session = self._context._session
        if session.decision_length != self.length:
            value = float(searcher_metric)
            if math.isnan(value):
                raise dlx.ConfigError(f"determined: report_completed({searcher_metric!r}) at length {self.length}: "
                                      "the searcher metric is not a number")
            self._context._train.report_validation_metrics(self.length, {session.searcher_metric: value})
        self._completed = True


class SearcherContext(RefusesUnknownAttributes):
    def __init__(self, session: Session, distributed: DistributedContext, train: TrainContext) -> None:
        self._session = session
        self._distributed = distributed
        self._train = train

    def operations(self, searcher_mode: SearcherMode = SearcherMode.WorkersAskChief,
                   auto_ack: bool = True) -> Iterator[SearcherOperation]:
        session = self._session
        while True:
            length = session.trial_target()
            if length <= 0:
                raise dlx.ConfigError("determined: searcher.operations() needs the searcher's max_length (set "
                                      "searcher.max_length in the experiment)")
            if session.decision != "train" or (session.decision_length is not None and session.decision_length >= length):
                return  # the searcher gave no longer target after the last one
            operation = SearcherOperation(self, length)
            yield operation
            if not operation._completed:
                raise dlx.ConfigError(f"determined: the operation of length {length} ended without "
                                      "op.report_completed(searcher_metric)")
            if session.decision != "train":
                return  # stopped, paused (should_preempt() is now true) or complete

    def acknowledge_out_of_ops(self) -> None:
        pass

    def get_configured_units(self) -> Unit:
        unit = os.environ.get("DLX_LENGTH_UNIT", "batches").upper()
        return Unit[unit] if unit in Unit.__members__ else Unit.BATCHES


class PreemptContext(RefusesUnknownAttributes):
    def __init__(self, session: Session, distributed: DistributedContext,
                 mode: PreemptMode = PreemptMode.WorkersAskChief) -> None:
        self._session = session
        self._distributed = distributed
        self._mode = mode

    def should_preempt(self, auto_ack: bool = True) -> bool:
        """True once Slurm's notice reached any rank, or the searcher paused the trial: the
        trainer then stores a checkpoint and returns from the init() block, which exits 85 so
        that Slurm requeues the trial. Every rank gets the same answer (a collective)."""
        session = self._session
        # (paused by the searcher, the checkpoint signal this rank got: 0 for none)
        local = (session.preempted, session.trial.checkpoint_signal())
        gathered = self._distributed.allgather(local) if self._distributed.size > 1 else [local]
        signal_number = max(signal for _, signal in gathered)
        preempt = signal_number > 0 or any(paused for paused, _ in gathered)
        if signal_number and not session.preempted:
            session.signalled = True  # Slurm's notice (on this rank or another), not the searcher
            # Rank 0 records this signal when the trial exits 85, whichever rank it reached.
            session.trial.note_checkpoint_signal(signal_number)
        session.preempted = session.preempted or preempt
        return preempt

    def acknowledge_preemption_signal(self) -> None:
        pass
