#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""bench_report: how long `dlx report` takes and how large its page is, on synthetic experiments
written by dlx_write_report_sample (random search, every trial completed, a training loss and a
validation loss and accuracy at every step: 3 curves of POINTS rows per trial). Each size is
written once, then reported --repeats times (the median is the result; the first run also warms
the page cache, as a researcher's second look does).

Results:
  report_s_100x10000     seconds for 100 trials x 10,000 points     <= 3
  report_s_1000x10000    seconds for 1,000 trials x 10,000 points   <= 20
  bytes_100x10000, bytes_1000x10000   the page's size               < 10 MB (10485760)
usage: bench_report.py --dlx build/bin/dlx --sample build/bin/dlx_write_report_sample [--dir DIR]
                       [--repeats N] [--smoke]
--smoke: 20 trials x 1,000 points, one run (ctest bench.report_smoke; no targets judged).
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

SIZE_LIMIT = 10 * 1024 * 1024


def result(name: str, value: float, op: str | None = None, bound: float | None = None) -> bool:
    if op is None:
        print(f"# result: {name} {value:.3f} (no target)")
        return True
    met = value <= bound if op == "<=" else value < bound
    print(f"# result: {name} {value:.3f} (target {op} {bound:g}) {'PASS' if met else 'MISS'}")
    return met


def bench(args: argparse.Namespace, trials: int, points: int, time_bound: float | None) -> bool:
    directory = args.dir / f"experiment-{trials}x{points}"
    shutil.rmtree(directory, ignore_errors=True)
    started = time.monotonic()
    subprocess.run([str(args.sample), str(directory), "big", str(trials), str(points)], check=True)
    print(f"# wrote {trials} trials x {points} points in {time.monotonic() - started:.1f} s "
          f"({sum(f.stat().st_size for f in directory.rglob('*') if f.is_file()) / 1e6:.0f} MB)")
    output = args.dir / f"report-{trials}x{points}.html"
    seconds = []
    for _ in range(args.repeats):
        started = time.monotonic()
        done = subprocess.run([str(args.dlx), "report", str(directory), "-o", str(output), "--json"],
                              capture_output=True, text=True)
        seconds.append(time.monotonic() - started)
        if done.returncode != 0:
            raise RuntimeError(f"dlx report failed:\n{done.stderr}")
        summary = json.loads(done.stdout)
    print(f"# {trials}x{points}: runs {' '.join(f'{s:.2f}' for s in seconds)} s; {summary['trials']} trials")
    name = f"{trials}x{points}"
    ok = result(f"report_s_{name}", statistics.median(seconds), "<=" if time_bound else None, time_bound)
    ok = result(f"bytes_{name}", float(summary["bytes"]), "<", SIZE_LIMIT) and ok
    if not args.keep:
        shutil.rmtree(directory, ignore_errors=True)
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dlx", type=Path, required=True)
    parser.add_argument("--sample", type=Path, required=True)
    parser.add_argument("--dir", type=Path, default=Path("bench-report"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the experiments")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    print(f"# bench_report: {os.cpu_count()} CPUs")
    if args.smoke:
        args.repeats = 1
        return 0 if bench(args, 20, 1000, None) else 1
    ok = bench(args, 100, 10000, 3.0)
    ok = bench(args, 1000, 10000, 20.0) and ok
    print(f"# verdict: {'PASS' if ok else 'MISS'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
