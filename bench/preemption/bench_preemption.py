#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Preemption figures of docs/benchmarks.md ("Fault tolerance"), measured on a running local
cluster (bench_preemption.sh brings one up). One 2-node logreg trial (the example trainer, with a
data set so small that every step is one epoch: each step adds a metric row to trial.h5, which
is how this script sees training progress to the step) is started fresh (--fresh times, each a
new trial timed to its first step; the last goes on), then disturbed again and again at a random
point of its checkpoint period P:

  notice events  `scontrol requeue` (SIGTERM) and real preemption (a job in `high`: USR2);
  kill events    SIGKILL of one trainer rank (no notice: resumes from the last periodic
                 checkpoint; dlx-launch counts a crash, max_restarts allows it).

Timestamps (one host, one clock): this script's own (the command it ran, the moment the last
trainer process was gone, polled every 5 ms), the job script's (`bench: batch_start <unix>` at
each start of the batch script), the trial record's progress (trial.h5 polled every 20 ms: the
first time a step appears) and the job output's lines (polled every 20 ms: "dlx: resuming from",
and "exiting 85 for a requeue after X s", X being libdlx's own time from the agreed step to the
durable checkpoint and the record update, used as the save time).

Results:
  work_lost_per_preemption_periods   steps_lost / P from trial.h5's restart events, notice events
  ..._no_notice                       the same for kill events
  notice_to_exit_vs_save              (notice -> last trainer exit) / save, target <= 1.0x + 0.5 s
  requeue_to_first_step_vs_fresh      (trainer exit -> first resumed step) / (submit -> first
                                      step of a fresh start; median of --fresh), end to end
  ..._dlx_only                        the same from the batch script's start (Slurm's requeue
                                      delay and scheduling taken out)
"""
import argparse
import glob
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time

import h5py

POLL = 0.02


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--state-dir", required=True, help="laid out by tests/cluster/setup.sh")
    parser.add_argument("--user", default="dlxtest")
    parser.add_argument("--period", type=int, default=50, help="checkpoint period P in batches")
    parser.add_argument("--step-delay-us", type=int, default=20000)
    parser.add_argument("--notices", type=int, default=4, help="notice events (requeue and preemption alternate)")
    parser.add_argument("--kills", type=int, default=4, help="SIGKILL events")
    parser.add_argument("--fresh", type=int, default=3, help="fresh starts timed (median)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=150, help="seconds any one phase may take")
    args = parser.parse_args()
    if args.period < 2 or args.fresh < 1 or args.notices < 0 or args.kills < 0 or args.step_delay_us < 0:
        parser.error(f"need --period >= 2 (got {args.period}), --fresh >= 1 (got {args.fresh}), and "
                     "non-negative --notices, --kills and --step-delay-us")
    return args


class Cluster:
    """The cluster's client environment and the unprivileged user's submit directory."""

    def __init__(self, state_dir, user):
        self.prefix = os.path.join(state_dir, "prefix")
        self.work = os.path.join(state_dir, "work")
        self.user = user
        exports = subprocess.run([f"{self.prefix}/bin/dlx", "cluster", "env", "--state-dir",
                                  os.path.join(state_dir, "cluster")], check=True, capture_output=True,
                                 text=True).stdout
        self.env = dict(os.environ)
        for name, value in re.findall(r"^export (\w+)=['\"]?(.*?)['\"]?$", exports, re.M):
            self.env[name] = value.replace("$PATH", os.environ.get("PATH", "/usr/bin:/bin"))
        self.storage = os.path.join(state_dir, "cluster", "storage", user)

    def run(self, *command, check=True):
        return subprocess.run(list(command), env=self.env, check=check, capture_output=True, text=True).stdout

    def as_user(self, *command):
        inner = ["runuser", "-u", self.user, "--", "env", "-i", f"HOME={self.work}", f"USER={self.user}",
                 f"PATH={self.prefix}/bin:/usr/bin:/bin", f"SLURM_CONF={self.env['SLURM_CONF']}",
                 "OMPI_MCA_btl_tcp_if_include=lo", "bash", "-c", 'cd "$0" && "$@"', self.work, *command]
        result = subprocess.run(inner, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(command)}: {result.stderr.strip()}")
        return result.stdout

    def in_queue(self, job):
        return bool(self.run("squeue", "-h", "-j", job, "-o", "%i", check=False).strip())


def write_experiment(cluster, args, name):
    directory = os.path.join(cluster.work, name)
    os.makedirs(directory, exist_ok=True)
    # 40 samples: 32 training rows, 16 per rank, batch 16: one step per epoch, so every step
    # reports a training and a validation row.
    with open(os.path.join(directory, "experiment.yaml"), "w") as f:
        f.write(f"""name: {name}
