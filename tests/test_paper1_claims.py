"""Paper 1's findings and the rules registered for its claims (`reports/paper1/preregistration.md`),
checked on hand-made values with known answers and on the committed report's claim ids."""

import json
import operator
import re
from dataclasses import replace
from pathlib import Path

import pytest

from experiments.findings import with_findings
from experiments.paper1.analyses import mean_of
from experiments.paper1.claims import (
    at_least_claim,
    guided_above_baseline_claim,
    mean_ratio_claim,
    per_seed,
    sign_in_every_run,
)
from experiments.paper1.findings import FINDINGS
from experiments.paper1.reading_claims import primary_of
from experiments.paper1.registered import (
    BEFORE,
    CHANGES,
    COMPARISONS,
    SEED_SPLIT,
    judged_against_nulls,
    reason_of,
    registered_history,
    seed_split_null,
    seed_splits,
    split_statistics,
)
from experiments.paper1.reproduce import STUDY
from experiments.report import (
    Claim,
    Earlier,
    Measured,
    claims_table,
    compare_means,
    threshold_claim,
    why_changed,
)

REPORT = Path(__file__).parents[1] / "reports" / "paper1"
FACTS = {
    *(f"footnote1.{variant}_lstm.{split}" for variant in ("baseline", "guided")
      for split in ("heldout_compositions", "heldout_inputs", "heldout_tables",
                    "new_compositions")),
    *(f"{reading}fig2.threshold_is_top1pct.{module}" for reading in ("", "all_weights.")
      for module in ("encoder", "decoder")),
    "sec4_1.majority_baseline", "sec5_2.units_kept",
}  # fmt: skip
"""The committed claims that are facts about the data or the setup, not the paper's findings."""


def committed_claims() -> list[Claim]:
    return [Claim.from_json(r) for r in json.loads((REPORT / "results.json").read_text())]


def test_every_finding_names_committed_claims_and_only_the_facts_stay_unmarked():
    marked = with_findings(committed_claims(), FINDINGS)  # a finding naming none is refused
    assert {c.id for c in marked if c.finding is None} == FACTS
    readings = {(c.finding, c.reading) for c in marked if c.reading is not None}
    assert readings == {
        ("tables5_6", "text selection"),
        ("sec5_2", "the paper's pool of three"),
        ("fig2", "mean sign"),
        ("sec3_2", "mean sign"),
        ("fig4", "cloud"),
        ("fig4", "authors' gate data"),
        ("fig4", "authors' gate data, cloud"),
        ("sec5_1_guided", "against the retrained control"),
        ("sec5_1_baseline", "against the retrained control"),
        ("sec5_2", "units ranked by strong edges"),
        ("sec5_2", "weights zeroed"),
        ("sec5_2", "strong edges, weights zeroed"),
    }
    assert STUDY.findings == FINDINGS
    assert 8 <= len(FINDINGS) <= 16 and len({f.id for f in FINDINGS}) == len(FINDINGS)


def toy_build(results: dict[str, list[dict]]) -> list[Claim]:
    """A guided-against-baseline ratio of mean per-run values (rule: >= 1.2 reproduced, >= 1.0
    partially), as `fig1.guided_embedding_stronger`, and a claim judged on the untrained models."""
    guided, baseline = ([r["v"] for r in results[v]] for v in ("guided", "baseline"))
    ratio = threshold_claim("fig1.guided_embedding_stronger", "guided bigger", "bigger", guided,
                            mean_of(guided) / mean_of(baseline), "guided / baseline",
                            reproduced_at=1.2, partially_at=1.0)  # fmt: skip
    level = threshold_claim("fig1.sos_row_equal", "a level", "equal", guided, mean_of(guided),
                            "mean", reproduced_at=1.0, partially_at=0.5)  # fmt: skip
    return [ratio, level]


def runs(*values: float) -> list[dict]:
    return [{"v": v} for v in values]


def test_a_variants_seeds_split_into_every_group_of_half_and_the_rest():
    splits = seed_splits(5)
    assert len(splits) == 10 and all(len(a) == 2 and len(b) == 3 for a, b in splits)
    assert all(sorted(a + b) == [0, 1, 2, 3, 4] for a, b in splits)
    assert seed_splits(2) == [((0,), (1,)), ((1,), (0,))]
    with pytest.raises(ValueError, match="at least 2 runs"):
        seed_splits(1)


