# SPDX-License-Identifier: Apache-2.0
"""Plain dlx.torch's side of bench_harness_overhead.py: the same model, data, optimizer and seed
in an ordinary loop over dlx.torch.Loop, reporting the loss of every batch as the harness does."""
import random

import dlx
import dlx.torch
import numpy
import torch

import overhead_model


def main() -> None:
    trial = dlx.Trial()
    seed = 3 + trial.id
    random.seed(seed)
    numpy.random.seed(seed)
    torch.manual_seed(seed)
    model = overhead_model.model()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loader = torch.utils.data.DataLoader(overhead_model.dataset(), batch_size=overhead_model.BATCH, shuffle=True,
                                         generator=torch.Generator().manual_seed(seed))
    loop = dlx.torch.Loop(trial, loader, model, optimizer)
    span = overhead_model.Span()

    def validate():
        with torch.no_grad():
            x, y = torch.zeros(1, 256), torch.zeros(1).long()
            return {"validation_loss": float(torch.nn.functional.cross_entropy(model(x), y))}

    for _ in loop.epochs(validate=validate):
        for index, (x, y) in enumerate(loop):
            span.batch(index)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if index + 1 == overhead_model.BATCHES:
                span.end()
            trial.report_training(loop.step, {"loss": float(loss)})


if __name__ == "__main__":
    main()
