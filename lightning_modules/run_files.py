"""Files of a run folder, written atomically: a temporary file in the same folder, then a rename.

An interrupted run therefore never leaves a half-written file that looks whole. Arrays go to
safetensors (memory-mappable, no pickle); checkpoints are read with `weights_only=True`.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch
from pytorch_lightning.plugins.io import TorchCheckpointIO
from safetensors.torch import save_file
from torch import Tensor


class RunFileError(RuntimeError):
    """A run file is missing or unreadable; the message names the file and the fix."""


def write_atomic(path: str | os.PathLike, write: Callable[[str], None]) -> Path:
    """Call `write(temporary_path)`, then rename the temporary file to `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(handle)
    try:
        write(temporary)
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


def load_checkpoint(path: str | os.PathLike) -> dict:
    """A Lightning checkpoint read with `weights_only=True`, or one clear `RunFileError`."""
    path = Path(path)
    if not path.is_file():
        raise RunFileError(
            f"Checkpoint {path} does not exist: train the run first "
            "(python -m experiments fit --config ...) or pass an existing --ckpt_path."
        )
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises several types for a damaged file
        raise RunFileError(
            f"Checkpoint {path} is corrupt or not a checkpoint ({type(error).__name__}): "
            "delete it and train again, or pass another --ckpt_path."
        ) from None


class AtomicCheckpointIO(TorchCheckpointIO):
    """Lightning checkpoints written to a temporary file and renamed into place."""

    def save_checkpoint(self, checkpoint, path, storage_options=None) -> None:
        write_atomic(path, lambda temporary: torch.save(checkpoint, temporary))

    def load_checkpoint(self, path, map_location=None, weights_only=None):
        return load_checkpoint(path)
