"""The suite's command line: `python -m experiments fit|validate|test --config <yaml> ...`.

A thin `LightningCLI` (Lightning's `examples/pytorch/basics/autoencoder.py` style): every
experiment is a YAML config under `experiments/configs/<paper>/` and any setting can be
overridden (`--trainer.max_epochs 5 --model.hidden_size 64`). Each run gets its own folder
`<run.root>/<run.paper>/<run.variant>/seed=<seed>/` holding the resolved `config.yaml`,
`checkpoints/`, `metrics.csv`, and the `traces/` and `weights/` of the recording callbacks.
Metrics go to that CSV log and to Weights & Biases under the same names (offline unless the
environment says `WANDB_MODE=online`). After `fit`, the best checkpoint is tested (the last
weights, with a note, where no validation ran to choose one).

A run folder has one writer at a time (`RunFolderLock`, taken before anything is written, after
every check). A fit resumed with `--ckpt_path` (a path, or `last`/`best`: the run's own
`checkpoints/<tag>.ckpt`) or `--resume <run>` continues its metrics: `metrics.csv` keeps the rows
logged before the checkpoint's step and the W&B run continues under the id kept in
`<run>/wandb_run_id`. The checkpoint is data: it must be of the configured model class, sizes and
weight shapes (the config, not the checkpoint, says what is trained), and no class it names is
imported (Lightning's own `--ckpt_path` handling would merge the checkpoint's hyperparameters,
class path included, into the config). A fresh fit into a folder that holds a run is refused unless
`--run.replace true`, which replaces it as one transaction (`storage.replacement`): the new run
whole once the fit (and its test) finished, else the old run as it was; a folder that a killed
replacement left is restored by the next command on it. Paths a run keeps about itself are relative
to it, so a copied or moved run resumes with its own files.
"""

from __future__ import annotations

import errno
import math
import os
import re
import secrets
import signal
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

import torch
import yaml
from jsonargparse.typing import NonNegativeFloat
from lightning_fabric.utilities.exceptions import MisconfigurationException
from pytorch_lightning import LightningDataModule, LightningModule
from pytorch_lightning.cli import LightningArgumentParser, LightningCLI, SaveConfigCallback
from pytorch_lightning.loggers import WandbLogger
from pytorch_lightning.utilities.exceptions import SIGTERMException

from experiments.allocator import keep_freed_memory
from experiments.resume import (
    check_resume,
    check_training_state,
    check_weights,
    config_values,
    received_arguments,
)
from lightning_modules.callbacks import (
    CheckpointWithinEpochs,
    EpochInProgress,
    RandomState,
    StepsInEpochs,
)
from lightning_modules.metrics_csv import RunMetricsCSV, kept_rows
from storage import RunLayout
from storage.checkpoint_io import AtomicCheckpointIO
from storage.files import (
    FULL_DISK_ERRNOS,
    RunFileError,
    RunFolderLock,
    delete_entry,
    load_checkpoint,
    read_own_text,
    recorded_entries,
    write_text_atomic,
)
from storage.layout import RUNS_ENV, SCALE_ENV, default_run_root
from storage.replacement import drop_old_run, hold_old_run, restore_old_run, settle_replacement

LINKS = ("source_vocab_size", "target_vocab_size", "val_splits", "test_splits", "vocab_size")
"""What a model takes from its DataModule (`--data.<name>` linked to `--model.init_args.<name>`)."""


CHECKPOINT_MINUTES = 10.0
"""How often a fit writes `checkpoints/last.ckpt` inside its epochs by default
(`--run.checkpoint_minutes`): at most this much training is lost to a kill (SIGTERM writes one
at once, `CheckpointWithinEpochs`). The suite's largest model (paper 4 at the paper's setting,
130 MB with Adam's state) writes its checkpoint in 0.3-0.4 s."""


def wandb_run_id(run_dir: Path, fresh: bool) -> str:
    """The W&B run id of `run_dir`: a new one for a fresh fit, else the one it has (read from the
    run's own file, never through a link, and refused unless it is a W&B run id)."""
    path = RunLayout(run_dir).wandb_run_id
    if not fresh and os.path.lexists(path):
        run_id = read_own_text(path).strip()
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", run_id):
            raise RunFileError(
                f"{path} does not hold a W&B run id (letters, digits, _ and -, up to 64): delete "
                "it to continue under a new W&B run."
            )
        return run_id
    run_id = secrets.token_hex(4)
    write_text_atomic(path, run_id)
    return run_id


