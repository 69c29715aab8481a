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
  - loads a plain DataLoader with worker processes through its own DataLoader of the same
    settings over _samples.py's wrappers, which seed the worker's generators for each sample
    from its place in the epoch: a sample's random transforms are the same in a resumed epoch,
    whose workers never loaded the skipped samples. With num_workers=0 the samples draw from the
    global generators, which checkpoints hold.
A loader subclass with persistent_workers draws its workers' seed only when its iterator is first
made, in whichever epoch a run starts: its epochs' order is made from their start states alone.
"""
from __future__ import annotations

import hashlib
import itertools
from typing import Any, Iterable, Iterator

import torch
from torch.utils.data import BatchSampler, DataLoader, IterableDataset

from ._progress import batch_records
from ._samples import SeededBatches, SeededSamples
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

    def __init__(self, loader: Iterable, rank: int, world_size: int):
        self.loader = loader
        self.world_size = world_size
        self.generator: torch.Generator | None = None
        self.sampler_generator: torch.Generator | None = None
        self._start: dict[str, bytes] | None = None  # this epoch's start states, once it began
        self._restored: dict[str, bytes] = {}
        self._iterator: Iterator | None = None
        self._seeded: SeededBatches | None = None  # a plain loader with workers: _samples.py
        self._seeded_loader: DataLoader | None = None  # ... loaded through this one
        if isinstance(loader, DataLoader):
            self._own_generators(loader)
            if self._skips_by_index() and loader.num_workers > 0:
                self._seeded = SeededBatches(loader.batch_sampler, rank,
                                             lambda: self._apply(self._start or {}))

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
            if self._seeded is not None:
                self._iterator = iter(self._seeded_epoch(epoch, skip))
                batches: Iterator = self._iterator
            elif skip and self._skips_by_index():
                self._iterator = iter(self._loader_like(_SkipBatches(self.loader.batch_sampler, skip)))
                batches = self._iterator
            else:
                self._iterator = iter(self.loader)
                batches = itertools.islice(self._iterator, skip, None) if skip else self._iterator
        if self._persistent() and self._seeded is None:
            # A persistent iterator draws its workers' seed when it is first made, in whichever
            # epoch a run starts, and not again: the epoch's order comes from its start state.
            self._apply(self._start)
        return batches

    def rewind(self) -> None:
        """The generators back to this epoch's start, for an epoch() again from there (a look at
        its first batch is undone: loop.py); epoch() stops the look's workers."""
        if self._start is not None:
            self._apply(self._start)

    def outside(self) -> Iterator[Any]:
        """The loader's own batches for a look outside the training, the generators of its order
        set back after it: the training draws the order it draws without the look."""
        states = self._current()
        try:
            yield from self.loader
        finally:
            self._apply(states)

    def end_epoch(self) -> None:
        self._start = None

    def _persistent(self) -> bool:
        return bool(getattr(self.loader, "persistent_workers", False)) and \
            getattr(self.loader, "num_workers", 0) > 0

    def _skips_by_index(self) -> bool:
        loader = self.loader
        return type(loader) is DataLoader and not isinstance(loader.dataset, IterableDataset) \
            and loader.batch_sampler is not None

    def _seeded_epoch(self, epoch: int, skip: int) -> DataLoader:
        """The loader of an epoch whose samples are seeded by their place in it (_samples.py);
        one for all epochs when the loader keeps its workers."""
        assert self._seeded is not None and self._start is not None
        state = self._start["loader/generator"]
        self._seeded.epoch_seed = int.from_bytes(hashlib.blake2b(state, digest_size=8).digest(), "little")
        self._seeded.epoch, self._seeded.skip = epoch, skip
        if self._seeded_loader is None or not self._persistent():
            self._seeded_loader = self._loader_like(self._seeded, SeededSamples(self.loader.dataset),
                                                        persistent=self._persistent())
        return self._seeded_loader

    def _loader_like(self, batch_sampler: Any, dataset: Any = None,
                         persistent: bool = False) -> DataLoader:
        """A DataLoader of the loader's settings over `batch_sampler` (and `dataset`)."""
        loader = self.loader
        options: dict[str, Any] = dict(
            batch_sampler=batch_sampler, num_workers=loader.num_workers,
            collate_fn=loader.collate_fn, pin_memory=loader.pin_memory, timeout=loader.timeout,
            worker_init_fn=loader.worker_init_fn, generator=loader.generator)
        if loader.num_workers > 0:
            options.update(multiprocessing_context=loader.multiprocessing_context,
                           prefetch_factor=loader.prefetch_factor,
                           persistent_workers=persistent)
        if getattr(loader, "pin_memory_device", ""):
            options["pin_memory_device"] = loader.pin_memory_device
        return DataLoader(loader.dataset if dataset is None else dataset, **options)

    def close(self, final: bool = False) -> None:
        """Stops the worker processes of the last epoch's iterator, unless the loader keeps them
        for the next epoch (persistent_workers) and this is not the `final` close before the
        program exits for a requeue."""
        iterator, self._iterator = self._iterator, None
        shutdown = getattr(iterator, "_shutdown_workers", None)
        owner = self.loader if self._seeded_loader is None else self._seeded_loader
        kept = iterator is getattr(owner, "_iterator", None)  # the loader's persistent one
        if callable(shutdown) and (final or not kept):
            shutdown()
