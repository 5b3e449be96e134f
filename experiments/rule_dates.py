"""Rules dated against the runs they judge: every claim records when its rule was written
(`Claim.rule_since`), and a report's history lists the rules newer than its runs.

A rule is known by its text with the measured values left out (`rule_template`: the statistic, the
bounds and the counts computed from the measurements, where `MEASURED_VALUES` finds them; the
thresholds, written after ">=", "<=" or "+", stay), and by why it cannot fail, where it cannot.

Its date is read from the committed report's rules file, `reports/<paper>/rules.json` (`RuleBook`;
a second report of the paper, in a folder inside it, keeps its own there: `report_folder`):
per claim, the template, the date (and commit) it was first written with, and the verdict before
its last change. A build never asks git: a claim whose template is the recorded one keeps its date;
a new or changed template is dated by the build itself (now, "this build"), and recorded in the
file when the report is written to the committed folder (`date_rules`).

A rule is newer than the runs it judges when it was written after the first report of them (the
file's `first_report`; a build of runs that all finished after it is their first report): it was
written or changed after their results existed. Those claims keep their verdicts before the change
in `Claim.earlier` (`report.with_earlier` and the rules themselves).
"""

from __future__ import annotations

import calendar
import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from experiments.engine.committed import CommittedFileError
from experiments.report import Claim
from storage.files import write_text_atomic

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
RULES = "rules.json"
"""A committed report's rules file, beside its `results.json`."""
THIS_BUILD = "this build"
PREREGISTRATION = "pre-registration"
A_BUILD = "a build"
STAMP = "%Y-%m-%dT%H:%M:%SZ"
ABOUT = (
    "When each claim's rule was written: its text with the measured values left out "
    "(rule_template), the date and commit it was first written so, and the verdict before its "
    "last change; the report's build reads it and never asks git"
)


class RulesFileError(CommittedFileError):
    """A committed report's rules file cannot be read: one line naming it and the fix."""


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


def day(moment: float) -> str:
    """`2026-11-26` (UTC)."""
    return time.strftime("%Y-%m-%d", time.gmtime(moment))


@dataclass(frozen=True)
class Dated:
    """When something was written: `date` (seconds since the epoch) and the `commit` it came with;
    no commit: dated by a build, `recorded` in the rules file or only by this build."""

    date: float
    commit: str | None = None
    recorded: bool = True
    by: str | None = None
    """What dated it where neither a commit nor a build did: `pre-registration`."""

    @property
    def source(self) -> str:
        """`commit 6467b3a`, `pre-registration`, `a build` (recorded) or `this build`."""
        if self.commit:
            return f"commit {self.commit}"
        if self.by:
            return self.by
        return A_BUILD if self.recorded else THIS_BUILD

    @property
    def since(self) -> str:
        """A claim's `rule_since`: `2026-11-25 (commit 6467b3a)`."""
        return f"{day(self.date)} ({self.source})"

    def as_json(self) -> dict:
        by = {"by": self.by} if self.by else {}
        return {"date": time.strftime(STAMP, time.gmtime(self.date)), "commit": self.commit, **by}

    @classmethod
    def registered(cls, date: str) -> Dated:
        """Rules pre-registered on `date` (`2026-11-28`, UTC), before any run they judge."""
        return cls(float(calendar.timegm(time.strptime(date, "%Y-%m-%d"))), by=PREREGISTRATION)


@dataclass(frozen=True)
class RuleDate:
    """A claim's rule as the rules file records it: its `template`, when it was first written so
    (`dated`), and the verdict before its last change with the commit of the report that gave it
    (`before`; None: the rule never changed, or the claim is new)."""

    template: str
    dated: Dated
    before: tuple[str, str | None] | None = None

    def as_json(self) -> dict:
        before = (
            None
            if self.before is None
            else dict(zip(("verdict", "commit"), self.before, strict=True))
        )
        return {"rule_template": self.template, **self.dated.as_json(), "before": before}


