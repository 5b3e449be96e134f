"""What `python -m experiments fit|validate|test --ckpt_path <checkpoint>` accepts.

The config (YAML and command line) says what is trained; the checkpoint only brings the state of
that model. So the checkpoint must be of the configured model class, with the configured
hyperparameters (sizes above all), and of the configured DataModule class; otherwise one error
names what differs and how to resume. No class the checkpoint names is imported: it is compared
as text with the configured one, and refused if it is neither that one nor the suite's
(`storage.trusted_classes`).
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from jsonargparse import Namespace

from storage import RunLayout
from storage.files import RunFileError
from storage.trusted_classes import check_class_paths


def plain(value: object) -> object:
    """`value` with tuples as lists and Namespaces as dicts, for comparing a checkpoint's
    hyperparameters with a parsed config."""
    if isinstance(value, Namespace):
        value = value.as_dict()
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value


def _class_of(configured: Namespace) -> str:
    return configured.get("class_path") if isinstance(configured, Namespace) else None


def _same_class(recorded: object, configured: str | None) -> bool:
    """Whether two class paths name the same class, compared as text: a DataModule re-exported
    by its package (`datamodules.X`) is the same as its module's (`datamodules.x.X`)."""
    if not isinstance(recorded, str) or not configured:
        return False
    if recorded == configured:
        return True
    (recorded_package, *_, recorded_name) = recorded.split(".")
    (configured_package, *_, configured_name) = configured.split(".")
    return (recorded_package, recorded_name) == (configured_package, configured_name)


def _fix(ckpt_path: str) -> str:
    config = RunLayout(Path(ckpt_path).resolve().parent.parent).config
    own = f"--config {config}" if config.is_file() else "the config it was trained with"
    return f"resume with {own} and the overrides it was trained with, or another --ckpt_path"


def check_resume(
    checkpoint: dict, config: Namespace, ckpt_path: str, linked: Collection[str] = ()
) -> None:
    """Refuse `checkpoint` unless it is of the model (class and hyperparameters) and DataModule
    class that `config` (one subcommand's parsed config) configures. `linked`: hyperparameters
    the model takes from its DataModule, compared when the DataModule is built."""
    model = checkpoint.get("hyper_parameters") or {}
    data = checkpoint.get("datamodule_hyper_parameters") or {}
    configured = _class_of(config.model)
    check_class_paths([model, data], ckpt_path, trusted=[configured] if configured else [])
    recorded = model.get("_class_path")
    if recorded is not None and not _same_class(recorded, configured):
        raise RunFileError(
            f"{ckpt_path} is a checkpoint of {recorded}, but the config trains {configured}: "
            f"{_fix(ckpt_path)}."
        )
    data_class = data.get("_class_path")
    if data_class is not None and not _same_class(data_class, _class_of(config.data)):
        raise RunFileError(
            f"{ckpt_path} was trained on {data_class}, but the config gives "
            f"{_class_of(config.data)}: {_fix(ckpt_path)}."
        )
    arguments = plain(config.model.get("init_args") or {})
    differing = [
        f"{name}={plain(model[name])!r} (config: {value!r})"
        for name, value in sorted(arguments.items())
        if name in model and name not in linked and plain(model[name]) != value
    ]
    if differing:
        raise RunFileError(
            f"{ckpt_path} was trained with {', '.join(differing)}: a resumed run keeps its "
            f"model; {_fix(ckpt_path)}."
        )
