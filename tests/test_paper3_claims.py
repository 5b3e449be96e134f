"""Paper 3's claim rules with known answers, no training: the toy's boundary and its rules
against the control, the images' and SCAN's comparisons, SCAN's split sizes, and every claim
judged on the untrained weights (the null model)."""

import json
from pathlib import Path

import pandas as pd
import pytest
import torch

from datamodules.scan import ScanDataModule
from experiments.engine.store import SittingError
from experiments.findings import with_findings
from experiments.paper3.claims import (
    FINDINGS,
    SCAN_SIZES,
    TOY_CONTROL,
    greater_claim,
    split_size_claims,
    step1_claim,
    toy_claims,
)
from experiments.paper3.findings import FINDINGS as PAPER3_FINDINGS
from experiments.paper3.runs import SCHEMA
from experiments.paper3.scales import SETTINGS
from experiments.paper3.scan_authors import authors_measured, authors_scan_claims, authors_tables
from experiments.paper3.toy import (
    GRID,
    PLAYGROUND,
    TEXT,
    boundary_over_training,
    step1_holds,
    x2_dependence,
)
from experiments.paper3.untrained import judged_claims, untrained_record
from experiments.report import RULE_VERDICTS, Claim


def test_unstamped_measurements_get_their_version_and_older_ones_are_measured_again():
    """A kept record written before versions were recorded is read at the version its fields
    show: without the untrained weights or the data's sizes 1, a toy record without the boundary
    over training 2, else 3 (up to date); a stamped record is at its stamp; a newer one stops."""
    untrained = {"untrained": {}, "data_sizes": {"train": 1, "test": 1}}
    assert SCHEMA.version_of({"boundaries": None, "data_sizes": {"train": 1, "test": 1}}) == 1
    assert SCHEMA.version_of({"untrained": {}}) == 1
    toy_before = {**untrained, "boundaries": {"x2_dependence": 0.1, "y1_probability": {}}}
    assert SCHEMA.version_of(toy_before) == 2
    assert SCHEMA.version_of({**untrained, "boundaries": {"quadrant_y1_share": {"1": 0.5}}}) == 3
    assert SCHEMA.version_of({**untrained, "boundaries": None}) == 3  # images and SCAN
    assert SCHEMA.version_of({"schema": 2, **untrained, "boundaries": None}) == 2
    with pytest.raises(SittingError, match="schema version 4, newer than this code's 3"):
        SCHEMA.migrated({"schema": 4}, Path("measurements.json"))


def test_boundary_over_training_and_the_step1_rule():
    """A boundary through the quadrant's diagonal after step 1 that stays: the rule holds; one
    that leaves the quadrant at a later step, or never enters it: it does not."""
    x2, x1 = torch.meshgrid(GRID, GRID, indexing="ij")
    compositional = (x1 > 0).float()
    diagonal = ((x1 > 0) & (x2 < x1)).float()
    measured = boundary_over_training({0: compositional, 1: diagonal, 2: diagonal}, TEXT)
    assert measured["quadrant_y1_share"]["0"] == 1.0
    assert measured["quadrant_y1_share"]["1"] == pytest.approx(0.5, abs=0.01)
    assert measured["changed_after_step1"] == 0.0
    assert step1_holds(measured["quadrant_y1_share"], measured["changed_after_step1"])
    leaves = boundary_over_training({1: diagonal, 2: diagonal, 16: compositional}, TEXT)
    assert leaves["changed_after_step1"] == pytest.approx(0.5, abs=0.01)
    assert not step1_holds(leaves["quadrant_y1_share"], leaves["changed_after_step1"])
    outside = boundary_over_training({1: compositional, 2: compositional}, TEXT)
    assert not step1_holds(outside["quadrant_y1_share"], outside["changed_after_step1"])
    holds = [True, True, False, False, False]
    frame = pd.DataFrame({"reading": "playground", "setting": "A", "seed": range(5),
                          "step 1": 0.5, "step-1 rule holds": holds})  # fmt: skip
    claim = step1_claim(frame, PLAYGROUND)
    assert claim.id == "playground.toy.step1_boundary_stable"
    assert claim.verdict == "partially reproduced"  # 2 of 5 < half
    frame["step-1 rule holds"] = [True, True, True, False, False]
    assert step1_claim(frame, PLAYGROUND).verdict == "reproduced"
    frame["step-1 rule holds"] = False
    assert step1_claim(frame, PLAYGROUND).verdict == "not reproduced"