@dataclass(frozen=True)
class RuleBook:
    """A report's rules file (`RULES`): each claim's `RuleDate` by id, and the first report of
    the runs (`first_report`, against which rules are newer)."""

    rules: dict[str, RuleDate]
    first_report: Dated | None = None

    @classmethod
    def read(cls, path: Path) -> RuleBook:
        """The rules file at `path`; an empty book where there is none."""
        if not path.is_file():
            return cls({})
        try:
            data = json.loads(path.read_text())
            first = data.get("first_report")
            rules = {id: RuleDate(entry["rule_template"], _dated(entry), _before(entry["before"]))
                     for id, entry in data["rules"].items()}  # fmt: skip
            return cls(rules, None if first is None else _dated(first))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            raise RulesFileError(
                f"{path} cannot be read as a report's rules file ({type(error).__name__}: "
                f"{error}): restore the committed one (git checkout -- {path})"
            ) from None

    def text(self) -> str:
        first = None if self.first_report is None else self.first_report.as_json()
        rules = {id: rule.as_json() for id, rule in self.rules.items()}
        return json.dumps({"about": ABOUT, "first_report": first, "rules": rules}, indent=2) + "\n"

    def of_build(
        self,
        claims: Sequence[Claim],
        now: float,
        finished: float | None,
        verdicts: dict[str, str],
        registered: Callable[[str], str | None] | None = None,
    ) -> RuleBook:
        """The book of a build of `claims` at `now` from runs the first of which finished at
        `finished`: each
        claim's recorded date where its template is the recorded one; a claim the book lacks
        dated by its pre-registration where it has one (`registered`: the day, `2026-11-28`, by
        claim id; every rule of the atlas, written before any of its runs, and a paper's
        registered readings), else, like a changed template, dated `now` by this
        build, its verdict before the change its verdict in the committed report (`verdicts`, by
        id) where it had one; this build is the runs' first report where none came after them, or
        where every run finished after the recorded one (a second training): runs added to
        those of an earlier report (a reading's retrains) leave its date as it was."""
        rules = {}
        for claim in claims:
            template, known = rule_template(claim.as_json()), self.rules.get(claim.id)
            if known is not None and known.template == template:
                rules[claim.id] = known
                continue
            registration = registered(claim.id) if known is None and registered else None
            if registration:
                rules[claim.id] = RuleDate(template, Dated.registered(registration))
                continue
            before = (verdicts[claim.id], None) if claim.id in verdicts else None
            rules[claim.id] = RuleDate(template, Dated(now, recorded=False), before)
        first = self.first_report
        if finished is not None and (first is None or first.date < finished):
            first = Dated(now, recorded=False)
        return RuleBook(rules, first)

    def recorded(self) -> RuleBook:
        """This book as the rules file records it (what this build dated, dated by a build)."""
        rules = {id: replace(rule, dated=replace(rule.dated, recorded=True))
                 for id, rule in self.rules.items()}  # fmt: skip
        first = self.first_report and replace(self.first_report, recorded=True)
        return RuleBook(rules, first)

    def dated(self, claims: Sequence[Claim]) -> list[Claim]:
        """`claims`, each with the date its rule was written (`rule_since`)."""
        return [replace(claim, rule_since=self.rules[claim.id].dated.since) for claim in claims]

    def newer(self, claims: Sequence[Claim]) -> list[Claim]:
        """The claims whose rules were written after the runs' first report."""
        if self.first_report is None:
            return []
        first = self.first_report.date
        return [claim for claim in claims if self.rules[claim.id].dated.date > first]


def _dated(entry: dict) -> Dated:
    moment = float(calendar.timegm(time.strptime(entry["date"], STAMP)))
    return Dated(moment, entry["commit"], by=entry.get("by"))


def _before(entry: dict | None) -> tuple[str, str | None] | None:
    return None if entry is None else (str(entry["verdict"]), entry["commit"])


def report_folder(paper: Path, out: Path, runs: Path | None = None) -> Path:
    """The committed report a build of the paper whose reports are in `paper` (`reports/<paper>`)
    is dated against: `out` where it is `paper` or a second report in a folder inside it
    (`reports/paper4/retrained`), else the report whose committed runs the build reads (`runs`
    is `<report>/runs`), else the paper's own report, `paper`."""
    paper = paper.resolve()
    for folder in (out, runs and runs.parent):
        if folder is not None and paper in (folder.resolve(), folder.resolve().parent):
            return folder.resolve()
    return paper


def date_rules(claims: Sequence[Claim], out: Path, committed: Path, finished: float | None,
               now: float | None = None, runs: Path | None = None,
               registered: Callable[[str], str | None] | None = None,
               ) -> tuple[list[Claim], RuleBook]:  # fmt: skip
    """`claims` dated by the committed report's rules file (`committed`, `reports/<paper>`, or a
    second report of the paper inside it where the build writes there or reads its runs, `runs`
    being the run root: `report_folder`; a second report without a rules file yet starts from
    the paper's; `finished`: when the first of their runs finished; `registered`: the day a
    claim's rule was pre-registered, by its id, `RuleBook.of_build`), and the book of this build.
    Written to the committed report's folder (`out`), the report records what this build dated
    in its file, atomically; anywhere else the file is left as it was."""
    now = float(int(time.time() if now is None else now))
    paper, committed = committed, report_folder(committed, out, runs)
    path = committed / RULES
    book = RuleBook.read(path if path.is_file() else paper / RULES)
    verdicts = {}
    if any(book.rules.get(c.id) is None or book.rules[c.id].template != rule_template(c.as_json())
           for c in claims):  # fmt: skip
        verdicts = _committed_verdicts(committed)
    book = book.of_build(claims, now, finished, verdicts, registered)
    if out.resolve() == committed:
        book = book.recorded()
        text = book.text()
        if not path.is_file() or path.read_text() != text:
            write_text_atomic(path, text)
    return book.dated(claims), book


def _committed_verdicts(committed: Path) -> dict[str, str]:
    """The verdicts of the committed report in `committed` by claim id; none where it has none."""
    try:
        return {r["id"]: r["verdict"] for r in json.loads((committed / "results.json").read_text())}
    except (OSError, ValueError, KeyError, TypeError):
        return {}
