# SPDX-License-Identifier: Apache-2.0
"""PyTorch state in dlx checkpoints: save_state and load_state, called by every rank.

    objects = {"model": model, "optimizer": optimizer, "scheduler": scheduler, "scaler": scaler}
    step = dlx.torch.load_state(trial, objects)      # None on a fresh start
    ...
    dlx.torch.save_state(trial, step, objects, metric=accuracy)

`objects` maps names to anything with state_dict()/load_state_dict() (modules, optimizers, LR
schedulers, GradScaler) or to plain nested dicts/lists/tuples of tensors and Python values. One
checkpoint (trials/<id>/checkpoints/step-<N>.h5, docs/checkpoint-format.md) holds every tensor
as an HDF5 dataset named by its state-dict path (/tensors/model/layer1.0.weight,
/tensors/optimizer/state/3/exp_avg), the structure and the Python values as typed metadata
(no pickle), and every rank's RNG states (Python, numpy, torch, CUDA) at rng/rank-<r>/<stream>.

Replicated state (the model, the optimizer: the same on every rank under DDP) is taken from
rank 0. save_state returns once the state is copied to host memory; the file is written in the
background (trial.wait_for_checkpoint() waits), with the experiment's retention after it.
load_state restores every object in place, on every rank, from the checkpoint rank 0 chose, and
each rank's own RNG states; a checkpoint saved on another number of ranks restores the
replicated state only when asked to (restore_rng=False).
"""
from __future__ import annotations

import bisect
import itertools
import json
import os
from typing import Any, Callable, Mapping, NamedTuple

import torch

from .._library import ConfigError, Error
from ..trial import TensorView, Trial
from . import _fence, _ranks, _rendezvous, _rng, _tensors, _tree
from ._tree import TreeError

FORMAT = 1
STRUCTURE_KEY = "dlx.torch"  # the checkpoint's state value holding the structure (JSON)

__all__ = ["checkpoint_due", "checkpoint_requested", "load_state", "Loop", "save_state",
           "TreeError", "wait_for_snapshot"]


def _apply_gpu_share() -> None:
    """A packed trial (resources.trials_per_gpu: N) shares its GPU with N - 1 others: dlx-launch
    sets DLX_GPU_MEMORY_FRACTION to 1/N, and torch's caching allocator is capped at that share of
    the device, so that running out of memory is this trial's failure, not its neighbours'."""
    share = os.environ.get("DLX_GPU_MEMORY_FRACTION")
    if not share or not torch.cuda.is_available():
        return
    try:
        fraction = float(share)
    except ValueError:
        raise ConfigError(f"dlx.torch: DLX_GPU_MEMORY_FRACTION is {share!r}, not a number "
                          f"(dlx-launch sets it for packed trials)") from None
    torch.cuda.set_per_process_memory_fraction(fraction, 0)


_apply_gpu_share()
_rendezvous.use_store_without_libuv()


def _any_rank(flag: bool, trial: Trial) -> bool:
    """True on every rank when `flag` is true on any (an all_reduce of MAX; local on one rank)."""
    return bool(_ranks.max_over_ranks([int(flag)], trial.size)[0])


def checkpoint_requested(trial: Trial) -> bool:
    """True on every rank when any rank got a checkpoint signal (preemption, requeue, the time
    limit's notice): then save_state and exit with dlx.REQUEUE_EXIT_CODE. Collective: call it at
    the same point of every step on every rank. The agreed signal (the ranks' largest) is what
    trial.checkpoint_and_exit records, whichever rank it reached first."""
    agreed = _ranks.max_over_ranks([trial.checkpoint_signal()], trial.size)[0]
    return _ranks.take_notice(trial, agreed)


def checkpoint_due(trial: Trial, step: int) -> bool:
    """Whether the experiment's checkpoint.period says to save after `step`, the same answer on
    every rank. Collective."""
    return _any_rank(trial.checkpoint_due(step), trial)


def _state_of(name: str, value: Any) -> tuple[Any, bool]:
    """(the state to save, whether `value` restores through load_state_dict)."""
    if not isinstance(name, str) or not name or "/" in name or "\0" in name or name == ".":
        raise TreeError(f"dlx.torch: objects has the name {name!r}; names are non-empty strings "
                        f"without '/' (they are the first level of every tensor's path)")
    if callable(getattr(value, "state_dict", None)) and \
            callable(getattr(value, "load_state_dict", None)):
        return value.state_dict(), True
    if isinstance(value, (dict, list, tuple, torch.Tensor)):
        return value, False
    raise TreeError(f"dlx.torch: objects[{name!r}] is a {type(value).__name__}; dlx.torch saves "
                    f"objects with state_dict()/load_state_dict() (modules, optimizers, "
                    f"schedulers, GradScaler) and plain dicts, lists and tensors")


