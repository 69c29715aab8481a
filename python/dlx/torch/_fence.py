# SPDX-License-Identifier: Apache-2.0
"""The snapshot fence: save_state returns before libdlx has copied the optimizers' tensors.

A checkpoint's bulk is the parameters and the optimizer's moments, and nothing changes them
between one optimizer step and the next but the step itself. So save_state hands those tensors
to the library as in_background views (DLX_TENSOR_SNAPSHOT_IN_BACKGROUND) and returns; the
library copies them on its writer's thread (through its pinned pieces for CUDA tensors) while the
script loads the next batch and runs the next forward and backward pass. Every other tensor (a
module's buffers, which a forward pass updates in place; a GradScaler's scale; plain tensors) is
copied before save_state returns; copies dlx made itself (of a non-contiguous tensor, say) go to
the background too, nothing else holding them.

The fence closes the window: a step pre-hook on every saved optimizer (Optimizer.
register_step_pre_hook where PyTorch has it, else a wrapper of optimizer.step, as PyTorch's own
LR schedulers wrap it) waits for the library's copy before the step changes anything; so do the
next save_state and load_state, the trial's checkpoint_and_exit, finish and close, and
dlx.torch.wait_for_snapshot() for a script that changes such tensors some other way.

What a script changes in place inside the window anyway (an in-place edit of a parameter before
the next step, an EMA model's weights copied in for validation) would give a checkpoint of mixed
bytes. Every tensor left to the background keeps its version counter (tensor._version, which
every in-place operation advances as it is issued, before a CUDA kernel runs). A watcher thread
waits for the library's copy (the ctypes call lets go of the GIL) and notes the versions the
moment it is done; when the fence closes, a tensor whose version moved before that moment was
changed while it was being copied: the fence warns, naming it, and withdraws that checkpoint
(rank 0 deletes the file once its save is done, Trial.withdraw_checkpoint), and a requeue resumes
from the one before it, if retention kept it. A change made after the copy (a test scrambling a
model to check a load) is no change to the checkpoint and passes. The watcher reads the versions
when it next gets the GIL, at most a few milliseconds late: a change in that gap is taken for a
torn copy, the safe side.
"""
from __future__ import annotations

import atexit
import os
import threading
import types
import warnings
from typing import Any, Iterable

import torch

from .._library import ConfigError
from ..trial import Trial

_HOOKED = "_dlx_snapshot_fence"  # set on an optimizer once its step waits for the fence


def mode() -> str:
    """DLX_TORCH_SNAPSHOT: background (the default: the optimizers' tensors are copied while
    training goes on, until their next step) or before_return (everything is copied before
    save_state returns)."""
    value = os.environ.get("DLX_TORCH_SNAPSHOT", "background")
    if value not in ("background", "before_return"):
        raise ConfigError(f"dlx.torch: DLX_TORCH_SNAPSHOT is {value!r}; use 'background' (the "
                          f"optimizers' tensors are copied while training goes on, until the "
                          f"next optimizer step; the default) or 'before_return' (every tensor "
                          f"is copied before save_state returns)")
    return value


def optimizer_tensors(objects: Iterable[Any]) -> dict[int, torch.Tensor]:
    """The tensors the optimizers among `objects` change in their step (their parameters and
    every tensor of their state), by data_ptr."""
    owned: dict[int, torch.Tensor] = {}
    for value in objects:
        if not isinstance(value, torch.optim.Optimizer):
            continue
        for group in value.param_groups:
            for parameter in group["params"]:
                if parameter.numel():
                    owned[parameter.data_ptr()] = parameter
        for per_parameter in value.state.values():
            if isinstance(per_parameter, dict):
                for tensor in per_parameter.values():
                    if isinstance(tensor, torch.Tensor) and tensor.numel():
                        owned[tensor.data_ptr()] = tensor
    return owned


class _Fence:
    """The last save's background tensors: their paths and versions at the save, the watcher
    that notes their versions when the copy is done, and what must outlive the copy (the
    dlx-made copies)."""

    def __init__(self) -> None:
        self._trial: Trial | None = None
        self._step = 0
        self._watched: list[tuple[str, torch.Tensor, int]] = []
        self._keep: list[torch.Tensor] = []
        self._watcher: threading.Thread | None = None
        self._versions_when_copied: list[int] = []

    def arm(self, trial: Trial, step: int, watched: list[tuple[str, torch.Tensor, int]],
            keep: list[torch.Tensor]) -> None:
        self.close()
        self._trial, self._step, self._watched, self._keep = trial, step, watched, keep
        self._versions_when_copied = [version for _, _, version in watched]
        if self.close not in trial._watchers:
            trial._watchers.append(self.close)  # the watcher is done before the handle goes
        self._watcher = threading.Thread(target=self._watch, name="dlx-snapshot-watcher",
                                         daemon=True)
        self._watcher.start()

    def _watch(self) -> None:
        assert self._trial is not None
        try:
            self._trial.wait_for_snapshot()
        finally:
            self._versions_when_copied = [tensor._version for _, tensor, _ in self._watched]

    def close(self) -> None:
        """Waits for the library's copy; withdraws the checkpoint if a watched tensor changed
        before the copy was done."""
        if self._watcher is None:
            return
        self._watcher.join()
        trial, step, watched = self._trial, self._step, self._watched
        self._watcher, self._trial, self._watched, self._keep = None, None, [], []
        changed = [path for (path, _, version), then in zip(watched, self._versions_when_copied)
                   if then != version]
        if changed and trial is not None:
            _withdraw(trial, step, changed)


def _withdraw(trial: Trial, step: int, changed: list[str]) -> None:
    shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
    withdrawn = trial.withdraw_checkpoint(step)
    warnings.warn(f"dlx.torch: {shown} changed in place after save_state(step={step}) while "
                  f"the library was still copying it, so that checkpoint could mix bytes from "
                  f"before and after: " +
                  ("it is withdrawn (deleted), and a requeue resumes from the one before it. "
                   if withdrawn else "it was not published. ") +
                  "Change such tensors after the optimizer's next step, or call "
                  "dlx.torch.wait_for_snapshot() first (or set DLX_TORCH_SNAPSHOT=before_return)",
                  RuntimeWarning, stacklevel=3)


FENCE = _Fence()
# A script that ends without closing its trial: the copy finishes before the interpreter frees
# the tensors it reads.
atexit.register(FENCE.close)


def hook(optimizer: torch.optim.Optimizer) -> None:
    """Makes `optimizer`'s step close the fence first (once per optimizer)."""
    if getattr(optimizer, _HOOKED, False):
        return
    if hasattr(optimizer, "register_step_pre_hook"):  # PyTorch 2.0 and later
        optimizer.register_step_pre_hook(lambda *_: FENCE.close())
    else:
        # PyTorch 1.x: a bound method in place of the instance's step, calling whatever was there
        # (an LR scheduler's counting wrapper, whose mark it keeps, so that the scheduler does not
        # take the step for overridden; a scheduler made later wraps this one in turn).
        previous = optimizer.step

        def step(self: torch.optim.Optimizer, *args: Any, **kwargs: Any) -> Any:
            FENCE.close()
            return previous(*args, **kwargs)

        if getattr(previous, "_with_counter", False):
            step._with_counter = True  # type: ignore[attr-defined]
        optimizer.step = types.MethodType(step, optimizer)  # type: ignore[method-assign]
    setattr(optimizer, _HOOKED, True)
