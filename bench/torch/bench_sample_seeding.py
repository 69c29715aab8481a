#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""bench_sample_seeding: what dlx.torch.Loop's per-sample seeding costs a DataLoader with worker
processes (python/dlx/torch/_samples.py: each sample's generators seeded from its place in the
epoch, so that a resumed epoch's random transforms are the uninterrupted run's), against the same
DataLoader iterated as PyTorch does, in alternating rounds (docs/benchmarks.md, "DataLoader
workers").

    bench_sample_seeding.py [--rounds N] [--samples N] [--workers N] [--smoke]

The dataset is the shape of an image pipeline without files: a 3x256x256 uint8 image made from its
index, a random crop of 224x224, a random horizontal flip, conversion to float and normalisation,
drawn from torch's global generator as torchvision's transforms do. Batches of 32. Results
(medians over rounds):
  sample_seeding_us                    one sample's seeding (blake2b and three generators), in us
  seeded_vs_plain_epoch_time           an epoch through the loop's seeded loader / the plain one
                                       (target <= 1.03)
"""
import argparse
import statistics
import time
import timeit

import torch
from torch.utils.data import DataLoader

from dlx.torch._feed import Feed
from dlx.torch._samples import sample_seed, seed_generators


class Images:
    def __init__(self, size: int):
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        image = torch.full((3, 256, 256), index % 251, dtype=torch.uint8)
        top, left = (int(v) for v in torch.randint(0, 33, (2,)))
        crop = image[:, top:top + 224, left:left + 224]
        if torch.rand(()) < 0.5:
            crop = crop.flip(2)
        return (crop.float() / 255 - 0.45) / 0.225, index % 10


def epoch_time(loader: DataLoader, seeded: bool) -> float:
    started = time.perf_counter()
    if seeded:
        feed = Feed(loader, 0, 1)
        for _ in feed.epoch(0, 0, False):
            pass
        feed.close(final=True)
    else:
        for _ in loader:
            pass
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--samples", type=int, default=2048)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--smoke", action="store_true", help="two short rounds: that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.rounds, args.samples = 2, 128
    torch.manual_seed(0)
    repeats = 20_000
    seeding = timeit.timeit(lambda: seed_generators(sample_seed(12345, 3, 1, 777)), number=repeats)
    seeding_us = seeding / repeats * 1e6
    times: dict[bool, list[float]] = {True: [], False: []}
    for round_number in range(args.rounds):
        for seeded in ((True, False) if round_number % 2 == 0 else (False, True)):
            loader = DataLoader(Images(args.samples), batch_size=32, shuffle=True,
                                num_workers=args.workers)
            times[seeded].append(epoch_time(loader, seeded))
    seeded, plain = statistics.median(times[True]), statistics.median(times[False])
    print(f"# {args.rounds} rounds of an epoch of {args.samples} samples, {args.workers} workers; "
          f"seeded: " + ", ".join(f"{t:.3f}" for t in times[True]) + " s; plain: "
          + ", ".join(f"{t:.3f}" for t in times[False]) + " s")
    print(f"# per sample: {plain / args.samples * 1e6:.0f} us plain")
    print(f"# result: sample_seeding_us {seeding_us:.1f} (reference)")
    print(f"# result: seeded_vs_plain_epoch_time {seeded / plain:.3f} (target <= 1.03)")


if __name__ == "__main__":
    main()