def _cuda_io_mode() -> str:
    """How CUDA tensors move between the GPU and checkpoint files, DLX_TORCH_CUDA_IO:
    library (the default): saved by handing their device pointers to libdlx, which copies them
      itself into its own pinned buffers (one copy); a CUDA module's tensors and a CUDA
      optimizer's moments loaded by the library into new tensors on the GPU, through a few pinned
      buffers of its own (one read of the file), then copied into the module's own on the
      device, and kept by the optimizer (measured on an H200: docs/benchmarks.md);
    torch: saved through PyTorch's own pinned host copies, which libdlx snapshots again; loaded
      into host memory, then copied by load_state_dict (no GPU memory beyond the model's own
      during a load)."""
    mode = os.environ.get("DLX_TORCH_CUDA_IO", "library")
    if mode not in ("torch", "library"):
        raise ConfigError(f"dlx.torch: DLX_TORCH_CUDA_IO is {mode!r}; use 'library' (libdlx "
                          f"copies CUDA tensors between the GPU and its pinned buffers itself, "
                          f"the default) or 'torch' (they go through PyTorch's own host copies)")
    return mode


class _Snapshot:
    """Rank 0's tensors ready for the library: contiguous, in the stored dtype; in host memory,
    or (DLX_TORCH_CUDA_IO=library) CUDA tensors of the current device as they are. With
    DLX_TORCH_SNAPSHOT=background, the tensors `owned` holds (the optimizers': _fence.py) and
    dlx's own copies are in_background views; `watched` has the former with their versions."""

    def __init__(self, to_host: bool, background: bool, owned: Mapping[int, torch.Tensor]):
        self.to_host = to_host
        self.views: list[TensorView] = []
        self.keep: list[torch.Tensor] = []
        self.watched: list[tuple[str, torch.Tensor, int]] = []
        self._background = background
        self._owned = owned
        self._stream = None
        # Read on every rank, so that a bad value fails them all at the same point.
        self._by_library = _cuda_io_mode() == "library" and to_host
        self.cuda_stream: int | None = None  # the stream the library orders its copies after

    def _in_background(self, path: str, tensor: torch.Tensor, plain: torch.Tensor) -> bool:
        """Whether the library may copy `plain` after save_state returns: dlx's own copy, or a
        tensor only an optimizer's next step changes (then watched)."""
        if not self._background or not plain.numel():
            return False
        if plain.data_ptr() != tensor.data_ptr():
            return True  # made by stored_form: nothing but `keep` holds it
        owner = self._owned.get(tensor.data_ptr())
        if owner is None or owner.numel() != tensor.numel() or owner.dtype != tensor.dtype:
            return False
        self.watched.append((path, owner, owner._version))
        return True

    def add(self, path: str, tensor: torch.Tensor, here: str) -> None:
        _tensors.check_savable(tensor, here)
        if not self.to_host:
            return
        stored, plain = _tensors.stored_form(tensor)
        if self._by_library and plain.device.type == "cuda" and \
                plain.device.index == torch.cuda.current_device():
            # The library copies it after the current stream's work (which made `plain`, when
            # stored_form had to) queued so far; `keep` holds it until the library has.
            self.cuda_stream = torch.cuda.current_stream(plain.device).cuda_stream
            self.keep.append(plain)
            self.views.append(TensorView(path, stored, plain.data_ptr() if plain.numel() else 0,
                                         tuple(plain.shape), device=True,
                                         in_background=self._in_background(path, tensor, plain)))
            return
        if plain.device.type != "cpu":
            # Copied on a side stream once the training stream's work on it is done; the copies
            # overlap each other and the library snapshots them after one synchronisation.
            if self._stream is None and plain.device.type == "cuda":
                self._stream = torch.cuda.Stream(plain.device)
                self._stream.wait_stream(torch.cuda.current_stream(plain.device))
            host = torch.empty(plain.shape, dtype=plain.dtype,
                               pin_memory=plain.device.type == "cuda")
            if self._stream is not None and plain.device.type == "cuda":
                with torch.cuda.stream(self._stream):
                    host.copy_(plain, non_blocking=True)
                plain.record_stream(self._stream)
            else:
                host.copy_(plain)
            # dlx's own host copy, whatever the original: the library may take it later.
            self.keep.append(host)
            self.views.append(TensorView(path, stored, host.data_ptr() if host.numel() else 0,
                                         tuple(host.shape),
                                         in_background=self._background and host.numel() > 0))
            return
        self.keep.append(plain)
        self.views.append(TensorView(path, stored, plain.data_ptr() if plain.numel() else 0,
                                     tuple(plain.shape),
                                     in_background=self._in_background(path, tensor, plain)))

    def ready(self) -> list[TensorView]:
        if self._stream is not None:
            self._stream.synchronize()
        return self.views


