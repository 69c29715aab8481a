# SPDX-License-Identifier: Apache-2.0
"""Per-rank state on its way to rank 0, the only writer of a checkpoint.

Each rank packs its streams into one uint8 tensor (an 8-byte little-endian length of a JSON
index [[name, bytes], ...], the index, then the bytes) and the ranks all_gather them through
the program's torch.distributed process group (lengths first, then the padded bytes; on NCCL the
tensors go through this rank's current CUDA device). libdlx itself has no torch dependency:
this gather is the only collective dlx.torch adds, and save_state is called by every rank.
"""
from __future__ import annotations

import json
import struct

import torch

from .._library import ConfigError, Error
from ..trial import Trial


def pack(streams: dict[str, bytes]) -> bytes:
    index = json.dumps([[name, len(data)] for name, data in streams.items()]).encode()
    return struct.pack("<Q", len(index)) + index + b"".join(streams.values())


def unpack(packed: bytes, rank: int) -> dict[str, bytes]:
    try:
        (length,) = struct.unpack_from("<Q", packed)
        index = json.loads(packed[8:8 + length])
        streams, offset = {}, 8 + length
        for name, size in index:
            streams[name] = packed[offset:offset + size]
            offset += size
        if offset != len(packed):
            raise ValueError(f"{len(packed) - offset} bytes left over")
        return streams
    except (struct.error, ValueError, TypeError) as error:
        raise Error(2, f"dlx.torch: rank {rank}'s per-rank state arrived damaged ({error})") from error


# The tensors of dlx.torch's last collectives, kept alive until the next: otherwise a gloo worker
# thread may drop the last reference and need the GIL for it while the main thread, holding the
# GIL, tears the process group down (a deadlock in torch 1.13's ProcessGroupGloo destructor).
_in_flight: list[torch.Tensor] = []


def keep_alive(*tensors) -> None:
    _in_flight[:] = [t for group in tensors for t in (group if isinstance(group, list) else [group])]


def max_over_ranks(values: list[int], size: int, who: str = "dlx.torch",
                   before: str = "first") -> list[int]:
    """Each of `values` as its MAX over the trial's `size` ranks, on every rank: one all_reduce
    (a collective when size > 1). Without a process group: a ConfigError from `who`, saying to
    call init_process_group() `before` ("first", "before the first epoch")."""
    if size == 1:
        return values
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        raise ConfigError(f"{who}: this trial has {size} ranks, which agree through "
                          f"torch.distributed: call torch.distributed.init_process_group() "
                          f"{before}")
    device = torch.device("cuda", torch.cuda.current_device()) \
        if dist.get_backend() == "nccl" else torch.device("cpu")
    reduced = torch.tensor(values, dtype=torch.int32, device=device)
    dist.all_reduce(reduced, op=dist.ReduceOp.MAX)
    keep_alive(reduced)
    return [int(v) for v in reduced.tolist()]


def take_notice(trial: Trial, agreed_signal: int) -> bool:
    """Whether the ranks agreed on a checkpoint signal (`agreed_signal`: the MAX of their
    trial.checkpoint_signal()); if so the library is told which, and rank 0 records that one at
    checkpoint_and_exit, even when the signal reached another rank first."""
    if agreed_signal:
        trial.note_checkpoint_signal(agreed_signal)
    return agreed_signal > 0


def gather(mine: bytes, rank: int, size: int) -> list[bytes]:
    """Every rank's `mine`, in rank order, on every rank (a collective when size > 1)."""
    if size == 1:
        return [mine]
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        raise ConfigError(f"dlx.torch: this trial has {size} ranks, so save_state gathers each "
                          f"rank's RNG state to rank 0 through torch.distributed, which is not "
                          f"initialised: call torch.distributed.init_process_group() first "
                          f"(dlx-launch sets its variables), on every rank")
    if dist.get_world_size() != size or dist.get_rank() != rank:
        raise ConfigError(f"dlx.torch: the process group (rank {dist.get_rank()} of "
                          f"{dist.get_world_size()}) is not the trial's (rank {rank} of {size}): "
                          f"initialise the default process group over all of the trial's ranks")
    device = torch.device("cpu")
    if dist.get_backend() == "nccl":
        device = torch.device("cuda", torch.cuda.current_device())
    length = torch.tensor([len(mine)], dtype=torch.int64, device=device)
    lengths = [torch.zeros_like(length) for _ in range(size)]
    dist.all_gather(lengths, length)
    longest = int(max(int(n.item()) for n in lengths))
    padded = torch.zeros(longest, dtype=torch.uint8)
    padded[:len(mine)] = torch.frombuffer(bytearray(mine), dtype=torch.uint8) if mine else padded[:0]
    padded = padded.to(device)
    received = [torch.empty(longest, dtype=torch.uint8, device=device) for _ in range(size)]
    dist.all_gather(received, padded)
    keep_alive(length, lengths, padded, received)
    return [bytes(r[:int(n.item())].cpu().numpy().tobytes()) for r, n in zip(received, lengths)]
