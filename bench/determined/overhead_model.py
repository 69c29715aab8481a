# SPDX-License-Identifier: Apache-2.0
"""The model both sides of bench_harness_overhead.py train: an MLP on a synthetic dataset, Adam,
one epoch of BATCHES batches. Each side prints `# span <seconds> <batches>`: the wall time from
the start of batch WARMUP to the end of the last batch, taken inside the training step itself."""
import os
import time

import torch
from torch.utils.data import TensorDataset

WIDTH = int(os.environ.get("BENCH_WIDTH", "128"))
BATCH = 64
BATCHES = int(os.environ.get("BENCH_BATCHES", "400"))
WARMUP = 20


def dataset() -> TensorDataset:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(BATCH * BATCHES, 256, generator=g)
    return TensorDataset(x, torch.randint(0, 10, (BATCH * BATCHES,), generator=g))


def model() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(256, WIDTH), torch.nn.ReLU(), torch.nn.Linear(WIDTH, WIDTH),
                               torch.nn.ReLU(), torch.nn.Linear(WIDTH, 10))


class Span:
    """Called at the start of every batch (0-based index) and once after the last."""

    def __init__(self) -> None:
        self.start = 0.0

    def batch(self, index: int) -> None:
        if index == WARMUP:
            self.start = time.perf_counter()

    def end(self) -> None:
        print(f"# span {time.perf_counter() - self.start:.6f} {BATCHES - WARMUP}", flush=True)
