"""Rules dated against the runs they judge, from the committed report's rules file: a build never
asks git, a rule keeps the date recorded for its template, and a new or changed rule is dated by
the build, recorded only when the report is written to the committed folder."""

import json
import subprocess
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

import experiments.engine.publish as publish_module
from experiments.engine.reproduce import Built, Request, Study, reproduce
from experiments.engine.sitting import Sitting
from experiments.history import history_text
from experiments.report import Claim, cannot_fail, threshold_claim
from experiments.rule_dates import (
    RULES,
    Dated,
    RuleBook,
    RuleDate,
    RulesFileError,
    date_rules,
    rule_template,
)

DAY = 1_795_000_000.0  # 2026-11-18 (UTC)
RUNS_FINISHED = DAY + 3_600


def claim(id, statistic, reproduced_at=0.5):
    return threshold_claim(id, id, 1.0, [statistic], statistic, "s", reproduced_at, 0.2)


def committed_report(folder: Path, claims, commit="abc1234") -> None:
    """A committed report in `folder`: its results.json and a rules file dating every rule of
    `claims` on DAY in `commit`, its runs' first report the day after."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.json").write_text(json.dumps([c.as_json() for c in claims]))
    rules = {c.id: RuleDate(rule_template(c.as_json()), Dated(DAY, commit)) for c in claims}
    (folder / RULES).write_text(RuleBook(rules, Dated(DAY + 86_400, "def5678")).text())


def test_the_template_leaves_out_measured_values_and_keeps_thresholds():
    assert rule_template(claim("a", 0.61).as_json()) == rule_template(claim("a", 0.9).as_json())
    assert rule_template(claim("a", 0.6).as_json()) != rule_template(claim("a", 0.6, 0.7).as_json())
    because = cannot_fail(claim("a", 0.6), "set by the method").as_json()
    assert rule_template(because).endswith("cannot fail: set by the method")


def test_measured_values_printed_in_any_of_the_rules_forms_leave_the_template_alone():
    """Each form in which the suite's rules print measured values (the statistic after "= " or
    ": ", both settings' values, the counts and shares of the cells that hold, a measured list,
    epochs): other values, the same template; another threshold or cell, another template."""
    forms = [
        "statistic = {0}; reproduced if >= 0.5, partially if >= 0.2",
        "epochs above chance (2/1002): {1}; raises it at {1} of them ({0}; epochs "
        "[{1}, 7]..[{1}, 50]); reproduced if at >= 50%",
        "steps 1-50: A {0} vs B {2}; mean per-seed difference A - B = {0}; reproduced if > 0.1",
        "pairs left out ({1} of 8): {1} of 2 hold ({0}); reproduced if all, partially if >= 75%",
        "smallest n with P >= 0.5 at k = [2, 4, 8]: [{1}, 300, 14,670]; reproduced if it rises",
        "first epoch with momentum - without (never: 51; plain SGD: {1}) = {2}; reproduced if >= 5",
    ]
    for form in forms:
        one, other = (rule_template({"rule": form.format(*values)})
                      for values in (("0.25", "3", "-0.004"), ("1.00", "14", "nan")))  # fmt: skip
        assert one == other, form
        threshold = form.replace(">= ", ">= 1").replace("> 0.1", "> 0.2")
        assert rule_template({"rule": threshold.format("0.25", "3", "0")}) != one, form
    cell = "P at k = [2, 4, 8]: [{0}]; reproduced if > 0"
    assert rule_template({"rule": cell.format(1)}) != rule_template(
        {"rule": cell.replace("8]", "16]").format(1)}
    )
    rule = "x = 0.3; reproduced if < 0.5"
    assert rule_template({"rule": rule, "uninformative_because": "untrained x = 0.1"}) == (
        rule_template({"rule": rule, "uninformative_because": "untrained x = 0.2"})
    )


def test_a_claim_carries_its_rule_date_through_results_json():
    dated_claim = replace(claim("a", 0.6), rule_since="2026-11-18 (commit abc1234)")
    assert Claim.from_json(json.loads(json.dumps(dated_claim.as_json()))) == dated_claim


def build(tmp_path, monkeypatch, claims, out, git=True, runs=None, finished=(RUNS_FINISHED,)):
    """A report of `claims` built by the engine (`reproduce`, then `publish`) from runs that
    finished at the times `finished` (under the run root `runs`, `tmp_path/runs` unless given), the
    committed reports being `tmp_path/reports`; without `git`, no git on PATH, and any call of
    git fails the test."""
    monkeypatch.setattr(publish_module, "REPOSITORY", tmp_path)
    monkeypatch.setattr(publish_module, "log_to_wandb", lambda *args, **kwargs: None)
    if not git:
        monkeypatch.setenv("PATH", str(tmp_path / "no-git"))
        run = subprocess.run

        def no_git(arguments, *rest, **options):
            assert "git" not in str(arguments[0]), f"the build ran {arguments}"
            return run(arguments, *rest, **options)

        monkeypatch.setattr(subprocess, "run", no_git)
    records = [{"trained": {"started": DAY, "finished": moment}} for moment in finished]
    study = Study("paperX", {"default": None}, lambda: None, lambda request: None,
                  lambda request, measured: Built(list(claims), "# Paper X\n\nBody.", {}, {},
                                                  records, []))  # fmt: skip
    sitting = Sitting(tmp_path / "runs" if runs is None else runs)
    reproduce(study, Request("default", SimpleNamespace(), out, sitting))
    monkeypatch.undo()
    return {c["id"]: c for c in json.loads((out / "results.json").read_text())}


def test_a_build_without_git_dates_its_rules_as_with_git_from_the_rules_file(tmp_path, monkeypatch):
    """The committed report is in a repository whose history says nothing of the dates: the
    rules file alone dates them, with git on PATH and without it, and the history lists them."""
    committed = tmp_path / "reports" / "paperX"
    committed_report(committed, [claim("a", 0.6), claim("b", 0.6)])
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t",
                    "commit", "-qm", "report"], check=True)  # fmt: skip
    claims = [claim("a", 0.7), claim("b", 0.9)]
    with_git = build(tmp_path, monkeypatch, claims, tmp_path / "with")
    without = build(tmp_path, monkeypatch, claims, tmp_path / "without", git=False)
    expected = "2026-11-18 (commit abc1234)"
    assert [c["rule_since"] for c in with_git.values()] == [expected, expected]
    assert [c["rule_since"] for c in without.values()] == [expected, expected]
    history = (tmp_path / "without" / "history.md").read_text()
    assert "their first report was written 2026-11-19 (commit def5678). 0 of the 2 rules" in history
    assert f"| {expected} | 2 |" in history
    assert not (tmp_path / "without" / RULES).exists()


def test_a_changed_rule_is_dated_by_the_build_and_recorded_only_in_the_committed_folder(
    tmp_path, monkeypatch
):
    committed = tmp_path / "reports" / "paperX"
    committed_report(committed, [claim("kept", 0.6), claim("changed", 0.6)])
    recorded = (committed / RULES).read_text()
    claims = [claim("kept", 0.7), claim("changed", 0.7, reproduced_at=0.8), claim("new", 0.7)]
    now = 1_796_000_000.0  # 2026-11-30
    elsewhere, book = date_rules(claims, tmp_path / "elsewhere", committed, RUNS_FINISHED, now)
    assert [c.rule_since for c in elsewhere] == [
        "2026-11-18 (commit abc1234)",
        "2026-11-30 (this build)",
        "2026-11-30 (this build)",
    ]
    assert book.rules["changed"].before == ("reproduced", None)  # the committed verdict
    assert book.rules["new"].before is None
    assert (committed / RULES).read_text() == recorded  # a report elsewhere records nothing

    written, _ = date_rules(claims, committed, committed, RUNS_FINISHED, now)
    assert [c.rule_since for c in written] == [
        "2026-11-18 (commit abc1234)",
        "2026-11-30 (a build)",
        "2026-11-30 (a build)",
    ]
    rules = json.loads((committed / RULES).read_text())["rules"]
    assert rules["changed"] == {
        "rule_template": rule_template(claims[1].as_json()), "date": "2026-11-30T00:53:20Z",
        "commit": None, "before": {"verdict": "reproduced", "commit": None}}  # fmt: skip
    assert rules["kept"]["date"] == "2026-11-18T11:06:40Z" and set(rules) == {
        "kept", "changed", "new"}  # fmt: skip
    later, _ = date_rules(claims, committed, committed, RUNS_FINISHED, now + 86_400)
    assert [c.rule_since for c in later] == [c.rule_since for c in written]  # dated once


def test_a_second_committed_report_keeps_its_own_rules_file_from_one_rebuild_to_the_next(
    tmp_path, monkeypatch
):
    """A second report of the paper in a folder inside its committed one (`reports/paper4/
    retrained`): built there, it starts from the paper's rules file and records its own beside
    its results.json, so that the next rebuild, there or from its committed runs elsewhere, dates
    every rule as the first did, and the paper's own rules file is left as it was."""
    committed = tmp_path / "reports" / "paperX"
    committed_report(committed, [claim("a", 0.6)])
    recorded = (committed / RULES).read_text()
    second = committed / "second"
    claims = [claim("a", 0.7), claim("reading", 0.7)]
    first = build(tmp_path, monkeypatch, claims, second)
    assert first["a"]["rule_since"] == "2026-11-18 (commit abc1234)"
    assert first["reading"]["rule_since"].endswith(" (a build)")
    assert (second / RULES).is_file() and (committed / RULES).read_text() == recorded
    rules, history = (second / RULES).read_text(), (second / "history.md").read_text()
    assert "this build" not in history

    again = build(tmp_path, monkeypatch, claims, second)
    assert again == first and (second / "history.md").read_text() == history
    assert (second / RULES).read_text() == rules
    elsewhere = build(tmp_path, monkeypatch, claims, tmp_path / "x", runs=second / "runs")
    assert elsewhere == first and (tmp_path / "x" / "history.md").read_text() == history


