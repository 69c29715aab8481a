# SPDX-License-Identifier: Apache-2.0
"""The searcher through dlx-launch and the dlx package (python/dlx/), as a PyTorch program meets it
(no MPI, no Slurm): dlx-launch asks the journal for each ticket's work and sets DLX_TARGET_LENGTH;
the program trains to it and reports; the searcher's answer comes back from report_validation; the
stopped trial ends as "stopped" in trial.h5; `dlx replay` rebuilds and checks every decision.
Needs DLX_LIBRARY, DLX_LAUNCH, DLX_CLI and PYTHONPATH (python/)."""
import os
import subprocess
import sys
import tempfile

import h5py

EXPERIMENT = """name: py-asha
entrypoint: [unused]
seed: 1
hyperparameters:
  lr: {type: double, minval: 0, maxval: 1}
searcher: {name: async_halving, metric: loss, max_trials: 2, divisor: 2, max_rungs: 2,
           max_length: {batches: 8}, stop_once: true}
"""

# The program a ticket runs: train to each target, report the loss the test chose, print what
# the searcher said.
CHILD = """
import os, sys, dlx
losses = [float(x) for x in sys.argv[1:]]
trial = dlx.Trial()
said = []
while True:
    target = trial.target_length
    said.append(trial.report_validation(target, loss=losses[len(said)]))
    if said[-1] != "train":
        break
trial.finish()
print("said", trial.id, " ".join(said), "target", trial.target_length)
"""


def run_ticket(directory, ticket, losses):
    env = dict(os.environ, DLX_EXPERIMENT_DIR=directory, DLX_TRIAL_ID=str(ticket),
               RANK="0", WORLD_SIZE="1")
    for name in ("SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_PROCID"):
        env.pop(name, None)
    result = subprocess.run([os.environ["DLX_LAUNCH"], "--", sys.executable, "-c", CHILD,
                             *map(str, losses)], env=env, capture_output=True, text=True)
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr)
    return result.stdout + result.stderr


with tempfile.TemporaryDirectory() as directory:
    with open(os.path.join(directory, "experiment.yaml"), "w") as f:
        f.write(EXPERIMENT)
    # Ticket 0: the first result at rung 0 (length 4) goes on; length 8 is the top: complete.
    out = run_ticket(directory, 0, [0.5, 0.4])
    assert "said 0 train complete target 8" in out, out
    assert "DLX_TARGET_LENGTH" not in out
    # Ticket 1: worse than trial 0 at rung 0: the top 1 of 2 goes on, so trial 1 stops.
    out = run_ticket(directory, 1, [0.9])
    assert "said 1 stop target 4" in out, out
    with h5py.File(os.path.join(directory, "trials", "1", "trial.h5"), "r") as f:
        state = f.attrs["state"]
        state = state.decode() if isinstance(state, bytes) else state
        reason = f.attrs["stop_reason"]
        reason = reason.decode() if isinstance(reason, bytes) else reason
        assert state == "stopped", state
        assert "ranks 2 of 2" in reason, reason
    # The same ticket again (a requeue) gets no new work: its trial already stopped.
    out = run_ticket(directory, 1, [0.9])
    assert "ticket 1 has no work: ticket 1's trial 1 is already stopped" in out, out
    # A third ticket does not exist for 2 trials with stop_once: none.
    replay = subprocess.run([os.environ["DLX_CLI"], "replay", directory], capture_output=True,
                            text=True)
    assert replay.returncode == 0, replay.stderr
    assert "# best: trial 0 loss=0.4 at length 8" in replay.stdout, replay.stdout
    assert "stop" in replay.stdout
print("python searcher: ok")
