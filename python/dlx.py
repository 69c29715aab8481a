"""dlx from Python: report metrics, read hyperparameters, learn of preemption.

A thin ctypes binding of libdlx's C API (launcher/sdk/include/dlx/c_api.h), for programs that do
their own communication (PyTorch, JAX) and run under ``srun dlx-launch -- python3 train.py``::

    import dlx
    trial = dlx.Trial()                        # no MPI: rank and world size from dlx-launch
    lr = trial.hparam("learning_rate", 0.1)
    ...
    trial.report_training(step, loss=loss)     # rank 0 writes trials/<id>/trial.h5
    trial.report_validation(step, accuracy=acc)
    if trial.checkpoint_requested():           # this rank got SIGTERM/SIGUSR1/SIGUSR2
        ...                                    # agree across ranks, save, sys.exit(dlx.REQUEUE_EXIT_CODE)
    trial.finish()

Checkpoints (numpy arrays; a PyTorch program passes ``t.detach().cpu().numpy()``)::

    resumed = trial.resume()                   # None on a fresh start
    if resumed:
        weights[...] = resumed.tensors["model/weights"]; step = resumed.step
    trial.save_checkpoint(step, {"model/weights": weights}, state={"lr": lr}, metric=loss)
    trial.wait_for_checkpoint()                # e.g. before reporting at the searcher's target

The library is found through $DLX_LIBRARY, else next to this file's install location
(<prefix>/lib/dlx/python/dlx.py -> <prefix>/lib/libdlx_c.so), else the system's library path.
Every failure raises dlx.Error with the library's message. docs/sdk.md describes the API.
"""

import ctypes
import json
import os

REQUEUE_EXIT_CODE = 85
_NO_COMMUNICATOR = 1

__all__ = ["Checkpoint", "Error", "Trial", "REQUEUE_EXIT_CODE"]


