# SPDX-License-Identifier: Apache-2.0
"""det.core.init(): the Core API's contexts over this process's dlx trial. Leaving the block:
after Slurm's notice (preemption, the time limit) the process exits with dlx's requeue code once
the last checkpoint is durable, so that Slurm runs the trial again and it resumes from that
checkpoint (get_cluster_info().latest_checkpoint); otherwise the trial is finished as the searcher
said (completed, stopped, or paused for a later promotion). An exception leaves the trial as it
is: dlx-launch records the crash and the experiment's max_restarts decide."""
from __future__ import annotations

import sys
from typing import Any, Optional

import dlx
from dlx._exit import leave

from .._session import session as current_session
from .._unsupported import RefusesUnknownAttributes
from ._checkpoint import CheckpointContext
from ._distributed import DistributedContext, DummyDistributedContext
from ._searcher import PreemptContext, PreemptMode, SearcherContext
from ._train import TrainContext


class Context(RefusesUnknownAttributes):
    def __init__(self, distributed: Optional[DistributedContext] = None,
                 preempt_mode: PreemptMode = PreemptMode.WorkersAskChief) -> None:
        self._session = current_session()
        self.distributed = distributed or DummyDistributedContext()
        is_chief = self.distributed.rank == 0
        self.train = TrainContext(self._session, is_chief)
        self.checkpoint = CheckpointContext(self._session, self.distributed)
        self.preempt = PreemptContext(self._session, self.distributed, preempt_mode)
        self.searcher = SearcherContext(self._session, self.distributed, self.train)
        self.profiler = _Profiler()

    def __enter__(self) -> "Context":
        return self

    def __exit__(self, kind: Any, value: Any, traceback: Any) -> bool:
        if kind is not None:
            return False
        self.close()
        return False

    def close(self) -> None:
        session = self._session
        trial = session.trial
        if not trial.in_trial:
            return
        if session.signalled and session.decision not in ("stop", "pause", "complete"):
            # The chief stored the checkpoint (store_path is the chief's); every rank leaves with
            # dlx's requeue protocol at that step, the others after noting it as saved (their
            # part of it is nothing: dlx saves the chief's tensors).
            step = session.last_stored_step
            if self.distributed.size > 1:
                step = self.distributed.broadcast(step)
                if step is not None and session.last_stored_step != step:
                    trial.save_checkpoint(step, {})
            if step is None:
                print("determined: preempted before any checkpoint was stored: the requeued trial starts over",
                      file=sys.stderr, flush=True)
                code = dlx.REQUEUE_EXIT_CODE
            else:
                code = trial.checkpoint_and_exit(step)
            trial.close()
            leave(code)  # os._exit with a torch.distributed group: a requeue must not abort at exit
        trial.finish()


class _Profiler:
    """Determined's profiler switch: dlx records no profiles (system metrics: docs/determined.md)."""

    def on(self, *args: Any, **kwargs: Any) -> None:
        pass

    def off(self, *args: Any, **kwargs: Any) -> None:
        pass


def init(*, distributed: Optional[DistributedContext] = None, checkpoint_storage: Any = None,
         preempt_mode: PreemptMode = PreemptMode.WorkersAskChief, tensorboard_mode: Any = None,
         **_: Any) -> Context:
    """The Core API's Context for this trial (a context manager). `checkpoint_storage` is the
    experiment's checkpoint directory under dlx (a storage given here is not used)."""
    return Context(distributed, preempt_mode)


__all__ = ["Context", "init"]