def test_a_pre_registered_rule_is_dated_by_its_registration_until_it_changes(tmp_path):
    """A study whose rules were written before its runs (the atlas): a rule the rules file lacks
    is dated by the pre-registration, not by the build that first judges it, and recorded so;
    one changed afterwards is dated by the build that changed it, its verdict before kept."""
    committed = tmp_path / "reports" / "atlasX"

    def registered(claim_id):
        return "2026-11-28"

    claims = [claim("q1", 0.7), claim("q2", 0.1)]
    now = 1_796_000_000.0  # 2026-11-30
    first, book = date_rules(
        claims, committed, committed, RUNS_FINISHED, now, registered=registered
    )
    assert [c.rule_since for c in first] == ["2026-11-28 (pre-registration)"] * 2
    assert book.newer(first) == []  # written before the runs' first report
    recorded = json.loads((committed / RULES).read_text())["rules"]["q1"]
    assert recorded["date"] == "2026-11-28T00:00:00Z" and recorded["by"] == "pre-registration"
    (committed / "results.json").write_text(json.dumps([c.as_json() for c in first]))

    changed = [claim("q1", 0.7), claim("q2", 0.1, reproduced_at=0.05)]
    again, book = date_rules(changed, committed, committed, RUNS_FINISHED, now + 86_400,
                             registered=registered)  # fmt: skip
    assert [c.rule_since for c in again] == [
        "2026-11-28 (pre-registration)",
        "2026-12-01 (a build)",
    ]
    assert book.rules["q2"].before == ("not reproduced", None)
    assert [c.id for c in book.newer(again)] == ["q2"]


