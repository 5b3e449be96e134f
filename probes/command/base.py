"""The probes `python -m probes` runs, each as an adapter from a recorded run to tidy rows.

A `RunProbe` says which checkpoint tags a run offers it (`tags`), which files one result reads
(`reads`, the cache key hashes their contents), how to check those cheaply before any work
(`check`), how to compute the rows of one run and tag (`rows`), and how to summarise and draw the
table of all of them (`summary`, `figures`). The methods themselves are the suite's probe
functions; the defaults of each probe's options are the settings of the paper it comes from.

Every probe is one module of this package and one line of `probes.command.registry`.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import field
from pathlib import Path

import pandas as pd
import torch
from safetensors.torch import load_file
from torch import Tensor

from datamodules.machine_tasks import SPLITS, TEST_SPLITS
from lightning_modules.recording import pad_and_concatenate
from probes.command.registry import ProbeCard
from probes.traces import CONVENTIONS, PAPER1_GATE_SITES
from storage.files import RunFileError
from storage.run_folder import RunFolder, safetensors_keys, tag_order

PAPER1_TEST_SPLITS = list(TEST_SPLITS)  # the lookup-table task's four test sets
PAPER1_SPLITS = list(SPLITS)  # and train and validation: the co-authors' `*_all.pt` activations
PAPER1_GATES = list(PAPER1_GATE_SITES)


def option(default, help: str, **spec):
    """A probe option: its default, its help and, for lists, the element `type`."""
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata={"help": help, **spec})
    return field(default=default, metadata={"help": help, **spec})


def convention_option():
    return option("torch", "sign convention of the update gate: torch's z (h = (1 - z) n + "
                  "z h_prev), which paper 1's co-authors' analysis code reads, or paper1: the "
                  "1 - z of the paper's equation (h = (1 - z) h_prev + z h~, Baan et al. section "
                  "2.2)", choices=CONVENTIONS)  # fmt: skip


RECORDED = "recorded.txt"
"""The note `probes.command.record.record_run` leaves in a run folder it writes."""


def is_recorded(run: RunFolder) -> bool:
    """Whether `run` was written by `record_run` from a model of one's own."""
    return (run.path / RECORDED).is_file()


class RunProbe:
    """A probe as the command runs it (see the module docstring). `reads_recorded`: whether it
    runs on a run `record_run` wrote (traces and weights, no checkpoint of the suite's)."""

    reads_recorded = False

    card: ProbeCard  # its line of `probes.command.registry`, set when the registry loads it
    details: str = ""
    options: type
    version = 1  # bump when the rows change for the same inputs

    @property
    def name(self) -> str:
        return self.card.name

    @property
    def paper(self) -> str:
        return self.card.paper

    @property
    def purpose(self) -> str:
        return self.card.purpose

    def validate(self, options) -> None:
        """Raise `ValueError` naming a bad option."""

    def tags(self, run: RunFolder, options) -> list[str]:
        raise NotImplementedError

    def where(self, run: RunFolder, options) -> str:
        raise NotImplementedError

    def reads(self, run: RunFolder, tag: str, options) -> list[Path]:
        raise NotImplementedError

    def check(self, run: RunFolder, tag: str, options) -> None:
        raise NotImplementedError

    def rows(self, run: RunFolder, tag: str, options, device: torch.device) -> list[dict]:
        raise NotImplementedError

    summary_by: list[str]
    """The columns the summary groups by, besides the run group and the checkpoint."""
    summary_columns: dict
    """The summary's columns: name -> (column of the rows, aggregation), as `grouped` takes."""

    def summary_table(self, table: pd.DataFrame) -> pd.DataFrame:
        """`summary_columns` per run group, checkpoint and `summary_by`; a probe whose summary
        derives columns first overrides it."""
        return grouped(table, self.summary_by, self.summary_columns)

    def figures(self, table: pd.DataFrame, options, folder: Path) -> dict[str, Path]:
        return {}


def trained_by(run: RunFolder) -> str:
    """`", a run of <class>"` when the run's checkpoint says, else `""` (for error messages)."""
    try:
        return f", a run of {run.model_class_path()}"
    except RunFileError:
        return ""


class TraceProbe(RunProbe):
    """A probe of recorded activations: `<run>/traces/<split>/<tag>.safetensors` of `splits`."""

    reads_recorded = True

    def keys(self, options, recorded: Collection[str] = ()) -> list[str]:
        """The entries the probe reads from a recording holding the entries `recorded` (its
        valid-step masks depend on them: `probes.traces.valid_key`)."""
        raise NotImplementedError

    def tags(self, run: RunFolder, options) -> list[str]:
        common = None
        for split in options.splits:
            if not run.files.traces(split).is_dir():
                recorded = sorted(p.name for p in run.files.traces(split).parent.glob("*"))
                raise RunFileError(
                    f"{run.path}{trained_by(run)}, has no traces of split {split!r} (it has "
                    f"{', '.join(recorded) or 'none'}): {self.name} reads traces of "
                    f"{', '.join(options.splits)}. Give runs recorded by TraceRecorder on those "
                    "splits, or name the run's splits with --splits."
                )
            tags = run.trace_tags(split)
            common = tags if common is None else [t for t in common if t in tags]
        return common or []

    def where(self, run: RunFolder, options) -> str:
        return str(run.files.traces(options.splits[0]))

    def reads(self, run: RunFolder, tag: str, options) -> list[Path]:
        return [run.trace_path(split, tag) for split in options.splits]

    def check(self, run: RunFolder, tag: str, options) -> None:
        for path in self.reads(run, tag, options):
            held = safetensors_keys(path, "delete it and record the run again.")
            missing = sorted(set(self.keys(options, held)) - held)
            if missing:
                raise RunFileError(
                    f"{path}{trained_by(run)}, has no {', '.join(missing)} (it has "
                    f"{', '.join(sorted(held))}): probe sites it has (see --help)."
                )

    def trace(self, run: RunFolder, tag: str, options) -> dict:
        held = safetensors_keys(self.reads(run, tag, options)[0], "record the run again.")
        return joined_trace(run, options.splits, tag, self.keys(options, held))


