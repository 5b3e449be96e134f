"""Class paths read from files, resolved only against the suite's classes and the user's.

A Lightning checkpoint records the class that trained it (`hyper_parameters._class_path`) and its
DataModule's (`datamodule_hyper_parameters._class_path`); rebuilding a run imports those classes
and calls them with the checkpoint's other values. Researchers exchange checkpoints, so a
checkpoint must be data: a class path read from a file is imported only when it names a class of
the suite (a module under one of `SUITE_PACKAGES`, resolving to a subclass of the base asked for)
or one the user named on the command line (`python -m probes ... --trust-class pkg.Model`, the
model class of `python -m experiments fit --config ...`). Anything else (`os.system`, a module
that acts when imported) is refused before anything is imported or called. Lightning's own
`load_from_checkpoint` keeps a list of the same kind (`_ALLOWED_INSTANTIATORS`); this module
covers the paths the suite reads itself, which that list does not.
"""

from __future__ import annotations

import importlib
from collections.abc import Collection, Iterator

from storage.files import RunFileError

SUITE_PACKAGES = ("lightning_modules", "datamodules")
"""The packages whose classes a file may name."""

CLASS_KEYS = ("class_path", "_class_path")
"""Keys under which Lightning and jsonargparse record a class, at any depth of a config."""

CONFIG_MODULES = (
    "pytorch_lightning.callbacks",
    "lightning.pytorch.callbacks",
    "torch.optim",
    "torch.optim.lr_scheduler",
)
"""Modules whose classes (by name, directly in the module) a run's saved `config.yaml` may also
name: Lightning's callbacks (`ModelCheckpoint`, `EarlyStopping`) and torch's optimisers and
learning-rate schedulers."""

INSTANTIATORS = (
    "pytorch_lightning.cli.instantiate_module",
    "lightning.pytorch.cli.instantiate_module",
)
"""The `_instantiator` values LightningCLI records (never called by the suite)."""


class UntrustedClassError(RunFileError):
    """A file names a class that the suite will not import."""


def is_trusted(class_path: object, trusted: Collection[str] = ()) -> bool:
    """`class_path` names a module path under `SUITE_PACKAGES`, or is one of `trusted`
    (decided from the text alone: nothing is imported)."""
    if not isinstance(class_path, str):
        return False
    if class_path in trusted:
        return True
    parts = class_path.split(".")
    return len(parts) > 1 and parts[0] in SUITE_PACKAGES and all(p.isidentifier() for p in parts)


def is_trusted_in_config(class_path: object, trusted: Collection[str] = ()) -> bool:
    """`is_trusted`, or a class named directly in one of `CONFIG_MODULES`."""
    if is_trusted(class_path, trusted):
        return True
    if not isinstance(class_path, str):
        return False
    module, _, name = class_path.rpartition(".")
    return module in CONFIG_MODULES and name.isidentifier() and name[:1].isupper()


def class_paths(settings: object) -> Iterator[tuple[str, object]]:
    """Every `(key, value)` under a class key or `_instantiator`, at any depth of `settings`."""
    if isinstance(settings, dict):
        for key, value in settings.items():
            if key in CLASS_KEYS or key == "_instantiator":
                yield key, value
            yield from class_paths(value)
    elif isinstance(settings, (list, tuple)):
        for value in settings:
            yield from class_paths(value)


def refusal(where: str, class_path: object, command: str = "probes ...") -> UntrustedClassError:
    return UntrustedClassError(
        f"{where} names the class {class_path!r}, which is not one of the suite's classes "
        f"({', '.join(p + '.*' for p in SUITE_PACKAGES)}): the suite imports no other class a "
        "file names. If you trust that file and its class, name the class on the command line "
        f"(python -m {command} --trust-class CLASS)."
    )


def check_class_paths(
    settings: object, where: str, trusted: Collection[str] = (), config: bool = False
) -> None:
    """Refuse `settings` (a checkpoint's hyperparameters or, with `config`, a run's saved
    `config.yaml`, nested to any depth) when a class path in it is neither the suite's (nor, in a
    config, one of `CONFIG_MODULES`) nor `trusted`; nothing is imported."""
    accepted = is_trusted_in_config if config else is_trusted
    command = "experiments fit ..." if config else "probes ..."
    for key, value in class_paths(settings):
        if key == "_instantiator":
            if value not in INSTANTIATORS:
                raise refusal(where, value, command)
        elif not accepted(value, trusted):
            raise refusal(where, value, command)


def resolve_class(
    class_path: object, base: type, where: str, trusted: Collection[str] = ()
) -> type:
    """The class `class_path` names, imported only if it is trusted (`is_trusted`) and returned
    only if it is a subclass of `base`; otherwise one `UntrustedClassError`."""
    if not is_trusted(class_path, trusted):
        raise refusal(where, class_path)
    module, _, name = class_path.rpartition(".")
    try:
        found = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        raise RunFileError(
            f"{where} names the class {class_path!r}, which does not exist in this version of "
            "the suite: use a run trained by it."
        ) from None
    if not (isinstance(found, type) and issubclass(found, base)):
        raise UntrustedClassError(
            f"{where} names {class_path!r} as its {base.__name__}, but it is not one: the suite "
            "calls no other object a file names."
        )
    return found