def test_a_papers_registered_readings_are_dated_by_their_registration_its_other_rules_not(
    tmp_path,
):
    """A paper whose runs' first report came before its pre-registration: a new claim of a
    registered reading is dated by the registration, a new claim it does not register by the
    build; both are newer than the runs' first report, the registered one by its own day."""
    committed = tmp_path / "reports" / "paperX"
    committed_report(committed, [claim("a", 0.6)])
    claims = [claim("a", 0.6), claim("reading.a", 0.6), claim("b", 0.6)]

    def registered_readings(claim_id):
        return "2026-11-28" if claim_id.startswith("reading.") else None

    dated, book = date_rules(claims, committed, committed, DAY, DAY * 2,
                             registered=registered_readings)  # fmt: skip
    since = {c.id: c.rule_since for c in dated}
    assert since["reading.a"] == "2026-11-28 (pre-registration)"
    assert since["b"].endswith("(a build)") and since["a"] == book.rules["a"].dated.since
    assert not since["b"].startswith("2026-11-28")
    assert [c.id for c in book.newer(dated)] == ["reading.a", "b"]
    recorded = json.loads((committed / RULES).read_text())["rules"]
    assert recorded["reading.a"]["by"] == "pre-registration" and "by" not in recorded["b"]
    rows = history_text("Paper X", dated, book, (DAY, DAY)).splitlines()
    assert next(r for r in rows if r.startswith("| `reading.a` |")).endswith(
        "| (a new claim, registered before its reading was measured) |"
    )
    assert next(r for r in rows if r.startswith("| `b` |")).endswith("| (a new claim) |")


def test_runs_that_finished_after_the_first_report_make_this_build_their_first(tmp_path):
    committed = tmp_path / "reports" / "paperX"
    committed_report(committed, [claim("a", 0.6)])
    _, book = date_rules([claim("a", 0.6)], tmp_path / "x", committed, DAY + 2 * 86_400, DAY * 2)
    assert book.first_report == Dated(DAY * 2, None, recorded=False)
    assert book.newer([claim("a", 0.6)]) == []


def test_runs_added_to_a_reports_runs_leave_their_first_report_and_its_newer_rules(
    tmp_path, monkeypatch
):
    """A reading's retrains added to runs reported before: the runs' first report stays the
    committed one, so a rule changed after it is still listed as newer (with every run finished
    after it, as a second training, this build would be their first report)."""
    committed = tmp_path / "reports" / "paperX"
    committed_report(committed, [claim("a", 0.6)])
    changed = [claim("a", 0.6, reproduced_at=0.7)]
    added = DAY + 10 * 86_400
    build(tmp_path, monkeypatch, changed, committed, finished=(RUNS_FINISHED, added))
    history = (committed / "history.md").read_text()
    assert "between 2026-11-18 12:06 UTC and 2026-11-28 11:06 UTC" in history
    assert "their first report was written 2026-11-19 (commit def5678). 1 of the 1 rules" in history
    assert json.loads((committed / RULES).read_text())["first_report"]["commit"] == "def5678"


def test_an_unreadable_rules_file_is_one_line_naming_it(tmp_path):
    committed = tmp_path / "reports" / "paperX"
    committed.mkdir(parents=True)
    (committed / RULES).write_text('{"rules": {"a": {"rule_template": "x"}}}')
    with pytest.raises(RulesFileError, match=r"rules.json cannot be read .*git checkout"):
        date_rules([claim("a", 0.6)], tmp_path / "x", committed, None)
