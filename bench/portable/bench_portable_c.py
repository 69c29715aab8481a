#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""bench_portable_c: the portable libdlx_c (scripts/portable-c.sh: static HDF5, yaml-cpp, fmt,
ISA-L and libstdc++, built against glibc 2.31) against the build's own libdlx_c (Debian's shared
libraries), the same Python workload through each (portable_workload.py, a fresh process per
round, the two alternating --repeats times; docs/benchmarks.md, "The portable libdlx_c"):

  portable_report_ratio   time of 100,000 metric reports, portable / build's      <= 1.1
  portable_save_ratio     a checkpoint's save to disk, portable / build's         <= 1.1
  portable_load_ratio     its resume (read + CRC-32C), portable / build's         <= 1.1

Each figure is the median of its rounds; 1.1 allows for this machine's noise, the expectation
being 1.0 (the same code, the same libraries' versions).
usage: bench_portable_c.py --portable LIB --build LIB [--mib 256] [--repeats 5] [--dir DIR] [--smoke]
(PYTHONPATH set to python/)"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIGURES = {"report_s": "portable_report_ratio", "save_s": "portable_save_ratio", "load_s": "portable_load_ratio"}


def round_with(library: Path, args: argparse.Namespace) -> dict:
    directory = args.dir / "experiment"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    done = subprocess.run([sys.executable, str(HERE / "portable_workload.py"), str(directory), str(args.mib),
                           str(args.reports)], capture_output=True, text=True,
                          env=dict(os.environ, DLX_LIBRARY=str(library)))
    if done.returncode != 0:
        raise RuntimeError(f"the workload with {library} failed:\n{done.stderr}")
    shutil.rmtree(directory, ignore_errors=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--portable", type=Path, required=True, help="the portable libdlx_c.so.0")
    parser.add_argument("--build", type=Path, required=True, help="the build's libdlx_c.so.0")
    parser.add_argument("--mib", type=int, default=256, help="checkpoint size")
    parser.add_argument("--reports", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=Path("/var/tmp/dlx-bench-portable"))
    parser.add_argument("--smoke", action="store_true", help="2 MiB, 1,000 reports, one round (ctest)")
    args = parser.parse_args()
    if args.smoke:
        args.mib, args.reports, args.repeats = 2, 1000, 1
    rounds: dict[str, list[dict]] = {"portable": [], "build": []}
    for _ in range(args.repeats):
        for kind in ("portable", "build") if len(rounds["build"]) % 2 == 0 else ("build", "portable"):
            rounds[kind].append(round_with(args.portable if kind == "portable" else args.build, args))
    shutil.rmtree(args.dir, ignore_errors=True)
    print(f"# {args.repeats} rounds of each, {args.mib} MiB checkpoint, {args.reports} reports; medians:")
    for key, name in FIGURES.items():
        portable = statistics.median(r[key] for r in rounds["portable"])
        build = statistics.median(r[key] for r in rounds["build"])
        print(f"#   {key}: portable {portable:.4f} s, build's {build:.4f} s")
        print(f"# result: {name} {portable / build:.3f} (target <= 1.1)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
