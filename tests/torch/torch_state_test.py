# SPDX-License-Identifier: Apache-2.0
"""dlx.torch.save_state/load_state on one rank, with Debian's PyTorch: what goes in comes back
equal, type for type; h5py reads the weights by their state-dict names; bad input is refused
with a message naming the object and key, and nothing is written.
Needs DLX_LIBRARY (the built libdlx_c.so) and PYTHONPATH (python/)."""
import atexit
import collections
import math
import os
import random
import shutil
import sys
import tempfile

import h5py
import numpy
import torch

directory = tempfile.mkdtemp(prefix="dlx-torch-state-")
atexit.register(shutil.rmtree, directory, ignore_errors=True)
checkpoints = os.path.join(directory, "trials", "3", "checkpoints")
os.environ.update({
    "DLX_EXPERIMENT_DIR": directory, "DLX_TRIAL_ID": "3", "DLX_HPARAMS": "{}",
    "DLX_CHECKPOINT_DIR": checkpoints, "DLX_LATEST_CHECKPOINT": "", "RANK": "0", "WORLD_SIZE": "1",
})
assert "torch" in sys.modules  # this test imports it; dlx itself must not:
import subprocess
probe = subprocess.run([sys.executable, "-c", "import dlx, sys; print('torch' in sys.modules, 'numpy' in sys.modules)"],
                       capture_output=True, text=True, check=True)
assert probe.stdout.split() == ["False", "False"], f"import dlx imported torch or numpy: {probe.stdout}"

import dlx
import dlx.torch


def expect_error(what, action, *needles):
    """action() raises dlx.Error whose message contains every needle, and writes no file."""
    before = sorted(os.listdir(checkpoints)) if os.path.isdir(checkpoints) else []
    try:
        action()
    except dlx.Error as error:
        text = str(error)
        for needle in needles:
            assert needle in text, f"{what}: expected {needle!r} in: {text}"
        after = sorted(os.listdir(checkpoints)) if os.path.isdir(checkpoints) else []
        assert after == before, f"{what}: files changed: {before} -> {after}"
        print(f"  refused ({what}): {text[:150]}")
        return
    raise AssertionError(f"{what}: no error")


