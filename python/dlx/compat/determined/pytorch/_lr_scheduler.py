# SPDX-License-Identifier: Apache-2.0
"""LRScheduler: a torch scheduler and when the harness steps it."""
from __future__ import annotations

import enum
from typing import Any


class LRScheduler:
    class StepMode(enum.Enum):
        STEP_EVERY_EPOCH = 1
        STEP_EVERY_BATCH = 2
        MANUAL_STEP = 3
        STEP_EVERY_OPTIMIZER_STEP = 4

    def __init__(self, scheduler: Any, step_mode: "LRScheduler.StepMode", frequency: int = 1) -> None:
        if not isinstance(step_mode, LRScheduler.StepMode):
            raise TypeError(f"LRScheduler: step_mode must be an LRScheduler.StepMode, not {step_mode!r}")
        if frequency < 1:
            raise ValueError(f"LRScheduler: frequency must be 1 or more, not {frequency}")
        self._scheduler = scheduler
        self._step_mode = step_mode
        self._frequency = frequency
        self._steps = 0  # optimizer steps seen (STEP_EVERY_OPTIMIZER_STEP)

    def step(self, *args: Any, **kwargs: Any) -> None:
        self._scheduler.step(*args, **kwargs)

    def get_last_lr(self) -> Any:
        return self._scheduler.get_last_lr()

    def state_dict(self) -> dict:
        return {"scheduler": self._scheduler.state_dict(), "optimizer_steps": self._steps}

    def load_state_dict(self, state: dict) -> None:
        self._scheduler.load_state_dict(state["scheduler"])
        self._steps = int(state["optimizer_steps"])
