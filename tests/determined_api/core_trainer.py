# SPDX-License-Identifier: Apache-2.0
"""A trainer written the way Determined's Core API tutorial writes one (import determined as det,
core.init(), searcher.operations(), store_path/restore_path, should_preempt), for
core_api_test.py: a small PyTorch regression with dropout, one synthetic batch per step (drawn
from a generator seeded by the step: the data order needs no state), SGD with momentum and a
StepLR, the RNG state in the checkpoint. CORE_SIGNAL_AT=N sends this process SIGUSR1 (Slurm's
notice) after step N (on rank CORE_SIGNAL_RANK only, default every rank); CORE_BAD_METADATA=1
stores a checkpoint without steps_completed; CORE_STEP_DELAY_S sleeps that long after each step
(a run long enough to be interrupted on the local cluster). With WORLD_SIZE > 1: DDP over gloo, each rank its
own slice of every batch, every rank's RNG state in the chief's checkpoint (gathered); with
CORE_SHARD=1 a sharded checkpoint instead (store_path(shard=True): each rank writes its own
rng-<rank>.pt, the chief state.pt; CORE_SHARD=clash: every rank writes state.pt, which is refused).
CORE_TYPO=1 calls a TrainContext method that does not exist; CORE_CRASH_AT=N ends the process
(os._exit(3)) after reporting step N, past its last checkpoint."""
import json
import os
import pathlib
import signal
import time

import determined as det
import torch


def batch(step, rank=0, size=1):
    g = torch.Generator().manual_seed(1000 + step * size + rank)
    x = torch.randn(16, 8, generator=g)
    return x, x.sum(dim=1, keepdim=True) * 0.5 + 0.1 * torch.randn(16, 1, generator=g)


def save(core_context, model, optimizer, scheduler, steps, bad_metadata=False):
    """Every rank's RNG state to the chief, which stores the checkpoint; or, sharded, every rank
    stores its own."""
    if os.environ.get("CORE_SHARD") == "clash":  # every rank writes the same name: refused
        with core_context.checkpoint.store_path({"steps_completed": steps}, shard=True) as (path, storage_id):
            torch.save(torch.get_rng_state(), path / "state.pt")
        return storage_id
    if os.environ.get("CORE_SHARD") == "1":
        rank = core_context.distributed.rank
        with core_context.checkpoint.store_path({"steps_completed": steps}, shard=True) as (path, storage_id):
            torch.save(torch.get_rng_state(), path / f"rng-{rank}.pt")
            if rank == 0:
                torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                            "scheduler": scheduler.state_dict()}, path / "state.pt")
        return storage_id
    rngs = core_context.distributed.gather(torch.get_rng_state())
    if core_context.distributed.rank != 0:
        return
    metadata = {"step": steps} if bad_metadata else {"steps_completed": steps}
    with core_context.checkpoint.store_path(metadata) as (path, storage_id):
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(), "rngs": rngs}, path / "state.pt")
        (path / "notes" / "steps.txt").parent.mkdir()
        (path / "notes" / "steps.txt").write_text(f"steps {steps}\n")
    return storage_id


def main():
    distributed = None
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        torch.distributed.init_process_group("gloo")
        distributed = det.core.DistributedContext.from_torch_distributed()
    info = det.get_cluster_info()
    assert info is not None, "not a trial"
    hparams = info.trial.hparams
    torch.manual_seed(info.trial.trial_id)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Dropout(0.1), torch.nn.Linear(16, 1))
    if distributed is not None:
        model = torch.nn.parallel.DistributedDataParallel(model)
    torch.manual_seed(100 + info.container_rank)  # each rank's own dropout masks
    optimizer = torch.optim.SGD(model.parameters(), lr=hparams["lr"], momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10, gamma=0.5)
    steps, storage_id = 0, None
    with det.core.init(distributed=distributed) as core_context:
        rank, size = core_context.distributed.rank, core_context.distributed.size
        if os.environ.get("CORE_TYPO") == "1":  # a method Determined's TrainContext lacks too
            core_context.train.report_training_metric(steps_completed=0, metrics={"loss": 1.0})
        if info.latest_checkpoint is not None:
            with core_context.checkpoint.restore_path(info.latest_checkpoint) as path:
                state = torch.load(pathlib.Path(path) / "state.pt")
                model.load_state_dict(state["model"])
                optimizer.load_state_dict(state["optimizer"])
                scheduler.load_state_dict(state["scheduler"])
                rng = pathlib.Path(path) / f"rng-{rank}.pt"  # a sharded checkpoint's
                torch.set_rng_state(torch.load(rng) if rng.exists() else state["rngs"][rank])
                steps = core_context.checkpoint.get_metadata(info.latest_checkpoint)["steps_completed"]
            print(f"core_trainer: resumed at step {steps}", flush=True)
        signal_at = int(os.environ.get("CORE_SIGNAL_AT", "-1"))
        signal_rank = int(os.environ.get("CORE_SIGNAL_RANK", str(rank)))
        delay = float(os.environ.get("CORE_STEP_DELAY_S", "0"))
        crash_at = int(os.environ.get("CORE_CRASH_AT", "-1"))
        for op in core_context.searcher.operations():
            while steps < op.length:
                x, y = batch(steps, rank, size)
                loss = torch.nn.functional.mse_loss(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                scheduler.step()
                steps += 1
                time.sleep(delay)
                core_context.train.report_training_metrics(steps_completed=steps, metrics={"loss": loss.item()})
                if steps == signal_at and rank == signal_rank:
                    os.kill(os.getpid(), signal.SIGUSR1)
                if steps == crash_at:  # dies past its last checkpoint, its reports made durable
                    time.sleep(1.5)  # (the metrics flusher writes every 0.5 s)
                    os._exit(3)
                if steps % 10 == 0 or core_context.preempt.should_preempt():
                    storage_id = save(core_context, model, optimizer, scheduler, steps,
                                      bool(os.environ.get("CORE_BAD_METADATA")))
                    if core_context.preempt.should_preempt():
                        print(f"core_trainer: preempted at step {steps}", flush=True)
                        return
            model.eval()
            with torch.no_grad():
                x, y = batch(10_000)
                validation = torch.nn.functional.mse_loss(model(x), y).item()
            model.train()
            core_context.train.report_validation_metrics(steps_completed=steps,
                                                         metrics={"validation_loss": validation})
            op.report_completed(validation)
        storage_id = save(core_context, model, optimizer, scheduler, steps)
    print(json.dumps({"trial": info.trial.trial_id, "rank": rank, "steps": steps, "version": det.__version__,
                      "storage_id": storage_id, "started_from": info.latest_checkpoint}), flush=True)


if __name__ == "__main__":
    main()
