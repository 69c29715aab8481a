# SPDX-License-Identifier: Apache-2.0
"""Runs a trial of a hand-made experiment directory under the real dlx-launch, without Slurm (a
requeue is dlx-launch run again), for the Determined API tests: one rank, or two under
`mpirun -np 2 dlx-launch` (dlx-launch takes its placement from Open MPI's variables as from
srun's, asks the searcher for work once, and starts the trainer on each rank with torchrun's
variables)."""
import glob
import itertools

import h5py
import os
import shutil
import socket
import subprocess

RUNS = itertools.count()
TIMEOUT_S = 300  # a run that takes longer has hung


class Launcher:
    def __init__(self, launch, source, own_prefix, cwd=None):
        """`own_prefix`: the test's own variables (CORE_, TRIAL_), dropped from the environment
        the test inherits so that only what a run asks for reaches its trainer."""
        self.launch, self.source, self.own_prefix, self.cwd = launch, source, own_prefix, cwd

    def environment(self, directory, ticket):
        env = {name: value for name, value in os.environ.items()
               if not name.startswith(("DLX_", "SLURM_", self.own_prefix)) or name == "DLX_LIBRARY"}
        # Only dlx-launch's PYTHONPATH may make `import determined` work.
        env["PYTHONPATH"] = os.path.join(self.source, "python")
        env["PATH"] = "/usr/bin:" + env.get("PATH", "")  # Debian's python3, with torch
        env.update(DLX_EXPERIMENT_DIR=directory, DLX_TRIAL_ID=str(ticket))
        return env

    def one_rank(self, directory, expect, ticket=0, **extra):
        env = self.environment(directory, ticket)
        env.update(RANK="0", WORLD_SIZE="1", **extra)
        result = subprocess.run([self.launch], env=env, cwd=self.cwd, capture_output=True, text=True, timeout=TIMEOUT_S)
        output = result.stdout + result.stderr
        assert result.returncode == expect, \
            f"dlx-launch exited {result.returncode}, not {expect} ({extra}):\n{output}"
        return output

    def tickets(self, directory, count, **extra):
        """Tickets 0, 1, ... one after another, as sequential array tasks would run them, until
        one past the first `count` has no work; their output, joined. No Traceback allowed."""
        outputs = []
        for ticket in range(count):
            out = self.one_rank(directory, 0, ticket, **extra)
            outputs.append(out)
            if "has no work" in out and ticket >= 4:
                break
        everything = "\n".join(outputs)
        assert "Traceback" not in everything, everything
        return everything

    def two_ranks(self, directory, expect, **extra):
        """Each rank's output (stdout, then stderr), in rank order."""
        env = self.environment(directory, 0)
        # Without Slurm, the ranks agree on the checkpoint to resume from through DLX_RUN_ID: one
        # value for the ranks of a run, a new one for each run. A port of this run's own for
        # gloo's rendezvous: dlx-launch's default outside Slurm is one fixed port, which another
        # test's trainer may hold at the same time.
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        extra = dict(extra, DLX_RUN_ID=f"run-{next(RUNS)}", MASTER_PORT=str(port))
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_btl_tcp_if_include="lo", **extra)
        outputs_dir = os.path.join(directory, "ranks")
        command = ["mpirun", "-np", "2", "--oversubscribe", "--output-filename", outputs_dir,
                   "-x", "DLX_EXPERIMENT_DIR", "-x", "DLX_TRIAL_ID", "-x", "PYTHONPATH", "-x", "PATH"] + \
                  [arg for name in extra for arg in ("-x", name)] + [self.launch]
        result = subprocess.run(command, env=env, cwd=self.cwd, capture_output=True, text=True, timeout=TIMEOUT_S)
        outputs = []
        for rank in range(2):
            text = ""
            for stream in ("stdout", "stderr"):
                for found in glob.glob(os.path.join(outputs_dir, "1", f"rank.{rank}", stream)):
                    with open(found) as f:
                        text += f.read()
            outputs.append(text)
        shutil.rmtree(outputs_dir, ignore_errors=True)
        everything = result.stdout + result.stderr + "\n".join(outputs)
        assert result.returncode == expect, f"mpirun exited {result.returncode}, not {expect}:\n{everything}"
        return outputs


def states_of(directory):
    """Each trial's state (trial.h5's), by trial id."""
    states = {}
    for record in glob.glob(directory + "/trials/*/trial.h5"):
        with h5py.File(record, "r") as f:
            state = f.attrs["state"]
            states[int(record.split("/")[-2])] = state.decode() if isinstance(state, bytes) else state
    return states
