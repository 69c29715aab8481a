# SPDX-License-Identifier: Apache-2.0
"""determined.core on dlx: init() and its contexts (distributed, train, checkpoint, preempt,
searcher). See the package's docstring and docs/determined.md."""
from __future__ import annotations

from ._checkpoint import CheckpointContext, DownloadMode
from ._context import Context, init
from ._distributed import DistributedContext, DummyDistributedContext
from ._searcher import PreemptContext, PreemptMode, SearcherContext, SearcherMode, SearcherOperation, Unit
from ._train import TrainContext

__all__ = ["CheckpointContext", "Context", "DistributedContext", "DownloadMode", "DummyDistributedContext",
           "PreemptContext", "PreemptMode", "SearcherContext", "SearcherMode", "SearcherOperation",
           "TrainContext", "Unit", "init"]
