"""Paper 1's rules registered before their results (`reports/paper1/preregistration.md`, sections
1-4): the seed-split null of the guided-against-baseline comparisons, and the history the changed
rules keep.

A seed's baseline and guided model start from the same weights, so on the untrained models a
comparison of the two sits at its null value by construction (a ratio of 1, a difference of 0)
and can never pass. Such a claim's null is instead what two groups of one variant's seeds show by
their seeds alone (`seed_split_null`): every split of a variant's runs into floor(n/2) and the
rest, the claim's own statistic with one group as guided and the other as baseline, both ways
round, the larger kept; over both variants' splits, the median, judged by the claim's own rule.
The other rules changed there (section 3.2's sign in every run, the one-sided accuracy and share)
are in `experiments.paper1.claims`; `registered_history` keeps each changed claim's verdict of
the committed report before them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from fnmatch import fnmatchcase
from itertools import combinations

import numpy as np

from experiments.report import (
    Claim,
    Earlier,
    cannot_fail,
    earlier_file,
    judged_against_untrained,
)

REGISTRATION = "2026-11-28"
"""The day `reports/paper1/preregistration.md` was written, before the results it judges."""

SEED_SPLIT = "seed split"
"""The null model of the comparisons, as the claims table's untrained column names it."""
COMPARISONS = (
    "fig1.guided_embedding_stronger",
    *(f"fig2.{kind}.{matrix}" for kind in ("fewer_connected_neurons", "hub_neurons")
      for matrix in ("encoder_W_hz", "encoder_W_hr", "decoder_W_iz", "decoder_W_ir")),
    "fig2.polar_neurons.encoder_W_hz",
    "fig2.polar_neurons.decoder_W_iz",
    "fig3.guided_encoder_units_specific_ranges",
    "fig4.guided_encoder_update_outliers",
    "fig4.guided_decoder_update_right_saturated",
    "fig4.baseline_gates_between_axes",
    *(f"{site}.guided_group_smaller" for site in ("table2.encoder.hidden",
      "table2.decoder.update_gate", "table2.decoder.reset_gate", "table3.encoder.hidden")),
)  # fmt: skip
"""The 19 guided-against-baseline comparisons whose null is the seed split (section 1)."""

Build = Callable[[dict[str, list[dict]]], list[Claim]]
"""A claims builder: claims from analyses by variant (`baseline`, `guided`)."""


