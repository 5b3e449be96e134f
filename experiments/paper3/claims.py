"""Paper 3's claims (Gradient Descent Resists Compositionality, sections 5.1, 5.2 and 6) with the
rules that decide them, computed from the runs' measurements (`experiments.paper3.runs`: one
record per run), each rule dated in `reports/paper3/rules.json` (`history.md` lists those
written after results existed).

The toy's claims are decided under both of its readings (`experiments.paper3.toy`): the text's
(ids `toy.*`, the primary verdicts) and the authors' playground (`playground.toy.*`), by the same
rules on each reading's grid. The two-digit images' claims are decided again, by the same rules,
on the runs of the authors' TensorFlow program (`IMAGES_AUTHORS`, ids `authors.images.*`).

The toy's two claims compare setting A with its control, setting B, seed by seed, the
direction first (`control_claim`; the rule they replaced stays beside each verdict, `Earlier`),
and SCAN's split sizes are claims, checks of the data judged uninformative (`split_size_claims`).
Every claim of a model is also judged on the runs' untrained weights
(`experiments.paper3.untrained`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from experiments.paper3.scales import EXPERIMENTS, IMAGES_AUTHORS, PAPER, SETTINGS
from experiments.paper3.toy import (
    PLAYGROUND,
    READINGS,
    STEP1_MIDDLE,
    STEP1_STABLE,
    TEXT,
    ToyReading,
    step1_holds,
)
from experiments.report import (
    FLOAT_NOISE,
    Claim,
    Measured,
    after_rule_change,
    cannot_fail,
    direction_first,
    graded,
    threshold_claim,
)

Records = dict[tuple[str, str, int], dict]
"""Every run's measurements (`experiments.paper3.runs.measure`), by (experiment, setting, seed)."""
FINDINGS: dict[str, str] = PAPER["findings"]
EARLY_IMAGE_STEPS = (1, 50)
"""Section 5.1 names no steps: the first quarter of the 200 steps is compared."""
EARLY_SCAN_STEPS = (10, 25)
"""Section 5.2: "during the early training (steps 10-25)"."""
MARGIN = {"early": 0.02, "gap": 0.05}
"""Smallest difference of accuracies called "faster" (2 points) or a "larger gap" (5 points)."""
TOY_FAIL = 0.1
"""The toy model fails on (1, 1) when its test accuracy falls over 10 points further below its
training accuracy than its control's (setting B's run of the same seed) does."""
TOY_DEPENDENT = 0.05
"""The toy model's Y1 depends on X2 when over 5% more of the X1 columns in (0, 1] change with X2
than in its control's (setting B's run of the same seed)."""
SCAN_SIZES: dict[str, int] = PAPER["scan_split_sizes"]
"""Appendix B: "The task contains 14,670 training and 7,706 test samples"."""
AUTHORS_PREFIX = "authors."
"""The prefix of a claim's id decided on the runs of the authors' program (`IMAGES_AUTHORS`)."""


# ---- the records as curves and tables --------------------------------------------------------
def curve_frame(record: dict) -> pd.DataFrame:
    """A run's accuracy on the training and test samples (columns `train`, `test`) by updates
    done (`experiments.paper3.runs.accuracy_curves`, as measured)."""
    curves = record["curves"]
    return pd.DataFrame({"train": curves["train"], "test": curves["test"]},
                        index=pd.Index(curves["updates"], name="updates"))  # fmt: skip


def batch_series(record: dict) -> pd.Series:
    """A SCAN run's training batches' sentence accuracy before their update, by updates done
    (`experiments.paper3.runs.batch_accuracy`, as measured)."""
    batches = record["batch_accuracy"]
    return pd.Series(batches["seq_acc"], index=pd.Index(batches["updates"], name="updates"))


