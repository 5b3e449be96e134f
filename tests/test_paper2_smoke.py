"""`python -m experiments.paper2 --scale smoke`: the whole paper-2 pipeline in under a minute.

Tiny models for two epochs: the numbers mean nothing, the files and claims must all be there.
"""

from tests.smoke import smoke_reproduction


def test_smoke_reproduction_writes_report_claims_and_figures(tmp_path):
    output, claims = smoke_reproduction(2, tmp_path, timeout=600)
    assert output.count("] k=") == 4  # 2 conduit lengths x 2 rule counts
    assert output.count("] pooled_k=2_") == 2  # unpredictable and predictable
    assert set(claims) == {
        "fig1.longer_k_needs_more_rules", "fig1.open_falls_with_k", "fig1.conduit_very_low",
        "fig1.rare_open_steady", "fig1.rare_conduit_declines", "fig2.conduit_interacts",
        "fig3.predictable_early", "fig3.predictable_late", "cd.approximation_error",
    }  # fmt: skip
    assert claims["cd.approximation_error"]["verdict"] == "reproduced"  # exact by construction
    report = (tmp_path / "report" / "report.md").read_text()
    for figure in ("fig1_rule_frequency", "fig2_conduit_prefixes", "fig3_predictability"):
        assert (tmp_path / "report" / "figures" / f"{figure}.png").stat().st_size > 1000
        assert f"figures/{figure}.png" in report
    assert "m = 2 copies" in report and "`smoke`" in report