def test_x2_dependence_of_known_boundaries():
    x2, x1 = torch.meshgrid(GRID, GRID, indexing="ij")
    assert x2_dependence((x1 > 0).float()) == 0.0  # Y1 read from X1 alone: compositional
    assert x2_dependence(((x1 > 0) & (x2 < 0)).float()) == 1.0  # every column flips at X2 = 0
    half = (x1 > 0.5) | ((x1 > 0) & (x2 < 0))  # columns x1 in (0, 0.5] flip, the rest do not
    assert x2_dependence(half.float()) == pytest.approx(0.5)


def test_greater_claim_rule():
    assert greater_claim("images.gap_larger", [0.4] * 5, [0.1] * 5, "gap", 0.05).verdict == (
        "reproduced"
    )
    slight = greater_claim("images.gap_larger", [0.12, 0.13, 0.11], [0.1] * 3, "gap", 0.05)
    assert slight.verdict == "partially reproduced"
    assert greater_claim("images.gap_larger", [0.1] * 3, [0.2] * 3, "gap", 0.05).verdict == (
        "not reproduced"
    )
    noisy = greater_claim("scan.gap_larger", [0.9, 0.1, 0.9, 0.1], [0.3] * 4, "gap", 0.05)
    assert noisy.verdict == "partially reproduced"  # mean difference 0.2 < 2 SE


def scan_authors_record(train_curve: list[float], final_gap: float) -> dict:
    """A `scan_authors` run's measurements with the given training-sample curve (updates 1, 2,
    ...) and final train - test gap."""
    updates = list(range(1, len(train_curve) + 1))
    return {"curves": {"updates": updates, "train": train_curve, "test": [0.0] * len(updates)},
            "batch_accuracy": {"updates": updates, "seq_acc": [0.0] * len(updates)},
            "final": {"train": 0.5 + final_gap / 2, "test": 0.5 - final_gap / 2,
                      "gap": final_gap}}  # fmt: skip


def test_authors_scan_claims_read_the_training_sample_over_updates_10_to_25():
    """Section 5.2's rules on the authors' reading: the early statistic is the training-sample
    curve's mean over updates 10-25 (0.5 for A: 1 on 10-17, 0 on 18-25; 0.1 for B), the gap the
    final one; ids `authors.scan.*`, the paper's statements, the union noted in the rules."""
    a_curve = [0.9] * 9 + [1.0] * 8 + [0.0] * 8 + [0.9] * 25  # 50 updates
    records = {("scan_authors", "A", seed): scan_authors_record(a_curve, 0.6) for seed in (0, 1)}
    records |= {("scan_authors", "B", seed): scan_authors_record([0.1] * 50, 0.3 + 0.1 * seed)
                for seed in (0, 1)}  # fmt: skip
    measured = authors_measured(records, (0, 1))
    assert measured["early"] == {"A": [0.5, 0.5], "B": [pytest.approx(0.1)] * 2}
    early, gap = authors_scan_claims(measured)
    assert (early.id, gap.id) == ("authors.scan.faster_early", "authors.scan.gap_larger")
    assert early.measured.mean == pytest.approx(0.4) and early.verdict == "reproduced"
    assert gap.measured.values == pytest.approx((0.3, 0.2)) and gap.verdict == "reproduced"
    assert early.claim == FINDINGS["scan.faster_early"]
    assert "after updates 10-25" in early.rule and "all 7,706 test rows" in gap.rule
    tables = authors_tables(measured)
    assert tables["scan_authors_early_training"]["mean"].tolist() == pytest.approx(
        [0.5, 0.1, 0.0, 0.0])  # fmt: skip
    assert tables["scan_authors_final_accuracy"]["gap mean"].tolist() == pytest.approx([0.6, 0.35])


