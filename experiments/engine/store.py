"""The measurements file of a run (`<run>/measurements.json`): read, written, kept from an earlier
invocation of the same command, copied beside a report and gathered from shards' run roots.
"""

from __future__ import annotations

import base64
import contextvars
import functools
import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from experiments import REPOSITORY
from experiments.engine.sittings import fit_time
from storage import RunLayout
from storage.files import write_text_atomic


class SittingError(RuntimeError):
    """A sitting asked for what it cannot do (a run missing from the merged run roots, a
    measurements file that is not one, kept measurements of another command): one line to the
    user."""


SCHEMA = "schema"
"""The field of a measurements file that holds the version of its study's measurements."""


@dataclass(frozen=True)
class Schema:
    """The version of a study's measurements files, and how an older file is read.

    Every file is written with `version` in its `schema` field. A file without one was written
    before versions were recorded: `unstamped(record)` says which version it is. On reading, the
    `migrations` bring it up, one version at a time (`migrations[k]`: a record of version k to
    one of version k + 1, a function of the record alone); a version with no migration stays as
    it is, and the study measures what it lacks again from the run (its `up to date` check reads
    `version_of`). A file of a newer version than `version` stops the reproduction in one line."""

    version: int = 1
    migrations: Mapping[int, Callable[[dict], dict]] = field(default_factory=dict)
    unstamped: Callable[[dict], int] | None = None

    def version_of(self, record: dict) -> int:
        """The version a read record is at (after `migrated`)."""
        if SCHEMA in record:
            return record[SCHEMA]
        return self.unstamped(record) if self.unstamped is not None else self.version

    def migrated(self, record: dict, path: Path) -> dict:
        """`record` brought up to the newest version its migrations reach."""
        version = self.version_of(record)
        if not isinstance(version, int) or version > self.version:
            raise SittingError(
                f"{path} holds measurements of schema version {version!r}, newer than this "
                f"code's {self.version}: update the suite (git pull) to read it"
            )
        while version in self.migrations:
            record, version = {**self.migrations[version](record), SCHEMA: version + 1}, version + 1
        return record


SUITE_CONFIGS = ("experiments", "configs")
"""Where the suite's own configs lie in any checkout of it."""


def config_name(value: str) -> str:
    """A `--config` path as runs compare it: relative to the repository where it lies inside;
    a path into another checkout's `experiments/configs/` (a run trained in a colleague's or a
    cluster's checkout) from there, since the suite's configs have the same names in every
    checkout; any other path resolved."""
    path = Path(value).resolve()
    if path.is_relative_to(REPOSITORY):
        return path.relative_to(REPOSITORY).as_posix()
    parts = path.parts
    starts = [i for i in range(len(parts) - 1) if parts[i : i + 2] == SUITE_CONFIGS]
    return Path(*parts[starts[-1] :]).as_posix() if starts else str(path)


def portable(arguments: Sequence[str], root: Path | None) -> list[str]:
    """`arguments` as a run's measurements record them: without `--run.root`, with config paths
    named by `config_name` and the run root inside any other value written `$RUNS`, so that
    the same run kept elsewhere (another run root, another checkout) is recognised."""
    kept = []
    for index, value in enumerate(arguments):
        if value == "--run.root" or (index and arguments[index - 1] == "--run.root"):
            continue
        if index and arguments[index - 1] == "--config":
            value = config_name(value)
        kept.append(value.replace(str(root), "$RUNS") if root is not None else value)
    return kept


def read_measurements(layout: RunLayout, schema: Schema = Schema()) -> dict | None:
    """The run's measurements file (`<run>/measurements.json`), None where there is none; a file
    that is not a measurements record (cut short, edited) stops the reproduction in one line."""
    try:
        text = layout.measurements.read_text()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise SittingError(
            f"{layout.measurements} cannot be read ({error}): fix or delete it"
        ) from None
    try:
        record = json.loads(text)
    except ValueError as error:
        raise SittingError(
            f"{layout.measurements} is not valid JSON ({error.args[0]}; cut short?): restore it "
            "(git checkout, or a shard's copy), or delete it to measure the run again"
        ) from None
    if not isinstance(record, dict) or not isinstance(record.get("command"), list):
        raise SittingError(
            f"{layout.measurements} is not a run's measurements (no command list): restore it, "
            "or delete it to measure the run again"
        )
    return schema.migrated(record, layout.measurements)


