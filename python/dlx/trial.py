# SPDX-License-Identifier: Apache-2.0
"""dlx.Trial: this process's view of its trial, over libdlx's C API (dlx/c_api.h)."""
from __future__ import annotations

import atexit
import ctypes
import json
import os
import struct
import sys
import weakref
from typing import Any, Callable, Iterator, Mapping, NamedTuple, Sequence

from ._library import (CONFIG_ERROR_EXIT_CODE, NO_COMMUNICATOR, PLACE_FN, ConfigError, Error,
                       NamedTensor, check, error_for, library, report_training_values)
from .hparams import Hparams, NameCheck

# numpy dtype names a checkpoint holds as they are (bfloat16 has no numpy type: it loads as
# float32 through h5py, and through resume() as its raw uint16 words).
_CHECKPOINT_DTYPES = {"float32", "float64", "float16", "int8", "int16", "int32", "int64",
                      "uint8", "uint16", "uint32", "uint64"}

_DECISIONS = ("train", "stop", "pause", "complete")


def _print_warning(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# Fail fast on configuration errors: inside a trial, a ConfigError that nothing catches ends the
# process with CONFIG_ERROR_EXIT_CODE once Python has printed its traceback (whose last line,
# "dlx.ConfigError: ...", dlx-launch records as the trial's error) and the open trials are closed
# (their records flushed) and the atexit handlers have run (DataLoader workers stopped); so the
# trial is failed at once instead of restarted max_restarts times. Any other exception ends the
# process as Python always does.
_open_trials: "weakref.WeakSet[Trial]" = weakref.WeakSet()
_previous_excepthook = None


def _config_error_excepthook(kind, value, traceback) -> None:
    (_previous_excepthook or sys.__excepthook__)(kind, value, traceback)
    if not isinstance(value, ConfigError):
        return
    for trial in list(_open_trials):
        try:
            trial.close()
        except Exception:  # the exit status matters more than a record that cannot be flushed
            pass
    try:
        atexit._run_exitfuncs()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(CONFIG_ERROR_EXIT_CODE)


def _exit_on_config_error(trial: "Trial | None") -> None:
    """Installs the hook (once), and closes `trial` with it (None: a ConfigError raised before
    any Trial exists, e.g. by an import that dlx refuses)."""
    global _previous_excepthook
    if trial is not None:
        _open_trials.add(trial)
    if sys.excepthook is not _config_error_excepthook:
        _previous_excepthook = sys.excepthook
        sys.excepthook = _config_error_excepthook


class Checkpoint:
    """A verified checkpoint from Trial.resume(): step, epoch, path, state (a dict of the small
    values) and tensors (a dict of numpy arrays, copies owned by Python)."""

    def __init__(self, step: int, epoch: int, path: str, state: dict, tensors: dict):
        self.step, self.epoch, self.path, self.state, self.tensors = step, epoch, path, state, tensors

    def __repr__(self) -> str:
        return f"dlx.Checkpoint(step={self.step}, path={self.path!r}, tensors={sorted(self.tensors)})"


class TensorView(NamedTuple):
    """A tensor to save, by address: it must stay unchanged until the save call returns (the
    library copies it before returning), or with in_background until Trial.wait_for_snapshot()
    returns (the library copies it on its writer's thread meanwhile)."""
    name: str
    dtype: str               # a checkpoint dtype name: "float32", "bfloat16", "uint8", ...
    address: int             # 0 only when the shape holds no element
    shape: Sequence[int]
    device: bool = False     # the address is GPU memory of the current CUDA device
    in_background: bool = False  # copied after save_views returns (see Trial.wait_for_snapshot)


_ON_DEVICE, _IN_BACKGROUND = 1, 2  # DLX_TENSOR_ON_DEVICE, DLX_TENSOR_SNAPSHOT_IN_BACKGROUND


class StoredTensor(NamedTuple):
    """A tensor of a loaded checkpoint: its bytes live at `address` until the LoadedCheckpoint
    is closed. A deferred one (Trial.load's `defer`) has address 0: its bytes are still in the
    file, verified, and LoadedCheckpoint.read_into reads them into memory of the caller's. One
    read into the caller's device memory (Trial.load's `place_on_device`) has on_device set and
    the device address."""
    name: str
    dtype: str
    shape: tuple
    address: int
    nbytes: int
    deferred: bool = False
    index: int = -1  # its place in the LoadedCheckpoint
    on_device: bool = False

class _Owned:
    """Owns a library handle: released by close(), at the end of a `with` block, or when the
    object is collected."""
    _handle = None

    def _destroy(self, handle) -> None:
        raise NotImplementedError

    def close(self) -> None:
        if self._handle:
            self._destroy(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> bool:
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass


class LoadedCheckpoint(_Owned):
    """A verified checkpoint held by the library (no copy into Python): its tensors' bytes stay
    valid until close(). Use as a context manager."""

    def __init__(self, handle: ctypes.c_void_p):
        lib = library()
        self._handle = handle
        step, epoch, world = ctypes.c_int64(), ctypes.c_int64(), ctypes.c_int64()
        path, state = ctypes.c_char_p(), ctypes.c_char_p()
        check(lib.dlx_checkpoint_step(handle, ctypes.byref(step)))
        check(lib.dlx_checkpoint_epoch(handle, ctypes.byref(epoch)))
        check(lib.dlx_checkpoint_world_size(handle, ctypes.byref(world)))
        check(lib.dlx_checkpoint_path(handle, ctypes.byref(path)))
        check(lib.dlx_checkpoint_state_json(handle, ctypes.byref(state)))
        self.step, self.epoch, self.world_size = step.value, epoch.value, world.value
        self.path = path.value.decode("utf-8")
        self.state = json.loads(state.value.decode("utf-8"))

    def tensors(self) -> Iterator[StoredTensor]:
        lib = library()
        count = ctypes.c_size_t()
        check(lib.dlx_checkpoint_tensor_count(self._handle, ctypes.byref(count)))
        for index in range(count.value):
            name, dtype = ctypes.c_char_p(), ctypes.c_char_p()
            shape, rank = ctypes.POINTER(ctypes.c_uint64)(), ctypes.c_size_t()
            data, size = ctypes.c_void_p(), ctypes.c_size_t()
            check(lib.dlx_checkpoint_tensor(self._handle, index, ctypes.byref(name),
                                            ctypes.byref(dtype), ctypes.byref(shape),
                                            ctypes.byref(rank), ctypes.byref(data),
                                            ctypes.byref(size)))
            deferred, on_device = ctypes.c_int(), ctypes.c_int()
            check(lib.dlx_checkpoint_tensor_deferred(self._handle, index, ctypes.byref(deferred)))
            check(lib.dlx_checkpoint_tensor_on_device(self._handle, index, ctypes.byref(on_device)))
            yield StoredTensor(name.value.decode("utf-8"), dtype.value.decode("ascii"),
                               tuple(shape[i] for i in range(rank.value)), data.value or 0,
                               size.value, bool(deferred.value), index, bool(on_device.value))

    def read_into(self, stored: StoredTensor, address: int, nbytes: int) -> None:
        """Copies `stored`'s bytes to `address` (`nbytes`, exactly its size): a deferred tensor
        is read from the file, its checksums checked again as it is read. Raises dlx.Error when
        they no longer match (the file was changed after the load verified it): the memory at
        `address` then holds part of the tensor."""
        check(library().dlx_checkpoint_read_tensor(self._handle, stored.index,
                                                   ctypes.c_void_p(address), nbytes))

    def read_many(self, reads: Sequence[tuple[StoredTensor, int, int]]) -> None:
        """read_into for several tensors at once, each (stored, address, nbytes): the deferred
        ones are read together, their blocks shared out over a few threads, so a model of many
        small tensors is read in parallel. Every size is checked before anything is read; the
        memory ranges must not overlap. Raises dlx.Error like read_into (any of them may then
        hold part of its tensor)."""
        count = len(reads)
        if not count:
            return
        indices = (ctypes.c_size_t * count)(*(stored.index for stored, _, _ in reads))
        addresses = (ctypes.c_void_p * count)(*(address for _, address, _ in reads))
        sizes = (ctypes.c_size_t * count)(*(nbytes for _, _, nbytes in reads))
        check(library().dlx_checkpoint_read_tensors(self._handle, count, indices, addresses, sizes))

    def bytes_of(self, stored: StoredTensor) -> bytes:
        """`stored`'s bytes as a Python bytes object (read from the file when deferred)."""
        if not stored.nbytes:
            return b""
        if stored.on_device:
            raise ConfigError(f"dlx: tensor '{stored.name}' was read into device memory "
                              f"(place_on_device); read it there, at its address")
        if not stored.deferred:
            return ctypes.string_at(stored.address, stored.nbytes)
        buffer = ctypes.create_string_buffer(stored.nbytes)
        self.read_into(stored, ctypes.addressof(buffer), stored.nbytes)
        return buffer.raw

    def _destroy(self, handle) -> None:
        library().dlx_checkpoint_destroy(handle)


def _as_arrays(loaded: LoadedCheckpoint) -> Checkpoint:
    """The loaded checkpoint's tensors copied into numpy arrays; `loaded` is released."""
    import numpy

    with loaded:
        tensors = {}
        for stored in loaded.tensors():
            kind = "uint16" if stored.dtype == "bfloat16" else stored.dtype
            raw = loaded.bytes_of(stored)
            tensors[stored.name] = numpy.frombuffer(
                raw, dtype=numpy.dtype(kind).newbyteorder("<")).reshape(stored.shape).copy()
        return Checkpoint(loaded.step, loaded.epoch, loaded.path, loaded.state, tensors)


class Trial(_Owned):
    """This process's view of its dlx trial (one per process). Without MPI: a framework program
    does its own collectives; only rank 0 writes the trial record and the checkpoints."""

    _watchers: list[Callable[[], None]] = []

    def __init__(self):
        self._watchers = []  # see _settle
        try:
            lib = library()
        except ConfigError:
            # A libdlx_c that cannot be loaded fails every run of the trial alike (the install, the
            # image): in a trial (dlx-launch set DLX_EXPERIMENT_DIR; the library that would say so
            # is the one missing) it ends the process with exit 78, so that the trial fails at
            # once instead of crash-looping.
            if os.environ.get("DLX_EXPERIMENT_DIR"):
                _exit_on_config_error(None)
            raise
        handle = ctypes.c_void_p()
        check(lib.dlx_trial_create(NO_COMMUNICATOR, ctypes.byref(handle)))
        self._handle = handle
        self.rank = self._int(lib.dlx_trial_rank)
        self.size = self._int(lib.dlx_trial_size)
        self.local_rank = self._int(lib.dlx_trial_local_rank)
        self.in_trial = bool(self._int(lib.dlx_trial_in_trial))
        trial_id = ctypes.c_int64()
        check(lib.dlx_trial_id(self._handle, ctypes.byref(trial_id)))
        self.id = trial_id.value
        # Nested as DLX_HPARAMS gives them; dotted names still look up (hparams.py). Names are
        # checked as they are read when there are hyperparameters to check against; rank 0 says
        # what it finds on stderr, the trial's log.
        given = json.loads(self._text(lib.dlx_trial_hparams_nested_json))
        recording = self.rank == 0 and self.in_trial
        names = NameCheck(Hparams(given).names(), _print_warning if self.rank == 0 else None,
                          self._record_hparam_warning if recording else None) \
            if self.in_trial or given else None
        self.hparams = Hparams(given, check=names)
        self.experiment_dir = self._text(lib.dlx_trial_experiment_dir) or None
        self.checkpoint_dir = self._text(lib.dlx_trial_checkpoint_dir) or None
        self.latest_checkpoint = self._text(lib.dlx_trial_latest_checkpoint) or None
        # Names-once reporting: each set of names a report used is registered with the library
        # once (dlx_trial_metric_names) and a report passes only its number and the values. The
        # previous report's names are kept to skip even the lookup: most programs report the
        # same names every step.
        # Each set: its number, a struct that packs its values as C doubles, the buffer they are
        # packed into and that buffer's address (what the C call takes).
        self._metric_sets: dict[tuple, tuple] = {}
        self._last_names: tuple | None = None
        self._last_set = 0
        self._last_struct = self._last_buffer = None
        self._last_address = 0
        self._report_training_values = report_training_values()
        self._report_validation_values = library().dlx_trial_report_validation_values
        if self.in_trial:
            _exit_on_config_error(self)

    def _record_hparam_warning(self, kind: str, name: str, text: str) -> None:
        """Keeps a NameCheck warning in trial.h5 (dlx_trial_hparam_warning), for dlx status."""
        if self._handle:
            check(library().dlx_trial_hparam_warning(self._handle, kind.encode("utf-8"), name.encode("utf-8"),
                                                     text.encode("utf-8")))

    def _int(self, function) -> int:
        value = ctypes.c_int()
        check(function(self._handle, ctypes.byref(value)))
        return value.value

    def _int64(self, function) -> int:
        value = ctypes.c_int64(0)
        check(function(self._handle, ctypes.byref(value)))
        return value.value

    def _text(self, function) -> str:
        value = ctypes.c_char_p()
        check(function(self._handle, ctypes.byref(value)))
        return (value.value or b"").decode("utf-8")

    # ---- hyperparameters and metrics

    def hparam(self, name: str, default: Any = None) -> Any:
        """The hyperparameter `name`, dotted for a member of a group ("optim.lr"), or a whole
        group as a dict ("optim"); `default` when the trial has none (then None is an error)."""
        if name in self.hparams:
            return self.hparams[name]
        if default is None:
            known = ", ".join(self.hparams.names()) or "none"
            raise ConfigError(f"dlx: hyperparameter '{name}' is not set for this trial (set: {known}); "
                              f"add it to the experiment's hyperparameters, or give a default: "
                              f"trial.hparam(\"{name}\", ...)", status=2)
        if self.hparams._check is not None:
            self.hparams._check.note_default(name, default, f"trial.hparam(\"{name}\", ...)")
        return default

    def check_hparam_names(self) -> list[str]:
        """Warns (rank 0, on stderr) about each hyperparameter the experiment defines that this
        process has not read yet, naming the closest name it asked for with a default; returns
        every hyperparameter warning of this trial so far. dlx.torch.Loop calls it when training
        starts and finish() at the end."""
        if self.hparams._check is None:
            return []
        self.hparams._check.check_unread()
        return list(self.hparams._check.warnings)

    def _use(self, names: tuple, kind: str, step) -> None:
        """Makes `names` the current set, registered with the library on first use
        (dlx_trial_metric_names)."""
        found = self._metric_sets.get(names)
        if found is None:
            encoded = [str(name).encode("utf-8") for name in names]
            array_type = ctypes.c_char_p * len(encoded)
            out = ctypes.c_uint32()
            status = library().dlx_trial_metric_names(self._handle, array_type(*encoded), len(encoded),
                                                      ctypes.byref(out))
            if status:  # said as the report it is, not as the registration behind it
                message = library().dlx_last_error().decode("utf-8", "replace")
                raise error_for(status, message.replace("cannot register metric names",
                                                        f"cannot report {kind} metrics at step {step}", 1))
            buffer = (ctypes.c_double * max(1, len(names)))()
            found = (out.value, struct.Struct(f"={len(names)}d"), buffer, ctypes.addressof(buffer))
            self._metric_sets[names] = found
        self._last_set, self._last_struct, self._last_buffer, self._last_address = found
        self._last_names = names

    def _pack(self, metrics: Mapping[str, float]) -> None:
        try:
            self._last_struct.pack_into(self._last_buffer, 0, *metrics.values())
        except (TypeError, struct.error):  # values struct does not take as they are: float() them
            self._last_struct.pack_into(self._last_buffer, 0, *map(float, metrics.values()))

    def report_training(self, step: int, metrics: Mapping[str, float] | None = None,
                        **named: float) -> None:
        """Record training metrics at `step`: a few microseconds, buffered; durable in the
        trial's metrics log within a second (rank 0 writes; every rank may call)."""
        # The hot path of a training loop, written out: the names compared with the previous
        # report's (the same string objects: a pointer comparison each), the values packed into
        # that set's C buffer, one call.
        if named or metrics is None:
            metrics = {**(metrics or {}), **named}
        names = tuple(metrics)
        if names != self._last_names:
            self._use(names, "training", step)
        try:
            self._last_struct.pack_into(self._last_buffer, 0, *metrics.values())
        except (TypeError, struct.error):
            self._pack(metrics)
        status = self._report_training_values(self._handle, int(step), self._last_set, self._last_address)
        if status:
            check(status)

    def report_validation(self, step: int, metrics: Mapping[str, float] | None = None,
                          **named: float) -> str:
        """Record validation metrics at `step`. At the searcher's target length this asks the
        searcher and returns what it said: "train" (go on to the new target_length), "stop",
        "pause" (the checkpoint of this step is where a later task resumes) or "complete".
        Elsewhere it returns "train". Every rank that calls it at the target gets the same
        answer: the question has one id in the experiment's journal, the first rank's asking
        records the decision and every other rank reads that one back."""
        if named or metrics is None:
            metrics = {**(metrics or {}), **named}
        names = tuple(metrics)
        if names != self._last_names:
            self._use(names, "validation", step)
        # Its own array: this call releases the GIL (it may ask the searcher), and another thread's
        # report_training may meanwhile refill the set's shared buffer.
        values = (ctypes.c_double * max(1, len(names)))(*map(float, metrics.values()))
        said = ctypes.c_int(0)
        check(self._report_validation_values(self._handle, int(step), self._last_set, ctypes.addressof(values),
                                             ctypes.byref(said)))
        return _DECISIONS[said.value]

    @property
    def start_length(self) -> int:
        """Where the searcher's work starts (0: from scratch)."""
        return self._int64(library().dlx_trial_start_length)

    @property
    def target_length(self) -> int:
        """The length to report validation at (0: no searcher length: train your own)."""
        return self._int64(library().dlx_trial_target_length)

    def checkpoint_requested(self) -> bool:
        """True once this process got a checkpoint signal (SIGTERM, SIGUSR1, SIGUSR2). Local:
        combine it across ranks with the framework (e.g. an all_reduce of MAX)."""
        return bool(self._int(library().dlx_trial_should_checkpoint_and_exit))

    def checkpoint_signal(self) -> int:
        """The checkpoint signal this process got (signal.SIGTERM, SIGUSR1 or SIGUSR2), 0: none.
        Local, like checkpoint_requested(): ranks that agree through their framework take the
        MAX over ranks and pass it to note_checkpoint_signal."""
        return self._int(library().dlx_trial_checkpoint_signal)

    def note_checkpoint_signal(self, signal_number: int) -> None:
        """The notice's signal as the ranks agreed it (the MAX of their checkpoint_signal(),
        when not 0), before checkpoint_and_exit: rank 0 records the signal that stopped the
        trial even when it reached another rank first. dlx.torch does this itself."""
        check(library().dlx_trial_note_checkpoint_signal(self._handle, int(signal_number)))

    # ---- checkpoints

    def checkpoint_due(self, step: int) -> bool:
        """Whether the experiment's checkpoint.period says to save after `step` (False without
        one). A period in minutes is rank 0's clock: only rank 0 answers True; PyTorch programs
        use dlx.torch.checkpoint_due, which gives every rank the same answer."""
        due = ctypes.c_int(0)
        check(library().dlx_trial_checkpoint_due(self._handle, int(step), ctypes.byref(due)))
        return bool(due.value)

    def save_checkpoint(self, step: int, tensors: Mapping[str, Any], state: Mapping | None = None,
                        epoch: int = 0, metric: float | None = None) -> None:
        """Save step-<step>.h5 in the trial's checkpoint directory: `tensors` maps names
        ("model/fc1/weight") to numpy arrays (any shape; float16/32/64, int8..64, uint8..64),
        `state` small values (numbers, booleans, strings; an int "data_cursor" is the data
        cursor), `metric` the searcher metric at this step (for keep_best). The arrays are copied
        before this returns; the file is written in the background (wait_for_checkpoint()), and
        the experiment's retention runs after it. Rank 0's arrays are saved.
        PyTorch programs use dlx.torch.save_state, which takes state dicts as they are."""
        import numpy

        keep = []  # the contiguous arrays live until the call returns
        views = []
        for name, value in tensors.items():
            array = numpy.asarray(value, order="C")  # keeps 0-d arrays (ascontiguousarray does not)
            if array.dtype.name not in _CHECKPOINT_DTYPES:
                raise ConfigError(f"dlx: tensor '{name}' has dtype {array.dtype.name}, which a "
                                  f"checkpoint cannot hold (use one of {sorted(_CHECKPOINT_DTYPES)})")
            if array.dtype.byteorder == ">":
                array = array.astype(array.dtype.newbyteorder("<"))
            keep.append(array)
            views.append(TensorView(str(name), array.dtype.name, array.ctypes.data, array.shape))
        self.save_views(step, views, state=state, epoch=epoch, metric=metric)

    def save_views(self, step: int, views: Sequence[TensorView], state: Mapping | None = None,
                   epoch: int = 0, metric: float | None = None,
                   cuda_stream: int | None = None) -> None:
        """save_checkpoint over tensors given by address (TensorView): no copy in Python. The
        memory must stay unchanged until this returns (the library snapshots it). Views with
        device=True are GPU memory: the library copies them itself, through a few pinned buffers
        of its own, after the work queued so far on `cuda_stream` (the raw cudaStream_t of the
        stream that wrote them, e.g. torch.cuda.current_stream().cuda_stream; None: the legacy
        default stream; the host does not wait for it).
        Views with in_background=True are copied after this returns, on the library's writer
        thread (checkpoint.async, the default): they must stay unchanged until
        wait_for_snapshot() returns."""
        keep = []  # encoded names and shape arrays live until the call returns
        entries = []
        for view in views:
            shape = (ctypes.c_uint64 * max(1, len(view.shape)))(*view.shape)
            encoded = (view.name.encode("utf-8"), view.dtype.encode("ascii"))
            keep.append((shape, encoded))
            entries.append(NamedTensor(encoded[0], encoded[1], view.address or None, shape,
                                       len(view.shape)))
        table = (NamedTensor * max(1, len(entries)))(*entries)
        state_text = json.dumps(dict(state or {})).encode("utf-8")
        value = float("nan") if metric is None else float(metric)
        if not any(view.device or view.in_background for view in views):
            check(library().dlx_trial_save_checkpoint(self._handle, int(step), int(epoch), table,
                                                      len(entries), state_text, value))
            return
        flags = [(_ON_DEVICE if v.device else 0) | (_IN_BACKGROUND if v.in_background else 0)
                 for v in views]
        save = getattr(library(), "dlx_trial_save_checkpoint_flagged", None)
        if save is None:
            # An older libdlx_c (one a container mounts): copying every tensor before returning
            # is always correct, only slower.
            save = getattr(library(), "dlx_trial_save_checkpoint_device", None)
            flags = [flag & _ON_DEVICE for flag in flags]
        if save is None:
            raise Error(0, "dlx: this libdlx_c has no dlx_trial_save_checkpoint_device: it is "
                           "older than the dlx package; install the libdlx_c of the same dlx "
                           "(or save host copies of the tensors)")
        table_flags = (ctypes.c_ubyte * max(1, len(views)))(*flags)
        check(save(self._handle, int(step), int(epoch), table, table_flags, len(entries),
                   cuda_stream or None, state_text, value))

    def wait_for_snapshot(self) -> None:
        """Returns once the last save's in_background views are copied (at once when none are
        being copied, and on ranks other than 0). Not collective: call it before changing them,
        e.g. just before the optimizer's next step. A failed copy is the next save's or
        wait_for_checkpoint's error."""
        wait = getattr(library(), "dlx_trial_wait_for_snapshot", None)
        if wait is not None:
            check(wait(self._handle))

    def withdraw_checkpoint(self, step: int) -> bool:
        """Rank 0's, not collective: waits for the save in flight and deletes step-<step>.h5 when
        that save published it (True), for a caller that found in_background views changed
        before wait_for_snapshot() returned. False elsewhere, or with an older libdlx_c."""
        withdraw = getattr(library(), "dlx_trial_withdraw_checkpoint", None)
        if withdraw is None:
            return False
        done = ctypes.c_int(0)
        check(withdraw(self._handle, int(step), ctypes.byref(done)))
        return bool(done.value)

    def checkpoint_and_exit(self, step: int, deadline: float | None = None) -> int:
        """After a checkpoint signal and the save of `step` (save_checkpoint, or
        dlx.torch.save_state): waits for the save (at most `deadline` seconds; default
        DLX_EXIT_DEADLINE_S, else 30), records in trial.h5 why the trial stops and returns
        dlx.REQUEUE_EXIT_CODE (85), for the program to exit with: Slurm requeues the trial and it
        resumes from that checkpoint. Every rank calls it."""
        self._settle()
        code = ctypes.c_int(0)
        check(library().dlx_trial_checkpoint_and_exit(
            self._handle, int(step), -1.0 if deadline is None else float(deadline),
            ctypes.byref(code)))
        return code.value

    def wait_for_checkpoint(self, timeout: float | None = None) -> bool:
        """Wait for a save in flight (at most `timeout` seconds); False when time ran out."""
        self._settle()
        finished = ctypes.c_int(0)
        check(library().dlx_trial_wait_for_checkpoint(
            self._handle, -1.0 if timeout is None else float(timeout), ctypes.byref(finished)))
        return bool(finished.value)

    def load(self, any_world_size: bool = False, defer: Sequence[str] = (),
             place: Callable[[str, str, tuple[int, ...], int], int] | None = None,
             place_on_device: Callable[[str, str, tuple[int, ...], int], int] | None = None
             ) -> LoadedCheckpoint | None:
        """The checkpoint to resume from, verified and held by the library (LoadedCheckpoint);
        None on a fresh start. Called by every rank: each gets the file rank 0 chose. A file
        whose per-rank state was saved on another number of ranks is refused unless
        `any_world_size` (then the caller checks LoadedCheckpoint.world_size). Tensors whose
        names start with one of the `defer` prefixes are verified like the rest but not held:
        LoadedCheckpoint.read_into reads each into the caller's memory (a model's own tensors,
        with no copy in between). `place(name, dtype, shape, nbytes)`, when given, is asked for
        every other tensor of each file tried: the address of nbytes of memory the caller owns
        and keeps valid while the LoadedCheckpoint is open, to read and verify that tensor in
        (its StoredTensor.address is then that address), or 0 for the library's memory. A file
        refused after it was placed leaves partial bytes there: give new memory only. An
        exception in `place` counts as 0. `place_on_device`, asked first, is the same for CUDA
        memory of the current device: the library reads the tensor through its own few pinned
        buffers and copies it there (StoredTensor.on_device); the copies are done when this
        returns."""
        lib = library()
        handle = ctypes.c_void_p()
        if place is not None or place_on_device is not None:
            def callback_of(where):
                if where is None:
                    return PLACE_FN()  # NULL: not asked

                def placing(_context, name, dtype, shape, rank, nbytes):
                    try:
                        return where(name.decode("utf-8"), dtype.decode("utf-8"),
                                     tuple(shape[i] for i in range(rank)), nbytes) or None
                    except Exception:  # noqa: BLE001 (nothing may unwind through the library)
                        return None
                return PLACE_FN(placing)
            on_host, on_device = callback_of(place), callback_of(place_on_device)
            prefixes = (ctypes.c_char_p * max(len(defer), 1))(*(p.encode("utf-8") for p in defer))
            check(lib.dlx_trial_resume_placing_on_device(
                self._handle, 1 if any_world_size else 0, prefixes, len(defer), on_host, on_device,
                None, ctypes.byref(handle)))
        elif defer:
            prefixes = (ctypes.c_char_p * len(defer))(*(p.encode("utf-8") for p in defer))
            check(lib.dlx_trial_resume_deferring(self._handle, 1 if any_world_size else 0,
                                                 prefixes, len(defer), ctypes.byref(handle)))
        else:
            call = lib.dlx_trial_resume_any_world_size if any_world_size else lib.dlx_trial_resume
            check(call(self._handle, ctypes.byref(handle)))
        return LoadedCheckpoint(handle) if handle.value else None

    def resume(self) -> Checkpoint | None:
        """The checkpoint to resume from, verified (DLX_LATEST_CHECKPOINT, the searcher's start
        checkpoint, or the trial's newest valid one) as a dlx.Checkpoint of numpy arrays; None
        on a fresh start. Called by every rank: each gets the file rank 0 chose."""
        loaded = self.load()
        return None if loaded is None else _as_arrays(loaded)

    def open_checkpoint(self, path: str, *, resumes: bool = False) -> Checkpoint:
        """The checkpoint file `path` (this trial's, another trial's or another experiment's),
        read and verified as resume() does, as a dlx.Checkpoint of numpy arrays. Not collective.
        resumes=True: this run resumes from it (one of this trial's checkpoints, opened by a
        trainer that chooses which ranks read it): rank 0 says so and records the resume in
        trial.h5 as resume() does (metrics after its step dropped)."""
        handle = ctypes.c_void_p()
        check(library().dlx_checkpoint_open(self._handle, os.fsencode(path), ctypes.byref(handle)))
        loaded = LoadedCheckpoint(handle)
        if resumes:
            try:
                check(library().dlx_trial_note_resumed(self._handle, handle))
            except BaseException:
                loaded.close()
                raise
        return _as_arrays(loaded)

    def _settle(self) -> None:
        """What watches this trial's saves from another thread (dlx.torch's snapshot fence)
        finishes and says what it found, before the trial waits for its last save."""
        for done in list(self._watchers):
            done()

    def close(self) -> None:
        """Releases the trial (the library waits for a save in flight first)."""
        try:
            self._settle()
        finally:
            self._watchers = []
            super().close()

    def finish(self) -> None:
        """Mark the trial completed (rank 0), or stopped/paused as the searcher said."""
        self.check_hparam_names()
        self._settle()
        check(library().dlx_trial_finish(self._handle))

    def _destroy(self, handle) -> None:
        library().dlx_trial_destroy(handle)
