#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""One run of bench_metrics.py's Python side: `report_loop.py dlx|floor DIR REPORTS METRICS`.

dlx: a dlx.Trial (trial 0 of an experiment in DIR, outside Slurm) reports REPORTS training rows
of METRICS metrics as fast as it can (trial.report_training(step, metrics), the dict built once
and updated in place), then finishes. floor: the same rows as the metrics log's bytes (struct
packed, CRC-32C left out: Python has none built in, so the floor is if anything low), appended
with a buffered file's write() and one os.fdatasync per second. Prints one JSON line like
report_loop.cpp's."""
from __future__ import annotations

import json
import os
import struct
import sys
import time
from pathlib import Path


def deciles_of(reports: int, report) -> list[float]:
    out, step = [], 0
    for decile in range(10):
        end = reports * (decile + 1) // 10
        begin, start = step, time.perf_counter_ns()
        while step < end:
            report(step)
            step += 1
        out.append((time.perf_counter_ns() - start) / max(1, end - begin))
    return out


def main() -> int:
    mode, directory, reports, count = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    names = [f"metric_{i:02}" for i in range(count)]
    metrics = {name: 0.0 for name in names}
    start = time.perf_counter()
    if mode == "dlx":
        os.environ.update({"DLX_EXPERIMENT_DIR": str(directory), "DLX_TRIAL_ID": "0",
                           "DLX_HPARAMS": "{}", "RANK": "0", "WORLD_SIZE": "1"})
        import dlx
        trial = dlx.Trial()

        def report(step: int) -> None:
            value = float(step)
            for name in names:
                value += 0.5
                metrics[name] = value
            trial.report_training(step, metrics)
        deciles = deciles_of(reports, report)
        trial.finish()
        trial.close()
    else:
        directory.mkdir(parents=True, exist_ok=True)
        row = struct.Struct("<IIBBqd" + "Id" * count)
        with open(directory / "floor.log", "wb") as f:
            last_sync = [time.monotonic()]

            def report(step: int) -> None:
                value, fields = float(step), []
                for i in range(count):
                    value += 0.5
                    fields += (i, value)
                f.write(row.pack(row.size - 8, 0, 2, 0, step, 0.0, *fields))
                if step & 1023 == 0 and time.monotonic() - last_sync[0] >= 1.0:
                    f.flush()
                    os.fdatasync(f.fileno())
                    last_sync[0] = time.monotonic()
            deciles = deciles_of(reports, report)
            f.flush()
            os.fdatasync(f.fileno())
    print(json.dumps({"language": "python", "mode": mode, "reports": reports, "metrics": count,
                      "seconds": time.perf_counter() - start, "deciles_ns": deciles}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
