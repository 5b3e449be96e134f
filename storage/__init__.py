"""The ground floor: atomic writes, safetensors, weights-only checkpoint loading, the run-folder
lock (:mod:`storage.files`), Lightning's checkpoints written atomically
(:mod:`storage.checkpoint_io`), the one definition of a run folder's layout (:mod:`storage.layout`),
the reader of a run folder (:mod:`storage.run_folder`), a fit's replacement of the run in its
folder as one transaction (:mod:`storage.replacement`) and the check that a class path read from a
file is trusted (:mod:`storage.trusted_classes`). It imports no other package of the suite (the
trusted classes are imported by path, when a run is rebuilt).

The names below are imported from their modules when first used, so that a command reading only
the layout (`storage.layout`) does not import torch's checkpoint machinery or Lightning."""

from importlib import import_module

_HOMES = {
    "AtomicCheckpointIO": "storage.checkpoint_io",
    "RunFileError": "storage.files",
    "RunFolderLock": "storage.files",
    "load_checkpoint": "storage.files",
    "save_tensors_atomic": "storage.files",
    "write_atomic": "storage.files",
    "write_text_atomic": "storage.files",
    "RunLayout": "storage.layout",
    "RunFolder": "storage.run_folder",
}
__all__ = sorted(_HOMES)


def lazy_names(package: str, homes: dict[str, str]):
    """A package's module `__getattr__` (PEP 562) that imports each name of `homes` (name ->
    its module) from its module when first used, so that importing the package, or one light
    module of it, imports none of the heavy ones."""

    def __getattr__(name: str):
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(homes[name]), name)

    return __getattr__


__getattr__ = lazy_names("storage", _HOMES)
