# SPDX-License-Identifier: Apache-2.0
"""A Determined PyTorchTrial, written the way Determined's MNIST tutorial writes one, for
pytorch_trial_test.py (`entrypoint: model_def:RegressionTrial`): a small regression with dropout
on a synthetic dataset, SGD with momentum, a StepLR stepped every epoch, gradient clipping,
shuffling DataLoaders with 2 worker processes (TRIAL_WORKERS). TRIAL_SIGNAL_AT=N sends this process SIGUSR1
(Slurm's notice) during global batch N (on rank TRIAL_SIGNAL_RANK only, when given);
TRIAL_STOP_AT=N calls context.set_stop_requested(True) there (on TRIAL_STOP_RANK only, when given). The
training metric `stepped` is 1 for a batch after which the weights changed (an optimizer step:
not every batch with gradient aggregation); `autocast` is 1 for a batch whose forward pass ran in
float16 or bfloat16 (TRIAL_AMP=1: context.autocast_forward_pass)."""
import os
import signal
import time

import determined as det
import torch
from torch.utils.data import TensorDataset


def synthetic(records, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(records, 8, generator=g)
    return TensorDataset(x, x.sum(dim=1, keepdim=True) * 0.5 + 0.1 * torch.randn(records, 1, generator=g))


class RegressionTrial(det.pytorch.PyTorchTrial):
    def __init__(self, context: det.pytorch.PyTorchTrialContext) -> None:
        self.context = context
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Dropout(0.1), torch.nn.Linear(16, 1))
        self.model = context.wrap_model(model)
        if os.environ.get("TRIAL_AMP") == "1":  # Determined's AMP: the forward pass autocast
            self.model = context.autocast_forward_pass(self.model)
        self.optimizer = context.wrap_optimizer(
            torch.optim.SGD(self.model.parameters(), lr=context.get_hparam("lr"), momentum=0.9))
        self.scheduler = context.wrap_lr_scheduler(torch.optim.lr_scheduler.StepLR(self.optimizer, 1, gamma=0.7),
                                                   det.pytorch.LRScheduler.StepMode.STEP_EVERY_EPOCH)
        self.signal_at = int(os.environ.get("TRIAL_SIGNAL_AT", "-1"))
        self.delay = float(os.environ.get("TRIAL_STEP_DELAY_S", "0"))  # long enough to requeue on a cluster
        signal_rank = os.environ.get("TRIAL_SIGNAL_RANK")
        if signal_rank is not None and int(signal_rank) != context.distributed.get_rank():
            self.signal_at = -1
        self.stop_at = int(os.environ.get("TRIAL_STOP_AT", "-1"))
        stop_rank = os.environ.get("TRIAL_STOP_RANK")
        if stop_rank is not None and int(stop_rank) != context.distributed.get_rank():
            self.stop_at = -1

    def build_training_data_loader(self) -> det.pytorch.DataLoader:
        # TRIAL_WORKERS=0 on two ranks: bookworm's Python 3.11.2 can deadlock a worker at its fork in
        # a process with DDP's threads (CPython gh-112275; docs/sdk.md), which a test must not wait on.
        return det.pytorch.DataLoader(synthetic(256, 1), batch_size=self.context.get_per_slot_batch_size(),
                                      shuffle=True, num_workers=int(os.environ.get("TRIAL_WORKERS", "2")))

    def build_validation_data_loader(self) -> det.pytorch.DataLoader:
        return det.pytorch.DataLoader(synthetic(64, 2), batch_size=32)

    def train_batch(self, batch, epoch_idx: int, batch_idx: int):
        if batch_idx == self.signal_at:
            os.kill(os.getpid(), signal.SIGUSR1)
        if batch_idx == self.stop_at:
            self.context.set_stop_requested(True)
        time.sleep(self.delay)
        x, y = batch
        prediction = self.model(x)
        loss = torch.nn.functional.mse_loss(prediction.float(), y)
        self.context.backward(loss)
        before = next(self.model.parameters()).detach().clone()
        self.context.step_optimizer(self.optimizer,
                                    clip_grads=lambda params: torch.nn.utils.clip_grad_norm_(params, 1.0))
        stepped = float(not torch.equal(before, next(self.model.parameters()).detach()))
        return {"loss": loss, "lr": self.scheduler.get_last_lr()[0], "stepped": stepped,
                "autocast": float(prediction.dtype in (torch.bfloat16, torch.float16))}

    def evaluate_batch(self, batch):
        x, y = batch
        # The context's epoch is a metric: a run resumed at an epoch's end must validate as the
        # epoch it validates, as the uninterrupted run does.
        return {"validation_loss": torch.nn.functional.mse_loss(self.model(x).float(), y),
                "train_epoch": float(self.context.current_train_epoch())}


