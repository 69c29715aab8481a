# SPDX-License-Identifier: Apache-2.0
"""DistributedContext: ranks and small object collectives. From torch.distributed (initialised
by the trainer, as Determined's from_torch_distributed expects) or a single worker."""
from __future__ import annotations

import os
from typing import Any, List, Optional

from .._unsupported import RefusesUnknownAttributes


class DistributedContext(RefusesUnknownAttributes):
    def __init__(self, *, rank: int, size: int, local_rank: int, local_size: int, cross_rank: int,
                 cross_size: int, chief_ip: Optional[str] = None, pub_port: int = 0, pull_port: int = 0,
                 torch_group: Any = None) -> None:
        self.rank, self.size = rank, size
        self.local_rank, self.local_size = local_rank, local_size
        self.cross_rank, self.cross_size = cross_rank, cross_size
        self._chief_ip = chief_ip
        self._group = torch_group

    @classmethod
    def from_torch_distributed(cls, chief_ip: Optional[str] = None) -> "DistributedContext":
        """The ranks of the initialised torch.distributed default group; local ranks from
        LOCAL_RANK/LOCAL_WORLD_SIZE, which dlx-launch sets as torchrun does."""
        import torch.distributed as dist

        if not dist.is_initialized():
            raise RuntimeError("DistributedContext.from_torch_distributed(): torch.distributed is not "
                               "initialised (call dist.init_process_group(...) first; dlx-launch sets "
                               "MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE)")
        rank, size = dist.get_rank(), dist.get_world_size()
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        local_size = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
        return cls(rank=rank, size=size, local_rank=local_rank, local_size=local_size,
                   cross_rank=rank // max(1, local_size), cross_size=max(1, size // max(1, local_size)),
                   chief_ip=chief_ip or os.environ.get("MASTER_ADDR"))

    # Determined's accessors.
    def get_rank(self) -> int:
        return self.rank

    def get_size(self) -> int:
        return self.size

    def get_local_rank(self) -> int:
        return self.local_rank

    def get_local_size(self) -> int:
        return self.local_size

    def get_cross_rank(self) -> int:
        return self.cross_rank

    def get_cross_size(self) -> int:
        return self.cross_size

    # Collectives of picklable objects, over torch.distributed's default group.
    def allgather(self, stuff: Any) -> List[Any]:
        if self.size == 1:
            return [stuff]
        import torch.distributed as dist

        out: List[Any] = [None] * self.size
        dist.all_gather_object(out, stuff)
        return out

    def gather(self, stuff: Any) -> Optional[List[Any]]:
        """Every rank's object on the chief (rank 0); None elsewhere."""
        gathered = self.allgather(stuff)
        return gathered if self.rank == 0 else None

    def broadcast(self, stuff: Any) -> Any:
        """The chief's object on every rank."""
        if self.size == 1:
            return stuff
        import torch.distributed as dist

        box = [stuff]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def allgather_local(self, stuff: Any) -> List[Any]:
        every = self.allgather((self.cross_rank, stuff))
        return [value for cross, value in every if cross == self.cross_rank]

    def gather_local(self, stuff: Any) -> Optional[List[Any]]:
        gathered = self.allgather_local(stuff)
        return gathered if self.local_rank == 0 else None

    def broadcast_local(self, stuff: Any) -> Any:
        every = self.allgather((self.cross_rank, self.local_rank, stuff))
        return next(value for cross, local, value in every if cross == self.cross_rank and local == 0)

    def close(self) -> None:
        pass


class DummyDistributedContext(DistributedContext):
    """One worker: Determined's default when init() is given no distributed context."""

    def __init__(self) -> None:
        super().__init__(rank=0, size=1, local_rank=0, local_size=1, cross_rank=0, cross_size=1)
