"""The ground floor: atomic writes, safetensors, weights-only checkpoint loading, the run-folder
lock (:mod:`storage.files`) and the one definition of a run folder's layout
(:mod:`storage.layout`). It imports nothing of the suite."""

from storage.files import (
    AtomicCheckpointIO,
    RunFileError,
    RunFolderLock,
    load_checkpoint,
    save_tensors_atomic,
    write_atomic,
    write_text_atomic,
)
from storage.layout import RunLayout

__all__ = [
    "AtomicCheckpointIO",
    "RunFileError",
    "RunFolderLock",
    "RunLayout",
    "load_checkpoint",
    "save_tensors_atomic",
    "write_atomic",
    "write_text_atomic",
]