class AbsError(det.pytorch.MetricReducer):
    """A MetricReducer without a name: a dict of metrics from every rank's sums."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.total, self.count = 0.0, 0

    def update(self, errors):
        self.total += float(errors.abs().sum())
        self.count += errors.numel()

    def per_slot_reduce(self):
        return self.total, self.count

    def cross_slot_reduce(self, per_slot_metrics):
        totals, counts = zip(*per_slot_metrics)
        if os.environ.get("TRIAL_BAD_REDUCER") == "1":  # a dict, though wrapped with a name below
            return {"mean_abs_error": sum(totals) / sum(counts)}
        return {"mean_abs_error": sum(totals) / sum(counts), "errors_counted": sum(counts)}


class ReducerTrial(RegressionTrial):
    """RegressionTrial with Determined's other metric paths: evaluation_reducer() (SUM of a 1 per
    batch, MAX of each batch's loss), wrap_reducer with a function (the validation records, over
    every rank) and with a MetricReducer returning a dict, a training reducer (the batches trained
    since the last validation, over every rank), and the TensorBoard writer and profiler calls a
    Determined trial makes (without the tensorboard package: a writer that keeps nothing), and
    context.experimental.disable_dataset_reproducibility_checks(); TRIAL_APEX=1 asks for apex,
    TRIAL_TYPO=1 for a context method that does not exist, TRIAL_CLASH=1 a reducer named as an
    evaluate_batch metric, TRIAL_BAD_EVAL_REDUCER=1 an evaluation_reducer() that is no Reducer."""

    def __init__(self, context):
        super().__init__(context)
        clash = os.environ.get("TRIAL_CLASH") == "1"  # a reducer named as evaluate_batch's metric
        self.records = context.wrap_reducer(sum, name="validation_loss" if clash else "validation_records",
                                            for_training=False)
        name = "abs" if os.environ.get("TRIAL_BAD_REDUCER") == "1" else None
        self.abs_error = context.wrap_reducer(AbsError(), name=name, for_training=False)
        self.trained = context.wrap_reducer(sum, name="trained_batches", for_validation=False)
        self.both = context.wrap_reducer(len, name="updates")  # in training and in validation
        self.writer = context.get_tensorboard_writer()
        context.set_profiler(enabled=True, sync_timings=True)
        context.experimental.disable_dataset_reproducibility_checks()
        if os.environ.get("TRIAL_TYPO") == "1":
            context.get_tensorboard_writter()
        if os.environ.get("TRIAL_APEX") == "1":
            context.configure_apex_amp(self.model, self.optimizer, opt_level="O1")

    def evaluation_reducer(self):
        if os.environ.get("TRIAL_BAD_EVAL_REDUCER") == "1":
            return {"max_loss": "max"}
        return {"validation_batches": det.pytorch.Reducer.SUM, "max_loss": det.pytorch.Reducer.MAX}

    def train_batch(self, batch, epoch_idx: int, batch_idx: int):
        self.trained.update(1)
        self.both.update(1)
        metrics = super().train_batch(batch, epoch_idx, batch_idx)
        self.writer.add_scalar("loss", float(metrics["loss"]), batch_idx)
        return metrics

    def evaluate_batch(self, batch):
        x, y = batch
        prediction = self.model(x).float()
        loss = torch.nn.functional.mse_loss(prediction, y)
        self.records.update(len(y))
        self.both.update(1)
        self.abs_error.update(prediction - y)
        return {"validation_loss": loss, "max_loss": loss, "validation_batches": 1}