def wait_for_snapshot() -> None:
    """Waits until the library has copied what the last save_state left to copy in the
    background (the optimizers' tensors), and checks that none changed meanwhile: call it before
    changing a parameter or an optimizer's state in place other than by the optimizer's step,
    which waits by itself. At once when nothing is being copied."""
    _fence.FENCE.close()


def _searcher_names(trial: Trial, step: int, at_target: bool | None) -> bool:
    """Whether the searcher will name the checkpoint of `step`: the one saved at the target length
    before reporting it, where ASHA promotes the trial from and a PBT exploit starts other trials.
    That save copies everything before it returns: the snapshot fence withdraws a checkpoint only
    later, at the next optimizer step, and by then the searcher has named it."""
    if at_target is not None:
        return at_target
    target = trial.target_length
    return 0 < target <= step


def save_state(trial: Trial, step: int, objects: Mapping[str, Any], metric: float | None = None,
               *, epoch: int = 0) -> None:
    """Saves the state of every object in `objects` as the checkpoint of `step` (collective:
    every rank calls it at the same step). Raises TreeError, naming the object and key, for
    state dlx.torch cannot store; then nothing is written."""
    _save_state(trial, step, objects, metric, epoch, {})


def _save_state(trial: Trial, step: int, objects: Mapping[str, Any], metric: float | None,
                epoch: int, rank_streams: Mapping[str, bytes], at_target: bool | None = None) -> None:
    """save_state with this rank's own byte streams besides its RNG states (stored beside them
    at rng/rank-<r>/<name>: dlx.torch.Loop's DataLoader generators). `at_target`: whether the
    searcher will name this checkpoint (None: when `step` reached the trial's target length)."""
    _fence.FENCE.close()  # the previous save's background copy, and its check
    # read on every rank: a bad value fails them all
    background = _fence.mode() == "background" and not _searcher_names(trial, step, at_target)
    mine = _ranks.pack({**_rng.capture(), **rank_streams})
    gathered = _ranks.gather(mine, trial.rank, trial.size)
    owned = _fence.optimizer_tensors(objects.values()) if background and trial.rank == 0 else {}
    snapshot = _Snapshot(to_host=trial.rank == 0, background=background, owned=owned)
    encoder = _tree.Encoder(snapshot.add)
    structure = {}
    for name, value in objects.items():
        state, stateful = _state_of(name, value)
        structure[name] = {"stateful": stateful, "state": encoder.encode(name, state, [], [name])}
    if trial.rank != 0:
        # The library's save is collective; rank 0's state is the one saved.
        trial.save_views(step, [], epoch=epoch, metric=metric)
        return
    views = snapshot.ready()
    for rank, packed in enumerate(gathered):
        for stream, data in _ranks.unpack(packed, rank).items():
            array = torch.frombuffer(bytearray(data), dtype=torch.uint8) if data else \
                torch.empty(0, dtype=torch.uint8)
            snapshot.keep.append(array)
            views.append(TensorView(f"rng/rank-{rank}/{stream}", "uint8",
                                    array.data_ptr() if len(data) else 0, (len(data),)))
    state = {STRUCTURE_KEY: json.dumps({"format": FORMAT, "objects": structure},
                                       separators=(",", ":"))}
    try:
        trial.save_views(step, views, state=state, epoch=epoch, metric=metric,
                         cuda_stream=snapshot.cuda_stream)
    except BaseException:
        trial.wait_for_snapshot()  # a copy the library started may still read `keep`
        raise
    if any(view.in_background for view in views):
        for value in objects.values():
            if isinstance(value, torch.optim.Optimizer):
                _fence.hook(value)
        _fence.FENCE.arm(trial, step, snapshot.watched, snapshot.keep)


def load_state(trial: Trial, objects: Mapping[str, Any], *, restore_rng: bool = True) -> int | None:
    """Restores every object of `objects` in place from the checkpoint the trial resumes from
    (the one rank 0 chose: DLX_LATEST_CHECKPOINT, the searcher's start checkpoint, or the
    newest valid one) and this rank's RNG states; returns its step, or None on a fresh start.
    Called by every rank. Raises dlx.Error, before changing anything, when the checkpoint and
    `objects` do not hold the same names, or when the checkpoint was saved on another number of
    ranks and restore_rng is true (restore_rng=False restores the replicated state only)."""
    loaded = _load_state(trial, objects, restore_rng)
    return None if loaded is None else loaded.step


class _Loaded(NamedTuple):
    step: int
    path: str
    rank_streams: dict    # this rank's byte streams (RNG states and any other), by name
    other_trial: bool     # the file is another trial's (a PBT exploit's start)


