#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The trainer of the dlx.torch.Loop tests: the ordinary PyTorch shape (a map-style dataset, a
shuffling DataLoader with worker processes, dropout, Adadelta, a StepLR stepped after each
epoch, a test DataLoader for validation) run by dlx.torch.Loop, one rank or several (gloo DDP
with a DistributedSampler when WORLD_SIZE > 1).

It reports the training loss of every batch and, when it finishes, prints one JSON line with the
loop's position and a digest of the model, the optimizer, the scheduler, the global RNG and the
loader's generator: an interrupted and resumed run must print the digest of the uninterrupted one.

LOOP_SIGNAL_AT sends this process SIGUSR1 (a checkpoint request, as Slurm's notice) at one point,
to requeue there: "E:B" while training batch B (from 1) of epoch E (from 1), "E:validate" while
validating at the end of epoch E (its test DataLoader's workers running). LOOP_SIGNAL_RANK: the
rank that gets it (default 0); LOOP_SIGNAL_TREE=1: SIGTERM to the rank and all its DataLoader
workers instead, as Slurm signals every process of a step.
Options come from the environment: LOOP_EPOCHS (max_epochs without a searcher length, 3),
LOOP_SAMPLES (training samples, 200), LOOP_BATCH (per rank, 16), LOOP_WORKERS (2), LOOP_DROP_LAST,
LOOP_VALIDATE_EVERY (1), LOOP_SEED (3), LOOP_ACCUMULATE (1: zero_grad, backward, step on every
batch; N: gradients accumulated over N batches, `(i + 1) % N` of `enumerate(loop)`, the optimizer
stepped and zeroed on every N-th, what is left at an epoch's end carried into the next; with
LOOP_STEP_LAST=1 counted by loop.batch, and the epoch's last group stepped too),
LOOP_STOP_AT / LOOP_STOP_RANK / LOOP_BREAK_AT (early stopping: stop_here below), LOOP_RAISE_AT=E
(a RuntimeError in the body of epoch E), LOOP_UNSEEDED=1 (torch's global generator left as Python's
torch seeds it, from the OS, as many public scripts do), LOOP_AUGMENT=1 (each training sample
scaled and shifted by numbers drawn from the loading process's torch, random and numpy
generators, as random transforms are), LOOP_PERSISTENT=1 (the training DataLoader keeps its
workers: persistent_workers=True), LOOP_PEEK=1 (each epoch's body first reads the batch size as
PyTorch's DDP tutorial does, `len(next(iter(loop))[0])`), LOOP_LOOK=1 (a look at a batch before
loop.epochs() and a pass over the loop after it, outside the training).
The result line's `trained` counts the batches this run's epoch bodies trained.
"""
import contextlib
import hashlib
import json
import os
import random
import signal
import sys

import numpy
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

import dlx
import dlx.torch


def option(name, default):
    return int(os.environ.get(name, default))


class Points(Dataset):
    """`size` samples of 8 features and a class among 4, the same bytes for the same seed; each
    sample computed in the worker that loads it (from its index alone)."""

    def __init__(self, size, seed, augment=False):
        self.size, self.seed, self.augment = size, seed, augment
        self.centres = torch.randn(4, 8, generator=torch.Generator().manual_seed(99))

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        g = torch.Generator().manual_seed(self.seed * 100003 + index)
        label = int(torch.randint(4, (1,), generator=g))
        x = self.centres[label] + torch.randn(8, generator=g)
        if self.augment:  # as torchvision's random transforms: the loading process's generators
            x = x * (0.9 + 0.2 * torch.rand(1)) + 0.01 * (random.random() + numpy.random.rand())
        return x, label


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 32)
        self.dropout = nn.Dropout(0.3)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(self.dropout(F.relu(self.fc1(x))))


def descendants(pid):
    """The processes under `pid` (DataLoader workers), from /proc."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry))
    found, pending = [], list(children.get(pid, []))
    while pending:
        child = pending.pop()
        found.append(child)
        pending.extend(children.get(child, []))
    return found


def signal_at(point):
    """Signals this rank at `point` ("E:B" or "E:validate") once it is reached: SIGUSR1 to this
    process, or with LOOP_SIGNAL_TREE=1 SIGTERM to it and every process under it, as Slurm
    signals every process of a step at a requeue or preemption."""
    rank = int(os.environ.get("RANK", "0"))
    wanted = os.environ.get("LOOP_SIGNAL_AT", "")
    if wanted and wanted == point and rank == option("LOOP_SIGNAL_RANK", 0):
        if option("LOOP_SIGNAL_TREE", 0):
            workers = descendants(os.getpid())
            print(f"loop_trainer: rank {rank}: SIGTERM at {point} to it and {len(workers)} "
                  f"workers", file=sys.stderr, flush=True)
            for pid in workers:
                os.kill(pid, signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        print(f"loop_trainer: rank {rank}: SIGUSR1 at {point}", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGUSR1)


def digest(model, optimizer, scheduler, loader):
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        h.update(name.encode() + tensor.numpy().tobytes())
    for index, entry in sorted(optimizer.state_dict()["state"].items()):
        for name, value in sorted(entry.items()):
            h.update(f"{index}/{name}".encode() + torch.as_tensor(value).numpy().tobytes())
    h.update(json.dumps(scheduler.state_dict(), sort_keys=True).encode())
    h.update(torch.get_rng_state().numpy().tobytes())
    h.update(loader.generator.get_state().numpy().tobytes())
    return h.hexdigest()


def main():
    trial = dlx.Trial()
    world = trial.size
    if world > 1:
        import torch.distributed as dist
        dist.init_process_group("gloo", init_method="env://")
    seed = option("LOOP_SEED", 3) + trial.rank  # every generator seeded, per rank
    random.seed(seed)
    numpy.random.seed(seed)
    if not option("LOOP_UNSEEDED", 0):
        torch.manual_seed(seed)
    train_set = Points(option("LOOP_SAMPLES", 200), seed=1, augment=bool(option("LOOP_AUGMENT", 0)))
    sampler = DistributedSampler(train_set, shuffle=True, seed=5) if world > 1 else None
    loader = DataLoader(train_set, batch_size=option("LOOP_BATCH", 16), shuffle=sampler is None,
                        sampler=sampler, num_workers=option("LOOP_WORKERS", 2),
                        drop_last=bool(option("LOOP_DROP_LAST", 0)),
                        persistent_workers=bool(option("LOOP_PERSISTENT", 0)))
    test_loader = DataLoader(Points(64, seed=2), batch_size=32, num_workers=1)
    model = Net()
    trained = model
    if world > 1:  # the replicated state a checkpoint holds (rank 0's) is every rank's
        from torch.nn.parallel import DistributedDataParallel
        trained = DistributedDataParallel(model)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.8)

    def validate():
        model.eval()
        loss, correct = torch.zeros(2), torch.zeros(1)
        with torch.no_grad():
            for x, y in test_loader:
                signal_at(f"{loop.position.epoch}:validate")  # with the test loader's workers up
                out = model(x)
                loss += torch.tensor([F.cross_entropy(out, y, reduction="sum").item(), len(y)])
                correct += (out.argmax(1) == y).sum()
        stop_here(f"{loop.position.epoch}:validate")
        if option("LOOP_LOOK", 0):  # a look at a training batch in validate(): counted nowhere
            assert len(next(iter(loop))[0]) == option("LOOP_BATCH", 16)
        return {"loss": float(loss[0] / loss[1]), "accuracy": float(correct / loss[1])}

    def stop_here(point):
        """LOOP_STOP_AT: loop.stop() at "E:body" (epoch E's body, before its batches) or
        "E:validate" (in validate() at epoch E's end), on LOOP_STOP_RANK (default: every rank);
        "before" before loop.epochs(). LOOP_BREAK_AT=E: a break out of loop.epochs() instead."""
        wanted = os.environ.get("LOOP_STOP_AT", "")
        rank = os.environ.get("LOOP_STOP_RANK", "")
        if wanted == point and (not rank or int(rank) == trial.rank):
            print(f"loop_trainer: rank {trial.rank}: loop.stop() at {point}", file=sys.stderr, flush=True)
            loop.stop()

    loop = dlx.torch.Loop(trial, loader, model, optimizer, scheduler)
    accumulate = option("LOOP_ACCUMULATE", 1)
    stop_here("before")
    if option("LOOP_LOOK", 0):  # outside the training: the loader's batches, counted nowhere
        print(f"loop_trainer: a look before the training: a batch of {len(next(iter(loop))[0])}",
              file=sys.stderr, flush=True)
    trained_here = 0
    for epoch in loop.epochs(option("LOOP_EPOCHS", 3), validate=validate,
                             validate_every=option("LOOP_VALIDATE_EVERY", 1)):
        if epoch == option("LOOP_BREAK_AT", 0):
            break
        if epoch == option("LOOP_RAISE_AT", 0):
            raise RuntimeError(f"loop_trainer: raised in epoch {epoch}")
        stop_here(f"{epoch}:body")
        model.train()
        if option("LOOP_PEEK", 0):  # the DDP tutorial's idiom (multigpu_torchrun.py)
            peeked = len(next(iter(loop))[0])
            assert peeked == option("LOOP_BATCH", 16), peeked
        for i, (x, y) in enumerate(loop):
            trained_here += 1
            if accumulate == 1:
                optimizer.zero_grad()
                loss = F.cross_entropy(trained(x), y)
                loss.backward()
                optimizer.step()
            else:  # the usual accumulation: DDP's all_reduce only on the batch that steps
                stepping = (i + 1) % accumulate == 0
                if option("LOOP_STEP_LAST", 0):  # the docs' idiom: counted by loop.batch
                    stepping = loop.batch % accumulate == 0 or loop.batch == len(loop)
                with trained.no_sync() if world > 1 and not stepping else contextlib.nullcontext():
                    loss = F.cross_entropy(trained(x), y)
                    (loss / accumulate).backward()
                if stepping:
                    optimizer.step()
                    optimizer.zero_grad()
            trial.report_training(loop.step, loss=loss.item())
            signal_at(f"{epoch}:{loop.batch}")
        scheduler.step()
    if option("LOOP_LOOK", 0):
        print(f"loop_trainer: a pass after the training: {sum(1 for _ in loop)} batches",
              file=sys.stderr, flush=True)
    print(json.dumps({"rank": trial.rank, "step": loop.step, "epoch": loop.position.epoch,
                      "batches": loop.position.batches, "records": loop.position.records,
                      "trained": trained_here,
                      "started_from": loop.started_from,
                      "digest": digest(model, optimizer, scheduler, loader)}), flush=True)
    trial.close()
    sys.stdout.flush()
    os._exit(0)  # torch 1.13's gloo teardown can deadlock at exit (examples/pytorch/ddp.py)


if __name__ == "__main__":
    main()
