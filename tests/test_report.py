"""Verdicts follow their written rules, and the report files are what DESIGN.md describes."""

import json

import pytest

from experiments.report import Measured, compare_means, threshold_claim, write_report


def test_measured_mean_and_sample_std():
    measured = Measured.of([1.0, 2.0, 3.0, 4.0])
    assert measured.mean == 2.5
    assert measured.std == pytest.approx(1.2909944, rel=1e-6)
    assert measured.n == 4


@pytest.mark.parametrize(
    "ours,verdict",
    # paper mean .87, SE .055 (+ ours): reproduced within ~.13, partially within ~.27
    [([0.87, 0.88, 0.86, 0.87, 0.87], "reproduced"),
     ([0.80, 0.78, 0.82, 0.79, 0.81], "reproduced"),
     ([0.70, 0.71, 0.69, 0.70, 0.70], "partially reproduced"),
     ([0.50, 0.51, 0.49, 0.50, 0.50], "not reproduced"),
     ([0.0, 0.0, 0.0, 0.0, 0.0], "not reproduced")],
)  # fmt: skip
def test_compare_means_applies_its_rule(ours, verdict):
    paper = [0.69, 0.97, 0.81, 0.97, 0.91]  # Table 6, new compositions
    claim = compare_means("x", "x", paper, ours)
    assert claim.verdict == verdict
    assert claim.paper == pytest.approx(0.87)


def test_constant_values_need_to_be_within_rounding():
    assert compare_means("x", "x", [1.0] * 5, [0.99] * 5).verdict == "reproduced"
    assert compare_means("x", "x", [1.0] * 5, [0.96] * 5).verdict == "partially reproduced"
    assert compare_means("x", "x", [1.0] * 5, [0.90] * 5).verdict == "not reproduced"


def test_threshold_claim_boundaries():
    def verdict(statistic):
        claim = threshold_claim("x", "x", 1.0, [statistic], statistic, "s", 0.9, 0.5)
        return claim.verdict

    assert [verdict(0.95), verdict(0.9), verdict(0.6), verdict(0.1)] == [
        "reproduced", "reproduced", "partially reproduced", "not reproduced"
    ]  # fmt: skip


def test_write_report_gives_claims_and_a_summary(tmp_path):
    claims = [
        compare_means("table6.nc", "AG on NC", [0.69, 0.97, 0.81, 0.97, 0.91], [0.9] * 5),
        compare_means("table5.nc", "BL on NC", [0.0, 0.0, 0.03, 0.03, 0.06], [0.5] * 5),
    ]
    write_report(tmp_path, claims, "# Title\n\nBody.")
    records = json.loads((tmp_path / "results.json").read_text())
    assert [r["id"] for r in records] == ["table6.nc", "table5.nc"]
    for record in records:
        assert {"id", "claim", "paper", "measured", "rule", "verdict"} <= set(record)
        assert {"mean", "std", "n"} <= set(record["measured"])
    text = (tmp_path / "report.md").read_text()
    assert text.startswith("# Title")
    assert "2 claims: 1 reproduced, 0 partially reproduced, 1 not reproduced." in text
