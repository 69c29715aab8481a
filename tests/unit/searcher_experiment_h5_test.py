# SPDX-License-Identifier: Apache-2.0
"""experiment.h5 written by the trials themselves (no Slurm, no MPI): an ASHA search with
promotions runs ticket after ticket through dlx-launch and the dlx package, each question answered
under the journal lock, which also rewrites experiment.h5. Then experiment_summary_check.py reads
it with h5py and h5dump and compares it with `dlx replay --json|--state`. Also: experiment.h5
that cannot be written (a directory in its place) never fails a trial, only warns, and
`dlx replay --write-h5` writes it again; `dlx status` refreshes it when it is older than the
journal.
Needs DLX_LIBRARY, DLX_LAUNCH, DLX_CLI and PYTHONPATH (python/)."""
import os
import shutil
import subprocess
import sys
import tempfile

import h5py

HERE = os.path.dirname(os.path.abspath(__file__))
CLI = os.environ["DLX_CLI"]

# Promotion variant: 6 trials, rungs at lengths 4 and 8; a trial not in its rung's top half
# pauses, and a later ticket resumes it when it becomes promotable.
EXPERIMENT = """name: h5-asha
entrypoint: [unused]
seed: 7
hyperparameters:
  lr: {type: log, minval: -3, maxval: -1}
  width: {type: int, minval: 8, maxval: 64}
  act: {type: categorical, vals: [relu, tanh]}
searcher: {name: async_halving, metric: loss, max_trials: 6, divisor: 2, max_rungs: 2,
           max_length: {batches: 8}}
"""

# A ticket's program: loss from the hyperparameters and the length, so rankings are real.
CHILD = """
import os, dlx
trial = dlx.Trial()
lr, width = float(os.environ["DLX_HP_LR"]), int(os.environ["DLX_HP_WIDTH"])
while True:
    target = trial.target_length
    loss = abs(lr - 0.03) * 10 + 1.0 / width + 1.0 / target
    said = trial.report_validation(target, loss=loss)
    if said != "train":
        break
trial.finish()
print("trial", trial.id, "said", said)
"""


def run_ticket(directory, ticket):
    env = dict(os.environ, DLX_EXPERIMENT_DIR=directory, DLX_TRIAL_ID=str(ticket), RANK="0", WORLD_SIZE="1",
               DLX_WORK_WAIT_S="5")
    for name in ("SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_PROCID"):
        env.pop(name, None)
    result = subprocess.run([os.environ["DLX_LAUNCH"], "--", sys.executable, "-c", CHILD], env=env,
                            capture_output=True, text=True)
    assert result.returncode == 0, (ticket, result.returncode, result.stdout, result.stderr)
    return result.stdout + result.stderr


def check(directory, *flags):
    result = subprocess.run([sys.executable, os.path.join(HERE, "experiment_summary_check.py"), directory, CLI,
                             *flags], capture_output=True, text=True)
    print(result.stdout, end="")
    assert result.returncode == 0, result.stderr


with tempfile.TemporaryDirectory() as directory:
    with open(os.path.join(directory, "experiment.yaml"), "w") as f:
        f.write(EXPERIMENT)
    outputs = [run_ticket(directory, ticket) for ticket in range(10)]
    log = "".join(outputs)
    assert "pause" in log and "has no work" in log, log
    assert "warning" not in log, log
    check(directory, "--expect-written-by-trials")
    with h5py.File(os.path.join(directory, "experiment.h5"), "r") as f:
        actions = [a.decode() for a in f["decisions"]["action"]]
        promoted = [r for r in f["decisions"][:] if r["event"] == b"work" and r["rank"] >= 1]
        assert "pause" in actions and "complete" in actions, actions
        assert promoted, "no promotion recorded with its ranking"
        statuses = sorted(s.decode() for s in f["trials"]["status"])
        print("statuses:", statuses, "promotions:", len(promoted))

    # A directory where experiment.h5 should be: the rename fails. The trial still runs to its
    # end; dlx-launch warns once and says how to rewrite the file.
    os.rename(os.path.join(directory, "experiment.h5"), os.path.join(directory, "saved.h5"))
    os.makedirs(os.path.join(directory, "experiment.h5", "blocker"))
    out = run_ticket(directory, 10)  # a new ticket (no work left): its "none" is a commit
    assert "warning: cannot write" in out and "dlx replay --write-h5" in out, out
    assert out.count("warning: cannot write") == 1, out
    shutil.rmtree(os.path.join(directory, "experiment.h5"))
    rewrite = subprocess.run([CLI, "replay", "--write-h5", directory], capture_output=True, text=True)
    assert rewrite.returncode == 0, rewrite.stderr
    assert "wrote" in rewrite.stderr, rewrite.stderr
    check(directory)
    with h5py.File(os.path.join(directory, "experiment.h5"), "r") as f:
        assert f.attrs["written_by"] == "dlx replay --write-h5", f.attrs["written_by"]

    # dlx status, run by the owner, refreshes a file older than the journal, and leaves a
    # current one alone.
    def status_writer():
        status = subprocess.run([CLI, "status", directory], capture_output=True, text=True)
        assert status.returncode == 0, status.stderr
        with h5py.File(os.path.join(directory, "experiment.h5"), "r") as f:
            return f.attrs["written_by"]
    assert status_writer() == "dlx replay --write-h5"
    later = os.stat(os.path.join(directory, "experiment.h5")).st_mtime + 10
    os.utime(os.path.join(directory, "journal"), (later, later))
    assert status_writer() == "dlx status"
    check(directory)
print("experiment.h5 from the trials: ok")
