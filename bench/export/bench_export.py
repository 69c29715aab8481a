#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""bench_export: `dlx export tensorboard`'s throughput against writing the same bytes.

An experiment written by dlx_write_report_sample (random search, every trial completed, a
training loss and a validation loss and accuracy at every step: 3 scalars per step and trial) is
exported --repeats times into a fresh OUTDIR; the floor is Python writing the same number of
files of the same sizes (one write each, no fsync: the export does not sync either) into a fresh
directory. Both sides start with a warm page cache (the first export reads the experiment once).

Results:
  export_mb_s_<T>x<P>              the export's output MB per second (information)
  export_vs_plain_write_<T>x<P>    the plain writes' time over the export's (1.0: as fast as
                                   writing its bytes; the rest is reading trial.h5 and encoding)
usage: bench_export.py --dlx build/bin/dlx --sample build/bin/dlx_write_report_sample [--dir DIR]
                       [--repeats N] [--smoke]
--smoke: 20 trials x 1,000 points, one run (ctest bench.export_smoke).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def plain_write(target: Path, sizes: list[int]) -> float:
    """Seconds to write files of `sizes` bytes (one write each) into a new directory `target`."""
    shutil.rmtree(target, ignore_errors=True)
    payload = os.urandom(max(sizes, default=0))
    started = time.monotonic()
    target.mkdir()
    for index, size in enumerate(sizes):
        run = target / f"trial-{index}"
        run.mkdir()
        with open(run / "events.out.tfevents", "wb") as file:
            file.write(payload[:size])
    return time.monotonic() - started


def bench(args: argparse.Namespace, trials: int, points: int) -> None:
    directory = args.dir / f"experiment-{trials}x{points}"
    output = args.dir / f"export-{trials}x{points}"
    shutil.rmtree(directory, ignore_errors=True)
    subprocess.run([str(args.sample), str(directory), "big", str(trials), str(points)], check=True)
    exports, plains = [], []
    for round_ in range(args.repeats + 1):
        started = time.monotonic()
        done = subprocess.run([str(args.dlx), "export", "tensorboard", str(directory), str(output),
                               "--force", "--json"], capture_output=True, text=True)
        seconds = time.monotonic() - started
        if done.returncode != 0:
            raise RuntimeError(f"dlx export tensorboard failed:\n{done.stderr}")
        json.loads(done.stdout)  # the summary must be JSON
        files = sorted(p for p in output.rglob("*") if p.is_file())
        sizes = [p.stat().st_size for p in files]
        plain = plain_write(args.dir / "plain", sizes)
        print(f"  round {round_}{' (warm-up, not counted)' if round_ == 0 else ''}: export "
              f"{seconds:.3f} s, plain write {plain:.3f} s, {len(files)} files, "
              f"{sum(sizes) / 1e6:.1f} MB")
        if round_:
            exports.append(seconds)
            plains.append(plain)
    total = sum(sizes)
    name = f"{trials}x{points}"
    print(f"# result: export_mb_s_{name} {total / 1e6 / statistics.median(exports):.1f} (no target)")
    print(f"# result: export_vs_plain_write_{name} "
          f"{statistics.median(plains) / statistics.median(exports):.3f} (no target; 1.0 is the floor's speed)")
    if not args.keep:
        for path in (directory, output, args.dir / "plain"):
            shutil.rmtree(path, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dlx", type=Path, required=True)
    parser.add_argument("--sample", type=Path, required=True)
    parser.add_argument("--dir", type=Path, default=Path("bench-export"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the experiments and exports")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    print(f"# bench_export: {os.cpu_count()} CPUs, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    if args.smoke:
        args.repeats = 1
        bench(args, 20, 1000)
        return 0
    bench(args, 100, 10000)
    bench(args, 1000, 10000)
    return 0


if __name__ == "__main__":
    sys.exit(main())