def test_the_seed_split_keeps_the_larger_way_round_of_each_split():
    # baseline seeds agree (every split: ratio 1); one guided seed of five is 3, the rest 1: with
    # it in the group of two, 2 / 1 = 2; in the group of three, max(1 / (5/3), 5/3) = 5/3
    results = {"baseline": runs(1, 1, 1, 1, 1), "guided": runs(1, 1, 1, 1, 3)}
    found = split_statistics(toy_build, results, ["fig1.guided_embedding_stronger"])
    assert sorted(found["fig1.guided_embedding_stronger"]) == pytest.approx(
        [1.0] * 10 + [5 / 3] * 6 + [2.0] * 4
    )


def test_a_comparison_that_seeds_alone_pass_is_uninformative_and_one_they_fail_is_kept():
    noisy = {"baseline": runs(1, 1, 1, 1, 1), "guided": runs(1, 1, 1, 1, 3)}  # median 4/3
    trained = {"baseline": runs(1, 1, 1, 1, 1), "guided": runs(2, 2, 2, 2, 2)}
    untrained = toy_build({"baseline": runs(1, 1, 1, 1, 1), "guided": runs(9, 9, 9, 9, 9)})
    claims = toy_build(trained)
    judged = judged_against_nulls(claims, untrained, noisy, toy_build)
    ratio, level = judged
    assert (ratio.verdict, ratio.rule_verdict, ratio.null, ratio.null_model) == (
        "uninformative",
        "reproduced",
        "reproduced",
        SEED_SPLIT,
    )
    assert "seed split: median statistic over 20 splits = 1.333" in ratio.uninformative_because
    # the level is judged on the untrained models, which pass it
    assert (level.verdict, level.null, level.null_model) == ("uninformative", "reproduced", None)
    steady = {"baseline": runs(1, 1, 1, 1, 1), "guided": runs(2, 2, 2, 2, 2)}  # every split: 1
    ratio = judged_against_nulls(claims, untrained, steady, toy_build)[0]
    assert (ratio.verdict, ratio.null) == ("reproduced", "partially reproduced")
    assert "**reproduced** | partially reproduced (seed split) |" in claims_table([ratio])
    assert Claim.from_json(json.loads(json.dumps(ratio.as_json()))) == ratio
    assert "threshold" not in ratio.as_json() and "null_model" not in claims[1].as_json()


def test_the_null_is_the_claims_own_rule_on_the_median():
    ratio = toy_build({"baseline": runs(1, 1), "guided": runs(2, 2)})[0]
    assert seed_split_null(ratio, [1.0, 1.1, 1.25, 5.0]).null == "partially reproduced"  # 1.175
    assert seed_split_null(ratio, [1.0, 1.1, 1.3, 5.0, 5.0]).null == "reproduced"  # 1.3
    assert seed_split_null(ratio, [0.5, 0.9]).null == "not reproduced"
    failed = replace(ratio, verdict="not reproduced")
    assert seed_split_null(failed, [5.0]).verdict == "not reproduced"  # it could fail, and did


@pytest.mark.parametrize(
    ("correlations", "verdict"),
    [
        ([-0.1, -0.2, -0.05, -0.3, -0.01], "reproduced"),  # the sign in every run, any size
        ([-0.5, -0.5, -0.5, 0.1, 0.1], "partially reproduced"),  # 3 of 5, mean < 0
        ([-0.1, -0.1, -0.1, 0.3, 0.3], "not reproduced"),  # 3 of 5 but mean > 0
        ([-0.9, -0.9, 0.1, 0.1, 0.1], "not reproduced"),  # mean < 0 but 2 of 5
        ([0.0, -0.2, -0.2, -0.2, -0.2], "partially reproduced"),  # r = 0 is not inverse
    ],
)
def test_inverse_polarity_asks_the_papers_sign_in_every_run(correlations, verdict):
    claim = sign_in_every_run("sec3_2.inverse_gate_polarity.guided.encoder", "r", correlations)
    assert claim.verdict == verdict
    assert f"runs with r < 0: {sum(r < 0 for r in correlations)} of 5" in claim.rule


