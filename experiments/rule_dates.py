"""Rules dated against the runs they judge (issue 29): every claim records the commit where its
rule last changed (`Claim.rule_since`), and a report lists the rules newer than its runs.

A rule is known by its text with the measured values left out (`rule_template`: the statistic, the
bounds and the counts computed from the measurements, where `MEASURED_VALUES` finds them; the
thresholds, written after ">=", "<=" or "+", stay), and by why it cannot fail, where it cannot. Its
date is read from the repository's history of the report (`git log` of
`reports/<paper>/results.json`): the oldest commit of the unbroken line of committed reports,
newest first, whose claim of the same id had the same template, or the date that report recorded
for it (its `rule_since`: the commit its code was taken from, when that report wrote the rule
first), so that a report rebuilt later dates its rules as the report that first wrote them did;
where the newest committed report's differs, or has no such claim, the rule is this report's (the
commit the code was taken from, or "working tree" where that code is not committed).

A rule is newer than the runs it judges when it appeared after the first committed report
written from them (the first report committed after the last run finished): it was written or
changed after their results existed. Those claims keep their verdicts before the change in
`Claim.earlier` (`report.with_earlier` and the rules themselves). Without git or the report's
history every rule is dated "unknown" and the report says so.

Written by hand: git's own history is the only record of when a rule changed.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from experiments.report import Claim, escape_cell

NUMBER = r"[-+]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?(?:e[-+]?\d+)?|nan|inf)"
"""A number as rules print it: `0.61`, `-3`, `1.5e-05`, `14,670`, `nan`."""
MEASURED_VALUES = (
    (re.compile(rf"((?:^|[^<>!])= |: ){NUMBER}"), r"\1#"),
    (re.compile(rf"(A ){NUMBER}( vs B ){NUMBER}"), r"\1#\2#"),
    (re.compile(rf"( hold \(){NUMBER}"), r"\1#"),
    (re.compile(rf"(at ){NUMBER}( of them \(){NUMBER}"), r"\1#\2#"),
    (re.compile(rf"(left out \(){NUMBER}( of )"), r"\1#\2"),
    (re.compile(r"(\]: )\[[^\]]*\]"), r"\1[#]"),
    (re.compile(r"(epochs )\[[^\]]*\]\.\.\[[^\]]*\]"), r"\1[#]..[#]"),
)
"""Where the suite's rules print values computed from measurements, each (pattern, what stays):
a number right after "= " (not ">= ", "<= " or "!= ") or ": "; the two settings' values of "A x
vs B y"; the share in "k of n hold (share)" and both numbers of "at k of them (share"; the count
in "left out (k of n)"; the measured list in "at k = [2, 4, 8]: [300, 1000, 1000]"; the epochs
in "epochs [3, 4, 5]..[48, 49, 50]". The thresholds (after ">=", "<=", "<", ">", "+", "more
than") and the cells a rule reads stay."""
WORKING_TREE = "working tree"
UNKNOWN = "unknown"


def rule_template(record: dict) -> str:
    """A claim's rule (`Claim.as_json`) without its measured values (`MEASURED_VALUES` become
    "#"), with the reason it cannot fail where it cannot (its measured values left out too)."""
    because = record.get("uninformative_because")
    return without_measured_values(record["rule"]) + (
        f" | cannot fail: {without_measured_values(because)}" if because else ""
    )


def without_measured_values(text: str) -> str:
    for pattern, kept in MEASURED_VALUES:
        text = pattern.sub(kept, text)
    return text


@dataclass(frozen=True)
class Commit:
    id: str
    time: float


@dataclass(frozen=True)
class ReportHistory:
    """The committed versions of one report's `results.json`, newest first, each with its
    claims' (rule template, verdict, recorded `rule_since`) by id; `current`: the commit this
    report's code comes from; `recorded`: the commits the versions' claims were dated to, that
    this repository has."""

    versions: tuple[tuple[Commit, dict[str, tuple[str, str, str | None]]], ...]
    current: Commit
    recorded: dict[str, Commit] = field(default_factory=dict)

    @classmethod
    def of(cls, repository: Path, results: str) -> ReportHistory:
        """The history of `results` (a path inside `repository`); empty without git."""
        log = _git(repository, "log", "--format=%h %ct", "--", results)
        versions = []
        for line in (log or "").splitlines():
            commit, stamp = line.split()
            text = _git(repository, "show", f"{commit}:{results}")
            if text is None:
                continue
            templates = {c["id"]: (rule_template(c), c["verdict"], c.get("rule_since"))
                         for c in json.loads(text)}  # fmt: skip
            versions.append((Commit(commit, float(stamp)), templates))
        dates = {t[2] for _, templates in versions for t in templates.values()}
        known = dates - {None, WORKING_TREE, UNKNOWN}
        return cls(tuple(versions), _current_commit(repository), _commits(repository, known))

    def first_report_after(self, finished: float) -> Commit | None:
        """The first committed report written after the runs finished at `finished`."""
        after = [commit for commit, _ in self.versions if commit.time >= finished]
        return min(after, key=lambda c: c.time) if after else None

    def since(self, claim: Claim) -> Commit:
        """The commit where `claim`'s rule last changed (see the module)."""
        return self._change(claim)[0]

    def before(self, claim: Claim) -> str:
        """`claim`'s verdict in the newest committed report with another rule for it, and that
        report's commit; or that it is new."""
        previous = self._change(claim)[1]
        return "(a new claim)" if previous is None else f"{previous[1]} (commit `{previous[0]}`)"

    def _change(self, claim: Claim) -> tuple[Commit, tuple[str, str] | None]:
        template, since = rule_template(claim.as_json()), self.current
        for commit, templates in self.versions:
            committed = templates.get(claim.id)
            if committed is None:
                return since, None
            if committed[0] != template:
                return since, (commit.id, committed[1])
            recorded = self.recorded.get(committed[2] or "")
            since = recorded if recorded is not None and recorded.time <= commit.time else commit
        return since, None

    def time_of(self, commit: str) -> float:
        """When `commit` (a claim's `rule_since`) was made; 0 where it is not known here."""
        every = [*(c for c, _ in self.versions), self.current, *self.recorded.values()]
        return next((c.time for c in every if c.id == commit), 0.0)


def _git(repository: Path, *arguments: str) -> str | None:
    try:
        return subprocess.run(["git", "-C", str(repository), *arguments], capture_output=True,
                              text=True, check=True).stdout  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None


def _commits(repository: Path, ids: set[str]) -> dict[str, Commit]:
    """The commits of `ids` this repository has (a shallow clone may lack some), by id."""
    found = {}
    for commit in sorted(ids):
        line = _git(repository, "show", "-s", "--format=%ct", f"{commit}^{{commit}}", "--")
        if line:
            found[commit] = Commit(commit, float(line))
    return found


def _current_commit(repository: Path) -> Commit:
    """HEAD where the code (everything outside `reports/`) is committed; else the working tree."""
    head = _git(repository, "log", "-1", "--format=%h %ct")
    if not head:
        return Commit(UNKNOWN, time.time())
    changed = _git(repository, "status", "--porcelain", "--untracked-files=no", "--", ".",
                   ":(exclude)reports", ":(exclude)README.md", ":(exclude)docs")  # fmt: skip
    if changed:
        return Commit(WORKING_TREE, time.time())
    commit, stamp = head.split()
    return Commit(commit, float(stamp))


def dated(claims: Sequence[Claim], history: ReportHistory) -> list[Claim]:
    """`claims`, each with the commit where its rule last changed (`rule_since`)."""
    if not history.versions and history.current.id == UNKNOWN:
        return [replace(claim, rule_since=UNKNOWN) for claim in claims]
    return [replace(claim, rule_since=history.since(claim).id) for claim in claims]


def dates_section(claims: Sequence[Claim], history: ReportHistory, finished: float) -> str:
    """The report's section on rules newer than the runs they judge (`claims` from `dated`)."""
    first = history.first_report_after(finished)
    ran = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(finished))
    if history.current.id == UNKNOWN and not history.versions:
        return (
            f"## Rules dated against the runs\n\nThe runs finished {ran}; the rules' dates "
            "are unknown here (no git history of the report).\n\n"
        )
    if first is None:
        return (
            f"## Rules dated against the runs\n\nThe runs finished {ran}; this is the first "
            "report of them, so no rule changed after a report of them (a rule changed while "
            "they ran, after some of their results existed, says so under Rule changes, its "
            "verdict before kept). Each claim's rule carries the commit where it last changed "
            "(`rule_since` in results.json).\n\n"
        )
    newer = [c for c in claims if history.time_of(c.rule_since) > first.time]
    lines = [f"## Rules dated against the runs\n\nThe runs finished {ran}; their first report was "
             f"commit `{first.id}`. {len(newer)} of the {len(claims)} rules are newer (written "
             "or changed after those results existed; each claim's `rule_since` in results.json "
             "names the commit), each with its verdict in the last committed report before the "
             "change (the reasons are under Rule changes):\n"]  # fmt: skip
    if newer:
        lines += ["| id | rule since | verdict | before the change |", "|---|---|---|---|"]
        lines += [f"| `{c.id}` | `{c.rule_since}` | {c.verdict} | "
                  f"{escape_cell(history.before(c))} |" for c in newer]  # fmt: skip
    return "\n".join(lines) + "\n\n"