def make_loggers(
    run_dir: Path, name: str, keep_before_step: float = 0, rank_zero: bool = True
) -> list:
    """A CSV log written to `<run_dir>/metrics.csv` and a W&B run under the same metric names.

    `keep_before_step`: 0 starts both afresh; a resumed fit keeps the CSV rows logged before
    its checkpoint's step and continues the run's W&B run; `math.inf` (validate, test) keeps all.
    W&B is offline unless `WANDB_MODE` says otherwise (`online`, or `disabled` for none). Only
    rank zero of a multi-process fit writes either (Lightning's loggers log from it alone); the
    other ranks' loggers neither read nor write the run's W&B run id.
    """
    loggers = [RunMetricsCSV(run_dir, keep_before_step=keep_before_step)]
    mode = os.environ.get("WANDB_MODE", "offline")
    if mode != "disabled":
        loggers.append(
            WandbLogger(
                save_dir=str(run_dir),
                project=os.environ.get("WANDB_PROJECT", "recurrent-probes"),
                name=name,
                group=name.rsplit("/", 1)[0],
                offline=mode != "online",
                id=wandb_run_id(run_dir, fresh=keep_before_step == 0) if rank_zero else None,
                resume="allow",
            )
        )
    return loggers


def stop_wandb_run() -> None:
    """End this process's W&B run, if it started one: Lightning leaves a failed fit's open, and its
    service would write on into the run's `wandb/` folder after a failed replacement deleted it."""
    wandb = sys.modules.get("wandb")
    if wandb is not None and wandb.run is not None:
        wandb.run.finish(exit_code=1)


READ_FIRST = {
    "--resume RUN": "continue the fit of run folder RUN from its checkpoints/last.ckpt with its "
    "config.yaml (give no --config or --ckpt_path)",
    "--trust-class CLASS": "let a run's config or checkpoint name the class path CLASS besides "
    "the suite's (repeat for more)",
}
"""The options `experiments.resume.received_arguments` takes out of the command line before
LightningCLI parses it, with what each does (shown by `--help`)."""


class _ArgumentParser(LightningArgumentParser):
    """On a bad argument, say what is wrong and where the options are listed, without first
    printing the whole usage (dozens of lines for a LightningCLI). `read_first`: options taken
    out before parsing (`READ_FIRST`), which `--help` lists, one line each, after the rest."""

    def __init__(self, *args, read_first: Sequence[str] = (), **kwargs):
        super().__init__(*args, **kwargs)
        self.read_first = list(read_first)

    def print_usage(self, file=None) -> None:
        pass

    def format_help(self) -> str:
        if not self.read_first:
            return super().format_help()
        lines = [f"  {name:<21} {READ_FIRST[name]}" for name in self.read_first]
        heading = "Read before the config is parsed (see docs/training.md):"
        return "\n".join([super().format_help().rstrip("\n"), "", heading, *lines, ""])


class RunConfigSaver(SaveConfigCallback):
    """Lightning's config saver, writing `<run>/config.yaml` atomically (never through a link) and
    only for `fit` (a validate or test leaves the fit's config as it was), with `--run.replace`
    left out (a resumed or repeated fit replaces nothing unless told again) and `--ckpt_path`
    too (it names a file, which a run folder's config may not: the run stays resumable). The
    same resolved config is the fit's W&B run config (`wandb_config`)."""

    def setup(self, trainer, pl_module, stage: str) -> None:
        if self.already_saved or stage != "fit":
            return
        if trainer.is_global_zero:
            config = self.config.clone()
            config.run.replace, config.ckpt_path = False, None
            text = self.parser.dump(config, skip_none=False)
            write_text_atomic(Path(trainer.default_root_dir) / self.config_filename, text)
            for logger in trainer.loggers:
                if isinstance(logger, WandbLogger):
                    logger.log_hyperparams(wandb_config(text))
        self.already_saved = True


def wandb_config(resolved: str) -> dict:
    """A fit's W&B run config: its whole resolved config (`resolved`, the text of its
    `config.yaml`: `seed_everything`, `trainer`, `model`, `data`, `run`), so runs can be grouped
    and filtered by any setting, with the scale of the reproduction that runs it (`run.scale`,
    from `SCALE_ENV`) where one does."""
    config = yaml.safe_load(resolved)
    if os.environ.get(SCALE_ENV):
        config["run"]["scale"] = os.environ[SCALE_ENV]
    return config


