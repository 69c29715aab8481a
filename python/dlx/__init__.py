# SPDX-License-Identifier: Apache-2.0
"""dlx from Python: hyperparameters, metrics, checkpoints, the searcher and preemption.

A binding of libdlx's C API (dlx/c_api.h) for programs that do their own communication
(PyTorch, JAX), run as ``srun dlx-launch -- python3 train.py`` (dlx-launch puts this package on
the path). A PyTorch script of epochs over a DataLoader runs as a trial through
``dlx.torch.Loop`` (resume, requeue, validation and the searcher in five lines); any PyTorch
program saves and resumes with ``dlx.torch`` (docs/sdk.md)::

    import dlx, dlx.torch
    trial = dlx.Trial()                        # rank and world size from dlx-launch
    lr = trial.hparam("learning_rate", 0.1)
    objects = {"model": model, "optimizer": optimizer, "scheduler": scheduler}
    step = dlx.torch.load_state(trial, objects) or 0     # every rank; None on a fresh start
    ...
    trial.report_training(step, loss=loss)     # rank 0 writes trials/<id>/trial.h5
    dlx.torch.save_state(trial, step, objects) # every rank; written in the background
    if trial.report_validation(step, accuracy=acc) != "train": ...   # the searcher's word
    if trial.checkpoint_requested(): ...       # this rank got SIGTERM/SIGUSR1/SIGUSR2
    trial.finish()

Without PyTorch, ``trial.save_checkpoint(step, {"name": numpy_array})`` and ``trial.resume()``
work on numpy arrays. Every failure raises dlx.Error with a message saying what to do; an error
in the trial's code or configuration is a dlx.ConfigError, which (uncaught, inside a trial) ends
the process with exit 78 so that the trial fails at once instead of being restarted.
Importing dlx imports neither torch nor numpy.
"""
from ._library import CONFIG_ERROR_EXIT_CODE, ConfigError, Error
from .hparams import Hparams
from .trial import Checkpoint, LoadedCheckpoint, StoredTensor, TensorView, Trial

REQUEUE_EXIT_CODE = 85
"""Exit with this after checkpointing on request: Slurm requeues the trial (RequeueExit=85)."""

__all__ = ["CONFIG_ERROR_EXIT_CODE", "Checkpoint", "ConfigError", "Error", "Hparams", "LoadedCheckpoint", "REQUEUE_EXIT_CODE", "StoredTensor",
           "TensorView", "Trial"]
