# SPDX-License-Identifier: Apache-2.0
"""bench_torch_state's GPU figure (information): how fast dlx.torch.save_state snapshots CUDA
tensors (by default the library's own copy into its pinned buffers; with DLX_TORCH_CUDA_IO=torch a
side-stream copy into PyTorch's pinned memory, then the library's snapshot of that), against the
plain device-to-host copy into pinned memory that tensor.to("cpu", non_blocking=True) does.
Only where torch.cuda.is_available()."""
from __future__ import annotations

import statistics
import time
from typing import Callable

import torch

from workload import LAYERS, MIB


def pinned_copy_vs_snapshot(save: Callable[[dict], None], settle: Callable[[], None], mib: int,
                            repeats: int) -> float:
    """Median over rounds (one warm-up first, order alternating) of pinned-copy time / time
    blocked in save({"gpu": tensors}) for LAYERS CUDA tensors of mib MiB in all; settle() (the
    wait for the file, untimed) follows each save."""
    numel = mib * MIB // 4 // LAYERS
    tensors = {f"t{i}": torch.randn(numel, device="cuda") for i in range(LAYERS)}
    pinned = [torch.empty(numel, pin_memory=True) for _ in range(LAYERS)]
    size = numel * 4 * LAYERS

    def snapshot() -> float:
        torch.cuda.synchronize()
        start = time.perf_counter()
        save({"gpu": tensors})
        seconds = time.perf_counter() - start
        settle()
        return seconds

    def copy() -> float:
        torch.cuda.synchronize()
        start = time.perf_counter()
        for host, tensor in zip(pinned, tensors.values()):
            host.copy_(tensor, non_blocking=True)
        torch.cuda.synchronize()
        return time.perf_counter() - start

    ratios = []
    for index in range(repeats + 1):
        if index % 2 == 0:
            blocked, copied = snapshot(), copy()
        else:
            copied, blocked = copy(), snapshot()
        print(f"  cuda round {index}{' (warm-up, not counted)' if index == 0 else ''}: "
              f"save_state blocked {blocked:.3f} s ({size / blocked / 1e6:.0f} MB/s), pinned copy "
              f"{copied:.3f} s ({size / copied / 1e6:.0f} MB/s)")
        if index:
            ratios.append(copied / blocked)
    return statistics.median(ratios)
