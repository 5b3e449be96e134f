"""Claims with verdicts decided by written rules, and the report files of a reproduction.

Every number or finding of a paper becomes a `Claim`: the paper's value, the measured
mean/std/n, the rule in words, and the verdict that the rule's code computes (never set by
hand). `write_report` writes `results.json` (a list of claims, as in DESIGN.md) and
`report.md` atomically.

A rule or reading changed after results existed keeps the verdict of the old one beside the new
(`Earlier`, attached by `with_earlier` or by the rule itself): the report lists each change with
its reason and every verdict it changed.
"""

from __future__ import annotations

import json
import math
import subprocess
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
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
class Earlier:
    """A claim's verdict under the rule (or the reading of the paper) that the current one
    replaced after results existed, and why it was replaced."""

    verdict: str
    rule: str
    reason: str


@dataclass(frozen=True)
class Claim:
    id: str
    claim: str
    paper: float | str
    measured: Measured
    rule: str
    verdict: str
    earlier: Earlier | None = None

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")

    def as_json(self) -> dict:
        record = asdict(self)
        record["measured"] = {k: v for k, v in record["measured"].items() if k != "values"}
        record["measured"]["values"] = list(self.measured.values)
        return record

    @classmethod
    def from_json(cls, record: dict) -> Claim:
        """The claim `as_json` wrote (a `results.json` entry)."""
        measured = dict(record["measured"])
        measured["values"] = tuple(measured.get("values", ()))
        earlier = record.get("earlier")
        earlier = Earlier(**earlier) if earlier else None
        return cls(record["id"], record["claim"], record["paper"], Measured(**measured),
                   record["rule"], record["verdict"], earlier)  # fmt: skip

    @property
    def changed(self) -> bool:
        """The verdict differs from the one under the rule this claim's replaced."""
        return self.earlier is not None and self.earlier.verdict != self.verdict


def with_earlier(claims: Sequence[Claim], earlier: Sequence[Claim], reason: str) -> list[Claim]:
    """`claims`, each given the verdict and rule of the claim with its id in `earlier` (the same
    claims computed by the replaced rule or reading) and the `reason` of the change, where the
    change touched it (its rule's text or verdict differs). Where that earlier claim itself
    replaced a rule, its own earlier verdict is kept: the verdict before every change."""
    by_id = {claim.id: claim for claim in earlier}

    def previous(claim: Claim) -> Earlier | None:
        old = by_id.get(claim.id)
        if old is None or (old.rule, old.verdict) == (claim.rule, claim.verdict):
            return None
        if old.earlier is not None:
            return Earlier(old.earlier.verdict, old.earlier.rule,
                           f"{reason}; and {old.earlier.reason}")  # fmt: skip
        return Earlier(old.verdict, old.rule, reason)

    return [replace(claim, earlier=previous(claim) or claim.earlier) for claim in claims]


def compare_means(
    id: str,
    claim: str,
    paper_values: Sequence[float],
    measured_values: Sequence[float],
    rounding: float = 0.02,
    decimals: int = 2,
) -> Claim:
    """Paper mean vs measured mean over independent runs (see `compare_summaries`)."""
    return compare_summaries(
        id, claim, Measured.of(paper_values), Measured.of(measured_values), rounding, decimals
    )


UNROUNDED = (
    "until issue 19 the rule compared the unrounded measured mean with the paper's printed "
    "value, so float noise decided ties (|1.0 - 0.98| = 0.020000000000000018 > 0.02); it now "
    "compares at the paper's printed precision"
)