# ---- the toy against its control, setting B ------------------------------------------------
def toy_frame(a: dict[str, list[float]], b: dict[str, list[float]]) -> pd.DataFrame:
    """`toy_table`'s rows for settings A and B, seeds 0, 1, ...: each setting's `shortfall`
    (training accuracy 1 - test accuracy on (1, 1)) and `dependence` (X2) per seed."""
    return pd.DataFrame([
        {"setting": setting, "seed": seed, "train accuracy": 1.0,
         "test (1,1) accuracy": 1.0 - values["shortfall"][seed],
         "X2 dependence": values["dependence"][seed]}
        for setting, values in (("A", a), ("B", b)) for seed in range(len(a["dependence"]))
    ])  # fmt: skip


def test_toy_claims_fail_where_the_control_does_as_much():
    """Setting B, the control, failing on (1, 1) and depending on X2 as much as A: the earlier
    rule (A alone against the threshold) passed it, kept as the earlier verdict; A
    compared seed by seed with B's run of the same seed fails it (a tie is no difference)."""
    same = {"shortfall": [0.3, 0.3, 0.3], "dependence": [0.2, 0.2, 0.2]}
    fails, depends = toy_claims(toy_frame(same, same))
    for claim in (fails, depends):
        assert (claim.verdict, claim.earlier[0].verdict) == ("not reproduced", "reproduced")
        assert claim.earlier[0].reason == TOY_CONTROL and claim.measured.values == (0.0,) * 3
        assert claim.rule.startswith("direction first: mean per-seed difference A - B")
    assert "setting A's X2 dependence > 0.05" in depends.earlier[0].rule
    above = {"shortfall": [0.45, 0.45, 0.45], "dependence": [0.3, 0.3, 0.3]}
    assert [c.verdict for c in toy_claims(toy_frame(above, same))] == ["reproduced"] * 2
    # a difference of exactly the threshold (0.25 - 0.2 = 0.05) is none
    at_threshold = {"shortfall": [0.4, 0.4, 0.4], "dependence": [0.25, 0.25, 0.25]}
    assert [c.verdict for c in toy_claims(toy_frame(at_threshold, same))] == (
        ["not reproduced"] * 2)  # fmt: skip
    # one seed far above its control, the others below theirs: the direction comes first
    mixed = {"shortfall": [0.9, 0.0, 0.0], "dependence": [0.8, 0.0, 0.0]}
    control = {"shortfall": [0.0, 0.5, 0.5], "dependence": [0.0, 0.5, 0.5]}
    for claim in toy_claims(toy_frame(mixed, control)):
        assert claim.verdict == "not reproduced" and "share of seeds" in claim.rule
    one_seed = {"shortfall": [0.5, 0.3, 0.3], "dependence": [0.5, 0.2, 0.2]}
    assert [c.verdict for c in toy_claims(toy_frame(one_seed, same))] == (
        ["partially reproduced"] * 2)  # fmt: skip
    playground = toy_claims(toy_frame(above, same), PLAYGROUND)
    assert [c.id for c in playground] == ["playground.toy.fails_on_test",
                                          "playground.toy.depends_on_x2"]  # fmt: skip
    assert "[0.3, 5.3]" in playground[1].rule


# ---- SCAN's split sizes (Appendix B) ------------------------------------------------------------
def test_split_size_claims_equal_the_papers_numbers_on_the_regenerated_data():
    """Appendix B: "The task contains 14,670 training and 7,706 test samples"; SCAN regenerated
    from the grammar has exactly those rows in both settings. A count off by one is not
    reproduced; the claims have no null verdict (the data's, not a model's)."""
    assert SCAN_SIZES == {"train": 14670, "test": 7706}
    records = {}
    for setting in SETTINGS:
        data = ScanDataModule(setting=setting, eval_size=10, data_seed=3)
        data.setup()
        sizes = {split: len(data.datasets[split]) for split in ("train", "test")}
        records[("scan", setting, 3)] = {"data_sizes": sizes}
    train, test = split_size_claims(records, (3,))
    assert (train.id, test.id) == ("scan.train_size", "scan.test_size")
    assert (train.paper, test.paper) == ("14,670", "7,706")
    assert train.measured.values == (14670.0, 14670.0) and test.measured.mean == 7706
    assert train.verdict == test.verdict == "uninformative" and train.null is None
    assert train.rule_verdict == test.rule_verdict == "reproduced"
    assert "no model touches" in train.uninformative_because
    assert train.claim == FINDINGS["scan.train_size"]
    records[("scan", "B", 3)]["data_sizes"]["test"] = 7705
    assert split_size_claims(records, (3,))[1].rule_verdict == "not reproduced"