def by_setting(records: Records, seeds: tuple[int, ...],
               experiments: tuple[str, ...] = EXPERIMENTS) -> dict:  # fmt: skip
    """Per (experiment, setting) of `experiments`, one entry per seed in `seeds`' order: final
    accuracies (`final`), accuracy curves (`curves`) and, for SCAN, training-batch accuracies
    (`scan_batches`, per setting)."""

    def per_seed(experiment, setting, read):
        return [read(records[(experiment, setting, seed)]) for seed in seeds]

    return {
        "final": {(e, s): per_seed(e, s, lambda r: r["final"])
                  for e in experiments for s in SETTINGS},
        "curves": {(e, s): per_seed(e, s, curve_frame) for e in experiments for s in SETTINGS},
        "scan_batches": {s: per_seed("scan", s, batch_series) for s in SETTINGS},
    }  # fmt: skip


def summary(values: list[float]) -> dict[str, float]:
    return {"mean": float(np.mean(values)), "std": float(np.std(values, ddof=1))}


def final_table(measured: dict) -> pd.DataFrame:
    """Mean and spread over seeds of the accuracies after the last step (all data), per
    experiment and setting."""
    return pd.DataFrame([
        {"experiment": e, "setting": s}
        | {f"{k} {stat}": value for k in ("train", "test", "gap")
           for stat, value in summary([f[k] for f in measured["final"][(e, s)]]).items()}
        for e in EXPERIMENTS for s in SETTINGS
    ])  # fmt: skip


def toy_table(records: Records, seeds: tuple[int, ...], reading: ToyReading = TEXT) -> pd.DataFrame:
    """Section 6, per toy run of `reading`: its accuracies and X2 dependence after the last
    step."""
    return pd.DataFrame([
        {"setting": setting, "seed": seed, "train accuracy": record["final"]["train"],
         "test (1,1) accuracy": record["final"]["test"],
         "X2 dependence": record["boundaries"]["x2_dependence"]}
        for setting in SETTINGS for seed in seeds
        for record in [records[(reading.experiment, setting, seed)]]
    ])  # fmt: skip


def boundary_table(records: Records, seeds: tuple[int, ...]) -> pd.DataFrame:
    """Figure 5's process, per toy run of both readings: the share of the upper-right quadrant
    predicted Y1 = 1 before training and after step 1, the largest share whose prediction
    changes after step 1 (over Figure 5's later steps), and whether the step-1 rule holds."""
    rows = []
    for reading in READINGS:
        for setting in SETTINGS:
            for seed in seeds:
                boundary = records[(reading.experiment, setting, seed)]["boundaries"]
                shares = boundary["quadrant_y1_share"]
                rows.append({
                    "reading": reading.name, "setting": setting, "seed": seed,
                    "quadrant Y1=1 share, step 0": shares["0"],
                    "step 1": shares["1"],
                    "largest change after step 1": boundary["changed_after_step1"],
                    "step-1 rule holds": step1_holds(shares, boundary["changed_after_step1"]),
                })  # fmt: skip
    return pd.DataFrame(rows)


# ---- rules -----------------------------------------------------------------------------------
def greater_claim(id: str, a: list[float], b: list[float], statistic: str, margin: float) -> Claim:
    """Setting A's statistic exceeds setting B's. Runs are paired by seed (the same seed gives
    the same data seed in both settings). Rule: with d the per-seed differences A - B,
    reproduced if mean(d) > max(2 SE(d), `margin`), partially if mean(d) > 0, else not."""
    differences = [x - y for x, y in zip(a, b, strict=True)]
    measured = Measured.of(differences)
    standard_error = measured.std / np.sqrt(measured.n)
    threshold = max(2 * standard_error, margin)
    rule = (
        f"{statistic}: A {np.mean(a):.3f} vs B {np.mean(b):.3f}; mean per-seed difference A - B "
        f"= {measured.mean:.3f}; reproduced if > max(2 SE, {margin}) = {threshold:.3f}, "
        "partially if > 0"
    )
    verdict = graded(measured.mean > threshold, measured.mean > 0)
    return Claim(id, finding(id), "A > B (figure)", measured, rule, verdict)


def finding(id: str) -> str:
    """The paper's statement a claim checks, whichever reading's prefix its id carries."""
    return FINDINGS[id.removeprefix(PLAYGROUND.claim_prefix).removeprefix(AUTHORS_PREFIX)]


