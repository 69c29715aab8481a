# SPDX-License-Identifier: Apache-2.0
"""Determined's side of bench_harness_overhead.py: the model as a PyTorchTrial
(`entrypoint: overhead_trial:OverheadTrial`), run by dlx's harness."""
import determined as det
import torch

import overhead_model


class OverheadTrial(det.pytorch.PyTorchTrial):
    def __init__(self, context: det.pytorch.PyTorchTrialContext) -> None:
        self.context = context
        self.model = context.wrap_model(overhead_model.model())
        self.optimizer = context.wrap_optimizer(torch.optim.Adam(self.model.parameters(), lr=1e-3))
        self.span = overhead_model.Span()

    def build_training_data_loader(self) -> det.pytorch.DataLoader:
        return det.pytorch.DataLoader(overhead_model.dataset(), batch_size=overhead_model.BATCH, shuffle=True)

    def build_validation_data_loader(self) -> det.pytorch.DataLoader:
        return det.pytorch.DataLoader(torch.utils.data.TensorDataset(torch.zeros(1, 256), torch.zeros(1).long()))

    def train_batch(self, batch, epoch_idx: int, batch_idx: int):
        self.span.batch(batch_idx)
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self.model(x), y)
        self.context.backward(loss)
        self.context.step_optimizer(self.optimizer)
        if batch_idx + 1 == overhead_model.BATCHES:
            self.span.end()
        return {"loss": loss}

    def evaluate_batch(self, batch):
        x, y = batch
        return {"validation_loss": torch.nn.functional.cross_entropy(self.model(x), y)}
