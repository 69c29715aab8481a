# SPDX-License-Identifier: Apache-2.0
"""Two ranks (torch.distributed over gloo, DDP, Adam + StepLR + BatchNorm, per-rank data order
from each rank's own RNG) without Slurm: a run stopped after step 12 (last checkpoint: step 10)
and resumed ends bit-identical to an uninterrupted run, because every rank resumes from the
checkpoint rank 0 chose (without a dlx communicator the ranks agree through the trial's
directory, DLX_RUN_ID naming each run) and gets its own RNG states back. One rank cannot
resume that checkpoint's per-rank state (a clear error) but can load its model with
restore_rng=False. Needs DLX_LIBRARY and PYTHONPATH (python/)."""
import atexit
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

TOTAL, SAVE_EVERY = 20, 5


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(stop_at, signal_at=0):
    import faulthandler
    faulthandler.dump_traceback_later(90, exit=True)  # a hang shows where, then fails the test
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    import dlx
    import dlx.torch

    trial = dlx.Trial()
    dist.init_process_group("gloo", init_method="env://")
    rank = dist.get_rank()
    torch.manual_seed(1 + rank)  # per-rank streams: the data order depends on each rank's RNG
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(),
                                torch.nn.Linear(8, 1))
    ddp = DistributedDataParallel(model)
    optimizer = torch.optim.Adam(ddp.parameters(), lr=0.01)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
    objects = {"model": model, "optimizer": optimizer, "scheduler": scheduler}
    data = torch.Generator().manual_seed(42)
    x, y = torch.randn(64, 4, generator=data), torch.randn(64, 1, generator=data)

    step = dlx.torch.load_state(trial, objects) or 0
    steps = [torch.zeros(1, dtype=torch.int64) for _ in range(dist.get_world_size())]
    dist.all_gather(steps, torch.tensor([step]))
    if len({int(s) for s in steps}) != 1:
        print(f"rank {rank}: the ranks resumed from different steps: {[int(s) for s in steps]}", flush=True)
        sys.exit(3)
    while step < min(stop_at, TOTAL):
        rows = torch.randperm(64)[:8]  # this rank's RNG
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(ddp(x[rows]), y[rows]).backward()
        optimizer.step()
        scheduler.step()
        step += 1
        if step % SAVE_EVERY == 0:
            dlx.torch.save_state(trial, step, objects)
        if step == signal_at and rank == 1:
            os.kill(os.getpid(), signal.SIGTERM)  # Slurm's notice, reaching rank 1 only (so far)
        if signal_at and dlx.torch.checkpoint_requested(trial):
            dlx.torch.save_state(trial, step, objects)
            code = trial.checkpoint_and_exit(step)
            trial.close()
            sys.stdout.flush()
            os._exit(code)
    trial.wait_for_checkpoint()
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode() + tensor.numpy().tobytes())
    for index, entry in sorted(optimizer.state_dict()["state"].items()):
        for name, tensor in sorted(entry.items()):
            digest.update(f"{index}/{name}".encode() + tensor.numpy().tobytes())
    digest.update(json.dumps(scheduler.state_dict(), sort_keys=True).encode())
    digest.update(torch.get_rng_state().numpy().tobytes())
    print(json.dumps({"rank": rank, "step": step, "hash": digest.hexdigest()}), flush=True)
    trial.close()
    sys.stdout.flush()
    os._exit(0)  # torch 1.13's gloo teardown can deadlock at exit (see examples/pytorch/ddp.py)


