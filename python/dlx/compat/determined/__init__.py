# SPDX-License-Identifier: Apache-2.0
"""Determined's training APIs on dlx: `import determined as det` in a trial run by dlx-launch
gets this package (dlx-launch puts python/dlx/compat on PYTHONPATH; DLX_DETERMINED_COMPAT=0
leaves a real Determined installation in charge). Written from Determined's public API
documentation; underneath are dlx's trial record, searcher, checkpoints and requeue
(docs/determined.md lists every API with its status).

    import determined as det
    with det.core.init() as core_context:
        info = det.get_cluster_info()
        for op in core_context.searcher.operations():
            ... train to op.length, report, store checkpoints ...
            op.report_completed(validation_loss)
"""
from __future__ import annotations

import importlib
import importlib.util
import os
from typing import Any

from . import core
from ._info import ClusterInfo, TrialInfo, get_cluster_info

__version__ = "0.38.0+dlx"
LOG_FORMAT = "%(levelname)s: [%(process)s] %(name)s: %(message)s"  # Determined's, for logging.basicConfig
__all__ = ["LOG_FORMAT", "ClusterInfo", "TrialInfo", "core", "get_cluster_info", "pytorch"]


def __getattr__(name: str) -> Any:
    """det.pytorch on first use (it imports torch, which a Core API trainer may not need)."""
    if name == "pytorch":
        return importlib.import_module(f"{__name__}.pytorch")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _distributed_torch_store() -> None:
    """A trial of several ranks with PyTorch: dlx.torch's choice of torch.distributed's store
    (USE_LIBUV=0 where this PyTorch has no libuv: dlx/torch/_rendezvous.py), made here because
    Determined's distributed trainers call init_process_group after `import determined` and never
    import dlx.torch."""
    if "USE_LIBUV" in os.environ or os.environ.get("WORLD_SIZE", "1") in ("", "0", "1"):
        return
    if importlib.util.find_spec("torch") is not None:
        importlib.import_module("dlx.torch")


_distributed_torch_store()
