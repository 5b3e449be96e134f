"""Paper 2's runs trained again for a reading their committed weights cannot give, set into the
committed runs' measurement files.

The registered reading of the authors' CD before their fix (`--before-fix`,
`reports/paper2/preregistration.md` item 4) needs weight snapshots, which the committed report
does not keep, so its 21 runs were trained again (`reports/paper2/retrained/`). The report's
other verdicts stay those of the committed models: `merged` gives a committed run's record the
retrained run's before-fix readings (`runs.BEFORE_FIX_READINGS`) and nothing else, and records in
`retrained` how the retrained run's float32 readings compare with the committed ones (`compared`,
as registered): every number equal, the same model within float32 round-off, or another model.
Another model's own text reading is kept there too, so the report sets its before-fix values
beside the readings of the model they were read from (`retrained_text`), not the committed one's.
A retrained run without a committed counterpart (item 5's new seeds) is a run of its own and is
copied as it is.

    python -m experiments.paper2.retrained reports/paper2/runs reports/paper2/retrained/runs ROOT
    python -m experiments.paper2 --scale default --runs ROOT --reuse-runs --before-fix

The first writes every committed file, so merged, and the new runs under ROOT (which must not
hold measurement files yet: nothing is written over); the second builds the report from them,
training nothing. Written by hand: a merge of this suite's own records.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from experiments.paper2.runs import BEFORE_FIX_READINGS, TEXT
from storage.files import write_text_atomic

ROUND_OFF = 1e-3
"""The largest relative difference of a mean (P(omega | phrase) or the full model's P(omega), at
any snapshot of any reading) between two runs of one command that still counts as the same model
within float32 round-off: float32 arithmetic taken in another order moved the seven such runs'
means by at most 6.2e-5; a model that learned otherwise moves its end P(omega | alpha) by
percents."""

EQUAL, ROUNDED, OTHER = "equal", "within float32 round-off", "another model"
MEASUREMENTS = "measurements.json"


def means(record: dict, readings: list[str]) -> dict[tuple[str, ...], float]:
    """Every mean of `readings` in a run's record, by (reading, snapshot, phrase or `full`)."""
    found = {}
    for reading in readings:
        for tag, snapshot in record["readings"][reading].items():
            estimates = {**snapshot["phrase"], "full": snapshot["full"]}
            found |= {(reading, tag, name): value["mean"] for name, value in estimates.items()}
    return found


def compared(committed: dict, retrained: dict) -> dict:
    """How the retrained run's readings compare with the committed run's, over every reading the
    committed run was measured at (a before-fix reading it holds came from a merge: leaving it
    out keeps a merge of merged files the same): `readings` `EQUAL` (every number), `ROUNDED`
    (every mean within `ROUND_OFF`, relative) or `OTHER`; how many means differ, of how many,
    and the largest relative difference."""
    names = [name for name in committed["readings"] if name not in BEFORE_FIX_READINGS]
    run = f"the retrained run of {committed['variant']} seed {committed['seed']}"
    again = "read it again with --reuse-runs --before-fix where it was trained"
    if missing := [name for name in names if name not in retrained["readings"]]:
        raise ValueError(f"{run} lacks the readings {', '.join(missing)}: {again}")
    old, new = means(committed, names), means(retrained, names)
    if unread := sorted({tag for _, tag, _ in old.keys() - new.keys()}):
        raise ValueError(f"{run} lacks the snapshots {', '.join(unread)} the committed run was "
                         f"read at: {again}")  # fmt: skip
    differ = {key: abs(new[key] - value) / max(abs(new[key]), abs(value))
              for key, value in old.items() if new[key] != value}  # fmt: skip
    largest = max(differ.values(), default=0.0)
    same = all(committed["readings"][n] == retrained["readings"][n] for n in names)
    verdict = EQUAL if same else ROUNDED if largest <= ROUND_OFF else OTHER
    return {"readings": verdict, "means_differ": len(differ), "means": len(old),
            "largest_relative_difference": float(f"{largest:.3g}")}  # fmt: skip


def merged(committed: dict, retrained: dict) -> dict:
    """The committed run's record with the retrained run's before-fix readings, and `retrained`:
    `compared`'s result, when the retrained run was trained (`trained`) and, for another model,
    its own text reading (`text`)."""
    if (committed["variant"], committed["seed"], committed["command"]) != (
        retrained["variant"],
        retrained["seed"],
        retrained["command"],
    ):
        raise ValueError(
            f"{retrained['variant']} seed {retrained['seed']}: the retrained run's "
            "command is not the committed run's, so it is not that run again"
        )
    comparison = compared(committed, retrained)
    if comparison["readings"] == OTHER:
        comparison[TEXT] = retrained["readings"][TEXT]
    before_fix = {name: retrained["readings"][name] for name in BEFORE_FIX_READINGS
                  if name in retrained["readings"]}  # fmt: skip
    return {**committed, "readings": {**committed["readings"], **before_fix},
            "retrained": {**comparison, "trained": retrained.get("trained")}}  # fmt: skip


def retrained_text(record: dict) -> dict | None:
    """The text reading of the model a record's before-fix readings were read from, where that is
    not the committed model (`merged`): None otherwise."""
    return record.get("retrained", {}).get(TEXT)


def merge_folders(committed: Path, retrained: Path, root: Path) -> dict[str, int]:
    """Every measurement file under `committed`, merged with its counterpart under `retrained`
    where there is one, and every retrained run without one, written under `root` at the same
    relative path; how many runs were copied, merged and added."""
    for folder in (committed, retrained):
        if not folder.is_dir():
            raise FileNotFoundError(f"{folder} is not a folder of run measurement files")
    if any(root.rglob(MEASUREMENTS)):
        raise FileExistsError(f"{root} already holds measurement files: give an empty folder")
    old = {p.relative_to(committed): p for p in committed.rglob(MEASUREMENTS)}
    new = {p.relative_to(retrained): p for p in retrained.rglob(MEASUREMENTS)}
    counts = {"copied": 0, "merged": 0, "added": 0}
    for path in sorted(old.keys() | new.keys()):
        records = [json.loads(p.read_text()) if p else None for p in (old.get(path),
                                                                      new.get(path))]  # fmt: skip
        if records[0] and records[1]:
            record, kind = merged(*records), "merged"
        else:
            record, kind = records[0] or records[1], "copied" if records[0] else "added"
        write_text_atomic(root / path, json.dumps(record) + "\n")
        counts[kind] += 1
    return counts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.paper2.retrained",
        description="Set paper 2's runs trained again (their before-fix readings) into the "
        "committed runs' measurement files, under a new run root.",
    )
    parser.add_argument("committed", type=Path, help="e.g. reports/paper2/runs")
    parser.add_argument("retrained", type=Path, help="e.g. reports/paper2/retrained/runs")
    parser.add_argument("root", type=Path, help="an empty run root the merged files go to")
    args = parser.parse_args(argv)
    try:
        counts = merge_folders(args.committed, args.retrained, args.root)
    except (OSError, ValueError) as error:
        parser.exit(2, f"{parser.prog}: {error}\n")
    print(
        f"{args.root}: {counts['copied']} committed runs copied, {counts['merged']} merged "
        f"with their runs trained again, {counts['added']} new runs added; build the report "
        f"with python -m experiments.paper2 --runs {args.root} --reuse-runs --before-fix"
    )


if __name__ == "__main__":
    main()