class WeightProbe(RunProbe):
    """A probe of parameters: a checkpoint (`best`, `last`), a `WeightSnapshot`, or the weights
    `record_run` wrote of a model of one's own."""

    reads_recorded = True

    def parameters(self, options) -> list[str]:
        raise NotImplementedError

    def tags(self, run: RunFolder, options) -> list[str]:
        return run.checkpoint_tags()

    def where(self, run: RunFolder, options) -> str:
        return str(run.path)

    def weights_file(self, run: RunFolder, tag: str) -> Path:
        """The file of the weights of `tag`: on a recorded run, the weights `record_run` wrote."""
        recorded = run.files.weight_snapshot(tag)
        return recorded if is_recorded(run) and recorded.is_file() else run.weights_path(tag)

    def state(self, run: RunFolder, tag: str) -> dict[str, Tensor]:
        """The weights of `tag` by parameter name (safetensors: no pickle)."""
        path = self.weights_file(run, tag)
        return load_file(path) if path != run.weights_path(tag) else run.state_dict(tag)

    def reads(self, run: RunFolder, tag: str, options) -> list[Path]:
        return [self.weights_file(run, tag)]

    def check(self, run: RunFolder, tag: str, options) -> None:
        state = self.state(run, tag)
        missing = sorted(set(self.parameters(options)) - set(state))
        if missing:
            recurrent = ", ".join(key for key in sorted(state) if ".weight_hh_l" in key)
            raise RunFileError(
                f"{self.weights_file(run, tag)}{trained_by(run)}, has no {', '.join(missing)} "
                f"(its recurrent weights are {recurrent}): name a recurrent layer it has (see "
                "--help)."
            )


class ModelProbe(RunProbe):
    """A probe that runs the trained model: a checkpoint (`best`, `last`) of one of
    `model_classes`, with the DataModule that trained it (`RunFolder.model`, `.datamodule`)."""

    model_classes: tuple[str, ...] = ("lightning_modules.seq2seq.Seq2Seq",)

    def tags(self, run: RunFolder, options) -> list[str]:
        return sorted((p.stem for p in run.files.checkpoints.glob("*.ckpt")), key=tag_order)

    def where(self, run: RunFolder, options) -> str:
        return str(run.files.checkpoints)

    def reads(self, run: RunFolder, tag: str, options) -> list[Path]:
        return [run.files.checkpoint(tag)]

    def check(self, run: RunFolder, tag: str, options) -> None:
        trained = run.model_class_path(tag)  # reads the checkpoint: a corrupt one fails here
        if trained not in self.model_classes:
            raise RunFileError(
                f"{self.reads(run, tag, options)[0]} is a run of {trained}: {self.name} probes "
                f"runs of {', '.join(self.model_classes)}; give --runs of such a model."
            )


def units_text(units) -> str:
    """Unit indices (from 0; a tensor or a list) as one space-separated table cell."""
    return " ".join(map(str, units.tolist() if hasattr(units, "tolist") else units))


def run_labels(table: pd.DataFrame) -> list[str]:
    """The figure series, `<run group> <checkpoint>`, in first-seen order."""
    return list(dict.fromkeys(table["group"] + " " + table["checkpoint"]))


def grouped(table: pd.DataFrame, by: list[str], columns: dict) -> pd.DataFrame:
    """Means (and the like) of `table` per run group, checkpoint and `by`, in first-seen order."""
    keys = ["group", "checkpoint", *by]
    summary = table.groupby(keys, sort=False).agg(**columns).reset_index()
    return summary


def joined_trace(
    run: RunFolder, splits: Sequence[str], tag: str = "best", keys: Sequence[str] | None = None
) -> dict[str, Tensor]:
    """The run's traces of `splits` at `tag`, concatenated along the batch (zero-padded in time);
    with `keys`, only those entries are read from the files."""
    traces = [run.trace(split, tag, keys) for split in splits]
    return {key: pad_and_concatenate([t[key] for t in traces]) for key in traces[0]}


def epoch_of(tag: str) -> int | None:
    """N of a snapshot tag `epoch=N` (taken after N + 1 training epochs), else None."""
    match = re.fullmatch(r"epoch=(\d+)", tag)
    return int(match[1]) if match else None
