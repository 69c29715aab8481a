# SPDX-License-Identifier: Apache-2.0
"""det.get_cluster_info(): the trial's hyperparameters, ids and the checkpoint to resume from."""
from __future__ import annotations

import os
from typing import Any, Dict, Optional

from ._session import frozen_experiment, session
from ._unsupported import RefusesUnknownAttributes


class TrialInfo(RefusesUnknownAttributes):
    def __init__(self, trial_id: int, hparams: Dict[str, Any], experiment_id: str, trial_run_id: int,
                 config: Dict[str, Any]) -> None:
        self.trial_id = trial_id
        self.hparams = hparams
        self.experiment_id = experiment_id
        self.trial_run_id = trial_run_id
        self._config = config
        self.user_data: Dict[str, Any] = {}  # Determined's free-form `data` is not kept by dlx

    @property
    def config(self) -> Dict[str, Any]:
        return self._config


class ClusterInfo(RefusesUnknownAttributes):
    def __init__(self, trial: TrialInfo, latest_checkpoint: Optional[str], rank: int) -> None:
        self.trial = trial
        self.latest_checkpoint = latest_checkpoint
        self.container_rank = rank
        self.task_type = "TRIAL"
        self.master_url = ""
        self.cluster_id = "dlx"

    @property
    def user_data(self) -> Dict[str, Any]:
        return self.trial.user_data


def get_cluster_info() -> Optional[ClusterInfo]:
    """This trial's ClusterInfo; None outside a dlx trial (Determined's answer off-cluster)."""
    state = session()
    trial = state.trial
    if not trial.in_trial:
        return None
    directory = trial.experiment_dir or ""
    restarts = os.environ.get("SLURM_RESTART_COUNT", "0")
    # The trial's Hparams (a dict) itself: its reads and defaults are checked against the
    # experiment's names as dlx.Trial.hparam's are (typos warned of in the trial log).
    info = TrialInfo(trial_id=trial.id, hparams=trial.hparams,
                     experiment_id=os.path.basename(directory.rstrip("/")),
                     trial_run_id=int(restarts) if restarts.isdigit() else 0,
                     config=frozen_experiment(directory))
    return ClusterInfo(info, latest_checkpoint_path(state), trial.rank)


def latest_checkpoint_path(state: Any) -> Optional[str]:
    """The checkpoint this trial resumes from, by its path: dlx-launch's DLX_LATEST_CHECKPOINT (the
    trial's newest valid checkpoint, or the one the searcher starts it from), so that asking
    costs no read; the checkpoint loaded (and verified) only without dlx-launch. restore_path()
    and the PyTorchTrial loop load it when they use it."""
    named = os.environ.get("DLX_LATEST_CHECKPOINT")
    if named is not None:
        return named or None
    latest = state.latest_checkpoint()
    return latest.path if latest is not None else None
