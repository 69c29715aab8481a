# SPDX-License-Identifier: Apache-2.0
"""torch.distributed's rendezvous with a PyTorch built without libuv.

Since PyTorch 2.4 the env:// rendezvous (init_process_group with dlx-launch's MASTER_ADDR and
MASTER_PORT) makes its TCPStore on libuv unless USE_LIBUV=0; a build without libuv (Debian's
python3-torch 2.6 in trixie, the image a site may run trials in) then fails every multi-rank
script's init_process_group with "use_libuv was requested but PyTorch was build without libuv
support". PyTorch has no flag that tells whether it has libuv, so on import, in a trial of several
ranks where the job left USE_LIBUV unset, dlx.torch asks for a libuv store: its constructor refuses
before it opens anything when libuv is missing, and then USE_LIBUV=0 (the store PyTorch used
before 2.4) is set for the script's rendezvous. With libuv the probe's store listens on a free
port for a moment and is closed.
"""
from __future__ import annotations

import datetime
import os
from typing import MutableMapping

import torch

_REFUSAL = "without libuv support"


def use_store_without_libuv(environ: MutableMapping[str, str] = os.environ) -> bool:
    """Sets USE_LIBUV=0 in `environ` where this PyTorch lacks libuv; whether it did."""
    if "USE_LIBUV" in environ or not torch.distributed.is_available():
        return False
    try:
        ranks = int(environ.get("WORLD_SIZE", "1"))
    except ValueError:
        return False
    if ranks <= 1:
        return False
    try:
        store = torch.distributed.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
                                           timeout=datetime.timedelta(seconds=5), use_libuv=True)
    except TypeError:  # before PyTorch 2.2: no use_libuv, and the store never asks for libuv
        return False
    except RuntimeError as error:
        if _REFUSAL not in str(error):
            return False
        environ["USE_LIBUV"] = "0"
        return True
    del store
    return False
