"""A report's history, `history.md` beside its `report.md`: every verdict a claim had before a
change of rule, reading, data or runs made after results existed, with the change's reason
(`rule_changes`), the rules newer than the runs they judge (`dates_section`) and when every rule
was written (`rule_dates_table`). Built from the claims (their `earlier` states: the committed
earlier verdicts) and the rules file (`rule_dates.RuleBook`); the report itself says only which
verdicts changed and why, in a few words (`report.claims_table`)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence

from experiments.report import Claim, escape_cell
from experiments.rule_dates import PREREGISTRATION, RuleBook, day


def counted(number: int, noun: str) -> str:
    """`1 claim`, `2 claims`."""
    return f"{number} {noun}{'s' * (number != 1)}"


def history_text(title: str, claims: Sequence[Claim], book: RuleBook,
                 finished: tuple[float, float] | None) -> str:  # fmt: skip
    """`history.md` of the report titled `title` (its first line without `# `), its claims dated
    by `book` (`rule_dates.date_rules`), its runs finished between `finished`'s two times (the
    first run's and the last's; None: not known)."""
    return (
        f"# {title} (history)\n\nWhat [report.md](report.md) held before each change made after "
        "results existed, and when each of its rules was written. The report gives every claim's "
        "current verdict and, where a change moved it, the verdict before and why in a few "
        "words.\n\n"
        + (rule_changes(claims) or "## Rule changes\n\nNo verdict was replaced.\n\n")
        + dates_section(claims, book, finished)
        + rule_dates_table(claims, book)
    ).rstrip() + "\n"


def rule_changes(claims: Sequence[Claim]) -> str:
    """The rules, readings, data and runs replaced after results existed: each reason, how many
    claims it applies to, and every verdict it changed with the earlier rule."""
    steps = [(c, before, after) for c in claims for before, after in c.changes()]
    reasons = list(dict.fromkeys(before.reason for _, before, _ in steps))
    if not reasons:
        return ""
    parts = ["## Rule changes\n"]
    for number, reason in enumerate(reasons, 1):
        applied = [(c, b, a) for c, b, a in steps if b.reason == reason]
        changed = [(c, b, a) for c, b, a in applied if b.verdict != a]
        parts.append(f"{number}. {reason[0].upper()}{reason[1:]}. It applies to "
                     f"{counted(len(applied), 'claim')} and changed "
                     f"{counted(len(changed), 'verdict')}{':' if changed else '.'}")  # fmt: skip
        parts += [f"   - `{c.id}`: {b.verdict} -> {a} (earlier rule: {escape_cell(b.rule)})"
                  for c, b, a in changed]  # fmt: skip
    return "\n".join(parts) + "\n\n"


def dates_section(claims: Sequence[Claim], book: RuleBook,
                  finished: tuple[float, float] | None) -> str:  # fmt: skip
    """The rules newer than the runs they judge (written after the runs' first report), each with
    its verdict before the change."""
    if finished is None or book.first_report is None:
        return ""
    first_ran, last_ran = (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t)) for t in finished)
    ran = last_ran if first_ran == last_ran else f"between {first_ran} and {last_ran}"
    first = book.first_report
    head = f"## Rules dated against the runs\n\nThe runs finished {ran}; "
    if first.commit is None and not first.recorded:
        return head + (
            "this build is the first report of them, so no rule changed after a report of them "
            "(a rule changed while they ran, after some of their results existed, says so under "
            "Rule changes, its verdict before kept).\n\n"
        )
    newer = book.newer(claims)
    lines = [
        f"{head}their first report was written {day(first.date)} ({first.source}). "
        f"{len(newer)} of the {len(claims)} rules are newer (written or changed after those "
        "results existed)"
        + (
            ", each with its verdict in the last report before the change "
            "(the reasons are under Rule changes):\n"
            if newer
            else "."
        )
    ]
    if newer:
        lines += ["| id | rule since | verdict | before the change |", "|---|---|---|---|"]
        lines += [f"| `{c.id}` | {book.rules[c.id].dated.since} | {c.verdict} | "
                  f"{escape_cell(_before(book, c))} |" for c in newer]  # fmt: skip
    return "\n".join(lines) + "\n\n"


def _before(book: RuleBook, claim: Claim) -> str:
    rule = book.rules[claim.id]
    if rule.before is None and rule.dated.by == PREREGISTRATION:
        return "(a new claim, registered before its reading was measured)"
    if rule.before is None:
        return "(a new claim)"
    verdict, commit = rule.before
    return f"{verdict} (commit `{commit}`)" if commit else f"{verdict} (the report before)"


def rule_dates_table(claims: Sequence[Claim], book: RuleBook) -> str:
    """When the report's rules were written: how many on each date (`rule_since` in
    results.json gives each claim's)."""
    counts = Counter(book.rules[c.id].dated.since for c in claims)
    if not counts:
        return ""
    lines = ["## When the rules were written\n",
             "Each claim's `rule_since` in results.json; the dates are kept in rules.json.\n",
             "| rule since | rules |", "|---|---|"]  # fmt: skip
    lines += [f"| {since} | {count} |" for since, count in sorted(counts.items())]
    return "\n".join(lines) + "\n"
