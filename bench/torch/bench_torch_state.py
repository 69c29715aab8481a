#!/usr/bin/python3
"""bench_torch_state: dlx.torch checkpoints against PyTorch's own torch.save/torch.load of the same
state, on the same file system, in one run (docs/benchmarks.md, "PyTorch checkpoints
(dlx.torch)"). Needs DLX_LIBRARY (the built libdlx_c.so) and PYTHONPATH (python/).

The state: an fp32 model of 4 square nn.Linear layers holding --mib / 3 MiB, and its Adam
optimizer after one step (exp_avg and exp_avg_sq: two more copies), --mib MiB in all; the
objects a training program hands to dlx.torch.save_state.

Results (a ratio is the median over rounds of each round's own ratio: a round's operations run
back to back, in rotating order, because the shared disk changes speed from one second to the
next; one untimed warm-up round first, so that every side writes into warm buffers):
  save_vs_torch_save           torch.save + flush + fsync / (dlx.torch.save_state +        >= 1.5
                               trial.wait_for_checkpoint): the whole durable save, both sides
  load_vs_torch_load           torch.load + model/optimizer.load_state_dict /               >= 1.0
                               dlx.torch.load_state, both cold (fdatasync + FADV_DONTNEED)
  blocked_vs_sync_save         time blocked in save_state / the whole save: what training   <= 0.1
                               waits for instead of the synchronous write
  peak_extra_memory_vs_state   peak RSS during one save_state + wait above the resting RSS,  <= 1.1
                               / the state's bytes (fresh process per measurement: VmHWM
                               reset through /proc/self/clear_refs, and VmRSS polled every ms);
                               torch.save's figure beside it, for information
  cuda_snapshot_vs_pinned_copy (GPU only, information) pinned-memory copy time of CUDA tensors
                               / time blocked in save_state for them
Beside them, the physical floor: POSIX write + fsync and a cold POSIX read of the same bytes,
the library's own read (trial.load, no torch), and a plain copy of the tensors into warm buffers.
"""
from __future__ import annotations

import argparse
import ctypes
import gc
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

