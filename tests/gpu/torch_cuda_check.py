# SPDX-License-Identifier: Apache-2.0
"""dlx.torch with a CUDA model on a real GPU (scripts/gpu-check.sh runs it; exits 77 without one).

1. Resume, bit-exact: a CUDA model with dropout, Adam, a StepLR scheduler and mixed precision
   (torch.autocast float16 + GradScaler, whose scale and growth tracker are state too) trains 30
   steps in one process; another process trains 18, saves at step 12 with dlx.torch.save_state,
   is "preempted", and a third process resumes with load_state and finishes. Every parameter,
   optimizer moment, the scaler's state and the CUDA RNG must be bit-identical to the
   uninterrupted run (deterministic kernels: torch.use_deterministic_algorithms). Twice: with
   DLX_TORCH_CUDA_IO=torch (through PyTorch's host copies) and =library (the default: device
   pointers handed to libdlx, and loads into new device tensors).
2. Speed (information, and one target): saving and loading 1 GiB of CUDA state (model + Adam
   moments) with save_state/load_state against torch.save/torch.load of the same state dicts to
   the same directory, each save followed by fsync, each load from a file out of the page cache
   (cold, as a resume on another node), medians of alternating rounds.
   '# result:' lines, with DLX_TORCH_CUDA_IO=torch: save_vs_torch_save_cuda (torch.save time /
   dlx's), load_vs_torch_load_cuda (torch.load + load_state_dict onto the device / load_state's),
   blocked_vs_save_cuda (the time save_state holds the training thread / its full save;
   information), and
   blocked_vs_save_cuda_library (the same with DLX_TORCH_CUDA_IO=library; target <= 0.05),
   training_cost_vs_save_cuda_library (how much longer 4 training steps take with a save_state
   before them than without, over the whole save: the default background snapshot, whose copy
   runs beside the first step's forward and backward; target <= 0.05),
   training_cost_vs_save_cuda_before_return (the same with DLX_TORCH_SNAPSHOT=before_return;
   information) and
   load_vs_torch_load_cuda_library (load_state with it: the library reads the file once into new
   device tensors; target >= 1.0).
Needs DLX_LIBRARY (libdlx_c.so) and PYTHONPATH (python/)."""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # before CUDA starts: deterministic GEMMs

import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench",
                                "torch"))
from workload import drop_cache  # noqa: E402  (bench/torch/workload.py)

TOTAL, SAVE_AT, STOP_AT = 30, 12, 18


def build(seed: int = 5):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Dropout(0.2),
                                torch.nn.Linear(256, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 10)).cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=7, gamma=0.5)
    scaler = torch.amp.GradScaler("cuda", init_scale=2.0 ** 14, growth_interval=5)
    return model, optimizer, scheduler, scaler


def train(stop_at: int, resume: bool, out: str) -> None:
    """One process of the resume check: trains to stop_at (saving at SAVE_AT), writes the state."""
    import dlx
    import dlx.torch

    torch.use_deterministic_algorithms(True)
    trial = dlx.Trial()
    model, optimizer, scheduler, scaler = build()
    objects = {"model": model, "optimizer": optimizer, "scheduler": scheduler, "scaler": scaler}
    step = dlx.torch.load_state(trial, objects) if resume else None
    if resume and step != SAVE_AT:
        sys.exit(f"resumed at step {step}, expected {SAVE_AT}")
    step = step or 0
    while step < stop_at:
        x = torch.randn(128, 64, device="cuda")          # the CUDA RNG: restored on resume
        y = torch.randint(0, 10, (128,), device="cuda")
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        scheduler.step()
        step += 1
        if step == SAVE_AT and not resume:
            dlx.torch.save_state(trial, step, objects)
            trial.wait_for_checkpoint()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "scaler": scaler.state_dict(),
                "cuda_rng": torch.cuda.get_rng_state()}, out)
    trial.close()


def same(a, b, path="") -> list[str]:
    """Paths where a and b differ (tensors bit for bit)."""
    if isinstance(a, torch.Tensor):
        equal = a.dtype == b.dtype and a.shape == b.shape and torch.equal(a.cpu(), b.cpu())
        return [] if equal else [path]
    if isinstance(a, dict):
        if set(a) != set(b):
            return [f"{path} keys"]
        return [p for k in a for p in same(a[k], b[k], f"{path}/{k}")]
    if isinstance(a, (list, tuple)):
        return [p for i, (x, y) in enumerate(zip(a, b)) for p in same(x, y, f"{path}/{i}")]
    return [] if a == b else [path]


