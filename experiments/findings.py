"""A paper's findings, each judged from the claims that test it, for the table a report opens with.

A paper states a handful of findings (a figure's trend, a section's conclusion); the suite tests
each by one or more claims (`experiments.report.Claim`), under the reading of the paper the
report calls primary and, where the text allows others, under those too. A study lists its
findings as `Finding`s, each naming its claims by id patterns (`fnmatch`: `fig2.*`). Publishing a
report (`experiments.engine.publish`) marks every claim with the finding it tests and the reading
it is under (`Claim.finding`, `Claim.reading`, kept in `results.json`), so a finding's verdict is
a pure function of `results.json` (`finding_verdicts`), as the README's table reads it.

The rule of a finding's verdict under one reading (`verdict_of`): its claims judged uninformative
count for nothing; of the rest, all reproduced is **reproduced**, all not reproduced is **not
reproduced**, anything between is **partially reproduced**; no informative claim leaves the
finding **uninformative**.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase

import pandas as pd

from experiments.report import UNINFORMATIVE, VERDICTS, Claim, escape_cell

NOT_MEASURED = "not measured at this scale"
"""A finding's verdict where none of the report's claims tests it (a quick run leaves some out)."""

PRIMARY = "primary"
"""The reading of the paper a report's verdicts are given under (`Claim.reading` is None)."""


@dataclass(frozen=True)
class Finding:
    """One finding of a paper.

    - `id`: short and stable (`fig2`, `sec4.1`);
    - `words`: the finding in the paper's words, with where it is stated;
    - `claims`: id patterns of the claims that test it under the primary reading; the first
      claim they match gives the table its number against the paper's;
    - `readings`: the other readings' names, each with its claims' id patterns;
    - `because`: why it fails where it does, in words about the data or the models (a number
      belongs in a claim, not here); shown only where the primary verdict is not reproduced."""

    id: str
    words: str
    claims: tuple[str, ...]
    readings: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    because: str = ""

    def reading_of(self, claim_id: str) -> str | None | bool:
        """The reading (None: the primary one) under which `claim_id` tests this finding, or
        False where it does not test it."""
        if any(fnmatchcase(claim_id, pattern) for pattern in self.claims):
            return None
        for name, patterns in self.readings.items():
            if any(fnmatchcase(claim_id, pattern) for pattern in patterns):
                return name
        return False


def with_findings(claims: Sequence[Claim], findings: Sequence[Finding]) -> list[Claim]:
    """`claims`, each marked with the first of `findings` that names it and the reading it is
    under; a claim no finding names (a fact about the data or the setup) is left unmarked. A
    finding that names none of `claims` is one a smaller scale does not measure (the findings
    table says so); that every finding names a claim of the committed reports is a test."""
    marked = []
    for claim in claims:
        for finding in findings:
            reading = finding.reading_of(claim.id)
            if reading is not False:
                claim = replace(claim, finding=finding.id, reading=reading)
                break
        marked.append(claim)
    return marked


def unnamed(findings: Sequence[Finding], claim_ids: Sequence[str]) -> list[str]:
    """The ids of `findings` that name none of `claim_ids` (a typo in their patterns, where the
    claims are a full-scale report's)."""
    return [f.id for f in findings if not any(f.reading_of(i) is not False for i in claim_ids)]


def verdict_of(claims: Sequence[Claim]) -> str:
    """The verdict of a finding under one reading from the claims testing it (the module's
    rule); "-" where no claim tests it under that reading."""
    informative = {c.verdict for c in claims if c.verdict != UNINFORMATIVE}
    if not claims:
        return "-"
    if not informative:
        return UNINFORMATIVE
    if len(informative) == 1:
        return informative.pop()
    return "partially reproduced"


def finding_verdicts(claims: Sequence[Claim]) -> dict[str, dict[str, str]]:
    """Each finding's verdict by reading (`PRIMARY` and the others), from marked claims
    (`with_findings`), in the order the claims first name them."""
    grouped: dict[str, dict[str, list[Claim]]] = {}
    for claim in claims:
        if claim.finding is not None:
            reading = claim.reading or PRIMARY
            grouped.setdefault(claim.finding, {}).setdefault(reading, []).append(claim)
    return {
        finding: {reading: verdict_of(tested) for reading, tested in readings.items()}
        for finding, readings in grouped.items()
    }


def findings_counts(claims: Sequence[Claim]) -> tuple[Counter, int]:
    """The findings' primary verdicts counted, and how many findings there are."""
    verdicts = finding_verdicts(claims)
    counted = Counter(v.get(PRIMARY, "-") for v in verdicts.values())
    return counted, len(verdicts)