def run(experiment, run_id, stop_at, signal_at=0):
    """Both ranks of one run; their result lines, rank order (none when signalled: they exit 85)."""
    env = dict(os.environ, DLX_EXPERIMENT_DIR=experiment, DLX_TRIAL_ID="0", DLX_HPARAMS="{}",
               DLX_CHECKPOINT_DIR=os.path.join(experiment, "trials", "0", "checkpoints"),
               DLX_LATEST_CHECKPOINT="", WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(free_port()), DLX_RUN_ID=run_id, DLX_RESUME_WAIT_S="60")
    ranks = [subprocess.Popen([sys.executable, __file__, "worker", str(stop_at), str(signal_at)],
                              env=dict(env, RANK=str(r), LOCAL_RANK=str(r)), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for r in range(2)]
    results = []
    for rank, process in enumerate(ranks):
        try:
            out, err = process.communicate(timeout=180)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
            err += "\n(timed out after 180 s)"
        if process.returncode != (85 if signal_at else 0):
            for other in ranks:
                if other.poll() is None:
                    other.kill()
            raise AssertionError(f"{run_id} rank {rank} exited {process.returncode}:\n{out}\n{err}")
        if not signal_at:
            results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def signalled_rank_1(root):
    """SIGTERM reaches rank 1 only: dlx.torch.checkpoint_requested stops both ranks at the same
    step, and rank 0, which got no signal, records the one that stopped the trial."""
    import h5py

    experiment = os.path.join(root, "signalled")
    run(experiment, "signalled-1", TOTAL, signal_at=7)
    with h5py.File(os.path.join(experiment, "trials", "0", "trial.h5"), "r") as f:
        attrs = {key: f.attrs[key] for key in ("stop_reason", "stop_cause")}
    attrs = {key: value.decode() if isinstance(value, bytes) else value for key, value in attrs.items()}
    assert attrs["stop_reason"] == "requeue: checkpoint at step 7 after SIGTERM", attrs
    assert "SIGTERM" in attrs["stop_cause"], attrs
    assert os.path.exists(os.path.join(experiment, "trials", "0", "checkpoints", "step-7.h5"))
    print(f"signalled rank 1 only: both ranks exited 85 at step 7; rank 0 recorded "
          f"{attrs['stop_reason']!r} ({attrs['stop_cause']})")


def main():
    root = tempfile.mkdtemp(prefix="dlx-torch-ranks-")
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    reference, resumed = os.path.join(root, "reference"), os.path.join(root, "resumed")
    want = run(reference, "reference-1", TOTAL)
    first = run(resumed, "resumed-1", 12)
    assert [r["step"] for r in first] == [12, 12], first
    again = run(resumed, "resumed-2", TOTAL)
    assert [r["step"] for r in again] == [TOTAL, TOTAL], again
    for rank in range(2):
        assert again[rank]["hash"] == want[rank]["hash"], \
            f"rank {rank}: resumed run differs from the uninterrupted one: {again[rank]} vs {want[rank]}"
    print(f"two ranks: resumed from step 10 on both ranks; final state identical to the "
          f"uninterrupted run ({want[0]['hash'][:16]}...)")
    signalled_rank_1(root)

    # One rank, the two-rank checkpoint: per-rank state refused with what to do; the model loads
    # with restore_rng=False.
    os.environ.update(DLX_EXPERIMENT_DIR=resumed, DLX_TRIAL_ID="0", DLX_HPARAMS="{}",
                      DLX_CHECKPOINT_DIR=os.path.join(resumed, "trials", "0", "checkpoints"),
                      DLX_LATEST_CHECKPOINT="", RANK="0", WORLD_SIZE="1")
    import torch
    import dlx
    import dlx.torch
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(),
                                torch.nn.Linear(8, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    objects = {"model": model, "optimizer": optimizer,
               "scheduler": torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)}
    with dlx.Trial() as trial:
        try:
            dlx.torch.load_state(trial, objects)
            raise AssertionError("a 2-rank checkpoint must not restore per-rank state on 1 rank")
        except dlx.Error as error:
            text = str(error)
            assert "saved by 2 ranks, this run has 1" in text and "restore_rng=False" in text, text
            print(f"  refused: {text[:160]}")
        step = dlx.torch.load_state(trial, objects, restore_rng=False)
        assert step == TOTAL, step
        import h5py
        with h5py.File(os.path.join(resumed, "trials", "0", "checkpoints", f"step-{TOTAL}.h5"), "r") as f:
            assert (f["tensors/model/0.weight"][()] == model[0].weight.detach().numpy()).all()
            assert set(f["tensors/rng"]) == {"rank-0", "rank-1"}, list(f["tensors/rng"])
    print("torch two ranks: ok")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        worker(int(sys.argv[2]), int(sys.argv[3]))
    else:
        main()
