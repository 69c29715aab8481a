# SPDX-License-Identifier: Apache-2.0
"""dlx.torch.load_state reads a model's tensors straight into the model (issue 34): the library
verifies the whole file first and holds none of the model's bytes; each parameter and buffer
that can take the stored bytes as they are (CPU, contiguous, same dtype and shape: bool and
complex too) is read into its own memory; others (a non-contiguous buffer, a module's extra
state) into new tensors that load_state_dict copies. An optimizer's moments are read straight
into the tensors the optimizer keeps (cast as its load_state_dict casts them), not deep-copied
by it; an optimizer with its own load_state_dict gets them through the library as before. What
must hold besides equal values: a damaged file is still refused before anything changes (resume
falls back to an older one), and a file changed between the verification and the read is
reported, naming the object.
Needs DLX_LIBRARY (the built libdlx_c.so) and PYTHONPATH (python/)."""
import atexit
import os
import shutil
import tempfile

import h5py
import torch

directory = tempfile.mkdtemp(prefix="dlx-torch-in-place-")
atexit.register(shutil.rmtree, directory, ignore_errors=True)
checkpoints = os.path.join(directory, "trials", "4", "checkpoints")
os.environ.update({
    "DLX_EXPERIMENT_DIR": directory, "DLX_TRIAL_ID": "4", "DLX_HPARAMS": "{}",
    "DLX_CHECKPOINT_DIR": checkpoints, "DLX_LATEST_CHECKPOINT": "", "RANK": "0", "WORLD_SIZE": "1",
})

import dlx  # noqa: E402
import dlx.torch  # noqa: E402
from dlx.trial import LoadedCheckpoint  # noqa: E402


class Odd(torch.nn.Module):
    """Parameters and buffers of every kind the in-place read must handle."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(64, 32)
        self.register_buffer("mask", torch.rand(7) > 0.5)                           # bool
        self.register_buffer("phase", torch.randn(3, dtype=torch.complex64))        # complex
        self.register_buffer("brain", torch.randn(5).to(torch.bfloat16))
        self.register_buffer("transposed", torch.randn(4, 3).t())                   # not contiguous
        self.register_buffer("empty", torch.empty(0, 2))
        self.table = {"rows": torch.arange(6.0).reshape(2, 3), "name": "t"}         # extra state

    def get_extra_state(self):
        return self.table

    def set_extra_state(self, state):
        self.table = state


def state_of(module):
    return {key: value.clone() for key, value in module.state_dict().items()
            if isinstance(value, torch.Tensor)}


def scramble(module):
    with torch.no_grad():
        for value in module.state_dict().values():
            if isinstance(value, torch.Tensor) and value.numel():
                value.copy_(torch.zeros_like(value) if value.dtype == torch.bool else value + 3)
    module.table = {"rows": torch.zeros(1), "name": "stale"}


def equal(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


def flip_byte(path, name, at=3):
    with h5py.File(path, "r") as f:
        offset = f[f"tensors/{name}"].id.get_offset()
    with open(path, "r+b") as f:
        f.seek(offset + at)
        byte = f.read(1)
        f.seek(offset + at)
        f.write(bytes([byte[0] ^ 0x10]))


torch.manual_seed(3)
model = Odd()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
model.lin(torch.randn(8, 64)).square().mean().backward()
optimizer.step()
objects = {"model": model, "optimizer": optimizer}


def moments_of(optimizer):
    """{parameter index: {key: tensor}} of the optimizer's state, copied."""
    state = optimizer.state_dict()["state"]
    return {index: {key: value.clone() for key, value in entry.items()}
            for index, entry in state.items()}


with dlx.Trial() as trial:
    assert dlx.torch.load_state(trial, objects) is None
    dlx.torch.save_state(trial, 10, objects)
    assert trial.wait_for_checkpoint(timeout=60)
    saved, saved_table = state_of(model), {"rows": model.table["rows"].clone(), "name": "t"}
    saved_moments = moments_of(optimizer)
    trial.finish()

# Every read the library does for load_state, and where each went; batches: the tensors of each
# read_many call (a model's tensors are read in one, on several threads).
reads, batches = [], []
real_read_into, real_read_many = LoadedCheckpoint.read_into, LoadedCheckpoint.read_many


def recording_read_into(self, stored, address, nbytes):
    reads.append((stored.name, address))
    return real_read_into(self, stored, address, nbytes)


def recording_read_many(self, many):
    reads.extend((stored.name, address) for stored, address, _ in many)
    batches.append([stored.name for stored, _, _ in many])
    return real_read_many(self, many)


LoadedCheckpoint.read_into = recording_read_into
LoadedCheckpoint.read_many = recording_read_many

