# SPDX-License-Identifier: Apache-2.0
"""Runs a Determined PyTorchTrial under dlx-launch: `python3 -m determined.exec.harness
model_def:MyTrial` (what `entrypoint: model_def:MyTrial` becomes). The training loop is
dlx.torch.Loop's: the searcher's lengths in batches, records or epochs, validation at the end of
every epoch and at the searcher's targets, checkpoints on the experiment's period and on Slurm's
notice (exit 85, requeue, bit-exact resume of models, optimizers, schedulers, scalers, callbacks,
every rank's RNG and the DataLoader's position), ASHA/PBT decisions between batches."""
from __future__ import annotations

import argparse
import importlib
import inspect
import math
import os
import random
import sys
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import dlx
import dlx.torch
from dlx._exit import leave
import numpy
import torch

from .._session import frozen_experiment, session
from ..core._distributed import DistributedContext, DummyDistributedContext
from ..pytorch._context import PyTorchTrialContext
from ..pytorch._data import DataLoader
from ..pytorch._reducer import Reducer, reduce_values, reduced
from ..pytorch._trial import PyTorchTrial


def trial_class(spec: str) -> type:
    module_name, _, class_name = spec.partition(":")
    if not module_name or not class_name:
        raise dlx.ConfigError(f"determined: '{spec}' is not module:Class (e.g. model_def:MNistTrial)")
    sys.path.insert(0, os.getcwd())
    module = importlib.import_module(module_name)
    found = getattr(module, class_name, None)
    if not (isinstance(found, type) and issubclass(found, PyTorchTrial)):
        raise dlx.ConfigError(f"determined: {spec} is not a det.pytorch.PyTorchTrial subclass (dlx runs "
                              "PyTorchTrial; TensorFlow/Keras and DeepSpeed trials are not supported)")
    return found


def distributed_context() -> DistributedContext:
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return DummyDistributedContext()
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    return DistributedContext.from_torch_distributed()


def loader_of(built: Any, distributed: DistributedContext, seed: int) -> Any:
    if isinstance(built, DataLoader):
        return built.get_data_loader(distributed.rank, distributed.size, seed)
    return built  # a torch DataLoader (or any iterable of batches) as the trial built it


def numbers(metrics: Any) -> Dict[str, float]:
    if isinstance(metrics, torch.Tensor):
        metrics = {"loss": metrics}
    out = {}
    for name, value in dict(metrics or {}).items():
        try:
            out[str(name)] = float(value.item() if isinstance(value, torch.Tensor) else value)
        except (TypeError, ValueError):
            continue
    return out


