"""Paper 2's runs: one LSTM language model per corpus setting and seed, each trained through the
suite's CLI (`python -m experiments fit ...`) and then measured once into its own small file,
`<run>/measurements.json`, from which the report is built.

A run's measurements (no weights) are everything the report reads of it:

- `variant`, `seed`, `setting` (conduit length, rules, conduit pool, copies) and `command`, the
  fit's arguments without the run root (`runner.portable`), so a copy elsewhere is the same run;
- `readings`: by reading name (`reading_names`), by weight snapshot (`epoch=<e>`, e + 1 epochs
  trained), a `readings.snapshot_record`: per phrase P(omega | phrase) as the mean over the
  rules and its standard error, and the mean of its logarithm and that standard error (what
  `readings.combined` needs, over seeds or, with one seed, over the rules; arithmetic or
  geometric), the full model's P(omega) likewise, and the largest relative CD error (the
  `cd.approximation_error` claim), six significant digits. `text` is section 3.1 as the text
  gives it (CD from the zero state at the close symbol of held-out rule instances, fresh
  conduits in 4.1, the pool's in 4.2); `authors`, `authors_at_close` and `authors_domain` are
  the authors' analysis (`readings.STREAM_READINGS`). What each run holds is
  `scales.read_tags`: Figure 3's runs `open` after every epoch; Figure 1's every phrase (`open`,
  `conduit`, `prefix=0` .. `prefix=k`) at Figure 1's epoch and the last, and Figure 2's (the
  longest k) also `prefix=0` and `prefix=k` after every epoch;
- `trained` (its fit's start and end, and its seconds over its sittings: `sittings.fit_time`) and
  `measured` (`runner.write_measurements`).

Size: as committed, a Figure 3 run's file is about 60 kB (50 snapshots by 4 readings), a
Figure 2 run's (the longest k: every epoch) about 75 kB and another Figure 1 run's about 8 kB:
about 4 MB for the default scale's 93 runs (45, 24 and 24 of them: the runs with momentum or
weight decay read two phrases after every epoch, as Figure 2's).

With `--reuse-runs` a run whose measurements were taken from the same command (and hold every
snapshot the scale reads) is never trained or measured again, so the report can be rebuilt from
the measurement files alone: the reproduction copies them beside its report
(`reports/paper2/runs/`), and `python -m experiments.paper2 --runs reports/paper2/runs
--reuse-runs` rebuilds it from there.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import torch

from experiments.engine.fit import fit, left_to_compute
from experiments.engine.pool import run_all
from experiments.engine.sitting import Sitting, SittingError
from experiments.engine.store import MeasurementParts, portable, write_measurements
from experiments.paper2.readings import (
    AUTHORS,
    AUTHORS_AT_CLOSE,
    AUTHORS_DOMAIN,
    CdSettings,
    Snapshot,
    close_probabilities,
    snapshot_of,
    snapshot_record,
    stream_snapshots,
)
from experiments.paper2.scales import (
    CONFIG,
    Scale,
    Setting,
    before_fix_settings,
    epoch_tag,
    read_tags,
    training_order,
)
from storage import RunLayout

TEXT = "text"
"""The reading the paper's text gives (section 3.1): P(omega | phrase) = softmax(v_phrase)[omega]
at the close symbol, CD from the zero state over each probe rule's window."""


BEFORE_FIX = CdSettings("irrelevant", torch.float64)
"""The authors' CD before their fix (`nsaphra/acd` 820fabd), in float64."""
BEFORE_FIX_READINGS = {
    "before_fix": "the text's reading by the authors' CD before their fix, in float64",
    "authors_before_fix": "the authors' analysis (their test stream, P at omega's own step) by "
    "their CD before their fix, in float64",
}
"""The readings of `--before-fix` (`reports/paper2/preregistration.md`, item 4), of the runs of
`scales.before_fix_settings`: the text's, and the authors' `AUTHORS`."""


def run_layout(root: Path, setting: Setting, seed: int) -> RunLayout:
    return RunLayout.of(root, "paper2", setting.variant, seed)