MIB = 1 << 20
LAYERS = 4
ROWS = [  # (key, what the operations table calls it)
    ("torch_save", "torch.save + flush + fsync"),
    ("dlx_save", "dlx.torch.save_state + wait_for_checkpoint"),
    ("dlx_blocked", "dlx.torch.save_state alone (caller blocked)"),
    ("posix_write", "POSIX write + fsync, same bytes (floor)"),
    ("copy", "tensor copy_ into warm buffers (memory floor)"),
    ("torch_load", "torch.load + load_state_dict x2, cold"),
    ("dlx_load", "dlx.torch.load_state, cold"),
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
    parser.add_argument("--smoke", action="store_true", help="3 MiB, one round (for ctest)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--probe-memory", choices=("dlx", "torch"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.smoke:
        args.mib, args.repeats, args.memory_repeats = 3, 1, 1
    if args.mib < 1 or args.repeats < 1 or args.memory_repeats < 1:
        parser.error("need --mib, --repeats and --memory-repeats >= 1")
    if "DLX_LIBRARY" not in os.environ:
        parser.error("set DLX_LIBRARY to the built libdlx_c.so and PYTHONPATH to python/")
    return args


# ---- the state and the trial

def build_state(mib: int, device: str = "cpu") -> tuple[torch.nn.Module, torch.optim.Adam]:
    """LAYERS square fp32 Linear layers of mib/3 MiB and Adam after one step (grads dropped)."""
    width = max(8, int(math.sqrt(mib * MIB / 3 / 4 / LAYERS)) // 8 * 8)
    torch.manual_seed(0)
    model = torch.nn.Sequential(*(torch.nn.Linear(width, width) for _ in range(LAYERS))).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    model(torch.randn(8, width, device=device)).square().mean().backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return model, optimizer


def state_tensors(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    moments = [t for s in optimizer.state.values() for k, t in s.items() if k != "step"]
    return [p.detach() for p in model.parameters()] + moments


def open_trial(directory: Path):
    """A dlx.Trial outside Slurm, its checkpoints in directory/trials/0/checkpoints."""
    os.environ.update({
        "DLX_EXPERIMENT_DIR": str(directory), "DLX_TRIAL_ID": "0", "DLX_HPARAMS": "{}",
        "DLX_CHECKPOINT_DIR": str(directory / "trials" / "0" / "checkpoints"),
        "DLX_LATEST_CHECKPOINT": "", "RANK": "0", "WORLD_SIZE": "1"})
    import dlx
    return dlx.Trial()


def drop_cache(path: Path) -> None:
    """The file's pages out of the page cache (no root needed), so the next read is cold."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def as_bytes(tensor: torch.Tensor) -> memoryview:
    return memoryview(tensor.numpy()).cast("B")


# ---- the operations of one round

class Bench:
    def __init__(self, directory: Path, mib: int):
        import dlx.torch
        self.dlx_torch = dlx.torch
        self.model, self.optimizer = build_state(mib)
        self.objects = {"model": self.model, "optimizer": self.optimizer}
        self.tensors = state_tensors(self.model, self.optimizer)
        self.nbytes = sum(t.numel() * t.element_size() for t in self.tensors)
        self.trial = open_trial(directory / "experiment")
        self.checkpoints = Path(self.trial.checkpoint_dir)
        self.torch_file = directory / "torch" / "state.pt"
        self.posix_file = directory / "posix" / "state.bin"
        for parent in (self.torch_file.parent, self.posix_file.parent):
            parent.mkdir(parents=True, exist_ok=True)
        self.step = 0
        self.buffer = bytearray(self.nbytes)  # the POSIX read's warm buffer
        self.copies = [torch.empty_like(t) for t in self.tensors]

    def clear(self) -> None:
        """Remove the previous round's files (outside any timing), so that no write replaces one."""
        for path in [self.torch_file, self.posix_file, *self.checkpoints.glob("step-*.h5")]:
            path.unlink(missing_ok=True)
        os.sync()

    def torch_save(self) -> float:
        def save():
            with open(self.torch_file, "wb") as f:
                torch.save({"model": self.model.state_dict(),
                            "optimizer": self.optimizer.state_dict()}, f)
                f.flush()
                os.fsync(f.fileno())
        return timed(save)

    def dlx_save(self) -> tuple[float, float]:
        """(blocked in save_state, the whole save: save_state + wait_for_checkpoint)."""
        self.step += 1
        start = time.perf_counter()
        self.dlx_torch.save_state(self.trial, self.step, self.objects)
        blocked = time.perf_counter() - start
        self.trial.wait_for_checkpoint()
        return blocked, time.perf_counter() - start

    def posix_write(self) -> float:
        def write():
            fd = os.open(self.posix_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                for tensor in self.tensors:
                    data = as_bytes(tensor)
                    while data:
                        data = data[os.write(fd, data):]
                os.fsync(fd)
            finally:
                os.close(fd)
        return timed(write)

    def copy(self) -> float:
        def copy_all():
            for target, tensor in zip(self.copies, self.tensors):
                target.copy_(tensor)
        return timed(copy_all)

    def torch_load(self) -> float:
        drop_cache(self.torch_file)

        def load():
            state = torch.load(self.torch_file)
            self.model.load_state_dict(state["model"])
            self.optimizer.load_state_dict(state["optimizer"])
        seconds = timed(load)
        self.tensors = state_tensors(self.model, self.optimizer)  # Adam's moments are new ones
        return seconds

    def dlx_load(self) -> float:
        drop_cache(self.checkpoints / f"step-{self.step}.h5")
        start = time.perf_counter()
        step = self.dlx_torch.load_state(self.trial, self.objects)
        seconds = time.perf_counter() - start
        if step != self.step:
            raise RuntimeError(f"load_state restored step {step}, expected {self.step}")
        self.tensors = state_tensors(self.model, self.optimizer)
        return seconds

    def library_load(self) -> float:
        drop_cache(self.checkpoints / f"step-{self.step}.h5")

        def load():
            with self.trial.load(any_world_size=True):
                pass
        return timed(load)

    def posix_read(self) -> float:
        drop_cache(self.posix_file)

        def read():
            view = memoryview(self.buffer)
            with open(self.posix_file, "rb", buffering=0) as f:
                while view:
                    view = view[f.readinto(view):]
        return timed(read)

    def round(self, index: int) -> dict[str, float]:
        """One round: the writes, then the cold reads, each group in an order rotated by index."""
        self.clear()
        times: dict[str, float] = {}

        def dlx_save():
            times["dlx_blocked"], times["dlx_save"] = self.dlx_save()
        writes = [("torch_save", self.torch_save), ("dlx_save", dlx_save),
                  ("posix_write", self.posix_write)]
        reads = [("torch_load", self.torch_load), ("dlx_load", self.dlx_load),
                 ("library_load", self.library_load), ("posix_read", self.posix_read)]
        for group in (writes, reads):
            shift = index % len(group)
            for name, operation in group[shift:] + group[:shift]:
                seconds = operation()
                if seconds is not None:
                    times[name] = seconds
        times["copy"] = self.copy()
        return times


# ---- peak memory, one fresh process per measurement

def status_kib(*keys: str) -> dict[str, int]:
    found = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in keys:
                found[key] = int(value.split()[0]) * 1024
    return found


class RssSampler(threading.Thread):
    """Polls VmRSS every millisecond; peak is the largest value seen."""

    def __init__(self):
        super().__init__(daemon=True)
        self.peak = 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.peak = max(self.peak, status_kib("VmRSS")["VmRSS"])
            time.sleep(0.001)

    def stop(self) -> int:
        self.done.set()
        self.join()
        return self.peak


def probe_memory(kind: str, directory: Path, mib: int) -> dict:
    """In a fresh process: build the state, settle, then one save + wait; RSS figures in bytes."""
    model, optimizer = build_state(mib)
    nbytes = sum(t.numel() * t.element_size() for t in state_tensors(model, optimizer))
    trial, path = None, directory / "state.pt"
    if kind == "dlx":
        import dlx.torch
        trial = open_trial(directory)
    directory.mkdir(parents=True, exist_ok=True)
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    time.sleep(0.5)
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
    resting = status_kib("VmRSS", "VmHWM")
    sampler = RssSampler()
    sampler.start()
    start = time.perf_counter()
    if trial is not None:
        dlx.torch.save_state(trial, 1, {"model": model, "optimizer": optimizer})
        trial.wait_for_checkpoint()
    else:
        with open(path, "wb") as f:
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, f)
            f.flush()
            os.fsync(f.fileno())
    seconds = time.perf_counter() - start
    sampled = sampler.stop()
    after = status_kib("VmRSS", "VmHWM")
    return {"kind": kind, "state_bytes": nbytes, "resting": resting["VmRSS"],
            "hwm_reset": resting["VmHWM"] - resting["VmRSS"] < MIB,
            "peak": max(sampled, after["VmHWM"]), "sampled_peak": sampled,
            "after": after["VmRSS"], "seconds": seconds}


def run_probes(args: argparse.Namespace) -> dict[str, list[dict]]:
    probes: dict[str, list[dict]] = {"dlx": [], "torch": []}
    for index in range(args.memory_repeats):
        for kind in ("dlx", "torch") if index % 2 == 0 else ("torch", "dlx"):
            directory = args.dir / f"probe-{kind}"
            command = [sys.executable, os.path.abspath(__file__), "--probe-memory", kind,
                       "--dir", str(directory), "--mib", str(args.mib)]
            done = subprocess.run(command, check=True, capture_output=True, text=True)
            probes[kind].append(json.loads(done.stdout.strip().splitlines()[-1]))
            shutil.rmtree(directory)
    return probes


# ---- CUDA (information, only where a GPU is)

def cuda_snapshot(bench: Bench, args: argparse.Namespace) -> float | None:
    """Median over rounds of (pinned copy time / save_state's blocked time) for CUDA tensors."""
    if not torch.cuda.is_available():
        print("# cuda: skipped: the CUDA snapshot bandwidth figure needs a GPU "
              "(torch.cuda.is_available() is false here)")
        return None
    numel = args.mib * MIB // 4 // LAYERS
    tensors = {f"t{i}": torch.randn(numel, device="cuda") for i in range(LAYERS)}
    pinned = [torch.empty(numel, pin_memory=True) for _ in range(LAYERS)]
    nbytes = numel * 4 * LAYERS

    def save() -> float:
        bench.clear()
        bench.step += 1
        torch.cuda.synchronize()
        start = time.perf_counter()
        bench.dlx_torch.save_state(bench.trial, bench.step, {"gpu": tensors})
        seconds = time.perf_counter() - start
        bench.trial.wait_for_checkpoint()
        return seconds

    def copy() -> float:
        torch.cuda.synchronize()
        start = time.perf_counter()
        for host, tensor in zip(pinned, tensors.values()):
            host.copy_(tensor, non_blocking=True)
        torch.cuda.synchronize()
        return time.perf_counter() - start

    ratios = []
    for index in range(args.repeats + 1):
        first, second = (save, copy) if index % 2 == 0 else (copy, save)
        a, b = first(), second()
        blocked, copied = (a, b) if first is save else (b, a)
        print(f"  cuda round {index}{' (warm-up)' if index == 0 else ''}: save_state blocked "
              f"{blocked:.3f} s ({nbytes / blocked / 1e6:.0f} MB/s), pinned copy {copied:.3f} s "
              f"({nbytes / copied / 1e6:.0f} MB/s)")
        if index:
            ratios.append(copied / blocked)
    bench.clear()
    return statistics.median(ratios)


# ---- report

def result(name: str, value: float, note: str = "") -> dict:
    target = TARGETS.get(name)
    if target is None:
        print(f"# result: {name} {value:.4f} (no target{'; ' + note if note else ''})")
        return {"name": name, "value": value}
    verdict = "PASS" if target.met(value) else "MISS"
    print(f"# result: {name} {value:.4f} (target {target}) {verdict}")
    return {"name": name, "value": value, "target": str(target), "pass": target.met(value)}


def memory_figures(probes: dict[str, list[dict]], nbytes: int) -> dict[str, float]:
    figures = {}
    for kind, label in (("dlx", "dlx.torch.save_state + wait"), ("torch", "torch.save + fsync")):
        runs = probes[kind]
        extra = statistics.median(p["peak"] - p["resting"] for p in runs)
        retained = statistics.median(p["after"] - p["resting"] for p in runs)
        print(f"# peak memory, {label}: resting {statistics.median(p['resting'] for p in runs) / MIB:.0f}"
              f" MiB, peak +{extra / MIB:.0f} MiB ({extra / nbytes:.3f} of the state), still held "
              f"after +{retained / MIB:.0f} MiB, {len(runs)} fresh processes, VmHWM reset "
              f"{'worked' if all(p['hwm_reset'] for p in runs) else 'FAILED (sampled peak only)'}, "
              f"sampled/HWM peak {[round(p['sampled_peak'] / p['peak'], 3) for p in runs]}")
        figures[kind] = extra / nbytes
    return figures


def main() -> int:
    args = parse_args()
    if args.probe_memory:
        print(json.dumps(probe_memory(args.probe_memory, args.dir, args.mib)))
        return 0
    args.dir.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    bench = Bench(args.dir, args.mib)
    print(f"# bench_torch_state: {bench.nbytes / MIB:.0f} MiB of state ({len(bench.tensors)} "
          f"tensors: {LAYERS} Linear layers + Adam exp_avg/exp_avg_sq), dir {args.dir}, "
          f"{args.repeats} rounds + 1 warm-up, {os.cpu_count()} cores, torch {torch.__version__} "
          f"({torch.get_num_threads()} threads), load average {load_before[0]:.2f} "
          f"{load_before[1]:.2f} {load_before[2]:.2f}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    rounds: list[dict[str, float]] = []
    for index in range(args.repeats + 1):
        times = bench.round(index)
        print(f"  round {index}{' (warm-up, not counted)' if index == 0 else ''}: "
              + ", ".join(f"{key} {times[key]:.3f}" for key, _ in ROWS))
        if index:
            rounds.append(times)
    bench.clear()
    print(f"# {'operation (median over rounds)':<52} {'seconds':>8} {'MB/s':>8}")
    operations = {}
    for key, what in ROWS:
        seconds = statistics.median(r[key] for r in rounds)
        operations[key] = seconds
        print(f"  {what:<52} {seconds:>8.3f} {bench.nbytes / seconds / 1e6:>8.0f}")
    print(f"# dlx save over POSIX write+fsync of the same bytes: "
          f"{statistics.median(r['dlx_save'] / r['posix_write'] for r in rounds):.3f}; torch.save "
          f"over it: {statistics.median(r['torch_save'] / r['posix_write'] for r in rounds):.3f}")
    print(f"# save_state's blocked time over a plain copy: "
          f"{statistics.median(r['dlx_blocked'] / r['copy'] for r in rounds):.3f}; load_state over "
          f"trial.load alone: {statistics.median(r['dlx_load'] / r['library_load'] for r in rounds):.3f}")
    cuda = cuda_snapshot(bench, args)
    memory = memory_figures(run_probes(args), bench.nbytes)
    load_after = os.getloadavg()
    print(f"# load average at the end {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    results = [
        result("save_vs_torch_save", statistics.median(r["torch_save"] / r["dlx_save"] for r in rounds)),
        result("load_vs_torch_load", statistics.median(r["torch_load"] / r["dlx_load"] for r in rounds)),
        result("blocked_vs_sync_save", statistics.median(r["dlx_blocked"] / r["dlx_save"] for r in rounds)),
        result("peak_extra_memory_vs_state", memory["dlx"]),
        result("peak_extra_memory_vs_state_torch_save", memory["torch"], "torch.save, for comparison"),
    ]
    if cuda is not None:
        results.append(result("cuda_snapshot_vs_pinned_copy", cuda,
                              "pinned copy time / save_state blocked time"))
    bench.trial.close()
    for path in (args.dir / "experiment", bench.torch_file.parent, bench.posix_file.parent):
        shutil.rmtree(path, ignore_errors=True)
    if not any(args.dir.iterdir()):
        args.dir.rmdir()
    if args.json:
        args.json.write_text(json.dumps({"state_bytes": bench.nbytes, "operations_s": operations,
                                         "rounds": rounds, "results": results,
                                         "load_average": [load_before, load_after]}, indent=1))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, RuntimeError, subprocess.CalledProcessError) as error:
        detail = getattr(error, "stderr", None)
        print(f"bench_torch_state: {error}{chr(10) + detail if detail else ''}", file=sys.stderr)
        sys.exit(1)
