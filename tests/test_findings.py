"""A paper's findings judged from the claims that test them (`experiments.findings`)."""

import json
from importlib import import_module
from pathlib import Path

import pytest

from experiments.findings import (
    Finding,
    finding_verdicts,
    findings_headline,
    findings_section,
    findings_table,
    unnamed,
    verdict_of,
    with_findings,
)
from experiments.headlines import headlines_table
from experiments.report import Claim, Measured, cannot_fail, write_report


def claim(id: str, verdict: str, mean: float = 0.5, paper: float = 0.9) -> Claim:
    rule_verdict = "reproduced" if verdict == "uninformative" else verdict
    made = Claim(id, f"claim {id}", paper, Measured.of([mean]), "a rule", rule_verdict)
    return cannot_fail(made, "the untrained models pass") if verdict == "uninformative" else made


FINDINGS = (
    Finding("fig1", "Rare rules are learned later (Figure 1).", ("fig1.*",),
            {"authors": ("authors.fig1.*",)}, because="the rarest cells sit at chance"),
    Finding("sec5", "Momentum learns the rule sooner (section 5).", ("sec5.*",)),
)  # fmt: skip


def test_a_findings_verdict_follows_its_rule():
    R, P, N, U = "reproduced", "partially reproduced", "not reproduced", "uninformative"
    assert verdict_of([claim("a", R), claim("b", R), claim("c", U)]) == R
    assert verdict_of([claim("a", N), claim("b", U)]) == N
    assert verdict_of([claim("a", R), claim("b", N)]) == P
    assert verdict_of([claim("a", P)]) == P
    assert verdict_of([claim("a", U), claim("b", U)]) == U
    assert verdict_of([]) == "-"


def test_claims_are_marked_with_their_finding_and_reading():
    claims = [claim("fig1.early", "reproduced"), claim("fig1.late", "not reproduced"),
              claim("authors.fig1.early", "reproduced"), claim("sec5.momentum", "reproduced"),
              claim("data.size", "reproduced")]  # fmt: skip
    marked = with_findings(claims, FINDINGS)
    assert [(c.finding, c.reading) for c in marked] == [
        ("fig1", None),
        ("fig1", None),
        ("fig1", "authors"),
        ("sec5", None),
        (None, None),
    ]
    assert finding_verdicts(marked) == {
        "fig1": {"primary": "partially reproduced", "authors": "reproduced"},
        "sec5": {"primary": "reproduced"},
    }
    assert findings_headline(marked) == (
        "2 findings (primary reading): 1 reproduced, 1 partially reproduced; "
        "1 of 2 informative findings reproduced"
    )
    table = findings_table(FINDINGS, marked)
    fig1 = next(line for line in table.splitlines() if "**fig1**" in line)
    assert "authors: reproduced" in fig1 and "`fig1.late`" in fig1 and "at chance" in fig1
    assert "`fig1.early`" not in fig1.split("|")[5]  # only failing claims are named
    sec5 = next(line for line in table.splitlines() if "**sec5**" in line)
    assert sec5.rstrip().endswith("| - |")  # reproduced: nothing to explain


def test_a_finding_no_claim_tests_is_not_measured_at_this_scale():
    marked = with_findings([claim("fig1.early", "reproduced")], FINDINGS)
    table = findings_table(FINDINGS, marked).splitlines()
    sec5 = next(line for line in table if "**sec5**" in line)
    assert "**not measured at this scale**" in sec5
    assert unnamed(FINDINGS, ["fig1.early"]) == ["sec5"]
    assert unnamed(FINDINGS, ["fig1.early", "sec5.momentum"]) == []


@pytest.mark.parametrize("paper", [1, 2, 3, 4])
def test_every_finding_names_a_claim_of_the_committed_report(paper):
    findings = import_module(f"experiments.paper{paper}.findings").FINDINGS
    results = Path(__file__).parents[1] / f"reports/paper{paper}/results.json"
    ids = [row["id"] for row in json.loads(results.read_text())]
    assert unnamed(findings, ids) == []


def test_the_report_opens_with_the_findings_and_results_json_keeps_them(tmp_path):
    marked = with_findings([claim("fig1.early", "not reproduced"),
                            claim("sec5.momentum", "reproduced")], FINDINGS)  # fmt: skip
    report = write_report(tmp_path / "paper9", marked, "# Paper 9\n\nHow it was run.",
                          findings=findings_section(FINDINGS, marked))  # fmt: skip
    text = report.read_text()
    assert text.index("## Findings") < text.index("How it was run.") < text.index("## Claims")
    again = [Claim.from_json(r) for r in json.loads((tmp_path / "paper9/results.json").read_text())]
    assert again == marked
    assert "| `reports/paper9/report.md` | 1 of 2 | 2 | 1 | 0 | 1 | 0 |" in headlines_table(
        tmp_path
    ).replace(tmp_path.name, "reports")


def test_a_paper_value_in_words_is_cut_in_the_findings_table():
    from experiments.findings import PAPER_WORDS, printed

    words = "the rule is learned sooner with momentum than with plain SGD, at every k"
    assert printed(words) == words[: PAPER_WORDS - 1].rstrip() + "…"
    assert len(printed(words)) <= PAPER_WORDS
    assert printed("A > B") == "A > B" and printed(0.98512) == "0.985"


def test_a_comparison_in_words_shows_the_statistic_its_rule_judges_not_one_sides_mean():
    """A claim the paper states in words (guided bigger than baseline) measures one side's
    values but judges their ratio: the findings table shows the ratio as the rule states it; a
    claim against a number shows its mean; a long statistic keeps its start and its value, and a
    "; " inside brackets does not end it."""
    from experiments.findings import STATISTIC_CHARACTERS, judged

    rule = "guided / baseline mean |w| = 3.326; reproduced if >= 1.5"
    ratio = Claim("fig1.stronger", "guided bigger", "bigger in rows 2-10", Measured.of([0.12]),
                  rule, "reproduced")  # fmt: skip
    assert judged(ratio) == "guided / baseline mean |w| = 3.326"
    bigger = [Finding("fig1", "Bigger weights.", ("fig1.*",))]
    table = findings_table(bigger, with_findings([ratio], bigger))
    assert r"guided / baseline mean \|w\| = 3.326 (bigger in rows 2-10)" in table  # escaped |
    assert "0.12" not in table
    assert judged(claim("a", "reproduced", mean=0.98512)) == "0.985"
    long = Claim("sec5", "sooner", "sooner with momentum", Measured.of([4.0]),
                 "direction first: the first epoch with momentum - without (seeds [4, 4]; never: "
                 "0) over every conduit length of the grid = -18.000, signed so the paper's "
                 "direction is positive; reproduced if >= 5", "not reproduced")  # fmt: skip
    shown = judged(long)
    assert shown.startswith("the first epoch with momentum") and shown.endswith("… = -18.000")
    assert len(shown) <= STATISTIC_CHARACTERS
