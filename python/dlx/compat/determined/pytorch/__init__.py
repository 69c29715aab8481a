# SPDX-License-Identifier: Apache-2.0
"""determined.pytorch on dlx: PyTorchTrial and its context, run by dlx.torch.Loop (which owns
the step, the epochs, the DataLoader's position, checkpoints, requeue and the searcher's
decisions). `entrypoint: model_def:MyTrial` runs `python3 -m determined.exec.harness
model_def:MyTrial` (docs/determined.md)."""
from __future__ import annotations

from typing import Any

from ._context import PyTorchTrialContext
from ._data import DataLoader
from ._lr_scheduler import LRScheduler
from ._reducer import MetricReducer, Reducer
from ._trainer import Batch, Epoch, Record, Trainer, TrainUnit, init
from ._trial import PyTorchCallback, PyTorchTrial

TorchData = Any  # a batch as the DataLoader yields it (a tensor, or a list, tuple or dict of them)

__all__ = ["Batch", "DataLoader", "Epoch", "LRScheduler", "MetricReducer", "PyTorchCallback", "PyTorchTrial",
           "PyTorchTrialContext", "Record", "Reducer", "TorchData", "TrainUnit", "Trainer", "init"]
