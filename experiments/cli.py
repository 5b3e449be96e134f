"""The suite's command line: `python -m experiments fit|validate|test --config <yaml> ...`.

A thin `LightningCLI` (Lightning's `examples/pytorch/basics/autoencoder.py` style): every
experiment is a YAML config under `experiments/configs/<paper>/` and any setting can be
overridden (`--trainer.max_epochs 5 --model.hidden_size 64`). Each run gets its own folder
`<run.root>/<run.paper>/<run.variant>/seed=<seed>/` holding the resolved `config.yaml`,
`checkpoints/`, `metrics.csv`, and the `traces/` and `weights/` of the recording callbacks.
Metrics go to that CSV log and to Weights & Biases under the same names (offline unless the
environment says `WANDB_MODE=online`). After `fit`, the best checkpoint is tested.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pytorch_lightning import LightningDataModule, LightningModule
from pytorch_lightning.cli import LightningArgumentParser, LightningCLI
from pytorch_lightning.loggers import CSVLogger, WandbLogger

from lightning_modules.run_files import AtomicCheckpointIO, RunFileError, load_checkpoint


def make_loggers(run_dir: Path, name: str) -> list:
    """A CSV log written to `<run_dir>/metrics.csv` and a W&B run under the same metric names.

    W&B is offline unless `WANDB_MODE` says otherwise (`online`, or `disabled` for none).
    """
    loggers = [CSVLogger(save_dir=run_dir, name="", version="")]
    mode = os.environ.get("WANDB_MODE", "offline")
    if mode != "disabled":
        loggers.append(
            WandbLogger(
                save_dir=str(run_dir),
                project=os.environ.get("WANDB_PROJECT", "recurrent-probes"),
                name=name,
                group=name.rsplit("/", 1)[0],
                offline=mode != "online",
            )
        )
    return loggers


class _ArgumentParser(LightningArgumentParser):
    """On a bad argument, say what is wrong and where the options are listed, without first
    printing the whole usage (dozens of lines for a LightningCLI)."""

    def print_usage(self, file=None) -> None:
        pass


class ExperimentCLI(LightningCLI):
    """LightningCLI with run folders, loggers, atomic checkpoints and a test after `fit`."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("parser_class", _ArgumentParser)
        kwargs.setdefault("parser_kwargs", {"prog": "python -m experiments"})
        kwargs.setdefault("save_config_kwargs", {"overwrite": True})
        kwargs.setdefault("seed_everything_default", 0)
        kwargs.setdefault("subclass_mode_model", True)
        kwargs.setdefault("subclass_mode_data", True)
        super().__init__(LightningModule, LightningDataModule, *args, **kwargs)

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        parser.add_argument("--run.root", type=str, default="runs", help="Folder of all runs.")
        parser.add_argument("--run.paper", type=str, default="scratch", help="e.g. paper1.")
        parser.add_argument("--run.variant", type=str, default="default", help="e.g. guided.")
        # A config that gives the model's arguments without a class_path means the seq2seq model.
        parser.set_defaults({"model": {"class_path": "lightning_modules.seq2seq.Seq2Seq"}})
        # What the model takes from its data (the seq2seq models the vocabulary sizes, the
        # language model `vocab_size`, the seq2seq models and classifiers the split names). A
        # link whose source the DataModule lacks is skipped, but one whose target the model lacks
        # stores the value as an extra hyperparameter, which breaks `--ckpt_path`: a DataModule
        # exposes only the names its models take.
        links = (
            "source_vocab_size",
            "target_vocab_size",
            "val_splits",
            "test_splits",
            "vocab_size",
        )
        for name in links:
            parser.link_arguments(f"data.{name}", f"model.init_args.{name}", apply_on="instantiate")

    def _config(self):
        subcommand = self.config.get("subcommand")
        return self.config[subcommand] if subcommand else self.config

    def run_dir(self) -> Path:
        config = self._config()
        run = config.run
        return Path(run.root) / run.paper / run.variant / f"seed={config.seed_everything}"

    def parse_arguments(self, parser: LightningArgumentParser, args) -> None:
        """Parse, then check a given `--ckpt_path` before Lightning reads its hyperparameters,
        so a missing or corrupt checkpoint is one clear error."""
        super().parse_arguments(parser, args)
        ckpt_path = getattr(self._config(), "ckpt_path", None)
        if ckpt_path not in (None, "best", "last", "hpc", "registry"):
            load_checkpoint(ckpt_path)

    def instantiate_trainer(self, **kwargs):
        config = self._config()
        run_dir = self.run_dir()
        kwargs.setdefault("default_root_dir", str(run_dir))
        if config.trainer.get("logger") in (None, True):
            run = config.run
            kwargs["logger"] = make_loggers(
                run_dir, f"{run.paper}/{run.variant}/seed={config.seed_everything}"
            )
        kwargs.setdefault("plugins", [AtomicCheckpointIO()])
        return super().instantiate_trainer(**kwargs)

    def after_fit(self) -> None:
        if self.trainer.checkpoint_callback and self.trainer.checkpoint_callback.best_model_path:
            self.trainer.test(
                self.model, datamodule=self.datamodule, ckpt_path="best", weights_only=True
            )


def main(args: list[str] | None = None) -> None:
    """Run the CLI; a known bad input ends with one line naming the problem, exit status 2."""
    try:
        ExperimentCLI(args=args)
    except (RunFileError, FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
