"""Paper 4's findings and its pre-registered rules with known answers, no training: the
findings mark the committed claims, the data's coverage is a fact about the corpus, and the
accuracies are judged one-sided with the seeds' spread."""

import json
from pathlib import Path

from experiments.findings import finding_verdicts, with_findings
from experiments.paper4.findings import FINDINGS
from experiments.report import Claim

RESULTS = Path(__file__).parents[1] / "reports/paper4/results.json"


def committed_claims() -> list[Claim]:
    return [Claim.from_json(r) for r in json.loads(RESULTS.read_text())]


def test_every_finding_names_the_committed_claims_and_the_data_facts_stay_unmarked():
    """Paper 4's findings (`experiments.paper4.findings`) mark every claim of the committed
    report but the data's coverage, each claim under the primary reading (the readings still
    to run have no claims yet), and every finding has a primary verdict."""
    claims = committed_claims()
    marked = {c.id: (c.finding, c.reading) for c in with_findings(claims, FINDINGS)}
    assert marked["data.coverage_tokens"] == marked["data.coverage_positions"] == (None, None)
    assert marked["control.counting_k2"] == ("finding2.counting_verified", None)
    assert marked["finding3.triggering_restrains_earlier"] == ("sec4.restraining", None)
    assert sum(f is not None for f, _ in marked.values()) == len(claims) - 2
    assert all(reading is None for _, reading in marked.values())
    verdicts = finding_verdicts(with_findings(claims, FINDINGS))
    assert set(verdicts) == {f.id for f in FINDINGS}
    assert verdicts["finding4.outputting"] == {"primary": "uninformative"}


def test_the_readings_still_to_run_are_marked_under_their_names():
    """The pre-registered readings' claim ids (`t6.*`, `each_step.*`, `lag_held.*`,
    `single_step.*`, `words_only.*`) are marked as other readings of their findings."""
    by_id = {f.id: f for f in FINDINGS}
    assert by_id["finding3.triggering"].reading_of("t6.table1.triggering_k2") == "T = 6"
    assert by_id["finding3.triggering"].reading_of("table1.triggering_k2") is None
    assert by_id["finding2.counting_verified"].reading_of("lag_held.control.counting_k1") == (
        "lag held"
    )
    assert (
        by_id["finding1.storing_unchanged"].reading_of(
            "single_step.direction.storing_previous_remains_high"
        )
        == "single step"
    )
    assert by_id["sec5.random_inputs"].reading_of("words_only.accuracy.random_decoder_inputs") == (
        "words only"
    )
