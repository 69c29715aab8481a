# SPDX-License-Identifier: Apache-2.0
"""A trial opened in a Slurm job without dlx-launch (a job script that runs `python3 train.py`
itself, with dlx installed where Python finds it) trains, but rank 0 warns that nothing runs the
code snapshot, hands it the searcher's lengths, restarts it or keeps its log; under dlx-launch
(DLX_TARGET_LENGTH set, as dlx-launch always sets it in a trial), and outside Slurm, no such
warning. Real processes over the built libdlx_c. Run with /usr/bin/python3; DLX_LIBRARY names the
built libdlx_c.so, PYTHONPATH python/."""
import json
import os
import subprocess
import sys
import tempfile

TRAINER = """
import dlx
trial = dlx.Trial()
trial.report_training(1, loss=0.5)
trial.finish()
trial.close()
"""

WARNING = ("dlx: warning: trial 2 was not started by dlx-launch (does the job script run the trainer itself?): "
           "it runs, but not the experiment's code snapshot, not to the searcher's lengths, without restarts after "
           "a crash and without its log for `dlx logs`. Run the trainer as `srun dlx-launch` in the job script "
           "(examples/job.sh)\n")


def trainer_stderr(directory: str, name: str, **extra: str) -> str:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("SLURM_", "DLX_TARGET"))}
    env.update({
        "DLX_EXPERIMENT_DIR": os.path.join(directory, name),
        "DLX_TRIAL_ID": "2",
        "DLX_HPARAMS": json.dumps({}),
        "DLX_CHECKPOINT_DIR": os.path.join(directory, name, "trials", "2", "checkpoints"),
        "DLX_LATEST_CHECKPOINT": "",
        "DLX_LIBRARY": os.environ["DLX_LIBRARY"],
    })
    env.update(extra)
    done = subprocess.run([sys.executable, "-c", TRAINER], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"{name}: exit {done.returncode}: {done.stderr}"
    assert os.path.exists(os.path.join(directory, name, "trials", "2", "trial.h5")), f"{name}: no trial.h5"
    return done.stderr


with tempfile.TemporaryDirectory() as directory:
    # The batch script ran it: the plugin's variables and Slurm's, nothing of dlx-launch's.
    alone = trainer_stderr(directory, "batch", SLURM_JOB_ID="41", SLURM_ARRAY_JOB_ID="40", SLURM_ARRAY_TASK_ID="2",
                           DLX_TICKET="2")
    assert alone.count(WARNING) == 1, alone
    print("# the batch script's own trainer:", alone.strip().splitlines()[0])
    # Under dlx-launch (its DLX_TARGET_LENGTH, 0 without a searcher length): no warning.
    launched = trainer_stderr(directory, "launched", SLURM_JOB_ID="41", SLURM_ARRAY_JOB_ID="40", SLURM_ARRAY_TASK_ID="2",
                              DLX_TICKET="2", DLX_START_LENGTH="0", DLX_TARGET_LENGTH="0", RANK="0", WORLD_SIZE="1")
    assert "not started by dlx-launch" not in launched, launched
    # By hand outside Slurm (a test, a debugging run): no warning either.
    by_hand = trainer_stderr(directory, "by-hand")
    assert "not started by dlx-launch" not in by_hand, by_hand
print("# ok: warned only in a Slurm job without dlx-launch")
