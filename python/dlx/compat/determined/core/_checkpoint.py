# SPDX-License-Identifier: Apache-2.0
"""CheckpointContext: Determined's checkpoints are directories of the user's files; dlx keeps
each as one checkpoint file of the trial (checkpoint_dir/step-<steps_completed>.h5), the files
as byte tensors under "determined/files/<path>" and the metadata as JSON in its state. So it
is published atomically, checksummed, verified when read, kept or deleted by the experiment's
save_* rules, and found again after a requeue. The storage id is that file's path."""
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


class CheckpointContext:
    def __init__(self, session: Session, is_chief: bool) -> None:
        self._session = session
        self._is_chief = is_chief

    # ---- storing

    def _save_directory(self, directory: str, metadata: Dict[str, Any],
                        selector: Optional[Callable[[str], bool]] = None) -> str:
        import numpy

        trial = self._session.trial
        if not trial.checkpoint_dir:
            raise dlx.ConfigError("determined: this process is not a dlx trial with a checkpoint directory "
                                  "(run it under sbatch --dl-experiment=..., or set DLX_CHECKPOINT_DIR)")
        steps = _steps_completed(metadata)
        tensors = {}
        for top, _, names in os.walk(directory):
            for name in sorted(names):
                path = os.path.join(top, name)
                relative = os.path.relpath(path, directory)
                if selector is not None and not selector(relative):
                    continue
                with open(path, "rb") as f:
                    tensors[FILES + relative] = numpy.frombuffer(f.read(), dtype=numpy.uint8)
        trial.save_checkpoint(steps, tensors, state={METADATA: json.dumps(metadata)})
        self._session.last_stored_step = steps
        return os.path.join(trial.checkpoint_dir, f"step-{steps}.h5")

    @contextlib.contextmanager
    def store_path(self, metadata: Dict[str, Any], *, shard: bool = False) -> Iterator[Tuple[pathlib.Path, str]]:
        """A fresh directory to write the checkpoint's files into, and its storage id; the files
        become the checkpoint when the block ends (chief only, as in Determined without shard)."""
        if shard:
            raise NotImplementedError("determined on dlx: sharded checkpoints (shard=True) are not supported; "
                                      "write the files on the chief (shard=False), or use dlx.torch.save_state")
        steps = _steps_completed(metadata)
        storage_id = os.path.join(self._session.trial.checkpoint_dir or "", f"step-{steps}.h5")
        with tempfile.TemporaryDirectory(prefix="dlx-determined-") as directory:
            yield pathlib.Path(directory), storage_id
            self._save_directory(directory, metadata)

    def upload(self, ckpt_dir: Any, metadata: Dict[str, Any], *, shard: bool = False,
               selector: Optional[Callable[[str], bool]] = None) -> str:
        if shard:
            raise NotImplementedError("determined on dlx: sharded checkpoints (shard=True) are not supported")
        return self._save_directory(os.fspath(ckpt_dir), metadata, selector)

    # ---- reading

    def _load(self, storage_id: str) -> dlx.Checkpoint:
        resumed = self._session.resume_checkpoint
        if resumed is not None and os.path.abspath(resumed.path) == os.path.abspath(storage_id):
            return resumed  # loaded once for get_cluster_info().latest_checkpoint
        self._session.trial.wait_for_checkpoint()  # a store of this process may still be writing it
        return self._session.trial.open_checkpoint(storage_id)

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
