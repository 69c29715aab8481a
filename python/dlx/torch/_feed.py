# SPDX-License-Identifier: Apache-2.0
"""The training data of dlx.torch.Loop: one epoch's batches at a time, from any point of it.

A DataLoader's order is made when its iterator is: the shuffling sampler draws its permutation
and the loader its workers' base seed, from their torch.Generator or, without one, from torch's
global generator (which a mid-epoch checkpoint holds in a later state). So the feed
  - gives a loader without a generator one of its own (seeded from the global generator once,
    when the loop is made), and its shuffling sampler the same one;
  - keeps the generators' states at the start of each epoch, and saves them with each checkpoint
    as this rank's streams loader/generator (and loader/sampler for a sampler with its own);
  - calls sampler.set_epoch(epoch) (DistributedSampler) before each epoch's iterator, and starts
    it with the checkpoint signals blocked, so that its worker processes survive Slurm's notice
    (_signals.py);
  - resumes inside an epoch by setting the generators back to that epoch's start and skipping the
    batches already trained: a plain DataLoader over a map-style dataset skips their indices
    without reading a sample (a second DataLoader with the same settings over a batch sampler that
    drops them); any other iterable (an IterableDataset, a DataLoader subclass, a list) reads and
    drops them.
Samples are the same bytes as in an uninterrupted run when loading them draws no randomness in
a worker process, or draws it from a generator seeded by the sample and epoch (a worker's own
generator is seeded once per iterator, and the skipped batches no longer advance it). A loader
with persistent_workers draws its workers' seed only when its iterator is first made, in
whichever epoch a run starts: its epochs' order is made from their start states alone.
"""
from __future__ import annotations

import itertools
from typing import Any, Iterable, Iterator

import torch
from torch.utils.data import BatchSampler, DataLoader, IterableDataset

from ._progress import batch_records
from ._signals import workers_deaf



def _state_bytes(generator: torch.Generator) -> bytes:
    return generator.get_state().numpy().tobytes()


def _set_state(generator: torch.Generator, data: bytes) -> None:
    generator.set_state(torch.frombuffer(bytearray(data), dtype=torch.uint8))


class _SkipBatches:
    """A batch sampler's batches after the first `skip` (the sampler still draws its order)."""

    def __init__(self, batches: Iterable, skip: int):
        self.batches, self.skip = batches, skip

    def __iter__(self) -> Iterator:
        return itertools.islice(iter(self.batches), self.skip, None)

    def __len__(self) -> int:
        return max(0, len(self.batches) - self.skip)


