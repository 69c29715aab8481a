# SPDX-License-Identifier: Apache-2.0
"""Checkpoints from Python through the dlx package (python/dlx/) and libdlx_c.so, as a PyTorch
program saves them (numpy arrays of its tensors): save named float32/float64/int tensors and small
state, resume the newest valid checkpoint in a new process-like Trial and get the same arrays back,
and read the file with h5py the way docs/checkpoint-format.md says. Bad input raises dlx.Error with
a message.
Needs DLX_LIBRARY and PYTHONPATH (python/)."""
import json
import os
import tempfile

import h5py
import numpy

with tempfile.TemporaryDirectory() as directory:
    checkpoints = os.path.join(directory, "trials", "5", "checkpoints")
    os.environ.update({
        "DLX_EXPERIMENT_DIR": directory,
        "DLX_TRIAL_ID": "5",
        "DLX_HPARAMS": json.dumps({"lr": 0.5}),
        "DLX_CHECKPOINT_DIR": checkpoints,
        "DLX_LATEST_CHECKPOINT": "",
        "RANK": "0", "WORLD_SIZE": "1",
    })
    import dlx

    rng = numpy.random.default_rng(3)
    arrays = {
        "model/fc1/weight": rng.standard_normal((3, 4)).astype(numpy.float32),
        "model/fc1/bias": rng.standard_normal(4),  # float64
        "model/half": rng.standard_normal((2, 3, 2)).astype(numpy.float16),
        "optimizer/step_count": numpy.array(17, dtype=numpy.int64),  # a scalar
        "optimizer/empty": numpy.zeros((0, 5), dtype=numpy.float32),
        "rng/torch": rng.integers(0, 255, size=40, dtype=numpy.uint8),
        "data/order": numpy.arange(10, dtype=numpy.int32)[::-1],  # not contiguous: copied
    }
    state = {"lr": 0.25, "note": "warm-up done", "data_cursor": 7, "use_amp": True}

    with dlx.Trial() as trial:
        assert trial.resume() is None  # a fresh start
        trial.save_checkpoint(10, {"model/fc1/weight": numpy.zeros((3, 4), numpy.float32)})
        trial.save_checkpoint(20, arrays, state=state, epoch=2, metric=0.125)
        assert trial.wait_for_checkpoint(timeout=60)
        # Errors name what is wrong and how to fix it.
        for bad, expected in [({"x": numpy.zeros(2, dtype=numpy.complex64)}, "complex64"),
                              ({"x": numpy.array(["a"])}, "which a checkpoint cannot hold")]:
            try:
                trial.save_checkpoint(30, bad)
                raise AssertionError(f"saving {bad} must raise")
            except dlx.Error as error:
                assert expected in str(error), error
        try:
            trial.save_checkpoint(30, {}, state={"nested": [1, 2]})
            raise AssertionError("a list in the state must raise")
        except dlx.Error as error:
            assert "'nested' is array" in str(error) and "save arrays as tensors" in str(error), error
        trial.finish()

    path = os.path.join(checkpoints, "step-20.h5")
    assert os.path.exists(path), os.listdir(checkpoints)

    # Resume in a new Trial (a requeued run): the newest valid checkpoint, every byte verified.
    with dlx.Trial() as trial:
        resumed = trial.resume()
        assert resumed is not None and resumed.step == 20 and resumed.epoch == 2, resumed
        assert resumed.path == path, resumed.path
        assert resumed.state == {"data_cursor": 7, "lr": 0.25, "note": "warm-up done", "use_amp": 1}, resumed.state
        assert sorted(resumed.tensors) == sorted(arrays), sorted(resumed.tensors)
        for name, array in arrays.items():
            got = resumed.tensors[name]
            assert got.dtype == array.dtype and got.shape == array.shape, (name, got.dtype, got.shape)
            assert numpy.array_equal(got, array), name
        resumed.tensors["model/fc1/bias"][0] = 1.0  # a writable copy owned by Python
        trial.finish()

    # h5py reads the file without dlx (the snippet of docs/checkpoint-format.md, in substance).
    with h5py.File(path, "r") as f:
        assert f.attrs["kind"] == b"dlx checkpoint" and f.attrs["format_version"] == 1
        assert int(f.attrs["step"]) == 20 and int(f.attrs["trial_id"]) == 5
        assert f.attrs["metric_value"] == 0.125
        assert f["state"].attrs["data_cursor"] == 7
        tensors = {}
        f["tensors"].visititems(
            lambda name, obj: tensors.update({name: obj[()]}) if isinstance(obj, h5py.Dataset) else None)
        assert sorted(tensors) == sorted(arrays), sorted(tensors)
        for name, array in arrays.items():
            assert numpy.array_equal(tensors[name], array), name
            assert tensors[name].dtype == array.dtype, (name, tensors[name].dtype)

    # dlx_trial_save_checkpoint_device (what save_views calls for GPU tensors) with no tensor
    # flagged as device memory, and with on_device NULL: the same file as the host call.
    import ctypes
    from dlx._library import NamedTensor, check, library
    weights = numpy.arange(12, dtype=numpy.float32).reshape(3, 4)
    shape = (ctypes.c_uint64 * 2)(3, 4)
    table = (NamedTensor * 1)(NamedTensor(b"model/w", b"float32", weights.ctypes.data, shape, 2))
    with dlx.Trial() as trial:
        flags = (ctypes.c_ubyte * 1)(0)
        check(library().dlx_trial_save_checkpoint_device(trial._handle, 40, 4, table, flags, 1,
                                                         None, b"{}", float("nan")))
        check(library().dlx_trial_save_checkpoint_device(trial._handle, 41, 4, table, None, 1,
                                                         None, b"{}", float("nan")))
        assert trial.wait_for_checkpoint(timeout=60)
        trial.finish()
    for step in (40, 41):
        with h5py.File(os.path.join(checkpoints, f"step-{step}.h5"), "r") as f:
            assert int(f.attrs["step"]) == step and int(f.attrs["epoch"]) == 4
            assert numpy.array_equal(f["tensors/model/w"][()], weights), step
print("python checkpoint: ok")