def same(a, b, where="value"):
    """Equal, type for type (tensors: dtype, shape, bits)."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape, f"{where}: {a.dtype}{tuple(a.shape)} != {b.dtype}{tuple(b.shape)}"
        if a.is_complex():
            a, b = torch.view_as_real(a), torch.view_as_real(b)
        if a.dtype == torch.bool:
            assert torch.equal(a, b), where
        else:
            assert torch.equal(a.contiguous().view(torch.uint8) if a.dim() else a.reshape(1).view(torch.uint8),
                               b.contiguous().view(torch.uint8) if b.dim() else b.reshape(1).view(torch.uint8)), f"{where}: bits differ"
    elif isinstance(a, dict):
        assert list(a.keys()) == list(b.keys()), f"{where}: keys {list(a)} != {list(b)}"
        for key in a:
            same(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{where}: lengths {len(a)} != {len(b)}"
        for index, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{where}[{index}]")
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b), where
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


generator = torch.Generator().manual_seed(11)
every_dtype = {str(dtype): (torch.randn(3, 5, generator=generator) * 100).to(dtype)
               for dtype in (torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64,
                             torch.int32, torch.int16, torch.int8, torch.uint8)}
every_dtype["torch.bool"] = torch.randn(4, 2, generator=generator) > 0
every_dtype["torch.complex64"] = torch.randn(3, 2, dtype=torch.complex64, generator=generator)
every_dtype["torch.complex128"] = torch.randn(2, dtype=torch.complex128, generator=generator)
base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
plain = {
    "dtypes": every_dtype,
    "scalar": torch.tensor(2.5, dtype=torch.float64),           # 0-d
    "scalar_int": torch.tensor(7),
    "empty": torch.empty(0, 3, dtype=torch.float16),
    "transposed": base.t(),                                       # non-contiguous views
    "strided": base[:, ::2],
    "narrow": base[1:3, 2:5],
    "expanded": torch.tensor([1.0, 2.0]).expand(3, 2),
    "nested": {"list": [1, 2.5, "three", None, True, [torch.ones(2)], ()],
               "tuple": (1, (2, 3), [4]), 5: "int key", "5s": {"deep": {"deeper": torch.zeros(1)}}},
    "floats": [float("inf"), -float("inf"), float("nan"), -0.0, 1e-310, 0.1],
    "big_int": 2 ** 70,
    "ordered": collections.OrderedDict([("b", 1), ("a", 2)]),
}
expected = {
    "dtypes": dict(every_dtype), "scalar": plain["scalar"].clone(), "scalar_int": plain["scalar_int"].clone(),
    "empty": plain["empty"].clone(), "transposed": base.t().contiguous(), "strided": base[:, ::2].contiguous(),
    "narrow": base[1:3, 2:5].contiguous(), "expanded": plain["expanded"].contiguous(),
    "nested": plain["nested"], "floats": plain["floats"], "big_int": 2 ** 70, "ordered": plain["ordered"],
}

# A model with BatchNorm, Adam, StepLR, a GradScaler (disabled without CUDA) and a plain dict.
torch.manual_seed(5)
model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(),
                            torch.nn.Linear(8, 2))
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
scaler = torch.cuda.amp.GradScaler(enabled=torch.cuda.is_available())
for _ in range(5):
    optimizer.zero_grad()
    model(torch.randn(16, 6)).square().mean().backward()
    optimizer.step()
    scheduler.step()
objects = {"model": model, "optimizer": optimizer, "scheduler": scheduler, "scaler": scaler,
           "extra": plain}

with dlx.Trial() as trial:
    assert dlx.torch.load_state(trial, objects) is None  # a fresh start
    # Bad input: refused, naming the object and the key; nothing written.
    print("bad input:")
    expect_error("meta tensor", lambda: dlx.torch.save_state(trial, 1, {"m": torch.nn.Linear(2, 2, device="meta")}),
                 "objects['m']['weight']", "meta device")
    expect_error("sparse tensor", lambda: dlx.torch.save_state(trial, 1, {"s": {"x": torch.eye(2).to_sparse()}}),
                 "objects['s']['x']", "sparse")
    expect_error("quantized tensor", lambda: dlx.torch.save_state(
        trial, 1, {"q": [torch.quantize_per_tensor(torch.ones(2), 0.1, 0, torch.qint8)]}),
        "objects['q'][0]", "quantized", "dequantize")
    expect_error("an object", lambda: dlx.torch.save_state(trial, 1, {"p": {"f": open}}),
                 "objects['p']['f']", "builtin_function_or_method", "no pickle")
    expect_error("a numpy scalar", lambda: dlx.torch.save_state(trial, 1, {"p": {"n": numpy.int64(3)}}),
                 "objects['p']['n']", "numpy.int64")
    expect_error("colliding keys", lambda: dlx.torch.save_state(
        trial, 1, {"p": {"a/b": torch.ones(1), "a": {"b": torch.zeros(1)}}}),
        "objects['p']['a']['b']", "objects['p']['a/b']", "/tensors/p/a/b", "rename")
    expect_error("a tensor below a tensor", lambda: dlx.torch.save_state(
        trial, 1, {"p": {"a": torch.ones(1), "a/b": torch.zeros(1)}}),
        "objects['p']['a/b']", "below /tensors/p/a")
    expect_error("int and str keys", lambda: dlx.torch.save_state(
        trial, 1, {"p": {1: torch.ones(1), "1": torch.zeros(1)}}), "/tensors/p/1")
    expect_error("an empty key", lambda: dlx.torch.save_state(trial, 1, {"p": {"": torch.ones(1)}}),
                 "objects['p']['']", "rename the key")
    expect_error("a bad name", lambda: dlx.torch.save_state(trial, 1, {"a/b": torch.ones(1)}), "'a/b'")
    expect_error("a set", lambda: dlx.torch.save_state(trial, 1, {"s": {1, 2}}), "objects['s']", "set")

    os.environ["DLX_TORCH_CUDA_IO"] = "pinned"
    expect_error("a bad DLX_TORCH_CUDA_IO", lambda: dlx.torch.save_state(trial, 1, objects),
                 "DLX_TORCH_CUDA_IO is 'pinned'", "use 'library'", "or 'torch'")
    # Views of GPU memory, without a GPU (or in a dlx without CUDA): refused with the CUDA
    # runtime's reason inside the collective save, nothing written. The address is host memory
    # here; the library must not read it on the host (it would only fail later, on the device).
    host_floats = torch.ones(4)
    device_view = dlx.TensorView("x", "float32", host_floats.data_ptr(), (4,), device=True)
    before = sorted(os.listdir(checkpoints)) if os.path.isdir(checkpoints) else []
    try:
        trial.save_views(11, [device_view])
        raise AssertionError("a device view on a machine without a GPU must be refused")
    except dlx.Error as error:
        text = str(error)
        assert "cannot save the checkpoint of step 11" in text, text
        assert "snapshot of device tensors: cudaGetDevice(&device) failed" in text or \
            "this dlx was built without CUDA" in text, text
        print(f"  refused (a device view without a GPU): {text[:160]}")
    assert (sorted(os.listdir(checkpoints)) if os.path.isdir(checkpoints) else []) == before
    # The mode changes nothing for CPU tensors: this save (loaded bit for bit below) is made
    # with the one that is not the default.
    os.environ["DLX_TORCH_CUDA_IO"] = "torch"
    dlx.torch.save_state(trial, 10, objects, metric=0.5, epoch=2)
    del os.environ["DLX_TORCH_CUDA_IO"]
    assert trial.wait_for_checkpoint(timeout=60)
    python_state, numpy_state, torch_state = random.getstate(), numpy.random.get_state(), torch.get_rng_state()
    saved_model = {k: v.clone() for k, v in model.state_dict().items()}
    saved_optimizer = optimizer.state_dict()
    saved_optimizer = {"state": {k: {n: t.clone() for n, t in v.items()} for k, v in saved_optimizer["state"].items()},
                       "param_groups": [dict(g) for g in saved_optimizer["param_groups"]]}
    saved_scheduler = dict(scheduler.state_dict())
    trial.finish()

path = os.path.join(checkpoints, "step-10.h5")
assert os.path.exists(path), os.listdir(checkpoints)

# h5py alone reads the weights by their state-dict names.
with h5py.File(path, "r") as f:
    assert f.attrs["kind"] == b"dlx checkpoint" and int(f.attrs["step"]) == 10 and int(f.attrs["epoch"]) == 2
    for name, value in saved_model.items():
        got = f[f"tensors/model/{name}"][()]
        assert numpy.array_equal(got, value.numpy()), name
    assert numpy.array_equal(f["tensors/optimizer/state/0/exp_avg"][()], saved_optimizer["state"][0]["exp_avg"].numpy())
    assert f["tensors/extra/dtypes/torch.bfloat16"].dtype == numpy.float32  # HDF5 widens bfloat16 exactly
    assert numpy.array_equal(f["tensors/extra/dtypes/torch.bfloat16"][()],
                             every_dtype["torch.bfloat16"].float().numpy())
    assert f["tensors/extra/dtypes/torch.bool"].dtype == numpy.uint8
    assert "rng" in f["tensors"] and "rank-0" in f["tensors/rng"], list(f["tensors"])
    assert set(f["tensors/rng/rank-0"]) >= {"python", "numpy", "torch"}, list(f["tensors/rng/rank-0"])
print("h5py reads the weights by their state-dict names")

# Change everything, then load: every object comes back as saved, in place, and the RNGs too.
random.seed(99); numpy.random.seed(99); torch.manual_seed(99)
with torch.no_grad():
    for parameter in model.parameters():
        parameter.add_(1.0)
model[1].running_mean.fill_(3.0)
for _ in range(3):
    optimizer.step()
    scheduler.step()
extra = {"stale": 1, "floats": [0.0]}
objects = {"model": model, "optimizer": optimizer, "scheduler": scheduler, "scaler": scaler, "extra": extra}
parameter_before = model[0].weight
with dlx.Trial() as trial:
    # Record where the loaded file's tensors lie in the library's memory: nothing restored may
    # point into it, since it is freed when load_state returns. The tensors the load placed
    # (read into new tensors of load_state's own: the optimizer's moments) are not in it.
    loaded_ranges, placed_names = [], []
    load = trial.load

    def recording_load(*args, **kwargs):
        loaded = load(*args, **kwargs)
        place = kwargs.get("place")
        own = set(place.tensors) if place is not None else set()
        loaded_ranges.extend((t.address, t.address + t.nbytes) for t in loaded.tensors()
                             if t.nbytes and t.address not in own)
        placed_names[:] = [t.name for t in loaded.tensors() if t.nbytes and t.address in own]
        return loaded
    trial.load = recording_load
    os.environ["DLX_TORCH_CUDA_IO"] = "pinned"
    expect_error("a bad DLX_TORCH_CUDA_IO at load", lambda: dlx.torch.load_state(trial, objects),
                 "DLX_TORCH_CUDA_IO is 'pinned'")
    assert model[1].running_mean.eq(3.0).all()  # nothing restored
    loaded_ranges.clear()
    # The mode changes nothing for a CPU model: read straight into its own tensors.
    os.environ["DLX_TORCH_CUDA_IO"] = "torch"
    step = dlx.torch.load_state(trial, objects)
    del os.environ["DLX_TORCH_CUDA_IO"]
    del trial.load
    assert step == 10, step
    assert loaded_ranges, "load_state did not go through trial.load"

    def tensors_in(value):
        if isinstance(value, torch.Tensor):
            yield value
        elif isinstance(value, dict):
            for item in value.values():
                yield from tensors_in(item)
        elif isinstance(value, (list, tuple)):
            for item in value:
                yield from tensors_in(item)
    restored = [optimizer.state_dict(), scheduler.state_dict(), scaler.state_dict(), extra,
                model.state_dict()]
    aliased = [tuple(t.shape) for t in tensors_in(restored) if t.numel() and
               any(low <= t.data_ptr() < high for low, high in loaded_ranges)]
    assert not aliased, f"restored tensors still point into the loaded file's memory: {aliased}"
    # Adam's moments were placed (every exp_avg and exp_avg_sq, no step), and kept as read.
    assert placed_names and all(name.startswith("optimizer/state/") and
                                name.rsplit("/", 1)[1] in ("exp_avg", "exp_avg_sq")
                                for name in placed_names), placed_names
    assert len(placed_names) == 2 * len(optimizer.state), placed_names
    assert model[0].weight is parameter_before  # in place
    same(dict(model.state_dict()), dict(saved_model), "model")
    state = optimizer.state_dict()
    same({k: dict(v) for k, v in state["state"].items()}, saved_optimizer["state"], "optimizer.state")
    same(state["param_groups"], saved_optimizer["param_groups"], "optimizer.param_groups")
    same(dict(scheduler.state_dict()), saved_scheduler, "scheduler")
    same(extra, expected, "extra")
    assert random.getstate() == python_state
    restored_numpy = numpy.random.get_state()
    assert numpy.array_equal(restored_numpy[1], numpy_state[1]) and restored_numpy[2:] == numpy_state[2:]
    assert torch.equal(torch.get_rng_state(), torch_state)
    print("round trip: every dtype, 0-d, empty, views, nested containers, keys, floats: equal")

    # PyTorch 2.x's Optimizer.load_state_dict copies the state dict shallowly and keeps 'step' and
    # the CPU tensors of a parameter's dtype as it is given them (the GPU check found resumed
    # Adam steps read from freed memory). Played here, with Debian's 1.13, by a stand-in that keeps
    # every tensor: load_state must give the optimizer copies of whatever it kept.
    deep_load_state_dict = torch.optim.Optimizer.load_state_dict

    def shallow_load_state_dict(self, state_dict):
        params = [p for group in self.param_groups for p in group["params"]]
        self.state.clear()
        for index, entry in state_dict["state"].items():
            self.state[params[int(index)]] = dict(entry)
        for group, saved_group in zip(self.param_groups, state_dict["param_groups"]):
            group.update({k: v for k, v in saved_group.items() if k != "params"})
    torch.optim.Optimizer.load_state_dict = shallow_load_state_dict
    try:
        loaded_ranges.clear()
        trial.load = recording_load
        assert dlx.torch.load_state(trial, objects) == 10
        del trial.load
        kept = [tuple(t.shape) for t in tensors_in(optimizer.state_dict()) if t.numel() and
                any(low <= t.data_ptr() < high for low, high in loaded_ranges)]
        assert not kept, f"a shallow load_state_dict kept the loaded file's memory: {kept}"
        state = optimizer.state_dict()
        same({k: dict(v) for k, v in state["state"].items()}, saved_optimizer["state"], "optimizer.state")
    finally:
        torch.optim.Optimizer.load_state_dict = deep_load_state_dict
    print("an optimizer that keeps the tensors it loads gets copies")

    # load_state with objects the checkpoint does not hold, and the reverse: say which.
    print("mismatches:")
    expect_error("an object missing from the checkpoint", lambda: dlx.torch.load_state(trial, {**objects, "ema": {"w": torch.zeros(1)}}),
                 "has no 'ema'", "Nothing was restored")
    partial = {k: v for k, v in objects.items() if k != "scaler"}
    expect_error("the checkpoint holds more", lambda: dlx.torch.load_state(trial, partial),
                 "also holds 'scaler'", "pass it")
    expect_error("a different model", lambda: dlx.torch.load_state(
        trial, {**objects, "model": torch.nn.Sequential(torch.nn.Linear(6, 9))}), "objects['model']", "shapes differ", "nothing was restored")
    trial.finish()
print("dlx.torch state: ok")
