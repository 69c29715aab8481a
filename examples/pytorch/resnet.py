#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A small ResNet image classifier under dlx: CIFAR-shaped synthetic data (3x32x32, 10 classes),
AdamW, a cosine learning-rate schedule, mixed precision (autocast + GradScaler) on CUDA, data
parallel over any number of ranks (gloo on CPUs, NCCL on GPUs), searched with ASHA or PBT.

    srun dlx-launch      # the entrypoint of examples/pytorch/resnet_asha.yaml / resnet_pbt.yaml

The searcher's unit is batches (steps): the trial trains to trial.target_length, saves its state
there (a paused ASHA trial resumes from it when promoted; a PBT exploit starts from a parent's),
reports validation accuracy and does what the searcher says. A checkpoint signal (preemption,
requeue, time limit) saves and exits 85 on every rank; the requeued run resumes where it stopped.
Hyperparameters: learning_rate (1e-3), weight_decay (0.05) (or the two as a group, optim: {lr,
weight_decay}, passed nested as Determined does), width (16: channels of the first
stage), batch_size (32, per rank), total_batches (the schedule's length: the searcher's
max_length, 96), seed (7).
"""
import datetime
import math
import os
import random
import sys

import numpy
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel

import dlx
import dlx.torch

TRAIN, VALIDATION, CLASSES = 2048, 512, 10


def cifar_shaped(seed):
    """Deterministic images: each class a smooth random pattern, each image its class's pattern,
    shifted, scaled and noisy. Learnable, but not in one step."""
    g = torch.Generator().manual_seed(seed)
    patterns = F.interpolate(torch.randn(CLASSES, 3, 8, 8, generator=g), size=32, mode="bilinear",
                             align_corners=False)
    labels = torch.randint(CLASSES, (TRAIN + VALIDATION,), generator=g)
    shifts = torch.randint(-3, 4, (TRAIN + VALIDATION, 2), generator=g)
    images = torch.stack([torch.roll(patterns[c], tuple(s.tolist()), dims=(1, 2))
                          for c, s in zip(labels, shifts)])
    scale = 0.5 + torch.rand(TRAIN + VALIDATION, 1, 1, 1, generator=g)
    images = images * scale + 1.5 * torch.randn(images.shape, generator=g)
    return images, labels


class BasicBlock(nn.Module):
    def __init__(self, inputs, outputs, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(inputs, outputs, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(outputs)
        self.conv2 = nn.Conv2d(outputs, outputs, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(outputs)
        self.shortcut = nn.Sequential()
        if stride != 1 or inputs != outputs:
            self.shortcut = nn.Sequential(nn.Conv2d(inputs, outputs, 1, stride, bias=False),
                                          nn.BatchNorm2d(outputs))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class ResNet(nn.Module):
    """ResNet-8: a stem and three stages of one basic block (width, 2 width, 4 width)."""

    def __init__(self, width):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width),
                                  nn.ReLU())
        self.layer1 = BasicBlock(width, width, 1)
        self.layer2 = BasicBlock(width, 2 * width, 2)
        self.layer3 = BasicBlock(2 * width, 4 * width, 2)
        self.fc = nn.Linear(4 * width, CLASSES)

    def forward(self, x):
        x = self.layer3(self.layer2(self.layer1(self.stem(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def main():
    trial = dlx.Trial()

    def group_or_top(member, name, default):
        """The optimiser's settings as a Determined-style group (optim: {lr: ..., weight_decay:
        ...}, passed nested) or as top-level names. Only the one present is asked for: a name read
        with a default that the experiment lacks is a warning in the trial's log."""
        return trial.hparam(member) if member in trial.hparams else trial.hparam(name, default)

    lr = float(group_or_top("optim.lr", "learning_rate", 1e-3))
    weight_decay = float(group_or_top("optim.weight_decay", "weight_decay", 0.05))
    width = int(trial.hparam("width", 16))
    batch = int(trial.hparam("batch_size", 32))
    total = int(trial.hparam("total_batches", 96))
    seed = int(trial.hparam("seed", 7))

    use_cuda = torch.cuda.is_available()
    timeout = datetime.timedelta(seconds=int(os.environ.get("DLX_COMM_TIMEOUT_S", "300")))
    dist.init_process_group("nccl" if use_cuda else "gloo", init_method="env://", timeout=timeout)
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", trial.local_rank % torch.cuda.device_count()) if use_cuda \
        else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)

    images, labels = cifar_shaped(seed)
    x_train, y_train = images[rank:TRAIN:world].to(device), labels[rank:TRAIN:world].to(device)
    x_valid, y_valid = images[TRAIN + rank::world].to(device), labels[TRAIN + rank::world].to(device)
    steps_per_epoch = len(x_train) // batch

    random.seed(seed + rank)  # every generator seeded: the run is a function of its seed
    numpy.random.seed(seed + rank)
    torch.manual_seed(seed + rank)
    model = ResNet(width).to(device)
    if use_cuda:
        model = model.to(memory_format=torch.channels_last)
    ddp = DistributedDataParallel(model, device_ids=[device.index] if use_cuda else None)
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=lr, weight_decay=weight_decay)
    cosine = lambda step: 0.5 * (1 + math.cos(math.pi * min(step, total) / total))  # noqa: E731
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, cosine)  # per batch
    scaler = torch.cuda.amp.GradScaler(enabled=use_cuda)

    objects = {"model": model, "optimizer": optimizer, "scheduler": scheduler, "scaler": scaler}
    step = dlx.torch.load_state(trial, objects) or 0
    # This trial's hyperparameters win over the loaded optimizer's: a PBT exploit loads its
    # parent's optimizer, whose groups hold the parent's learning rate and weight decay.
    scheduler.base_lrs = [lr for _ in optimizer.param_groups]
    for group in optimizer.param_groups:
        group.update(initial_lr=lr, lr=lr * cosine(scheduler.last_epoch), weight_decay=weight_decay)
    if rank == 0:
        print(f"resnet: {world} ranks on {device}, width {width}, lr {lr:.2e}, "
              f"{'from step ' + str(step) if step else 'from scratch'} to "
              f"{trial.target_length or total}", flush=True)

    def evaluate():
        # BatchNorm's running statistics differ between ranks under DDP (a forward broadcasts
        # rank 0's, then each rank updates them with its own batch) and a checkpoint holds rank
        # 0's. Evaluating with rank 0's on every rank makes validation a function of the saved
        # state: a run resumed just before a validation reports what the uninterrupted run did.
        for buffer in model.buffers():
            dist.broadcast(buffer, 0)
        ddp.eval()
        with torch.no_grad(), torch.autocast(device.type, enabled=use_cuda):
            logits = model(x_valid)
            sums = torch.stack([F.cross_entropy(logits.float(), y_valid, reduction="sum"),
                                (logits.argmax(1) == y_valid).float().sum(),
                                torch.tensor(float(len(y_valid)), device=device)])
        dist.all_reduce(sums)
        ddp.train()
        return {"loss": (sums[0] / sums[2]).item(), "accuracy": (sums[1] / sums[2]).item()}

    ddp.train()
    while True:
        target = trial.target_length or total
        while step < target:
            epoch, position = divmod(step, steps_per_epoch)
            order = torch.randperm(len(x_train), generator=torch.Generator().manual_seed(
                seed * 1000 + epoch * world + rank)).to(device)
            rows = order[position * batch:(position + 1) * batch]
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device.type, enabled=use_cuda):
                loss = F.cross_entropy(ddp(x_train[rows]), y_train[rows])
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()
            step += 1
            if step % 8 == 0:
                trial.report_training(step, loss=loss.item())
            if dlx.torch.checkpoint_due(trial, step):
                dlx.torch.save_state(trial, step, objects)
            if dlx.torch.checkpoint_requested(trial):
                dlx.torch.save_state(trial, step, objects)
                code = trial.checkpoint_and_exit(step)
                trial.close()
                return code
        metrics = evaluate()
        dlx.torch.save_state(trial, step, objects, metric=metrics["accuracy"])
        decision = trial.report_validation(step, **metrics)
        if rank == 0:
            print(f"resnet: step {step}: accuracy {metrics['accuracy']:.3f}: the searcher says "
                  f"{decision}", flush=True)
        if decision != "train" or not trial.target_length:
            break
    trial.finish()
    trial.close()
    return 0


if __name__ == "__main__":
    code = main()
    # Leave without destructors: Debian's torch 1.13 can deadlock tearing down a gloo process
    # group at exit (examples/pytorch/ddp.py); main() closed the trial and waited for its saves.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
