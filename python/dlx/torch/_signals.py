# SPDX-License-Identifier: Apache-2.0
"""DataLoader worker processes that do not die of a checkpoint notice.

Slurm signals every process of a job step at a requeue, a preemption or a time limit, DataLoader
worker processes included. A worker killed by SIGTERM makes its DataLoader raise in the trainer
("DataLoader worker ... is killed by signal: Terminated": PyTorch's worker handler re-raises a
SIGTERM its parent did not send), before the trainer can save. A process started while the
checkpoint signals are blocked keeps them blocked, exec included, so workers forked inside
workers_deaf() never see them: the trainer takes the notice (libdlx's handler, in any thread that
does not block it, or here when the block ends), saves, and stops its workers itself; Slurm's
final SIGKILL ends any left.
"""
from __future__ import annotations

import contextlib
import signal
from typing import Iterator

# libdlx's checkpoint signals (TrialOptions::checkpoint_signals in dlx/trial.hpp).
CHECKPOINT_SIGNALS = (signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2)


@contextlib.contextmanager
def workers_deaf() -> Iterator[None]:
    """Blocks the checkpoint signals in this thread while DataLoader workers start in it (a
    signal that comes meanwhile is delivered when the block ends)."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, CHECKPOINT_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