def resume_check(work: str, mode: str = "torch") -> bool:
    """mode: DLX_TORCH_CUDA_IO for the saves (torch: through PyTorch's pinned copies;
    library: the device pointers handed to libdlx)."""
    def run(name: str, trial_id: str, stop_at: int, resume: bool) -> str:
        out = os.path.join(work, f"{name}-{mode}.pt")
        trial_id = str(int(trial_id) + (0 if mode == "torch" else 10))  # one trial per mode
        checkpoints = os.path.join(work, "trials", trial_id, "checkpoints")
        env = dict(os.environ, DLX_EXPERIMENT_DIR=work, DLX_TRIAL_ID=trial_id, DLX_HPARAMS="{}",
                   DLX_CHECKPOINT_DIR=checkpoints, DLX_LATEST_CHECKPOINT="", RANK="0",
                   WORLD_SIZE="1", DLX_TORCH_CUDA_IO=mode)
        subprocess.run([sys.executable, __file__, "train", str(stop_at), str(int(resume)), out],
                       env=env, check=True)
        return out
    straight = torch.load(run("straight", "1", TOTAL, False), weights_only=False)
    run("first", "2", STOP_AT, False)
    resumed = torch.load(run("resumed", "2", TOTAL, True), weights_only=False)
    differences = same(straight, resumed)
    scale = straight["scaler"]["scale"]
    print(f"{'ok  ' if not differences else 'FAIL'} [{mode} snapshot] resume of a CUDA model with AMP (float16 "
          f"autocast, GradScaler scale {scale}), Adam, StepLR, dropout: saved at step {SAVE_AT}, "
          f"stopped at {STOP_AT}, resumed to {TOTAL}: "
          + ("bit-identical to the uninterrupted run" if not differences
             else f"differs at {differences[:5]}"))
    return not differences


