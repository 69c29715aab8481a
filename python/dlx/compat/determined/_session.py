# SPDX-License-Identifier: Apache-2.0
"""The one dlx.Trial of this process, shared by get_cluster_info() and core.init(), and what
the Core API contexts learn from each other: the searcher's last decision, the checkpoint a
resume starts from (loaded once, for get_cluster_info().latest_checkpoint and restore_path)."""
from __future__ import annotations

import os
from typing import Any, Dict, Optional

import dlx


class Session:
    def __init__(self) -> None:
        self.trial = dlx.Trial()
        self.searcher_metric = os.environ.get("DLX_SEARCHER_METRIC", "") or "validation_loss"
        searcher = frozen_experiment(self.trial.experiment_dir).get("searcher") or {}
        self.smaller_is_better = bool(searcher.get("smaller_is_better", True)) if isinstance(searcher, dict) else True
        self.signalled = False
        self.decision = "train"  # the searcher's answer at the last validation at its target
        self.decision_length: Optional[int] = None
        self.preempted = False
        self.last_stored_step: Optional[int] = None
        self.last_reported_step = 0
        self._resume_loaded = False
        self.resume_checkpoint: Optional[dlx.Checkpoint] = None
        self.resume_noted = False  # a restore of the resume point told trial.h5 (core/_checkpoint.py)

    def trial_target(self) -> int:
        """The searcher's current target length (0: the experiment gives none)."""
        return self.trial.target_length

    def is_resume_point(self, storage_id: str) -> bool:
        """Whether `storage_id` is the checkpoint dlx-launch named for this run to resume from
        (DLX_LATEST_CHECKPOINT) and one of this trial's own (a PBT parent's is recorded as the
        searcher's start instead)."""
        named = os.environ.get("DLX_LATEST_CHECKPOINT") or ""
        own = self.trial.checkpoint_dir or ""
        path = os.path.abspath(storage_id)
        return bool(named) and bool(own) and path == os.path.abspath(named) and \
            os.path.dirname(path) == os.path.abspath(own)

    def latest_checkpoint(self) -> Optional[dlx.Checkpoint]:
        """The checkpoint this trial resumes from (its newest valid one, or the searcher's start
        checkpoint: a PBT parent's), verified; None on a fresh start. Loaded once (collective on
        the first call: every rank gets the file rank 0 chose)."""
        if not self._resume_loaded:
            self.resume_checkpoint = self.trial.resume()
            self._resume_loaded = True
        return self.resume_checkpoint


def frozen_experiment(directory: Optional[str]) -> Dict[str, Any]:
    """The experiment as dlx froze it at submission (experiment.yaml), or {} outside a trial."""
    if not directory:
        return {}
    import yaml  # python3-yaml

    try:
        with open(os.path.join(directory, "experiment.yaml"), encoding="utf-8") as f:
            loaded = yaml.safe_load(f)
    except OSError:
        return {}
    return loaded if isinstance(loaded, dict) else {}


_session: Optional[Session] = None


def session() -> Session:
    global _session
    if _session is None:
        _session = Session()
    return _session