def seed_splits(runs: int) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Every split of `runs` runs' indices into a group of floor(runs/2) and the rest (5: the
    10 splits 2 + 3)."""
    if runs < 2:
        raise ValueError(f"a seed split needs at least 2 runs of a variant, got {runs}")
    every = range(runs)
    return [(a, tuple(i for i in every if i not in a)) for a in combinations(every, runs // 2)]


def split_statistics(build: Build, results: dict[str, list[dict]],
                     ids: Sequence[str]) -> dict[str, list[float]]:  # fmt: skip
    """Each of `ids`' statistic between two groups of one variant's runs, for every split of each
    variant (`seed_splits`): the group of floor(n/2) as guided and the rest as baseline, then the
    other way round, the larger of the two kept (for a ratio max(r, 1/r), for a difference |d|)."""
    found: dict[str, list[float]] = {id: [] for id in ids}
    for variant in ("baseline", "guided"):
        runs = results[variant]
        for a, b in seed_splits(len(runs)):
            first, second = [runs[i] for i in a], [runs[i] for i in b]
            one = {c.id: c for c in build({"baseline": second, "guided": first})}
            other = {c.id: c for c in build({"baseline": first, "guided": second})}
            for id in ids:
                found[id].append(max(one[id].threshold.statistic, other[id].threshold.statistic))
    return found


def seed_split_null(claim: Claim, statistics: Sequence[float]) -> Claim:
    """`claim` beside its seed-split null: the claim's own rule on the median of `statistics`
    (`split_statistics`). Where that passes (reproduced) and the trained models reproduce the
    claim at least partly, two groups of one kind of model differ as much by their seeds alone:
    the claim is uninformative."""
    median = float(np.median(statistics))
    null = claim.threshold.verdict(median)
    judged = replace(claim, null=null, null_model=SEED_SPLIT)
    if null != "reproduced" or judged.verdict == "not reproduced":
        return judged
    return cannot_fail(judged, f"two groups of one variant's seeds pass the same rule (the seed "
                               f"split: median statistic over {len(statistics)} splits = "
                               f"{median:.3f})")  # fmt: skip


def judged_against_nulls(claims: Sequence[Claim], untrained: Sequence[Claim],
                         results: dict[str, list[dict]], build: Build,
                         comparisons: Sequence[str] = COMPARISONS) -> list[Claim]:  # fmt: skip
    """`claims` beside their nulls: the `comparisons` beside the seed split of `results` (the
    trained analyses by variant, the claims rebuilt by `build`), every other claim beside the
    same claim on the untrained models (`untrained`: `judged_against_untrained`)."""
    compared = [c.id for c in claims if c.id in comparisons]
    judged = judged_against_untrained(claims, [c for c in untrained if c.id not in compared])
    statistics = split_statistics(build, results, compared)
    return [seed_split_null(c, statistics[c.id]) if c.id in statistics else c for c in judged]


PREREGISTERED = "registered in reports/paper1/preregistration.md before its results"
CHANGES = (
    (COMPARISONS + ("footnote1.analyses_same_verdict", "footnote1.findings_hold_on_lstms"),
     "the null: two groups of one variant's seeds. A seed's baseline and guided model start from "
     "the same weights, so on the untrained models a guided-against-baseline comparison was a "
     "ratio of 1 or a difference of 0 by construction and could never pass; the null is now the "
     "median, over every 2 + 3 split of each variant's seeds (both ways round, the larger kept), "
     "of the claim's own statistic between the two groups, judged by its own rule; footnote 1's "
     "shares of the LSTMs' verdicts are counted again under it and the rules registered beside "
     f"it ({PREREGISTERED})"),
    (("sec3_2.inverse_gate_polarity.*",),
     "the rule: the paper's sign in every run, no invented size. The rule had asked -(mean r) >= "
     "0.3 for reproduced and >= 0.05 for partially, sizes the paper does not state; now r < 0 in "
     "every run is reproduced, a negative mean with r < 0 in at least 3 of 5 runs partially "
     f"({PREREGISTERED})"),
    (("table3.encoder.hidden.*.accuracy_all",),
     "the rule: an accuracy above the paper's is no miss. The rule compared the distance of the "
     "mean from the paper's value both ways, so an accuracy with all units above the paper's "
     "counted against it; now only a shortfall does, by the same margins (2 SE + 0.005, 4 SE + "
     f"0.05) ({PREREGISTERED})"),
    (("sec4_1.group_units_in_top5pct",),
     "the rule: the seeds' spread, not a 0.05 cap. The rule capped the tolerance at 0.05 (0.1 "
     "for partially), a size the paper does not give, on shares that move in steps of a quarter "
     "to a half; now the seeds' spread sets it (2 SE + 0.005, 4 SE + 0.05), one-sided, as a "
     f"larger share only strengthens the paper's conclusion ({PREREGISTERED})"),
)  # fmt: skip
"""Each registered change: the ids it changes (`fnmatch` patterns) and its reason, whose first
sentence is the one the pre-registration gives."""
BEFORE = earlier_file("paper1", "before_registered.json")
"""The claims these changes touch, as the default scale's report of commit c15ec2f gave them."""


def reason_of(id: str) -> str | None:
    """The reason of the registered change that touches claim `id`; None where none does."""
    for patterns, reason in CHANGES:
        if any(fnmatchcase(id, pattern) for pattern in patterns):
            return reason
    return None


def registered_history(claims: Sequence[Claim], before: Sequence[Claim]) -> list[Claim]:
    """`claims` (under the registered rules), each one a change touches given the verdict and rule
    of its claim in `before` (the committed report before the changes) as its newest `Earlier`,
    with that claim's own history after it, where its rule's text or verdict differs; every other
    claim as it is."""
    by_id = {claim.id: claim for claim in before}

    def kept(claim: Claim) -> Claim:
        old, reason = by_id.get(claim.id), reason_of(claim.id)
        if old is None or reason is None or (old.rule, old.verdict) == (claim.rule, claim.verdict):
            return claim
        return replace(claim, earlier=(Earlier(old.verdict, old.rule, reason), *old.earlier))

    return [kept(claim) for claim in claims]
