#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""bench_metrics: what a metrics report costs the training thread, from C++ (dlx::Trial) and from
Python (dlx.Trial), at 1e3..1e6 reports of 1..16 metrics, against the physical floor: the same
records appended to a plain file with one fdatasync per second on the same thread
(report_loop.cpp / report_loop.py run each case in a fresh process; the largest size --repeats
times, each side alternately, each tenth of the run taken as its median over the runs;
docs/benchmarks.md, "Metrics"). A report's cost includes the loop's own update of the values it
reports (a dict or std::map assignment per metric), on both sides.

Results (the largest run, 16 metrics, unless named):
  report_us_cpp_1e6            mean microseconds per Trial::report_training, 1e6 reports    <= 2
  report_us_python_1e6         the same for dlx.Trial.report_training                       <= 5
  report_us_python_1e6_1metric the same with 1 metric: the call itself (names-once C API)  <= 2
  flat_cpp_1e6, flat_python_1e6  per-report cost in the run's last tenth / its first        <= 1.2
  durability_lag_s             the longest time from a report to its fdatasync in the log,  <= 1
                               over every dlx run (the pipeline's DLX_METRICS_STATS line)
  cpp_vs_floor_1e6, python_vs_floor_1e6  dlx's per-report cost / the floor's (information)
usage: bench_metrics.py --binary build/bin/bench_metrics_report [--dir DIR] [--smoke]
(DLX_LIBRARY and PYTHONPATH set for the Python side)
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

HERE = Path(__file__).resolve().parent
TARGETS = {"report_us_cpp_1e6": ("<=", 2.0), "report_us_python_1e6": ("<=", 5.0),
           "report_us_python_1e6_1metric": ("<=", 2.0),
           "flat_cpp_1e6": ("<=", 1.2), "flat_python_1e6": ("<=", 1.2),
           "durability_lag_s": ("<=", 1.0)}


def run_case(args: argparse.Namespace, language: str, mode: str, reports: int, metrics: int) -> dict:
    directory = args.dir / f"{language}-{mode}-{reports}-{metrics}"
    shutil.rmtree(directory, ignore_errors=True)
    command = ([str(args.binary)] if language == "c++" else
               [sys.executable, str(HERE / "report_loop.py")]) + [mode, str(directory), str(reports), str(metrics)]
    env = dict(os.environ, DLX_METRICS_STATS="1")
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    for line in done.stderr.splitlines():
        if line.startswith("dlx-metrics-stats: "):
            result["stats"] = json.loads(line.removeprefix("dlx-metrics-stats: "))
    shutil.rmtree(directory, ignore_errors=True)
    return result


def merged(runs: list[dict]) -> dict:
    """Several runs of one case as one: each decile's median, the longest lag, the stats summed."""
    if len(runs) == 1:
        return runs[0]
    result = dict(runs[0])
    result["deciles_ns"] = [statistics.median(r["deciles_ns"][i] for r in runs) for i in range(10)]
    if all("stats" in r for r in runs):
        result["stats"] = {"max_lag_s": max(r["stats"]["max_lag_s"] for r in runs),
                           "flushes": sum(r["stats"]["flushes"] for r in runs),
                           "compactions": sum(r["stats"]["compactions"] for r in runs)}
    result["runs"] = len(runs)
    return result


def mean_us(result: dict) -> float:
    return sum(result["deciles_ns"]) / len(result["deciles_ns"]) / 1000


def show(name: str, value: float, note: str = "") -> None:
    target = TARGETS.get(name)
    if target is None:
        print(f"# result: {name} {value:.3f} (no target{'; ' + note if note else ''})")
        return
    op, bound = target
    met = value <= bound if op == "<=" else value >= bound
    print(f"# result: {name} {value:.3f} (target {op} {bound:g}) {'PASS' if met else 'MISS'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", type=Path, required=True, help="build/bin/bench_metrics_report")
    parser.add_argument("--dir", type=Path, default=Path("/var/tmp/dlx-bench-metrics"),
                        help="where the runs write (a disk, not tmpfs); only what they create is removed")
    parser.add_argument("--smoke", action="store_true", help="1e3 and 1e4 reports only (ctest)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs of each side at the largest size (the figures take medians)")
    parser.add_argument("--languages", default="c++,python", help="c++, python or both (the default)")
    args = parser.parse_args()
    if "DLX_LIBRARY" not in os.environ:
        parser.error("set DLX_LIBRARY to the built libdlx_c.so and PYTHONPATH to python/")
    sizes = [1000, 10000] if args.smoke else [1000, 10000, 100000, 1000000]
    widths = [1, 4, 16]
    largest = sizes[-1]
    args.dir.mkdir(parents=True, exist_ok=True)
    print(f"# bench_metrics: {os.cpu_count()} cores, dir {args.dir}, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"# {'language':<7} {'metrics':>7} {'reports':>8} {'dlx us':>8} {'floor us':>9} {'ratio':>6} "
          f"{'last/first':>10} {'max lag s':>9} {'flushes':>7} {'compactions':>11}")
    results: dict[tuple, dict] = {}
    max_lag = 0.0
    languages = [language for language in ("c++", "python") if language in args.languages.split(",")]
    for language in languages:
        for metrics in widths:
            for reports in sizes:
                runs = args.repeats if reports == largest else 1
                pairs = [(run_case(args, language, "dlx", reports, metrics),
                          run_case(args, language, "floor", reports, metrics)) for _ in range(runs)]
                dlx, floor = merged([d for d, _ in pairs]), merged([f for _, f in pairs])
                results[(language, metrics, reports)] = {"dlx": dlx, "floor": floor}
                stats = dlx.get("stats", {})
                max_lag = max(max_lag, stats.get("max_lag_s", 0.0))
                deciles = dlx["deciles_ns"]
                print(f"  {language:<7} {metrics:>7} {reports:>8} {mean_us(dlx):>8.3f} {mean_us(floor):>9.3f} "
                      f"{mean_us(dlx) / mean_us(floor):>6.2f} {deciles[-1] / deciles[0]:>10.2f} "
                      f"{stats.get('max_lag_s', float('nan')):>9.3f} {stats.get('flushes', 0):>7} "
                      f"{stats.get('compactions', 0):>11}")
    if args.dir.is_dir() and not any(args.dir.iterdir()):
        args.dir.rmdir()
    suffix = "1e6" if largest == 1000000 else f"{largest:g}"
    for language, key in (("c++", "cpp"), ("python", "python")):
        if language not in languages:
            continue
        run = results[(language, widths[-1], largest)]
        show(f"report_us_{key}_{suffix}", mean_us(run["dlx"]))
        deciles = run["dlx"]["deciles_ns"]
        show(f"flat_{key}_{suffix}", deciles[-1] / deciles[0])
        show(f"{key}_vs_floor_{suffix}", mean_us(run["dlx"]) / mean_us(run["floor"]),
             "dlx's per-report cost over appending the same bytes with one fdatasync a second")
        if language == "python":
            show(f"report_us_python_{suffix}_1metric", mean_us(results[(language, widths[0], largest)]["dlx"]))
    show("durability_lag_s", max_lag)
    return 0


if __name__ == "__main__":
    sys.exit(main())