def every_seed_claim(id: str, holds: list[bool], values: list[float], statistic: str) -> Claim:
    """A finding the paper states for every seed: reproduced if it holds for every seed,
    partially if for at least one, else not."""
    share = sum(holds) / len(holds)
    return threshold_claim(
        id, finding(id), "every seed (figure)", values, share,
        f"share of seeds where {statistic}", reproduced_at=1.0, partially_at=1 / len(holds),
    )  # fmt: skip


# ---- the claims ------------------------------------------------------------------------------
def learning_claims(measured: dict) -> tuple[list[Claim], pd.DataFrame]:
    """Sections 5.1-5.2: setting A learns faster early and generalises worse (images and SCAN);
    with the table of early accuracies."""

    def early(frames, steps):
        return [float(f.loc[steps[0] : steps[1]].mean()) for f in frames]

    claims = []
    image_early = {s: early([c["train"] for c in measured["curves"][("two_digit_images", s)]],
                            EARLY_IMAGE_STEPS) for s in SETTINGS}  # fmt: skip
    scan_early = {s: early(measured["scan_batches"][s], EARLY_SCAN_STEPS) for s in SETTINGS}
    for name, experiment, early_values, steps in (
        ("images", "two_digit_images", image_early, EARLY_IMAGE_STEPS),
        ("scan", "scan", scan_early, EARLY_SCAN_STEPS),
    ):
        where = ("training-sample accuracy" if name == "images"
                 else "training-batch sentence accuracy")  # fmt: skip
        claims.append(greater_claim(
            f"{name}.faster_early", early_values["A"], early_values["B"],
            f"mean {where} over steps {steps[0]}-{steps[1]}", MARGIN["early"],
        ))  # fmt: skip
        gaps = {s: [f["gap"] for f in measured["final"][(experiment, s)]] for s in SETTINGS}
        claims.append(greater_claim(
            f"{name}.gap_larger", gaps["A"], gaps["B"],
            "train - test accuracy after the last step (all data)", MARGIN["gap"],
        ))  # fmt: skip
    early_frame = pd.DataFrame([
        {"experiment": name, "setting": s, "steps": f"{steps[0]}-{steps[1]}"} | summary(values[s])
        for name, values, steps in (
            ("two-digit images (training sample)", image_early, EARLY_IMAGE_STEPS),
            ("SCAN (training batches)", scan_early, EARLY_SCAN_STEPS),
        )
        for s in SETTINGS
    ])  # fmt: skip
    return claims, early_frame


def early_image_accuracy(measured: dict, experiment: str) -> dict[str, list[float]]:
    """Per setting, each seed's mean training-sample accuracy over `EARLY_IMAGE_STEPS`."""
    first, last = EARLY_IMAGE_STEPS
    curves = measured["curves"]
    return {s: [float(c["train"].loc[first:last].mean()) for c in curves[(experiment, s)]]
            for s in SETTINGS}  # fmt: skip


def image_claims(measured: dict, experiment: str = IMAGES_AUTHORS,
                 prefix: str = AUTHORS_PREFIX) -> list[Claim]:  # fmt: skip
    """Section 5.1's two claims decided on `experiment`'s runs (a reading of the images; ids
    prefixed `prefix`) by `learning_claims`' rules."""
    first, last = EARLY_IMAGE_STEPS
    early = early_image_accuracy(measured, experiment)
    gaps = {s: [f["gap"] for f in measured["final"][(experiment, s)]] for s in SETTINGS}
    return [
        greater_claim(f"{prefix}images.faster_early", early["A"], early["B"],
                      f"mean training-sample accuracy over steps {first}-{last}", MARGIN["early"]),
        greater_claim(f"{prefix}images.gap_larger", gaps["A"], gaps["B"],
                      "train - test accuracy after the last step (all data)", MARGIN["gap"]),
    ]  # fmt: skip