def test_split_sizes_are_facts_about_the_data_with_the_earlier_verdict_kept():
    """The pre-registered rule: the counts are checks of the data (uninformative), the rule's
    own verdict beside them, and the verdict before (reproduced, the same rule) kept as an
    earlier entry whose reason opens "the rule: a fact about the data, not a finding."."""
    records = {("scan", s, 3): {"data_sizes": {"train": 14670, "test": 7706}} for s in SETTINGS}
    for claim in split_size_claims(records, (3,)):
        assert claim.verdict == "uninformative" and claim.rule_verdict == "reproduced"
        (before,) = claim.earlier
        assert (before.verdict, before.rule) == ("reproduced", claim.rule)
        assert before.reason.startswith("the rule: a fact about the data, not a finding.")
        assert claim.changed


def test_every_finding_names_the_committed_claims_and_the_data_facts_stay_unmarked():
    """Paper 3's findings (`experiments.paper3.findings`) mark every claim of the committed
    report but SCAN's split sizes; each finding has one claim under the primary reading, and
    the authors' programs and the playground are the other readings."""
    results = Path(__file__).parents[1] / "reports/paper3/results.json"
    claims = [Claim.from_json(r) for r in json.loads(results.read_text())]
    marked = {c.id: (c.finding, c.reading) for c in with_findings(claims, PAPER3_FINDINGS)}
    assert marked["scan.train_size"] == marked["scan.test_size"] == (None, None)
    assert marked["authors.scan.faster_early"] == ("sec5.2.faster", "authors")
    assert marked["playground.toy.step1_boundary_stable"] == ("sec6.step1_stable", "playground")
    assert sum(v is not None for v, _ in marked.values()) == len(claims) - 2
    for finding in PAPER3_FINDINGS:
        primary = [id for id, (f, r) in marked.items() if f == finding.id and r is None]
        assert len(primary) == 1, (finding.id, primary)


# ---- the null model: every claim on the untrained weights -------------------------------------
SEEDS = (0, 1)
UPDATES = list(range(1, 61))


def run_record(trained: tuple[float, float], untrained: float, toy: tuple | None = None) -> dict:
    """A run's measurements: accuracy (training, test) `trained` on the samples at every update
    and after the last step on all data; its untrained weights `untrained` on every split (no
    gap), the first training batch (update 0) too. `toy`: (X2 dependence trained, untrained);
    the upper-right quadrant's share predicted Y1 = 1 is 0.5 at every step (step 0 too)."""
    train, test = trained
    record = {
        "curves": {"updates": UPDATES, "train": [train] * 60, "test": [test] * 60},
        "final": {"train": train, "test": test, "gap": train - test},
        "batch_accuracy": {"updates": [0, *UPDATES], "seq_acc": [untrained] + [train] * 60},
        "boundaries": None,
        "untrained": {"samples": {"train": untrained, "test": untrained},
                      "final": {"train": untrained, "test": untrained, "gap": 0.0}},
        "data_sizes": {"train": 14670, "test": 7706},
    }  # fmt: skip
    if toy is not None:
        record["boundaries"] = {"x2_dependence": toy[0], "changed_after_step1": 0.0,
                                "quadrant_y1_share": {"0": 0.5, "1": 0.5, "2": 0.5}}  # fmt: skip
        record["untrained"]["x2_dependence"] = toy[1]
    return record


def known_records() -> dict:
    """Every run of both settings and `SEEDS`: trained, A learns faster and generalises worse
    than B everywhere; untrained, the images' A weights already score 0.6 on A's training sample
    (B's 0.1), every other statistic ties, and the toy's boundary at step 0 already crosses the
    middle of the upper-right quadrant."""
    runs = {
        "two_digit_images": ({"A": (0.9, 0.5), "B": (0.5, 0.5)}, {"A": 0.6, "B": 0.1}),
        "scan": ({"A": (0.9, 0.0), "B": (0.5, 0.5)}, {"A": 0.0, "B": 0.0}),
        "toy_2d": ({"A": (1.0, 0.6), "B": (1.0, 1.0)}, {"A": 0.5, "B": 0.5}),
    }
    runs |= {"two_digit_images_authors": runs["two_digit_images"],
             "scan_authors": runs["scan"], "toy_2d_playground": runs["toy_2d"]}  # fmt: skip
    dependence = {"A": (0.3, 0.2), "B": (0.0, 0.2)}  # untrained: the same weights in A and B
    return {(experiment, s, seed): run_record(trained[s], untrained[s],
                                              dependence[s] if "toy" in experiment else None)
            for experiment, (trained, untrained) in runs.items()
            for s in SETTINGS for seed in SEEDS}  # fmt: skip