def kept_measurements(layout: RunLayout, command: list[str],
                      schema: Schema = Schema()) -> dict | None:  # fmt: skip
    """The run's measurements (`read_measurements`) marked `kept` (neither trained nor measured
    now); None where it has none. Measurements from another command stop the reproduction naming
    both commands: they are never replaced by a retrain that deletes them."""
    kept = read_measurements(layout, schema)
    if kept is None:
        return None
    if kept["command"] != command:
        raise SittingError(different_command(layout, kept["command"], command))
    return {**kept, "kept": True}


def different_command(layout: RunLayout, recorded: list[str], command: list[str]) -> str:
    """One line naming a kept run's command and the one asked for, by their first difference."""
    at = next((i for i, (a, b) in enumerate(zip(recorded, command, strict=False)) if a != b),
              min(len(recorded), len(command)))  # fmt: skip
    if at and command[at - 1].startswith("--"):  # from the option whose value differs
        at -= 1
    return (
        f"{layout.measurements} was measured from another command than this reproduction's "
        f"(from argument {at}: kept {' '.join(recorded[at : at + 4]) or '(end)'} ..., asked "
        f"{' '.join(command[at : at + 4]) or '(end)'} ...): rebuild with the settings it records "
        "(scale, data), or train into another --runs, or delete its folder to train it again"
    )


def write_measurements(layout: RunLayout, record: dict, schema: Schema,
                       trained: dict | None = None) -> dict:  # fmt: skip
    """Write a run's measurements file (atomically) at the `schema`'s version, with when it was
    trained (`trained`, else `fit_time` from its own files) and the time measured; returns the
    record as written."""
    trained = trained or fit_time(layout)
    record = {**record, SCHEMA: schema.version, "trained": trained, "measured": time.time()}
    write_text_atomic(layout.measurements, json.dumps(record) + "\n")
    return record


class MeasurementParts:
    """The parts of a run's measurement taken so far, each written (atomically) to
    `<run>/measurements.parts.json` as soon as it is taken, so that a measurement cut short (a
    kill, the end of a session) goes on from its last finished part when the same command
    measures the same trained run again, instead of from the start: on one core a paper 1
    model's measurement takes about 40 minutes, a paper 2 run's readings about 50. The file
    records the command, a digest of the trained run's checkpoints and weight snapshots, and the
    measurement's own `settings` where the command does not fix them (what a paper's scale reads
    of the run); parts taken from another command, other weights or other settings are not read,
    and are replaced. Each part is kept as JSON reads it back, taken now or read from the file,
    so a resumed measurement equals an uninterrupted one. A long part keeps its own steps the
    same way (`kept_step`), so a kill loses at most one step of it. `done` removes the file once
    the measurements file is written."""

    def __init__(self, layout: RunLayout, command: list[str], trained: RunLayout,
                 settings: dict | None = None):  # fmt: skip
        self.path = layout.measurement_parts
        self.key = read_back(
            {"command": command, "weights": weights_digest(trained), "settings": settings}
        )
        try:
            kept = json.loads(self.path.read_text())
        except (OSError, UnicodeDecodeError, ValueError):  # none yet, or not a parts file
            kept = None
        same = isinstance(kept, dict) and kept.get("key") == self.key
        self.parts: dict = kept["parts"] if same and isinstance(kept.get("parts"), dict) else {}
        self.steps: dict = kept["steps"] if same and isinstance(kept.get("steps"), dict) else {}

    def __contains__(self, name: str) -> bool:
        return name in self.parts

    def take(self, name: str, measure: Callable[[], object]):
        """Part `name`: read back where it was taken before, else `measure()`d and kept."""
        if name not in self.parts:
            taking = _STEP.set(functools.partial(self._step, self.steps.setdefault(name, {})))
            try:
                self.parts[name] = read_back(measure())
            finally:
                _STEP.reset(taking)
            del self.steps[name]
            self._write()
        return self.parts[name]

    def _step(self, kept: dict, key: str, compute: Callable[[], object]):
        """`kept_step` within a part whose steps kept so far are `kept`."""
        import torch

        if key in kept:
            state = torch.frombuffer(bytearray(base64.b64decode(kept[key]["random"])),
                                     dtype=torch.uint8)  # fmt: skip
            torch.set_rng_state(state)
            return kept[key]["value"]
        value = read_back(compute())
        random = base64.b64encode(torch.get_rng_state().numpy().tobytes()).decode()
        kept[key] = {"value": value, "random": random}
        self._write()
        return value

    def _write(self) -> None:
        record = {"key": self.key, "parts": self.parts, "steps": self.steps}
        write_text_atomic(self.path, json.dumps(record) + "\n")

    def done(self) -> None:
        self.path.unlink(missing_ok=True)