class ExperimentCLI(LightningCLI):
    """LightningCLI with run folders, loggers, atomic checkpoints and a test after `fit`.

    `run_dir`: the run folder (`--resume`), else the one `--run.*` and the seed name;
    `trusted_classes`: class paths beyond the suite's that a checkpoint may name (`--trust-class`).
    """

    def __init__(self, *args, run_dir: Path | None = None, trusted_classes=(), **kwargs):
        kwargs.setdefault("parser_class", _ArgumentParser)
        kwargs.setdefault("parser_kwargs", {"prog": "python -m experiments", "description": (
            "Train (fit), validate or test one model from a config. python -m experiments "
            "wandb-summary RUN prints the config and summary of a run's W&B run."),
            "fit": {"read_first": list(READ_FIRST)},
            "validate": {"read_first": ["--trust-class CLASS"]},
            "test": {"read_first": ["--trust-class CLASS"]}})  # fmt: skip
        self.only_subcommand = _named_subcommand(kwargs.get("args"))
        if self.only_subcommand:  # the others' parser options would reach the main parser
            kwargs["parser_kwargs"] = {
                key: value for key, value in kwargs["parser_kwargs"].items()
                if key not in LightningCLI.subcommands() or key == self.only_subcommand
            }  # fmt: skip
        kwargs.setdefault("save_config_callback", RunConfigSaver)
        kwargs.setdefault("save_config_kwargs", {"overwrite": True})
        kwargs.setdefault("seed_everything_default", 0)
        kwargs.setdefault("subclass_mode_model", True)
        kwargs.setdefault("subclass_mode_data", True)
        self.run_lock: RunFolderLock | None = None
        self.replacing: Path | None = None  # the run folder whose old run is held aside
        self.given_run_dir = run_dir
        self.trusted_classes = list(trusted_classes)
        self.resume_checkpoint: dict | None = None
        self.fresh_run_dir: Path | None = None  # the empty run folder a fresh fit writes
        try:
            super().__init__(LightningModule, LightningDataModule, *args, **kwargs)
        except BaseException as error:  # KeyboardInterrupt too (Lightning ends it as SystemExit)
            full = isinstance(error, OSError) and error.errno in FULL_DISK_ERRNOS
            settled = self._settle_failed_command()
            if full and self.run_lock is not None:
                raise RunFileError(self._full_disk(error.filename, settled)) from None
            raise
        else:
            if self.replacing is not None:
                drop_old_run(self.replacing)
        finally:
            if self.run_lock is not None:
                self.run_lock.release()

    def subcommands(self) -> dict[str, set[str]]:
        """Lightning's subcommands, or only the one the command line starts with: building a
        subcommand's parser reads every class signature it offers (about 0.15 s of CPU each), and
        a command runs one. `python -m experiments --help` still lists them all."""
        every, named = LightningCLI.subcommands(), self.only_subcommand
        return {named: every[named]} if named else every

    def _settle_failed_command(self) -> str:
        """After a failed command: put back the run a replacing fit held aside (`restored`), or
        delete what a fresh fit wrote if it wrote no checkpoint (`removed`: nothing to resume,
        and the folder as it was lets a fresh fit start); else `resumable` (a `last.ckpt`) or
        `kept`."""
        if self.replacing is not None:
            stop_wandb_run()
            restore_old_run(self.replacing)
            return "restored"
        run_dir = self.fresh_run_dir
        trainer = getattr(self, "trainer", None)
        writes_checkpoints = trainer is None or bool(trainer.checkpoint_callbacks)
        if run_dir is not None and writes_checkpoints and not any(run_dir.rglob("*.ckpt")):
            stop_wandb_run()  # its service would write on into the run's wandb/
            for entry in recorded_entries(run_dir):
                delete_entry(entry)
            return "removed"
        if self.run_lock is not None and RunLayout(self.run_dir()).checkpoint("last").is_file():
            return "resumable"
        return "kept"

    def _full_disk(self, written: str | None, settled: str) -> str:
        """The one line of a command stopped by a full disk, with what to do once space is free."""
        run_dir = self.run_dir()
        if written and Path(written).is_relative_to(run_dir):
            written = str(Path(written).relative_to(run_dir))
        fix = {
            "restored": "the run it was replacing is back as it was; free some space, then start "
            "the fit again",
            "removed": "the fit had written no checkpoint, so the folder is left as it was; free "
            "some space, then start the fit again",
            "resumable": "free some space, then resume the run with python -m experiments fit "
            f"--resume {run_dir}",
            "kept": "it has no checkpoints/last.ckpt to resume from; free some space, then train "
            "it again with --run.replace true",
        }[settled]
        if self.config.get("subcommand") != "fit":
            fix = "free some space, then run the command again"
        return (
            f"the disk holding {run_dir} is full (no space left on the disk writing "
            f"{written or 'the run folder'}): {fix}."
        )

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        parser.add_argument(
            "--run.root", type=str, default=default_run_root(),
            help=f"Folder of all runs (default: ${RUNS_ENV}, else runs).",
        )  # fmt: skip
        parser.add_argument("--run.paper", type=str, default="scratch", help="e.g. paper1.")
        parser.add_argument("--run.variant", type=str, default="default", help="e.g. guided.")
        parser.add_argument(
            "--run.replace", type=bool, default=False,
            help="A fresh fit into a folder holding a run (refused without this): replace that "
            "run whole once the fit finishes; a fit that fails keeps it.",
        )  # fmt: skip
        parser.add_argument(
            "--run.checkpoint_minutes", type=NonNegativeFloat, default=CHECKPOINT_MINUTES,
            help="Also write checkpoints/last.ckpt every this many minutes of a fit, inside its "
            "epochs, and at once on SIGTERM, so that a killed fit resumes from within the epoch "
            "it was in (0: at the end of an epoch only).",
        )  # fmt: skip
        # A config that gives the model's arguments without a class_path means the seq2seq model.
        parser.set_defaults({"model": {"class_path": "lightning_modules.seq2seq.Seq2Seq"}})
        # What the model takes from its data (the seq2seq models the vocabulary sizes, the
        # language model `vocab_size`, the seq2seq models and classifiers the split names). A
        # link whose source the DataModule lacks is skipped, but one whose target the model lacks
        # stores the value as an extra hyperparameter, which breaks `--ckpt_path`: a DataModule
        # exposes only the names its models take.
        for name in LINKS:
            parser.link_arguments(f"data.{name}", f"model.init_args.{name}", apply_on="instantiate")

    def _config(self):
        subcommand = self.config.get("subcommand")
        return self.config[subcommand] if subcommand else self.config

    def run_dir(self) -> Path:
        if self.given_run_dir is not None:
            return self.given_run_dir
        config = self._config()
        run = config.run
        return RunLayout.of(
            run.root, run.paper, run.variant, config.seed_everything
        ).path.absolute()

    def _parse_ckpt_path(self) -> None:
        """Replaces Lightning's, which merges the checkpoint's hyperparameters (its class path
        too) into the config: a given `--ckpt_path` (`last` and `best` name the run's own) must
        exist, be a checkpoint, and be of the configured model class and sizes (and, for a fit,
        hold the training state); nothing it names is imported. A run folder it reads that a
        killed `fit --run.replace` left mid-replacement is restored first."""
        subcommand = self.config.get("subcommand")
        fitting = subcommand == "fit"
        self.resume_step = 0 if fitting else math.inf
        config = self._config()
        settle_replacement(self.run_dir(), purpose=f"{subcommand} it")
        ckpt_path = getattr(config, "ckpt_path", None)
        if ckpt_path in ("best", "last"):
            ckpt_path = config.ckpt_path = str(RunLayout(self.run_dir()).checkpoint(ckpt_path))
        elif ckpt_path in ("hpc", "registry"):
            raise RunFileError(f"--ckpt_path {ckpt_path} is not supported: give a checkpoint file.")
        if ckpt_path is None:
            return
        settle_replacement(Path(ckpt_path).absolute().parent.parent, purpose=f"{subcommand} it")
        checkpoint = load_checkpoint(ckpt_path)
        check_resume(checkpoint, config, ckpt_path, LINKS, self.trusted_classes)
        if fitting:
            check_training_state(checkpoint, ckpt_path)
            self.resume_step = checkpoint["global_step"]
        self.resume_checkpoint = checkpoint

    def _take_run_folder(self, run_dir: Path) -> None:
        """Lock the run folder; a fresh fit into one that holds a run is refused unless
        `--run.replace`, which moves the old run aside until the fit ends (`__init__` then
        deletes it, or restores it if the command failed)."""
        purpose = f"{self.config.get('subcommand')} it"
        self.run_lock = RunFolderLock(run_dir, purpose=purpose, claim=False)
        fresh_fit = self.config.get("subcommand") == "fit" and self.resume_checkpoint is None
        recorded = recorded_entries(run_dir) if fresh_fit else []
        if recorded and not self._config().run.replace:
            names = ", ".join(p.name for p in recorded[:4])
            resume = f"resume it (python -m experiments fit --resume {run_dir}), "
            if not RunLayout(run_dir).checkpoint("last").is_file():
                resume = "it has no checkpoints/last.ckpt to resume from: "
            raise RunFileError(
                f"{run_dir} already holds a run ({names}): {resume}write another run "
                "(--run.variant or --seed_everything), or replace it whole (--run.replace true)."
            )
        self.run_lock.claim()
        if fresh_fit and not recorded:
            self.fresh_run_dir = run_dir
        if recorded:
            hold_old_run(run_dir)
            self.replacing = run_dir

    def instantiate_trainer(self, **kwargs):
        config = self._config()
        run_dir = self.run_dir()
        kwargs.setdefault("default_root_dir", str(run_dir))
        own_loggers = config.trainer.get("logger") in (None, True)
        if own_loggers:
            kwargs["logger"] = False  # made below, once the run folder is this process's
        kwargs.setdefault("plugins", [AtomicCheckpointIO(run_dir)])
        trainer = super().instantiate_trainer(**kwargs)
        trainer.callbacks.append(RandomState())  # a resumed fit draws as an uninterrupted one
        trainer.callbacks.append(EpochInProgress())  # ...and logs the same epoch means
        trainer.callbacks.append(StepsInEpochs())  # ...also when it counts steps
        minutes = config.run.checkpoint_minutes
        if self.config.get("subcommand") == "fit" and minutes > 0:
            trainer.callbacks.append(CheckpointWithinEpochs(minutes))
        if self.resume_checkpoint is not None:
            check_weights(self.resume_checkpoint, self.model, config.ckpt_path)
            EpochInProgress.check(self.resume_checkpoint, self.model)
        if self.config.get("subcommand") == "fit":
            check_checkpoint_folders(trainer, run_dir)
            if own_loggers and self.resume_step > 0:  # its metrics.csv is read as it resumes
                kept_rows(str(RunLayout(run_dir).metrics), self.resume_step)
        # Everything up to here only read; from here on rank zero writes the run folder (the
        # other processes of a multi-process fit, started by Lightning, write nothing of it).
        rank_zero = trainer.node_rank == 0 and trainer.local_rank == 0
        if rank_zero:
            self._take_run_folder(run_dir)
        if own_loggers:
            run = config.run
            name = f"{run.paper}/{run.variant}/seed={config.seed_everything}"
            trainer.loggers = make_loggers(run_dir, name, self.resume_step, rank_zero)
        return trainer

    def after_fit(self) -> None:
        """Test the best checkpoint; where the fit saved none (no validation ran, or none gave
        the monitored metric a value), say so in one line and test the last weights."""
        checkpoint = self.trainer.checkpoint_callback
        if checkpoint and checkpoint.best_model_path:
            self.trainer.test(
                self.model, datamodule=self.datamodule, ckpt_path="best", weights_only=True
            )
        elif checkpoint:
            why = (
                f"no validation gave {checkpoint.monitor} a value"
                if checkpoint.monitor in self.trainer.callback_metrics
                else "no validation ran (see --trainer.val_check_interval, "
                "check_val_every_n_epoch, limit_val_batches and max_epochs)"
            )
            print(
                f"note: {why}, so the fit saved no best checkpoint or traces at it: tested the "
                "last weights instead.",
                file=sys.stderr,
            )
            self.trainer.test(self.model, datamodule=self.datamodule)


