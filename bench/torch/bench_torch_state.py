#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""bench_torch_state: dlx.torch checkpoints against PyTorch's own torch.save/torch.load of the same
state, on the same file system, in one run (docs/benchmarks.md, "PyTorch checkpoints
(dlx.torch)"). Needs DLX_LIBRARY (the built libdlx_c.so) and PYTHONPATH (python/).

The state (workload.py): an fp32 model of 4 square nn.Linear layers holding --mib / 3 MiB, and
its Adam optimizer after one step (exp_avg and exp_avg_sq: two more copies), --mib MiB in all;
the objects a training program hands to dlx.torch.save_state.

Results (a ratio is the median over rounds of each round's own ratio: a round's operations run
back to back, in rotating order, because the shared disk changes speed from one second to the
next; one untimed warm-up round first, so that every side writes into warm buffers):
  save_vs_torch_save           torch.save + flush + fsync / (dlx.torch.save_state +        >= 1.5
                               trial.wait_for_checkpoint): the whole durable save, both sides
  load_vs_torch_load           torch.load + model/optimizer.load_state_dict /               >= 1.0
                               dlx.torch.load_state, each a resume as a restarted program
                               does it (fresh_load.py: a fresh process, a model and an
                               optimizer with no state yet, the file cold: fdatasync +
                               POSIX_FADV_DONTNEED first); the same in this process, into
                               the objects of the rounds, beside it for information
  blocked_vs_sync_save         time blocked in save_state, and in dlx.torch.wait_for_snapshot <= 0.1
                               called right after it / the whole save: what training waits
                               for instead of the synchronous write when its next optimizer
                               step comes at once (the background snapshot's worst case); how
                               soon save_state itself returned is returned_vs_sync_save
                               (information)
  peak_extra_memory_vs_state   peak RSS during one save_state + wait above the resting RSS,  <= 1.1
                               / the state's bytes (peak_memory.py: a fresh process per
                               measurement); torch.save's figure beside it, for information
  cuda_snapshot_vs_pinned_copy (GPU only, information; cuda_snapshot.py) pinned-memory copy
                               time of CUDA tensors / time blocked in save_state for them
Beside them, the floors: POSIX write + fsync and a cold POSIX read of the same bytes (the disk),
the library's own read (trial.load, no torch), a copy of the tensors into warm buffers (the
memory), and a clone of the Adam moments into fresh memory (page faults and zeroing:
Optimizer.load_state_dict deep-copies the moments it is given after torch.load; load_state has
the library read them into new tensors the optimizer keeps, which costs the same faults); and
where each load spends its time (torch.load, trial.load and Optimizer.load_state_dict, timed
around the calls the loads make; in load_state, trial.load verifies the whole file and reads
the moments into their new tensors as it does, the model's read in place comes after it).
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
from dataclasses import dataclass
from pathlib import Path

import torch

from workload import (LAYERS, MIB, build_state, drop_cache, moments, nbytes, open_trial,
                      state_tensors, time_calls, timed, torch_save)

HERE = Path(__file__).resolve().parent
ROWS = [  # (key, what the operations table calls it)
    ("torch_save", "torch.save + flush + fsync"),
    ("dlx_save", "dlx.torch.save_state + wait_for_checkpoint"),
    ("dlx_blocked", "dlx.torch.save_state + wait_for_snapshot (caller blocked)"),
    ("dlx_returned", "  of which dlx.torch.save_state (returned)"),
    ("posix_write", "POSIX write + fsync, same bytes (floor)"),
    ("copy", "tensor copy_ into warm buffers (memory floor)"),
    ("moments_clone", "clone of the Adam moments into fresh memory"),
    ("torch_load", "torch.load + load_state_dict x2, cold"),
    ("torch_load_read", "  of which torch.load"),
    ("torch_load_optimizer", "  of which Optimizer.load_state_dict"),
    ("dlx_load", "dlx.torch.load_state, cold"),
    ("dlx_load_library", "  of which trial.load"),
    ("dlx_load_optimizer", "  of which Optimizer.load_state_dict"),
    ("dlx_load_rest", "  the rest (the model read in place, checks, RNG)"),
    ("library_load", "trial.load alone (library read + CRC), cold"),
    ("posix_read", "POSIX read into a warm buffer, cold (floor)"),
]


@dataclass(frozen=True)
class Target:
    op: str  # ">=" or "<="
    bound: float

    def met(self, value: float) -> bool:
        return value >= self.bound if self.op == ">=" else value <= self.bound

    def __str__(self) -> str:
        return f"{self.op} {self.bound:g}"


TARGETS = {"save_vs_torch_save": Target(">=", 1.5), "load_vs_torch_load": Target(">=", 1.0),
           "blocked_vs_sync_save": Target("<=", 0.1),
           "peak_extra_memory_vs_state": Target("<=", 1.1)}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=Path("/var/tmp/dlx-bench-torch"),
                        help="where the files go: a directory on the file system to measure "
                             "(not tmpfs); only what the bench creates there is removed")
    parser.add_argument("--mib", type=int, default=1024, help="state size (model + Adam moments)")
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds after the warm-up")
    parser.add_argument("--memory-repeats", type=int, default=3,
                        help="fresh processes per side for the peak-memory figure")
    parser.add_argument("--load-repeats", type=int, default=7,
                        help="fresh processes per side for the resume (load) figure")
    parser.add_argument("--layers", type=int, default=LAYERS,
                        help="Linear layers the model's share is split into (300 at --mib 900: a "
                             "model of 600 tensors, most of 1 MiB, as real models have many)")
    parser.add_argument("--smoke", action="store_true", help="3 MiB, one round (for ctest)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    if args.smoke:
        args.mib, args.repeats, args.memory_repeats, args.load_repeats = 3, 1, 1, 1
    if min(args.mib, args.repeats, args.memory_repeats, args.load_repeats) < 1:
        parser.error("need --mib, --repeats, --memory-repeats and --load-repeats >= 1")
    if args.layers < 1:
        parser.error("need --layers >= 1")
    os.environ["DLX_BENCH_LAYERS"] = str(args.layers)  # for the fresh processes too
    if "DLX_LIBRARY" not in os.environ:
        parser.error("set DLX_LIBRARY to the built libdlx_c.so and PYTHONPATH to python/")
    return args


def as_bytes(tensor: torch.Tensor) -> memoryview:
    return memoryview(tensor.numpy()).cast("B")


class Bench:
    """The state, a trial and the files; each operation returns {row key: seconds}."""

    def __init__(self, directory: Path, mib: int):
        import dlx.torch
        self.dlx_torch = dlx.torch
        self.model, self.optimizer = build_state(mib)
        self.objects = {"model": self.model, "optimizer": self.optimizer}
        self.tensors = state_tensors(self.model, self.optimizer)
        self.nbytes = nbytes(self.tensors)
        self.trial = open_trial(directory / "experiment")
        self.checkpoints = Path(self.trial.checkpoint_dir)
        self.torch_file = directory / "torch" / "state.pt"
        self.posix_file = directory / "posix" / "state.bin"
        for parent in (self.torch_file.parent, self.posix_file.parent):
            parent.mkdir(parents=True, exist_ok=True)
        self.step = 0
        # Where the loads spend their time: load_state's calls of trial.load and of the
        # optimizer's load_state_dict, timed through instance attributes that shadow them.
        self.parts: dict[str, float] = {}
        time_calls(self.trial, "load", self.parts, "library")
        time_calls(self.optimizer, "load_state_dict", self.parts, "optimizer")
        self.read_buffer = bytearray(self.nbytes)
        self.copy_buffers = [torch.empty_like(t) for t in self.tensors]

    def clear(self) -> None:
        """Remove the previous round's files (untimed), so that no write replaces a file."""
        for path in [self.torch_file, self.posix_file, *self.checkpoints.glob("step-*.h5")]:
            path.unlink(missing_ok=True)
        os.sync()

    def torch_save(self) -> dict[str, float]:
        return {"torch_save": timed(lambda: torch_save(self.model, self.optimizer,
                                                       self.torch_file))}

    def dlx_save(self) -> dict[str, float]:
        self.step += 1
        start = time.perf_counter()
        self.dlx_torch.save_state(self.trial, self.step, self.objects)
        returned = time.perf_counter() - start
        # The optimizer's next step waits for the background copy: here it comes at once.
        self.dlx_torch.wait_for_snapshot()
        blocked = time.perf_counter() - start
        self.trial.wait_for_checkpoint()
        return {"dlx_blocked": blocked, "dlx_returned": returned,
                "dlx_save": time.perf_counter() - start}

    def posix_write(self) -> dict[str, float]:
        def write() -> None:
            fd = os.open(self.posix_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                for tensor in self.tensors:
                    data = as_bytes(tensor)
                    while data:
                        data = data[os.write(fd, data):]
                os.fsync(fd)
            finally:
                os.close(fd)
        return {"posix_write": timed(write)}

    def copies(self) -> dict[str, float]:
        def copy_all() -> None:
            for target, tensor in zip(self.copy_buffers, self.tensors):
                target.copy_(tensor)
        clones: list[torch.Tensor] = []
        fresh = timed(lambda: clones.extend(t.clone() for t in moments(self.optimizer)))
        clones.clear()
        return {"copy": timed(copy_all), "moments_clone": fresh}

    def torch_load(self) -> dict[str, float]:
        drop_cache(self.torch_file)

        read: list[float] = []

        def load() -> None:
            start = time.perf_counter()
            state = torch.load(self.torch_file)
            read.append(time.perf_counter() - start)
            self.model.load_state_dict(state["model"])
            self.optimizer.load_state_dict(state["optimizer"])
        self.parts.clear()
        seconds = timed(load)
        self.tensors = state_tensors(self.model, self.optimizer)  # Adam's moments are new ones
        return {"torch_load": seconds, "torch_load_read": read[0],
                "torch_load_optimizer": self.parts["optimizer"]}

    def dlx_load(self) -> dict[str, float]:
        drop_cache(self.checkpoints / f"step-{self.step}.h5")
        self.parts.clear()
        start = time.perf_counter()
        step = self.dlx_torch.load_state(self.trial, self.objects)
        seconds = time.perf_counter() - start
        if step != self.step:
            raise RuntimeError(f"load_state restored step {step}, expected {self.step}")
        self.tensors = state_tensors(self.model, self.optimizer)
        library, optimizer = self.parts["library"], self.parts["optimizer"]
        return {"dlx_load": seconds, "dlx_load_library": library, "dlx_load_optimizer": optimizer,
                "dlx_load_rest": seconds - library - optimizer}

    def library_load(self) -> dict[str, float]:
        drop_cache(self.checkpoints / f"step-{self.step}.h5")

        def load() -> None:
            with self.trial.load(any_world_size=True):
                pass
        return {"library_load": timed(load)}

    def posix_read(self) -> dict[str, float]:
        drop_cache(self.posix_file)

        def read() -> None:
            view = memoryview(self.read_buffer)
            with open(self.posix_file, "rb", buffering=0) as f:
                while view:
                    view = view[f.readinto(view):]
        return {"posix_read": timed(read)}

    def round(self, index: int) -> dict[str, float]:
        """The writes, then the cold reads, each group in an order rotated by index, then the
        copies in memory."""
        self.clear()
        times: dict[str, float] = {}
        writes = [self.torch_save, self.dlx_save, self.posix_write]
        reads = [self.torch_load, self.dlx_load, self.library_load, self.posix_read]
        for group in (writes, reads):
            shift = index % len(group)
            for operation in group[shift:] + group[:shift]:
                times.update(operation())
        times.update(self.copies())
        return times

    def cuda_figure(self, args: argparse.Namespace) -> float | None:
        if not torch.cuda.is_available():
            print("# cuda: skipped: the CUDA snapshot bandwidth figure needs a GPU "
                  "(torch.cuda.is_available() is false here)")
            return None
        from cuda_snapshot import pinned_copy_vs_snapshot

        def save(objects: dict) -> None:
            self.step += 1
            self.dlx_torch.save_state(self.trial, self.step, objects)

        def settle() -> None:
            self.trial.wait_for_checkpoint()
            self.clear()
        return pinned_copy_vs_snapshot(save, settle, args.mib, args.repeats)


def fresh_loads(args: argparse.Namespace) -> list[dict[str, dict]]:
    """fresh_load.py in fresh processes over the last round's files, alternating which side
    goes first; one {kind: figures} per pair."""
    pairs = []
    for index in range(args.load_repeats):
        pair = {}
        for kind in ("dlx", "torch") if index % 2 == 0 else ("torch", "dlx"):
            done = subprocess.run([sys.executable, str(HERE / "fresh_load.py"), kind,
                                   str(args.dir), str(args.mib)],
                                  check=True, capture_output=True, text=True)
            pair[kind] = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"  resume pair {index}: dlx.torch.load_state {pair['dlx']['seconds']:.3f} s "
              f"(trial.load {pair['dlx']['read']:.3f}, Optimizer.load_state_dict "
              f"{pair['dlx']['optimizer']:.3f}), torch.load + load_state_dict "
              f"{pair['torch']['seconds']:.3f} s (torch.load {pair['torch']['read']:.3f}, "
              f"Optimizer.load_state_dict {pair['torch']['optimizer']:.3f})")
        pairs.append(pair)
    return pairs


def run_probes(args: argparse.Namespace) -> dict[str, list[dict]]:
    """peak_memory.py in fresh processes, alternating which side goes first."""
    probes: dict[str, list[dict]] = {"dlx": [], "torch": []}
    for index in range(args.memory_repeats):
        for kind in ("dlx", "torch") if index % 2 == 0 else ("torch", "dlx"):
            directory = args.dir / f"probe-{kind}"
            done = subprocess.run([sys.executable, str(HERE / "peak_memory.py"), kind,
                                   str(directory), str(args.mib)],
                                  check=True, capture_output=True, text=True)
            probes[kind].append(json.loads(done.stdout.strip().splitlines()[-1]))
            shutil.rmtree(directory)
    return probes


def memory_figures(probes: dict[str, list[dict]], state_bytes: int) -> dict[str, float]:
    figures = {}
    for kind, label in (("dlx", "dlx.torch.save_state + wait"), ("torch", "torch.save + fsync")):
        runs = probes[kind]
        extra = statistics.median(p["peak"] - p["resting"] for p in runs)
        held = statistics.median(p["after"] - p["resting"] for p in runs)
        reset = "worked" if all(p["hwm_reset"] for p in runs) else "FAILED (polled peak only)"
        print(f"# peak memory, {label}: resting "
              f"{statistics.median(p['resting'] for p in runs) / MIB:.0f} MiB, peak "
              f"+{extra / MIB:.0f} MiB ({extra / state_bytes:.3f} of the state), still held after "
              f"+{held / MIB:.0f} MiB; {len(runs)} fresh processes, VmHWM reset {reset}, polled/"
              f"HWM peak {[round(p['sampled_peak'] / p['peak'], 3) for p in runs]}, the save "
              f"(the process's first) {statistics.median(p['seconds'] for p in runs):.3f} s")
        figures[kind] = extra / state_bytes
    return figures


def result(name: str, value: float, note: str = "") -> dict:
    target = TARGETS.get(name)
    if target is None:
        print(f"# result: {name} {value:.4f} (no target{'; ' + note if note else ''})")
        return {"name": name, "value": value}
    print(f"# result: {name} {value:.4f} (target {target}) {'PASS' if target.met(value) else 'MISS'}")
    return {"name": name, "value": value, "target": str(target), "pass": target.met(value)}


def median_of(rounds: list[dict[str, float]], numerator: str, denominator: str) -> float:
    return statistics.median(r[numerator] / r[denominator] for r in rounds)


def remove_files(directory: Path) -> None:
    """What the bench wrote under directory (never anything else), and directory once empty."""
    for name in ("experiment", "torch", "posix", "probe-dlx", "probe-torch"):
        shutil.rmtree(directory / name, ignore_errors=True)
    if directory.is_dir() and not any(directory.iterdir()):
        directory.rmdir()


def main() -> int:
    args = parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    try:
        return run(args)
    finally:
        remove_files(args.dir)


def run(args: argparse.Namespace) -> int:
    load_before = os.getloadavg()
    bench = Bench(args.dir, args.mib)
    print(f"# bench_torch_state: {bench.nbytes / MIB:.0f} MiB of state ({len(bench.tensors)} "
          f"tensors: {args.layers} Linear layers + Adam exp_avg/exp_avg_sq), dir {args.dir}, "
          f"{args.repeats} rounds + 1 warm-up, {os.cpu_count()} cores, torch {torch.__version__} "
          f"({torch.get_num_threads()} threads), load average "
          f"{' '.join(f'{x:.2f}' for x in load_before)}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    rounds: list[dict[str, float]] = []
    for index in range(args.repeats + 1):
        times = bench.round(index)
        print(f"  round {index}{' (warm-up, not counted)' if index == 0 else ''}: "
              + ", ".join(f"{key} {times[key]:.3f}" for key, _ in ROWS))
        if index:
            rounds.append(times)
    resumes = fresh_loads(args)  # over the last round's files
    bench.clear()
    print(f"# {'operation (median over rounds)':<52} {'seconds':>8} {'MB/s':>8}")
    operations = {}
    moment_bytes = nbytes(moments(bench.optimizer))
    for key, what in ROWS:
        operations[key] = seconds = statistics.median(r[key] for r in rounds)
        size = None if what.startswith(" ") else moment_bytes if key == "moments_clone" else \
            bench.nbytes  # the parts of a load have no rate of their own
        rate = f"{size / seconds / 1e6:>8.0f}" if size and seconds > 0 else f"{'-':>8}"
        print(f"  {what:<52} {seconds:>8.3f} {rate}")
    print(f"# over POSIX write+fsync of the same bytes: dlx save "
          f"{median_of(rounds, 'dlx_save', 'posix_write'):.3f}, torch.save "
          f"{median_of(rounds, 'torch_save', 'posix_write'):.3f}")
    floor = statistics.median(r["copy"] / (r["copy"] + r["posix_write"]) for r in rounds)
    print(f"# blocked_vs_sync_save's floor here, a warm copy / (the copy + POSIX write+fsync): "
          f"{floor:.3f}; save_state's blocked time over a warm copy: "
          f"{median_of(rounds, 'dlx_blocked', 'copy'):.3f}")
    print(f"# over trial.load alone: load_state {median_of(rounds, 'dlx_load', 'library_load'):.3f}"
          f"; over a cold POSIX read: trial.load {median_of(rounds, 'library_load', 'posix_read'):.3f}"
          f", torch.load + load_state_dict {median_of(rounds, 'torch_load', 'posix_read'):.3f}")
    cuda = bench.cuda_figure(args)
    memory = memory_figures(run_probes(args), bench.nbytes)
    load_after = os.getloadavg()
    print(f"# load average at the end {' '.join(f'{x:.2f}' for x in load_after)}")
    results = [
        result("save_vs_torch_save", median_of(rounds, "torch_save", "dlx_save")),
        result("load_vs_torch_load", statistics.median(
            pair["torch"]["seconds"] / pair["dlx"]["seconds"] for pair in resumes)),
        result("load_vs_torch_load_same_process", median_of(rounds, "torch_load", "dlx_load"),
               "both loads into the rounds' objects, in this process, for comparison"),
        result("blocked_vs_sync_save", median_of(rounds, "dlx_blocked", "dlx_save")),
        result("returned_vs_sync_save", median_of(rounds, "dlx_returned", "dlx_save"),
               "save_state alone; the optimizer's next step waits for the rest"),
        result("peak_extra_memory_vs_state", memory["dlx"]),
        result("peak_extra_memory_vs_state_torch_save", memory["torch"],
               "torch.save, for comparison"),
    ]
    if cuda is not None:
        results.append(result("cuda_snapshot_vs_pinned_copy", cuda,
                              "pinned copy time / save_state's blocked time"))
    bench.trial.close()
    if args.json:
        args.json.write_text(json.dumps({"state_bytes": bench.nbytes, "operations_s": operations,
                                         "rounds": rounds, "resumes": resumes,
                                         "results": results,
                                         "load_average": [load_before, load_after]}, indent=1))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except subprocess.CalledProcessError as error:  # a peak_memory.py or fresh_load.py process failed
        print(f"bench_torch_state: {error}\n{error.stderr}", file=sys.stderr)
        sys.exit(1)
    except (OSError, RuntimeError) as error:  # dlx.Error is a RuntimeError
        print(f"bench_torch_state: {error}", file=sys.stderr)
        sys.exit(1)
