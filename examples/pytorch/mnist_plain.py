#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A plain PyTorch training script of the most common shape (the one of PyTorch's MNIST
example): epochs, a shuffling DataLoader with worker processes, a small CNN with dropout,
Adadelta, a StepLR schedule and a test pass after every epoch. It knows nothing of dlx;
mnist.py is the same script run as a dlx trial (docs/quickstart.md shows the diff).

The data is a small synthetic digit-like set made in memory (no download): each of 10 classes is
a fixed random stroke pattern, each image its class's pattern shifted and noisy.

    /usr/bin/python3 examples/pytorch/mnist_plain.py --epochs 2
"""
import argparse

import torch
import torch.nn.functional as F
from torch import nn
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, Dataset


class Digits(Dataset):
    """`size` 28x28 images of 10 classes; the same for the same `seed` (the patterns are the same
    for every seed, so a training and a test set of different seeds share their classes)."""

    def __init__(self, size, seed):
        strokes = torch.rand(10, 1, 28, 28, generator=torch.Generator().manual_seed(0))
        patterns = (strokes > 0.8).float()
        g = torch.Generator().manual_seed(seed)
        self.labels = torch.randint(10, (size,), generator=g)
        shifts = torch.randint(-2, 3, (size, 2), generator=g).tolist()
        self.images = torch.stack([torch.roll(patterns[c], tuple(s), dims=(1, 2))
                                   for c, s in zip(self.labels.tolist(), shifts)])
        self.images += 0.5 * torch.randn(self.images.shape, generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        return self.images[index], self.labels[index]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(16 * 12 * 12, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(x)))), 2)
        x = F.relu(self.fc1(torch.flatten(self.dropout1(x), 1)))
        return F.log_softmax(self.fc2(self.dropout2(x)), dim=1)


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print(f"train epoch {epoch}: batch {batch_idx + 1}/{len(train_loader)}, "
                  f"loss {loss.item():.4f}", flush=True)


def test(model, device, test_loader):
    model.eval()
    loss, correct = 0.0, 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            loss += F.nll_loss(output, target, reduction="sum").item()
            correct += (output.argmax(dim=1) == target).sum().item()
    loss /= len(test_loader.dataset)
    print(f"test: loss {loss:.4f}, accuracy {correct}/{len(test_loader.dataset)}", flush=True)


def main():
    parser = argparse.ArgumentParser(description="a CNN on synthetic digits")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--test-batch-size", type=int, default=500)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--gamma", type=float, default=0.7)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--train-size", type=int, default=4096)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--log-interval", type=int, default=20)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_loader = DataLoader(Digits(args.train_size, seed=1), batch_size=args.batch_size,
                              shuffle=True, num_workers=args.workers)
    test_loader = DataLoader(Digits(1000, seed=2), batch_size=args.test_batch_size,
                             num_workers=args.workers)
    model = Net().to(device)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        test(model, device, test_loader)
        scheduler.step()


if __name__ == "__main__":
    main()