class Error(RuntimeError):
    """A failed libdlx call; the message is dlx_last_error()'s."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def _find_library():
    explicit = os.environ.get("DLX_LIBRARY")
    if explicit:
        return explicit
    here = os.path.dirname(os.path.abspath(__file__))
    installed = os.path.normpath(os.path.join(here, "..", "..", "libdlx_c.so"))
    if os.path.exists(installed):
        return installed
    return "libdlx_c.so"


class _NamedTensor(ctypes.Structure):
    """dlx_named_tensor."""
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_char_p), ("data", ctypes.c_void_p),
                ("shape", ctypes.POINTER(ctypes.c_uint64)), ("rank", ctypes.c_size_t)]


# numpy dtype names a checkpoint holds as they are (bfloat16 has no numpy type: it loads as
# float32 through h5py, and through resume() as its raw uint16 words).
_CHECKPOINT_DTYPES = {"float32", "float64", "float16", "int8", "int16", "int32", "int64",
                      "uint8", "uint16", "uint32", "uint64"}


class Checkpoint:
    """A verified checkpoint from Trial.resume(): step, epoch, path, state (a dict of the small
    values) and tensors (a dict of numpy arrays, copies owned by Python)."""

    def __init__(self, step, epoch, path, state, tensors):
        self.step, self.epoch, self.path, self.state, self.tensors = step, epoch, path, state, tensors

    def __repr__(self):
        return f"dlx.Checkpoint(step={self.step}, path={self.path!r}, tensors={sorted(self.tensors)})"


def _load():
    lib = ctypes.CDLL(_find_library())
    c_trial = ctypes.c_void_p
    signatures = {
        "dlx_trial_create": [ctypes.c_uint, ctypes.POINTER(c_trial)],
        "dlx_trial_rank": [c_trial, ctypes.POINTER(ctypes.c_int)],
        "dlx_trial_size": [c_trial, ctypes.POINTER(ctypes.c_int)],
        "dlx_trial_local_rank": [c_trial, ctypes.POINTER(ctypes.c_int)],
        "dlx_trial_in_trial": [c_trial, ctypes.POINTER(ctypes.c_int)],
        "dlx_trial_id": [c_trial, ctypes.POINTER(ctypes.c_int64)],
        "dlx_trial_experiment_dir": [c_trial, ctypes.POINTER(ctypes.c_char_p)],
        "dlx_trial_checkpoint_dir": [c_trial, ctypes.POINTER(ctypes.c_char_p)],
        "dlx_trial_latest_checkpoint": [c_trial, ctypes.POINTER(ctypes.c_char_p)],
        "dlx_trial_hparams_json": [c_trial, ctypes.POINTER(ctypes.c_char_p)],
        "dlx_trial_report_training": [c_trial, ctypes.c_int64, ctypes.POINTER(ctypes.c_char_p),
                                      ctypes.POINTER(ctypes.c_double), ctypes.c_size_t],
        "dlx_trial_report_validation": [c_trial, ctypes.c_int64, ctypes.POINTER(ctypes.c_char_p),
                                        ctypes.POINTER(ctypes.c_double), ctypes.c_size_t],
        "dlx_trial_report_validation_next": [c_trial, ctypes.c_int64, ctypes.POINTER(ctypes.c_char_p),
                                             ctypes.POINTER(ctypes.c_double), ctypes.c_size_t,
                                             ctypes.POINTER(ctypes.c_int)],
        "dlx_trial_start_length": [c_trial, ctypes.POINTER(ctypes.c_int64)],
        "dlx_trial_target_length": [c_trial, ctypes.POINTER(ctypes.c_int64)],
        "dlx_trial_finish": [c_trial],
        "dlx_trial_should_checkpoint_and_exit": [c_trial, ctypes.POINTER(ctypes.c_int)],
        "dlx_trial_save_checkpoint": [c_trial, ctypes.c_int64, ctypes.c_int64,
                                      ctypes.POINTER(_NamedTensor), ctypes.c_size_t,
                                      ctypes.c_char_p, ctypes.c_double],
        "dlx_trial_wait_for_checkpoint": [c_trial, ctypes.c_double, ctypes.POINTER(ctypes.c_int)],
        "dlx_trial_resume": [c_trial, ctypes.POINTER(ctypes.c_void_p)],
        "dlx_checkpoint_step": [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64)],
        "dlx_checkpoint_epoch": [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64)],
        "dlx_checkpoint_path": [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p)],
        "dlx_checkpoint_state_json": [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p)],
        "dlx_checkpoint_tensor_count": [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)],
        "dlx_checkpoint_tensor": [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_char_p),
                                  ctypes.POINTER(ctypes.c_char_p),
                                  ctypes.POINTER(ctypes.POINTER(ctypes.c_uint64)),
                                  ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_void_p),
                                  ctypes.POINTER(ctypes.c_size_t)],
    }
    for name, argtypes in signatures.items():
        function = getattr(lib, name)
        function.argtypes = argtypes
        function.restype = ctypes.c_int
    lib.dlx_trial_destroy.argtypes = [c_trial]
    lib.dlx_trial_destroy.restype = None
    lib.dlx_checkpoint_destroy.argtypes = [ctypes.c_void_p]
    lib.dlx_checkpoint_destroy.restype = None
    lib.dlx_last_error.argtypes = []
    lib.dlx_last_error.restype = ctypes.c_char_p
    return lib


_lib = None


def _library():
    global _lib
    if _lib is None:
        _lib = _load()
    return _lib


def _check(status):
    if status != 0:
        raise Error(status, _library().dlx_last_error().decode("utf-8", "replace"))


class Trial:
    """This process's view of its dlx trial (one per process). Without MPI: a framework program
    does its own collectives; only rank 0 writes the trial record."""

    def __init__(self):
        lib = _library()
        handle = ctypes.c_void_p()
        _check(lib.dlx_trial_create(_NO_COMMUNICATOR, ctypes.byref(handle)))
        self._handle = handle
        self.rank = self._int(lib.dlx_trial_rank)
        self.size = self._int(lib.dlx_trial_size)
        self.local_rank = self._int(lib.dlx_trial_local_rank)
        self.in_trial = bool(self._int(lib.dlx_trial_in_trial))
        trial_id = ctypes.c_int64()
        _check(lib.dlx_trial_id(self._handle, ctypes.byref(trial_id)))
        self.id = trial_id.value
        self.hparams = json.loads(self._text(lib.dlx_trial_hparams_json))
        self.experiment_dir = self._text(lib.dlx_trial_experiment_dir) or None
        self.checkpoint_dir = self._text(lib.dlx_trial_checkpoint_dir) or None
        self.latest_checkpoint = self._text(lib.dlx_trial_latest_checkpoint) or None

    def _int(self, function):
        value = ctypes.c_int()
        _check(function(self._handle, ctypes.byref(value)))
        return value.value

    def _text(self, function):
        value = ctypes.c_char_p()
        _check(function(self._handle, ctypes.byref(value)))
        return (value.value or b"").decode("utf-8")

    def hparam(self, name, default=None):
        """The hyperparameter `name`; `default` when the trial has none (then None is an error)."""
        if name in self.hparams:
            return self.hparams[name]
        if default is None:
            known = ", ".join(self.hparams) or "none"
            raise Error(2, f"dlx: hyperparameter '{name}' is not set for this trial (set: {known})")
        return default

    def _report(self, function, step, metrics):
        names = [str(name).encode("utf-8") for name in metrics]
        values = [float(value) for value in metrics.values()]
        name_array = (ctypes.c_char_p * len(names))(*names)
        value_array = (ctypes.c_double * len(values))(*values)
        _check(function(self._handle, int(step), name_array, value_array, len(names)))

    def report_training(self, step, metrics=None, **named):
        """Record training metrics at `step` (rank 0 writes; every rank may call)."""
        self._report(_library().dlx_trial_report_training, step, {**(metrics or {}), **named})

    def report_validation(self, step, metrics=None, **named):
        """Record validation metrics at `step`. At the searcher's target length this asks the
        searcher and returns what it said: "train" (go on to the new target_length), "stop",
        "pause" (the checkpoint of this step is where a later task resumes) or "complete".
        Elsewhere it returns "train"."""
        metrics = {**(metrics or {}), **named}
        names = [str(name).encode("utf-8") for name in metrics]
        values = [float(value) for value in metrics.values()]
        name_array = (ctypes.c_char_p * len(names))(*names)
        value_array = (ctypes.c_double * len(values))(*values)
        said = ctypes.c_int(0)
        _check(_library().dlx_trial_report_validation_next(
            self._handle, int(step), name_array, value_array, len(names), ctypes.byref(said)))
        return ("train", "stop", "pause", "complete")[said.value]

    @property
    def start_length(self):
        """Where the searcher's work starts (0: from scratch)."""
        return self._int64(_library().dlx_trial_start_length)

    @property
    def target_length(self):
        """The length to report validation at (0: no searcher length: train your own)."""
        return self._int64(_library().dlx_trial_target_length)

    def _int64(self, function):
        out = ctypes.c_int64(0)
        _check(function(self._handle, ctypes.byref(out)))
        return out.value

    def checkpoint_requested(self):
        """True once this process got a checkpoint signal (SIGTERM, SIGUSR1, SIGUSR2). Local:
        combine it across ranks with the framework (e.g. an all_reduce of MAX)."""
        return bool(self._int(_library().dlx_trial_should_checkpoint_and_exit))

    def save_checkpoint(self, step, tensors, state=None, epoch=0, metric=None):
        """Save step-<step>.h5 in the trial's checkpoint directory: `tensors` maps names
        ("model/fc1/weight") to numpy arrays (any shape; float16/32/64, int8..64, uint8..64),
        `state` small values (numbers, booleans, strings; an int "data_cursor" is the data
        cursor), `metric` the searcher metric at this step (for keep_best). The arrays are copied
        before this returns; the file is written in the background (wait_for_checkpoint()), and
        the experiment's retention runs after it. Rank 0's arrays are saved."""
        import numpy

        keep = []  # the contiguous arrays and encoded names live until the call returns
        entries = []
        for name, value in tensors.items():
            array = numpy.asarray(value, order="C")  # keeps 0-d arrays (ascontiguousarray does not)
            if array.dtype.name not in _CHECKPOINT_DTYPES:
                raise Error(1, f"dlx: tensor '{name}' has dtype {array.dtype.name}, which a "
                               f"checkpoint cannot hold (use one of {sorted(_CHECKPOINT_DTYPES)})")
            if array.dtype.byteorder == ">":
                array = array.astype(array.dtype.newbyteorder("<"))
            shape = (ctypes.c_uint64 * max(1, array.ndim))(*array.shape)
            encoded = (str(name).encode("utf-8"), array.dtype.name.encode("ascii"))
            keep.append((array, shape, encoded))
            entries.append(_NamedTensor(encoded[0], encoded[1], array.ctypes.data, shape, array.ndim))
        table = (_NamedTensor * max(1, len(entries)))(*entries)
        state_text = json.dumps(state or {}).encode("utf-8")
        value = float("nan") if metric is None else float(metric)
        _check(_library().dlx_trial_save_checkpoint(self._handle, int(step), int(epoch), table,
                                                    len(entries), state_text, value))

    def wait_for_checkpoint(self, timeout=None):
        """Wait for a save in flight (at most `timeout` seconds); False when time ran out."""
        finished = ctypes.c_int(0)
        _check(_library().dlx_trial_wait_for_checkpoint(
            self._handle, -1.0 if timeout is None else float(timeout), ctypes.byref(finished)))
        return bool(finished.value)

    def resume(self):
        """The checkpoint to resume from, verified (DLX_LATEST_CHECKPOINT, the searcher's start
        checkpoint, or the trial's newest valid one) as a dlx.Checkpoint; None on a fresh start."""
        import numpy

        lib = _library()
        handle = ctypes.c_void_p()
        _check(lib.dlx_trial_resume(self._handle, ctypes.byref(handle)))
        if not handle.value:
            return None
        try:
            step, epoch = ctypes.c_int64(), ctypes.c_int64()
            path, state = ctypes.c_char_p(), ctypes.c_char_p()
            count = ctypes.c_size_t()
            _check(lib.dlx_checkpoint_step(handle, ctypes.byref(step)))
            _check(lib.dlx_checkpoint_epoch(handle, ctypes.byref(epoch)))
            _check(lib.dlx_checkpoint_path(handle, ctypes.byref(path)))
            _check(lib.dlx_checkpoint_state_json(handle, ctypes.byref(state)))
            _check(lib.dlx_checkpoint_tensor_count(handle, ctypes.byref(count)))
            tensors = {}
            for index in range(count.value):
                name, dtype = ctypes.c_char_p(), ctypes.c_char_p()
                shape, rank = ctypes.POINTER(ctypes.c_uint64)(), ctypes.c_size_t()
                data, size = ctypes.c_void_p(), ctypes.c_size_t()
                _check(lib.dlx_checkpoint_tensor(handle, index, ctypes.byref(name), ctypes.byref(dtype),
                                                 ctypes.byref(shape), ctypes.byref(rank),
                                                 ctypes.byref(data), ctypes.byref(size)))
                kind = dtype.value.decode("ascii")
                kind = "uint16" if kind == "bfloat16" else kind
                extents = tuple(shape[i] for i in range(rank.value))
                raw = ctypes.string_at(data.value, size.value) if size.value else b""
                tensors[name.value.decode("utf-8")] = numpy.frombuffer(
                    raw, dtype=numpy.dtype(kind).newbyteorder("<")).reshape(extents).copy()
            return Checkpoint(step.value, epoch.value, path.value.decode("utf-8"),
                              json.loads(state.value.decode("utf-8")), tensors)
        finally:
            lib.dlx_checkpoint_destroy(handle)

    def finish(self):
        """Mark the trial completed (rank 0)."""
        _check(_library().dlx_trial_finish(self._handle))

    def close(self):
        if self._handle:
            _library().dlx_trial_destroy(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass
