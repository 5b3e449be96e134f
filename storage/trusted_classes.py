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

A run folder's saved `config.yaml` (`python -m experiments fit --resume RUN`, or any `--config`
inside a run folder) goes to jsonargparse, which imports more than class paths: a dotted string
given to a callable-typed argument (`LambdaCallback(on_fit_start=...)`, `LambdaLR(lr_lambda=...)`),
a class named by a config file that a value names (`data: other.yaml`), a string that holds YAML
(`data: "{class_path: ...}"`). So `check_received_config` reads the whole config as data first and
refuses, in one line and before anything is imported, a config that

- names a class (`class_path`) other than the suite's, one directly in `CONFIG_MODULES`, or one
  the user named (`--trust-class`);
- holds, at any key and at any depth (inside YAML text too), a dotted name that could be
  imported (`evil.hook`, `this.s.format`) and is neither under a key of `PLAIN_DATA` nor named by
  the user;
- names a file (`*.yaml`, `*.yml`, `*.json`, `*.jsonnet`, or any existing file beside it or in the
  working directory): a received config is read alone;
- gives a class-typed section (`model`, `data`, `optimizer`, `lr_scheduler`,
  `trainer.callbacks`) as anything but an inline mapping (a name, a file);
- gives a value to an argument of a `CONFIG_MODULES` class that takes a callable
  (`LambdaCallback`'s hooks, `LambdaLR`'s `lr_lambda`, `CyclicLR`'s `scale_fn`).

A user who wants their own callback passes it on the command line, not through a received file,
or names it with `--trust-class`.
"""

from __future__ import annotations

import importlib
import inspect
import os
from collections.abc import Collection, Iterator
from pathlib import Path

import yaml

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


def check_class_paths(settings: object, where: str, trusted: Collection[str] = ()) -> None:
    """Refuse `settings` (a checkpoint's hyperparameters, nested to any depth) when a class path
    in it is neither the suite's nor `trusted`; nothing is imported. (A run's saved
    `config.yaml`: `check_received_config`.)"""
    for key, value in class_paths(settings):
        if key == "_instantiator":
            if value not in INSTANTIATORS:
                raise refusal(where, value)
        elif not is_trusted(value, trusted):
            raise refusal(where, value)


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


# ---- a run folder's saved config.yaml, before jsonargparse reads it ----------------------------
CLASS_SECTIONS = ("model", "data", "optimizer", "lr_scheduler")
"""The top-level sections of a config that name a class: inline mappings (or null) only."""

CONFIG_SUFFIXES = (".yaml", ".yml", ".json", ".jsonnet")
"""Values ending so name a config file, which jsonargparse would load in place of a section."""

PLAIN_DATA = {
    "run": ("root", "paper", "variant"),
    **{
        f"{package}.callbacks.{callback}": names
        for package in ("pytorch_lightning", "lightning.pytorch")
        for callback, names in (
            ("ModelCheckpoint", ("dirpath", "filename", "monitor")),
            ("EarlyStopping", ("monitor",)),
        )
    },
}
"""Settings whose strings are plain data (typed `str`), never imported, so they may hold dots
(`monitor: val.loss`, `variant: v1.guided`): the `run` section's, and these classes' `init_args`."""


def is_import_path(value: str) -> bool:
    """`value` is a name jsonargparse would import (identifiers joined by dots)."""
    parts = value.split(".")
    return len(parts) > 1 and all(part.isidentifier() for part in parts)


def _received(where: str, what: str, fix: str) -> UntrustedClassError:
    return UntrustedClassError(
        f"{where} {what}: a run folder's config is data, so the suite imports and reads nothing "
        f"else it names; {fix}"
    )


def _trust_fix(name: str) -> str:
    return (
        "if you trust that file and what it names, name it on the command line "
        f"(python -m experiments fit ... --trust-class {name}), or give your own callback there "
        "instead of in the received file."
    )


def _names_a_file(value: str, folder: Path) -> bool:
    """`value` names a config file: by its suffix, or an existing file (in `folder`, the
    config's own, or the working directory; `~` expanded as jsonargparse does)."""
    if value.strip().lower().endswith(CONFIG_SUFFIXES):
        return True
    path = Path(os.path.expanduser(value.strip()))
    try:
        return (folder / path).is_file() or path.is_file()
    except (OSError, ValueError):  # a name too long for a path, a NUL byte: not a file
        return False


def _callable_parameters(class_path: str) -> set[str]:
    """The arguments of the `CONFIG_MODULES` class `class_path` typed as callables (its module,
    which the allow-list names, is imported to read them)."""
    module, _, name = class_path.rpartition(".")
    try:
        signature = inspect.signature(getattr(importlib.import_module(module), name))
    except (ImportError, AttributeError, TypeError, ValueError):  # jsonargparse names it
        return set()
    return {p.name for p in signature.parameters.values() if "Callable" in str(p.annotation)}


class _ReceivedConfig:
    """`check_received_config`'s walk over one config (a container shared by YAML anchors is
    walked once)."""

    def __init__(self, path: str | os.PathLike, trusted: Collection[str]):
        self.where, self.folder = str(path), Path(path).parent
        self.trusted = {name for name in trusted if isinstance(name, str)}
        self.seen: dict[int, object] = {}  # what it holds stays alive, so no id is reused

    def named(self, value: object) -> bool:
        return isinstance(value, str) and value in self.trusted

    def string(self, value: str, plain: bool = False) -> None:
        """Refuse a string jsonargparse could import, load as a file, or parse into settings."""
        if self.named(value):
            return
        if _names_a_file(value, self.folder):
            raise _received(
                self.where,
                f"names the file {value!r}",
                "write that setting inline in it, or give that file with --config on the command "
                "line.",
            )
        if is_import_path(value.strip()) and not plain:
            fix = (
                "give a class only as the class_path of an inline mapping."
                if is_trusted_in_config(value.strip())
                else _trust_fix(value)
            )
            raise _received(self.where, f"names {value!r}, which would be imported", fix)
        try:
            parsed = yaml.safe_load(value)  # jsonargparse parses a string that holds YAML
        except yaml.YAMLError:
            return
        if isinstance(parsed, (dict, list)) or (isinstance(parsed, str) and parsed != value):
            self.value(parsed)

    def value(self, value: object, plain: Collection[str] = ()) -> None:
        """Walk `value` to any depth; strings directly under a key of `plain` are plain data."""
        if isinstance(value, str):
            self.string(value)
        if not isinstance(value, (dict, list)) or id(value) in self.seen:
            return
        self.seen[id(value)] = value
        items = value.items() if isinstance(value, dict) else ((None, item) for item in value)
        plain_arguments = self.class_spec(value) if isinstance(value, dict) else ()
        for key, item in items:
            if isinstance(key, str) and key.startswith("__"):  # jsonargparse's own (`__path__`)
                raise _received(self.where, f"holds the key {key!r}", "remove it.")
            if key in (*CLASS_KEYS, "_instantiator"):
                continue  # checked as a class
            if isinstance(item, str) and key in plain:
                self.string(item, plain=True)
            else:
                self.value(item, plain_arguments if key == "init_args" else ())

    def class_spec(self, settings: dict) -> tuple[str, ...]:
        """Refuse the class that the mapping `settings` names (`class_path`, `_instantiator`)
        unless accepted, and any callable its `init_args` give a `CONFIG_MODULES` class; returns
        the names of its arguments that are plain data."""
        for key in (*CLASS_KEYS, "_instantiator"):
            value = settings.get(key)
            if key not in settings or self.named(value):
                continue
            accepted = (
                value in INSTANTIATORS if key == "_instantiator" else is_trusted_in_config(value)
            )
            if not accepted:
                raise refusal(self.where, value, "experiments fit ...")
        class_path = settings.get("class_path")
        if not isinstance(class_path, str) or is_trusted(class_path, self.trusted):
            return ()
        for section in ("init_args", "dict_kwargs"):
            arguments = settings.get(section) or {}
            if not isinstance(arguments, dict):
                raise _received(
                    self.where,
                    f"gives {class_path}'s {section} as {arguments!r}",
                    "write them inline as a mapping.",
                )
            for name in sorted(_callable_parameters(class_path) & set(arguments)):
                value = arguments[name]
                if isinstance(value, (str, dict, list)) and not self.named(value):
                    raise _received(
                        self.where,
                        f"gives {class_path}'s {name} the callable {value!r}",
                        _trust_fix(value)
                        if isinstance(value, str)
                        else "give that callable on the command line instead.",
                    )
        return PLAIN_DATA.get(class_path, ())

    def sections(self, settings: dict) -> None:
        """Refuse a class-typed section given as anything but an inline mapping (or null)."""
        trainer = settings.get("trainer")
        trainer = trainer if isinstance(trainer, dict) else {}
        callbacks, logger = trainer.get("callbacks"), trainer.get("logger")
        given = [(name, settings.get(name)) for name in (*CLASS_SECTIONS, "trainer", "run")]
        given += [
            ("trainer.callbacks", c)
            for c in (callbacks if isinstance(callbacks, list) else [callbacks])
        ]
        given += [("trainer.logger", c) for c in (logger if isinstance(logger, list) else [logger])]
        for name, section in given:
            if section is not None and not isinstance(section, dict):
                if name == "trainer.logger" and isinstance(section, bool):
                    continue
                raise _received(
                    self.where,
                    f"gives {name} as {section!r}, not as a mapping",
                    "write it inline (class_path, init_args).",
                )


def check_received_config(
    settings: object, path: str | os.PathLike, trusted: Collection[str] = ()
) -> None:
    """Refuse a run folder's saved config (`settings`, read as data from `path`) that would make
    jsonargparse import anything the allow-list does not name or read any other file (the rules
    of this module's docstring), with one `UntrustedClassError` naming `path`. Nothing is
    imported but a module of `CONFIG_MODULES` that the config names."""
    if settings is None:
        return
    received = _ReceivedConfig(path, trusted)
    if not isinstance(settings, dict):
        raise _received(
            received.where,
            "holds no settings (not a mapping)",
            "resume from a run folder written by python -m experiments fit.",
        )
    if isinstance(settings.get("ckpt_path"), str):  # saved by a resumed fit of an older version
        raise _received(
            received.where,
            f"names the checkpoint {settings['ckpt_path']!r} (ckpt_path)",
            "a fit reads its checkpoint from the command line: set ckpt_path to null in that file, "
            "then resume the run (python -m experiments fit --resume RUN).",
        )
    received.value({key: value for key, value in settings.items() if key != "run"})
    received.value(settings.get("run"), PLAIN_DATA["run"])
    received.sections(settings)