class Feed:
    """One loader's epochs for dlx.torch.Loop (see the module's docstring)."""

    def __init__(self, loader: Iterable, world_size: int):
        self.loader = loader
        self.world_size = world_size
        self.generator: torch.Generator | None = None
        self.sampler_generator: torch.Generator | None = None
        self._start: dict[str, bytes] | None = None  # this epoch's start states, once it began
        self._restored: dict[str, bytes] = {}
        self._iterator: Iterator | None = None
        if isinstance(loader, DataLoader):
            self._own_generators(loader)

    def _own_generators(self, loader: DataLoader) -> None:
        if loader.generator is None:
            seed = int(torch.empty((), dtype=torch.int64).random_().item())
            loader.generator = torch.Generator().manual_seed(seed)
        self.generator = loader.generator
        sampler = loader.sampler if loader.batch_sampler is None else \
            getattr(loader.batch_sampler, "sampler", loader.sampler)
        if hasattr(sampler, "generator"):
            if sampler.generator is None:
                sampler.generator = self.generator
            if sampler.generator is not self.generator:
                self.sampler_generator = sampler.generator

    # ---- sizes

    def batches_per_epoch(self) -> int | None:
        try:
            return len(self.loader)  # type: ignore[arg-type]
        except TypeError:
            return None

    def records_of_batch(self, index: int) -> int | None:
        """Records of batch `index` of an epoch over all ranks (None: unknown)."""
        loader = self.loader
        if not isinstance(loader, DataLoader):
            return None
        if loader.batch_size is None:  # no automatic batching: one sample per item
            return self.world_size if loader.batch_sampler is None else None
        samples = None
        if type(loader.batch_sampler) is BatchSampler:
            try:
                samples = len(loader.batch_sampler.sampler)
            except TypeError:
                samples = None
        return self.world_size * batch_records(index, loader.batch_size, samples, loader.drop_last)

    # ---- generator states

    def _current(self) -> dict[str, bytes]:
        states = {}
        if self.generator is not None:
            states["loader/generator"] = _state_bytes(self.generator)
        if self.sampler_generator is not None:
            states["loader/sampler"] = _state_bytes(self.sampler_generator)
        return states

    def streams(self, ended: bool) -> dict[str, bytes]:
        """This rank's streams for a checkpoint: the states at the start of the epoch in progress
        (the start of the next one between epochs), and for an epoch whose batches all ran, the
        states after them (loader/generator_after, loader/sampler_after)."""
        if self._start is None:
            return self._current()
        streams = dict(self._start)
        if ended:
            streams.update({f"{name}_after": data for name, data in self._current().items()})
        return streams

    def restore(self, streams: dict[str, bytes]) -> None:
        """Takes a checkpoint's streams for the epoch the loop resumes in."""
        self._restored = {name: data for name, data in streams.items()
                          if name.startswith("loader/")}
        self._apply(self._restored)

    def _apply(self, states: dict[str, bytes]) -> None:
        for name, generator in (("loader/generator", self.generator),
                                ("loader/sampler", self.sampler_generator)):
            if generator is not None and name in states:
                _set_state(generator, states[name])

    # ---- one epoch

    def epoch(self, epoch: int, skip: int, ended: bool) -> Iterator[Any]:
        """The batches of epoch `epoch` (0-based) after the first `skip`; none when its batches
        all ran (`ended`), the generators then set to their state after them."""
        restored, self._restored = self._restored, {}
        if ended:
            self._apply({name[:-len("_after")]: data for name, data in restored.items()
                         if name.endswith("_after")})
            self._start = None
            return iter(())
        set_epoch = getattr(getattr(self.loader, "sampler", None), "set_epoch", None)
        if callable(set_epoch):
            set_epoch(epoch)
        self._start = self._current()
        self.close()
        with workers_deaf():  # the iterator starts the worker processes
            if skip and self._skips_by_index():
                self._iterator = iter(self._skipping_loader(skip))
                batches: Iterator = self._iterator
            else:
                self._iterator = iter(self.loader)
                batches = itertools.islice(self._iterator, skip, None) if skip else self._iterator
        if self._persistent():
            # A persistent iterator draws its workers' seed when it is first made, in whichever
            # epoch a run starts, and not again: the epoch's order comes from its start state.
            self._apply(self._start)
        return batches

    def end_epoch(self) -> None:
        self._start = None

    def _persistent(self) -> bool:
        return bool(getattr(self.loader, "persistent_workers", False)) and \
            getattr(self.loader, "num_workers", 0) > 0

    def _skips_by_index(self) -> bool:
        loader = self.loader
        return type(loader) is DataLoader and not isinstance(loader.dataset, IterableDataset) \
            and loader.batch_sampler is not None

    def _skipping_loader(self, skip: int) -> DataLoader:
        loader = self.loader
        options: dict[str, Any] = dict(
            batch_sampler=_SkipBatches(loader.batch_sampler, skip), num_workers=loader.num_workers,
            collate_fn=loader.collate_fn, pin_memory=loader.pin_memory, timeout=loader.timeout,
            worker_init_fn=loader.worker_init_fn, generator=loader.generator)
        if loader.num_workers > 0:
            options.update(multiprocessing_context=loader.multiprocessing_context,
                           prefetch_factor=loader.prefetch_factor,
                           persistent_workers=False)
        if getattr(loader, "pin_memory_device", ""):
            options["pin_memory_device"] = loader.pin_memory_device
        return DataLoader(loader.dataset, **options)

    def close(self, final: bool = False) -> None:
        """Stops the worker processes of the last epoch's iterator, unless the loader keeps them
        for the next epoch (persistent_workers) and this is not the `final` close before the
        program exits for a requeue."""
        iterator, self._iterator = self._iterator, None
        shutdown = getattr(iterator, "_shutdown_workers", None)
        kept = iterator is getattr(self.loader, "_iterator", None)  # the loader's persistent one
        if callable(shutdown) and (final or not kept):
            shutdown()
