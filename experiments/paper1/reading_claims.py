"""Paper 1's pre-registered readings as claims (`reports/paper1/preregistration.md`, items 6-7),
each judged by its primary claim's rule (`experiments.paper1.claims`) so that only the reading
differs:

- `authors_gates.fig4.*`: Figure 4's six claims on the authors' gate data and counting;
  `cloud.fig4.*` the three "mostly left-saturated" claims by where the cloud of units lies
  (`cloud_claim`), on today's data (the analyses' test sets); `authors_gates.cloud.fig4.*` both;
- `all_weights.fig2.threshold_is_top1pct.*`: the share of all of a GRU layer's weights that
  Figure 2's thresholds keep; `mean_sign.fig2.polar_neurons.*` and
  `mean_sign.sec3_2.inverse_gate_polarity.*`: polarity as the sign of a neuron's mean weight.

Nulls: the seed split (`registered`) for the guided-against-baseline comparisons, the untrained
weights for the rest. The claims exist only where every model records the readings, trained
and untrained (`reproduce.measured_on_all`), so a report built from runs measured before them
is unchanged; the authors' gate data's only where every model has it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from experiments.paper1.analyses import mean_of
from experiments.paper1.claims import (
    outlier_claims,
    polar_neurons_claim,
    saturation_claims,
    sign_in_every_run,
)
from experiments.paper1.readings import POLAR_MATRICES
from experiments.paper1.registered import COMPARISONS, judged_against_nulls
from experiments.report import Claim, Measured, graded, ratio_claim

FIELDS = ("readings", "untrained_readings")
"""A baseline or guided GRU's measurements of the readings: trained (`ANALYSED`) and untrained."""
AUTHORS = "authors_gates."
CLOUD = "cloud."
PREFIXES = ("all_weights.", "mean_sign.", AUTHORS, CLOUD)
LEFT_SATURATED = {
    "fig4.baseline_update_left_saturated.encoder": ("baseline", "encoder"),
    "fig4.baseline_update_left_saturated.decoder": ("baseline", "decoder"),
    "fig4.guided_encoder_update_left_saturated": ("guided", "encoder"),
}
"""The three "mostly left-saturated" claims the cloud rule reads: variant and module."""
READING_COMPARISONS = (
    *(f"mean_sign.fig2.polar_neurons.{matrix.replace(' ', '_')}" for matrix in POLAR_MATRICES),
    *(AUTHORS + id for id in COMPARISONS if id.startswith("fig4.")),
)
"""The readings' guided-against-baseline comparisons, judged against the seed split."""


def prefixed(prefix: str, claims: Sequence[Claim], how: str) -> list[Claim]:
    """`claims` as a reading's: their ids under `prefix`, `how` added to their text."""
    return [replace(c, id=prefix + c.id, claim=f"{c.claim} ({how})") for c in claims]


def cloud_claim(id: str, claim: str, left: Sequence[list[float]],
                right: Sequence[list[float]]) -> Claim:  # fmt: skip
    """ "Mostly left-saturated" as where the cloud of update-gate units lies, from each run's
    per-unit fractions of steps left- (`left`) and right-saturated (`right`), pooled: reproduced
    when the share of units whose left fraction exceeds their right fraction is above 0.5;
    partially when it is not but the units' mean left fraction exceeds their mean right fraction;
    else not reproduced. A unit never saturated counts as not left-saturated."""
    lefts = [x for run in left for x in run]
    rights = [x for run in right for x in run]
    share = sum(a > b for a, b in zip(lefts, rights, strict=True)) / len(lefts)
    per_run = [sum(a > b for a, b in zip(lf, rt, strict=True)) / len(lf)
               for lf, rt in zip(left, right, strict=True)]  # fmt: skip
    mean_left, mean_right = mean_of(lefts), mean_of(rights)
    verdict = graded(share > 0.5, mean_left > mean_right)
    rule = (
        f"share of units (pooled over runs) with left fraction > right fraction = {share:.3f}; "
        f"mean left {mean_left:.3f}, mean right {mean_right:.3f}; reproduced if the share > 0.5, "
        "partially if not but the mean left fraction > the mean right fraction"
    )
    return Claim(id, claim, "mostly left-saturated", Measured.of(per_run), rule, verdict)