def arguments_of(setting: Setting, seed: int, scale: Scale, root: Path) -> list[str]:
    """The `python -m experiments fit` arguments of one language model. The seed sets both the
    corpus (`data_seed`) and the initialisation: the authors' generator draws each corpus
    afresh."""
    return [
        "--config", str(CONFIG),
        "--seed_everything", str(seed),
        "--run.root", str(root),
        "--run.variant", setting.variant,
        "--trainer.max_epochs", str(scale.epochs),
        "--trainer.enable_progress_bar", "false",
        "--data.corpus_length", str(scale.corpus_length),
        "--data.data_seed", str(seed),
        "--data.probe_rules", str(scale.probe_rules),
        *setting.arguments(),
        *scale.overrides,
    ]  # fmt: skip


def unread(record: dict | None, setting: Setting, scale: Scale) -> list[str]:
    """The `reading_names` a kept `record` lacks or holds at fewer snapshots than the scale reads
    (a scale's Figure 1 epoch is not in the command); every one without a record."""
    tags = {tag for group, _ in read_tags(setting, scale) for tag in group}
    return [name for name in reading_names(setting, scale) if record is None
            or not tags <= set(record["readings"].get(name, ()))]  # fmt: skip


def kept_record(setting: Setting, seed: int, scale: Scale, sitting: Sitting) -> dict | None:
    """The run's measurements from an earlier invocation of the same command (`Sitting.kept`)
    if they hold every reading and snapshot the scale reads (`unread`); else None, and merging,
    stop naming the run."""
    layout = run_layout(sitting.root, setting, seed)
    record = sitting.kept(layout, arguments_of(setting, seed, scale, sitting.root))
    if record is None or not unread(record, setting, scale):
        return record
    if sitting.merged:
        raise SittingError(
            f"{layout.path.relative_to(sitting.root)} was measured at other epochs or by other "
            "readings than the scale reads: measure it again where it was trained (with "
            "--reuse-runs) and merge again"
        )
    return None


def joined(first: Snapshot, second: Snapshot) -> Snapshot:
    """One weight snapshot's readings of two phrase groups, in the first's phrase order (where
    both read a phrase, the same rules give the same values)."""
    return Snapshot({**first.phrase, **second.phrase}, second.full, max(first.error, second.error))


def reading_names(setting: Setting, scale: Scale) -> list[str]:
    """The readings a run of `setting` is measured by: the text's and the authors' (their
    domain_test stream for pooled corpora only); with `scale.before_fix`, for the runs it reads,
    also `BEFORE_FIX_READINGS`."""
    streams = [AUTHORS, AUTHORS_AT_CLOSE] + ([AUTHORS_DOMAIN] if setting.pool is not None else [])
    before_fix = scale.before_fix and setting in before_fix_settings(scale)
    return [TEXT, *streams, *(BEFORE_FIX_READINGS if before_fix else ())]


def read_run(
    path: Path, setting: Setting, scale: Scale, names: list[str], parts: MeasurementParts
) -> dict[str, dict[str, Snapshot]]:
    """A trained run's readings `names` (of `reading_names`) by reading, by weight snapshot
    (`read_tags`), each group's readings kept in `parts` as soon as they are read."""
    readings: dict[str, dict[str, Snapshot]] = {}
    for index, (tags, only) in enumerate(read_tags(setting, scale)):
        groups = {}
        for part, (gives, read) in group_readers(path, tags, only, scale).items():
            if set(gives) & set(names):
                read_part = kept_part(parts, f"{index}/{part}", read)
                groups |= {name: by_tag for name, by_tag in read_part.items() if name in names}
        for name, snapshots_by_tag in groups.items():
            for tag, snapshot in snapshots_by_tag.items():
                kept = readings.setdefault(name, {}).get(tag)
                readings[name][tag] = snapshot if kept is None else joined(kept, snapshot)
    return readings


Reader = Callable[[], dict[str, dict[str, Snapshot]]]
"""Readings of some weight snapshots: reading name -> snapshot tag -> `Snapshot`."""


def group_readers(
    path: Path, tags: list[str], only: list[str] | None, scale: Scale
) -> dict[str, tuple[tuple[str, ...], Reader]]:
    """How the weight snapshots `tags` of the run `path` are read, phrases `only`, by measurement
    part: the readings each part gives and the function that reads them."""
    streams = (AUTHORS, AUTHORS_AT_CLOSE, AUTHORS_DOMAIN)
    return {
        TEXT: ((TEXT,), lambda: {TEXT: close_probabilities(path, tags, only)}),
        "streams": (streams, lambda: stream_snapshots(path, tags, only,
                                                      stream_length=scale.stream_length)),
        "before_fix": (("before_fix",), lambda: {
            "before_fix": close_probabilities(path, tags, only, BEFORE_FIX)}),
        "authors_before_fix": (("authors_before_fix",), lambda: {
            "authors_before_fix": stream_snapshots(path, tags, only, BEFORE_FIX,
                                                   scale.stream_length, domain=False)[AUTHORS]}),
    }  # fmt: skip


