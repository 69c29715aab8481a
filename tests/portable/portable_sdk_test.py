# SPDX-License-Identifier: Apache-2.0
"""The dlx package over a libdlx_c, as a trainer in a container image uses it (docs/containers.md,
"The SDK in any image"): import dlx, a trial that reports metrics and saves a checkpoint of several
dtypes, then a second trial (a requeued run) that resumes it bit for bit. Needs only Python 3.9+
and numpy, so that scripts/portable-c.sh runs it with the portable libdlx_c inside a root of an
older distribution (Debian bullseye: glibc 2.31, Python 3.9) as an unprivileged user; CI runs it
with the build's own libdlx_c on the host.

    portable_sdk_test.py run DIR        the trials, in DIR (the experiment directory)
    portable_sdk_test.py read-back DIR  h5py reads what `run` wrote (on the host: the root has no
                                        h5py), as docs/file-format.md says a reader may
    portable_sdk_test.py                both, in a temporary directory

DLX_LIBRARY names the library; DLX_EXPECT_PORTABLE=1 also checks what the portable one alone does:
it loads with no MPI and no libslurm in the process and refuses a communicator with a message that
says why and what to do, instead of calling through a null pointer."""
from __future__ import annotations

import ctypes
import json
import os
import sys

TRIAL_ID = 3
STEPS = (10, 20)


def arrays() -> dict:
    import numpy
    rng = numpy.random.default_rng(11)
    return {
        "model/conv/weight": rng.standard_normal((4, 3, 3, 3)).astype(numpy.float32),
        "model/conv/bias": rng.standard_normal(4),  # float64
        "model/half": rng.standard_normal((2, 5)).astype(numpy.float16),
        "optimizer/step": numpy.array(STEPS[-1], dtype=numpy.int64),
        "rng/state": rng.integers(0, 255, size=33, dtype=numpy.uint8),
    }


def run(directory: str) -> None:
    import numpy
    os.environ.update({
        "DLX_EXPERIMENT_DIR": directory,
        "DLX_TRIAL_ID": str(TRIAL_ID),
        "DLX_HPARAMS": json.dumps({"lr": 0.05, "layers": 2}),
        "DLX_CHECKPOINT_DIR": os.path.join(directory, "trials", str(TRIAL_ID), "checkpoints"),
        "DLX_LATEST_CHECKPOINT": "",
        "RANK": "0", "WORLD_SIZE": "1",
        # What a trial in a Slurm job sees: the task's placement is read from these (a host list
        # that only libslurm expands, which the portable library may not have).
        "SLURM_JOB_ID": "4242", "SLURM_JOB_NODELIST": "node[1-2]", "SLURM_NODEID": "0",
        "SLURM_PROCID": "0", "SLURM_NTASKS": "1",
    })
    import dlx
    from dlx import _library
    library = _library.library()
    assert library._name == os.environ["DLX_LIBRARY"], (library._name, os.environ["DLX_LIBRARY"])

    if os.environ.get("DLX_EXPECT_PORTABLE") == "1":
        loaded = open("/proc/self/maps").read()
        for absent in ("libmpi", "libslurm", "libhdf5", "libstdc++", "libisal", "libyaml-cpp", "libfmt"):
            assert absent not in loaded, f"{absent} is loaded: the portable library must not need it"
        handle = ctypes.c_void_p()
        status = library.dlx_trial_create(0, ctypes.byref(handle))  # with a communicator
        message = library.dlx_last_error().decode()
        assert status != 0 and not handle.value, (status, message)
        for expected in ("portable libdlx_c", "no MPI library is loaded", "DLX_TRIAL_NO_COMMUNICATOR"):
            assert expected in message, (expected, message)

    state = {"epoch": 2, "note": "in an image"}
    with dlx.Trial() as trial:
        assert trial.hparam("lr") == 0.05 and trial.hparam("layers") == 2
        assert trial.resume() is None  # a fresh start
        for step in range(1, STEPS[-1] + 1):
            trial.report_training(step, {"loss": 1.0 / step})
        trial.report_validation(STEPS[-1], {"accuracy": 0.75})
        trial.save_checkpoint(STEPS[0], {"model/conv/bias": numpy.zeros(4)})
        trial.save_checkpoint(STEPS[-1], arrays(), state=state, epoch=2, metric=0.75)
        assert trial.wait_for_checkpoint(timeout=60)
        trial.finish()

    with dlx.Trial() as trial:  # the requeued run
        resumed = trial.resume()
        assert resumed is not None and resumed.step == STEPS[-1] and resumed.epoch == 2, resumed
        assert {key: resumed.state.get(key) for key in state} == state, resumed.state
        expected = arrays()
        assert sorted(resumed.tensors) == sorted(expected), sorted(resumed.tensors)
        for name, array in expected.items():
            got = resumed.tensors[name]
            assert got.dtype == array.dtype and got.shape == array.shape, (name, got.dtype, got.shape)
            assert got.tobytes() == array.tobytes(), name  # bit for bit
        trial.finish()
    print(f"portable_sdk_test: trials ran with {library._name} on Python "
          f"{sys.version_info.major}.{sys.version_info.minor}, {os.confstr('CS_GNU_LIBC_VERSION')}")


def read_back(directory: str) -> None:
    import h5py
    import numpy
    trial_dir = os.path.join(directory, "trials", str(TRIAL_ID))
    with h5py.File(os.path.join(trial_dir, "checkpoints", f"step-{STEPS[-1]}.h5"), "r") as f:
        assert f.attrs["kind"] == b"dlx checkpoint" and int(f.attrs["step"]) == STEPS[-1]
        assert int(f.attrs["trial_id"]) == TRIAL_ID
    with h5py.File(os.path.join(trial_dir, "trial.h5"), "r") as f:
        steps = numpy.asarray(f["metrics/training/steps"])
        assert list(steps) == list(range(1, STEPS[-1] + 1)), steps
        loss = numpy.asarray(f["metrics/training/loss"])
        assert numpy.allclose(loss, [1.0 / s for s in steps]), loss
    print(f"portable_sdk_test: h5py read back {trial_dir}")


if __name__ == "__main__":
    if len(sys.argv) == 1:  # both, in a directory of their own (CI, on the host)
        import tempfile
        with tempfile.TemporaryDirectory() as experiment:
            run(experiment)
            read_back(experiment)
    elif len(sys.argv) == 3 and sys.argv[1] in ("run", "read-back"):
        (run if sys.argv[1] == "run" else read_back)(sys.argv[2])
    else:
        sys.exit("usage: portable_sdk_test.py [run|read-back DIR]")