def cloud_claims(results: dict[str, list[dict]], prefix: str) -> list[Claim]:
    """The cloud rule for `LEFT_SATURATED` from runs by variant holding `saturation`."""
    claims = []
    for id, (variant, module) in LEFT_SATURATED.items():
        runs = results[variant]
        sides = [[r["saturation"][f"{module}.update_gate"][s] for r in runs]
                 for s in ("left", "right")]  # fmt: skip
        text = (
            f"{variant.capitalize()} {module} update gates are mostly left-saturated: the cloud "
            "of units lies on the left side (more steps below 0.1 than above 0.9)"
        )
        claims.append(cloud_claim(prefix + id, text, *sides))
    return claims


def weight_reading_claims(readings: dict[str, list[dict]]) -> list[Claim]:
    """Item 7 from the runs' readings by variant."""
    claims = []
    for module in ("encoder", "decoder"):
        shares = [r["all_weights"][module] for v in ("baseline", "guided") for r in readings[v]]
        claims.append(ratio_claim(
            f"all_weights.fig2.threshold_is_top1pct.{module}",
            f"The {module} threshold keeps about the strongest 1% of the weights (share of every "
            f"weight of the {module} GRU layer, W_ih and W_hh of all three gates, both model "
            "types)", 0.01, shares,
        ))  # fmt: skip
    for matrix in POLAR_MATRICES:
        counts = {v: [float(len(r["mean_sign"][matrix]["polar"])) for r in readings[v]]
                  for v in ("baseline", "guided")}  # fmt: skip
        claims.append(polar_neurons_claim(
            f"mean_sign.fig2.polar_neurons.{matrix.replace(' ', '_')}",
            f"{matrix}: guided models show more strongly polar neurons (a neuron's mean weight "
            "an outlier of its matrix: |mean - median| > 3 x 1.4826 x MAD) than the baseline",
            counts,
        ))  # fmt: skip
    for variant in ("baseline", "guided"):
        for module, matrix in zip(("encoder", "decoder"), POLAR_MATRICES, strict=True):
            signs = [inverse_sign(r["mean_sign"][matrix]) for r in readings[variant]]
            claims.append(sign_in_every_run(
                f"mean_sign.sec3_2.inverse_gate_polarity.{variant}.{module}",
                f"{variant} {module}: the strongly polar neurons of {matrix} (by mean weight) "
                "mostly have the opposite sign in the reset gate; per run s = -1 where more than "
                "half of them do, +1 where not (or none is polar)", signs, "s",
            ))  # fmt: skip
    return claims


def inverse_sign(found: dict[str, list[int]]) -> float:
    """-1 for a run whose strongly polar neurons mostly (> 0.5) have the opposite sign in the
    reset gate, +1 for one where not or with none."""
    polar, opposite = found["polar"], found["opposite"]
    return -1.0 if polar and len(opposite) / len(polar) > 0.5 else 1.0


def authors_results(results: dict[str, list[dict]]) -> dict[str, list[dict]] | None:
    """The runs' saturation on the authors' gate data by variant, or None where some run lacks
    it (it did not train on sample1)."""
    gates = {v: [r["readings"]["authors_gates"] for r in runs] for v, runs in results.items()}
    if any("saturation" not in g for runs in gates.values() for g in runs):
        return None
    return {v: [{"saturation": g["saturation"]} for g in runs] for v, runs in gates.items()}


def reading_claims(results: dict[str, list[dict]]) -> list[Claim]:
    """Items 6-7's claims from runs by variant, each `{"saturation": the analysis's, "readings":
    the readings}`."""
    claims = weight_reading_claims(
        {v: [r["readings"] for r in runs] for v, runs in results.items()}
    )
    claims += cloud_claims(results, CLOUD)
    authors = authors_results(results)
    if authors is not None:
        how = "the authors' gate data: their six files, steps pooled"
        claims += prefixed(AUTHORS, saturation_claims(authors) + outlier_claims(authors), how)
        claims += cloud_claims(authors, AUTHORS + CLOUD)
    return claims


