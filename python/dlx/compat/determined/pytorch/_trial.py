# SPDX-License-Identifier: Apache-2.0
"""PyTorchTrial, the class a Determined model definition subclasses, and PyTorchCallback."""
from __future__ import annotations

from typing import Any, Dict, Union

from ._context import PyTorchTrialContext
from ._reducer import Reducer


class PyTorchCallback:
    """Hooks the harness calls; state_dict/load_state_dict are saved with each checkpoint."""

    def on_training_start(self) -> None:
        pass

    def on_training_epoch_start(self, epoch_idx: int) -> None:
        pass

    def on_training_epoch_end(self, epoch_idx: int) -> None:
        pass

    def on_validation_start(self) -> None:
        pass

    def on_validation_end(self, metrics: Dict[str, Any]) -> None:
        pass

    def on_checkpoint_save_start(self, checkpoint: Dict[str, Any]) -> None:
        pass

    def on_trial_shutdown(self) -> None:
        pass

    def state_dict(self) -> Dict[str, Any]:
        return {}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        pass


class PyTorchTrial:
    trial_context_class = PyTorchTrialContext

    def __init__(self, context: PyTorchTrialContext) -> None:
        pass

    def build_training_data_loader(self) -> Any:
        raise NotImplementedError("PyTorchTrial.build_training_data_loader() must return a det.pytorch.DataLoader")

    def build_validation_data_loader(self) -> Any:
        raise NotImplementedError("PyTorchTrial.build_validation_data_loader() must return a det.pytorch.DataLoader")

    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> Union[Any, Dict[str, Any]]:
        raise NotImplementedError("PyTorchTrial.train_batch() must return a loss tensor or a dict of metrics")

    def build_callbacks(self) -> Dict[str, PyTorchCallback]:
        return {}

    def evaluation_reducer(self) -> Union[Reducer, Dict[str, Reducer]]:
        """How evaluate_batch's metrics are reduced over the batches of every rank: AVG (weighted
        by the batches' records), SUM, MAX or MIN, for all of them or by name (AVG for a name
        the dict lacks)."""
        return Reducer.AVG

    def get_batch_length(self, batch: Any) -> int:
        """Records in a batch (for lengths in records): the first tensor's first dimension."""
        import torch

        if isinstance(batch, torch.Tensor):
            return len(batch)
        if isinstance(batch, (list, tuple)) and batch:
            return self.get_batch_length(batch[0])
        if isinstance(batch, dict) and batch:
            return self.get_batch_length(next(iter(batch.values())))
        raise TypeError("PyTorchTrial.get_batch_length(): cannot tell the records of this batch; override it")
