"""Section 5.2's claims under SCAN's second reading: the runs of `scan_authors`, trained
as the authors' scripts ran them (`experiments/configs/paper3/scan_authors.yaml`), decided by the
same rules as the text's (`experiments.paper3.claims`), ids prefixed `authors.`.

Two statistics follow the authors' figure rather than the text's runs: their Figure 3b draws the
sentence accuracy on a fixed 100-row training sample after every step (BCDLSG efb6c20
`plot_results.py` lines 92, 245-246: the "Train" curves are `sent_acc_val`), so "the training
accuracy increases faster during the early training (steps 10-25)" is read on that curve, over
updates 10-25; the gap is the text's, train - test accuracy after the last step on all data.

The code's setting B trains on the deduplicated union of the training and test rows
(`datamodules.scan.union_of_splits`), so its test rows are trained on: every verdict of this
reading says so beside its rule (`UNION_NOTE`).
"""

from __future__ import annotations

import dataclasses

import pandas as pd

from experiments.paper3.claims import (
    EARLY_SCAN_STEPS,
    MARGIN,
    Records,
    batch_series,
    curve_frame,
    greater_claim,
    summary,
)
from experiments.paper3.scales import SCAN_AUTHORS, SETTINGS
from experiments.report import Claim

PREFIX = "authors."
"""The claim ids of the authors' reading: `authors.scan.*`."""
UNION_NOTE = (
    "NOTE: setting B here trains on the deduplicated union of the training and test rows (the "
    "authors' uniform_scan, BCDLSG efb6c20 data_generator.py lines 174-189): all 7,706 test rows "
    "were in its training data, so its test accuracy is accuracy on trained rows"
)


def early_accuracy(curve: pd.Series, steps: tuple[int, int] = EARLY_SCAN_STEPS) -> float:
    """Mean of an accuracy curve (by updates done) over updates `steps[0]`..`steps[1]`; NaN where
    training stopped before them (the quick scale)."""
    return float(curve.loc[steps[0] : steps[1]].mean())


def authors_measured(records: Records, seeds: tuple[int, ...]) -> dict:
    """Per setting of `scan_authors`, one entry per seed: the training-sample curve's early mean
    (`early`), the training batches' early mean (`early_batches`) and the final accuracies
    (`final`)."""
    runs = {s: [records[(SCAN_AUTHORS, s, seed)] for seed in seeds] for s in SETTINGS}
    return {
        "early": {s: [early_accuracy(curve_frame(r)["train"]) for r in runs[s]] for s in SETTINGS},
        "early_batches": {s: [early_accuracy(batch_series(r)) for r in runs[s]]
                          for s in SETTINGS},
        "final": {s: [r["final"] for r in runs[s]] for s in SETTINGS},
    }  # fmt: skip


def prefixed(claim: Claim, note: str) -> Claim:
    """`claim` (decided by the text's rule under its id) as the authors' reading's: its id
    prefixed, `note` written after its rule."""
    return dataclasses.replace(claim, id=PREFIX + claim.id, rule=f"{claim.rule}. {note}")


def authors_scan_claims(measured: dict) -> list[Claim]:
    """`authors.scan.faster_early` and `authors.scan.gap_larger` (`authors_measured`'s values)."""
    first, last = EARLY_SCAN_STEPS
    early = greater_claim(
        "scan.faster_early", measured["early"]["A"], measured["early"]["B"],
        f"mean sentence accuracy on the training sample (the authors' Figure 3b 'Train' "
        f"curves) after updates {first}-{last}", MARGIN["early"],
    )  # fmt: skip
    gaps = {s: [f["gap"] for f in measured["final"][s]] for s in SETTINGS}
    gap = greater_claim(
        "scan.gap_larger", gaps["A"], gaps["B"],
        "train - test accuracy after the last step (all data; setting B's training data is the "
        "union)", MARGIN["gap"],
    )  # fmt: skip
    return [prefixed(early, UNION_NOTE), prefixed(gap, UNION_NOTE)]


def authors_tables(measured: dict) -> dict[str, pd.DataFrame]:
    """The reading's tables: accuracies after the last step, and early training (training
    sample and training batches), mean and spread over seeds per setting."""
    final = pd.DataFrame([
        {"setting": s, "training data": "union of train and test" if s == "B" else "train"}
        | {f"{k} {stat}": value for k in ("train", "test", "gap")
           for stat, value in summary([f[k] for f in measured["final"][s]]).items()}
        for s in SETTINGS
    ])  # fmt: skip
    first, last = EARLY_SCAN_STEPS
    early = pd.DataFrame([
        {"curve": curve, "setting": s, "updates": f"{first}-{last}"} | summary(values[s])
        for curve, values in (("training sample", measured["early"]),
                              ("training batches", measured["early_batches"]))
        for s in SETTINGS
    ])  # fmt: skip
    return {"scan_authors_final_accuracy": final, "scan_authors_early_training": early}