TOY_CONTROL = (
    "the rule: setting A compared with its control, setting B, seed by seed. Setting A's runs "
    "were read alone (a seed held where its X2 dependence was over 0.05, or its test accuracy "
    "on (1, 1) over 0.1 below its training accuracy), "
    "thresholds that setting B, the control, can pass too (the default scale's seed 2: X2 "
    "dependence 0.06); now a seed holds where A exceeds B's run of the same seed by more than "
    "the threshold, and first of all the mean difference A - B must be above 0 (a tie with the "
    "control is no difference)"
)


def control_claim(id: str, a: list[float], b: list[float], margin: float, statistic: str,
                  replaced: Claim) -> Claim:  # fmt: skip
    """A finding the paper states for every seed of setting A, checked against the control,
    setting B (X2 carries no information about Y1), run by run: a seed holds where A's
    `statistic` exceeds that of B's run of the same seed by more than `margin` (a difference of
    exactly the margin, or a tie, is none). Direction first (`direction_first`): the mean
    per-seed difference A - B must be above 0; then reproduced if every seed holds, partially if
    one does. `replaced`: the same finding under the rule this one replaced (A alone against the
    margin), kept as the claim's `Earlier` (`TOY_CONTROL`)."""
    differences = [x - y for x, y in zip(a, b, strict=True)]
    holds = [difference > margin + FLOAT_NOISE for difference in differences]
    claim = every_seed_claim(id, holds, differences,
                             f"A's {statistic} - B's (the same seed) > {margin}")  # fmt: skip
    claim = direction_first(claim, float(np.mean(differences)),
                            f"mean per-seed difference A - B of the {statistic}")  # fmt: skip
    return after_rule_change(claim, replaced.verdict, replaced.rule, TOY_CONTROL)


def toy_claims(toy_frame: pd.DataFrame, reading: ToyReading = TEXT) -> list[Claim]:
    """Section 6: in setting A every seed fails on (1, 1) and depends on X2, against the control
    B (`control_claim`; ids prefixed by the reading's `claim_prefix`; the text's X1 columns
    (0, 1] over X2 in [-1, 1], the playground's [0.3, 5.3] over [-5.3, 5.3]). The statistics:
    how far the test accuracy on (1, 1) falls below the training accuracy (the shortfall), and
    the X2 dependence."""
    runs = {s: toy_frame[toy_frame.setting == s].sort_values("seed") for s in SETTINGS}
    if runs["A"]["seed"].tolist() != runs["B"]["seed"].tolist():
        raise ValueError("the toy's settings A and B need runs of the same seeds")
    shortfall = {s: (runs[s]["train accuracy"] - runs[s]["test (1,1) accuracy"]).tolist()
                 for s in SETTINGS}  # fmt: skip
    dependence = {s: runs[s]["X2 dependence"].tolist() for s in SETTINGS}
    columns = "(0, 1]" if reading is TEXT else f"[{reading.positive_from}, {reading.data_edge}]"
    over = "" if reading is TEXT else f" over X2 in [-{reading.data_edge}, {reading.data_edge}]"
    dependence_name = (f"X2 dependence (share of X1 columns in {columns} whose predicted Y1 "
                       f"changes with X2{over})")  # fmt: skip
    fails_id = f"{reading.claim_prefix}toy.fails_on_test"
    depends_id = f"{reading.claim_prefix}toy.depends_on_x2"
    fails_before = every_seed_claim(
        fails_id,
        (runs["A"]["test (1,1) accuracy"] < runs["A"]["train accuracy"] - TOY_FAIL).tolist(),
        runs["A"]["test (1,1) accuracy"].tolist(),
        f"setting A's test accuracy on (1, 1) < its training accuracy - {TOY_FAIL}",
    )  # fmt: skip
    depends_before = every_seed_claim(
        depends_id, [d > TOY_DEPENDENT for d in dependence["A"]], dependence["A"],
        f"setting A's X2 dependence > {TOY_DEPENDENT} (share of X1 columns in {columns} whose "
        f"predicted Y1 changes with X2{over})",
    )  # fmt: skip
    return [
        control_claim(fails_id, shortfall["A"], shortfall["B"], TOY_FAIL,
                      "shortfall of the test accuracy on (1, 1) below the training accuracy",
                      fails_before),
        control_claim(depends_id, dependence["A"], dependence["B"], TOY_DEPENDENT,
                      dependence_name, depends_before),
    ]  # fmt: skip


