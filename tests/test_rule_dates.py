"""Rules dated against the runs they judge: a rule's date is the oldest committed report with
the same rule (measured values aside), and a rule that appeared after the runs' first report is
listed as newer, with its verdict before the change."""

import json
import subprocess
from dataclasses import replace

from experiments.report import Claim, cannot_fail, threshold_claim, with_earlier
from experiments.rule_dates import ReportHistory, dated, dates_section, rule_template


def git(repository, *arguments, stamp=None):
    environment = {"GIT_AUTHOR_DATE": f"@{stamp} +0000", "GIT_COMMITTER_DATE": f"@{stamp} +0000"}
    subprocess.run(["git", "-C", str(repository), *arguments], check=True, capture_output=True,
                   env={**environment, "HOME": str(repository), "PATH": "/usr/bin:/bin",
                        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})  # fmt: skip


def commit_report(repository, claims, stamp):
    results = repository / "reports" / "paperX" / "results.json"
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps([c.as_json() for c in claims]))
    git(repository, "add", "-A")
    git(repository, "commit", "-qm", f"report at {stamp}", stamp=stamp)


def claim(id, statistic, reproduced_at=0.5):
    return threshold_claim(id, id, 1.0, [statistic], statistic, "s", reproduced_at, 0.2)


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


def test_rules_changed_after_the_runs_first_report_are_listed_with_their_earlier_verdict(
    tmp_path,
):
    git(tmp_path, "init", "-q")
    (tmp_path / "code.py").write_text("rules = 1\n")
    first = [claim("kept", 0.6), claim("changed", 0.6), claim("silent", 0.6)]
    commit_report(tmp_path, first, stamp=1_000)  # an earlier report, earlier runs
    commit_report(tmp_path, [claim("kept", 0.7), claim("changed", 0.7), claim("silent", 0.7)],
                  stamp=2_000)  # the first report of the runs finished at 1,500  # fmt: skip
    later = [claim("kept", 0.7), claim("changed", 0.7, reproduced_at=0.8),
             cannot_fail(claim("silent", 0.7), "set by the method"), claim("new", 0.7)]  # fmt: skip
    later = with_earlier(later, [claim("changed", 0.7)], "issue 29 raised the bar")
    commit_report(tmp_path, later, stamp=3_000)
    history = ReportHistory.of(tmp_path, "reports/paperX/results.json")
    assert [c.time for c, _ in history.versions] == [3_000, 2_000, 1_000]
    assert history.first_report_after(1_500).time == 2_000
    claims = {c.id: c for c in dated(later, history)}
    ids = {c.time: c.id for c, _ in history.versions}
    assert claims["kept"].rule_since == ids[1_000]  # unchanged since the first report
    assert claims["changed"].rule_since == ids[3_000]
    assert claims["silent"].rule_since == ids[3_000]  # its verdict's reason changed
    section = dates_section(list(claims.values()), history, finished=1_500)
    assert f"their first report was commit `{ids[2_000]}`. 3 of the 4 rules are newer" in section
    assert "| `changed` |" in section and "| `kept` |" not in section
    new, before = ids[3_000], f"reproduced (commit `{ids[2_000]}`)"
    assert f"| `changed` | `{new}` | partially reproduced | {before} |" in section
    assert f"| `silent` | `{new}` | uninformative | {before} |" in section
    assert f"| `new` | `{new}` | reproduced | (a new claim) |" in section
    assert "this is the first report of them" in dates_section(list(claims.values()), history,
                                                               finished=5_000)  # fmt: skip


def test_a_claim_carries_its_rule_date_through_results_json():
    dated_claim = replace(claim("a", 0.6), rule_since="abc1234")
    assert Claim.from_json(json.loads(json.dumps(dated_claim.as_json()))) == dated_claim


def test_without_git_every_rule_is_undated(tmp_path):
    history = ReportHistory.of(tmp_path, "reports/paperX/results.json")
    (undated,) = dated([claim("a", 0.6)], history)
    assert undated.rule_since == "unknown"
    assert "unknown here" in dates_section([undated], history, finished=1_000)


def test_a_rebuilt_report_dates_its_rules_as_the_report_that_first_wrote_them(tmp_path):
    """A report written from code commit C dates its new rules C; committed later, a rebuild of
    it dates them C too (the date that report recorded), not the report's own commit; a
    recorded date this repository lacks, "working tree", or a commit dated after the report,
    gives the report's commit."""
    git(tmp_path, "init", "-q")
    (tmp_path / "code.py").write_text("rules = 1\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "code", stamp=900)
    code = ReportHistory.of(tmp_path, "reports/paperX/results.json").current
    assert code.time == 900
    written = dated([claim("a", 0.6), claim("b", 0.6), claim("c", 0.6)],
                    ReportHistory.of(tmp_path, "reports/paperX/results.json"))  # fmt: skip
    assert [c.rule_since for c in written] == [code.id] * 3
    written[1] = replace(written[1], rule_since="0badc0de")
    written[2] = replace(written[2], rule_since="working tree")
    (tmp_path / "code.py").write_text("rules = 2\n")  # a commit dated after the report
    git(tmp_path, "commit", "-qam", "later code", stamp=1_100)
    later = ReportHistory.of(tmp_path, "reports/paperX/results.json").current
    written.append(replace(claim("d", 0.6), rule_since=later.id))
    commit_report(tmp_path, written, stamp=1_000)
    history = ReportHistory.of(tmp_path, "reports/paperX/results.json")
    ((report, _),) = history.versions
    rebuilt = dated([claim(i, 0.7) for i in "abcd"], history)
    assert [c.rule_since for c in rebuilt] == [code.id, report.id, report.id, report.id]
    assert "0 of the 4 rules are newer" in dates_section(rebuilt, history, finished=950)
    assert history.time_of(code.id) == 900 and history.time_of("0badc0de") == 0.0
