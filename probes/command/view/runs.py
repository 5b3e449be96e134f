"""What `python -m probes view` shows of a run folder, read lazily (no web page here).

A run's traces are `traces/<split>/<tag>.safetensors` (`TraceRecorder`, or `record_run` for a
model of one's own): sites `[batch, time, units]` and the batch under `batch.<key>`. Opening a
trace reads its header only; the list of examples reads the small entries (tokens, lengths,
predictions); an example's heat map reads that example's row of one site, a memory-mapped slice
(`safe_open(...).get_slice(site)[row]`), never the whole site.

Every problem is one `ViewError` or `RunFileError` whose message names it and the fix.
"""

from __future__ import annotations

import glob
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from torch import Tensor

from lightning_modules.sequences import PAD, sequence_correct
from probes.command.view.unit_orders import UnitOrder, read_measurements, unit_orders
from probes.traces import valid_key
from storage.files import RunFileError
from storage.run_folder import RunFolder

INPUT_KEYS = ("batch.source", "batch.input", "batch.tokens")
"""Where a trace keeps the model's input tokens `[batch, time]`, in order of preference."""
TARGET_KEY, OUTPUT_KEY = "batch.target", "prediction"
LAYER_TOKENS = {"encoder": "batch.source", "decoder": TARGET_KEY, "lstm": "batch.input"}
"""The tokens a layer's steps read, for the suite's models (others: `step_tokens_key`)."""
VOCABULARIES = {
    "batch.source": ("source_vocab", "vocab"),
    TARGET_KEY: ("target_vocab", "vocab"),
    OUTPUT_KEY: ("target_vocab", "vocab"),
}
"""The DataModule attributes that spell each entry's token ids, first found wins."""
NOT_SITES = ("batch.", "valid.")
MOST_EXAMPLES = 5000
"""The list of examples shows at most this many matches (the filter narrows it)."""


class ViewError(RuntimeError):
    """A run, split or trace the page cannot show; the message names it and the fix."""


def matching_run_paths(patterns: Sequence[str]) -> list[str]:
    """The run folders the globs match, in order, each once; a pattern matching none is kept as
    given, so that the page says what is wrong with it (`ViewedRun`)."""
    paths: list[str] = []
    for pattern in patterns:
        found = sorted(p for p in glob.glob(pattern) if Path(p).is_dir()) or [pattern]
        paths += [p for p in found if p not in paths]
    return paths


@dataclass(frozen=True)
class RecordedTrace:
    """One trace file as its header describes it: entry names and shapes (nothing else read)."""

    path: Path
    shapes: dict[str, tuple[int, ...]]

    @classmethod
    def open(cls, path: Path) -> RecordedTrace:
        try:
            with safe_open(path, "pt") as handle:
                shapes = {key: tuple(handle.get_slice(key).get_shape()) for key in handle.keys()}
        except (SafetensorError, OSError) as error:
            raise RunFileError(
                f"{path} is corrupt ({error}): delete it and record the run again."
            ) from None
        trace = cls(path, shapes)
        if not trace.sites:
            raise ViewError(
                f"{path} holds no site with a time axis ([batch, time, units]; it holds "
                f"{', '.join(sorted(shapes)) or 'nothing'}): the view shows recurrent runs; "
                "pick a run of a recurrent model (a GRU or LSTM)."
            )
        return trace

    @property
    def sites(self) -> list[str]:
        """Recorded sites `[batch, time, units]` (hidden states, gates), by name."""
        return sorted(
            key
            for key, shape in self.shapes.items()
            if len(shape) == 3 and not key.startswith(NOT_SITES) and key != "attention"
        )

    @property
    def rows(self) -> int:
        return self.shapes[self.sites[0]][0]

    def read(self, keys: Sequence[str]) -> dict[str, Tensor]:
        """Whole entries (only small ones: tokens, lengths, predictions)."""
        with safe_open(self.path, "pt") as handle:
            return {key: handle.get_tensor(key) for key in keys}

    def read_units(self, site: str, units: Sequence[int]) -> Tensor:
        """`units` of `site` over every example, `[batch, time, len(units)]`: a slice of the
        memory-mapped file, only those units copied out."""
        with safe_open(self.path, "pt") as handle:
            return handle.get_slice(site)[:, :, list(units)]

    def read_row(self, keys: Sequence[str], row: int) -> dict[str, Tensor]:
        """Example `row` of each entry, `[1, ...]`: a memory-mapped slice of the file."""
        if not 0 <= row < self.rows:
            raise ViewError(
                f"{self.path} has examples 0..{self.rows - 1}, not {row}: pick one of those."
            )
        with safe_open(self.path, "pt") as handle:
            return {key: handle.get_slice(key)[row : row + 1] for key in keys}


