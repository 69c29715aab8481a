# SPDX-License-Identifier: Apache-2.0
"""dlx.torch's background snapshot at the searcher's target length (python/dlx/torch/__init__.py,
_searcher_names): the save there copies everything before it returns, since the searcher names
that checkpoint (ASHA promotes from it, PBT exploits it) before the snapshot fence could withdraw
it. Below the target the save stays in the background. With Debian's PyTorch on the CPU; needs
DLX_LIBRARY (the built libdlx_c.so) and PYTHONPATH (python/)."""
import atexit
import os
import shutil
import tempfile
import warnings

import h5py
import torch

directory = tempfile.mkdtemp(prefix="dlx-torch-target-")
atexit.register(shutil.rmtree, directory, ignore_errors=True)
checkpoints = os.path.join(directory, "trials", "2", "checkpoints")
os.environ.update({
    "DLX_EXPERIMENT_DIR": directory, "DLX_TRIAL_ID": "2", "DLX_HPARAMS": "{}",
    "DLX_CHECKPOINT_DIR": checkpoints, "DLX_LATEST_CHECKPOINT": "", "RANK": "0", "WORLD_SIZE": "1",
    "DLX_TARGET_LENGTH": "300", "DLX_LENGTH_UNIT": "batches", "DLX_SEARCHER_METRIC": "accuracy",
})
os.environ.pop("DLX_TORCH_SNAPSHOT", None)

import dlx
import dlx.torch
from dlx.torch import _fence

trial = dlx.Trial()
assert trial.target_length == 300, trial.target_length

model = torch.nn.Linear(4096, 4096)  # 64 MiB with its momentum: a copy that takes a while
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
for parameter in model.parameters():
    parameter.grad = torch.ones_like(parameter)
optimizer.step()
objects = {"model": model, "optimizer": optimizer}


def stored_weight(step):
    with h5py.File(os.path.join(checkpoints, f"step-{step}.h5"), "r") as f:
        return torch.from_numpy(f["tensors/model/weight"][()])


# Below the target: the optimizers' tensors are left to the library's thread.
dlx.torch.save_state(trial, 200, objects)
assert _fence.FENCE._watcher is not None, "a save below the target was not left to the background"
dlx.torch.wait_for_snapshot()
print("step 200 (target 300): copied in the background")

# At the target: copied before save_state returns; an in-place change right after (an EMA swap
# for validation, say) is neither in the file nor a reason to withdraw it.
saved = model.weight.detach().clone()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    dlx.torch.save_state(trial, 300, objects)
    assert _fence.FENCE._watcher is None, "the save at the target was left to the background"
    with torch.no_grad():
        model.weight.add_(1.0)
    for parameter in model.parameters():
        parameter.grad = torch.ones_like(parameter)
    optimizer.step()
    assert trial.wait_for_checkpoint(timeout=120)
said = [str(w.message) for w in caught if "dlx.torch" in str(w.message)]
assert not said, said
assert os.path.exists(os.path.join(checkpoints, "step-300.h5")), os.listdir(checkpoints)
assert torch.equal(stored_weight(300), saved), "step-300.h5 does not hold the state of the save"
print("step 300 (the target): copied before save_state returned; a change right after is not in "
      "the file, and the file the searcher names stays")

# Past it (the same target until the searcher answers): the same.
dlx.torch.save_state(trial, 301, objects)
assert _fence.FENCE._watcher is None
trial.close()
print("step 301: copied before returning too")