def _named_subcommand(arguments: Sequence[str] | None) -> str | None:
    """The subcommand `arguments` start with, if they start with one."""
    first = next(iter(arguments or ()), None)
    return first if first in LightningCLI.subcommands() else None


def check_checkpoint_folders(trainer, run_dir: Path) -> None:
    """Refuse a `ModelCheckpoint` whose `dirpath` lies outside the run folder: a run keeps its
    checkpoints in itself, where a resumed, copied or replaced run finds them."""
    inside = os.path.realpath(run_dir)
    for callback in trainer.checkpoint_callbacks:
        folder = getattr(callback, "dirpath", None)
        if folder and os.path.commonpath([inside, os.path.realpath(folder)]) != inside:
            raise RunFileError(
                f"ModelCheckpoint's dirpath {folder} is outside the run folder {run_dir}: a run "
                "keeps its checkpoints in itself, where a resumed or copied run finds them; "
                f"remove dirpath from the callback (its checkpoints then go to {run_dir}/"
                "checkpoints) or give a folder inside the run."
            )


BATCH_LIMIT = re.compile(r"--trainer\.limit_(train|val|test|predict)_batches(?:=(.*))?")


def check_batch_limits(arguments: Sequence[str]) -> None:
    """A ValueError for a `--trainer.limit_*_batches` of `1`, on the command line or in a
    `--config` file (YAML's integer `1`): the Trainer types these limits `float | int`, so the CLI
    reads `1` as the float 1.0, every batch, where `Trainer(limit_train_batches=1)` in Python
    means one batch; which was meant is not known."""
    for config in config_values(arguments):
        _check_config_batch_limits(config)
    for at, argument in enumerate(arguments):
        following = arguments[at + 1] if at + 1 < len(arguments) else ""
        limit = BATCH_LIMIT.fullmatch(argument)
        if limit is not None and (following if limit[2] is None else limit[2]).strip() == "1":
            raise ValueError(_ambiguous_limit(f"--trainer.limit_{limit[1]}_batches 1"))


