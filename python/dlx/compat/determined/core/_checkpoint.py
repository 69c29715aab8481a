# SPDX-License-Identifier: Apache-2.0
"""CheckpointContext: Determined's checkpoints are directories of the user's files; dlx keeps
each as one checkpoint file of the trial (checkpoint_dir/step-<steps_completed>.h5), the files
as byte tensors under "determined/files/<path>" and the metadata as JSON in its state. So it
is published atomically, checksummed, verified when read, kept or deleted by the experiment's
save_* rules, and found again after a requeue. The storage id is that file's path.

Sharded (shard=True, every rank calls): each rank writes its own files; when the block ends they
are gathered to the chief, which refuses a file name or a metadata key two ranks gave different
values for, and stores them all as one checkpoint; every rank gets its storage id (or the same
error). restore_path/download give every rank all the files."""
from __future__ import annotations

import contextlib
import enum
import json
import os
import pathlib
import shutil
import tempfile
from typing import Any, Callable, Dict, Iterator, Optional, Tuple

import dlx

from .._session import Session
from .._unsupported import RefusesUnknownAttributes
from ._distributed import DistributedContext

FILES = "determined/files/"
METADATA = "determined.metadata"


class DownloadMode(enum.Enum):
    DIRECT = "DIRECT"
    MASTER = "MASTER"
    AUTO = "AUTO"


def _steps_completed(metadata: Dict[str, Any]) -> int:
    if not isinstance(metadata, dict):
        raise dlx.ConfigError(f"determined: checkpoint metadata must be a dict, not {type(metadata).__name__}")
    steps = metadata.get("steps_completed")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise dlx.ConfigError("determined: checkpoint metadata needs \"steps_completed\": <int >= 0> (dlx names "
                              f"the checkpoint by it: step-<steps_completed>.h5); got {metadata!r}")
    return steps


def _inside(root: str, relative: str) -> str:
    """root/relative, refusing a name that leads out of root (a checkpoint is input)."""
    if relative.startswith("/") or relative == "" or any(part in ("..", "") for part in relative.split("/")):
        raise dlx.Error(f"determined: a checkpoint holds the file name {relative!r}, which leads out of "
                        "its directory: refusing to restore it")
    return os.path.join(root, relative)


def _read_files(directory: str, selector: Optional[Callable[[str], bool]]) -> Dict[str, bytes]:
    files = {}
    for top, _, names in os.walk(directory):
        for name in sorted(names):
            path = os.path.join(top, name)
            relative = os.path.relpath(path, directory)
            if selector is not None and not selector(relative):
                continue
            with open(path, "rb") as f:
                files[relative] = f.read()
    return files


def _merge_shards(parts: Any) -> Tuple[Dict[str, bytes], Dict[str, Any]]:
    """Every rank's (files, metadata) as one: a file name or metadata key two ranks gave
    different contents for is refused (Determined's rule)."""
    files: Dict[str, bytes] = {}
    metadata: Dict[str, Any] = {}
    owner: Dict[str, int] = {}
    for rank, (part_files, part_metadata) in enumerate(parts):
        for name, data in part_files.items():
            if name in files:
                raise dlx.ConfigError(f"determined: sharded checkpoint: ranks {owner[name]} and {rank} both wrote "
                                      f"{name!r}; give each rank's files their own names (e.g. with the rank in them)")
            files[name], owner[name] = data, rank
        for key, value in part_metadata.items():
            if key in metadata and metadata[key] != value:
                raise dlx.ConfigError(f"determined: sharded checkpoint: the ranks' metadata differ at {key!r} "
                                      f"({metadata[key]!r} and {value!r}); give the same value, or another key")
            metadata[key] = value
    return files, metadata


