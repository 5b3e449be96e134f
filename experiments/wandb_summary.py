"""`python -m experiments wandb-summary PATH [PATH ...]`: what a W&B run recorded (its name, group,
tags, config and summary), read from the files it wrote, offline or before a sync, with no W&B
server.

PATH is a run folder (`runs/paper1/guided/seed=1`), a report's W&B folder
(`<run root>/wandb-reports/paper1-quick`), a `wandb/` folder, one `offline-run-*` folder or its
`run-<id>.wandb` file. A run resumed over several sittings (one `offline-run-*` folder each, the
same id) is printed once, its sittings read in order, so its summary is the last value of each
metric.

W&B keeps an offline run's config and summary only in its transaction log, `run-<id>.wandb`:
W&B's own protobuf records (`wandb.proto.wandb_internal_pb2.Record`) in LevelDB's log format.
They are read as data: every value is JSON, nothing named in them is imported. A log cut short
(a killed process) is read up to its last whole record, and the printout says so.
"""

from __future__ import annotations

import json
import re
import struct
import sys
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

MAGIC = b":W&B"
HEADER = 7  # the file's: MAGIC, a 2-byte key and a version byte; also each record's
BLOCK = 32768
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
LEFT_OUT = ("_wandb", "_timestamp")
"""W&B's own bookkeeping keys, left out of a run's config and summary."""


@dataclass
class WandbRun:
    """One W&B run as its logs recorded it: `config` and `summary` as nested dicts."""

    run_id: str
    name: str = ""
    group: str = ""
    tags: tuple[str, ...] = ()
    config: dict = field(default_factory=dict)
    summary: dict = field(default_factory=dict)
    sittings: list[Path] = field(default_factory=list)
    torn: bool = False


def read_records(log: Path) -> tuple[list[bytes], bool]:
    """The records of the W&B transaction log `log` (each a serialized `Record`) and whether the
    log ends in one cut short (read up to its last whole record)."""
    data = log.read_bytes()
    if data[:4] != MAGIC:
        raise ValueError(f"{log} is not a W&B run log (it does not start with {MAGIC!r})")
    found: list[bytes] = []
    position, parts = HEADER, []
    while position < len(data):
        left = BLOCK - position % BLOCK
        if left < HEADER:  # a block's zero padding
            position += left
            continue
        checksum, length, kind = struct.unpack(
            "<IHB", data[position : position + HEADER].ljust(HEADER, b"\0")
        )
        chunk = data[position + HEADER : position + HEADER + length]
        if len(chunk) < length or zlib.crc32(chunk, zlib.crc32(bytes([kind]))) != checksum:
            return found, True
        position += HEADER + length
        if kind == FULL:
            found.append(chunk)
        elif kind == FIRST:
            parts = [chunk]
        elif kind in (MIDDLE, LAST):
            parts.append(chunk)
            if kind == LAST:
                found.append(b"".join(parts))
                parts = []
    return found, bool(parts)


def decoded(log: Path) -> tuple[list, bool]:
    """The records of the W&B log `log`, decoded, and whether it ends in one cut short."""
    from google.protobuf.message import DecodeError
    from wandb.proto import wandb_internal_pb2

    found, torn = read_records(log)
    try:
        return [wandb_internal_pb2.Record.FromString(data) for data in found], torn
    except DecodeError:
        raise ValueError(f"{log} holds a record that is not one of W&B's") from None


def start_time(records: list) -> int:
    """When the sitting whose records are `records` started, in microseconds since the epoch, as
    its run record says (0 if it has none)."""
    runs = (record.run for record in records if record.WhichOneof("record_type") == "run")
    return next((run.start_time.ToMicroseconds() for run in runs), 0)


def read_log(log: Path, records: list, torn: bool, run: WandbRun) -> WandbRun:
    """`run` updated by the `records` of the log `log` (one sitting of it)."""
    run.sittings.append(log.parent)
    run.torn = run.torn or torn
    for record in records:
        kind = record.WhichOneof("record_type")
        if kind == "run":
            run.name = record.run.display_name or run.name
            run.group = record.run.run_group or run.group
            run.tags = tuple(record.run.tags) or run.tags
            update(run.config, record.run.config.update, ())
        elif kind in ("config", "summary"):
            section = getattr(record, kind)
            update(run.config if kind == "config" else run.summary, section.update, section.remove)
    for key in LEFT_OUT:
        run.config.pop(key, None)
        run.summary.pop(key, None)
    return run


