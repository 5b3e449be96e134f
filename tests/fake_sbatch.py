"""A stand-in for SLURM's `sbatch` on PATH, for the tests of `--slurm-array` without a cluster."""

from __future__ import annotations

import os
from pathlib import Path

STAND_IN = """#!/bin/sh
# sbatch's stand-in: records its arguments and the script it was given, answers as --parsable
calls=$(ls "$SBATCH_RECORD"/*.args 2>/dev/null | wc -l)
printf '%s\\n' "$@" > "$SBATCH_RECORD/$calls.args"
for script; do :; done
cp "$script" "$SBATCH_RECORD/$calls.sbatch"
echo "$((100 + calls));local"
"""
"""Call n (from 0) is job 100 + n; its arguments are kept in `<n>.args`, one a line, and the
script it submitted in `<n>.sbatch`."""


def stand_in(folder: Path, monkeypatch, body: str = STAND_IN) -> Path:
    """`sbatch` on PATH (in `folder/bin`) as `body`; the folder where it records each call."""
    programs, record = folder / "bin", folder / "sbatch_calls"
    programs.mkdir(parents=True)
    record.mkdir()
    (programs / "sbatch").write_text(body)
    (programs / "sbatch").chmod(0o755)
    monkeypatch.setenv("PATH", f"{programs}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SBATCH_RECORD", str(record))
    return record


def calls(record: Path) -> list[list[str]]:
    """The arguments of each call the stand-in recorded, in order."""
    count = len(list(record.glob("*.args")))
    return [(record / f"{n}.args").read_text().splitlines() for n in range(count)]
