"""Figure 3's k = 8 cells at three more seeds (the pre-registration's item 5): a setting is read
over every seed it was measured at, and each claim the added seeds moved keeps its verdict on
seeds 0-2 in its history, without the rule changes both reports record being repeated."""

from __future__ import annotations

import json

import pytest

from experiments.paper2 import reproduce
from experiments.paper2.readings import Estimate, Snapshot
from experiments.paper2.scales import SCALES, epoch_tag, figure3_settings
from experiments.report import Claim, Earlier, Measured

SCALE = SCALES["quick"]


def snapshot(mean: float) -> Snapshot:
    return Snapshot({"open": Estimate(mean, 0.01)}, Estimate(mean, 0.01), 1e-6)


def test_a_setting_is_read_over_every_seed_it_was_measured_at():
    """The unpredictable cell at seeds 0-2 (0.2, 0.4, 0.6) reads 0.4 with the standard error of
    the three; the predictable one, at seed 0 alone, reads its own 0.5."""
    cells = figure3_settings(SCALE)
    unpredictable, predictable = cells[(2, 0)], cells[(2, 2)]
    tags = [epoch_tag(e) for e in range(1, SCALE.epochs + 1)]
    measured = {(unpredictable, seed): {tag: snapshot(mean) for tag in tags}
                for seed, mean in ((0, 0.2), (1, 0.4), (2, 0.6))}  # fmt: skip
    measured[(predictable, 0)] = {tag: snapshot(0.5) for tag in tags}
    curves = reproduce.figure_values(measured, SCALE)["figure3"]
    assert [e.mean for e in curves[(2, 0)]] == pytest.approx([0.4] * SCALE.epochs)
    assert curves[(2, 0)][0].standard_error == pytest.approx(0.2 / 3**0.5)
    assert [e.mean for e in curves[(2, 2)]] == pytest.approx([0.5] * SCALE.epochs)


def claim(id: str, rule: str, verdict: str, earlier: tuple[Earlier, ...] = ()) -> Claim:
    return Claim(id, "words", 1.0, Measured.of([1.0]), rule, verdict, earlier=earlier)


def test_a_claim_the_more_seeds_moved_keeps_its_seeds_0_to_2_verdict_first(tmp_path, monkeypatch):
    rule_change = Earlier("reproduced", "the replaced rule: 2 of 2", "the rule: no margin")
    longer_k = claim("fig1.longer_k_needs_more_rules", "n = [100, 300, 300]", "reproduced")
    on_three = [claim("fig3.predictable_late", "gap -0.065 over seeds 0-2", "not reproduced",
                      (rule_change,)), longer_k]  # fmt: skip
    earlier = tmp_path / "seeds_0_to_2.json"
    earlier.write_text(json.dumps([c.as_json() for c in on_three]))
    monkeypatch.setattr(reproduce, "MORE_SEEDS_EARLIER", earlier)
    on_six = [claim("fig3.predictable_late", "gap -0.04 over seeds 0-5", "partially reproduced",
                    (rule_change,)), longer_k]  # fmt: skip
    late, longer = reproduce.with_more_seeds(on_six)
    assert late.earlier == (
        Earlier("not reproduced", "gap -0.065 over seeds 0-2", reproduce.MORE_SEEDS_REASON),
        rule_change,
    )
    assert reproduce.MORE_SEEDS_REASON.startswith("the runs: three more seeds at k = 8.")
    assert longer.earlier == ()  # the same runs, the same rule and verdict: untouched


def test_older_changes_keep_the_verdicts_the_seeds_0_to_2_report_recorded(tmp_path, monkeypatch):
    """A rule that records its replaced rule's verdict computes it on the runs at hand: on six
    seeds the replaced rule says 'partially', but the report on seeds 0-2 recorded 'not', and
    that is the history kept; a change newer than that report stays first."""
    reason = "the rule: no margin"
    on_three = [claim("fig3.predictable_late.m=100", "2 of 2 hold", "reproduced",
                      (Earlier("not reproduced", "old rule: 0 of 2", reason),))]  # fmt: skip
    earlier = tmp_path / "seeds_0_to_2.json"
    earlier.write_text(json.dumps([c.as_json() for c in on_three]))
    monkeypatch.setattr(reproduce, "MORE_SEEDS_EARLIER", earlier)
    newer = Earlier("reproduced", "2 of 2 hold", "the rule: a later change")
    judged_again = Earlier("partially reproduced", "old rule: 1 of 2", reason)
    on_six = [claim("fig3.predictable_late.m=100", "a later rule: 2 of 2", "reproduced",
                    (newer, judged_again))]  # fmt: skip
    (kept,) = reproduce.with_more_seeds(on_six)
    assert kept.earlier == (newer, Earlier("not reproduced", "old rule: 0 of 2", reason))
