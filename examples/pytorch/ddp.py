#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""PyTorch DistributedDataParallel under dlx, preemption-safe: a small classifier (Linear,
BatchNorm, Dropout, Adam, StepLR) on synthetic data, or on a dataset the experiment stages to
node-local disk (`data: {stage: [...]}`: the trainer reads DLX_DATA_DIR; ddp_data.yaml).

Run as one rank of a dlx trial:   srun dlx-launch -- /usr/bin/python3 examples/pytorch/ddp.py
dlx-launch sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT, so the process group
needs no configuration (gloo on CPUs, NCCL when this rank has a GPU), and puts the dlx package on
the path. What dlx adds to a DDP script is marked "dlx:":
  - load_state restores the model, optimizer and scheduler (and each rank's RNG) on every rank
    from the checkpoint the trial resumes from, after a preemption, a requeue or a time limit;
  - save_state at the experiment's checkpoint period, and when a checkpoint signal came
    (then exit 85: Slurm requeues the trial and it resumes here);
  - report metrics; at the searcher's target length (ASHA, PBT), save and ask what next;
  - read the data from DLX_DATA_DIR when the experiment stages it (load_data).
Hyperparameters (all optional): learning_rate (0.01; or as a group, optim: {lr: 0.01}, which
dlx passes nested as Determined does), batch_size (32, per rank), epochs (5),
hidden (32), dropout (0.1), seed (7), step_delay_ms (0: a pause per step, to make a short run
long enough to interrupt in tests). Same seed and world size -> the same weights, bit for bit,
however often the run is interrupted.
"""
import datetime
import os
import random
import sys
import time

import numpy
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import dlx
import dlx.torch

SAMPLES, FEATURES, VALIDATION = 4096, 16, 1024
DATASET_FILE = "dataset.pt"  # what make_dataset.py writes: {"x": float32 [N, F], "y": float32 [N, 1]}


def synthetic(seed):
    """The same data on every rank: label = [x.w + 0.1 + noise > 0]."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(SAMPLES, FEATURES, generator=g)
    w = torch.randn(FEATURES, 1, generator=g)
    y = ((x @ w + 0.1 + 0.25 * torch.randn(SAMPLES, 1, generator=g)) > 0).float()
    return x, y


def load_data(seed):
    """The examples and labels, and where they came from. With `data: stage:` dlx-launch has
    copied the dataset once to this node's local disk before the trainer starts and names the
    copy in DLX_DATA_DIR (later trials on the node reuse it): read it from there, never from the
    shared path written in the experiment file. Without it: the synthetic set."""
    data_dir = os.environ.get("DLX_DATA_DIR")
    if not data_dir:
        x, y = synthetic(seed)
        return x, y, "synthetic"
    path = os.path.join(data_dir, DATASET_FILE)
    if not os.path.isfile(path):
        sys.exit(f"ddp: {path} is missing: stage a directory holding {DATASET_FILE} "
                 "(python3 examples/pytorch/make_dataset.py DIR writes one)")
    tensors = torch.load(path)
    return tensors["x"], tensors["y"], path


def main():
    trial = dlx.Trial()
    # The optimiser's settings as a Determined-style group (optim: {lr: ...}, passed nested), or
    # as the top-level learning_rate (asked for only when the group has none: a name read with a
    # default that the experiment lacks is a warning in the trial's log).
    lr = float(trial.hparam("optim.lr") if "optim.lr" in trial.hparams
               else trial.hparam("learning_rate", 0.01))
    batch = int(trial.hparam("batch_size", 32))
    epochs = int(trial.hparam("epochs", 5))
    hidden = int(trial.hparam("hidden", 32))
    dropout = float(trial.hparam("dropout", 0.1))
    seed = int(trial.hparam("seed", 7))
    delay = float(trial.hparam("step_delay_ms", 0)) / 1000

    use_cuda = torch.cuda.is_available()
    timeout = datetime.timedelta(seconds=int(os.environ.get("DLX_COMM_TIMEOUT_S", "300")))
    dist.init_process_group("nccl" if use_cuda else "gloo", init_method="env://", timeout=timeout)
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", trial.local_rank % torch.cuda.device_count()) if use_cuda \
        else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)

    x, y, source = load_data(seed)
    samples, features = x.shape
    validation = min(VALIDATION, samples // 4)
    train_rows = (samples - validation) // world * world  # every rank the same number of steps
    x_train, y_train = x[rank:train_rows:world].to(device), y[rank:train_rows:world].to(device)
    x_valid, y_valid = x[samples - validation + rank::world].to(device), \
        y[samples - validation + rank::world].to(device)
    steps_per_epoch = len(x_train) // batch
    total = epochs * steps_per_epoch

    # Every generator seeded (per-rank streams: dropout differs between ranks; DDP broadcasts rank
    # 0's initial weights), so that a run is a function of its seed and resumes bit-exactly.
    random.seed(seed + rank)
    numpy.random.seed(seed + rank)
    torch.manual_seed(seed + rank)
    model = torch.nn.Sequential(torch.nn.Linear(features, hidden), torch.nn.BatchNorm1d(hidden),
                                torch.nn.ReLU(), torch.nn.Dropout(dropout),
                                torch.nn.Linear(hidden, 1)).to(device)
    ddp = DistributedDataParallel(model, device_ids=[device.index] if use_cuda else None)
    optimizer = torch.optim.Adam(ddp.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)  # per epoch
    loss_fn = torch.nn.BCEWithLogitsLoss(reduction="sum")

    totals = torch.zeros(2, device=device)  # this epoch's loss sum and rows, over all ranks
    objects = {"model": model, "optimizer": optimizer, "scheduler": scheduler,  # dlx:
               "epoch_totals": totals}
    step = dlx.torch.load_state(trial, objects) or 0                            # dlx:
    if rank == 0:
        print(f"ddp: {world} ranks, backend {dist.get_backend()}, device {device}, "
              f"{samples} examples from {source}, "
              f"{'resuming at step ' + str(step) if step else 'starting'}", flush=True)

    def evaluate():
        # BatchNorm's running statistics differ between ranks under DDP (a forward broadcasts
        # rank 0's, then each rank updates them with its own batch) and a checkpoint holds rank
        # 0's. Evaluating with rank 0's on every rank makes validation a function of the saved
        # state: a run resumed just before a validation reports what the uninterrupted run did.
        for buffer in model.buffers():
            dist.broadcast(buffer, 0)
        ddp.eval()
        with torch.no_grad():
            logits = model(x_valid)
            valid = torch.stack([loss_fn(logits, y_valid),
                                 ((logits > 0).float() == y_valid).float().sum(),
                                 torch.tensor(float(len(y_valid)), device=device)])
        dist.all_reduce(valid)
        ddp.train()
        return {"loss": (valid[0] / valid[2]).item(), "accuracy": (valid[1] / valid[2]).item()}

    ddp.train()
    while True:
        target = trial.target_length or total  # dlx: the searcher's length, if it has one
        while step < target:
            epoch, position = divmod(step, steps_per_epoch)
            order = torch.randperm(len(x_train), generator=torch.Generator().manual_seed(
                seed * 1000 + epoch * world + rank)).to(device)
            rows = order[position * batch:(position + 1) * batch]
            optimizer.zero_grad()
            loss = loss_fn(ddp(x_train[rows]), y_train[rows])
            (loss / batch).backward()  # DDP averages the gradients over the ranks
            optimizer.step()
            summed = torch.stack([loss.detach(), torch.tensor(float(batch), device=device)])
            dist.all_reduce(summed)  # replicated, so the checkpoint holds every rank's share
            totals += summed
            step += 1
            if delay:
                time.sleep(delay)
            if step % steps_per_epoch == 0:
                scheduler.step()
                trial.report_training(step, loss=(totals[0] / totals[1]).item())
                totals.zero_()
                if step < target:
                    trial.report_validation(step, **evaluate())
            if dlx.torch.checkpoint_due(trial, step):                          # dlx:
                dlx.torch.save_state(trial, step, objects)
            if dlx.torch.checkpoint_requested(trial):                          # dlx:
                if rank == 0:
                    print(f"ddp: checkpoint requested: saving step {step}", flush=True)
                dlx.torch.save_state(trial, step, objects)
                code = trial.checkpoint_and_exit(step)  # waits for the save; 85: requeue me
                trial.close()
                return code
        # At the target: save first (a pause resumes here, a PBT exploit starts from it), then
        # ask the searcher; every rank gets the same answer.
        metrics = evaluate()
        dlx.torch.save_state(trial, step, objects, metric=metrics["accuracy"])  # dlx:
        decision = trial.report_validation(step, **metrics)                      # dlx:
        if decision != "train" or not trial.target_length:
            break
    trial.finish()  # waits for the last save
    trial.close()
    return 0


if __name__ == "__main__":
    code = main()
    # Debian's torch 1.13 can deadlock destroying a gloo process group at interpreter exit (its
    # worker thread waits for the GIL that the exiting thread holds while joining it; torch 2.0
    # releases the GIL there). main() has closed the trial and waited for every save, so nothing
    # is lost by leaving without running destructors.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
