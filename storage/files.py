"""Files of a run folder, written atomically: a temporary file in the same folder, then a rename.

An interrupted run therefore never leaves a half-written file that looks whole. Arrays go to
safetensors (memory-mappable, no pickle); checkpoints are read with `weights_only=True`. A written
file gets the permissions of the process's umask, like any file the user creates. `RunFolderLock`
keeps a second process from writing into a run folder that one is writing.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import sys
from collections.abc import Callable
from pathlib import Path

import torch
from pytorch_lightning.plugins.io import TorchCheckpointIO
from safetensors.torch import save_file
from torch import Tensor

from storage.layout import RunLayout


class RunFileError(RuntimeError):
    """A run file is missing or unreadable; the message names the file and the fix."""


def write_atomic(path: str | os.PathLike, write: Callable[[str], None]) -> Path:
    """Call `write(temporary_path)`, then rename the temporary file to `path`.

    The temporary file is created with mode 0666 less the umask, as `open` would create `path`
    (`tempfile.mkstemp` makes 0600 files, which a colleague sharing the run folder cannot read).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = str(path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp")
    handle = os.open(temporary, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
    mode = os.fstat(handle).st_mode & 0o777  # 0666 less the umask
    os.close(handle)
    try:
        write(temporary)
        os.chmod(temporary, mode)  # a writer that recreates the file (safetensors) makes it 0600
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    return write_atomic(path, lambda temporary: Path(temporary).write_text(text, encoding="utf-8"))


def save_tensors_atomic(
    tensors: dict[str, Tensor], path: str | os.PathLike, metadata: dict[str, str] | None = None
) -> Path:
    """Save `tensors` (made contiguous, on CPU) to a safetensors file atomically."""
    ready = {name: t.detach().cpu().contiguous() for name, t in tensors.items()}
    return write_atomic(path, lambda temporary: save_file(ready, temporary, metadata=metadata))


def load_checkpoint(path: str | os.PathLike, fix: str = "pass another --ckpt_path") -> dict:
    """A Lightning checkpoint read with `weights_only=True`, or one clear `RunFileError` whose
    advice ends with `fix` (the way to name another checkpoint in the command at hand)."""
    path = Path(path)
    if not path.is_file():
        raise RunFileError(
            f"Checkpoint {path} does not exist: train the run first "
            f"(python -m experiments fit --config ...) or {fix}."
        )
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises several types for a damaged file
        raise RunFileError(
            f"Checkpoint {path} is corrupt or not a checkpoint ({type(error).__name__}): "
            f"delete it and train again, or {fix}."
        ) from None


class AtomicCheckpointIO(TorchCheckpointIO):
    """Lightning checkpoints written to a temporary file and renamed into place."""

    def save_checkpoint(self, checkpoint, path, storage_options=None) -> None:
        write_atomic(path, lambda temporary: torch.save(checkpoint, temporary))

    def load_checkpoint(self, path, map_location=None, weights_only=None):
        return load_checkpoint(path)


class RunFolderLock:
    """An exclusive lock on a run folder (`<run>/.lock`, `fcntl.flock`), held until `release` or
    the process ends: a second process that tries to write the same run is refused at its start,
    before it writes anything. The kernel drops the lock of a killed process, so no stale lock
    outlives a kill. Creating the lock also proves the folder writable: a read-only run root is
    one `RunFileError` here."""

    def __init__(self, run_dir: str | os.PathLike, purpose: str = "train this run"):
        self.path = RunLayout(run_dir).lock
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.handle = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o666)
        except OSError as error:
            raise RunFileError(
                f"Cannot write the run folder {self.path.parent} ({error.strerror}): choose a "
                "folder you can write to with --run.root."
            ) from None
        try:
            fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(self.handle, 4096, 0).decode("utf-8", "replace").strip()
            os.close(self.handle)
            raise RunFileError(
                f"{self.path.parent} is in use by another process ({holder or 'unknown'}): "
                f"wait for it to end before you {purpose}, or write another run (--run.variant "
                "or --seed_everything)."
            ) from None
        os.ftruncate(self.handle, 0)
        os.pwrite(self.handle, f"pid {os.getpid()}: {' '.join(sys.argv)}".encode(), 0)

    def release(self) -> None:
        if self.handle is not None:
            os.close(self.handle)
            self.handle = None