class CheckpointContext(RefusesUnknownAttributes):
    def __init__(self, session: Session, distributed: DistributedContext) -> None:
        self._session = session
        self._distributed = distributed
        self._is_chief = distributed.rank == 0

    # ---- storing

    def _save_files(self, files: Dict[str, bytes], metadata: Dict[str, Any]) -> str:
        import numpy

        trial = self._session.trial
        if not trial.checkpoint_dir:
            raise dlx.ConfigError("determined: this process is not a dlx trial with a checkpoint directory "
                                  "(run it under sbatch --dl-experiment=..., or set DLX_CHECKPOINT_DIR)")
        steps = _steps_completed(metadata)
        tensors = {FILES + name: numpy.frombuffer(data, dtype=numpy.uint8) for name, data in sorted(files.items())}
        trial.save_checkpoint(steps, tensors, state={METADATA: json.dumps(metadata)})
        self._session.last_stored_step = steps
        return os.path.join(trial.checkpoint_dir, f"step-{steps}.h5")

    def _save_directory(self, directory: str, metadata: Dict[str, Any],
                        selector: Optional[Callable[[str], bool]] = None) -> str:
        return self._save_files(_read_files(directory, selector), metadata)

    def _save_shards(self, directory: str, metadata: Dict[str, Any],
                     selector: Optional[Callable[[str], bool]] = None) -> str:
        """Collective: the chief stores every rank's files; every rank gets the storage id, or
        raises the chief's error (no rank is left waiting for a checkpoint that failed)."""
        parts = self._distributed.gather((_read_files(directory, selector), dict(metadata)))
        outcome: Tuple[str, str] = ("", "")
        if self._is_chief:
            try:
                files, merged = _merge_shards(parts)
                outcome = ("stored", self._save_files(files, merged))
            except Exception as e:  # every rank raises it below
                outcome = ("failed", str(e))
        kind, text = self._distributed.broadcast(outcome)
        if kind != "stored":
            raise dlx.ConfigError(text)
        return text

    @contextlib.contextmanager
    def store_path(self, metadata: Dict[str, Any], *, shard: bool = False) -> Iterator[Tuple[pathlib.Path, str]]:
        """A fresh directory to write the checkpoint's files into, and its storage id; the files
        become the checkpoint when the block ends: the chief's (chief only, as in Determined), or
        with shard=True every rank's (every rank calls it)."""
        steps = _steps_completed(metadata)
        storage_id = os.path.join(self._session.trial.checkpoint_dir or "", f"step-{steps}.h5")
        with tempfile.TemporaryDirectory(prefix="dlx-determined-") as directory:
            yield pathlib.Path(directory), storage_id
            if shard:
                self._save_shards(directory, metadata)
            else:
                self._save_directory(directory, metadata)

    def upload(self, ckpt_dir: Any, metadata: Dict[str, Any], *, shard: bool = False,
               selector: Optional[Callable[[str], bool]] = None) -> str:
        if shard:  # a rank with nothing to add may give ckpt_dir=None
            if ckpt_dir is None:
                with tempfile.TemporaryDirectory(prefix="dlx-determined-") as empty:
                    return self._save_shards(empty, metadata, selector)
            return self._save_shards(os.fspath(ckpt_dir), metadata, selector)
        return self._save_directory(os.fspath(ckpt_dir), metadata, selector)

    # ---- reading

    def _load(self, storage_id: str) -> dlx.Checkpoint:
        session = self._session
        resumed = session.resume_checkpoint
        if resumed is not None and os.path.abspath(resumed.path) == os.path.abspath(storage_id):
            return resumed  # loaded once for get_cluster_info().latest_checkpoint
        session.trial.wait_for_checkpoint()  # a store of this process may still be writing it
        # The trial's own resume point (get_cluster_info().latest_checkpoint, as dlx-launch named
        # it), read the first time: this run resumes from it, which trial.h5 records.
        resumes = not session.resume_noted and session.is_resume_point(storage_id)
        checkpoint = session.trial.open_checkpoint(storage_id, resumes=resumes)
        session.resume_noted = session.resume_noted or resumes
        return checkpoint

    def download(self, storage_id: str, ckpt_dir: Any, download_mode: DownloadMode = DownloadMode.AUTO, *,
                 selector: Optional[Callable[[str], bool]] = None) -> None:
        checkpoint = self._load(storage_id)
        root = os.fspath(ckpt_dir)
        for name, array in checkpoint.tensors.items():
            if not name.startswith(FILES):
                continue
            relative = name[len(FILES):]
            if selector is not None and not selector(relative):
                continue
            path = _inside(root, relative)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(array.tobytes())

    @contextlib.contextmanager
    def restore_path(self, storage_id: str, *, selector: Optional[Callable[[str], bool]] = None,
                     download_mode: DownloadMode = DownloadMode.AUTO) -> Iterator[pathlib.Path]:
        """The checkpoint's files in a temporary directory, removed when the block ends."""
        directory = tempfile.mkdtemp(prefix="dlx-determined-restore-")
        try:
            self.download(storage_id, directory, selector=selector)
            yield pathlib.Path(directory)
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    def get_metadata(self, storage_id: str) -> Dict[str, Any]:
        text = self._load(storage_id).state.get(METADATA)
        return json.loads(text) if isinstance(text, str) else {}

    def delete(self, storage_id: str) -> None:
        """Deletes one of this trial's own checkpoints (the experiment's save_* rules do the rest)."""
        directory = self._session.trial.checkpoint_dir or ""
        if os.path.dirname(os.path.abspath(storage_id)) != os.path.abspath(directory):
            raise dlx.Error(f"determined: {storage_id} is not one of this trial's checkpoints: not deleted")
        self._session.trial.wait_for_checkpoint()
        os.remove(storage_id)
