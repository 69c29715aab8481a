# SPDX-License-Identifier: Apache-2.0
"""dlx.torch's background snapshot (python/dlx/torch/_fence.py), with Debian's PyTorch on the
CPU: save_state leaves the optimizers' tensors (parameters, moments) to the library's writer
thread and returns; the optimizer's next step waits for that copy first, so the file holds the
state of the save, bit for bit. An in-place change made while the copy ran withdraws that
checkpoint with a warning naming the tensor; one made after it (or after wait_for_checkpoint)
changes nothing. DLX_TORCH_SNAPSHOT=before_return copies everything before returning; a bad value
is refused. The C API refuses an unknown flag. Closing the trial with a copy in flight is safe.
Needs DLX_LIBRARY (the built libdlx_c.so) and PYTHONPATH (python/)."""
import atexit
import ctypes
import math
import os
import shutil
import tempfile
import types
import warnings

import h5py
import torch

directory = tempfile.mkdtemp(prefix="dlx-torch-fence-")
atexit.register(shutil.rmtree, directory, ignore_errors=True)
checkpoints = os.path.join(directory, "trials", "5", "checkpoints")
os.environ.update({
    "DLX_EXPERIMENT_DIR": directory, "DLX_TRIAL_ID": "5", "DLX_HPARAMS": "{}",
    "DLX_CHECKPOINT_DIR": checkpoints, "DLX_LATEST_CHECKPOINT": "", "RANK": "0", "WORLD_SIZE": "1",
})
os.environ.pop("DLX_TORCH_SNAPSHOT", None)

import dlx
import dlx.torch
from dlx._library import NamedTensor, library
from dlx.torch import _fence

torch.manual_seed(5)
trial = dlx.Trial()


def stored(step):
    """Every tensor of step-<step>.h5, by its path below /tensors."""
    out = {}
    with h5py.File(os.path.join(checkpoints, f"step-{step}.h5"), "r") as f:
        f["tensors"].visititems(lambda name, node: out.__setitem__(name, torch.from_numpy(
            node[()]).clone()) if isinstance(node, h5py.Dataset) else None)
    return out


def expected_of(model, optimizer):
    """What a checkpoint of (model, optimizer) must hold now, by stored path."""
    out = {f"model/{name}": value.clone() for name, value in model.state_dict().items()}
    for index, state in optimizer.state_dict()["state"].items():
        for key, value in state.items():
            if isinstance(value, torch.Tensor):
                out[f"optimizer/state/{index}/{key}"] = value.clone()
    return out


def check_file(step, expected, what):
    held = stored(step)
    for path, value in expected.items():
        assert path in held, f"{what}: {path} missing from step-{step}.h5"
        assert torch.equal(held[path], value), f"{what}: {path} differs from the saved state"


def grads_and_step(model, optimizer, value=1.0):
    for parameter in model.parameters():
        parameter.grad = torch.full_like(parameter, value)
    optimizer.step()


def dlx_warnings(caught):
    return [str(w.message) for w in caught if "dlx.torch" in str(w.message)]


# 1. Overlap, bit for bit, with an LR scheduler made before the first save (PyTorch 1.x wraps
#    optimizer.step for it; dlx's wrapper must keep its mark) and one made after.
model = torch.nn.Linear(1024, 2048)  # 8 MiB of weight
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
grads_and_step(model, optimizer)  # the momentum buffers exist
objects = {"model": model, "optimizer": optimizer, "scheduler": scheduler}
expected = expected_of(model, optimizer)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    dlx.torch.save_state(trial, 1, objects)
    watched = [path for path, _, _ in _fence.FENCE._watched]
    assert _fence.FENCE._watcher is not None, "save_state left nothing to the background"
    assert sorted(watched) == sorted(["model/weight", "model/bias", "optimizer/state/0/momentum_buffer",
                                      "optimizer/state/1/momentum_buffer"]), watched
    grads_and_step(model, optimizer, 3.0)  # waits for the copy, then changes every tensor
    assert _fence.FENCE._watcher is None, "the optimizer's step did not close the fence"
    scheduler.step()
    later = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)  # wraps dlx's step
    # PyTorch 1.x counts the optimizer's steps for its schedulers (_step_count); 2.x marks that
    # the optimizer stepped (_opt_called, which a scheduler's step() checks and clears).
    counted = getattr(optimizer, "_step_count", None)
    if counted is None:
        optimizer._opt_called = False
    grads_and_step(model, optimizer)
    later.step()
assert not dlx_warnings(caught), dlx_warnings(caught)
assert not [w for w in caught if "overridden" in str(w.message)], \
    [str(w.message) for w in caught]
if not hasattr(optimizer, "register_step_pre_hook"):  # PyTorch 1.x: the wrapper
    assert isinstance(optimizer.step, types.MethodType) and optimizer.step._with_counter
if counted is not None:
    assert optimizer._step_count == counted + 1, (counted, optimizer._step_count)  # still counted
else:
    assert optimizer._opt_called, "the scheduler did not see the optimizer's step"
