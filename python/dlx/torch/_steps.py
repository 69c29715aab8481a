# SPDX-License-Identifier: Apache-2.0
"""Where an ordinary script's optimizers step: the points between two batches at which a
checkpoint holds everything the next batch needs.

A script that accumulates gradients over several batches (the loss divided by N and backward()
on each, optimizer.step() and zero_grad() every N-th) keeps, between two of its optimizer steps,
state that no checkpoint holds: the parameters' .grad summed so far, and its own count of the
group (`for i, batch in enumerate(loop)` counts from 0 again in a resumed epoch, and a counter
of its own starts again where the script sets it). A run resumed from such a point steps with
part of the group's gradient, and differs from then on. So dlx.torch.Loop watches the step() of
the optimizers it saves (counting the calls through a wrapper on each instance, as PyTorch's LR
schedulers do; GradScaler.step(optimizer) calls it when it steps) and takes a checkpoint between
two batches only after a batch in which one of them stepped (or after the script's code that
follows an epoch's last batch, when it stepped there). A notice or a checkpoint.period that
falls between two steps waits for the next. At that point the group's gradients are consumed,
and the script's count, reset by the step, lines up with the resumed run's.

A script that steps every batch sees no difference. The rule needs the step to follow the
batch's backward() (a script that steps at the top of the next batch's body is not told apart).
A script that never steps the loop's optimizers in its batch loop (an optimizer handed to the
loop only to be saved) would wait for ever: after an epoch trained from its first batch without
a step, the watch ends and every point counts as one after a step.
"""
from __future__ import annotations

import functools
import inspect
import types
from typing import Any, Callable, Iterable


class StepWatch:
    """Counts the step() calls of `optimizers` (each watched once) and says whether the loop
    stands after one (settled)."""

    def __init__(self, optimizers: Iterable[Any]):
        self.steps = 0
        self.watching = False
        seen: set[int] = set()
        for optimizer in optimizers:
            if id(optimizer) not in seen:
                seen.add(id(optimizer))
                _count_steps(optimizer, self)
                self.watching = True
        self.batch_mark: int | None = None   # steps when the last batch was handed out
        self._epoch_mark: int | None = None   # steps when an epoch began at its first batch

    def batch_started(self) -> None:
        """A batch is handed to the script: its backward() may leave gradients to step."""
        self.batch_mark = self.steps

    def untouched_since_batch(self) -> bool:
        """Whether no optimizer stepped since the last batch was handed out (or none is
        watched: a step cannot be seen)."""
        return not self.watching or self.steps == self.batch_mark

    def epoch_started(self, at_first_batch: bool) -> None:
        self._epoch_mark = self.steps if at_first_batch else None

    def epoch_ended(self) -> None:
        """A whole epoch without a step: the optimizers are not stepped in the batch loop."""
        if self._epoch_mark is not None and self.steps == self._epoch_mark:
            self.watching = False
        self._epoch_mark = None

    def settled(self) -> bool:
        """Whether this point follows an optimizer step (or nothing was trained since the run
        began, or the watch is off): a checkpoint here misses nothing."""
        return not self.watching or self.batch_mark is None or self.steps != self.batch_mark


def _count_steps(optimizer: Any, watch: StepWatch) -> None:
    """Replaces `optimizer.step` on the instance by a wrapper that counts, then calls the step it
    replaced. The wrapper keeps what PyTorch's LR schedulers look for on it: their own wrapper's
    marks (`_with_counter`, `_wrapped_by_lr_sched`, copied), and the shape of a bound method
    (`__self__`, `__func__`) when it replaces one, so that a scheduler made after the loop can wrap
    it in turn."""
    previous: Callable[..., Any] = optimizer.step

    if inspect.ismethod(previous):
        function = previous.__func__

        def counted_method(self: Any, *args: Any, **kwargs: Any) -> Any:
            watch.steps += 1
            return function(self, *args, **kwargs)  # `self`: a deepcopy steps its own parameters
        functools.update_wrapper(counted_method, function)
        optimizer.step = types.MethodType(counted_method, optimizer)
        return

    def counted(*args: Any, **kwargs: Any) -> Any:
        watch.steps += 1
        return previous(*args, **kwargs)
    functools.update_wrapper(counted, previous)
    optimizer.step = counted