entrypoint: [dlx-example-logreg]
seed: 5
max_restarts: 1000
hyperparameters: {{learning_rate: 0.05, batch_size: 16, epochs: 100000, samples: 40,
                  step_delay_us: {args.step_delay_us}}}
searcher: {{name: single, metric: accuracy, smaller_is_better: false}}
resources: {{nodes_per_trial: 2, tasks_per_node: 1, partition: low}}
checkpoint: {{period: {{batches: {args.period}}}, keep_latest: 2, keep_best: 0}}
""")
    with open(os.path.join(directory, "job.sh"), "w") as f:
        f.write("""#!/bin/bash
echo "bench: batch_start $(date +%s.%N) restart ${SLURM_RESTART_COUNT:-0}"
export OMPI_MCA_btl=self,tcp
srun --mpi=pmix dlx-launch
""")
    for path in (directory, *glob.glob(directory + "/*")):
        os.chmod(path, 0o755)
    subprocess.run(["chown", "-R", cluster.user, directory], check=True)
    return directory


class Watcher(threading.Thread):
    """Polls trial.h5 and the job output; keeps the first time each step and each line was seen."""

    def __init__(self, record_path, output_path):
        super().__init__(daemon=True)
        self.record_path, self.output_path = record_path, output_path
        self.first_seen = {}       # (restarts, step) -> time
        self.lines = []            # (time, line)
        self.state = {"restarts": 0, "step": 0, "events": []}
        self.stop = False
        self._mtime = None
        self._offset = 0
        self._partial = ""

    def run(self):
        while not self.stop:
            now = time.time()
            self._poll_record(now)
            self._poll_output(now)
            time.sleep(POLL)

    def _poll_record(self, now):
        try:
            mtime = os.stat(self.record_path).st_mtime_ns
            if mtime == self._mtime:
                return
            with h5py.File(self.record_path, "r") as f:
                restarts = int(f.attrs["restarts"])
                steps = f["metrics/training/steps"][:] if "metrics/training/steps" in f else []
                events = [{k: (v.decode() if isinstance(v, bytes) else v) for k, v in f["restart_events"][k].attrs.items()}
                          for k in sorted(f["restart_events"], key=int)] if "restart_events" in f else []
            self._mtime = mtime
        except (OSError, KeyError):
            return  # not there yet, or replaced while read: next poll
        step = int(steps[-1]) if len(steps) else 0
        self.state = {"restarts": restarts, "step": step, "events": events}
        # A requeued run first rewrites the record with the old rows; they count once note_resume
        # has dropped the rows past the checkpoint (the restart event then has its resumed_step).
        if restarts == 0 or (len(events) >= restarts and int(events[restarts - 1].get("resumed_step", 0)) > 0):
            self.first_seen.setdefault((restarts, step), now)

    def _poll_output(self, now):
        try:
            with open(self.output_path) as f:
                f.seek(self._offset)
                chunk = f.read()
                self._offset = f.tell()
        except OSError:
            return
        text = self._partial + chunk
        *complete, self._partial = text.split("\n")
        self.lines += [(now, line) for line in complete]

    def first_step_after(self, restarts, step):
        """Time the first step > `step` of run `restarts` was seen."""
        times = [t for (r, s), t in self.first_seen.items() if r == restarts and s > step]
        return min(times) if times else None


def trainer_pids(cluster, experiment_dir):
    pids = []
    for proc in glob.glob("/proc/[0-9]*"):
        try:
            if os.readlink(proc + "/exe") != f"{cluster.prefix}/bin/dlx-example-logreg":
                continue
            with open(proc + "/environ", "rb") as f:
                if f"DLX_EXPERIMENT_DIR={experiment_dir}".encode() in f.read().split(b"\0"):
                    pids.append(int(proc[6:]))
        except OSError:
            continue
    return pids


def wait_for(what, predicate, timeout, interval=POLL):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")


def start_trial(cluster, args, name, timeout):
    """Submits a fresh trial and waits for its first step: (job, experiment dir, watcher, times)."""
    directory = write_experiment(cluster, args, name)
    t_submit = time.time()
    job = cluster.as_user("sbatch", "--parsable", "--open-mode=append", f"--output={name}/job.out",
                          f"--dl-experiment={name}/experiment.yaml", f"{name}/job.sh").strip().split(";")[0]
    link = os.path.join(cluster.storage, ".jobs", job)
    wait_for("the experiment directory", lambda: os.path.islink(link), 60)
    experiment_dir = os.readlink(link)
    watcher = Watcher(os.path.join(experiment_dir, "trials", "0", "trial.h5"), os.path.join(directory, "job.out"))
    watcher.start()
    try:
        t_first = wait_for("the first step", lambda: watcher.first_step_after(0, 0), timeout)
        t_batch = wait_for("the batch script's start line", lambda: next(
            (float(m.group(1)) for _, line in watcher.lines if (m := re.match(r"bench: batch_start (\S+)", line))),
            None), timeout)
    except Exception:
        watcher.stop = True
        cluster.run("scancel", job, check=False)
        raise
    return job, experiment_dir, watcher, {"submit_to_step": t_first - t_submit, "batch_to_step": t_first - t_batch}


def main():
    args = parse_args()
    rng = random.Random(args.seed)
    cluster = Cluster(args.state_dir, args.user)
    print(f"# checkpoint period P = {args.period} batches, step delay {args.step_delay_us} us, "
          f"{args.fresh} fresh starts, {args.notices} notices, {args.kills} kills, seed {args.seed}")
    # Fresh starts: each a new trial, timed to its first step; the last one goes on for the events.
    starts = []
    for number in range(1, args.fresh + 1):
        job, experiment_dir, watcher, times = start_trial(cluster, args, f"bench-preempt-{os.getpid()}-{number}",
                                                          args.timeout)
        starts.append(times)
        print(f"# fresh start {number} (job {job}): submit -> first step {times['submit_to_step']:.2f} s, "
              f"batch script start -> first step {times['batch_to_step']:.2f} s")
        if number < args.fresh:
            watcher.stop = True
            cluster.run("scancel", job, check=False)
            wait_for(f"job {job} to leave the queue", lambda: not cluster.in_queue(job), args.timeout)
    fresh = {key: statistics.median(t[key] for t in starts) for key in starts[0]}
    task = f"{job}_0"
    rows = []
    try:
        kinds = [("requeue", "preempt")[i % 2] for i in range(args.notices)] + ["kill"] * args.kills
        rng.shuffle(kinds)
        for number, kind in enumerate(kinds, 1):
            run = watcher.state["restarts"]
            # A random point of the checkpoint period: at least one period into this run, then
            # an offset of 1..P-1 steps past a checkpoint.
            base = watcher.state["step"]
            target = (base // args.period + 1) * args.period + rng.randint(1, args.period - 1)
            wait_for(f"step {target}", lambda: watcher.state["step"] >= target, args.timeout)
            pids = trainer_pids(cluster, experiment_dir)
            if not pids:
                raise RuntimeError("no trainer process found")
            step_at_notice = watcher.state["step"]
            lines_before = len(watcher.lines)
            t_notice = time.time()
            if kind == "requeue":
                cluster.run("scontrol", "requeue", task)
            elif kind == "preempt":
                cluster.as_user("sbatch", "--parsable", "-p", "high", "-N", "3", "--exclusive", "-o", "/dev/null",
                                "--wrap", "sleep 1")
            else:
                os.kill(rng.choice(pids), 9)
            wait_for("the trainers to exit", lambda: not trainer_pids(cluster, experiment_dir),
                     args.timeout, interval=0.005)
            t_exit = time.time()
            wait_for(f"run {run + 1}", lambda: watcher.state["restarts"] > run, args.timeout)
            event = wait_for("the restart event", lambda: len(watcher.state["events"]) > run and
                             watcher.state["events"][run].get("resumed_step", 0) > 0 and watcher.state["events"][run],
                             args.timeout)
            resumed = int(event["resumed_step"])
            t_step = wait_for("the first resumed step", lambda: watcher.first_step_after(run + 1, resumed), args.timeout)
            new_lines = watcher.lines[lines_before:]
            save = next((float(m.group(1)) for _, line in new_lines
                         if (m := re.search(r"exiting 85 for a requeue after ([0-9.]+) s", line))), None)
            t_batch = next((float(m.group(1)) for _, line in new_lines
                            if (m := re.match(r"bench: batch_start (\S+)", line))), None)
            t_resume_line = next((t for t, line in new_lines if "dlx: resuming from" in line), None)
            row = {"kind": kind, "cause": event["cause"], "step_at_notice": step_at_notice, "resumed": resumed,
                   "steps_lost": int(event["steps_lost"]), "notice_to_exit": t_exit - t_notice, "save": save,
                   "exit_to_batch": (t_batch - t_exit) if t_batch else None,
                   "batch_to_resume_line": (t_resume_line - t_batch) if t_batch and t_resume_line else None,
                   "batch_to_step": (t_step - t_batch) if t_batch else None, "exit_to_step": t_step - t_exit}
            rows.append(row)
            print(f"# event {number} {kind:<7} at step {step_at_notice:>4}: {event['cause']}, resumed at {resumed}, "
                  f"steps_lost {row['steps_lost']}, notice->exit {row['notice_to_exit']:.3f} s, save "
                  f"{save if save is not None else '-'} s, exit->batch start {fmt(row['exit_to_batch'])} s, "
                  f"batch start->'resuming' line {fmt(row['batch_to_resume_line'])} s, "
                  f"batch start->first step {fmt(row['batch_to_step'])} s, exit->first step {row['exit_to_step']:.2f} s")
    finally:
        watcher.stop = True
        cluster.run("scancel", job, check=False)
    report(args, fresh, rows)
    return 0


def fmt(value, digits=2):
    return "-" if value is None else f"{value:.{digits}f}"


def report(args, fresh, rows):
    notices = [r for r in rows if r["kind"] != "kill"]
    kills = [r for r in rows if r["kind"] == "kill"]
    lost_notice = [r["steps_lost"] / args.period for r in notices]
    lost_kill = [r["steps_lost"] / args.period for r in kills]
    if notices:
        print(f"# result: work_lost_per_preemption_periods {statistics.mean(lost_notice):.2f} "
              f"(target <= 1, ~0 with notice; {len(notices)} notices, max {max(lost_notice):.2f})")
    if kills:
        print(f"# result: work_lost_per_preemption_periods_no_notice {statistics.mean(lost_kill):.2f} "
              f"(target <= 1; {len(kills)} SIGKILLs of a rank, max {max(lost_kill):.2f})")
    # `scontrol requeue` signals the task at once, so its notice time is the command's; a
    # preemption's notice leaves slurmctld only when it schedules the preempting job (~0.5 s on
    # this cluster), so its figure includes Slurm's part and is printed for information.
    timed = [r for r in notices if r["save"] and r["kind"] == "requeue"]
    if timed:
        exit_s = statistics.median(r["notice_to_exit"] for r in timed)
        save_s = statistics.median(r["save"] for r in timed)
        worst = max(r["notice_to_exit"] - r["save"] for r in timed)
        verdict = "met" if all(r["notice_to_exit"] <= r["save"] + 0.5 for r in timed) else "MISS"
        print(f"# result: notice_to_exit_vs_save {exit_s / save_s:.1f} (target <= 1.0x + 0.5 s: scontrol requeue, median "
              f"notice->exit {exit_s:.3f} s, save {save_s:.3f} s, worst excess over the save {worst:.3f} s "
              f"in {len(timed)} notices; {verdict})")
    for kind in ("requeue", "preempt"):
        part = [r for r in notices if r["kind"] == kind]
        if part:
            print(f"#   {kind}: notice->exit " + ", ".join(f"{r['notice_to_exit']:.3f}" for r in part) +
                  " s; save " + ", ".join(fmt(r["save"], 3) for r in part) + " s" +
                  (" (from the preempting job's submission: includes Slurm's scheduling of the preemption)"
                   if kind == "preempt" else ""))
    resumed = [r for r in rows if r["batch_to_step"] is not None]
    if resumed:
        end_to_end = statistics.median(r["exit_to_step"] for r in resumed)
        dlx_only = statistics.median(r["batch_to_step"] for r in resumed)
        slurm = statistics.median(r["exit_to_batch"] for r in resumed)
        print(f"# result: requeue_to_first_step_vs_fresh {end_to_end / fresh['submit_to_step']:.2f} (target <= 1.3: "
              f"median exit->first resumed step {end_to_end:.2f} s, of which Slurm's requeue delay to the batch "
              f"script {slurm:.2f} s; fresh submit->first step {fresh['submit_to_step']:.2f} s, median of {args.fresh})")
        print(f"# result: requeue_to_first_step_vs_fresh_dlx_only {dlx_only / fresh['batch_to_step']:.2f} (target <= 1.3: "
              f"batch script start->first step, median resumed {dlx_only:.2f} s vs fresh {fresh['batch_to_step']:.2f} s)")
        lines = [r["batch_to_resume_line"] for r in resumed if r["batch_to_resume_line"] is not None]
        if lines:
            print(f"#   batch script start -> 'dlx: resuming from' (srun, MPI, dlx-launch, discovery, verify, load): "
                  f"median {statistics.median(lines):.2f} s")


if __name__ == "__main__":
    sys.exit(main())
