# SPDX-License-Identifier: Apache-2.0
"""What bench_torch_state's parts share: the state a training program checkpoints (an fp32 model
and its Adam optimizer after one step), a dlx trial outside Slurm, cold reads and timing."""
from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Callable

import torch

MIB = 1 << 20
LAYERS = 4


def layers() -> int:
    """The model's number of layers: LAYERS, or DLX_BENCH_LAYERS (bench_torch_state.py --layers
    sets it for its own process and the fresh ones it starts)."""
    return int(os.environ.get("DLX_BENCH_LAYERS", LAYERS))


def build_state(mib: int, device: str = "cpu", *,
                stepped: bool = True) -> tuple[torch.nn.Module, torch.optim.Adam]:
    """layers() square fp32 Linear layers of mib/3 MiB and Adam after one step (its exp_avg and
    exp_avg_sq: mib MiB in all); the gradients dropped, as after optimizer.zero_grad().
    stepped=False: the optimizer as a resuming program builds it, with no state yet."""
    count = layers()
    width = max(8, int(math.sqrt(mib * MIB / 3 / 4 / count)) // 8 * 8)
    torch.manual_seed(0)
    model = torch.nn.Sequential(*(torch.nn.Linear(width, width) for _ in range(count))).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    if not stepped:
        return model, optimizer
    model(torch.randn(8, width, device=device)).square().mean().backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return model, optimizer


def moments(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    """Adam's exp_avg and exp_avg_sq tensors (its per-parameter "step" counters left out)."""
    return [t for state in optimizer.state.values() for k, t in state.items() if k != "step"]


def state_tensors(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    return [p.detach() for p in model.parameters()] + moments(optimizer)


def nbytes(tensors: list[torch.Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def open_trial(directory: Path):
    """A dlx.Trial outside Slurm (trial 0, one rank), its checkpoints in
    directory/trials/0/checkpoints."""
    os.environ.update({
        "DLX_EXPERIMENT_DIR": str(directory), "DLX_TRIAL_ID": "0", "DLX_HPARAMS": "{}",
        "DLX_CHECKPOINT_DIR": str(directory / "trials" / "0" / "checkpoints"),
        "DLX_LATEST_CHECKPOINT": "", "RANK": "0", "WORLD_SIZE": "1"})
    import dlx
    return dlx.Trial()


def torch_save(model: torch.nn.Module, optimizer: torch.optim.Optimizer, path: Path) -> None:
    """PyTorch's own durable checkpoint: torch.save of both state dicts, flush, fsync."""
    with open(path, "wb") as f:
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, f)
        f.flush()
        os.fsync(f.fileno())


def drop_cache(path: Path) -> None:
    """The file's pages out of the page cache (no root needed), so that the next read is cold."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def time_calls(owner: object, name: str, parts: dict[str, float], part: str) -> None:
    """Shadows owner.name with an instance attribute that adds each call's duration to
    parts[part]: where a load spends its time, timed around the calls it makes."""
    method = getattr(owner, name)

    def call(*args, **kwargs):
        start = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            parts[part] = parts.get(part, 0.0) + time.perf_counter() - start
    setattr(owner, name, call)
