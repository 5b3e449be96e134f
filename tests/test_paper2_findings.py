"""Paper 2's findings name its committed claims: each claim of `reports/paper2/results.json`
tests one finding under the reading its id says."""

import json
from pathlib import Path

from experiments.findings import with_findings
from experiments.paper2.findings import FINDINGS
from experiments.paper2.reproduce import STUDY
from experiments.report import Claim

RESULTS = Path(__file__).parents[1] / "reports" / "paper2" / "results.json"


def test_every_committed_claim_tests_a_finding_under_the_reading_its_id_names():
    claims = [Claim.from_json(record) for record in json.loads(RESULTS.read_text())]
    marked = {c.id: (c.finding, c.reading) for c in with_findings(claims, FINDINGS)}
    assert STUDY.findings == FINDINGS
    assert [i for i, (finding, _) in marked.items() if finding is None] == []
    assert marked["fig1.open_falls_with_k"] == ("fig1.longer_k", None)
    assert marked["fig3.predictable_late.m=100"] == ("fig3.predictable_late", "m=100")
    assert marked["authors_generator.authors.fig3.predictable_early.m=100"] == (
        "fig3.predictable_early", "authors_generator.authors m=100")  # fmt: skip
    assert marked["authors_at_close.training.weight_decay_1.2e-6_slows_rules"] == (
        "sec3.optimizers_slow", "authors_at_close second values")  # fmt: skip
    assert marked["cd.approximation_error"] == ("sec4.cd_error", None)
    assert len({finding for finding, _ in marked.values()}) == len(FINDINGS) == 9