def findings_headline(claims: Sequence[Claim]) -> str:
    """`N findings (primary reading): a reproduced, ...; r of i informative reproduced`, or
    empty where no claim is marked with a finding."""
    counted, total = findings_counts(claims)
    if not total:
        return ""
    informative = total - counted[UNINFORMATIVE] - counted["-"]
    parts = ", ".join(f"{counted[v]} {v}" for v in VERDICTS if counted[v])
    return (f"{total} findings (primary reading): {parts}; {counted['reproduced']} of "
            f"{informative} informative findings reproduced")  # fmt: skip


PAPER_WORDS = 40
"""A paper value given in words is cut to this many characters in the findings table (the
whole is in the claim's row)."""


def printed(value: float | str) -> str:
    """A paper's value as the findings table prints it: a number to 3 digits, words cut."""
    if isinstance(value, float):
        return f"{value:.3g}"
    text = str(value)
    return text if len(text) <= PAPER_WORDS else text[: PAPER_WORDS - 1].rstrip() + "…"


STATISTIC_CHARACTERS = 90
"""The longest statistic the findings table prints whole; a longer one keeps its start and its
value (`judged`)."""


def judged(claim: Claim) -> str:
    """What the findings table shows as measured against the paper: the measured mean where the
    paper gives a number; where it gives words (a comparison, a direction, a share), the
    statistic the claim's rule judges, as the rule states it first (`<statistic> = <value>`, the
    measured mean being only one side of a comparison), its middle cut where it is long."""
    if not isinstance(claim.paper, str):
        return f"{claim.measured.mean:.3g}"
    statistic = first_clause(claim.rule.removeprefix("direction first: "))
    statistic = statistic.split(", signed so")[0]
    if len(statistic) <= STATISTIC_CHARACTERS:
        return statistic
    start = max(statistic.rfind(" = "), statistic.rfind(": "), 0)
    value = statistic[start:]
    if len(value) > STATISTIC_CHARACTERS // 2:
        value = ""
    return statistic[: STATISTIC_CHARACTERS - len(value) - 1].rstrip() + "…" + value


def first_clause(rule: str) -> str:
    """A rule's text up to its first "; " outside brackets (its statistic and value)."""
    depth = 0
    for index, character in enumerate(rule):
        depth += (character in "([") - (character in ")]")
        if depth == 0 and rule.startswith("; ", index):
            return rule[:index]
    return rule


def findings_table(findings: Sequence[Finding], claims: Sequence[Claim]) -> str:
    """The findings in the paper's words with their verdicts (primary reading first, then the
    others), what the first primary claim measured against the paper's value (`judged`), and
    where the primary verdict is not reproduced, why: the finding's `because` and the claims that
    fail."""
    verdicts = finding_verdicts(claims)
    lines = [
        "| finding (the paper's words) | verdict | other readings | measured (paper) | "
        "where it fails |",
        "|---|---|---|---|---|",
    ]
    for finding in findings:
        by_reading = verdicts.get(finding.id, {})
        primary = [c for c in claims if c.finding == finding.id and c.reading is None]
        verdict = by_reading.get(PRIMARY, NOT_MEASURED if not by_reading else "-")
        others = "; ".join(f"{name}: {v}" for name, v in by_reading.items() if name != PRIMARY)
        number = (f"{escape_cell(judged(primary[0]))} ({escape_cell(printed(primary[0].paper))}) "
                  f"`{primary[0].id}`") if primary else "-"  # fmt: skip
        failing = [c.id for c in primary if c.verdict in ("not reproduced", "partially reproduced")]
        why = ""
        if verdict not in ("reproduced", UNINFORMATIVE, "-", NOT_MEASURED):
            named = ", ".join(f"`{i}`" for i in failing[:3]) + (" ..." if len(failing) > 3 else "")
            why = " ".join(p for p in (finding.because, f"fails: {named}" if named else "") if p)
        cells = (f"**{finding.id}**: {escape_cell(finding.words)}", f"**{verdict}**",
                 escape_cell(others) or "-", number, escape_cell(why) or "-")  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def findings_section(findings: Sequence[Finding], claims: Sequence[Claim]) -> str:
    """The report's opening: its findings' headline, the rule of a finding's verdict and the
    table; empty where the study lists no findings."""
    if not findings:
        return ""
    return (
        f"## Findings\n\n{findings_headline(claims)}. A finding's verdict comes from the claims "
        "that test it (listed under Claims with its id): all informative ones reproduced is "
        "reproduced, all not reproduced is not reproduced, anything between is partially "
        "reproduced; with none informative it is uninformative.\n\n"
        f"{findings_table(findings, claims)}\n\n## How the findings were measured\n"
    )


def findings_frame(findings: Sequence[Finding], claims: Sequence[Claim]) -> pd.DataFrame:
    """The findings' verdicts by reading as a table (for W&B)."""
    verdicts = finding_verdicts(claims)
    return pd.DataFrame(
        [{"finding": f.id, "words": f.words, **verdicts.get(f.id, {})} for f in findings]
    )
