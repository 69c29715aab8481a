# SPDX-License-Identifier: Apache-2.0
"""The dlx package (python/dlx/) over libdlx_c.so, as a PyTorch program uses it (no MPI):
hyperparameters, metrics into trial.h5 (read back with h5py), the checkpoint signal, and errors as
dlx.Error. Run with /usr/bin/python3; DLX_LIBRARY names the built libdlx_c.so, PYTHONPATH python/."""
import json
import os
import signal
import sys
import tempfile

import h5py

with tempfile.TemporaryDirectory() as directory:
    os.environ.update({
        "DLX_EXPERIMENT_DIR": directory,
        "DLX_TRIAL_ID": "3",
        "DLX_HPARAMS": json.dumps({"learning_rate": 0.25, "optim.kind": "adam", "layers": 2}),
        "DLX_CHECKPOINT_DIR": os.path.join(directory, "trials", "3", "checkpoints"),
        "DLX_LATEST_CHECKPOINT": "",
        "RANK": "0", "WORLD_SIZE": "1",
    })
    import dlx

    trial = dlx.Trial()
    assert trial.rank == 0 and trial.size == 1, (trial.rank, trial.size)
    assert trial.in_trial and trial.id == 3
    assert trial.hparam("learning_rate") == 0.25
    assert trial.hparam("optim.kind") == "adam"
    assert trial.hparam("missing", 7) == 7
    assert trial.latest_checkpoint is None
    assert trial.checkpoint_dir.endswith("trials/3/checkpoints")
    try:
        trial.hparam("missing")
        raise AssertionError("a missing hyperparameter must raise")
    except dlx.Error as error:
        assert "'missing' is not set" in str(error), error

    losses = [0.9, 0.5, 0.3]
    for step, loss in enumerate(losses, start=1):
        trial.report_training(step, loss=loss)
    trial.report_validation(3, {"accuracy": 0.875, "val/top-5": 0.9375}, loss=0.31)  # TensorBoard's '/' too
    # Names are registered once per set (names-once C calls): sets that alternate, and values
    # that are not floats, arrive as reported.
    trial.report_training(4, {"loss": 0.25, "lr": 1})
    trial.report_training(5, loss=0.125)
    trial.report_training(6, {"loss": 0.0625, "lr": 0.5})
    try:
        trial.report_training(7, {"val\u2215loss": 1.0})
        raise AssertionError("a metric name with U+2215, which trial.h5 keeps for '/', must raise")
    except dlx.Error as error:
        assert "cannot report training metrics at step 7: metric name 'val\u2215loss' contains U+2215" in str(error), error

    assert not trial.checkpoint_requested() and trial.checkpoint_signal() == 0
    os.kill(os.getpid(), signal.SIGUSR1)  # libdlx's handler: the process lives on
    assert trial.checkpoint_requested()
    assert trial.checkpoint_signal() == signal.SIGUSR1, trial.checkpoint_signal()
    for bad in (0, -15, 65):
        try:
            trial.note_checkpoint_signal(bad)
            raise AssertionError(f"note_checkpoint_signal({bad}) must raise")
        except dlx.Error as error:
            assert f"note_checkpoint_signal({bad}): not a signal number" in str(error), error
    trial.note_checkpoint_signal(signal.SIGTERM)  # as dlx.torch does after its all_reduce
    trial.finish()
    trial.close()

    with h5py.File(os.path.join(directory, "trials", "3", "trial.h5"), "r") as f:
        state = f.attrs["state"]
        state = state.decode() if isinstance(state, bytes) else state
        assert state == "completed", state
        assert list(f["metrics/training/loss"][:]) == losses + [0.25, 0.125, 0.0625]
        lr = list(f["metrics/training/lr"][:])
        assert lr[3] == 1.0 and lr[5] == 0.5 and all(v != v for v in lr[:3] + lr[4:5]), lr
        assert list(f["metrics/validation/accuracy"][:]) == [0.875]
        # A name with '/' is one dataset, its '/' written as U+2215 (HDF5 reads '/' as a path).
        assert list(f["metrics/validation/val\u2215top-5"][:]) == [0.9375], list(f["metrics/validation"])
        assert f["hparams"].attrs["learning_rate"] == 0.25
        # The name checks' warnings are kept in trial.h5 (dlx_trial_hparam_warning), for dlx status:
        # "missing" read with a default, "layers" defined and never read (said by finish()).
        kept = f.attrs["hparam_warnings"]
        kept = json.loads(kept.decode() if isinstance(kept, bytes) else kept)
        assert [(w["kind"], w["name"]) for w in kept] == [("default", "missing"), ("unread", "layers")], kept
        assert "did you mean" not in kept[0]["message"] and kept[1]["message"].startswith(
            "dlx: warning: the experiment defines hyperparameter 'layers'"), kept

    # A configuration error that nothing catches ends a trial's process with exit 78 (not 1), after
    # its traceback, whose last line names it: dlx-launch then fails the trial at once.
    import subprocess
    script = ("import dlx\ntrial = dlx.Trial()\ntrial.report_training(1, {'val\u2215loss': 1.0})\n")
    ended = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           env=dict(os.environ, DLX_TRIAL_ID="4"))
    assert ended.returncode == dlx.CONFIG_ERROR_EXIT_CODE == 78, (ended.returncode, ended.stderr)
    last = ended.stderr.strip().splitlines()[-1]
    assert last.startswith("dlx.ConfigError: dlx: cannot report training metrics at step 1: metric name "
                           "'val\u2215loss' contains U+2215"), ended.stderr
    # Any other error ends it as Python always does.
    ended = subprocess.run([sys.executable, "-c", "import dlx\ntrial = dlx.Trial()\nraise ValueError('x')\n"],
                           capture_output=True, text=True, env=dict(os.environ, DLX_TRIAL_ID="5"))
    assert ended.returncode == 1, (ended.returncode, ended.stderr)

    # An error inside the library comes back as dlx.Error, never as a crash.
    os.environ["DLX_HPARAMS"] = "[1, 2]"
    try:
        dlx.Trial()
        raise AssertionError("a malformed DLX_HPARAMS must raise")
    except dlx.Error as error:
        assert error.status == 4 and "DLX_HPARAMS" in str(error), (error.status, error)
print("python sdk: ok")
