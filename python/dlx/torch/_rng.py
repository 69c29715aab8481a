# SPDX-License-Identifier: Apache-2.0
"""This rank's random number generators as byte streams, and back.

Streams (each stored as uint8 bytes at rng/rank-<r>/<stream>, docs/checkpoint-format.md):
  python     random.getstate() as JSON
  numpy      numpy.random's global MT19937 state as JSON (when numpy is importable)
  torch      torch.get_rng_state()
  cuda/<i>   torch.cuda.get_rng_state(i) for each visible device, when CUDA is initialised
"""
from __future__ import annotations

import json
import random

import torch

from .._library import Error


def capture() -> dict[str, bytes]:
    version, words, gauss = random.getstate()
    streams = {"python": json.dumps({"version": version, "words": list(words),
                                     "gauss": None if gauss is None else float(gauss).hex()}).encode()}
    try:
        import numpy
    except ImportError:
        numpy = None
    if numpy is not None:
        kind, key, position, has_gauss, cached = numpy.random.get_state(legacy=True)
        streams["numpy"] = json.dumps({"kind": kind, "key": [int(k) for k in key],
                                       "pos": int(position), "has_gauss": int(has_gauss),
                                       "gauss": float(cached).hex()}).encode()
    streams["torch"] = torch.get_rng_state().numpy().tobytes()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        for index in range(torch.cuda.device_count()):
            streams[f"cuda/{index}"] = torch.cuda.get_rng_state(index).numpy().tobytes()
    return streams


def restore(streams: dict[str, bytes], where: str) -> None:
    """Sets this rank's generators from `streams` (as capture() made them); `where` names the
    checkpoint in errors. Streams this process has no generator for are ignored (a CUDA stream
    on a CPU-only run), and a generator without a stream keeps its state."""
    try:
        if "python" in streams:
            saved = json.loads(streams["python"])
            gauss = saved["gauss"]
            random.setstate((saved["version"], tuple(saved["words"]),
                             None if gauss is None else float.fromhex(gauss)))
        if "numpy" in streams:
            import numpy
            saved = json.loads(streams["numpy"])
            numpy.random.set_state((saved["kind"], numpy.array(saved["key"], dtype=numpy.uint32),
                                    saved["pos"], saved["has_gauss"],
                                    float.fromhex(saved["gauss"])))
        if "torch" in streams:
            torch.set_rng_state(torch.frombuffer(bytearray(streams["torch"]), dtype=torch.uint8))
        if torch.cuda.is_available():
            for name, data in streams.items():
                if name.startswith("cuda/") and int(name[5:]) < torch.cuda.device_count():
                    torch.cuda.set_rng_state(torch.frombuffer(bytearray(data), dtype=torch.uint8),
                                             int(name[5:]))
    except (ValueError, KeyError, TypeError, RuntimeError) as error:
        raise Error(2, f"dlx.torch: {where}: this rank's RNG state cannot be restored ({error}); "
                       f"was the file edited, or written by another program?") from error
