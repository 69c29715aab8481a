# SPDX-License-Identifier: Apache-2.0
"""Throughput of small trials packed on one GPU, against one at a time (issue 36's figure).

Four trials of a small CNN (two conv layers, CIFAR-sized synthetic batches, a fixed number of
steps) run three ways under the real dlx-launch, without Slurm (an array task is dlx-launch run
with its DLX_* variables, as tests/launcher/task_slots_test.py does):
  alone   one array task per trial, one after another (the GPU holds one trial at a time);
  packed  one array task, resources.trials_per_gpu: 4 (the four at once, in time slices);
  mps     the same with resources.mps: true (dlx-launch starts the user's MPS daemon), where
          nvidia-cuda-mps-control is on PATH; else skipped.
'# result:' lines: packed_vs_alone_trials_per_hour and mps_vs_alone_trials_per_hour (the alone
wall time over the packed one for the same four trials; target >= 2.0), and the wall times.
`--device cpu` runs the same harness on the CPU with few steps (a smoke run of the machinery on
a machine without a GPU; its figures mean nothing). Exit 77 without a GPU unless --device cpu.
Needs DLX_LAUNCH (dlx-launch), DLX_LIBRARY (libdlx_c.so) and PYTHONPATH (python/).

  python3 bench/packing/bench_packed_trials.py [--steps 400] [--device cuda|cpu]"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

TRAINER = """
import os, sys, time
import torch
import dlx
import dlx.torch
device = torch.device(sys.argv[1])
steps = int(sys.argv[2])
trial = dlx.Trial()   # importing dlx.torch capped the allocator at DLX_GPU_MEMORY_FRACTION
torch.manual_seed(trial.id)
model = torch.nn.Sequential(
    torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
    torch.nn.Flatten(), torch.nn.Linear(64, 10)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=trial.hparam("lr"))
x = torch.randn(64, 3, 32, 32, device=device)
y = torch.randint(0, 10, (64,), device=device)
for step in range(1, steps + 1):
    optimizer.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
loss = float(loss)
trial.report_validation(steps, loss=loss)
trial.finish()
"""


def experiment(directory: str, trials: int, resources: str, device: str, steps: int) -> None:
    trainer = os.path.join(directory, "trainer.py")
    with open(trainer, "w") as f:
        f.write(TRAINER)
    with open(os.path.join(directory, "experiment.yaml"), "w") as f:
        f.write(f"name: packed-bench\nentrypoint: {json.dumps([sys.executable, trainer, device, str(steps)])}\n"
                "seed: 3\nhyperparameters: {lr: {type: double, minval: 0.01, maxval: 0.1}}\n"
                f"searcher: {{name: random, metric: loss, max_trials: {trials}, max_length: {{batches: 1}}}}\n"
                f"resources: {resources}\nmax_restarts: 0\n")


def launch(directory: str, task: int, extra: dict | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "DLX_"))}
    env.update(DLX_LIBRARY=os.environ["DLX_LIBRARY"], DLX_EXPERIMENT_DIR=directory, DLX_TICKET=str(task),
               DLX_TRIAL_ID=str(task), RANK="0", WORLD_SIZE="1")
    env.update(extra or {})
    result = subprocess.run([os.environ["DLX_LAUNCH"]], env=env, capture_output=True, text=True, timeout=1800)
    if result.returncode != 0:
        sys.exit(f"dlx-launch (task {task}) exited {result.returncode}:\n{result.stdout}{result.stderr}")
    return result.stdout + result.stderr


def timed(way: str, trials: int, device: str, steps: int) -> float:
    directory = tempfile.mkdtemp(prefix=f"dlx-packed-{way}-")
    try:
        gpu = "gpus_per_node: 1, " if device == "cuda" else ""
        if way == "alone":
            experiment(directory, trials, f"{{{gpu.rstrip(', ')}}}" if gpu else "{}", device, steps)
            start = time.perf_counter()
            for task in range(trials):
                launch(directory, task)
        else:
            packing = f"trials_per_gpu: {trials}" if device == "cuda" else f"trials_per_task: {trials}"
            mps = ", mps: true" if way == "mps" else ""
            experiment(directory, trials, f"{{{gpu}{packing}{mps}}}", device, steps)
            start = time.perf_counter()
            output = launch(directory, 0)
            if way == "mps" and "CUDA MPS started" not in output:
                sys.exit(f"mps: the daemon did not start:\n{output}")
        seconds = time.perf_counter() - start
        print(f"# {way}: {trials} trials of {steps} steps in {seconds:.2f} s")
        return seconds
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=None, help="steps per trial (400 on CUDA, 20 on CPU)")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    args = parser.parse_args()
    import torch
    if args.device == "cuda" and not torch.cuda.is_available():
        print("skip: no GPU visible (run with --device cpu for a smoke run of the harness)")
        return 77
    steps = args.steps or (400 if args.device == "cuda" else 20)
    trials = 4
    alone = timed("alone", trials, args.device, steps)
    packed = timed("packed", trials, args.device, steps)
    if args.device == "cpu":
        # Two CPU processes share two cores: the ratio says the harness ran, not what packing
        # gains, so it gets no verdict a log search could mistake for a missed target.
        print(f"# smoke: packed_vs_alone_trials_per_hour {alone / packed:.2f} (CPU smoke run, not a figure)")
    else:
        print(f"# result: packed_vs_alone_trials_per_hour {alone / packed:.2f} (target >= 2.0: "
              f"{'met' if alone / packed >= 2.0 else 'MISSED'})")
    if args.device == "cuda" and shutil.which("nvidia-cuda-mps-control"):
        with_mps = timed("mps", trials, args.device, steps)
        print(f"# result: mps_vs_alone_trials_per_hour {alone / with_mps:.2f} (target >= 2.0: "
              f"{'met' if alone / with_mps >= 2.0 else 'MISSED'})")
    elif args.device == "cuda":
        print("# mps: skipped: nvidia-cuda-mps-control is not on PATH")
    return 0


if __name__ == "__main__":
    sys.exit(main())
