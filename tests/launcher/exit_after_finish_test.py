# SPDX-License-Identifier: Apache-2.0
"""A trainer that finished its trial and then died at exit (a library's thread aborting the
process as it ends, as PyTorch's gloo process group can when it was never destroyed) under the
real dlx-launch, as rank 0 of a Slurm step: the trial is complete, so dlx-launch says what
happened and exits 0; so it does when a preemption notice kills the trainer after finish() (no
requeue of a finished trial); the same abort before finish() is a crash (exit 85, counted); an exit
0 without finish() is said in the trial's log, one after it is not, and so is an exit 0 of a
trainer that never opened its trial.
Run with /usr/bin/python3; DLX_LAUNCH, DLX_LIBRARY and PYTHONPATH (python/) from CMake."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import h5py

TRAINER = """
import os, signal, sys, time
if sys.argv[1] == "no sdk":
    print("a script that never opens its trial")
    sys.exit(0)
import dlx
trial = dlx.Trial()
trial.report_training(1, loss=0.5)
sys.stdout.flush()
if sys.argv[1] in ("after", "notice after"):
    trial.finish()
    trial.close()
if sys.argv[1] == "exit without finish":
    sys.exit(0)
if sys.argv[1] == "exit after finish":
    trial.finish()
    sys.exit(0)
if sys.argv[1] == "notice after":
    # A preemption notice as the trainer ends: its handlers are gone, so the signal dlx-launch
    # receives and passes on kills it.
    signal.signal(signal.SIGUSR2, signal.SIG_DFL)
    os.kill(os.getppid(), signal.SIGUSR2)
    time.sleep(30)
os.abort()
"""


def record_of(directory):
    with h5py.File(os.path.join(directory, "trials", "0", "trial.h5"), "r") as f:
        return {name: (value.decode() if isinstance(value, bytes) else value) for name, value in f.attrs.items()}


def run(when):
    directory = tempfile.mkdtemp(prefix="dlx-exit-after-finish-")
    try:
        trainer = os.path.join(directory, "trainer.py")
        with open(trainer, "w") as f:
            f.write(TRAINER)
        with open(os.path.join(directory, "experiment.yaml"), "w") as f:
            f.write(f"name: exit-after-finish\nentrypoint: {json.dumps(['/usr/bin/python3', trainer, when])}\n"
                    "hyperparameters: {learning_rate: 0.1}\n"
                    "searcher: {name: single, metric: loss, max_length: {batches: 10}}\nmax_restarts: 2\n")
        env = {name: value for name, value in os.environ.items() if not name.startswith(("SLURM_", "DLX_"))}
        env.update(DLX_LIBRARY=os.environ["DLX_LIBRARY"], DLX_EXPERIMENT_DIR=directory, DLX_TRIAL_ID="0",
                   DLX_HPARAMS=json.dumps({"learning_rate": 0.1}),
                   SLURM_JOB_ID="1234", SLURM_PROCID="0", SLURM_STEP_NUM_TASKS="1", SLURM_LOCALID="0",
                   SLURM_NODEID="0", SLURM_STEP_NUM_NODES="1", SLURM_STEP_TASKS_PER_NODE="1",
                   SLURM_STEP_NODELIST="dlxfake1", SLURMD_NODENAME="dlxfake1", SLURM_LAUNCH_NODE_IPADDR="127.0.0.1")
        result = subprocess.run([os.environ["DLX_LAUNCH"]], env=env,
                                capture_output=True, text=True, timeout=120)
        output = result.stdout + result.stderr
        if when == "no sdk":
            assert not os.path.exists(os.path.join(directory, "trials", "0", "trial.h5")), output
            return result.returncode, output, None
        assert os.path.exists(os.path.join(directory, "trials", "0", "trial.h5")), output
        return result.returncode, output, record_of(directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


status, output, record = run("after")
print(f"abort after finish(): dlx-launch exit {status}, record {record['state']}, failures {record['failures']}")
assert status == 0, output
assert "dlx-launch: warning: the trainer was killed by SIGABRT (exit 134) after its trial was completed" in output, output
assert "not counted as a crash" in output and "destroy_process_group()" in output, output
assert record["state"] == "completed" and record["failures"] == 0, record

status, output, record = run("notice after")
print(f"notice after finish(): dlx-launch exit {status}, record {record['state']}, failures {record['failures']}")
assert status == 0, output  # not a requeue: a requeued task would run a trial that is done
assert "dlx-launch: the notice (signal 12) ended the trainer after its trial was completed: nothing to resume, " \
       "exiting 0" in output, output
assert record["state"] == "completed" and record["failures"] == 0, record

status, output, record = run("before")
print(f"abort before finish(): dlx-launch exit {status}, record {record['state']}, failures {record['failures']}")
assert status == 85, output
assert "the trainer crashed (killed by SIGABRT (exit 134))" in output, output
assert "after its trial was" not in output, output
assert record["state"] == "running" and record["failures"] == 1, record
assert record["last_error"].startswith("killed by SIGABRT (exit 134)"), record
# Exit 0 without finish(): nothing to account, but the trial stays running (dlx status: lost), and
# the trial's log says why and what to call; after finish(), no such warning.
status, output, record = run("exit without finish")
print(f"exit 0 without finish(): dlx-launch exit {status}, record {record['state']}")
assert status == 0 and record["state"] == "running" and record["failures"] == 0, (output, record)
assert "dlx-launch: warning: the trainer exited 0 without finishing trial 0: its record stays running, and " \
       "`dlx status` will show it lost. End training with trial.finish() in Python" in output, output
status, output, record = run("exit after finish")
print(f"exit 0 after finish(): dlx-launch exit {status}, record {record['state']}")
assert status == 0 and record["state"] == "completed", (output, record)
assert "without finishing" not in output, output
assert "without opening" not in output, output
# Exit 0 without ever opening the trial (no SDK): no record at all; the log says so.
status, output, _ = run("no sdk")
print(f"exit 0 without the SDK: dlx-launch exit {status}")
assert status == 0, output
assert "dlx-launch: warning: the trainer exited 0 without opening trial 0 through the dlx SDK: it reported no " \
       "metrics and saved no checkpoints, and `dlx status` will show the trial not started." in output, output
print("ok")
