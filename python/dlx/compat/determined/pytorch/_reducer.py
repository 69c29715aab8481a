# SPDX-License-Identifier: Apache-2.0
"""Determined's metric reducers on dlx: `context.wrap_reducer(...)` (a MetricReducer, or a
function over every value the trial passed to `.update()`) and the older
`PyTorchTrial.evaluation_reducer()` (a Reducer, or one per metric name).

A wrapped reducer is reset when it is wrapped and after each reduction. Its window:
  training    the batches since the last validation: reduced when a validation begins (every
              validation ends a training window), its metrics reported as training metrics at
              that step. A requeued run starts the window again at its resume point (the values a
              reducer gathered are in no checkpoint);
  validation  one validation (evaluate_batch or evaluate_full_dataset): reset before it, reduced
              after, its metrics added to the validation's.
A reducer of both kinds has both windows in turn, as in Determined.
Each rank's per_slot_reduce() result is gathered to every rank and every rank calls
cross_slot_reduce() on the same list, so the metrics are the same on every rank (dlx.torch.Loop
asks that of validation metrics)."""
from __future__ import annotations

import abc
import enum
import itertools
import math
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

import dlx


class Reducer(enum.Enum):
    """What PyTorchTrial.evaluation_reducer() returns, for all metrics or one per name."""
    AVG = 1
    SUM = 2
    MAX = 3
    MIN = 4


def reduce_values(reducer: Reducer, values: Sequence[float], weights: Sequence[float]) -> float:
    """One metric over batches: AVG weighted by `weights` (the batches' records), or SUM, MAX,
    MIN of the values."""
    if reducer is Reducer.AVG:
        total = sum(weights)
        return sum(v * w for v, w in zip(values, weights)) / total if total else math.nan
    if not values:
        return math.nan
    if reducer is Reducer.SUM:
        return sum(values)
    return max(values) if reducer is Reducer.MAX else min(values)


class MetricReducer(metaclass=abc.ABCMeta):
    """Determined's custom reducer: the trial gathers values its own way (an update() of its
    own), per_slot_reduce() sums them up on each rank, cross_slot_reduce() makes the metric from
    every rank's result."""

    @abc.abstractmethod
    def reset(self) -> None:
        ...

    @abc.abstractmethod
    def per_slot_reduce(self) -> Any:
        ...

    @abc.abstractmethod
    def cross_slot_reduce(self, per_slot_metrics: List) -> Any:
        ...


class _FunctionReducer(MetricReducer):
    """wrap_reducer(function): update(value) keeps the values; the function gets them all, the
    ranks' interleaved back into batch order (when update() is called once a batch)."""

    def __init__(self, function: Callable[[List], Any]) -> None:
        self.function = function
        self.values: List = []

    def reset(self) -> None:
        self.values = []

    def update(self, value: Any) -> None:
        self.values.append(value)

    def per_slot_reduce(self) -> Any:
        return self.values

    def cross_slot_reduce(self, per_slot_metrics: List) -> Any:
        missing = object()
        interleaved = itertools.zip_longest(*per_slot_metrics, fillvalue=missing)
        return self.function([value for row in interleaved for value in row if value is not missing])


class Wrapped:
    """A reducer as wrap_reducer registered it."""

    def __init__(self, reducer: MetricReducer, name: Optional[str], for_training: bool,
                 for_validation: bool) -> None:
        self.reducer, self.name = reducer, name
        self.for_training, self.for_validation = for_training, for_validation

    def describe(self) -> str:
        return f"the reducer {type(self.reducer).__name__} (name={self.name!r})"

    def metrics(self, allgather: Callable[[Any], List]) -> Dict[str, float]:
        """per_slot_reduce on this rank, gathered, cross_slot_reduce: its metrics by name."""
        try:
            result = self.reducer.cross_slot_reduce(allgather(self.reducer.per_slot_reduce()))
        finally:
            self.reducer.reset()
        if self.name is not None:
            if isinstance(result, Mapping):
                raise dlx.ConfigError(f"determined: {self.describe()} returned a dict from "
                                      f"cross_slot_reduce(); with a name it returns one value (or "
                                      f"wrap it with name=None to return a dict of metrics)")
            result = {self.name: result}
        elif not isinstance(result, Mapping):
            raise dlx.ConfigError(f"determined: {self.describe()} returned a {type(result).__name__} "
                                  f"from cross_slot_reduce(); without a name it returns a dict of "
                                  f"metrics (or give wrap_reducer a name)")
        return {str(key): value for key, value in result.items()}


def wrap(reducer: Any, name: Optional[str], for_training: bool, for_validation: bool) -> Wrapped:
    if isinstance(reducer, Reducer):
        raise dlx.ConfigError(f"determined: wrap_reducer({reducer}) takes a MetricReducer or a "
                              f"function over the values; a Reducer is what "
                              f"PyTorchTrial.evaluation_reducer() returns")
    if not isinstance(reducer, MetricReducer):
        if not callable(reducer):
            raise dlx.ConfigError(f"determined: wrap_reducer takes a det.pytorch.MetricReducer or a "
                                  f"function over the values, not a {type(reducer).__name__}")
        reducer = _FunctionReducer(reducer)
    if name is not None and not isinstance(name, str):
        raise dlx.ConfigError(f"determined: wrap_reducer's name is {name!r}: give a string, or None "
                              f"for a reducer that returns a dict of metrics")
    reducer.reset()
    return Wrapped(reducer, name, bool(for_training), bool(for_validation))


def reduced(wrapped: Sequence[Wrapped], allgather: Callable[[Any], List]) -> Dict[str, float]:
    """Every reducer of `wrapped`, reduced and reset: their metrics together (a name two of them
    return is refused)."""
    metrics: Dict[str, float] = {}
    for one in wrapped:
        for name, value in one.metrics(allgather).items():
            if name in metrics:
                raise dlx.ConfigError(f"determined: two reducers return the metric {name!r}: give "
                                      f"them different names")
            metrics[name] = value
    return metrics
