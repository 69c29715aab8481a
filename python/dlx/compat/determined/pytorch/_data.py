# SPDX-License-Identifier: Apache-2.0
"""det.pytorch.DataLoader: torch.utils.data.DataLoader's arguments, turned into a DataLoader by
the harness: with several ranks, each reads its own shard (a DistributedSampler over the dataset,
shuffled as asked); dlx.torch.Loop then keeps its position and order across requeues."""
from __future__ import annotations

from typing import Any


class DataLoader:
    def __init__(self, dataset: Any, batch_size: int = 1, shuffle: bool = False, sampler: Any = None,
                 batch_sampler: Any = None, num_workers: int = 0, collate_fn: Any = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn: Any = None, **kwargs: Any) -> None:
        if sampler is not None or batch_sampler is not None:
            raise NotImplementedError("determined on dlx: a DataLoader with its own sampler: return a "
                                      "torch.utils.data.DataLoader from build_*_data_loader instead")
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.num_workers = num_workers
        self.collate_fn = collate_fn
        self.pin_memory = pin_memory
        self.drop_last = drop_last
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.kwargs = kwargs

    def get_data_loader(self, rank: int = 0, size: int = 1, seed: int = 0) -> Any:
        import torch
        from torch.utils.data import DataLoader as TorchDataLoader
        from torch.utils.data.distributed import DistributedSampler

        options = dict(batch_size=self.batch_size, num_workers=self.num_workers, collate_fn=self.collate_fn,
                       pin_memory=self.pin_memory, drop_last=self.drop_last, timeout=self.timeout,
                       worker_init_fn=self.worker_init_fn, **self.kwargs)
        if size > 1:
            sampler = DistributedSampler(self.dataset, num_replicas=size, rank=rank, shuffle=self.shuffle,
                                         seed=seed, drop_last=self.drop_last)
            return TorchDataLoader(self.dataset, sampler=sampler, **options)
        # Its own generator: the loader's order is then the loop's to save and restore.
        generator = torch.Generator().manual_seed(seed) if self.shuffle else None
        return TorchDataLoader(self.dataset, shuffle=self.shuffle, generator=generator, **options)

    def __len__(self) -> int:
        return len(self.get_data_loader())
