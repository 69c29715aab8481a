#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Peak host memory of one checkpoint save, in a fresh process (bench_torch_state's
peak_extra_memory_vs_state): `peak_memory.py dlx|torch DIR MIB` builds the state (workload.py),
settles (gc, malloc_trim, half a second), resets the peak RSS (VmHWM, by writing 5 to
/proc/self/clear_refs), reads the resting RSS, then saves once (dlx.torch.save_state +
trial.wait_for_checkpoint, or torch.save + flush + fsync) while a thread polls VmRSS every
millisecond. Prints one JSON line of byte counts: resting, peak (the larger of VmHWM and the
polled maximum), after (RSS once the save is durable), whether the VmHWM reset worked."""
from __future__ import annotations

import ctypes
import gc
import json
import sys
import threading
import time
from pathlib import Path

from workload import MIB, build_state, nbytes, open_trial, state_tensors, torch_save


def status_bytes(*keys: str) -> dict[str, int]:
    """Fields of /proc/self/status given in kB, in bytes."""
    found = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in keys:
                found[key] = int(value.split()[0]) * 1024
    return found


class RssSampler(threading.Thread):
    """Polls VmRSS every millisecond; peak is the largest value seen."""

    def __init__(self):
        super().__init__(daemon=True)
        self.peak = 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.peak = max(self.peak, status_bytes("VmRSS")["VmRSS"])
            time.sleep(0.001)

    def stop(self) -> int:
        self.done.set()
        self.join()
        return self.peak


def probe(kind: str, directory: Path, mib: int) -> dict:
    model, optimizer = build_state(mib)
    directory.mkdir(parents=True, exist_ok=True)
    if kind == "dlx":
        import dlx.torch
        trial = open_trial(directory)
        objects = {"model": model, "optimizer": optimizer}

        def save() -> None:
            dlx.torch.save_state(trial, 1, objects)
            trial.wait_for_checkpoint()
    else:
        def save() -> None:
            torch_save(model, optimizer, directory / "state.pt")
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    time.sleep(0.5)
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := the current RSS
    resting = status_bytes("VmRSS", "VmHWM")
    sampler = RssSampler()
    sampler.start()
    start = time.perf_counter()
    save()
    seconds = time.perf_counter() - start
    sampled = sampler.stop()
    after = status_bytes("VmRSS", "VmHWM")
    return {"kind": kind, "state_bytes": nbytes(state_tensors(model, optimizer)),
            "resting": resting["VmRSS"], "hwm_reset": resting["VmHWM"] - resting["VmRSS"] < MIB,
            "peak": max(sampled, after["VmHWM"]), "sampled_peak": sampled, "after": after["VmRSS"],
            "seconds": seconds}


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("dlx", "torch"):
        sys.exit("usage: peak_memory.py dlx|torch DIR MIB")
    print(json.dumps(probe(sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]))))
