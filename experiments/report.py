"""Claims with verdicts decided by written rules, and the report files of a reproduction.

Every number or finding of a paper becomes a `Claim`: the paper's value, the measured
mean/std/n, the rule in words, and the verdict that the rule's code computes (never set by
hand). `write_report` writes `results.json` (a list of claims, as in DESIGN.md) and
`report.md` atomically.
"""

from __future__ import annotations

import json
import math
import subprocess
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from probes.command.outputs import escape_cell, markdown_table, save_figure  # noqa: F401 (re-exported)
from probes.command.outputs import log_to_wandb as log_wandb_run
from storage.files import write_text_atomic

VERDICTS = ("reproduced", "partially reproduced", "not reproduced")


@dataclass(frozen=True)
class Measured:
    mean: float
    std: float
    n: int
    values: tuple[float, ...] = ()

    @classmethod
    def of(cls, values: Sequence[float]) -> Measured:
        values = tuple(float(v) for v in values)
        n = len(values)
        mean = sum(values) / n
        std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
        return cls(mean, std, n, values)


@dataclass(frozen=True)
class Claim:
    id: str
    claim: str
    paper: float | str
    measured: Measured
    rule: str
    verdict: str

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")

    def as_json(self) -> dict:
        record = asdict(self)
        record["measured"] = {k: v for k, v in record["measured"].items() if k != "values"}
        record["measured"]["values"] = list(self.measured.values)
        return record


def compare_means(
    id: str,
    claim: str,
    paper_values: Sequence[float],
    measured_values: Sequence[float],
    rounding: float = 0.02,
) -> Claim:
    """Paper mean vs measured mean over independent runs (see `compare_summaries`)."""
    return compare_summaries(
        id, claim, Measured.of(paper_values), Measured.of(measured_values), rounding
    )


def compare_summaries(
    id: str, claim: str, paper: Measured, measured: Measured, rounding: float = 0.02
) -> Claim:
    """Paper mean vs measured mean, the paper given as mean, std and number of runs.

    Rule: with SE = sqrt(s_paper^2/n_paper + s_measured^2/n_measured), reproduced when
    |difference| <= 2 SE + `rounding` (the paper's values are rounded to 2 decimals), partially
    reproduced when <= 4 SE + 2.5 `rounding`, else not reproduced.
    """
    standard_error = math.sqrt(paper.std**2 / paper.n + measured.std**2 / measured.n)
    difference = abs(measured.mean - paper.mean)
    if difference <= 2 * standard_error + rounding:
        verdict = "reproduced"
    elif difference <= 4 * standard_error + 2.5 * rounding:
        verdict = "partially reproduced"
    else:
        verdict = "not reproduced"
    rule = (
        f"|measured mean - paper mean| = {difference:.3f}; reproduced if <= 2 SE + {rounding} "
        f"= {2 * standard_error + rounding:.3f}, partially if <= 4 SE + {2.5 * rounding:.2f} "
        f"= {4 * standard_error + 2.5 * rounding:.3f} (SE of the difference of means)"
    )
    return Claim(id, claim, round(paper.mean, 4), measured, rule, verdict)


def ratio_claim(
    id: str, claim: str, paper: float, measured_values: Sequence[float], within: float = 2.0
) -> Claim:
    """A count or size (e.g. units in a functional group) vs the paper's: reproduced when the
    measured mean is within a factor `within` of the paper's value, partially within
    `within`^2."""
    measured = Measured.of(measured_values)
    ratio = measured.mean / paper if paper else math.inf
    closeness = min(ratio, 1 / ratio) if ratio > 0 else 0.0
    return threshold_claim(
        id, claim, paper, measured_values, closeness,
        "min(measured/paper, paper/measured) of the means",
        reproduced_at=1 / within, partially_at=1 / within**2,
    )  # fmt: skip


def threshold_claim(
    id: str,
    claim: str,
    paper: float | str,
    values: Sequence[float],
    statistic: float,
    statistic_name: str,
    reproduced_at: float,
    partially_at: float,
) -> Claim:
    """A finding checked by one statistic: reproduced when `statistic >= reproduced_at`,
    partially when `>= partially_at`, else not reproduced."""
    if statistic >= reproduced_at:
        verdict = "reproduced"
    elif statistic >= partially_at:
        verdict = "partially reproduced"
    else:
        verdict = "not reproduced"
    rule = (
        f"{statistic_name} = {statistic:.3f}; reproduced if >= {reproduced_at:.3g}, "
        f"partially if >= {partially_at:.3g}"
    )
    return Claim(id, claim, paper, Measured.of(values), rule, verdict)


def graded(reproduced: bool, partially: bool) -> str:
    """The verdict of a rule with a reproduced and a weaker, partially-reproduced condition."""
    if reproduced:
        return "reproduced"
    return "partially reproduced" if partially else "not reproduced"


def summary_counts(claims: Sequence[Claim]) -> dict[str, int]:
    counts = Counter(c.verdict for c in claims)
    return {verdict: counts.get(verdict, 0) for verdict in VERDICTS}


def verdict_line(report: Path, claims: Sequence[Claim]) -> str:
    """`wrote <report>: N reproduced, N partially reproduced, N not reproduced`."""
    counts = summary_counts(claims)
    return f"wrote {report}: " + ", ".join(f"{n} {verdict}" for verdict, n in counts.items())


def current_commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def claims_table(claims: Sequence[Claim]) -> str:
    lines = [
        "| id | claim | paper | measured mean ± std (n) | verdict | rule |",
        "|---|---|---|---|---|---|",
    ]
    for c in claims:
        m = c.measured
        paper = f"{c.paper:.3f}" if isinstance(c.paper, float) else str(c.paper)
        lines.append(
            f"| `{c.id}` | {escape_cell(c.claim)} | {escape_cell(paper)} | {m.mean:.3f} ± "
            f"{m.std:.3f} ({m.n}) | **{c.verdict}** | {escape_cell(c.rule)} |"
        )
    return "\n".join(lines)


def write_report(folder: str | Path, claims: Sequence[Claim], markdown: str) -> Path:
    """Write `results.json` (the claims) and `report.md` (`markdown` plus the claims and a
    summary of verdicts) into `folder`, each atomically."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    write_text_atomic(
        folder / "results.json", json.dumps([c.as_json() for c in claims], indent=2) + "\n"
    )
    counts = summary_counts(claims)
    summary = ", ".join(f"{n} {verdict}" for verdict, n in counts.items())
    text = (
        f"{markdown.rstrip()}\n\n## Claims\n\n{claims_table(claims)}\n\n"
        f"## Summary\n\n{len(claims)} claims: {summary}.\n"
    )
    write_text_atomic(folder / "report.md", text)
    return folder / "report.md"


def claims_frame(claims: Sequence[Claim]) -> pd.DataFrame:
    """The claims as a table (for W&B)."""
    return pd.DataFrame(
        [
            {"id": c.id, "claim": c.claim, "paper": str(c.paper), "mean": c.measured.mean,
             "std": c.measured.std, "n": c.measured.n, "verdict": c.verdict, "rule": c.rule}
            for c in claims
        ]
    )  # fmt: skip


def log_to_wandb(
    root: Path, paper: str, figures: dict[str, Path], tables: dict[str, pd.DataFrame]
) -> None:
    """A reproduction's figures and tables as one W&B run, `<paper>/report`, in
    `<root>/<paper>/report/` (offline unless `WANDB_MODE=online`)."""
    log_wandb_run(root / paper / "report", f"{paper}/report", paper, figures, tables)