def read_back(value):
    """`value` as JSON reads it back once written (tuples as lists, keys as strings): what a
    measurement keeps, so a part or step read from the file equals one just taken."""
    return json.loads(json.dumps(value))


_STEP: contextvars.ContextVar[Callable | None] = contextvars.ContextVar("step", default=None)
"""How `kept_step` keeps a step of the part being taken (`MeasurementParts.take`); None outside
one. A context variable: each thread of `pool.run_all` measures its own run."""


def kept_step(key: str, compute: Callable[[], object]):
    """One step `key` of the measurement part being taken (`MeasurementParts.take`): read back
    where the same part of the same measurement kept it before a kill, else `compute()`d and
    kept in the parts file at once, with torch's random state after it, which a step read back
    restores, so a part resumed from its steps equals an uninterrupted one. Its value is what
    JSON reads back of it, computed or read (outside a part too). For a part long enough to be
    cut short: the atlas's measurement of an untrained paper 4 model takes about an hour, 50
    tokens of about a minute each. Written here because Lightning keeps a fit's state, not a
    measurement's."""
    step = _STEP.get()
    if step is None:
        return read_back(compute())
    return step(key, compute)


def weights_digest(layout: RunLayout) -> str:
    """SHA-256 of the names and bytes of a run's checkpoints and weight snapshots: what says
    that measurement parts were taken of this trained run."""
    digest = hashlib.sha256()
    for folder in (layout.checkpoints, layout.weights):
        for path in sorted(folder.rglob("*")) if folder.is_dir() else ():
            if path.is_file():
                digest.update(path.relative_to(layout.path).as_posix().encode() + b"\0")
                with path.open("rb") as file:
                    digest.update(hashlib.file_digest(file, "sha256").digest())
    return digest.hexdigest()


def keep_beside_report(paper: str, runs: Sequence[tuple[str, int]], root: Path, out: Path) -> None:
    """Copy the measurements file of every `(variant, seed)` run of `paper` to `<out>/runs/`,
    laid out as a run root, so that the report can be rebuilt from the repository alone
    (`--runs <out>/runs --reuse-runs`)."""
    for variant, seed in runs:
        source = RunLayout.of(root, paper, variant, seed).measurements
        target = RunLayout.of(out / "runs", paper, variant, seed).measurements
        if source.resolve() != target.resolve():
            write_text_atomic(target, source.read_text())


def gather_measurements(paper: str, roots: Sequence[Path], target: Path) -> int:
    """Copy every run's measurements file of `paper` from the run `roots` (shards run elsewhere)
    into the run root `target`, laid out as there; returns how many. A run measured differently
    in two roots stops it, naming both files."""
    copied: dict[Path, Path] = {}
    for root in roots:
        if not (root / paper).is_dir():
            raise SittingError(f"{root} holds no runs of {paper} (no folder {root / paper})")
        for source in sorted((root / paper).rglob(RunLayout.MEASUREMENTS)):
            relative = source.relative_to(root)
            if relative in copied and copied[relative].read_text() != source.read_text():
                raise SittingError(
                    f"{copied[relative]} and {source} are measurements of one run that differ: "
                    "keep one of them"
                )
            copied.setdefault(relative, source)
    for relative, source in copied.items():
        if source.resolve() != (target / relative).resolve():
            write_text_atomic(target / relative, source.read_text())
    return len(copied)