@pytest.mark.parametrize(
    ("paper", "values", "verdict"),
    [
        (0.98, [0.99, 0.995, 1.0, 0.99, 0.995], "reproduced"),  # above: two-sided was partial
        (0.93, [0.93] * 5, "reproduced"),
        (0.93, [0.926] * 5, "reproduced"),  # within half a unit of the last decimal
        (0.93, [0.90] * 5, "partially reproduced"),  # 0.03 short, no spread: within 0.05
        (0.93, [0.75] * 5, "not reproduced"),
        (0.93, [1.0, 1.0, 0.5, 0.5, 1.0], "reproduced"),  # 0.13 short, 2 SE + 0.005 = 0.25
    ],
)
def test_a_value_above_the_papers_is_no_miss(paper, values, verdict):
    assert (
        at_least_claim("sec4_1.group_units_in_top5pct", "share", paper, values).verdict == verdict
    )
    if values[0] == 0.99:
        assert compare_means("x", "share", [paper], values).verdict == "partially reproduced"


def test_a_changed_rule_keeps_the_committed_verdict_before_it():
    old = Claim("sec3_2.inverse_gate_polarity.guided.encoder", "r", "inverse", Measured.of([-1]),
                "-(mean r) = 0.131", "partially reproduced",
                (Earlier("reproduced", "older rule", "the reading: an older one"),))  # fmt: skip
    new = sign_in_every_run(old.id, "r", [-0.1] * 5)
    same = replace(toy_build({"baseline": runs(1), "guided": runs(2)})[0])
    untouched = Claim("fig2.threshold_is_top1pct.encoder", "share", 0.01, Measured.of([0.03]),
                      "a new text", "reproduced")  # fmt: skip
    kept = registered_history([new, same, untouched], [old, same, replace(untouched, rule="old")])
    assert kept[0].earlier == (
        Earlier("partially reproduced", "-(mean r) = 0.131", reason_of(old.id)),
        Earlier("reproduced", "older rule", "the reading: an older one"),
    )
    assert why_changed(kept[0]) == (
        "was partially reproduced (the rule: the paper's sign in every run, no invented size); "
        "1 older change in history.md"
    )
    assert kept[1:] == [same, untouched]  # unchanged, or no registered change names it


def test_each_changes_reason_opens_with_the_sentence_the_preregistration_gives():
    registered = re.findall(r'reason: "([^"]+)"', (REPORT / "preregistration.md").read_text())
    assert [reason.split(". ", 1)[0] + "." for _, reason in CHANGES] == registered
    assert len(COMPARISONS) == 19 and reason_of("fig2.polar_neurons.decoder_W_iz") == CHANGES[0][1]
    assert reason_of("table3.encoder.hidden.baseline.accuracy_all") == CHANGES[2][1]
    assert reason_of("table3.encoder.hidden.baseline.accuracy_group") is None
    assert reason_of("fig1.sos_row_equal") is None  # an "equal" claim keeps the untrained null


def test_the_committed_report_keeps_each_registered_changes_verdict_before_it():
    claims = {c.id: c for c in committed_claims()}
    split = {id for id, c in claims.items() if c.null_model == SEED_SPLIT}
    assert split == {id for id in claims if primary_of(id) in COMPARISONS}  # readings' too
    assert set(COMPARISONS) <= split
    before = [Claim.from_json(r) for r in json.loads(BEFORE.read_text())]
    assert {c.id for c in before} == {id for id in claims if reason_of(id)}
    for old in before:
        new = claims[old.id]
        if (old.rule, old.verdict) != (new.rule, new.verdict):
            assert new.earlier == (Earlier(old.verdict, old.rule, reason_of(old.id)), *old.earlier)


def test_a_comparison_shows_per_seed_what_its_rule_compares():
    """A guided-against-baseline claim's measured values are the comparison per seed, not one
    variant's values: fewer connected neurons in guided reads baseline / guided per seed."""

    def connected(*counts):
        return [{"connectivity": {"encoder W_hz": {"connected": c}}} for c in counts]

    results = {"baseline": connected(4, 6), "guided": connected(2, 2)}
    claim = mean_ratio_claim("fig2.fewer_connected_neurons.encoder_W_hz", "fewer", "fewer",
                             results, "encoder W_hz", "connected", ("baseline", "guided"),
                             "number of connected neurons")  # fmt: skip
    assert claim.measured.values == (2.0, 3.0)
    assert claim.threshold.statistic == 2.5  # the groups' means: 5 / 2
    more = guided_above_baseline_claim("fig2.polar_neurons.encoder_W_hz", "more", "more",
                                       {"baseline": [1, 0, 2], "guided": [3, 3]}, "difference",
                                       reproduced_at=1.0, partially_at=0.2)  # fmt: skip
    assert more.measured.values == (2.0, 3.0)  # a seed split's 3 and 2 pair the shorter's runs
    assert per_seed([1.0, 4.0], [2.0, 2.0], operator.truediv) == [0.5, 2.0]