@dataclass
class ExampleSite:
    """One example's values of one site over its valid steps, with the tokens of those steps."""

    values: Tensor  # [time, units]
    tokens: list[str]  # the token each step reads (or `t=<step>` where the trace has none)
    outputs: list[str] | None  # the model's output at each step, where it makes one


class ViewedRun:
    """A run folder as the page shows it: its splits, tags, examples and sites.

    `trusted_classes`: classes beyond the suite's that its checkpoint may name (`--trust-class`);
    the checkpoint is read only to spell token ids (its DataModule's vocabularies)."""

    def __init__(self, path: str | Path, trusted_classes: Sequence[str] = ()):
        self.folder = RunFolder(path, trusted_classes)  # a missing folder: RunFileError
        self._traces: dict[tuple, RecordedTrace] = {}
        self._examples: dict[tuple, list[dict]] = {}
        self._vocabularies: dict[str, list[str]] | None = None
        self.vocabulary_problem = ""

    @property
    def path(self) -> Path:
        return self.folder.path

    def is_inside(self, path: Path) -> bool:
        """`path` leads to a place inside the run folder (no link leads it elsewhere)."""
        return path.resolve().is_relative_to(self.path.resolve())

    def inside(self, path: Path) -> Path:
        """`path`, refused (one `ViewError`) where a link leads it outside the run folder: the
        page reads only files inside the runs it serves."""
        if not self.is_inside(path):
            raise ViewError(
                f"{path} leads outside the run folder {self.path} (a link): the page reads only "
                "files inside the runs it serves; serve the folder it leads to with --runs."
            )
        return path

    def splits(self) -> list[str]:
        """Splits with at least one recorded trace; none is one `ViewError` (an unfinished run)."""
        root = self.inside(self.folder.files.path / "traces")
        found = sorted(
            p.name for p in root.glob("*") if self.is_inside(p) and self.recorded_tags(p.name)
        )
        if not found:
            raise ViewError(
                f"{self.path} has no recorded traces yet ({root}/<split>/<tag>.safetensors): "
                "the run is unfinished or records none; wait until its TraceRecorder callback "
                "has written an epoch, or train it with that callback (see "
                "experiments/configs/paper1/*.yaml)."
            )
        return found

    def recorded_tags(self, split: str) -> list[str]:
        """The tags recorded for `split` (`RunFolder.trace_tags`), of a folder inside the run."""
        self.inside(self.folder.files.traces(split))
        return self.folder.trace_tags(split)

    def tags(self, split: str) -> list[str]:
        tags = self.recorded_tags(split)
        if not tags:
            raise ViewError(f"{self.path} has no trace of split {split!r}: pick another split.")
        return tags

    def trace(self, split: str, tag: str) -> RecordedTrace:
        path = self.inside(self.folder.trace_path(split, tag))
        if not path.is_file():
            raise ViewError(f"{path} does not exist: pick another split or tag.")
        stat = path.stat()
        key = (split, tag, stat.st_mtime_ns, stat.st_size)
        if key not in self._traces:
            self._traces[key] = RecordedTrace.open(path)
        return self._traces[key]

    def vocabularies(self) -> dict[str, list[str]]:
        """Token strings by trace entry, from the run's DataModule; none (ids shown, with
        `vocabulary_problem` saying why) where it cannot be rebuilt."""
        if self._vocabularies is None:
            self._vocabularies = {}
            if not any(self.folder.checkpoint_path(tag).is_file() for tag in ("last", "best")):
                self.vocabulary_problem = "token ids shown: no checkpoint names a DataModule"
                return self._vocabularies
            try:
                self.inside(self.folder.checkpoint_path(self.folder.settings_tag("last")))
                data = self.folder.datamodule(self.folder.settings_tag("last"))
            except Exception as error:  # any failure: the page shows ids and says why
                self.vocabulary_problem = f"token ids shown: {str(error).splitlines()[0]}"
                return self._vocabularies
            for key, attributes in VOCABULARIES.items():
                for attribute in attributes:
                    words = getattr(data, attribute, None)
                    if isinstance(words, (list, tuple)):
                        self._vocabularies[key] = [str(word) for word in words]
                        break
        return self._vocabularies

    def spell(self, key: str, ids: Tensor) -> list[str]:
        words = self.vocabularies().get(key, [])
        return [words[i] if 0 <= i < len(words) else str(i) for i in ids.tolist()]

    def examples(self, split: str, tag: str) -> list[dict]:
        """One row per example: `example` (its row), `input`, `target`, `output` (tokens, where
        recorded) and `right` (`yes`/`no` where the trace has a target and an output, else
        `-`), and `id` (the row again: the page's table gives the selected rows' ids, so that
        its callbacks need not be sent the whole list). Read once per trace file."""
        trace = self.trace(split, tag)
        key = (split, tag, trace.path.stat().st_mtime_ns)
        if key not in self._examples:
            self._examples[key] = self._example_rows(trace)
        return self._examples[key]

    def _example_rows(self, trace: RecordedTrace) -> list[dict]:
        input_key = next((k for k in INPUT_KEYS if len(trace.shapes.get(k, ())) == 2), None)
        keys = [
            k
            for k in (input_key, "batch.source_lengths", TARGET_KEY, OUTPUT_KEY)
            if k in trace.shapes
        ]
        entries = trace.read(keys)
        seq2seq = "batch.source_lengths" in entries
        target, output = entries.get(TARGET_KEY), entries.get(OUTPUT_KEY)
        comparable = target is not None and output is not None and target.shape == output.shape
        if comparable:
            right = (
                sequence_correct(output, target)
                if seq2seq
                else (output == target).flatten(1).all(-1)
            )
        rows = []
        for row in range(trace.rows):
            example = {"example": row, "input": "", "target": "", "output": "", "right": "-",
                       "id": row}  # fmt: skip
            if input_key is not None:
                ids = entries[input_key][row]
                if seq2seq:
                    ids = ids[: int(entries["batch.source_lengths"][row])]
                example["input"] = " ".join(self.spell(input_key, ids))
            if target is not None and target.dim() == 2:
                steps = target[row] != PAD if seq2seq else torch.ones_like(target[row], dtype=bool)
                example["target"] = " ".join(self.spell(TARGET_KEY, target[row][steps]))
                if comparable:
                    example["output"] = " ".join(self.spell(OUTPUT_KEY, output[row][steps]))
            if comparable:
                example["right"] = "yes" if bool(right[row]) else "no"
            rows.append(example)
        return rows

    def unit_orders(self, split: str, tag: str, site: str) -> dict[str, UnitOrder]:
        """The orders of `site`'s units that the run's probe results offer (`unit_orders`),
        `index` first: those of its `measurements.json`, then those recorded with the trace
        itself (`RunLayout.trace_analysis`); read each time (they are small)."""
        units = self.trace(split, tag).shapes[site][2]
        orders = {}
        for path in (self.folder.files.measurements, self.folder.files.trace_analysis(split, tag)):
            orders |= unit_orders(read_measurements(self.inside(path)), site, units)
        return orders

    def example_site(self, split: str, tag: str, row: int, site: str) -> ExampleSite:
        """Example `row`'s values of `site` over its valid steps, read as one memory-mapped row."""
        trace = self.trace(split, tag)
        if site not in trace.shapes:
            raise ViewError(
                f"{trace.path} has no site {site!r}: pick one of {', '.join(trace.sites)}."
            )
        steps = trace.shapes[site][1]
        valid = valid_key(site, trace.shapes.keys())
        tokens_key = step_tokens_key(trace, site)
        keys = [k for k in {site, valid, tokens_key, OUTPUT_KEY} if k in trace.shapes]
        if tokens_key != TARGET_KEY and OUTPUT_KEY in keys:
            keys.remove(OUTPUT_KEY)
        entries = trace.read_row(keys, row)
        mask = valid_mask(entries, valid, steps)
        values = entries[site][0][mask]
        if tokens_key is None:
            tokens = [f"t={t}" for t in range(steps)]
        else:
            tokens = self.spell(tokens_key, entries[tokens_key][0])
        tokens = [token for token, kept in zip(tokens, mask.tolist(), strict=True) if kept]
        outputs = None
        if OUTPUT_KEY in entries and entries[OUTPUT_KEY].shape[1] == steps:
            spelled = self.spell(OUTPUT_KEY, entries[OUTPUT_KEY][0])
            outputs = [token for token, kept in zip(spelled, mask.tolist(), strict=True) if kept]
        return ExampleSite(values, tokens, outputs)


def step_tokens_key(trace: RecordedTrace, site: str) -> str | None:
    """The trace entry `[batch, time]` holding the token each step of `site` reads: the suite's
    layers' own (`LAYER_TOKENS`), else the first of `INPUT_KEYS` or any integer `batch.<key>`
    with the site's number of steps; None where there is none."""
    steps = trace.shapes[site][1]
    layer = site.rsplit(".", 1)[0]
    candidates = [LAYER_TOKENS.get(layer), *INPUT_KEYS, TARGET_KEY]
    candidates += sorted(k for k in trace.shapes if k.startswith("batch."))
    for key in candidates:
        shape = trace.shapes.get(key) if key else None
        if shape is not None and len(shape) == 2 and shape[1] == steps:
            return key
    return None


def valid_mask(entries: dict[str, Tensor], key: str, steps: int) -> Tensor:
    """`[time]` booleans: the valid steps of one example (`probes.traces.valid_key`'s entry; every
    step where the trace has no such entry)."""
    if key not in entries:
        return torch.ones(steps, dtype=torch.bool)
    if key == "batch.source_lengths":
        return torch.arange(steps) < int(entries[key][0])
    if key == "batch.target":
        return entries[key][0] != PAD
    return entries[key][0].bool()