class Validation:
    """evaluate_batch over the validation loader, each metric averaged over batches (weighted by
    their records) and across ranks, or summed, or its maximum or minimum as the trial's
    evaluation_reducer() says; or evaluate_full_dataset. Then the wrapped reducers
    (pytorch/_reducer.py): the validation ones add their metrics; the training ones end their
    window here and are reported as training metrics at this step."""

    def __init__(self, trial: PyTorchTrial, context: Any, loader: Any, callbacks: Dict[str, Any],
                 loop: Any) -> None:
        self.trial, self.context, self.loader, self.callbacks = trial, context, loader, callbacks
        self.loop = loop

    def __call__(self) -> Dict[str, float]:
        # The context's place in training, as the batch loop left it: a run resumed at an
        # epoch's end (requeued on its last batch) validates without running the epoch's body.
        self.context._epoch_index = self.loop.epoch - 1
        if self.context._epoch_len is not None:  # train() counts batches over epochs then
            self.context._batch_index = max(self.loop.position.batches - 1, 0)
        # The training reducers' window ends here; the validation ones' starts (a reducer that is
        # both gathers its training values until now, its validation values from now).
        allgather = self.context.distributed.allgather
        wrapped = self.context._reducers
        training = numbers(reduced([w for w in wrapped if w.for_training], allgather))
        if training:
            self.loop.trial.report_training(self.loop.step, training)
        for one in wrapped:
            if one.for_validation:
                one.reducer.reset()
        for callback in self.callbacks.values():
            callback.on_validation_start()
        for model in self.context.models:
            model.eval()
        with torch.no_grad():
            if type(self.trial).__dict__.get("evaluate_full_dataset") is not None:
                metrics = numbers(self.trial.evaluate_full_dataset(self.loader))
            else:
                metrics = self._batches()
        for model in self.context.models:
            model.train()
        for name, value in numbers(reduced([w for w in wrapped if w.for_validation], allgather)).items():
            if name in metrics:
                raise dlx.ConfigError(f"determined: the validation metric {name!r} comes both from "
                                      f"evaluate_batch (or evaluate_full_dataset) and from a reducer: "
                                      f"rename one")
            metrics[name] = value
        for callback in self.callbacks.values():
            callback.on_validation_end(metrics)
        if self.context._stop_requested:  # an early stop decided on these metrics
            self.loop.stop()
        return metrics

    def _batches(self) -> Dict[str, float]:
        values: Dict[str, List[float]] = {}
        weights: Dict[str, List[float]] = {}
        takes_index = "batch_idx" in inspect.signature(self.trial.evaluate_batch).parameters
        for index, batch in enumerate(self.loader):
            batch = self.context._batch_to_device(batch)
            size = self.trial.get_batch_length(batch)
            result = self.trial.evaluate_batch(batch, batch_idx=index) if takes_index else self.trial.evaluate_batch(batch)
            for name, value in numbers(result).items():
                values.setdefault(name, []).append(value)
                weights.setdefault(name, []).append(float(size))
        gathered = self.context.distributed.allgather((values, weights))
        names = sorted({name for part, _ in gathered for name in part})
        how = self.trial.evaluation_reducer()
        metrics = {}
        for name in names:
            reducer = how.get(name, Reducer.AVG) if isinstance(how, dict) else how
            if not isinstance(reducer, Reducer):
                raise dlx.ConfigError(f"determined: evaluation_reducer() gives {reducer!r} for {name!r}: "
                                      f"give a det.pytorch.Reducer (AVG, SUM, MAX, MIN), or a dict of them")
            metrics[name] = reduce_values(reducer, [v for part, _ in gathered for v in part.get(name, [])],
                                          [w for _, part in gathered for w in part.get(name, [])])
        return metrics


def new_context(cls: type = PyTorchTrialContext) -> Any:
    """The trial's PyTorchTrialContext, after seeding Python's, NumPy's and PyTorch's generators
    from the experiment's seed and the trial id (as Determined does before the trial is built)."""
    trial = session().trial  # first: a ConfigError from here on ends the trial at once (exit 78)
    distributed = distributed_context()
    config = frozen_experiment(trial.experiment_dir)
    experiment_id = os.path.basename((trial.experiment_dir or "").rstrip("/"))
    seed = (config.get("seed") if isinstance(config.get("seed"), int) else 0) + trial.id
    random.seed(seed)
    numpy.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    context = cls(trial.hparams, config, trial.id, experiment_id, distributed)
    context._seed = seed
    return context


class Period(NamedTuple):
    """A length in Determined's units: min_validation_period: {batches: 100}, or
    Trainer.fit(validation_period=Batch(100))."""
    unit: str  # batches, records or epochs
    amount: int

    @staticmethod
    def parse(text: str) -> "Period":
        unit, _, amount = text.partition(":")
        if unit not in ("batches", "records", "epochs") or not amount.isdigit() or int(amount) < 1:
            raise dlx.ConfigError(f"determined: the validation period {text!r} is not batches:N, records:N or "
                                  "epochs:N with N >= 1")
        return Period(unit, int(amount))