def with_readings(analysed: dict[str, list[dict]], readings: dict[str, list[dict]]) -> dict:
    """Runs by variant as `reading_claims` reads them."""
    return {v: [{"saturation": a["saturation"], "readings": r}
                for a, r in zip(analysed[v], readings[v], strict=True)]
            for v in analysed}  # fmt: skip


def judged_readings(analysed: dict, untrained: dict, readings: dict,
                    untrained_readings: dict) -> list[Claim]:  # fmt: skip
    """Items 6-7's claims beside their nulls: the seed split for `READING_COMPARISONS`, the
    untrained weights (their analyses and readings) for the rest."""
    trained = with_readings(analysed, readings)
    null = reading_claims(with_readings(untrained, untrained_readings))
    return judged_against_nulls(reading_claims(trained), null, trained, reading_claims,
                                READING_COMPARISONS)  # fmt: skip


def primary_of(id: str) -> str:
    """The primary claim a reading's `id` reads again (its `PREFIXES` taken off)."""
    stripped = True
    while stripped:
        stripped = False
        for prefix in PREFIXES:
            if id.startswith(prefix):
                id, stripped = id[len(prefix) :], True
    return id


def beside(claims: Sequence[Claim], readings: Sequence[Claim]) -> list[Claim]:
    """`claims` with each of `readings` right after its primary claim (`primary_of`), in the
    readings' order; one whose primary is absent at the end."""
    after: dict[str, list[Claim]] = {}
    for reading in readings:
        after.setdefault(primary_of(reading.id), []).append(reading)
    placed = []
    for claim in claims:
        placed += [claim, *after.pop(claim.id, [])]
    return placed + [c for rest in after.values() for c in rest]


def statistic_of(claim: Claim) -> float:
    """A claim's judged statistic where its rule has one (a threshold), else its values' mean."""
    return claim.threshold.statistic if claim.threshold else claim.measured.mean


def readings_text(analysed: dict, readings: dict | None) -> str:
    """Items 6-7's section: the authors' files read and left out, and each reading's statistic
    over every seed beside seed 1's alone (the authors' analysed model); empty where not
    measured."""
    if readings is None:
        return ""
    gates = readings["guided"][0]["authors_gates"]
    if "saturation" in gates:
        files = ", ".join(f"`{name}` ({rows} rows)" for name, rows in gates["files"].items())
        left = "; ".join(f"`{name}`: {why}" for name, why in gates["left_out"].items())
        data = f"Files read: {files}. Left out: {left or 'none'}."
    else:
        data = f"The authors' gate data was not read: {gates['unavailable']}."
    trained = with_readings(analysed, readings)
    every = reading_claims(trained)
    first = {c.id: c for c in reading_claims({v: runs[:1] for v, runs in trained.items()})}
    rows = [f"| `{c.id}` | {statistic_of(c):.3f} | {statistic_of(first[c.id]):.3f} | "
            f"{first[c.id].verdict} |" for c in every]  # fmt: skip
    return "\n".join([
        "## Other readings of Figures 2 and 4, registered before their results",
        "",
        "Items 6-7 of [preregistration.md](preregistration.md): Figure 4 on the authors' gate "
        "data (sample1's heldout tables, heldout compositions and new compositions and their "
        "length-4 versions, decoded greedily, every step of every file counted), the cloud rule "
        "for 'mostly left-saturated', Figure 2's threshold over all of a GRU layer's weights and "
        "polarity as the sign of a neuron's mean weight. Their claims stand beside their primary "
        f"claims in the claims table. {data}",
        "",
        "| reading | statistic, every seed | seed 1 alone | seed 1's verdict |",
        "|---|---|---|---|",
        *rows,
        "",
        "",
    ])  # fmt: skip
