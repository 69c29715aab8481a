#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The metrics pipeline on storage that hangs (launcher/sdk/src/metrics_pipeline.hpp, its
backpressure): a trainer's experiment directory on an ext4 of its own (a loop mount in a private
mount namespace), frozen with fsfreeze for 36 s while the trainer reports 1,000 rows a second.
Its reports wait for the flusher, at most 30 s, then go on, held in memory, with a warning on
stderr; once the file system thaws, every row reaches trial.h5 and the trainer ends as usual.

Needs root (exit 77 otherwise). A watchdog thaws the file system after 90 s whatever happens to
this test: a process writing to a frozen file system cannot be killed until it thaws.

usage: metrics_hung_storage_test.py   (DLX_LIBRARY and PYTHONPATH set)
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import h5py
import numpy

ROWS = 45_000  # 45 s at 1,000 a second
FROZEN_S = 36.0
LONGEST_WAIT_S = 30.0  # MetricsPipeline::kLongestBackpressureWait

CHILD = r"""
import sys, time
import dlx
trial = dlx.Trial()
began = time.monotonic()
for step in range(int(sys.argv[1])):
    trial.report_training(step, loss=float(step))
    if step % 100 == 0:
        print("progress", step, time.monotonic(), flush=True)
        time.sleep(max(0.0, began + step / 1000 - time.monotonic()))
trial.finish()
trial.close()
"""


def run(*args: str) -> None:
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def main() -> int:
    if "DLX_LIBRARY" not in os.environ:
        print(__doc__)
        return 2
    if os.geteuid() != 0:
        print("skipped: a loop mount and fsfreeze need root")
        return 77
    if os.environ.get("DLX_HUNG_STORAGE_NAMESPACE") != "1":
        # The mount lives and dies with a mount namespace of this test's own.
        os.environ["DLX_HUNG_STORAGE_NAMESPACE"] = "1"
        os.execvp("unshare", ["unshare", "--mount", "--propagation", "private", sys.executable, *sys.argv])
    work = Path(tempfile.mkdtemp(prefix="dlx-hung-storage-"))
    mount = work / "mnt"
    try:
        run("truncate", "-s", "128M", str(work / "disk.img"))
        run("mkfs.ext4", "-q", "-F", str(work / "disk.img"))
        mount.mkdir()
        run("mount", "-o", "loop", str(work / "disk.img"), str(mount))
        try:
            return frozen_run(work, mount)
        finally:
            subprocess.run(["fsfreeze", "--unfreeze", str(mount)], stderr=subprocess.DEVNULL)
            subprocess.run(["umount", str(mount)])
    finally:
        shutil.rmtree(work, ignore_errors=True)


def frozen_run(work: Path, mount: Path) -> int:
    experiment = mount / "experiment"
    env = dict(os.environ)
    env.update({"DLX_EXPERIMENT_DIR": str(experiment), "DLX_TRIAL_ID": "0", "DLX_HPARAMS": "{}",
                "RANK": "0", "WORLD_SIZE": "1", "DLX_LATEST_CHECKPOINT": ""})
    stderr = work / "child.stderr"
    progress: list[tuple[int, float]] = []

    def read(stream) -> None:
        for line in stream:
            match = re.fullmatch(rb"progress (\d+) (\d+\.\d+)\n", line)
            if match:
                progress.append((int(match[1]), float(match[2])))

    with open(stderr, "wb") as err:
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(ROWS)], env=env, stdout=subprocess.PIPE,
                                 stderr=err)
    reader = threading.Thread(target=read, args=(child.stdout,), daemon=True)
    reader.start()
    watchdog = None
    try:
        trial_h5 = experiment / "trials" / "0" / "trial.h5"
        deadline = time.monotonic() + 60
        while not (trial_h5.exists() and progress and progress[-1][0] >= 2000):
            assert child.poll() is None, f"the child ended early: {stderr.read_text()}"
            assert time.monotonic() < deadline, "the child did not report 2,000 rows in 60 s"
            time.sleep(0.05)
        # A session of its own: the watchdog outlives this test, and keeps the namespace.
        watchdog = subprocess.Popen(["bash", "-c", f"sleep 90; fsfreeze --unfreeze '{mount}'"],
                                    start_new_session=True, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
        run("fsfreeze", "--freeze", str(mount))
        frozen_at = time.monotonic()
        time.sleep(FROZEN_S)
        run("fsfreeze", "--unfreeze", str(mount))
        thawed_at = time.monotonic()
        status = child.wait(timeout=120)
    finally:
        subprocess.run(["fsfreeze", "--unfreeze", str(mount)], stderr=subprocess.DEVNULL)
        if watchdog:
            os.killpg(watchdog.pid, signal.SIGKILL)  # its sleep too
            watchdog.wait()
        child.kill()
        child.wait()
    reader.join()
    said = stderr.read_text()
    assert status == 0, (status, said)

    # The reports waited (one wait, at most 30 s) and then went on while the storage still hung.
    times = [at for _, at in progress]
    gaps = numpy.diff(times)
    longest = float(gaps.max())
    assert LONGEST_WAIT_S - 5 <= longest <= LONGEST_WAIT_S + 4, f"longest pause between reports: {longest:.1f} s"
    moved = [step for step, at in progress if frozen_at + LONGEST_WAIT_S + 1 < at < thawed_at]
    assert moved, (f"no report between the 30 s wait's end and the thaw {thawed_at - frozen_at:.1f} s "
                   f"after the freeze: the reports waited for the storage")
    warning = (f"dlx: the metrics log beside {experiment}/trials/0/trial.h5 has not taken a write for 30 s "
               "(slow or hung storage?): reports go on without waiting for it, held in memory")
    assert warning in said, said
    # Every row, once, after the thaw.
    with h5py.File(experiment / "trials" / "0" / "trial.h5", "r") as f:
        steps = f["metrics/training/steps"][()]
        assert numpy.array_equal(steps, numpy.arange(ROWS)), (steps[:3], steps[-3:], len(steps))
        assert f.attrs["state"] == "completed", dict(f.attrs)
    print(f"storage frozen for {thawed_at - frozen_at:.0f} s: the reports paused {longest:.1f} s, then went on "
          f"({len(moved) * 100} rows before the thaw) with the warning; all {ROWS} rows in trial.h5 after it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