def _load_state(trial: Trial, objects: Mapping[str, Any], restore_rng: bool) -> _Loaded | None:
    for name, value in objects.items():
        _state_of(name, value)
    _fence.FENCE.close()  # a load changes the tensors a background copy may still read
    # A CPU model's tensors are read straight into its own parameters and buffers
    # (_read_in_place), after the library verified the whole file and every check below passed,
    # and a CPU optimizer's moments into the tensors it then keeps (_Placement): no copy. With
    # DLX_TORCH_CUDA_IO=library, a CUDA model's tensors and a CUDA optimizer's moments are read
    # by the library into new tensors on the GPU (through its few pinned buffers, one read of the
    # file); load_state_dict then copies the model's on the device and the optimizer keeps its
    # moments. Everything else (by default a CUDA model's tensors too) is held by the library and
    # read through views.
    into_gpu = _cuda_io_mode() == "library"
    modules = [name for name, value in objects.items()
               if isinstance(value, torch.nn.Module) and _all_on_cpu(value)]
    gpu_modules = [name for name, value in objects.items()
                   if into_gpu and isinstance(value, torch.nn.Module) and
                   _all_on_current_cuda(value)]
    in_place = {name: _optimizer_read_in_place(value, into_gpu) for name, value in objects.items()}
    optimizers = [name for name, device in in_place.items() if device is not None]
    on_cpu = [name for name in optimizers if in_place[name] == "cpu"]
    on_gpu = [name for name in optimizers if in_place[name] == "cuda"]
    placement = _Placement(on_cpu, gpu_modules, on_gpu)
    loaded = trial.load(any_world_size=True, defer=[f"{name}/" for name in modules],
                        place=placement if on_cpu else None,
                        place_on_device=placement.on_device if gpu_modules or on_gpu else None)
    if loaded is None:
        return None
    with loaded:
        text = loaded.state.get(STRUCTURE_KEY)
        if not isinstance(text, str):
            raise ConfigError(f"dlx.torch: {loaded.path} was not written by dlx.torch.save_state "
                              f"(it has no '{STRUCTURE_KEY}' state value): read it with "
                              f"trial.resume(), which returns its tensors as numpy arrays")
        saved = json.loads(text)
        if saved.get("format", 0) > FORMAT:
            raise ConfigError(f"dlx.torch: {loaded.path} has dlx.torch format {saved.get('format')}, "
                              f"newer than this dlx reads ({FORMAT}): use the dlx that wrote it")
        structure = saved["objects"]
        _check_names(loaded.path, structure, objects)
        if restore_rng and loaded.world_size != trial.size:
            raise ConfigError(f"dlx.torch: {loaded.path} was saved by {loaded.world_size} ranks, this "
                              f"run has {trial.size}: each rank's RNG state belongs to a rank of "
                              f"that run. Run the trial on {loaded.world_size} ranks (the "
                              f"experiment's resources) to resume it exactly, or call "
                              f"load_state(trial, objects, restore_rng=False) to restore the model "
                              f"and optimizer and keep this run's own RNG states")
        stored = {tensor.name: tensor for tensor in loaded.tensors()}
        waiting: dict[int, tuple[torch.Tensor, str, str]] = {}  # id(placeholder) -> it, path, dtype

        def view(path: str, dtype: str) -> torch.Tensor:
            found = stored.get(path)
            if found is None:
                raise ConfigError(f"dlx.torch: {loaded.path} has no tensor '{path}', which its "
                                  f"structure names; was the file edited?")
            if found.deferred:
                stand_in = _tensors.placeholder(found.dtype, found.shape, dtype, path)
                waiting[id(stand_in)] = (stand_in, path, dtype)
                return stand_in
            own = placement.tensors.get(found.address) if found.nbytes else None
            if own is not None:  # read into memory of ours: the tensor itself, not a view
                return _tensors.as_saved_dtype(own, found.dtype, found.shape, dtype, path)
            return _tensors.from_stored(found.address, found.nbytes, found.dtype, found.shape,
                                        dtype, path)

        states = {}
        for name, entry in structure.items():
            target = objects[name]
            # A module copies each tensor into its parameters, and an optimizer copies what it
            # must cast or move (PyTorch 2.x; 1.x deep-copies it all): they read the loaded
            # bytes in place, and what an optimizer kept as given ('step', a CPU tensor of its
            # parameter's dtype) is copied after its load_state_dict (_own_kept_tensors). Anything
            # else may keep the tensors it is given, so it gets copies: the file's memory is
            # freed when this returns.
            share = isinstance(target, (torch.nn.Module, torch.optim.Optimizer))
            tensor_of = view if share else (lambda path, dtype: view(path, dtype).clone())
            states[name] = _tree.decode(entry["state"], tensor_of)
            if entry["stateful"] != (callable(getattr(target, "load_state_dict", None)) and
                                     callable(getattr(target, "state_dict", None))):
                raise ConfigError(f"dlx.torch: objects[{name!r}] is a {type(target).__name__}, but "
                                  f"{loaded.path} holds {name!r} as "
                                  f"{'a state dict' if entry['stateful'] else 'a plain value'}")
            if isinstance(target, torch.nn.Module):
                _check_module(loaded.path, name, target, states[name])
            elif isinstance(target, torch.optim.Optimizer):
                _check_optimizer(loaded.path, name, target, states[name])
            elif not entry["stateful"]:
                _check_plain(target, states[name], name)
        reader = _DeferredReader(loaded, stored, waiting)
        moments: dict[str, list[_Moment]] = {}
        for name in modules:
            states[name] = _read_in_place(reader, objects[name], states[name], name)
        reader.finish()  # the modules' tensors, read together
        for name in optimizers:
            states[name], moments[name] = _read_moments(reader, placement, objects[name],
                                                        states[name], name)
        loaded_memory = [(t.address, t.address + t.nbytes) for t in stored.values()
                         if t.nbytes and not t.deferred and not t.on_device and
                         t.address not in placement.tensors]
        for name, state in states.items():
            _restore(objects[name], state, name, loaded.path)
            for moment in moments.get(name, ()):
                objects[name].state[moment.param][moment.key] = moment.tensor
            if isinstance(objects[name], torch.optim.Optimizer):
                _own_kept_tensors(objects[name], loaded_memory)
        prefix = f"rng/rank-{trial.rank}/"
        streams = {path[len(prefix):]: loaded.bytes_of(tensor) for path, tensor in stored.items()
                   if path.startswith(prefix)} if restore_rng else {}
        if restore_rng:
            _rng.restore(streams, loaded.path)
        own = trial.checkpoint_dir is not None and os.path.realpath(
            os.path.dirname(loaded.path)) == os.path.realpath(trial.checkpoint_dir)
        return _Loaded(loaded.step, loaded.path, streams, not own)