DATA_FACT = (
    "the split sizes are SCAN's add-jump files, which no model touches: a check of the data the "
    "runs read, not a finding"
)
"""Why SCAN's split sizes are uninformative (a pre-registered rule: `DATA_FACT_CHANGE`)."""
DATA_FACT_CHANGE = (
    "the rule: a fact about the data, not a finding. Registered on 2026-11-28 before its result "
    "(reports/paper3/preregistration.md): the split sizes are counted and tested as before, then "
    "judged uninformative, the rows of SCAN's add-jump files being no model's doing; the rule's "
    "own verdict stays beside it"
)
"""The reason the split sizes' verdict before the pre-registered rule is kept (`Earlier`)."""


def split_size_claims(records: Records, seeds: tuple[int, ...]) -> list[Claim]:
    """Appendix B's SCAN split sizes (`SCAN_SIZES`), counted in every `scan` run's data (both
    settings; setting B redraws the training commands' words, not their number): the rule says
    reproduced if every run has exactly the paper's rows, else not. The counts are the data's,
    which no model touches: a check of the data, uninformative (`DATA_FACT`; the rule's own
    verdict kept beside it, its verdict before as `Earlier`), and no null verdict."""
    claims = []
    for split, paper in SCAN_SIZES.items():
        counts = [records[("scan", s, seed)]["data_sizes"][split]
                  for s in SETTINGS for seed in seeds]  # fmt: skip
        exact = all(count == paper for count in counts)
        rule = (f"rows of all {split} data in each run of scan (settings A and B, "
                f"{len(counts)} runs): {', '.join(f'{c:,}' for c in sorted(set(counts)))}; "
                f"reproduced if every run has exactly {paper:,}, else not reproduced")  # fmt: skip
        checked = Claim(f"scan.{split}_size", finding(f"scan.{split}_size"), f"{paper:,}",
                        Measured.of(counts), rule, graded(exact, False))  # fmt: skip
        fact = cannot_fail(checked, DATA_FACT)
        claims.append(after_rule_change(fact, checked.verdict, checked.rule, DATA_FACT_CHANGE))
    return claims


STEP1_MAJORITY = 0.5
"""Figure 5 shows one run as "an example of process": the step-1 claim is reproduced when its
rule holds for at least half of setting A's seeds."""


def step1_claim(boundaries: pd.DataFrame, reading: ToyReading) -> Claim:
    """Section 6 on Figure 5: step 1's update pushes the boundary to the middle of the
    upper-right area, where it stays. Per setting-A run of `reading` (`boundary_table`'s rows):
    after step 1 the share of the quadrant predicted Y1 = 1 lies in `STEP1_MIDDLE` and no later
    Figure-5 step changes the prediction on more than `STEP1_STABLE` of it. Reproduced when that
    holds for at least `STEP1_MAJORITY` of the seeds, partially for at least one."""
    runs = boundaries[(boundaries.reading == reading.name) & (boundaries.setting == "A")]
    share = float(runs["step-1 rule holds"].mean())
    low, high = STEP1_MIDDLE
    statistic = (
        f"share of setting A's seeds where, after step 1 (one {reading.step_unit}), the "
        f"upper-right quadrant's share predicted Y1 = 1 is in [{low}, {high}] (the boundary "
        f"crosses its middle) and at no later step of Figure 5 does the prediction change on "
        f"more than {STEP1_STABLE} of the quadrant (it stays)"
    )
    return threshold_claim(
        f"{reading.claim_prefix}toy.step1_boundary_stable",
        finding("toy.step1_boundary_stable"), "Figure 5, one run", runs["step 1"].tolist(),
        share, statistic, reproduced_at=STEP1_MAJORITY, partially_at=1 / len(runs),
    )  # fmt: skip