scramble(model)
with torch.no_grad():
    for entry in optimizer.state.values():
        entry["momentum_buffer"].fill_(5.0)
own = {key: value.data_ptr() for key, value in model.state_dict().items()
       if isinstance(value, torch.Tensor)}
weight_before = model.lin.weight
with dlx.Trial() as trial:
    loads, addresses, places = [], [], []
    real_load = trial.load

    def recording_load(*args, **kwargs):
        loaded = real_load(*args, **kwargs)
        loads.append({t.name: t.deferred for t in loaded.tensors()})
        addresses.append({t.name: t.address for t in loaded.tensors()})
        places.append(kwargs.get("place"))
        return loaded
    def load_recorded(objects):
        """load_state's step, each load's tensors recorded in loads, addresses and places."""
        for record in (loads, addresses, places):
            record.clear()
        trial.load = recording_load
        try:
            return dlx.torch.load_state(trial, objects)
        finally:
            del trial.load

    def none_deferred(prefix):
        return not any(deferred for name, deferred in loads[0].items() if name.startswith(prefix))

    batches.clear()
    assert load_recorded(objects) == 10
    deferred = loads[0]
    assert all(deferred[name] for name in deferred if name.startswith("model/")), deferred
    assert not any(deferred[name] for name in deferred if not name.startswith("model/")), deferred
    read_to = dict(reads)
    # The model's deferred tensors, all of them, in one call to the library.
    assert [sorted(batch) for batch in batches] == [sorted(name for name in deferred if deferred[name])], batches
    # In place: every parameter and buffer that takes the bytes as stored.
    for key in ("lin.weight", "lin.bias", "mask", "phase", "brain"):
        assert read_to[f"model/{key}"] == own[key], (key, read_to.get(f"model/{key}"), own[key])
    # Not in place: the non-contiguous buffer and the extra state get new memory first.
    assert read_to["model/transposed"] != own["transposed"]
    assert "model/_extra_state/rows" in read_to, sorted(read_to)
    assert model.lin.weight is weight_before and model.lin.weight.data_ptr() == own["lin.weight"]
    for key, value in saved.items():
        assert equal(model.state_dict()[key], value), key
    assert not model.state_dict()["transposed"].is_contiguous()  # still the module's own view
    assert equal(model.table["rows"], saved_table["rows"]) and model.table["name"] == "t"
    print("in place: lin.weight, lin.bias, mask (bool), phase (complex), brain (bfloat16); "
          "copied: transposed (a view), the extra state; all equal")

    # The optimizer keeps the very tensors the library read its moments into while it verified
    # the file (placed, not deferred: read once, never again by read_into): load_state_dict got
    # empty stand-ins for them (it deep-copies what it is given) and they were put in after.
    params = [param for group in optimizer.param_groups for param in group["params"]]
    assert not any(name.startswith("optimizer/") for name in read_to), sorted(read_to)
    for index, param in enumerate(params):
        buffer = optimizer.state[param]["momentum_buffer"]
        assert addresses[0][f"optimizer/state/{index}/momentum_buffer"] == buffer.data_ptr(), index
        assert buffer.shape == param.shape and buffer.dtype == param.dtype
    assert moments_of(optimizer).keys() == saved_moments.keys()
    for index, entry in moments_of(optimizer).items():
        assert equal(entry["momentum_buffer"], saved_moments[index]["momentum_buffer"]), index
    assert optimizer.param_groups[0]["lr"] == 0.1 and optimizer.param_groups[0]["momentum"] == 0.9
    print("optimizer: each momentum buffer read into the tensor the optimizer keeps; equal")

    # Parameters of another dtype now: load_state_dict casts the moments to it, and so does the
    # read (into a new tensor of the stored dtype, then cast), as PyTorch would.
    wide = Odd().double()
    wide_optimizer = torch.optim.SGD(wide.parameters(), lr=0.5, momentum=0.5)
    assert dlx.torch.load_state(trial, {"model": wide, "optimizer": wide_optimizer}) == 10
    wide_params = [param for group in wide_optimizer.param_groups for param in group["params"]]
    for index, param in enumerate(wide_params):
        buffer = wide_optimizer.state[param]["momentum_buffer"]
        assert buffer.dtype == torch.float64, (index, buffer.dtype)
        assert equal(buffer, saved_moments[index]["momentum_buffer"].double()), index
    assert wide_optimizer.param_groups[0]["lr"] == 0.1
    print("optimizer of float64 parameters: moments cast to float64, equal")

    # An optimizer with its own load_state_dict (a sharded or wrapping one may keep what it is
    # given) is not read in place: its tensors come through the library, and it deep-copies them.
    class Custom(torch.optim.SGD):
        def load_state_dict(self, state_dict):
            self.seen = state_dict
            super().load_state_dict(state_dict)
    custom = Custom(model.parameters(), lr=0.3, momentum=0.1)
    assert load_recorded({"model": model, "optimizer": custom}) == 10
    assert none_deferred("optimizer/"), loads[0]
    assert all(value["momentum_buffer"].numel() for value in custom.seen["state"].values())
    for index, entry in moments_of(custom).items():
        assert equal(entry["momentum_buffer"], saved_moments[index]["momentum_buffer"]), index
    print("an optimizer with its own load_state_dict: given the whole state, through the library")

    # A model not wholly on the CPU (a CUDA model's case; played here by a buffer on the meta
    # device) gains nothing from a second read: its tensors come through the library's memory.
    elsewhere = Odd()
    elsewhere.register_buffer("mask", torch.empty(7, dtype=torch.bool, device="meta"))
    assert load_recorded({"model": elsewhere, "optimizer": optimizer}) == 10
    assert none_deferred("model/"), loads[0]
    assert equal(elsewhere.lin.weight.detach(), saved["lin.weight"])
    print("a model with a tensor off the CPU: nothing deferred, restored through the library")

    # A newer checkpoint whose model tensor is damaged: verified before anything changes, so
    # load_state falls back to step 10 and the model ends as saved there.
    dlx.torch.save_state(trial, 20, objects)
    assert trial.wait_for_checkpoint(timeout=60)
    flip_byte(os.path.join(checkpoints, "step-20.h5"), "model/lin.weight")
    scramble(model)
    reads.clear()
    assert dlx.torch.load_state(trial, objects) == 10
    for key, value in saved.items():
        assert equal(model.state_dict()[key], value), key
    print("a damaged newer file: skipped at verification, step 10 restored")

    # A newer checkpoint whose optimizer tensor is damaged: the library read it into placed
    # memory, found the damage and fell back; the older file's moments are placed anew, and the
    # optimizer holds those (its own state until then untouched by the refused file).
    with torch.no_grad():
        for entry in optimizer.state.values():
            entry["momentum_buffer"].fill_(7.0)
    dlx.torch.save_state(trial, 25, objects)
    assert trial.wait_for_checkpoint(timeout=60)
    flip_byte(os.path.join(checkpoints, "step-25.h5"), "optimizer/state/1/momentum_buffer")
    assert load_recorded(objects) == 10
    for index, entry in moments_of(optimizer).items():
        assert equal(entry["momentum_buffer"], saved_moments[index]["momentum_buffer"]), index
    for index, param in enumerate(params):
        assert addresses[0][f"optimizer/state/{index}/momentum_buffer"] == \
            optimizer.state[param]["momentum_buffer"].data_ptr(), index
    # The refused file's placed tensors were dropped as the older file's were placed.
    assert len(places[-1].tensors) == len(params), len(places[-1].tensors)
    os.remove(os.path.join(checkpoints, "step-25.h5"))
    print("a newer file with a damaged moment: skipped at verification, step 10's moments held")

    # Only a damaged file: nothing is read into the model, which keeps its own values.
    os.remove(os.path.join(checkpoints, "step-10.h5"))
    scramble(model)
    scrambled = state_of(model)
    reads.clear()
    assert dlx.torch.load_state(trial, objects) is None  # a fresh start: no valid checkpoint
    assert not reads
    for key, value in scrambled.items():
        assert equal(model.state_dict()[key], value), key
    print("only a damaged file: a fresh start, the model untouched")

    # The file changes after the library verified it (another process wrote into it in place):
    # the second read's checksums catch it, and the message says what state the model is in.
    os.remove(os.path.join(checkpoints, "step-20.h5"))
    dlx.torch.save_state(trial, 30, objects)
    assert trial.wait_for_checkpoint(timeout=60)
    real_load = trial.load

    for damaged, name in (("model/lin.bias", "model"),):
        def load_then_damage(*args, **kwargs):
            loaded = real_load(*args, **kwargs)
            flip_byte(loaded.path, damaged, at=1)
            return loaded
        trial.load = load_then_damage
        try:
            dlx.torch.load_state(trial, objects)
        except dlx.ConfigError as error:
            text = str(error)
            for needle in (f"step-30.h5 could not be read into objects['{name}'] after it was "
                           f"verified", f"checksum mismatch in tensor '{damaged}'",
                           "may hold part of the checkpoint now: call load_state again"):
                assert needle in text, f"expected {needle!r} in: {text}"
            print(f"  refused (changed after verification): {text[:160]}")
        else:
            raise AssertionError(f"a file changed after verification ({damaged}) was read "
                                 f"without an error")
        del trial.load
        flip_byte(os.path.join(checkpoints, "step-30.h5"), damaged, at=1)  # as it was

    # Trial.load's `place` itself (dlx_trial_resume_placing): the tensor it gives memory for is
    # read there, verified, and listed at that address; 0 and an exception in `place` both mean
    # the library's memory; deferred names are never offered.
    with trial.load(any_world_size=True) as plain:
        expected = {t.name: plain.bytes_of(t) for t in plain.tensors()}

    # read_many (dlx_checkpoint_read_tensors): held and deferred tensors in one call, each into
    # its own memory, the file's bytes; a wrong size is refused before anything is copied.
    with trial.load(any_world_size=True, defer=["model/"]) as mixed:
        every = list(mixed.tensors())
        assert any(t.deferred for t in every) and not all(t.deferred for t in every)
        memory = {t.name: torch.full((t.nbytes,), 7, dtype=torch.uint8) for t in every}
        real_read_many(mixed, [(t, memory[t.name].data_ptr(), t.nbytes) for t in every])
        for t in every:
            assert bytes(memory[t.name].numpy()) == expected[t.name], t.name
        first, big = every[0], max(every, key=lambda t: t.nbytes)
        memory[first.name].fill_(7)
        try:
            real_read_many(mixed, [(first, memory[first.name].data_ptr(), first.nbytes),
                                   (big, memory[big.name].data_ptr(), big.nbytes - 1)])
        except dlx.Error as error:
            needle = f"tensor '{big.name}' is {big.nbytes} bytes; destinations[1] is given {big.nbytes - 1}"
            assert needle in str(error), f"expected {needle!r} in: {error}"
        else:
            raise AssertionError("read_many took a destination of the wrong size")
        assert bool((memory[first.name] == 7).all()), "read before every size was checked"
        real_read_many(mixed, [])
    print(f"read_many: {len(every)} tensors (deferred and held) in one call, the file's bytes; "
          f"a wrong size refused before anything was read")
    mine = {}
    offered = []

    def place(name, dtype, shape, nbytes):
        offered.append((name, dtype, shape, nbytes))
        if name == "model/lin.weight":
            mine[name] = torch.empty(nbytes, dtype=torch.uint8)
            return mine[name].data_ptr()
        if name == "model/lin.bias":
            raise RuntimeError("a placement that fails")
        return 0
    with trial.load(any_world_size=True, defer=["optimizer/"], place=place) as placed:
        by_name = {t.name: t for t in placed.tensors()}
        assert by_name["model/lin.weight"].address == mine["model/lin.weight"].data_ptr()
        assert by_name["model/lin.bias"].address not in (0, mine["model/lin.weight"].data_ptr())
        for name, data in expected.items():
            assert placed.bytes_of(by_name[name]) == data, name
    assert ("model/lin.weight", "float32", (32, 64), 32 * 64 * 4) in offered, offered
    assert not any(name.startswith("optimizer/") for name, *_ in offered), offered
    assert bytes(mine["model/lin.weight"].numpy()) == expected["model/lin.weight"]
    print("Trial.load(place=...): read into the memory given, 0 and an exception mean the "
          "library's, deferred names not offered")

    # place_on_device (dlx_trial_resume_placing_on_device) is asked first, for every name not
    # deferred; a tensor it gives device memory for is copied
    # there (the GPU check shows it: tests/gpu/torch_cuda_check.py). Where no GPU can take it
    # (this machine), the load fails saying so; it does not fall back to an older file.
    device_offered = []

    def place_on_device(name, dtype, shape, nbytes):
        device_offered.append(name)
        return 0x1000 if name == "model/lin.weight" else 0
    with trial.load(any_world_size=True, place=place, place_on_device=lambda *a: 0) as neither:
        assert not any(t.on_device for t in neither.tensors())
    try:
        trial.load(any_world_size=True, defer=["optimizer/"], place_on_device=place_on_device)
    except dlx.Error as error:
        assert "load into device memory: " in str(error), error
        print(f"  refused without a GPU: {str(error)[:120]}")
    else:
        raise AssertionError("a load into device memory succeeded on a machine without a GPU")
    assert device_offered.count("model/lin.weight") == 1, device_offered  # no older file tried
    assert not any(name.startswith("optimizer/") for name in device_offered), device_offered
    print("Trial.load(place_on_device=...): asked for each name not deferred; without a GPU, "
          "refused once, no fallback")
    trial.finish()

LoadedCheckpoint.read_into, LoadedCheckpoint.read_many = real_read_into, real_read_many
print("dlx.torch load in place: ok")
