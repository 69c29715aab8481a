#!/usr/bin/python3
"""PyTorch DistributedDataParallel under dlx: a small MLP classifier on synthetic data.

Run as one rank of a dlx trial:   srun dlx-launch -- /usr/bin/python3 examples/pytorch/ddp.py
dlx-launch sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT, so the process group
needs no configuration: gloo on CPUs, NCCL when this rank has a GPU. The dlx module (python/dlx.py)
gives the trial's hyperparameters, records metrics in trials/<id>/trial.h5 (rank 0) and reports
checkpoint signals; the ranks agree on stopping with an all_reduce, then exit 85 (requeue).
Hyperparameters (all optional): learning_rate (0.1), batch_size (32, per rank), epochs (5),
hidden (32), seed (7). Same seed and world size -> the same losses, bit for bit.
"""
import datetime
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import dlx

SAMPLES, FEATURES, VALIDATION = 4096, 16, 1024


def synthetic(seed):
    """The same data on every rank: label = [x.w + 0.1 + noise > 0]."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(SAMPLES, FEATURES, generator=g)
    w = torch.randn(FEATURES, 1, generator=g)
    y = ((x @ w + 0.1 + 0.25 * torch.randn(SAMPLES, 1, generator=g)) > 0).float()
    return x, y


def main():
    trial = dlx.Trial()
    lr = float(trial.hparam("learning_rate", 0.1))
    batch = int(trial.hparam("batch_size", 32))
    epochs = int(trial.hparam("epochs", 5))
    hidden = int(trial.hparam("hidden", 32))
    seed = int(trial.hparam("seed", 7))

    use_cuda = torch.cuda.is_available()
    timeout = datetime.timedelta(seconds=int(os.environ.get("DLX_COMM_TIMEOUT_S", "300")))
    dist.init_process_group("nccl" if use_cuda else "gloo", init_method="env://", timeout=timeout)
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", trial.local_rank % torch.cuda.device_count()) if use_cuda \
        else torch.device("cpu")
    if rank == 0:
        print(f"ddp: {world} ranks, backend {dist.get_backend()}, device {device}", flush=True)

    x, y = synthetic(seed)
    train_rows = (SAMPLES - VALIDATION) // world * world  # every rank the same number of steps
    x_train, y_train = x[rank:train_rows:world].to(device), y[rank:train_rows:world].to(device)
    x_valid, y_valid = x[SAMPLES - VALIDATION + rank::world].to(device), \
        y[SAMPLES - VALIDATION + rank::world].to(device)

    torch.manual_seed(seed + rank)  # different initial weights per rank: DDP broadcasts rank 0's
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, hidden), torch.nn.ReLU(),
                                torch.nn.Linear(hidden, 1)).to(device)
    ddp = DistributedDataParallel(model, device_ids=[device.index] if use_cuda else None)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=lr)
    loss_fn = torch.nn.BCEWithLogitsLoss(reduction="sum")

    step = 0
    for epoch in range(epochs):
        order = torch.randperm(len(x_train), generator=torch.Generator().manual_seed(
            seed * 1000 + epoch * world + rank)).to(device)
        totals = torch.zeros(2, device=device)  # loss sum, rows
        ddp.train()
        for first in range(0, len(order) - batch + 1, batch):
            rows = order[first:first + batch]
            optimizer.zero_grad()
            loss = loss_fn(ddp(x_train[rows]), y_train[rows])
            (loss / batch).backward()  # DDP averages the gradients over the ranks
            optimizer.step()
            totals += torch.stack([loss.detach(), torch.tensor(float(batch), device=device)])
            step += 1
        dist.all_reduce(totals)
        trial.report_training(step, loss=(totals[0] / totals[1]).item())

        ddp.eval()
        with torch.no_grad():
            logits = model(x_valid)
            valid = torch.stack([loss_fn(logits, y_valid),
                                 ((logits > 0).float() == y_valid).float().sum(),
                                 torch.tensor(float(len(y_valid)), device=device)])
        dist.all_reduce(valid)
        trial.report_validation(step, loss=(valid[0] / valid[2]).item(),
                                accuracy=(valid[1] / valid[2]).item())

        # A checkpoint signal reaches one or all ranks: every rank stops at the same epoch.
        stop = torch.tensor([1.0 if trial.checkpoint_requested() else 0.0], device=device)
        dist.all_reduce(stop, op=dist.ReduceOp.MAX)
        if stop.item() > 0:
            if rank == 0:
                print(f"ddp: checkpoint requested: stopping after epoch {epoch + 1}", flush=True)
            dist.destroy_process_group()
            return dlx.REQUEUE_EXIT_CODE

    trial.finish()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
