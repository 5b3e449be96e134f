"""The end of every reproduction: `report.md`, `results.json` and the W&B run (`publish`), the wall
time of its stages (`Stopwatch`) and a sentence on when and where its runs were trained
(`kept_note`)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from experiments.engine.committed import wandb_folder
from experiments.engine.sittings import fit_seconds
from experiments.engine.store import REPOSITORY
from experiments.findings import Finding, findings_frame, findings_section, with_findings
from experiments.history import history_text
from experiments.report import Claim, log_to_wandb, write_report
from experiments.rule_dates import date_rules


class Stopwatch:
    """The wall time of a reproduction's stages: `with clock.stage("training"): ...`. A stage
    still running counts up to now (the report's text is written during the report stage)."""

    def __init__(self) -> None:
        self.began = time.time()
        self.started: dict[str, float] = {}
        self.ended: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        self.started[name] = time.time()
        try:
            yield
        finally:
            self.ended[name] = time.time()

    @property
    def minutes(self) -> dict[str, float]:
        """Each stage's minutes, in the order they began."""
        now = time.time()
        return {name: (self.ended.get(name, now) - start) / 60
                for name, start in self.started.items()}  # fmt: skip

    @property
    def total(self) -> float:
        return sum(self.minutes.values())

    def stages(self) -> str:
        """`training 12.3 min, analyses 1.0 min`."""
        return ", ".join(f"{name} {value:.1f} min" for name, value in self.minutes.items())


def kept_note(records: Sequence[dict]) -> str:
    """A report's sentence on when the runs were trained (from their own files: the first run's
    start to the last run's end, the fits' time summed over every sitting, and their CPU time
    where recorded), on those kept from an earlier invocation (`--reuse-runs`: a finished run,
    or its measurements) and on the devices they trained on (`devices_note`)."""
    span = max(r["trained"]["finished"] for r in records) - min(
        r["trained"]["started"] for r in records
    )
    summed = sum(fit_seconds(r["trained"]) for r in records)
    kept = sum(bool(r.get("kept")) for r in records)
    unrecorded = sum("seconds" not in r["trained"] for r in records)
    text = (f" The runs were trained within {span / 60:.1f} min (the first run's start to the "
            f"last run's end; {summed / 3600:.1f} h of fits summed over the runs and their "
            "sittings")  # fmt: skip
    if unrecorded:
        text += (f"; {unrecorded} of them were trained before sittings were recorded, so a "
                 "resumed one counts from its last sitting's start")  # fmt: skip
    cpu = [r["trained"]["cpu_seconds"] for r in records if "cpu_seconds" in r["trained"]]
    if cpu:  # leaves out pauses and waits for a core, which the span counts
        text += (f"; the fits' CPU time, recorded for {len(cpu)} of the runs: "
                 f"{sum(cpu) / 3600:.1f} h")  # fmt: skip
    text += ")"
    if kept:
        text += (f"; {kept} of the {len(records)} were kept from an earlier invocation "
                 "(`--reuse-runs`), so this invocation's time above does not include "
                 "them")  # fmt: skip
    return text + "." + devices_note(records)


def devices_note(records: Sequence[dict]) -> str:
    """Where the runs were trained (their sittings' `devices`, `sittings.fit_time`): how many on
    each device, those trained on several and those trained before devices were recorded; empty
    where no run recorded one."""
    named = [r["trained"]["devices"] for r in records if r["trained"].get("devices")]
    if not named:
        return ""
    counts = Counter(devices[0] for devices in named if len(devices) == 1)
    parts = [f"{count} on {device}" for device, count in sorted(counts.items())]
    mixed = sum(len(devices) > 1 for devices in named)
    if mixed:
        parts.append(f"{mixed} resumed on another device than they started on")
    if len(named) < len(records):
        parts.append(f"{len(records) - len(named)} before devices were recorded")
    return " Trained: " + ", ".join(parts) + "."


def publish(
    out: Path,
    paper: str,
    claims: Sequence[Claim],
    markdown: str,
    root: Path,
    figures: dict[str, Path],
    tables: dict[str, pd.DataFrame],
    records: Sequence[dict] = (),
    *,
    scale: str,
    seeds: object = None,
    findings: Sequence[Finding] = (),
    registered: Callable[[str], str | None] | None = None,
) -> Path:
    """The end of every reproduction: `report.md`, `results.json` and `history.md` in `out`,
    each claim dated (`rule_dates`: by the committed report's rules file, which a report written
    to that folder keeps up to date; the runs' `records` say when they finished), and the
    figures and tables as the W&B run `<paper>-<scale>` (`report.log_to_wandb`, with the scale's
    `seeds`, kept under the run root `root`: `committed.wandb_folder`). Returns the report's
    path. The report opens with the paper's `findings`, each claim marked with the one it tests
    (`experiments.findings`); the findings table is logged to W&B beside the others. A claim
    whose rule was pre-registered (`registered`: its day by the claim's id, else None) is dated by
    its registration where the rules file does not know it yet."""
    finishes = [r["trained"]["finished"] for r in records]
    finished = (min(finishes), max(finishes)) if finishes else None
    claims, book = date_rules(claims, out, REPOSITORY / "reports" / paper,
                              finished and finished[0], runs=root,
                              registered=registered)  # fmt: skip
    claims = with_findings(claims, findings)
    title = markdown.partition("\n")[0].removeprefix("# ")
    opening = findings_section(findings, claims)
    if opening:
        tables = {"findings": findings_frame(findings, claims), **tables}
    report = write_report(out, claims, markdown, history_text(title, claims, book, finished),
                          opening)  # fmt: skip
    folder = wandb_folder(paper, scale, root, REPOSITORY / "reports")
    log_to_wandb(folder, paper, scale, claims, figures, tables, seeds)
    return report