def kept_part(parts: MeasurementParts, name: str, read: Reader) -> dict[str, dict[str, Snapshot]]:
    """`read()`'s readings (reading -> weight snapshot -> `Snapshot`), kept as the measurement
    part `name` (as `snapshot_record`s): read back where a measurement cut short took it."""
    records = parts.take(name, lambda: {
        reading: {tag: snapshot_record(s) for tag, s in by_tag.items()}
        for reading, by_tag in read().items()
    })  # fmt: skip
    return {reading: {tag: snapshot_of(r) for tag, r in by_tag.items()}
            for reading, by_tag in records.items()}  # fmt: skip


def measure(setting: Setting, seed: int, scale: Scale, sitting: Sitting) -> dict:
    """Train the run (or keep it, with `reuse`), read it and write its measurements file; with
    `reuse`, measurements taken from the same command are read back instead, and where they
    lack readings the scale reads (`unread`, e.g. `--before-fix`'s), those alone are read."""
    kept = kept_record(setting, seed, scale, sitting)
    if kept is not None:
        return kept
    root = sitting.root
    layout = run_layout(root, setting, seed)
    arguments = arguments_of(setting, seed, scale, root)
    earlier = sitting.kept(layout, arguments)  # the same command's, some readings missing
    missing = unread(earlier, setting, scale)
    trained = fit(layout.path, arguments, sitting.reuse)
    torch.set_num_threads(1)  # two runs are read at a time, beside the fits
    settings = {"read": read_tags(setting, scale), "stream_length": scale.stream_length}
    command = portable(arguments, root)
    parts = MeasurementParts(layout, command, layout, settings)
    readings = {
        name: {tag: snapshot_record(s) for tag, s in reading.items()}
        for name, reading in read_run(layout.path, setting, scale, missing, parts).items()
    }
    kept_readings = {name: reading for name, reading in (earlier or {"readings": {}})["readings"]
                     .items() if name not in missing}  # fmt: skip
    record = {
        "variant": setting.variant,
        "seed": seed,
        "setting": asdict(setting),
        "command": command,
        "readings": {**kept_readings, **readings},
    }  # fmt: skip
    written = write_measurements(layout, record, sitting.schema)
    parts.done()
    return {**written, "kept": not trained}


def measure_all(scale: Scale, sitting: Sitting) -> dict[tuple[Setting, int], dict]:
    """Every run's measurements (of the sitting's variants alone where it names some, `--cells`,
    and of its shard of those: a run is a group), `jobs` runs at a time in `training_order`; each
    run is read as soon as it is trained, while the others train, so the cores stay busy."""
    chosen = [key for key in training_order(scale)
              if not sitting.variants or key[0].variant in sitting.variants]  # fmt: skip
    keys = [key for key in chosen if sitting.shard.keeps(key, chosen)]
    tasks = {key: functools.partial(measure, *key, scale, sitting) for key in keys}

    def done_before(key) -> bool:
        return kept_record(*key, scale, sitting) is not None

    def describe(key, record) -> str:
        opened = snapshot_of(record["readings"][TEXT][epoch_tag(scale.epochs)]).alpha().mean
        return f"{key[0].variant} seed={key[1]}: P(omega | alpha) {opened:.4f} at the end"

    def left(key) -> str | None:
        return left_to_compute(run_layout(sitting.root, *key).path,
                               arguments_of(*key, scale, sitting.root), sitting.reuse)  # fmt: skip

    return run_all(tasks, sitting.jobs, describe, done_before,
                   lambda key: f"{key[0].variant} seed={key[1]}", left)  # fmt: skip


def snapshots(record: dict, reading: str = TEXT) -> dict[str, Snapshot]:
    """A run's `reading` by weight snapshot, from its measurements."""
    return {tag: snapshot_of(value) for tag, value in record["readings"][reading].items()}