assert not [w for w in caught if "before `optimizer.step()`" in str(w.message)], \
    [str(w.message) for w in caught]
assert trial.wait_for_checkpoint(timeout=60)
check_file(1, expected, "the first save")
print(f"background: {len(watched)} tensors copied while training went on; the next step waited, "
      f"step-1.h5 holds the saved state bit for bit; the schedulers still count steps")

# 2. A change after the copy (here after wait_for_checkpoint, which closes the fence): nothing
#    withdrawn, the file holds the state of the save.
expected = expected_of(model, optimizer)
dlx.torch.save_state(trial, 2, objects)
assert trial.wait_for_checkpoint(timeout=60)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with torch.no_grad():
        model.weight.add_(1.0)  # a test scrambling the model, say
    grads_and_step(model, optimizer)
assert not dlx_warnings(caught), dlx_warnings(caught)
check_file(2, expected, "a change after the copy")
print("a change after the copy: step-2.h5 kept, as saved")

# 3. A change while the copy runs: 512 MiB of parameters and moments take tens of milliseconds
#    to copy; the bias changes microseconds after save_state returns. The fence withdraws step 3
#    at the next step, with a warning naming the tensor; step 2 stays; the next save is normal.
big = torch.nn.Linear(8192, 8192, bias=True)
big_optimizer = torch.optim.SGD(big.parameters(), lr=0.1, momentum=0.9)
grads_and_step(big, big_optimizer)
big_objects = {"model": big, "optimizer": big_optimizer}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    dlx.torch.save_state(trial, 3, big_objects)
    with torch.no_grad():
        big.bias.add_(1.0)
    grads_and_step(big, big_optimizer)
said = dlx_warnings(caught)
assert len(said) == 1, said
for needle in ("model/bias changed in place after save_state(step=3) while the library was still "
               "copying it", "it is withdrawn (deleted)", "dlx.torch.wait_for_snapshot()",
               "DLX_TORCH_SNAPSHOT=before_return"):
    assert needle in said[0], f"expected {needle!r} in: {said[0]}"
names = sorted(os.listdir(checkpoints))
assert "step-3.h5" not in names and "step-2.h5" in names, names
expected = expected_of(big, big_optimizer)
dlx.torch.save_state(trial, 4, big_objects)
assert trial.wait_for_checkpoint(timeout=120)
check_file(4, expected, "the save after a withdrawal")
del big, big_optimizer, big_objects
print(f"a change during the copy: withdrawn with a warning ({said[0][:90]}...); step 4 saved")

# 4. DLX_TORCH_SNAPSHOT=before_return: nothing left to the background; a change right after the
#    save does not reach the file. A bad value is refused, naming the variable and the choices.
os.environ["DLX_TORCH_SNAPSHOT"] = "before_return"
expected = expected_of(model, optimizer)
dlx.torch.save_state(trial, 5, objects)
assert _fence.FENCE._watcher is None
with torch.no_grad():
    model.bias.add_(1.0)
assert trial.wait_for_checkpoint(timeout=60)
check_file(5, expected, "before_return")
os.environ["DLX_TORCH_SNAPSHOT"] = "later"
try:
    dlx.torch.save_state(trial, 6, objects)
    raise AssertionError("DLX_TORCH_SNAPSHOT=later was accepted")
except dlx.Error as error:
    for needle in ("DLX_TORCH_SNAPSHOT is 'later'", "'background'", "'before_return'"):
        assert needle in str(error), f"expected {needle!r} in: {error}"
del os.environ["DLX_TORCH_SNAPSHOT"]
assert "step-6.h5" not in os.listdir(checkpoints)
print("before_return: copied before returning; a bad DLX_TORCH_SNAPSHOT refused")

# 5. The C API: a flag bit it does not define is refused, naming the tensor, and nothing saved.
values = torch.ones(4)
shape = (ctypes.c_uint64 * 1)(4)
table = (NamedTensor * 1)(NamedTensor(b"x", b"float32", values.data_ptr(), shape, 1))
flags = (ctypes.c_ubyte * 1)(4)
status = library().dlx_trial_save_checkpoint_flagged(trial._handle, 7, 0, table, flags, 1, None,
                                                     b"{}", math.nan)
message = library().dlx_last_error().decode()
assert status == 1, (status, message)  # DLX_ERROR_INVALID_ARGUMENT
for needle in ("tensor 0 ('x') has flags 0x4", "DLX_TENSOR_ON_DEVICE (1)",
               "DLX_TENSOR_SNAPSHOT_IN_BACKGROUND (2)"):
    assert needle in message, f"expected {needle!r} in: {message}"
assert "step-7.h5" not in os.listdir(checkpoints)
print(f"C API: an unknown flag refused ({message[:80]}...)")

# 6. Closing the trial while the library copies: close() waits for the watcher and the save.
expected = expected_of(model, optimizer)
dlx.torch.save_state(trial, 8, objects)
trial.close()
check_file(8, expected, "a close during the copy")
print("close during the copy: step-8.h5 complete")