def speed(work: str, mib: int, rounds: int) -> list[tuple[str, float, str]]:
    import dlx
    import dlx.torch

    checkpoints = os.path.join(work, "trials", "9", "checkpoints")
    os.environ.update(DLX_EXPERIMENT_DIR=work, DLX_TRIAL_ID="9", DLX_HPARAMS="{}",
                      DLX_CHECKPOINT_DIR=checkpoints, DLX_LATEST_CHECKPOINT="", RANK="0",
                      WORLD_SIZE="1")
    os.makedirs(checkpoints, exist_ok=True)
    trial = dlx.Trial()
    width = 4096
    layers = max(1, mib * 2 ** 20 // 3 // (width * width * 4))  # weights + 2 Adam moments
    model = torch.nn.Sequential(*[torch.nn.Linear(width, width, bias=False)
                                  for _ in range(layers)]).cuda()
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.randn(8, width, device="cuda")).sum().backward()
    optimizer.step()
    objects = {"model": model, "optimizer": optimizer}
    size = 3 * sum(p.numel() * 4 for p in model.parameters())
    torch_file = os.path.join(work, "torch-state.pt")

    def fsync(path: str) -> None:
        fd = os.open(path, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)

    # Before each load, both sides' files leave the page cache (drop_cache, as
    # bench_torch_state.py does), so that the next read is cold, as a resume's on another node
    # is: dlx writes its tensors with O_DIRECT (nothing stays cached), torch.save through the
    # cache (everything does), and the first GPU run compared a cold dlx load with a warm
    # torch.load.

    def dlx_save(step: int) -> tuple[float, float]:
        torch.cuda.synchronize()
        start = time.perf_counter()
        dlx.torch.save_state(trial, step, objects)
        blocked = time.perf_counter() - start
        trial.wait_for_checkpoint()  # the library's writer fsyncs before it publishes
        return time.perf_counter() - start, blocked

    def torch_save() -> float:
        torch.cuda.synchronize()
        start = time.perf_counter()
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, torch_file)
        fsync(torch_file)
        return time.perf_counter() - start

    def dlx_load(step: int) -> float:
        drop_cache(os.path.join(checkpoints, f"step-{step}.h5"))
        start = time.perf_counter()
        dlx.torch.load_state(trial, objects, restore_rng=False)
        torch.cuda.synchronize()
        return time.perf_counter() - start

    def torch_load() -> float:
        drop_cache(torch_file)
        start = time.perf_counter()
        state = torch.load(torch_file, map_location="cuda", weights_only=True)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        torch.cuda.synchronize()
        return time.perf_counter() - start

    saves, torch_saves, blocked, loads, torch_loads = [], [], [], [], []
    os.environ["DLX_TORCH_CUDA_IO"] = "torch"
    for index in range(rounds + 1):
        order = [0, 1] if index % 2 == 0 else [1, 0]
        for side in order:
            if side == 0:
                total, held = dlx_save(index + 1)
                t_load = dlx_load(index + 1)
                if index:
                    saves.append(total), blocked.append(held), loads.append(t_load)
            else:
                total = torch_save()
                t_load = torch_load()
                if index:
                    torch_saves.append(total), torch_loads.append(t_load)
    # The same saves with the device pointers handed to the library (one copy, its own pinned
    # buffers): how long they hold the training thread. Its loads: one read of the file into new
    # device tensors, which the model copies and the optimizer keeps.
    os.environ["DLX_TORCH_CUDA_IO"] = "library"
    library_saves, library_blocked, library_loads = [], [], []
    for index in range(rounds + 1):
        total, held = dlx_save(rounds + 2 + index)
        t_load = dlx_load(rounds + 2 + index)
        if index:
            library_saves.append(total), library_blocked.append(held), library_loads.append(t_load)
    # What a save costs the training itself: 4 steps (forward, backward, Adam) with a save_state
    # before the first, less 4 steps without, over the whole save (library_saves). By default
    # (DLX_TORCH_SNAPSHOT=background) the library copies the optimizer's tensors while the first
    # step's forward and backward run, and that step's Adam update waits for the copy;
    # before_return copies them all before save_state returns.
    batch = torch.randn(1024, width, device="cuda")

    def steps(count: int) -> None:
        for _ in range(count):
            model(batch).square().mean().backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=False)
        torch.cuda.synchronize()

    def training_cost_of_save(step: int) -> float:
        steps(1)
        start = time.perf_counter()
        steps(4)
        plain = time.perf_counter() - start
        start = time.perf_counter()
        dlx.torch.save_state(trial, step, objects)
        steps(4)
        with_save = time.perf_counter() - start
        trial.wait_for_checkpoint()
        return with_save - plain

    costs: dict[str, list[float]] = {"background": [], "before_return": []}
    step = 2 * rounds + 3  # after the saves above
    for index in range(rounds + 1):
        for snapshot in (["background", "before_return"] if index % 2 == 0
                         else ["before_return", "background"]):
            os.environ["DLX_TORCH_SNAPSHOT"] = snapshot
            step += 1
            cost = training_cost_of_save(step)
            if index:
                costs[snapshot].append(cost)
    del os.environ["DLX_TORCH_SNAPSHOT"], os.environ["DLX_TORCH_CUDA_IO"]
    median = statistics.median
    print(f"# a save's cost to 4 training steps (batch 1024), medians: background "
          f"{median(costs['background']) * 1e3:.1f} ms, before_return "
          f"{median(costs['before_return']) * 1e3:.1f} ms, of a {median(library_saves):.3f} s save")
    print(f"# DLX_TORCH_CUDA_IO=library: save_state {median(library_saves):.3f} s (blocked "
          f"{median(library_blocked):.3f} s), load_state {median(library_loads):.3f} s")
    print(f"# {size / 2 ** 30:.2f} GiB of CUDA state ({layers} Linear {width}x{width} + Adam), "
          f"medians of {rounds} rounds: save_state {median(saves):.3f} s (blocked "
          f"{median(blocked):.3f} s), torch.save+fsync {median(torch_saves):.3f} s; load_state "
          f"{median(loads):.3f} s, torch.load+load_state_dict {median(torch_loads):.3f} s")
    trial.close()
    return [("save_vs_torch_save_cuda", median(torch_saves) / median(saves), "target >= 1.5"),
            ("load_vs_torch_load_cuda", median(torch_loads) / median(loads), "target >= 1.0"),
            ("blocked_vs_save_cuda", median(blocked) / median(saves), "information"),
            ("blocked_vs_save_cuda_library", median(library_blocked) / median(library_saves),
             "target <= 0.05"),
            ("training_cost_vs_save_cuda_library",
             max(0.0, median(costs["background"])) / median(library_saves), "target <= 0.05"),
            ("training_cost_vs_save_cuda_before_return",
             max(0.0, median(costs["before_return"])) / median(library_saves), "information"),
            ("load_vs_torch_load_cuda_library", median(torch_loads) / median(library_loads),
             "target >= 1.0")]


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "train":
        train(int(sys.argv[2]), bool(int(sys.argv[3])), sys.argv[4])
        return 0
    if not torch.cuda.is_available():
        print("skip: no GPU visible (this check runs on a GPU machine: scripts/gpu-check.sh)")
        return 77
    mib = int(os.environ.get("DLX_GPU_CHECK_MIB", "1024"))
    print(f"# torch {torch.__version__}, CUDA {torch.version.cuda}, "
          f"{torch.cuda.get_device_name()}")
    with tempfile.TemporaryDirectory(prefix="dlx-torch-cuda-") as work:
        ok = resume_check(work)
        ok = resume_check(work, "library") and ok
        for name, value, target in speed(work, mib, rounds=3):
            verdict = target
            if target.startswith("target >= "):
                verdict = f"{target}: {'met' if value >= float(target.split()[-1]) else 'MISSED'}"
            elif target.startswith("target <= "):
                verdict = f"{target}: {'met' if value <= float(target.split()[-1]) else 'MISSED'}"
            print(f"# result: {name} {value:.3f} ({verdict})")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
