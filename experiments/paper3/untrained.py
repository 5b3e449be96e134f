"""Paper 3's claims on the runs and on their untrained weights (the null model).

Every claim of a model is decided twice by the same rule on the same runs' records: as measured,
and as the runs' untrained weights (`epoch=init`, before the first update; the same architecture,
data and analysis) would have given them (`untrained_record`). A claim the untrained weights pass
(reproduced) is uninformative: its rule cannot tell training from none
(`experiments.report.judged_against_untrained`); the untrained verdict is kept as the claim's
`null`. SCAN's split sizes (`claims.split_size_claims`) are the data's, not a model's: they have
no null verdict.
"""

from __future__ import annotations

from experiments.paper3.claims import (
    Records,
    boundary_table,
    by_setting,
    image_claims,
    learning_claims,
    split_size_claims,
    step1_claim,
    toy_claims,
    toy_table,
)
from experiments.paper3.scales import EXPERIMENTS, IMAGES_AUTHORS
from experiments.paper3.scan_authors import authors_measured, authors_scan_claims
from experiments.paper3.toy import READINGS
from experiments.report import Claim, judged_against_untrained


def model_claims(records: Records, seeds: tuple[int, ...]) -> list[Claim]:
    """Every claim of a trained model, decided on `records` (one per run, by (experiment,
    setting, seed)): sections 5.1-5.2 (`images.*`, `scan.*`), the toy under both readings
    (`toy.*`, `playground.toy.*`), the authors' programs (`authors.images.*`,
    `authors.scan.*`)."""
    measured = by_setting(records, seeds, (*EXPERIMENTS, IMAGES_AUTHORS))
    claims, _ = learning_claims(measured)
    boundaries = boundary_table(records, seeds)
    for reading in READINGS:
        claims += toy_claims(toy_table(records, seeds, reading), reading)
        claims.append(step1_claim(boundaries, reading))
    claims += image_claims(measured)
    return claims + authors_scan_claims(authors_measured(records, seeds))


def untrained_record(record: dict) -> dict:
    """`record` (one run's measurements) as its untrained weights give it: every point of its
    accuracy curves at the curve's value before the first update (the untrained weights'
    accuracy on the training and test samples; a SCAN run's training batches at the first
    batch's, measured before its update), its accuracies after the last step those of the
    untrained weights on all training and test data, and, for a toy run, its boundary at every
    step of Figure 5 the boundary at step 0: the X2 dependence of step 0's, the upper-right
    quadrant's share predicted Y1 = 1 at step 0 at every step, and so no change after step 1."""
    untrained = record["untrained"]
    curves = record["curves"]
    flat = {split: [untrained["samples"][split]] * len(curves["updates"])
            for split in ("train", "test")}  # fmt: skip
    viewed = {**record, "curves": {**curves, **flat}, "final": untrained["final"]}
    batches = record["batch_accuracy"]
    if batches is not None:
        first = batches["seq_acc"][batches["updates"].index(0)]
        viewed["batch_accuracy"] = {**batches, "seq_acc": [first] * len(batches["seq_acc"])}
    boundaries = record["boundaries"]
    if boundaries is not None:
        shares = boundaries["quadrant_y1_share"]
        viewed["boundaries"] = {
            "x2_dependence": untrained["x2_dependence"],
            "quadrant_y1_share": {step: shares["0"] for step in shares},
            "changed_after_step1": 0.0,
            "y1_probability": {},
        }
    return viewed


def untrained_claims(records: Records, seeds: tuple[int, ...]) -> list[Claim]:
    """`model_claims` decided on every run's `untrained_record`."""
    return model_claims({key: untrained_record(r) for key, r in records.items()}, seeds)


def judged_claims(records: Records, seeds: tuple[int, ...]) -> list[Claim]:
    """Every claim of the report: each claim of a model beside its verdict on the untrained
    weights (`null`; uninformative where they pass it), then SCAN's split sizes (no null)."""
    claims = judged_against_untrained(model_claims(records, seeds),
                                      untrained_claims(records, seeds))  # fmt: skip
    return claims + split_size_claims(records, seeds)


NULL_SECTION = """
## The null model: the untrained weights

Every claim of a model is decided a second time by the same rule on the same runs as their
untrained weights (`epoch=init`, saved before the first update) give them: the accuracy curves
flat at the untrained weights' accuracy on the training and test samples (SCAN's training
batches at the first batch's, measured before its update), the accuracies after the last step
those of the untrained weights on all training and test data, and the toy's boundary at every
step its boundary at step 0 (so it "stays" after step 1 by construction; the step-1 claim then
asks only whether the untrained boundary already crosses the middle of the upper-right
quadrant). That verdict is the `untrained` column; a claim the untrained weights reproduce is
**uninformative**, its rule's own verdict beside it. SCAN's split sizes are the data's, not a
model's: they have none, and are checks of the data the runs read, not findings (uninformative,
their rule's own verdict beside them; no row of the findings table).
"""
