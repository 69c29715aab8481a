# SPDX-License-Identifier: Apache-2.0
"""Sample randomness that a resumed epoch draws again: each sample loaded in a DataLoader worker
with the worker's generators seeded from the sample's place in the epoch.

A worker process draws a sample's random transforms (torchvision's RandomResizedCrop,
RandomHorizontalFlip, a numpy jitter...) from its own global generators, seeded once when the
epoch's iterator starts it, so what sample k draws depends on every sample that worker loaded
before it. A resumed epoch skips the batches already trained without loading them, and its
workers would draw other numbers for every later sample. So, for a plain DataLoader with
workers, the feed loads through these two wrappers:

  SeededBatches   the loader's own batch sampler (its order, its set_epoch) with every index
                  given as (seed, index), where seed = blake2b(epoch seed, epoch, rank,
                  position of the sample in the rank's epoch), and the first `skip` batches
                  drawn but not given: a skipped sample keeps its position, so each later one
                  keeps its seed;
  SeededSamples   the loader's dataset: seeds Python's random, numpy's global generator (when
                  numpy is loaded) and torch's CPU generator from the seed, then loads
                  dataset[index].

The epoch seed comes from the loader's generator state at the epoch's start, which checkpoints
hold (_feed.py), and the sampler draws the epoch's order from that state: the uninterrupted and
the resumed epoch give every sample the same place and the same seed, with or without
persistent_workers. It
costs about 8 us a sample (bench/torch/bench_sample_seeding.py).
"""
from __future__ import annotations

import hashlib
import random
import struct
import sys
from typing import Any, Callable, Iterable, Iterator

import torch


def sample_seed(epoch_seed: int, epoch: int, rank: int, position: int) -> int:
    """The 64-bit seed of the sample at `position` of `rank`'s epoch `epoch` (0-based)."""
    key = struct.pack("<QQQQ", epoch_seed & 0xFFFFFFFFFFFFFFFF, epoch, rank, position)
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little")


def seed_generators(seed: int) -> None:
    """Seeds this process's generators a sample's transforms draw from. Not torch.manual_seed,
    which also queues a CUDA seeding with a formatted stack (40 us) and a worker has no CUDA."""
    random.seed(seed)
    torch.default_generator.manual_seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed & 0xFFFFFFFF)


class SeededBatches:
    """A batch sampler's batches as lists of (seed, index), after the first `skip` (set
    `epoch_seed`, `epoch` and `skip` before each epoch's iterator: a persistent loader iterates
    this object again at every epoch). `restart` is called when the first batch is asked for,
    before the sampler draws its order: it sets the generators back to the epoch's start, so that
    the order does not depend on whether the DataLoader drew a seed for new workers first (it
    does at the first epoch a persistent loader runs, which is another epoch in a resumed run)."""

    def __init__(self, batches: Iterable, rank: int, restart: Callable[[], None]):
        self.batches, self.rank, self.restart = batches, rank, restart
        self.epoch_seed = self.epoch = self.skip = 0

    def __iter__(self) -> Iterator[list]:
        self.restart()
        position = 0
        for number, batch in enumerate(self.batches):
            if number >= self.skip:
                yield [(sample_seed(self.epoch_seed, self.epoch, self.rank, position + k), index)
                       for k, index in enumerate(batch)]
            position += len(batch)

    def __len__(self) -> int:
        return max(0, len(self.batches) - self.skip)  # type: ignore[arg-type]


class SeededSamples:
    """A map-style dataset loaded by (seed, index). Attributes it lacks are the dataset's, read
    and set (a worker_init_fn that opens a file on get_worker_info().dataset still works)."""

    def __init__(self, dataset: Any):
        object.__setattr__(self, "dataset", dataset)

    def __getitem__(self, key: tuple[int, Any]) -> Any:
        seed, index = key
        seed_generators(seed)
        return self.dataset[index]

    def __len__(self) -> int:
        return len(self.dataset)

    def __getattr__(self, name: str) -> Any:
        # Only for names this object lacks; never for the dataset itself or dunders (an unpickled
        # copy in a spawned worker looks them up before its __dict__ is filled).
        if name == "dataset" or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.dataset, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.dataset, name, value)
