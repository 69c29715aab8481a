# SPDX-License-Identifier: Apache-2.0
"""TrainContext: metrics into the trial's record (dlx.Trial.report_training/report_validation).
A validation at the searcher's target length asks the searcher (ASHA, PBT...) what comes next;
searcher.operations() acts on that answer."""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional

from .._session import Session
from .._unsupported import RefusesUnknownAttributes


def _numbers(metrics: Dict[str, Any], what: str) -> Dict[str, float]:
    """The metrics dlx records: numbers (bools and non-numbers are left out, as Determined keeps
    them only in its database)."""
    if not isinstance(metrics, dict):
        raise TypeError(f"report_{what}_metrics: metrics must be a dict of name -> number, not "
                        f"{type(metrics).__name__}")
    out = {}
    for name, value in metrics.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            try:
                value = float(value)  # numpy and 0-d torch scalars
            except (TypeError, ValueError):
                continue
        out[str(name)] = float(value)
    return out


class TrainContext(RefusesUnknownAttributes):
    def __init__(self, session: Session, is_chief: bool) -> None:
        self._session = session
        self._is_chief = is_chief
        self._best: Optional[float] = None

    def report_training_metrics(self, steps_completed: int, metrics: Dict[str, Any],
                                batch_metrics: Optional[List[Dict[str, Any]]] = None) -> None:
        values = _numbers(metrics, "training")
        self._session.last_reported_step = int(steps_completed)
        if values:
            self._session.trial.report_training(int(steps_completed), values)

    def report_validation_metrics(self, steps_completed: int, metrics: Dict[str, Any]) -> None:
        values = _numbers(metrics, "validation")
        step = int(steps_completed)
        self._session.last_reported_step = step
        if not values:
            return
        target = self._session.trial_target()
        decision = self._session.trial.report_validation(step, values)
        if target and step >= target:  # the searcher was asked (a validation at or past its target)
            self._session.decision, self._session.decision_length = decision, target
            # Determined 0.38's way to stop or pause a trial: should_preempt() turns true.
            if decision in ("stop", "pause"):
                self._session.preempted = True
        metric = self._session.searcher_metric
        if metric in values and not math.isnan(values[metric]):
            better = self._best is None or (values[metric] < self._best if self._session.smaller_is_better
                                            else values[metric] > self._best)
            if better:
                self._best = values[metric]

    def report_metrics(self, group: str, steps_completed: int, metrics: Dict[str, Any]) -> None:
        """Determined 0.26+: a named group; "training" and "validation" are dlx's two tables,
        other groups go into the training table with the group's name as a prefix."""
        if group == "training":
            self.report_training_metrics(steps_completed, metrics)
        elif group == "validation":
            self.report_validation_metrics(steps_completed, metrics)
        else:
            self.report_training_metrics(steps_completed, {f"{group}/{k}": v for k, v in metrics.items()})

    def report_progress(self, progress: float) -> None:
        """Progress is what dlx status computes from the record: nothing to send."""

    def report_early_exit(self, reason: Any) -> None:
        """Determined's way to end a trial early: the trial's record says so when it ends."""

    def set_status(self, status: str) -> None:
        pass

    def upload_tensorboard_files(self, *args: Any, **kwargs: Any) -> None:
        """dlx export --tensorboard writes TensorBoard files from the record (docs/reading-results.md)."""

    def get_experiment_best_validation(self) -> Optional[float]:
        """The best searcher metric this trial has validated (dlx keeps no experiment-wide best in
        the trial's process; `dlx status` shows it)."""
        return self._best