def validation_schedule(period: Optional[Period], context: Any) -> Dict[str, Optional[int]]:
    """Loop.epochs()'s validate_every and validate_every_batches for a period. Without one,
    every epoch's end (and the searcher's targets, always)."""
    if period is None:
        return {"validate_every": 1, "validate_every_batches": None}
    if period.unit == "epochs":
        return {"validate_every": period.amount, "validate_every_batches": None}
    batches = period.amount
    if period.unit == "records":  # whole batches of the global batch size, rounded up (Determined's rule)
        size = context.get_global_batch_size()
        batches = max(1, -(-period.amount // size))
    return {"validate_every": None, "validate_every_batches": batches}


def train(user: PyTorchTrial, context: Any, max_epochs: Optional[int] = None,
          validation_period: Optional[Period] = None) -> None:
    """The trial's training loop (dlx.torch.Loop): until the searcher's length, or `max_epochs`
    without one, validating on `validation_period` (else at every epoch's end) and at the
    searcher's targets; the trial is finished when it ends (or exits 85 on Slurm's notice)."""
    trial = session().trial
    distributed = context.distributed
    train_loader = loader_of(user.build_training_data_loader(), distributed, context._seed)
    validation_loader = loader_of(user.build_validation_data_loader(), distributed, context._seed)
    callbacks = user.build_callbacks() or {}
    objects = dict(context._objects())
    for name, callback in callbacks.items():
        objects[f"callback_{name}"] = callback
    loop = dlx.torch.Loop(trial, train_loader, state=objects)
    loop._tell_own_counts = False  # batch_idx below counts with loop.batch, right in a resumed epoch
    try:
        context._epoch_len = len(loop)
    except TypeError:
        context._epoch_len = None
    validate = Validation(user, context, validation_loader, callbacks, loop)
    for callback in callbacks.values():
        callback.on_training_start()
    for epoch in loop.epochs(max_epochs, validate=validate, **validation_schedule(validation_period, context)):
        context._epoch_index = epoch - 1
        for callback in callbacks.values():
            callback.on_training_epoch_start(epoch - 1)
        for batch in loop:
            index = (epoch - 1) * (context._epoch_len or 0) + loop.batch - 1
            context._batch_start(index)
            metrics = numbers(user.train_batch(context._batch_to_device(batch), epoch_idx=epoch - 1, batch_idx=index))
            context._batch_end(index)
            if metrics and not any(math.isnan(v) for v in metrics.values()):
                trial.report_training(loop.step, metrics)
            if context._stop_requested:  # set_stop_requested(True): this epoch ends here, the last
                loop.stop(now=True)
        context._epoch_end(epoch - 1)
        for callback in callbacks.values():
            callback.on_training_epoch_end(epoch - 1)
    for callback in callbacks.values():
        callback.on_trial_shutdown()


def run(spec: str, validation_period: Optional[Period] = None, aggregation_frequency: int = 1) -> int:
    session()  # first: a ConfigError from here on ends the trial at once (exit 78)
    cls = trial_class(spec)
    context = new_context(cls.trial_context_class)
    context._aggregation = aggregation_frequency
    train(cls(context), context, validation_period=validation_period)
    return 0


def arguments(argv: Tuple[str, ...]) -> argparse.Namespace:
    """What dlx's config makes of `entrypoint: module:Class` and the Determined keys the loop
    follows: min_validation_period and optimizations.aggregation_frequency."""
    parser = argparse.ArgumentParser(prog="python3 -m determined.exec.harness",
                                     description="Runs a Determined PyTorchTrial under dlx-launch.")
    parser.add_argument("trial", metavar="module:TrialClass")
    parser.add_argument("--min-validation-period", type=Period.parse, metavar="UNIT:N",
                        help="validate every N batches, records or epochs (else at every epoch's end)")
    parser.add_argument("--aggregation-frequency", type=int, default=1, metavar="N",
                        help="step the optimizers on every N-th batch, the gradients of N batches averaged")
    return parser.parse_args(argv)


def main(argv: Tuple[str, ...]) -> int:
    options = arguments(argv)
    if options.aggregation_frequency < 1:
        raise dlx.ConfigError(f"determined: aggregation_frequency is {options.aggregation_frequency}; give 1 or more")
    return run(options.trial, options.min_validation_period, options.aggregation_frequency)


if __name__ == "__main__":
    code = main(tuple(sys.argv[1:]))
    # The trial is finished and the harness owns the process: close the trial (its record
    # flushed) and leave without the interpreter's shutdown when torch.distributed is up
    # (dlx/_exit.py: torch 1.13 can deadlock or abort there).
    session().trial.close()
    leave(code)