def test_untrained_record_is_the_run_at_step_0():
    record = known_records()[("toy_2d", "A", 0)]
    viewed = untrained_record(record)
    assert viewed["curves"]["train"] == [0.5] * 60 and viewed["curves"]["updates"] == UPDATES
    assert viewed["final"] == {"train": 0.5, "test": 0.5, "gap": 0.0}
    assert viewed["batch_accuracy"]["seq_acc"] == [0.5] * 61  # the first batch's, update 0
    assert viewed["boundaries"]["x2_dependence"] == 0.2
    assert viewed["boundaries"]["changed_after_step1"] == 0.0
    assert record["final"]["test"] == 0.6  # the record itself is unchanged


def test_a_claim_the_untrained_weights_pass_is_uninformative():
    """Every claim of a model judged on the untrained view too (`null`): the images' early
    training, which the untrained A weights already win, and the step-1 boundary, which the
    untrained boundary already meets, are uninformative (the rule's own verdict kept); the rest
    stay reproduced, their null not reproduced (ties: no difference); the split sizes have
    none (facts about the data: uninformative, their rule's verdict kept)."""
    claims = {claim.id: claim for claim in judged_claims(known_records(), SEEDS)}
    assert list(claims)[-2:] == ["scan.train_size", "scan.test_size"]
    uninformative = {"images.faster_early", "authors.images.faster_early",
                     "toy.step1_boundary_stable",
                     "playground.toy.step1_boundary_stable"}  # fmt: skip
    for id, claim in claims.items():
        if id.endswith("_size"):
            assert claim.null is None and claim.verdict == "uninformative"
            assert claim.rule_verdict == "reproduced"
        elif id in uninformative:
            assert (claim.verdict, claim.rule_verdict, claim.null) == (
                "uninformative", "reproduced", "reproduced"), id  # fmt: skip
            assert "the untrained models pass the same rule" in claim.uninformative_because
        else:
            assert (claim.verdict, claim.null) == ("reproduced", "not reproduced"), id
    assert len(claims) == 16 and all(c.null in (*RULE_VERDICTS, None) for c in claims.values())


def test_untrained_weights_are_evaluated_by_one_thread_at_a_time(monkeypatch):
    """Two runs are measured at once, in threads, and Lightning's evaluation loops patch
    DataLoader's class attributes while they set up: each in-process evaluation holds the lock."""
    import pytorch_lightning as pl

    from experiments.engine.pool import IN_PROCESS_TRAINER
    from experiments.paper3 import runs

    metric = runs.ACCURACY["scan"]
    held = []

    def validate(self, model, datamodule, verbose):
        held.append(IN_PROCESS_TRAINER.locked())
        return [{f"val/train_sample/{metric}": 0.1, f"val/test_sample/{metric}": 0.2}]

    def test(self, model, datamodule, verbose):
        held.append(IN_PROCESS_TRAINER.locked())
        return [{f"test/train/{metric}": 0.5, f"test/test/{metric}": 0.25}]

    class Run:
        def model(self, tag):
            return torch.nn.Linear(1, 1)

    monkeypatch.setattr(pl.Trainer, "validate", validate)
    monkeypatch.setattr(pl.Trainer, "test", test)
    monkeypatch.setattr(runs, "evaluation_limits", lambda run: {})
    result = runs.untrained_accuracies(Run(), None, "scan")
    assert held == [True, True] and not IN_PROCESS_TRAINER.locked()
    assert result == {"samples": {"train": 0.1, "test": 0.2},
                      "final": {"train": 0.5, "test": 0.25, "gap": 0.25}}  # fmt: skip
