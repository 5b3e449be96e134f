"""What `python -m experiments fit|validate|test --ckpt_path <checkpoint>` accepts, and how a
run folder, received from anyone, is resumed (`fit --resume <run>`).

The config (YAML and command line) says what is trained; the checkpoint only brings the state of
that model. So the checkpoint must be of the configured model class, with the configured
hyperparameters (sizes above all), its weights of the model's names and shapes, and of the
configured DataModule class; a fit's checkpoint must also hold the training state (optimizer
states, loops, step and epoch). Otherwise one error names what differs and how to resume. No class
the checkpoint names is imported: it is compared as text with the configured one, and refused if
it is neither that one nor the suite's (`storage.trusted_classes`).

A run folder is data, never code: a `config.yaml` read from a run folder (`--resume <run>`, or a
`--config` inside a run folder) is checked the same way before jsonargparse reads it, so a class
it names is imported only when it is the suite's, Lightning's callbacks, torch's optimisers, or
named with `--trust-class`.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from pathlib import Path

from jsonargparse import Namespace
from torch import nn

from storage import RunLayout
from storage.files import RunFileError, read_own_yaml
from storage.replacement import settle_replacement
from storage.trusted_classes import check_class_paths, check_received_config

TRAINING_STATE = {"optimizer_states": list, "loops": dict, "global_step": int, "epoch": int}
"""What a checkpoint a fit resumes from must hold besides its weights, and of which type."""


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
    run = RunLayout(Path(ckpt_path).absolute().parent.parent)
    if run.config.is_file():
        return f"resume the run with python -m experiments fit --resume {run.path}"
    return "resume with the config it was trained with, or another --ckpt_path"


def check_resume(
    checkpoint: dict,
    config: Namespace,
    ckpt_path: str,
    linked: Collection[str] = (),
    trusted: Collection[str] = (),
) -> None:
    """Refuse `checkpoint` unless it is of the model (class and hyperparameters) and DataModule
    class that `config` (one subcommand's parsed config) configures. `linked`: hyperparameters
    the model takes from its DataModule, compared when the DataModule is built; `trusted`: class
    paths the user named (`--trust-class`)."""
    model = checkpoint.get("hyper_parameters") or {}
    data = checkpoint.get("datamodule_hyper_parameters") or {}
    if not isinstance(model, dict) or not isinstance(data, dict):
        raise RunFileError(
            f"{ckpt_path} is damaged (its hyperparameters are not a mapping): {_fix(ckpt_path)}."
        )
    configured = _class_of(config.model)
    trusted = [*trusted, configured] if configured else list(trusted)
    check_class_paths([model, data], ckpt_path, trusted)
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


def check_training_state(checkpoint: dict, ckpt_path: str) -> None:
    """Refuse a checkpoint a fit cannot resume from (a weights-only one, a damaged one)."""
    wrong = [
        name
        for name, kind in TRAINING_STATE.items()
        if not isinstance(checkpoint.get(name), kind) or isinstance(checkpoint.get(name), bool)
    ]
    if wrong:
        raise RunFileError(
            f"{ckpt_path} lacks the training state a fit resumes from ({', '.join(wrong)} "
            "missing or of the wrong type; e.g. a weights-only checkpoint): resume from the run's "
            "checkpoints/last.ckpt, or train its weights into a new run with the LoadWeights "
            "callback."
        )


def check_weights(checkpoint: dict, model: nn.Module, ckpt_path: str) -> None:
    """Refuse a checkpoint whose weights are not of `model`'s names and shapes."""
    own = model.state_dict()
    if not own:  # a model that builds its layers later: Lightning's load says what is wrong
        return
    state = checkpoint["state_dict"]
    differing = sorted(set(own) ^ set(state))
    differing += [n for n in own if n in state and tuple(own[n].shape) != tuple(state[n].shape)]
    if differing:
        shown = ", ".join(
            f"{n} {tuple(state[n].shape) if n in state else 'missing'} "
            f"(model: {tuple(own[n].shape) if n in own else 'none'})"
            for n in differing[:4]
        )
        raise RunFileError(
            f"{ckpt_path} holds weights of another model ({shown}): a resumed run keeps its "
            f"model; {_fix(ckpt_path)}."
        )


def in_run_folder(config: Path) -> bool:
    """`config` lies in a run folder (beside its checkpoints, metrics or lock)."""
    layout = RunLayout(config.parent)
    return any(os.path.lexists(p) for p in (layout.checkpoints, layout.metrics, layout.lock))


def check_run_config(config: Path, trusted: Collection[str]) -> None:
    """Refuse a run folder's `config.yaml` (read as data, not through a link) that names code or
    another file (`storage.trusted_classes.check_received_config`), before jsonargparse imports
    or reads anything it names."""
    settings = read_own_yaml(
        config, "resume from a run folder written by python -m experiments fit."
    )
    check_received_config(settings, config, trusted)


def _option(arguments: list[str], name: str) -> list[str]:
    """Remove every `name VALUE` and `name=VALUE` from `arguments`; returns the values."""
    values, index = [], 0
    while index < len(arguments):
        argument = arguments[index]
        if argument == name and index + 1 < len(arguments):
            values.append(arguments.pop(index + 1))
            arguments.pop(index)
        elif argument.startswith(name + "="):
            values.append(arguments.pop(index).split("=", 1)[1])
        else:
            index += 1
    return values


def config_values(arguments: Sequence[str]) -> list[str]:
    """The values of every `--config` in the command-line `arguments` (`--config X` and
    `--config=X`), in order; `arguments` stay as they are."""
    return _option(list(arguments), "--config")


def received_arguments(arguments: Sequence[str]) -> tuple[list[str], Path | None, list[str]]:
    """The command line with `--resume RUN` spelled out (`--config RUN/config.yaml ... --ckpt_path
    RUN/checkpoints/last.ckpt`) and `--trust-class CLASS` taken out, every config inside a run
    folder checked (`check_run_config`); returns (arguments, the resumed run, trusted classes)."""
    arguments = list(arguments)
    trusted = _option(arguments, "--trust-class")
    resumed = _option(arguments, "--resume")
    run = Path(resumed[-1]).absolute() if resumed else None
    if run is not None:
        settle_replacement(run, purpose="resume it")
        if arguments[:1] != ["fit"] or any(
            a.split("=")[0] in ("--config", "--ckpt_path") for a in arguments
        ):
            raise RunFileError(
                "--resume reads the run's own config.yaml and checkpoints/last.ckpt: write "
                "python -m experiments fit --resume RUN [--trainer.max_epochs N ...] without "
                "--config or --ckpt_path."
            )
        layout = RunLayout(run)
        if not layout.config.is_file() or not layout.checkpoint("last").is_file():
            raise RunFileError(
                f"{run} is not a run folder to resume (it needs config.yaml and "
                "checkpoints/last.ckpt): give the folder python -m experiments fit wrote."
            )
        arguments[1:1] = ["--config", str(layout.config)]
        arguments += ["--ckpt_path", str(layout.checkpoint("last"))]
    for config in map(Path, config_values(arguments)):
        if in_run_folder(config):
            settle_replacement(config.parent, purpose="read its config")
            check_run_config(config, trusted)
    return arguments, run, trusted