def _own_kept_tensors(optimizer: torch.optim.Optimizer, memory: list[tuple[int, int]]) -> None:
    """Replaces every tensor of the optimizer's state and parameter groups that still lies in
    `memory` (the loaded file's, about to be freed) by a copy. PyTorch 2.x's load_state_dict
    keeps 'step' and each tensor it need not cast or move; a CUDA model's moments were moved
    to the device already and are left alone."""
    memory = sorted(memory)
    starts = [low for low, _ in memory]

    def inside(tensor: torch.Tensor) -> bool:  # a binary search: models have thousands of tensors
        at = bisect.bisect_right(starts, tensor.data_ptr()) - 1
        return tensor.numel() > 0 and at >= 0 and tensor.data_ptr() < memory[at][1]

    def owned(tensor: torch.Tensor) -> torch.Tensor:
        return tensor.clone() if inside(tensor) else tensor
    for state in optimizer.state.values():
        _map_tensors(state, owned)
    for group in optimizer.param_groups:
        for key in group:
            if key != "params":
                group[key] = _map_tensors(group[key], owned)


def _map_tensors(value: Any, change: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    """`value` with every tensor in it replaced by change(tensor): dicts and lists are changed
    in place, tuples (named ones too) rebuilt."""
    if isinstance(value, torch.Tensor):
        return change(value)
    if isinstance(value, dict):
        for key in value:
            value[key] = _map_tensors(value[key], change)
        return value
    if isinstance(value, list):
        value[:] = [_map_tensors(item, change) for item in value]
        return value
    if isinstance(value, tuple):
        items = [_map_tensors(item, change) for item in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    return value


def _all_on_cpu(module: torch.nn.Module) -> bool:
    return all(tensor.device.type == "cpu"
               for tensor in itertools.chain(module.parameters(), module.buffers()))


def _all_on_current_cuda(tensors: Any) -> bool:
    """Whether `tensors` (a module's, or a list) are all on the current CUDA device."""
    if not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return False
    here = torch.device("cuda", torch.cuda.current_device())
    if isinstance(tensors, torch.nn.Module):
        tensors = itertools.chain(tensors.parameters(), tensors.buffers())
    tensors = list(tensors)
    return bool(tensors) and all(tensor.device == here for tensor in tensors)


class _DeferredReader:
    """Reads the tensors the library deferred (verified, still in the file) into memory chosen
    for each: a target's own tensor when it can take the stored bytes as they are (CPU,
    contiguous, the same dtype and shape), else a new CPU tensor."""

    def __init__(self, loaded, stored: dict, waiting: dict):
        self._loaded, self._stored, self._waiting = loaded, stored, waiting
        # Reads queued by read(later=True): (stored, memory it goes into, objects' name).
        self._queued: list[tuple[Any, torch.Tensor, str]] = []

    def is_waiting(self, tensor: Any) -> bool:
        return isinstance(tensor, torch.Tensor) and id(tensor) in self._waiting and \
            tensor is self._waiting[id(tensor)][0]

    def read(self, stand_in: torch.Tensor, into: torch.Tensor | None, name: str, *,
             later: bool = False) -> torch.Tensor:
        """The tensor `stand_in` stands for, read into `into` when it fits, else into a new
        CPU tensor; with `later`, its bytes arrive at finish(), read with every other queued one
        (a model of many small tensors is then read on several threads)."""
        _, path, dtype = self._waiting[id(stand_in)]
        found = self._stored[path]
        if into is None or not _tensors.fits_stored(into, stand_in, found.nbytes):
            into, memory = _tensors.fresh_for(found.dtype, found.shape, dtype, path)
        else:
            memory = into
        self._queued.append((found, memory, name))
        if not later:
            self.finish()
        return into

    def finish(self) -> None:
        """Reads every queued tensor, all in one call to the library."""
        queued, self._queued = self._queued, []
        try:
            self._loaded.read_many([(found, memory.data_ptr(), found.nbytes)
                                    for found, memory, _ in queued])
        except Error as error:
            names = " and ".join(f"objects[{name!r}]"
                                 for name in dict.fromkeys(name for _, _, name in queued))
            raise ConfigError(f"dlx.torch: {self._loaded.path} could not be read into "
                              f"{names} after it was verified ({error}); the objects "
                              f"may hold part of the checkpoint now: call load_state again"
                              ) from error

    def read_any(self, name: str, into: Any = None, *,
                 later: bool = False) -> Callable[[torch.Tensor], torch.Tensor]:
        """A _map_tensors change that reads each waiting tensor (into `into` when it is a
        tensor that fits; with `later`, at finish()) and leaves any other tensor as it is."""
        def change(tensor: torch.Tensor) -> torch.Tensor:
            if not self.is_waiting(tensor):
                return tensor
            return self.read(tensor, into if isinstance(into, torch.Tensor) else None, name,
                             later=later)
        return change


def _read_in_place(reader: _DeferredReader, module: torch.nn.Module, state: Any,
                   name: str) -> Any:
    """`state` (a module's, checked) with every placeholder replaced by its tensor read from the
    file: into the module's own tensor of that key when it can take the bytes as they are (a
    CPU model: load_state_dict then finds them in place), else into a new CPU tensor that
    load_state_dict copies or casts (another dtype). The module's own
    tensors are its Parameters and buffers themselves (keep_vars), so that load_state_dict's
    copy_ of each into itself is PyTorch's no-op, not a second pass over the model's memory."""
    own = module.state_dict(keep_vars=True)
    if isinstance(state, dict):  # a state dict: each key's own tensor may take its bytes
        for key in state:
            value = state[key]
            state[key] = _map_tensors(value, reader.read_any(
                name, own.get(key) if isinstance(value, torch.Tensor) else None, later=True))
        return state
    return _map_tensors(state, reader.read_any(name, later=True))


def _optimizer_read_in_place(optimizer: Any, into_gpu: bool) -> str | None:
    """Where `optimizer`'s per-parameter state is read straight into tensors it then keeps
    (_read_moments): "cpu" when every parameter is on the CPU, "cuda" when with
    DLX_TORCH_CUDA_IO=library every one is on the current GPU (placed by the load, on the host
    or the device: _Placement); None otherwise, and for anything but PyTorch's own load_state_dict with no
    load hooks (a sharded or wrapping optimizer may use the tensors it is given; hooks would see
    the stand-ins)."""
    if not isinstance(optimizer, torch.optim.Optimizer) or \
            type(optimizer).load_state_dict is not torch.optim.Optimizer.load_state_dict:
        return None
    if getattr(optimizer, "_optimizer_load_state_dict_pre_hooks", None) or \
            getattr(optimizer, "_optimizer_load_state_dict_post_hooks", None):
        return None
    params = [param for group in optimizer.param_groups for param in group["params"]]
    if params and all(param.device.type == "cpu" for param in params):
        return "cpu"
    return "cuda" if into_gpu and _all_on_current_cuda(params) else None


class _Placement:
    """Trial.load's `place` and `place_on_device`: new tensors the library reads and verifies
    tensors into, which the objects then take, so that the file is read once and nothing is
    copied through the library's memory:
    - `place` (host): a CPU optimizer's per-parameter state, each tensor stored at
      <optimizer>/state/<index>/<key> (all keys but 'step'), into a new CPU tensor of its stored
      shape; the optimizer keeps it (_read_moments);
    - `on_device` (DLX_TORCH_CUDA_IO=library): the same for a CUDA optimizer, into a new tensor
      on the current GPU, and every tensor of a CUDA module (<module>/...), which load_state_dict
      then copies into the module's own on the device. GPU memory holds the module's tensors
      twice until the load returns, as with torch.load(map_location="cuda").
    A file the load refuses (damaged: it falls back to an older one) leaves bytes in tensors
    nothing uses; they are dropped when the next file's are made."""

    def __init__(self, optimizers: list[str], gpu_modules: tuple | list = (),
                 gpu_optimizers: tuple | list = ()):
        self._prefixes = tuple(f"{name}/state/" for name in optimizers)
        self._gpu_modules = tuple(f"{name}/" for name in gpu_modules)
        self._gpu_optimizers = tuple(f"{name}/state/" for name in gpu_optimizers)
        self.tensors: dict[int, torch.Tensor] = {}  # address -> the tensor there
        self._by_name: dict[str, torch.Tensor] = {}

    @staticmethod
    def _moment_key(name: str, prefixes: tuple) -> bool:
        """Whether `name` is <optimizer>/state/<index>/<key> of one of `prefixes`, key not 'step'."""
        prefix = next((p for p in prefixes if name.startswith(p)), None)
        if prefix is None:
            return False
        index, _, key = name[len(prefix):].partition("/")
        return index.isdigit() and bool(key) and "/" not in key and key != "step"

    def _new(self, name: str, stored: str, shape: tuple[int, ...], nbytes: int,
             device: torch.device | None) -> int:
        element = _tensors.element_dtype(stored)
        if element is None or nbytes == 0:
            return 0
        # Asked again for a name: the load refused the file it placed the last one for. That
        # tensor goes now, so that falling back holds one file's tensors, not two.
        refused = self._by_name.pop(name, None)
        if refused is not None:
            self.tensors.pop(refused.data_ptr(), None)
        tensor = torch.empty(shape, dtype=element, device=device)
        if tensor.numel() * tensor.element_size() != nbytes:
            return 0
        self.tensors[tensor.data_ptr()] = self._by_name[name] = tensor
        return tensor.data_ptr()

    def __call__(self, name: str, stored: str, shape: tuple[int, ...], nbytes: int) -> int:
        if not self._moment_key(name, self._prefixes):
            return 0
        return self._new(name, stored, shape, nbytes, None)

    def on_device(self, name: str, stored: str, shape: tuple[int, ...], nbytes: int) -> int:
        if not name.startswith(self._gpu_modules) and \
                not self._moment_key(name, self._gpu_optimizers):
            return 0
        return self._new(name, stored, shape, nbytes,
                         torch.device("cuda", torch.cuda.current_device()))

    def owns(self, tensor: Any) -> bool:
        return isinstance(tensor, torch.Tensor) and tensor.numel() > 0 and \
            tensor.data_ptr() in self.tensors


class _Moment(NamedTuple):
    param: torch.Tensor
    key: str
    tensor: torch.Tensor


def _read_moments(reader: _DeferredReader, placement: _Placement,
                  optimizer: torch.optim.Optimizer, state: dict,
                  name: str) -> tuple[dict, list[_Moment]]:
    """Takes an optimizer's per-parameter state tensors (Adam's exp_avg and exp_avg_sq, SGD's
    momentum_buffer: all but 'step') as new tensors of the dtype and device its load_state_dict
    would cast them to, and puts empty stand-ins in their place in `state`: a CPU optimizer's as
    the load placed them (_Placement, cast only if the parameters' dtype changed), a CUDA one's
    (DLX_TORCH_CUDA_IO=library) as the load placed them on the device.
    load_state_dict deep-copies what it is given (PyTorch 1.x: all of it), so it then copies
    only the stand-ins and the small values; the caller puts the tensors into optimizer.state
    afterwards (_Moment). Parameters pair up as load_state_dict pairs them: the saved groups'
    indices with the optimizer's groups' parameters, in order (checked equal in number by
    _check_optimizer). Other deferred tensors (each 'step', tensors in the groups) are read into
    new CPU tensors for load_state_dict to handle as usual."""
    saved = itertools.chain.from_iterable(group["params"] for group in state["param_groups"])
    current = itertools.chain.from_iterable(group["params"] for group in optimizer.param_groups)
    params = dict(zip(saved, current))
    moments = []
    per_param = state.get("state")
    for index, entry in (per_param.items() if isinstance(per_param, dict) else ()):
        param = params.get(index)
        if param is None or not isinstance(entry, dict):
            continue
        for key, value in entry.items():
            if key == "step" or not (reader.is_waiting(value) or placement.owns(value)):
                continue
            # PyTorch's cast: a floating-point parameter's dtype, the parameter's device.
            dtype = param.dtype if param.is_floating_point() else value.dtype
            if reader.is_waiting(value):
                into = torch.empty(value.shape, dtype=dtype, device=param.device) \
                    if dtype == value.dtype else None
                value = reader.read(value, into, name)
            tensor = value.to(dtype=dtype, device=param.device)
            moments.append(_Moment(param, key, tensor))
            entry[key] = torch.empty(0, dtype=dtype)
    return _map_tensors(state, reader.read_any(name)), moments


def _check_names(path: str, structure: dict, objects: Mapping[str, Any]) -> None:
    missing = [name for name in objects if name not in structure]
    extra = [name for name in structure if name not in objects]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"it has no {', '.join(map(repr, missing))} (saved without "
                         f"{'it' if len(missing) == 1 else 'them'}?)")
        if extra:
            parts.append(f"it also holds {', '.join(map(repr, extra))}, which objects does not "
                         f"name (pass {'it' if len(extra) == 1 else 'them'} too)")
        raise ConfigError(f"dlx.torch: {path} does not hold the objects load_state was given: "
                          f"{'; '.join(parts)}. Nothing was restored. Save and load the same names")


def _check_module(path: str, name: str, module: torch.nn.Module, state: dict) -> None:
    expected = module.state_dict()
    missing = [key for key in expected if key not in state]
    unexpected = [key for key in state if key not in expected]
    shapes = [f"{key} {tuple(state[key].shape)} vs {tuple(value.shape)}"
              for key, value in expected.items()
              if key in state and isinstance(value, torch.Tensor) and
              isinstance(state[key], torch.Tensor) and state[key].shape != value.shape]
    if missing or unexpected or shapes:
        details = [f"missing {missing[:5]}" if missing else "",
                   f"unexpected {unexpected[:5]}" if unexpected else "",
                   f"shapes differ: {'; '.join(shapes[:5])}" if shapes else ""]
        raise ConfigError(f"dlx.torch: objects[{name!r}] does not match its state in {path} "
                          f"({', '.join(d for d in details if d)}); nothing was restored: build the "
                          f"model as it was when it was saved")


def _check_optimizer(path: str, name: str, optimizer: torch.optim.Optimizer, state: Any) -> None:
    groups = state.get("param_groups") if isinstance(state, dict) else None
    if not isinstance(groups, list):
        raise ConfigError(f"dlx.torch: {path} holds no optimizer state for objects[{name!r}]")
    saved = [len(group.get("params", [])) for group in groups]
    current = [len(group["params"]) for group in optimizer.param_groups]
    if saved != current:
        raise ConfigError(f"dlx.torch: objects[{name!r}] has parameter groups of {current} "
                          f"parameters; {path} saved groups of {saved}. Nothing was restored: "
                          f"build the optimizer over the same parameters as when it was saved")


def _check_plain(target: Any, state: Any, name: str) -> None:
    fits = (isinstance(target, torch.Tensor) and isinstance(state, torch.Tensor) and
            state.shape == target.shape and state.dtype == target.dtype) or \
        (isinstance(target, dict) and isinstance(state, dict)) or \
        (isinstance(target, list) and isinstance(state, (list, tuple)))
    if not fits:
        raise ConfigError(f"dlx.torch: objects[{name!r}] is {_describe(target)}, which load_state "
                          f"cannot restore in place to the saved {_describe(state)} (a tensor is "
                          f"restored into its own shape and dtype, a dict into a dict, a list into "
                          f"a list); nothing was restored")


def _restore(target: Any, state: Any, name: str, path: str) -> None:
    if callable(getattr(target, "load_state_dict", None)) and \
            callable(getattr(target, "state_dict", None)):
        try:
            target.load_state_dict(state)
        except (RuntimeError, KeyError, ValueError, TypeError) as error:
            raise ConfigError(f"dlx.torch: objects[{name!r}].load_state_dict() refused its state "
                              f"from {path}: {error}") from error
        return
    _restore_plain(target, state, name)


def _restore_plain(target: Any, state: Any, name: str) -> None:
    """A plain container restored in place: dicts and lists get the saved entries, tensors the
    saved values (copied into them when shape and dtype allow, else replaced)."""
    if isinstance(target, torch.Tensor):
        if not isinstance(state, torch.Tensor) or state.shape != target.shape or \
                state.dtype != target.dtype:
            raise ConfigError(f"dlx.torch: objects[{name!r}] is a tensor of {tuple(target.shape)} "
                              f"{target.dtype}; the checkpoint holds "
                              f"{_describe(state)}: a tensor is restored only into its own shape")
        with torch.no_grad():
            target.copy_(state)
        return
    if isinstance(target, dict) and isinstance(state, dict):
        # The saved entries in the saved order; a tensor that fits keeps its identity.
        previous = dict(target)
        target.clear()
        for key, value in state.items():
            current = previous.get(key)
            if isinstance(current, torch.Tensor) and isinstance(value, torch.Tensor) and \
                    current.shape == value.shape and current.dtype == value.dtype:
                with torch.no_grad():
                    current.copy_(value)
                value = current
            target[key] = value
        return
    if isinstance(target, list) and isinstance(state, (list, tuple)):
        target[:] = list(state)
        return
    raise ConfigError(f"dlx.torch: objects[{name!r}] is a {type(target).__name__}, which load_state "
                      f"cannot change in place to the saved {_describe(state)}; pass a dict or list")


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor of {tuple(value.shape)} {value.dtype}"
    return f"a {type(value).__name__}"


from .loop import Loop  # noqa: E402  (loop.py uses the functions above)
