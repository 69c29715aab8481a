#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""dlx logs through the real dlx and dlx-launch binaries.

dlx-launch runs small shell trainers as the ranks of a fake srun step (the environment srun
gives), so the logs are the ones a trial leaves; then dlx logs prints them by attempt and rank,
lists them as JSON, follows a trial across a requeue until its trial.h5 says it ended (and stops
at Ctrl-C), falls back to Slurm's own file (a stand-in scontrol on PATH), and refuses an unknown
trial, a trial with no output, and a directory it may not read, each with what to do.

usage: dlx_logs_test.py DLX DLX_LAUNCH WRITE_TRIAL_STATE GRID_YAML
"""
import json
import os
import pty
import shutil
import signal
import subprocess
import sys
import tempfile
import time

DLX, LAUNCH, WRITE_STATE, GRID = sys.argv[1:5]
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAIL:", what)


def no_sdk_warning(trial):
    """What rank 0's dlx-launch adds to its log after these shell trainers, which never open their
    trial through the SDK."""
    return (f"dlx-launch: warning: the trainer exited 0 without opening trial {trial} through the dlx SDK: it "
            "reported no metrics and saved no checkpoints, and `dlx status` will show the trial not started. "
            "Open it with dlx.Trial() in Python (or dlx.torch.Loop, or Determined's API), dlx::Trial in C++; "
            "docs/sdk.md\n")


def launch(directory, trial, rank, restart, script, extra=None):
    env = {"PATH": "/usr/bin:/bin", "DLX_EXPERIMENT_DIR": directory, "DLX_TRIAL_ID": str(trial),
           "SLURM_JOB_ID": "77", "SLURM_STEP_ID": "0", "SLURM_PROCID": str(rank),
           "SLURM_STEP_NUM_TASKS": "2", "SLURM_LOCALID": "0", "SLURM_NODEID": str(rank),
           "SLURM_STEP_NUM_NODES": "2", "SLURM_STEP_TASKS_PER_NODE": "1(x2)",
           "SLURM_STEP_NODELIST": "n[1-2]", "SLURMD_NODENAME": f"n{rank + 1}"}
    if restart:
        env["SLURM_RESTART_COUNT"] = str(restart)
    env.update(extra or {})
    done = subprocess.run([LAUNCH, "--", "sh", "-c", script], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def dlx(*args, user=None, env_extra=None):
    env = {k: v for k, v in os.environ.items() if k not in ("DLX_STORAGE_ROOT", "SLURM_CONF")}
    env.update(env_extra or {})
    command = [DLX, "logs", *args]
    if user:
        command = ["runuser", "-u", user, "--"] + command
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)


work = tempfile.mkdtemp(prefix="dlx-logs-test-")
try:
    exp = os.path.join(work, "exp")
    os.mkdir(exp, 0o700)
    shutil.copy(GRID, os.path.join(exp, "experiment.yaml"))
    trainer = 'echo "out rank $RANK restart ${SLURM_RESTART_COUNT:-0}"; echo "err rank $RANK" >&2'
    for restart in (0, 1):
        for rank in (0, 1):
            launch(exp, 2, rank, restart, trainer)

    # Every attempt and rank, each under its header, in order.
    done = dlx(exp, "2")
    check(done.returncode == 0, f"dlx logs: exit {done.returncode}: {done.stderr}")
    logs = os.path.join(exp, "trials", "2", "logs")
    expected = ""
    for restart in (0, 1):
        for rank in (0, 1):
            expected += (f"# trial 2 attempt {restart} rank {rank} (run 77.{restart}.0): "
                         f"{logs}/attempt-{restart}.rank-{rank}.log\n"
                         f"out rank {rank} restart {restart}\nerr rank {rank}\n"
                         + (no_sdk_warning(2) if rank == 0 else ""))
    check(done.stdout == expected, f"dlx logs output:\n{done.stdout}\nexpected:\n{expected}")

    done = dlx(exp, "2", "--attempt", "1", "--rank", "0")
    check(done.stdout == f"# trial 2 attempt 1 rank 0 (run 77.1.0): {logs}/attempt-1.rank-0.log\n"
                         "out rank 0 restart 1\nerr rank 0\n" + no_sdk_warning(2), f"--attempt 1 --rank 0:\n{done.stdout}")

    done = dlx(exp, "2", "--json")
    doc = json.loads(done.stdout)
    check(doc["source"] == "dlx-launch" and [a["attempt"] for a in doc["attempts"]] == [0, 1],
          f"--json attempts: {doc}")
    first = doc["attempts"][0]
    check(first["run"] == "77.0.0" and [f["rank"] for f in first["files"]] == [0, 1], f"--json files: {first}")
    check(first["files"][0]["path"] == f"{logs}/attempt-0.rank-0.log" and
          first["files"][0]["bytes"] == len("out rank 0 restart 0\nerr rank 0\n" + no_sdk_warning(2)),
          f"--json file: {first}")

    # Refusals, each saying what and how to go on.
    done = dlx(exp, "9")
    check(done.returncode == 1 and "trial 9 has no directory" in done.stderr and
          f"dlx status {exp} lists its trials" in done.stderr, f"unknown trial: {done.stderr}")
    os.makedirs(os.path.join(exp, "trials", "3"))
    done = dlx(exp, "3")
    # No journal names its task, but in a grid trial 3 is array task 3: only the job is unknown.
    check(done.returncode == 1 and "trial 3 has no output yet" in done.stderr and
          "it runs in array task 3, but no job id is known for the experiment (give the job id instead of the "
          "directory)" in done.stderr and "--follow waits for it" in done.stderr,
          f"no output yet: {done.stderr}")
    done = dlx(exp, "2", "--attempt", "7")
    check(done.returncode == 1 and "trial 2 has no attempt 7" in done.stderr and
          "(its attempts: 0, 1)" in done.stderr, f"no such attempt: {done.stderr}")
    done = dlx(exp, "two")
    check(done.returncode == 2 and "TRIAL must be a trial id" in done.stderr, f"bad trial id: {done.stderr}")
    done = dlx(os.path.join(work, "nowhere"), "2")
    check(done.returncode == 1 and "no such directory" in done.stderr, f"no experiment: {done.stderr}")

    # Another user's experiment: the directory cannot be read (as nobody when run as root).
    if os.geteuid() == 0:
        done = dlx(exp, "2", user="nobody")
        check(done.returncode == 1 and "Permission denied" in done.stderr and
              "readable by its owner's group only" in done.stderr, f"EACCES (experiment): {done.stderr}")
        os.chmod(work, 0o755)
        os.chmod(exp, 0o755)
        for sub in ("trials", "trials/2"):
            os.chmod(os.path.join(exp, sub), 0o755)
        done = dlx(exp, "2", user="nobody")  # logs/ is 0750: the group's, not others'
        check(done.returncode == 1 and f"cannot read {logs}: Permission denied" in done.stderr and
              "readable by its owner and their group only" in done.stderr, f"EACCES (logs): {done.stderr}")
        os.chmod(exp, 0o700)
    else:
        os.chmod(logs, 0)
        done = dlx(exp, "2")
        os.chmod(logs, 0o750)
        check(done.returncode == 1 and "Permission denied" in done.stderr, f"EACCES (logs): {done.stderr}")

    # Slurm's own file when dlx-launch kept none: the job named by trial.h5, through scontrol.
    bin_dir = os.path.join(work, "bin")
    os.mkdir(bin_dir)
    with open(os.path.join(work, "slurm-40_3.out"), "w") as out:
        out.write("from slurm, attempt 0\nfrom slurm, attempt 1\n")

    def fake_scontrol(uid=os.geteuid(), name="job.sh", stdout=f"{work}/slurm-%A_%a.out"):
        """A stand-in scontrol: `show job 45` answers as Slurm 22.05 does (StdOut, StdErr, WorkDir
        and UserId each at the start of a line); anything else fails."""
        with open(os.path.join(bin_dir, "answer"), "w") as f:
            f.write(f"JobId=45 ArrayJobId=40 ArrayTaskId=3 JobName={name}\n"
                    f"   UserId=u({uid}) GroupId=u(0) MCS_label=N/A\n   NodeList=n1\n   BatchHost=n1\n"
                    f"   WorkDir={work}\n   StdErr={work}/slurm-%A_%a.out\n   StdIn=/dev/null\n"
                    f"   StdOut={stdout}\n   Power=\n")
        with open(os.path.join(bin_dir, "scontrol"), "w") as fake:
            fake.write(f"#!/bin/sh\n[ \"$*\" = 'show job 45' ] && exec cat {bin_dir}/answer\nexit 1\n")
        os.chmod(os.path.join(bin_dir, "scontrol"), 0o755)

    fake_scontrol()
    subprocess.run([WRITE_STATE, os.path.join(exp, "trials", "3", "trial.h5"), "running", "45"], check=True)
    path_env = {"PATH": bin_dir + ":" + os.environ["PATH"]}
    done = dlx(exp, "3", env_extra=path_env)
    check(done.returncode == 0 and
          f"Slurm's output file of job 45 (every attempt, as Slurm wrote it): {work}/slurm-40_3.out" in done.stdout
          and done.stdout.endswith("from slurm, attempt 0\nfrom slurm, attempt 1\n"),
          f"Slurm's file: {done.returncode} {done.stdout} {done.stderr}")
    doc = json.loads(dlx(exp, "3", "--json", env_extra=path_env).stdout)
    check(doc["source"] == "slurm" and doc["stdout"] == f"{work}/slurm-40_3.out", f"Slurm --json: {doc}")

    # A job name that reads as a field is only a name; one with a line break starts a second
    # StdOut line, and then nothing of the answer is used.
    fake_scontrol(name="x StdOut=/etc/shadow")
    done = dlx(exp, "3", env_extra=path_env)
    check(done.returncode == 0 and done.stdout.endswith("from slurm, attempt 1\n") and "root:" not in done.stdout,
          f"a job named like a field: {done.returncode} {done.stdout} {done.stderr}")
    fake_scontrol(name="x\n   StdOut=/etc/shadow")
    done = dlx(exp, "3", env_extra=path_env)
    check(done.returncode == 1 and "root:" not in done.stdout and
          "does not give its output file, error file, working directory and user exactly once each" in done.stderr,
          f"a forged StdOut line: {done.returncode} {done.stdout} {done.stderr}")

    # Issue 31, finding 7: Slurm's file is read only as a regular file of the user the job ran as,
    # never through a link, and only for a job of the experiment's owner.
    fake_scontrol(stdout=f"{work}/linked.out")
    secret = os.path.join(work, "secret.txt")
    with open(secret, "w") as f:
        f.write("SECRET, not the job's output\n")
    os.symlink(secret, os.path.join(work, "linked.out"))
    done = dlx(exp, "3", env_extra=path_env)
    check(done.returncode == 1 and "SECRET" not in done.stdout and
          f"{work}/linked.out is a symbolic link, not the output file Slurm wrote for job 45 (not followed; remove it)"
          in done.stderr, f"a linked Slurm file: {done.returncode} {done.stdout} {done.stderr}")
    if os.geteuid() == 0:
        fake_scontrol(stdout=f"{work}/theirs.out")
        with open(os.path.join(work, "theirs.out"), "w") as f:
            f.write("SECRET of another user\n")
        os.chown(os.path.join(work, "theirs.out"), 65534, 65534)
        done = dlx(exp, "3", env_extra=path_env)
        check(done.returncode == 1 and "SECRET" not in done.stdout and
              f"{work}/theirs.out belongs to nobody, not to root, the user job 45 ran as" in done.stderr,
              f"another user's file as Slurm's: {done.returncode} {done.stdout} {done.stderr}")
        fake_scontrol(uid=65534)
        done = dlx(exp, "3", env_extra=path_env)
        check(done.returncode == 1 and "from slurm" not in done.stdout and
              f"trial 3: job 45 ran as nobody, but {exp} belongs to root" in done.stderr,
              f"another user's job: {done.returncode} {done.stdout} {done.stderr}")
    fake_scontrol()

    # --follow on Slurm's file: what is appended, until the trial ends.
    follower = subprocess.Popen([DLX, "logs", exp, "3", "--follow"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env={**os.environ, **path_env})
    time.sleep(1.0)
    with open(os.path.join(work, "slurm-40_3.out"), "a") as out:
        out.write("from slurm, later\n")
    time.sleep(1.0)
    subprocess.run([WRITE_STATE, os.path.join(exp, "trials", "3", "trial.h5"), "failed", "45"], check=True)
    try:
        out, err = follower.communicate(timeout=10)
        check(follower.returncode == 0 and out.endswith("from slurm, attempt 1\nfrom slurm, later\n"),
              f"--follow on Slurm's file: {follower.returncode} {out} {err}")
    except subprocess.TimeoutExpired:
        follower.kill()
        check(False, "--follow on Slurm's file did not end when the trial failed")

    # Hostile bytes in a marker and a log (the owner's to write; a group member reads them): the
    # JSON stays valid, a pipe gets the log's bytes exactly, the header's escapes are shown.
    hostile = os.path.join(exp, "trials", "6", "logs")
    os.makedirs(hostile)
    with open(os.path.join(hostile, "attempt-0.run"), "wb") as marker:
        marker.write(b"\xff\x1b]0;owned\x07")
    with open(os.path.join(hostile, "attempt-0.rank-0.log"), "wb") as log:
        log.write(b"\x1b[2Jcolour\r\n")
    done = dlx(exp, "6", "--json")
    check(done.returncode == 0 and json.loads(done.stdout)["attempts"][0]["run"] == "\ufffd\x1b]0;owned\x07",
          f"hostile marker --json: {done.returncode} {done.stdout} {done.stderr}")
    raw = subprocess.run([DLX, "logs", exp, "6"], capture_output=True)
    check(raw.returncode == 0 and raw.stdout.endswith(b"\n\x1b[2Jcolour\r\n") and
          b"(run \\xff\\x1b]0;owned\\x07)" in raw.stdout, f"hostile marker: {raw.stdout!r} {raw.stderr!r}")

    # On a terminal each line is shown escaped; --raw writes it as it is.
    def on_terminal(*args):
        master, slave = pty.openpty()
        child = subprocess.Popen([DLX, "logs", *args], stdout=slave, stderr=subprocess.DEVNULL)
        os.close(slave)
        shown = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            shown += chunk
        os.close(master)
        child.wait(timeout=30)
        return shown
    # Issue 31, finding 7: a 128 MiB log without a newline, on a terminal, is streamed in chunks
    # (escaped each), not held whole: the reader's peak memory stays far below the log's size.
    big = os.path.join(exp, "trials", "7", "logs")
    os.makedirs(big)
    with open(os.path.join(big, "attempt-0.rank-0.log"), "wb") as log:
        block = b"x" * (1 << 20)
        for _ in range(128):
            log.write(block)
    master, slave = pty.openpty()
    child = subprocess.Popen([DLX, "logs", exp, "7"], stdout=slave, stderr=subprocess.DEVNULL)
    os.close(slave)
    received = 0
    header = b""  # the "# trial 7 ..." line, whose path may hold an x
    while True:
        try:
            chunk = os.read(master, 1 << 20)
        except OSError:
            break
        if not chunk:
            break
        if not header.endswith(b"\n"):
            cut = chunk.find(b"\n") + 1 if b"\n" in chunk else len(chunk)
            header += chunk[:cut]
            chunk = chunk[cut:]
        received += chunk.count(b"x")
    os.close(master)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    peak_mib = usage.ru_maxrss / 1024
    print(f"# 128 MiB newline-free log on a terminal: {received} bytes shown, peak RSS {peak_mib:.1f} MiB")
    check(child.returncode == 0 and received == 128 << 20,
          f"the 128 MiB log: exit {child.returncode}, {received} of {128 << 20} bytes shown")
    check(peak_mib < 64, f"the 128 MiB newline-free log took {peak_mib:.1f} MiB of memory (held whole?)")

    shown = on_terminal(exp, "6")
    check(b"\\x1b[2Jcolour\\r" in shown and b"\x1b" not in shown, f"terminal: {shown!r}")
    check(b"\x1b[2Jcolour" in on_terminal(exp, "6", "--raw"), "--raw on a terminal")

    # --follow: waits for the output, follows a requeue into the next attempt, ends with the trial.
    os.makedirs(os.path.join(exp, "trials", "0"))
    follower = subprocess.Popen([DLX, "logs", exp, "0", "--follow"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    launch(exp, 0, 0, 0, 'echo "first attempt"')
    time.sleep(1.2)
    launch(exp, 0, 0, 1, 'echo "second attempt"')
    time.sleep(1.2)
    subprocess.run([WRITE_STATE, os.path.join(exp, "trials", "0", "trial.h5"), "completed"], check=True)
    try:
        out, err = follower.communicate(timeout=10)
        check(follower.returncode == 0, f"--follow exit {follower.returncode}: {err}")
        print("# --follow printed:\n" + out, end="")
        check("no output yet; waiting for it" in out and "first attempt\n" in out and
              f"# trial 0 attempt 1 rank 0 (run 77.1.0): " in out and out.endswith("second attempt\n" + no_sdk_warning(0)),
              f"--follow output:\n{out}")
    except subprocess.TimeoutExpired:
        follower.kill()
        check(False, "--follow did not end when the trial completed")

    # --follow on a running trial ends cleanly at Ctrl-C.
    follower = subprocess.Popen([DLX, "logs", exp, "2", "--follow"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    follower.send_signal(signal.SIGINT)
    try:
        out, err = follower.communicate(timeout=5)
        check(follower.returncode == 0 and "out rank 1 restart 1" in out, f"--follow at SIGINT: {follower.returncode} {out} {err}")
    except subprocess.TimeoutExpired:
        follower.kill()
        check(False, "--follow did not end at SIGINT")
finally:
    shutil.rmtree(work, ignore_errors=True)

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("dlx logs: all checks passed")
