# SPDX-License-Identifier: Apache-2.0
"""Leaving the process once dlx has finished with it (a requeue after Slurm's notice, or a
harness whose trial ended): every save is written and the trial closed, so nothing is lost by
skipping the interpreter's shutdown. With a torch.distributed process group that shutdown is
the risk: Debian's torch 1.13 can deadlock destroying a gloo group at interpreter exit, or abort
the process ("terminate called without an active exception") after the work is done, which
would turn a requeue into a counted crash."""
from __future__ import annotations

import os
import sys
from typing import NoReturn


def has_process_group() -> bool:
    """Whether torch.distributed is imported and initialised (without importing torch)."""
    dist = sys.modules.get("torch.distributed")
    return dist is not None and dist.is_available() and dist.is_initialized()


def leave(code: int) -> NoReturn:
    """Ends the process with `code`: through os._exit when a process group exists (after
    flushing Python's streams), else as SystemExit so that atexit handlers run."""
    sys.stdout.flush()
    sys.stderr.flush()
    if has_process_group():
        os._exit(code)
    raise SystemExit(code)