def update(target: dict, items: Sequence, removed: Sequence) -> None:
    """Set each of `items`' value (JSON) at its key (`key`, or the path `nested_key`); drop each
    of `removed`."""
    for item in items:
        *within, last = list(item.nested_key) or [item.key]
        place = target
        for key in within:
            if not isinstance(place.get(key), dict):
                place[key] = {}
            place = place[key]
        place[last] = json.loads(item.value_json)
    for item in removed:
        *within, last = list(item.nested_key) or [item.key]
        place = target
        for key in within:
            place = place.get(key) if isinstance(place, dict) else None
        if isinstance(place, dict):
            place.pop(last, None)


def run_logs(path: Path) -> list[Path]:
    """The transaction logs under `path`, by their folders' start second: `path` itself, those of an
    `offline-run-*` (or online `run-*`) folder, of a `wandb/` folder, or of a folder holding
    `wandb/`."""
    if path.is_file():
        return [path]
    folders = [path, path / "wandb"] if path.name != "wandb" else [path]
    found = [log for folder in folders for pattern in ("offline-run-*", "run-*")
             for log in sorted(folder.glob(f"{pattern}/run-*.wandb"))]  # fmt: skip
    found += sorted(path.glob("run-*.wandb"))
    return sorted(set(found), key=started)


def started(log: Path) -> str:
    """When the sitting that wrote `log` started (`YYYYMMDD_HHMMSS`, from its folder's name)."""
    stamp = re.search(r"\d{8}_\d{6}", log.parent.name)
    return stamp[0] if stamp else ""


def read_runs(path: Path) -> list[WandbRun]:
    """Every W&B run whose logs lie under `path`, in the order they started (to the microsecond
    their run records give: a folder's name gives only the second); a run resumed over several
    sittings once."""
    if not path.exists():
        raise ValueError(f"{path} does not exist: give a run folder, its wandb/ folder or an "
                           "offline-run-* folder")  # fmt: skip
    logs = run_logs(path)
    if not logs:
        raise ValueError(
            f"{path} holds no W&B run (no run-*.wandb in it, its wandb/ or its offline-run-* "
            "folders): was it trained with WANDB_MODE=disabled?"
        )
    sittings = [(log, *decoded(log)) for log in logs]
    sittings.sort(key=lambda sitting: (started(sitting[0]), start_time(sitting[1])))
    runs: dict[str, WandbRun] = {}
    for log, records, torn in sittings:
        run_id = log.stem.removeprefix("run-")
        runs[run_id] = read_log(log, records, torn, runs.get(run_id) or WandbRun(run_id))
    return list(runs.values())


def flat(values: dict, prefix: str = "") -> dict[str, object]:
    """`values` with nested keys joined by `.`."""
    out = {}
    for key, value in values.items():
        if isinstance(value, dict) and value:
            out |= flat(value, f"{prefix}{key}.")
        else:
            out[f"{prefix}{key}"] = value
    return out


def describe(run: WandbRun) -> str:
    """The printout of one run: its id, name, group and tags, then its config and summary, one
    `key: value` (JSON) a line."""
    sittings = f"; {len(run.sittings)} sittings" if len(run.sittings) > 1 else ""
    lines = [f"W&B run {run.run_id} {run.name or '(no name)'} (group {run.group or '-'}; tags "
             f"{', '.join(run.tags) or '-'}{sittings}): {run.sittings[-1]}"]  # fmt: skip
    if run.torn:
        lines.append("note: its log ends in a record cut short (a killed process): shown up to "
                     "its last whole record")  # fmt: skip
    for title, values in (("config", run.config), ("summary", run.summary)):
        lines.append(f"{title}:")
        lines += [f"  {key}: {json.dumps(value)}" for key, value in sorted(flat(values).items())]
    return "\n".join(lines)


def main(arguments: Sequence[str]) -> None:
    """Print the W&B runs under each path; a path holding none is one line and exit status 2."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m experiments wandb-summary",
        description="Print the name, group, tags, config and summary of the W&B runs (offline, "
        "or online before a sync) under each PATH, read from their files.",
    )
    parser.add_argument("paths", type=Path, nargs="+", metavar="PATH",
                        help="a run folder, a wandb/ folder, an offline-run-* folder or a "
                        "run-*.wandb file")  # fmt: skip
    args = parser.parse_args(arguments)
    try:
        runs = [run for path in args.paths for run in read_runs(path)]
    except (ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    print("\n\n".join(describe(run) for run in runs))