def compare_summaries(
    id: str,
    claim: str,
    paper: Measured,
    measured: Measured,
    rounding: float = 0.02,
    decimals: int = 2,
) -> Claim:
    """Paper mean vs measured mean, the paper given as mean, std and number of runs.

    Rule: the measured mean is rounded to the paper's printed precision (`decimals`) and the
    difference is taken at that precision; with SE = sqrt(s_paper^2/n_paper +
    s_measured^2/n_measured), reproduced when |difference| <= 2 SE + `rounding` (the paper's
    values are rounded to 2 decimals), partially reproduced when <= 4 SE + 2.5 `rounding`, else
    not reproduced. The verdict of the same rule on unrounded floats is kept as `earlier`.
    """
    standard_error = math.sqrt(paper.std**2 / paper.n + measured.std**2 / measured.n)
    reproduced_within = 2 * standard_error + rounding
    partially_within = 4 * standard_error + 2.5 * rounding

    def verdict_of(difference: float) -> str:
        return graded(difference <= reproduced_within, difference <= partially_within)

    exact = abs(measured.mean - paper.mean)
    printed = round(abs(round(measured.mean, decimals) - paper.mean), decimals)
    rule = (
        f"|measured mean - paper mean| at the paper's precision ({decimals} decimals) = "
        f"{printed:.{decimals}f}; reproduced if <= 2 SE + {rounding} = {reproduced_within:.3f}, "
        f"partially if <= 4 SE + {2.5 * rounding:.2f} = {partially_within:.3f} (SE of the "
        "difference of means)"
    )
    earlier_rule = f"the same on unrounded means: |difference| = {exact!r}"
    return Claim(
        id, claim, round(paper.mean, 4), measured, rule, verdict_of(printed),
        Earlier(verdict_of(exact), earlier_rule, UNROUNDED),
    )  # fmt: skip


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
        verdict = f"**{c.verdict}**"
        if c.changed:
            verdict += f" (earlier: {c.earlier.verdict}; see Rule changes)"
        lines.append(
            f"| `{c.id}` | {escape_cell(c.claim)} | {escape_cell(paper)} | {m.mean:.3f} ± "
            f"{m.std:.3f} ({m.n}) | {verdict} | {escape_cell(c.rule)} |"
        )
    return "\n".join(lines)


def rule_changes(claims: Sequence[Claim]) -> str:
    """The report's section on rules and readings replaced after results existed: each reason,
    how many claims it applies to, and every verdict it changed with the earlier rule."""
    reasons = list(dict.fromkeys(c.earlier.reason for c in claims if c.earlier))
    if not reasons:
        return ""
    parts = ["## Rule changes\n"]
    for number, reason in enumerate(reasons, 1):
        applied = [c for c in claims if c.earlier and c.earlier.reason == reason]
        changed = [c for c in applied if c.changed]
        parts.append(f"{number}. {reason[0].upper()}{reason[1:]}. It applies to {len(applied)} "
                     f"claims and changed {len(changed)} verdicts"
                     f"{':' if changed else '.'}")  # fmt: skip
        parts += [f"   - `{c.id}`: {c.earlier.verdict} -> {c.verdict} (earlier rule: "
                  f"{escape_cell(c.earlier.rule)})" for c in changed]  # fmt: skip
    return "\n".join(parts) + "\n\n"


def write_report(folder: str | Path, claims: Sequence[Claim], markdown: str) -> Path:
    """Write `results.json` (the claims) and `report.md` (`markdown` plus the claims, the rule
    changes and a summary of verdicts) into `folder`, each atomically."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    write_text_atomic(
        folder / "results.json", json.dumps([c.as_json() for c in claims], indent=2) + "\n"
    )
    counts = summary_counts(claims)
    summary = ", ".join(f"{n} {verdict}" for verdict, n in counts.items())
    changed = sum(c.changed for c in claims)
    if changed:
        summary += f"; {changed} verdicts differ from the earlier rules (see Rule changes)"
    text = (
        f"{markdown.rstrip()}\n\n## Claims\n\n{claims_table(claims)}\n\n{rule_changes(claims)}"
        f"## Summary\n\n{len(claims)} claims: {summary}.\n"
    )
    write_text_atomic(folder / "report.md", text)
    return folder / "report.md"


def claims_frame(claims: Sequence[Claim]) -> pd.DataFrame:
    """The claims as a table (for W&B)."""
    return pd.DataFrame(
        [
            {"id": c.id, "claim": c.claim, "paper": str(c.paper), "mean": c.measured.mean,
             "std": c.measured.std, "n": c.measured.n, "verdict": c.verdict, "rule": c.rule,
             "earlier verdict": c.earlier.verdict if c.earlier else None}
            for c in claims
        ]
    )  # fmt: skip


def log_to_wandb(
    root: Path, paper: str, figures: dict[str, Path], tables: dict[str, pd.DataFrame]
) -> None:
    """A reproduction's figures and tables as one W&B run, `<paper>/report`, in
    `<root>/<paper>/report/` (offline unless `WANDB_MODE=online`)."""
    log_wandb_run(root / paper / "report", f"{paper}/report", paper, figures, tables)
