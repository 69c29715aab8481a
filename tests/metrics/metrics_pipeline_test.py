#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The metrics pipeline from Python, as a training program uses it (dlx.Trial outside Slurm, one
rank), with the files checked by h5py and by dlx's own reader (dlx-test-trial-metrics):

1. a million reports: every point is in trial.h5 exactly once after close(), and no log is left
   but the (empty) one trial.h5 names;
2. readers during a run: h5py on trial.h5 and dlx's reader (trial.h5 + logs) poll while a child
   reports 50,000 rows a second with a compaction after every flush (DLX_METRICS_COMPACT_S=0), so
   that renames and log retirements race the readers: no read fails, no row count goes back (at
   a fixed rate: a reader's time grows with the rows, and the race is what is checked);
3. kill -9 at a random moment, of that child and of one reporting as fast as it can (faster than
   the flusher writes: the reports wait for it): what the child had reported more than a second
   before the kill is there, every row once, and trial.h5 still opens in h5py;
4. a requeued run that resumes from step S: the rows after S are replaced, the rest kept;
5. an output nobody reads (a pipe left full): the reports and the exit go on, every row reaches
   trial.h5, the pipe holds whole metric lines in order, and stderr counts the ones not printed.

usage: metrics_pipeline_test.py SUMMARY_TOOL (DLX_LIBRARY and PYTHONPATH set)
"""
from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO

import h5py
import numpy

SUMMARY = sys.argv[1] if len(sys.argv) > 1 else ""


def child_environment(experiment: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"DLX_EXPERIMENT_DIR": str(experiment), "DLX_TRIAL_ID": "0", "DLX_HPARAMS": "{}",
                "RANK": "0", "WORLD_SIZE": "1", "DLX_LATEST_CHECKPOINT": ""})
    env.update(extra)
    return env


CHILD = r"""
import os, sys, time
import dlx
mode, count = sys.argv[1], int(sys.argv[2])
trial = dlx.Trial()
start = int(sys.argv[3]) if len(sys.argv) > 3 else 0
began = time.monotonic()
for step in range(start, start + count):
    trial.report_training(step, loss=float(step), lr=0.5)
    if step % 1000 == 999:
        trial.report_validation(step, accuracy=step / 1e6)
    if mode != "million" and step % 2000 == 0:
        print("progress", step, time.monotonic(), flush=True)  # for the kill test
        if mode == "paced":  # 50,000 rows a second
            time.sleep(max(0.0, began + step / 50_000 - time.monotonic()))
trial.finish()
trial.close()
"""


def summary(trial_h5: Path, file_only: bool = False) -> dict:
    args = [SUMMARY, str(trial_h5)] + (["--file-only"] if file_only else [])
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        raise AssertionError(f"dlx's reader failed on {trial_h5}: {done.stderr.strip()}")
    return json.loads(done.stdout)


def logs_in(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.glob("metrics.*.log"))


def check_rows(table: dict, last: int, what: str) -> None:
    """Rows 0..last, each once, loss == step."""
    assert table["first"] == 0 and table["last"] == last, (what, table)
    assert table["rows"] == last + 1 and table["consecutive"] and table["timed"], (what, table)
    loss = table["columns"]["loss"]
    assert loss["present"] == last + 1 and loss["sum"] == last * (last + 1) / 2, (what, loss)


def million(work: Path) -> None:
    experiment = work / "million"
    count = 1_000_000
    start = time.monotonic()
    subprocess.run([sys.executable, "-c", CHILD, "million", str(count)], check=True,
                   env=child_environment(experiment), stdout=subprocess.DEVNULL)
    seconds = time.monotonic() - start
    trial_dir = experiment / "trials" / "0"
    with h5py.File(trial_dir / "trial.h5", "r") as f:
        steps = f["metrics/training/steps"][()]
        loss = f["metrics/training/loss"][()]
        times = f["metrics/training/wall_time"][()]
        assert f.attrs["format_version"] == 3 and f.attrs["state"] == "completed", dict(f.attrs)
        assert numpy.array_equal(steps, numpy.arange(count)), (steps[:5], steps[-5:], len(steps))
        assert numpy.array_equal(loss, numpy.arange(count, dtype=numpy.float64))
        assert numpy.all(numpy.isfinite(times)) and numpy.all(numpy.diff(times) >= 0)
        assert numpy.array_equal(f["metrics/validation/steps"][()], numpy.arange(999, count, 1000))
        named = f.attrs["metrics_log"]
    # The file alone holds everything; the log it names is empty or absent, and nothing older is left.
    check_rows(summary(trial_dir / "trial.h5", file_only=True)["training"], count - 1, "trial.h5")
    assert logs_in(trial_dir) in ([], [named]), (logs_in(trial_dir), named)
    print(f"a million reports: each once in trial.h5 (h5py), {seconds:.1f} s for the child")


class Progress:
    """The child's "progress STEP MONOTONIC" lines, read on a thread of their own until the child's
    end: a pipe left full would block the child's prints, and the test would measure its own
    reader (libdlx's metric lines wait on a thread of theirs: unread_output). dlx's lines come
    between."""

    def __init__(self, stream: IO[bytes]):
        self.lines: list[tuple[int, float]] = []
        self.thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.thread.start()

    def _read(self, stream: IO[bytes]) -> None:
        for line in stream:
            # Two writers share the pipe (this print and libdlx's metric lines): a line that is
            # not exactly a progress line is skipped.
            match = re.fullmatch(rb"progress (\d+) (\d+\.\d+)\n", line)
            if match:
                self.lines.append((int(match[1]), float(match[2])))

    def after_end(self) -> list[tuple[int, float]]:
        self.thread.join()
        return self.lines


def check_durable(trial_h5: Path, progress: list[tuple[int, float]], killed_at: float) -> dict:
    """After a kill -9: rows 0..last once each, and every step reported more than a second
    before the kill among them (0.25 s of slack for scheduling)."""
    training = summary(trial_h5)["training"]
    check_rows(training, training["last"], "after kill -9")
    durable = [step for step, at in progress if at <= killed_at - 1.25]
    assert durable, f"the child reported nothing in time: {progress[:3]}"
    assert training["last"] >= durable[-1], (
        f"step {durable[-1]} was reported {killed_at - dict(progress)[durable[-1]]:.2f} s before "
        f"the kill but the record ends at {training['last']}")
    with h5py.File(trial_h5, "r") as f:
        assert f.attrs["state"] == "running"
    return training


def start_reporter(experiment: Path, mode: str) -> tuple[Path, subprocess.Popen, Progress]:
    """A child reporting up to 50 million rows in `mode` (CHILD), compacting after every flush;
    its trial.h5 and its progress lines."""
    child = subprocess.Popen([sys.executable, "-c", CHILD, mode, str(50_000_000)],
                             env=child_environment(experiment, DLX_METRICS_COMPACT_S="0"),
                             stdout=subprocess.PIPE)
    return experiment / "trials" / "0" / "trial.h5", child, Progress(child.stdout)


def poll_and_kill(work: Path) -> None:
    trial_h5, child, reader = start_reporter(work / "stream", "paced")
    reads = h5py_reads = 0
    last_rows = last_file_rows = 0
    kill_after = random.uniform(2.5, 4.5)
    start = time.monotonic()
    try:
        # At least kill_after seconds and 21 reads of each kind: on a loaded machine a read can take
        # far longer than usual, and the check is about reads racing the writer, not their rate.
        while time.monotonic() - start < kill_after or min(reads, h5py_reads) <= 20:
            assert time.monotonic() - start < 120, f"only {reads} reads in 120 s"
            if not trial_h5.exists():
                time.sleep(0.01)
                continue
            rows = summary(trial_h5)["training"]["rows"]
            assert rows >= last_rows, f"dlx's reader went back from {last_rows} rows to {rows}"
            last_rows, reads = rows, reads + 1
            with h5py.File(trial_h5, "r") as f:  # trial.h5 alone: compacted, never torn
                table = f["metrics/training"]
                file_rows = len(table["steps"])
                # Before the first compaction the table has no metric datasets yet.
                assert all(len(table[name]) == file_rows for name in table), list(table)
            assert file_rows >= last_file_rows, (last_file_rows, file_rows)
            last_file_rows, h5py_reads = file_rows, h5py_reads + 1
        killed_at = time.monotonic()
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    progress = reader.after_end()
    assert reads > 20 and h5py_reads > 20, (reads, h5py_reads)
    assert last_file_rows > 0, "no compaction reached trial.h5 while the child ran"
    training = check_durable(trial_h5, progress, killed_at)
    lost = progress[-1][0] - training["last"]
    print(f"readers: {reads} reads by dlx's reader and {h5py_reads} by h5py during the run, all "
          f"whole; kill -9 after {killed_at - start:.1f} s: rows 0..{training['last']} kept, last "
          f"progress line at step {progress[-1][0]} ({lost} steps after the record's end)")


def flat_out_kill(work: Path) -> None:
    """A child reporting as fast as it can, faster than the flusher writes and fdatasyncs
    (hundreds of thousands of rows a second, on a machine other tests load): the reports wait
    for the flusher, so a kill -9 still loses at most the last second."""
    trial_h5, child, reader = start_reporter(work / "flat-out", "stream")
    time.sleep(random.uniform(3.0, 5.0))
    killed_at = time.monotonic()
    child.kill()
    child.wait()
    progress = reader.after_end()
    training = check_durable(trial_h5, progress, killed_at)
    print(f"flat out: kill -9 after {progress[-1][0]} reports ({progress[-1][0] / (killed_at - progress[0][1]):.0f} "
          f"a second): rows 0..{training['last']} kept, every one reported up to 1 s before the kill")


def resume(work: Path) -> None:
    experiment = work / "resume"
    trial_dir = experiment / "trials" / "0"
    env = child_environment(experiment)
    # Under umask 077 too, the files a reader of trial.h5 needs are readable by its group.
    subprocess.run([sys.executable, "-c", CHILD, "million", "5000"], check=True, env=env,
                   stdout=subprocess.DEVNULL, preexec_fn=lambda: os.umask(0o077))
    modes = {p.name: p.stat().st_mode & 0o777 for p in trial_dir.iterdir()
             if p.name == "trial.h5" or p.name.startswith("metrics.")}
    assert len(modes) >= 2 and set(modes.values()) == {0o640}, {k: oct(v) for k, v in modes.items()}
    # The second run replays from step 3000 (as after a requeue that resumed step 2999's
    # checkpoint): rows from 3000 are replaced, so the table is still 0..5999 once each.
    subprocess.run([sys.executable, "-c", CHILD, "million", "3000", "3000"], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    after = summary(trial_dir / "trial.h5")
    check_rows(after["training"], 5999, "after the replay")
    assert after["validation"]["rows"] == 6, after["validation"]
    print("a run that replays from step 3000 replaces rows 3000.. and keeps the rest")


BAD_NAMES = r"""
import sys
import dlx
trial = dlx.Trial()
def refused(metrics, *expected):
    try:
        trial.report_training(1, metrics)
    except dlx.Error as error:
        assert all(part in str(error) for part in expected), (str(error), expected)
        return
    raise AssertionError(f"{list(metrics)[:3]} was accepted")
refused({"steps": 1.0}, "cannot report training metrics at step 1", "'steps' is a name trial.h5 keeps")
refused({"train\u2215loss": 1.0}, "contains U+2215")
refused({"": 1.0}, "empty")
trial.report_training(1, {f"m{i}": 1.0 for i in range(4096)})
refused({"one_more": 1.0}, "over the limit of 4096 names")
trial.finish()
trial.close()
"""


def bad_names(work: Path) -> None:
    experiment = work / "names"
    subprocess.run([sys.executable, "-c", BAD_NAMES], check=True, env=child_environment(experiment),
                   stdout=subprocess.DEVNULL)
    assert summary(experiment / "trials" / "0" / "trial.h5")["training"]["rows"] == 1
    print("metric names trial.h5 cannot hold are refused with the reason, the record unharmed")


UNREAD = r"""
import dlx
trial = dlx.Trial()
for step in range(5000):  # a validation line each: ~300 KB, several times what a pipe holds
    trial.report_validation(step, accuracy=step / 5000)
trial.finish()
trial.close()
"""


def unread_output(work: Path) -> None:
    experiment = work / "unread"
    stderr = work / "unread.stderr"
    with open(stderr, "wb") as err:
        child = subprocess.Popen([sys.executable, "-c", UNREAD], env=child_environment(experiment),
                                 stdout=subprocess.PIPE, stderr=err)
        start = time.monotonic()
        try:
            # Nothing reads the pipe until the child ends: the lines wait on their own thread, and
            # the end gives them 5 s before it goes on without them.
            status = child.wait(timeout=120)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            raise AssertionError("a trainer whose standard output nobody read did not end in 120 s")
        seconds = time.monotonic() - start
    printed = child.stdout.read().decode()
    child.stdout.close()
    said = stderr.read_text()
    assert status == 0, (status, said)
    with h5py.File(experiment / "trials" / "0" / "trial.h5", "r") as f:
        assert numpy.array_equal(f["metrics/validation/steps"][()], numpy.arange(5000))
        assert f.attrs["state"] == "completed", dict(f.attrs)
    lines = printed.splitlines()
    steps = [int(m[1]) for m in (re.fullmatch(r"dlx: trial 0 step (\d+) validation accuracy=\S+", line)
                                 for line in lines) if m]
    assert lines and len(steps) == len(lines), f"not whole metric lines: {lines[:2]} ... {lines[-2:]}"
    assert steps == list(range(len(steps))), steps[:5]
    assert len(steps) < 5000, "the pipe took every line: the case needs more of them"
    expected = (f"dlx: {5000 - len(steps)} metric lines not printed: the standard output took nothing "
                "for 5 s at the end (does anything read it?); the trial's record has every report")
    assert expected in said, said
    print(f"an output nobody reads: the child ended in {seconds:.1f} s with all 5000 rows in trial.h5; "
          f"the pipe took {len(steps)} whole lines, stderr counts the rest")


def main() -> int:
    if not SUMMARY or "DLX_LIBRARY" not in os.environ:
        print(__doc__)
        return 2
    seed = int(os.environ.get("DLX_TEST_SEED", time.time_ns() % 100000))
    random.seed(seed)
    print(f"seed {seed} (DLX_TEST_SEED to repeat)")
    work = Path(tempfile.mkdtemp(prefix="dlx-metrics-"))
    try:
        resume(work)
        bad_names(work)
        unread_output(work)
        poll_and_kill(work)
        flat_out_kill(work)
        million(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("metrics pipeline: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
