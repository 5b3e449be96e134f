"""The ground floor: atomic writes, safetensors, weights-only checkpoint loading, the run-folder
lock (:mod:`storage.files`), the one definition of a run folder's layout (:mod:`storage.layout`),
the reader of a run folder (:mod:`storage.run_folder`), a fit's replacement of the run in its
folder as one transaction (:mod:`storage.replacement`) and the check that a class path read from a
file is trusted (:mod:`storage.trusted_classes`). It imports no other package of the suite (the
trusted classes are imported by path, when a run is rebuilt)."""

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
from storage.run_folder import RunFolder

__all__ = [
    "AtomicCheckpointIO",
    "RunFileError",
    "RunFolder",
    "RunFolderLock",
    "RunLayout",
    "load_checkpoint",
    "save_tensors_atomic",
    "write_atomic",
    "write_text_atomic",
]