def _check_config_batch_limits(config: str) -> None:
    """`check_batch_limits` for the `trainer:` section of one `--config` file (a config given
    inline as YAML text, not a path, and a file that is not YAML are left to the parser)."""
    path = Path(config)
    try:
        loaded = yaml.safe_load(path.read_text()) if path.is_file() else None
    except (OSError, yaml.YAMLError):  # e.g. inline YAML longer than a file name may be
        return  # the parser names what is wrong with it
    trainer = loaded.get("trainer") if isinstance(loaded, dict) else None
    for name, value in trainer.items() if isinstance(trainer, dict) else ():
        if BATCH_LIMIT.fullmatch(f"--trainer.{name}") and type(value) is int and value == 1:
            raise ValueError(_ambiguous_limit(f"{path}: trainer.{name}: 1"))


def _ambiguous_limit(given: str) -> str:
    return (
        f"{given} is ambiguous: the CLI reads it as the float 1.0, every batch (the Trainer's "
        "limits are float | int); give 1.0 for every batch, or a count of 2 or more (for one "
        "training step, --trainer.max_steps 1)"
    )


def float32_kernels() -> None:
    """The suite's fits compute in float32 on every device, as the papers' models were trained.
    cuDNN's kernels (GRU, LSTM, convolutions) on Ampere and newer GPUs default to TF32, a 10-bit
    mantissa (`torch.backends.cudnn.allow_tf32`): on an H200 it moved a small LSTM layer's outputs
    by 1.7e-4 and a GRU's by 2.7e-4 from float32, against 5e-6 with it off (`tests/test_cuda.py`
    checks the setting and, on a GPU, the fused kernel against the traced layer). Matrix
    products are float32 by torch's default."""
    torch.backends.cudnn.allow_tf32 = False


