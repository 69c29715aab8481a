# SPDX-License-Identifier: Apache-2.0
"""PyTorchTrialContext: what a PyTorchTrial reads (hyperparameters, batch sizes, its experiment)
and what it hands to the harness (models, optimizers, schedulers, scalers) to train and save."""
from __future__ import annotations

import functools
import pathlib
import sys
from typing import Any, Callable, Dict, Iterator, List, Optional

import torch

import dlx

from .._unsupported import RefusesUnknownAttributes
from ..core._distributed import DistributedContext
from ._lr_scheduler import LRScheduler
from ._reducer import Wrapped, wrap


class PyTorchTrialContext(RefusesUnknownAttributes):
    def __init__(self, hparams: Dict[str, Any], config: Dict[str, Any], trial_id: int, experiment_id: str,
                 distributed: DistributedContext) -> None:
        self._hparams = hparams
        self._config = config
        self._trial_id = trial_id
        self._experiment_id = experiment_id
        self.distributed = distributed
        if torch.cuda.is_available():
            self.device = torch.device("cuda", distributed.local_rank % torch.cuda.device_count())
        else:
            self.device = torch.device("cpu")
        self.models: List[torch.nn.Module] = []
        self.optimizers: List[torch.optim.Optimizer] = []
        self.lr_schedulers: List[LRScheduler] = []
        self.scalers: List[Any] = []
        self._scheduler_of: Dict[int, List[LRScheduler]] = {}
        self._epoch_index = 0
        self._batch_index = 0
        self._epoch_len: Optional[int] = None
        self._autocast = False
        self._seed = 0  # the trial's seed (experiment seed + trial id): the loaders' shuffling
        # Gradient aggregation (Determined's optimizations.aggregation_frequency, or
        # wrap_optimizer's backward_passes_per_step): the optimizers step on every N-th batch.
        self._aggregation = 1
        self._stop_requested = False  # set_stop_requested(True): the harness ends training
        self._reducers: List[Wrapped] = []  # wrap_reducer's, reduced by the harness's validation
        self._tensorboard_logging = True
        self._said: set = set()
        self._auto_to_device = True  # experimental.disable_auto_to_device() turns it off
        self.experimental = _Experimental(self)

    # ---- what the trial reads

    def get_hparams(self) -> Dict[str, Any]:
        return self._hparams

    def get_hparam(self, name: str) -> Any:
        if name not in self._hparams:
            raise ValueError(f"determined: hyperparameter '{name}' is not defined by the experiment (it defines: "
                             f"{', '.join(self._hparams.names()) if hasattr(self._hparams, 'names') else ''})")
        return self._hparams[name]

    def get_global_batch_size(self) -> int:
        if "global_batch_size" not in self._hparams:
            raise ValueError("determined: PyTorchTrial needs the hyperparameter global_batch_size (Determined's "
                             "rule): add it to the experiment's hyperparameters")
        return int(self._hparams["global_batch_size"])

    def get_per_slot_batch_size(self) -> int:
        return max(1, self.get_global_batch_size() // self.distributed.size)

    def get_data_config(self) -> Dict[str, Any]:
        """{}: dlx does not keep Determined's free-form `data` section (pass such values as
        hyperparameters; dlx's own `data` key stages datasets: docs/config-reference.md)."""
        return {}

    def get_experiment_config(self) -> Dict[str, Any]:
        return self._config

    def get_trial_id(self) -> int:
        return self._trial_id

    def get_experiment_id(self) -> str:
        return self._experiment_id

    def set_stop_requested(self, stop_requested: bool) -> None:
        """Determined's early stop: training ends after the current batch (in train_batch or a
        callback during training) or after the current validation (in evaluate_batch, or a
        callback's on_validation_end); the last checkpoint is saved and the trial completes,
        the searcher told that it ended before its length (dlx.torch.Loop.stop())."""
        if not isinstance(stop_requested, bool):
            raise dlx.ConfigError(f"determined: set_stop_requested takes a bool, not "
                                  f"{type(stop_requested).__name__}")
        self._stop_requested = stop_requested

    def get_stop_requested(self) -> bool:
        return self._stop_requested

    # ---- metrics beyond train_batch's and evaluate_batch's

    def wrap_reducer(self, reducer: Any, name: Optional[str] = None, for_training: bool = True,
                     for_validation: bool = True) -> Any:
        """Determined's custom metric reducer (a det.pytorch.MetricReducer, returned as given, or
        a function over every value passed to the returned object's update()): reduced over
        every rank at each validation (pytorch/_reducer.py says when, for training)."""
        wrapped = wrap(reducer, name, for_training, for_validation)
        self._reducers.append(wrapped)
        return wrapped.reducer

    def get_tensorboard_path(self) -> pathlib.Path:
        """Where this rank's TensorBoard files go: the trial's directory, tensorboard/ (rank 0)
        or tensorboard/rank-<R>, created (outside a trial: ./tensorboard)."""
        from .._session import session

        experiment = session().trial.experiment_dir
        path = pathlib.Path(experiment, "trials", str(self._trial_id), "tensorboard") if experiment \
            else pathlib.Path("tensorboard")
        rank = self.distributed.get_rank()
        if rank:
            path = path / f"rank-{rank}"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def get_tensorboard_writer(self) -> Any:
        """PyTorch's SummaryWriter into get_tensorboard_path(). Without the tensorboard package
        (Debian packages none) a writer that keeps nothing, said once in the trial's log: the
        metrics the trial reports are in trial.h5, and `dlx export tensorboard` writes them."""
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:
            self._say_once("tensorboard", "determined on dlx: get_tensorboard_writer(): PyTorch's "
                           "SummaryWriter needs the tensorboard package, which this Python lacks: "
                           "what the trial writes through it is dropped (the metrics it reports "
                           "are in trial.h5, and `dlx export tensorboard` writes them as "
                           "TensorBoard files)")
            return _NoWriter()
        return SummaryWriter(log_dir=str(self.get_tensorboard_path()))

    def set_enable_tensorboard_logging(self, enable_tensorboard_logging: bool) -> None:
        self._tensorboard_logging = bool(enable_tensorboard_logging)

    def get_enable_tensorboard_logging(self) -> bool:
        """dlx writes no TensorBoard files while training (dlx export tensorboard does, from
        trial.h5): the flag is kept, and changes nothing."""
        return self._tensorboard_logging

    def _batch_to_device(self, data: Any) -> Any:
        """A batch as the harness hands it to train_batch/evaluate_batch."""
        return self.to_device(data) if self._auto_to_device else data

    def configure_apex_amp(self, *args: Any, **kwargs: Any) -> Any:
        raise dlx.ConfigError("determined on dlx: configure_apex_amp() is not supported (NVIDIA apex is "
                              "not installed with dlx): use context.autocast_forward_pass(model) and "
                              "context.wrap_scaler(torch.cuda.amp.GradScaler()), PyTorch's own AMP")

    def set_profiler(self, *args: Any, **kwargs: Any) -> None:
        """Determined's PyTorch profiler is not run; said once (dlx report shows what each trial
        used of its CPUs, memory and GPUs)."""
        self._say_once("profiler", "determined on dlx: set_profiler() is accepted and not used: "
                       "dlx runs no profiler (dlx report shows each trial's CPU, memory and GPU "
                       "use; torch.profiler works in train_batch as in any script)")

    def _say_once(self, key: str, text: str) -> None:
        if key not in self._said and self.distributed.get_rank() == 0:
            print(text, file=sys.stderr, flush=True)
        self._said.add(key)

    def current_train_epoch(self) -> int:
        return self._epoch_index

    def current_train_batch(self) -> int:
        return self._batch_index

    def is_epoch_start(self) -> bool:
        return self._epoch_len is not None and self._batch_index % self._epoch_len == 0

    def is_epoch_end(self) -> bool:
        return self._epoch_len is not None and (self._batch_index + 1) % self._epoch_len == 0

    def to_device(self, data: Any) -> Any:
        if isinstance(data, torch.Tensor):
            return data.to(self.device)
        if isinstance(data, dict):
            return {key: self.to_device(value) for key, value in data.items()}
        if isinstance(data, (list, tuple)):
            return type(data)(self.to_device(value) for value in data)
        return data

    # ---- what the trial hands over

    def wrap_model(self, model: torch.nn.Module) -> torch.nn.Module:
        model = model.to(self.device)
        if self.distributed.size > 1:
            ids = [self.device.index] if self.device.type == "cuda" else None
            model = torch.nn.parallel.DistributedDataParallel(model, device_ids=ids)
        self.models.append(model)
        return model

    def wrap_optimizer(self, optimizer: torch.optim.Optimizer, backward_passes_per_step: int = 1,
                       **kwargs: Any) -> torch.optim.Optimizer:
        if isinstance(backward_passes_per_step, bool) or not isinstance(backward_passes_per_step, int) or \
                backward_passes_per_step < 1:
            raise ValueError(f"determined: wrap_optimizer(backward_passes_per_step={backward_passes_per_step!r}): "
                             "give a whole number of 1 or more")
        if backward_passes_per_step != 1:
            if self._aggregation not in (1, backward_passes_per_step):
                raise ValueError(f"determined: wrap_optimizer(backward_passes_per_step={backward_passes_per_step}) "
                                 f"after {self._aggregation}: every optimizer of a trial aggregates alike")
            self._aggregation = backward_passes_per_step
        self.optimizers.append(optimizer)
        return optimizer

    def wrap_lr_scheduler(self, lr_scheduler: Any, step_mode: LRScheduler.StepMode,
                          frequency: int = 1) -> LRScheduler:
        wrapped = LRScheduler(lr_scheduler, step_mode, frequency)
        self.lr_schedulers.append(wrapped)
        optimizer = getattr(lr_scheduler, "optimizer", None)
        self._scheduler_of.setdefault(id(optimizer), []).append(wrapped)
        return wrapped

    def wrap_scaler(self, scaler: Any) -> Any:
        self.scalers.append(scaler)
        return scaler

    def autocast_forward_pass(self, model: torch.nn.Module) -> torch.nn.Module:
        """The model, its forward pass run under torch.autocast on the trial's device (float16 on
        a GPU, bfloat16 on a CPU: PyTorch's defaults), as Determined's AMP does."""
        self._autocast = True
        forward = model.forward
        device_type = self.device.type

        @functools.wraps(forward)
        def autocast_forward(*args: Any, **kwargs: Any) -> Any:
            with torch.autocast(device_type=device_type):
                return forward(*args, **kwargs)

        model.forward = autocast_forward  # type: ignore[method-assign]
        return model

    def backward(self, loss: torch.Tensor, gradient: Optional[torch.Tensor] = None, retain_graph: bool = False,
                 create_graph: bool = False) -> None:
        if self._aggregation > 1:
            loss = loss / self._aggregation  # the mean of the aggregated gradients, as Determined's default
        if self.scalers:
            loss = self.scalers[0].scale(loss)
        loss.backward(gradient=gradient, retain_graph=retain_graph, create_graph=create_graph)

    def step_optimizer(self, optimizer: torch.optim.Optimizer,
                       clip_grads: Optional[Callable[[Iterator[torch.nn.Parameter]], None]] = None,
                       auto_zero_grads: bool = True, scaler: Any = None) -> None:
        if not self._communicating():
            return  # gradients aggregate until the N-th batch's backward pass
        scaler = scaler or (self.scalers[0] if self.scalers else None)
        if clip_grads is not None:
            if scaler is not None:
                scaler.unscale_(optimizer)
            clip_grads((p for group in optimizer.param_groups for p in group["params"]))
        if scaler is not None:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        if auto_zero_grads:
            optimizer.zero_grad()
        for scheduler in self._scheduler_of.get(id(optimizer), []):
            if scheduler._step_mode is LRScheduler.StepMode.STEP_EVERY_OPTIMIZER_STEP:
                scheduler._steps += 1
                if scheduler._steps % scheduler._frequency == 0:
                    scheduler.step()

    # ---- the harness's bookkeeping

    def _communicating(self) -> bool:
        """Whether this batch ends an aggregation: its backward pass allreduces the gradients
        (DDP) and the optimizers step."""
        return (self._batch_index + 1) % self._aggregation == 0

    def _batch_start(self, batch_index: int) -> None:
        self._batch_index = batch_index
        if self._aggregation > 1:
            # DDP allreduces in the backward pass only where the optimizers step; the forward
            # pass reads the flag (DistributedDataParallel.no_sync's mechanism).
            for model in self.models:
                if isinstance(model, torch.nn.parallel.DistributedDataParallel):
                    model.require_backward_grad_sync = self._communicating()

    def _batch_end(self, batch_index: int) -> None:
        for scheduler in self.lr_schedulers:
            if scheduler._step_mode is LRScheduler.StepMode.STEP_EVERY_BATCH and \
                    (batch_index + 1) % scheduler._frequency == 0:
                scheduler.step()

    def _epoch_end(self, epoch_index: int) -> None:
        for scheduler in self.lr_schedulers:
            if scheduler._step_mode is LRScheduler.StepMode.STEP_EVERY_EPOCH and \
                    (epoch_index + 1) % scheduler._frequency == 0:
                scheduler.step()

    def _objects(self) -> Dict[str, Any]:
        """What a checkpoint holds, by name (dlx.torch.save_state's objects)."""
        objects: Dict[str, Any] = {}
        for kind, items in (("model", self.models), ("optimizer", self.optimizers),
                            ("lr_scheduler", self.lr_schedulers), ("scaler", self.scalers)):
            for index, item in enumerate(items):
                objects[f"{kind}_{index}"] = item
        if self._aggregation > 1:
            # A checkpoint between two batches of one aggregation holds the sums so far.
            objects["aggregated_gradients"] = _Gradients(self.models)
        return objects


class _Gradients:
    """The models' .grad tensors as a checkpoint object (by parameter position; an absent
    gradient is absent)."""

    def __init__(self, models: List[torch.nn.Module]) -> None:
        self._parameters = [p for model in models for p in model.parameters()]

    def state_dict(self) -> Dict[str, Any]:
        return {str(i): p.grad.detach().clone() for i, p in enumerate(self._parameters) if p.grad is not None}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        for i, p in enumerate(self._parameters):
            saved = state.get(str(i))
            p.grad = None if saved is None else saved.to(device=p.device, dtype=p.dtype).clone()


class _NoWriter:
    """get_tensorboard_writer()'s stand-in without the tensorboard package: every SummaryWriter
    method (add_scalar, add_image, flush, close, ...) accepts its arguments and keeps nothing."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda *args, **kwargs: None


class _Experimental:
    """context.experimental: the calls Determined's examples make there."""

    def __init__(self, context: PyTorchTrialContext) -> None:
        self._context = context

    def disable_dataset_reproducibility_checks(self) -> None:
        """Nothing to do: dlx takes a plain torch DataLoader as it is (dlx.torch.Loop keeps its
        order and position across requeues when it can: docs/sdk.md)."""

    def disable_auto_to_device(self) -> None:
        """Batches reach train_batch and evaluate_batch as the DataLoader yields them."""
        self._context._auto_to_device = False

    def use_amp(self) -> None:
        raise dlx.ConfigError("determined on dlx: context.experimental.use_amp() is not supported: use "
                              "context.autocast_forward_pass(model) and "
                              "context.wrap_scaler(torch.cuda.amp.GradScaler()) (Determined's own "
                              "replacement for it)")
