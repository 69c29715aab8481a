#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""bench_python_print: what a print costs a Python trainer under dlx-launch, which runs it with
PYTHONUNBUFFERED=1 (each print a write of its own, so that output is never held back or lost at
a SIGKILL), against Python's own block buffering of a pipe (PYTHONUNBUFFERED= in the job, which
dlx-launch then leaves alone), in alternating runs of the real dlx-launch (no Slurm) whose
output goes into a pipe that `cat` drains, as slurmstepd's does (docs/benchmarks.md, "Trainer
output").

    bench_python_print.py DLX_LAUNCH [--rounds N] [--lines N] [--smoke]

The trainer prints N lines shaped like a training log ("epoch 3 batch 120/938 loss 0.123456")
and times the loop, a flush at its end included, with a monotonic clock. Results (medians over
rounds):
  python_print_unbuffered_us_per_line   one line, unbuffered                    target <= 10
  python_print_buffered_us_per_line     one line, Python's 8 KiB blocks         (reference)
A trainer that prints once per batch of 10 ms spends that many microseconds in 10,000.
"""
import argparse
import statistics
import subprocess

TRAINER = r"""
import os, sys, time
lines = int(os.environ["BENCH_LINES"])
started = time.monotonic()
for i in range(lines):
    print(f"epoch 3 batch {i % 938}/938 loss {1.0 / (i + 1):.6f}")
sys.stdout.flush()
os.write(2, f"elapsed {time.monotonic() - started}\n".encode())
"""


def run(launch: str, lines: int, unbuffered: bool) -> float:
    env = {"PATH": "/usr/bin:/bin", "BENCH_LINES": str(lines)}
    if not unbuffered:
        env["PYTHONUNBUFFERED"] = ""  # set, so dlx-launch leaves Python's buffering alone
    command = f"'{launch}' -- /usr/bin/python3 -c \"$BENCH_TRAINER\" | cat > /dev/null"
    env["BENCH_TRAINER"] = TRAINER
    result = subprocess.run(["/bin/sh", "-c", command], env=env, stderr=subprocess.PIPE, text=True, check=True)
    for line in result.stderr.splitlines():
        if line.startswith("elapsed "):
            return float(line.split()[1]) / lines * 1e6
    raise SystemExit(f"bench_python_print: no timing from the trainer: {result.stderr}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("launch")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--smoke", action="store_true", help="two short rounds: that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.rounds, args.lines = 2, 2_000
    figures: dict[bool, list[float]] = {True: [], False: []}
    for round_number in range(args.rounds):
        for unbuffered in ((True, False) if round_number % 2 == 0 else (False, True)):
            figures[unbuffered].append(run(args.launch, args.lines, unbuffered))
    unbuffered, buffered = statistics.median(figures[True]), statistics.median(figures[False])
    print(f"# {args.rounds} rounds of {args.lines} lines; per line, unbuffered: "
          + ", ".join(f"{x:.2f}" for x in figures[True]) + " us; buffered: "
          + ", ".join(f"{x:.2f}" for x in figures[False]) + " us")
    print(f"# result: python_print_unbuffered_us_per_line {unbuffered:.2f} (target <= 10)")
    print(f"# result: python_print_buffered_us_per_line {buffered:.2f} (reference)")


if __name__ == "__main__":
    main()