def main(args: list[str] | None = None) -> None:
    """Run the CLI; a known bad input ends with one line naming the problem, exit status 2; a
    fit stopped by SIGTERM (Lightning stops after the batch at hand) with status 143."""
    keep_freed_memory()  # paper 1's batch-1 steps: 1.27x faster (experiments.allocator)
    float32_kernels()
    try:
        arguments, run_dir, trusted = received_arguments(sys.argv[1:] if args is None else args)
        check_batch_limits(arguments)
        # sys.argv stays as typed (`--resume`): Lightning starts the other processes of a
        # multi-process fit with it, and each resolves the same run folder.
        warnings.filterwarnings("ignore", "LightningCLI's args parameter is intended")
        ExperimentCLI(args=arguments, run_dir=run_dir, trusted_classes=trusted)
    except SIGTERMException:  # Lightning's own SystemExit(None) ends with status 0, as if done
        print("stopped by SIGTERM before the fit ended: continue it with python -m experiments "
              "fit --resume RUN (a fit stopped before its first checkpoint left its folder as "
              "it was: start it again)", file=sys.stderr)  # fmt: skip
        raise SystemExit(128 + signal.SIGTERM) from None
    except (RunFileError, FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    except MisconfigurationException as error:  # Lightning's word on a trainer setting
        print(f"error: {error} (see python -m experiments fit --help)", file=sys.stderr)
        raise SystemExit(2) from None
    except OSError as error:
        if error.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        print(
            f"error: no space left on the disk writing {error.filename or 'the run folder'}: "
            "free some space, then resume the run (python -m experiments fit --resume RUN)",
            file=sys.stderr,
        )
        raise SystemExit(2) from None
