#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""bench_report_call: what one dlx.Trial.report_training costs from Python, the call alone (the
values are a dict built once), names-once (what dlx.Trial does: the names registered once, then
dlx_trial_report_training_values with the set's number and the values) against the name-per-report
call it replaces (dlx_trial_report_training with the names array and values every time, as dlx.Trial
did before), and against an empty ctypes call into the same library (dlx_trial_rank: the cost of
crossing into C at all). The three run interleaved in rounds in one process, so that a busy
machine slows them alike; each figure is the median over the rounds. docs/benchmarks.md, "Metrics".

usage: report_call.py [--reports N] [--rounds R] [--metrics 1,16] (DLX_LIBRARY, PYTHONPATH set)
Results:
  report_call_us_<M>        names-once, microseconds per report of M metrics       <= 2 (M = 1)
  report_call_ratio_<M>     names-once / name-per-report (information)
  report_call_vs_empty_<M>  names-once / an empty ctypes call (information)
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import sys
import tempfile
import time
from array import array


def per_call_us(function, count: int) -> float:
    start = time.perf_counter_ns()
    for step in range(count):
        function(step)
    return (time.perf_counter_ns() - start) / count / 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reports", type=int, default=200000, help="reports per round and kind")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--metrics", default="1,16")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir="/var/tmp") as directory:
        os.environ.update({"DLX_EXPERIMENT_DIR": directory, "DLX_TRIAL_ID": "0", "DLX_HPARAMS": "{}",
                           "RANK": "0", "WORLD_SIZE": "1", "DLX_LATEST_CHECKPOINT": ""})
        import dlx
        from dlx._library import check, library
        lib = library()
        trial = dlx.Trial()
        print(f"# report_call: {os.cpu_count()} cores, load average "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
              f"{args.reports} reports x {args.rounds} rounds")
        print(f"# {'metrics':>7} {'names-once us':>14} {'per-report us':>14} {'empty call us':>14}")
        results = {}
        step_base = 0
        for count in (int(m) for m in args.metrics.split(",")):
            metrics = {f"metric_{i:02}": float(i) for i in range(count)}
            rank = ctypes.c_int()
            old = lib.dlx_trial_report_training
            empty = lib.dlx_trial_rank

            def names_once(step: int) -> None:
                trial.report_training(step_base + step, metrics)

            previous = {"names": (), "array": None}

            def per_report(step: int) -> None:  # dlx.Trial.report_training before names-once, as it was
                names_now = tuple(metrics)
                if names_now != previous["names"]:
                    previous["array"] = (ctypes.c_char_p * len(names_now))(*[str(n).encode("utf-8") for n in names_now])
                    previous["names"] = names_now
                try:
                    values = array("d", metrics.values())
                except TypeError:
                    values = array("d", map(float, metrics.values()))
                check(old(trial._handle, int(step_base + step), previous["array"], values.buffer_info()[0],
                              len(names_now)))

            def empty_call(step: int) -> None:
                empty(trial._handle, ctypes.byref(rank))

            rows = {"names_once": [], "per_report": [], "empty": []}
            for _ in range(args.rounds):
                for kind, function in (("names_once", names_once), ("per_report", per_report), ("empty", empty_call)):
                    rows[kind].append(per_call_us(function, args.reports))
                    step_base += args.reports
            medians = {kind: statistics.median(values) for kind, values in rows.items()}
            results[count] = medians
            print(f"  {count:>7} {medians['names_once']:>14.3f} {medians['per_report']:>14.3f} {medians['empty']:>14.3f}")
        trial.finish()
        trial.close()
    for count, medians in results.items():
        value = medians["names_once"]
        target = " (target <= 2) " + ("PASS" if value <= 2 else "MISS") if count == 1 else " (information)"
        print(f"# result: report_call_us_{count} {value:.3f}{target}")
        print(f"# result: report_call_ratio_{count} {value / medians['per_report']:.3f} (information)")
        print(f"# result: report_call_vs_empty_{count} {value / medians['empty']:.3f} (information)")
    print(json.dumps({str(k): v for k, v in results.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
