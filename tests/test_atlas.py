"""The atlas (`experiments.atlas`): its pre-registration, each wired method's cell on a small
hand-built model with a known answer, and the quick reproduction end to end."""

from __future__ import annotations

from pathlib import Path

from experiments.atlas.questions import (
    DATE,
    METHODS,
    MODELS,
    NOT_APPLICABLE,
    QUESTIONS,
    RULES,
    cell_status,
    preregistration_text,
)

REPOSITORY = Path(__file__).resolve().parents[1]


# ---- the pre-registration ------------------------------------------------------------------------
def test_committed_preregistration_is_the_one_the_code_judges_by():
    """reports/atlas/preregistration.md is questions.py's text: a rule changed in the code
    without its pre-registration (or the other way round) fails here."""
    committed = (REPOSITORY / "reports" / "atlas" / "preregistration.md").read_text()
    assert committed == preregistration_text()
    assert f"Written {DATE}, before any atlas run" in committed


def test_every_cell_is_measured_or_says_why_not():
    assert len(MODELS) >= 6 and len(METHODS) >= 6
    assert set(NOT_APPLICABLE) <= {(m, k) for m in MODELS for k in METHODS}
    for model in MODELS:
        for method in METHODS:
            status = cell_status(model, method)
            assert status == "measured" or len(status.split()) >= 8, (model, method)


def test_every_question_claim_has_a_rule_that_can_fail_both_ways():
    claims = [claim for question in QUESTIONS for claim in question.claims]
    assert len(claims) == len(set(claims)) and set(claims) == set(RULES)
    assert [q.id for q in QUESTIONS] == ["q1", "q2", "q3", "q4"]
    for claim, rule in RULES.items():
        assert rule.kind in ("threshold", "direction"), claim
        assert 0 < rule.partially_at <= rule.reproduced_at, claim  # a tie is never a yes
        assert rule.reproduced_at < 1, claim  # a statistic of at most 1 can reach it
