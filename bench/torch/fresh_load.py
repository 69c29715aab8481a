#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""One resume, as a restarted training program does it (bench_torch_state's load_vs_torch_load):
`fresh_load.py dlx|torch DIR MIB` starts in a fresh process, builds the model and an Adam
optimizer with no state yet (workload.py), makes the checkpoint cold (fdatasync +
POSIX_FADV_DONTNEED), then times the load into them: dlx.torch.load_state from the checkpoint
of the trial in DIR/experiment, or torch.load of DIR/torch/state.pt + model.load_state_dict +
optimizer.load_state_dict. Prints one JSON line: seconds, and the parts (the read, the
optimizer's load_state_dict)."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch

from workload import build_state, drop_cache, open_trial, time_calls


def resume(kind: str, directory: Path, mib: int) -> dict:
    model, optimizer = build_state(mib, stepped=False)
    parts: dict[str, float] = {}
    time_calls(optimizer, "load_state_dict", parts, "optimizer")
    if kind == "dlx":
        import dlx.torch
        trial = open_trial(directory / "experiment")
        [checkpoint] = Path(trial.checkpoint_dir).glob("step-*.h5")
        drop_cache(checkpoint)
        time_calls(trial, "load", parts, "read")
        start = time.perf_counter()
        step = dlx.torch.load_state(trial, {"model": model, "optimizer": optimizer})
        seconds = time.perf_counter() - start
        trial.close()
        if step is None:
            raise RuntimeError(f"no checkpoint to resume from in {checkpoint.parent}")
    else:
        path = directory / "torch" / "state.pt"
        drop_cache(path)
        start = time.perf_counter()
        state = torch.load(path)
        parts["read"] = time.perf_counter() - start
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        seconds = time.perf_counter() - start
    if not optimizer.state:
        raise RuntimeError("the optimizer has no state after the load")
    return {"kind": kind, "seconds": seconds, **parts}


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("dlx", "torch"):
        sys.exit("usage: fresh_load.py dlx|torch DIR MIB")
    print(json.dumps(resume(sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]))))
