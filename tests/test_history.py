"""A report says what its claims are now; its history (earlier verdicts with their reasons, rule
changes and rule dates) is in history.md beside it, and neither names an issue, a stop or a
machine's own paths."""

import json
import os
import re
from pathlib import Path

import pytest

from datamodules.machine_tasks import sample1_as_recorded
from experiments.report import runs_named
from experiments.rule_dates import RULES, RuleBook, rule_template

REPOSITORY = Path(__file__).parents[1]
REPORTS = REPOSITORY / "reports"
COMMITTED = sorted([*REPORTS.glob("paper*/results.json"), *REPORTS.glob("paper*/*/results.json")])
"""Every committed report: each paper's, and a second report inside its folder."""
STORY = re.compile(r"\b[Ii]ssues? [0-9]|\b[Ss]tops? [0-9]|/root/|/home/|/work/")
"""What a report must not name: the suite's issues or stops, a machine's own folders."""


def markdown_texts(root: Path) -> list[Path]:
    """Every Markdown file under root, hidden folders (.venv, .git, caches) left out."""
    found = []
    for folder, folders, names in os.walk(root):
        folders[:] = [name for name in folders if not name.startswith(".")]
        found += [Path(folder) / name for name in names if name.endswith(".md")]
    return sorted(found)


TEXTS = markdown_texts(REPOSITORY)
"""Every Markdown text of the checkout: README, docs, reports and their pre-registrations."""


def test_no_text_names_an_issue_stop_or_machine_path():
    """Reports, their histories and pre-registrations, the README and docs are read on other
    machines and after the work: they cite a paper by its title, not by where it lies on one
    machine, and speak of use, not of the suite's issues or stops."""
    found = [
        f"{path.relative_to(REPOSITORY)}: {line[:100]}"
        for path in TEXTS
        for line in path.read_text().splitlines()
        if STORY.search(line)
    ]
    assert len(TEXTS) > 20
    assert not found, found


@pytest.mark.parametrize("results", COMMITTED, ids=lambda path: path.parent.name)
def test_a_committed_reports_history_holds_its_earlier_verdicts_and_rule_dates(results):
    """history.md lists every change that moved a verdict, with its reason, and the rules newer
    than the runs; the report keeps one column saying which verdicts moved; every claim's rule
    date is in rules.json, under the rule's template."""
    claims = json.loads(results.read_text())
    report = (results.parent / "report.md").read_text()
    history = (results.parent / "history.md").read_text()
    assert "## Rule changes" not in report and "## Rules dated" not in report
    assert "## Rules dated against the runs" in history
    moved = [c for c in claims if any(e["verdict"] != c["verdict"] for e in c["earlier"][:1])]
    for claim in moved:
        before = claim["earlier"][0]
        assert f"`{claim['id']}`: {before['verdict']} -> {claim['verdict']}" in history
        assert before["reason"][1:].split(". ")[0] in history
        table = report.partition("\n## Claims\n")[2].splitlines()
        row = next(line for line in table if line.startswith(f"| `{claim['id']}` |"))
        assert f"was {before['verdict']} ({before['reason'].split('. ')[0]})" in row
    rules = RuleBook.read(results.parent / RULES).rules
    for claim in claims:
        assert rules[claim["id"]].template == rule_template(claim)
        assert claim["rule_since"] == rules[claim["id"]].dated.since


def test_a_report_names_a_run_root_outside_the_checkout_as_runs():
    assert runs_named(Path("/root/runs"), "paper2") == (
        "`<runs>/paper2/` (`<runs>`: the run root, `--runs`)"
    )
    assert runs_named(REPORTS / "paper2" / "runs", "paper2") == "`reports/paper2/runs/paper2/`"


def test_paper1s_data_line_names_no_folder_of_the_machine_that_built_the_report():
    data = sample1_as_recorded("machine-tasks' sample1 is not in /root/.cache/x/sample1: set it")
    assert "/root/" not in data.notice and "/root/" in data.unavailable
