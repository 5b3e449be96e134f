"""The cross-paper questions judged as a paper's claims, from the runs' measurements alone: each
claim of `questions.QUESTIONS` whose models and methods were measured, by its pre-registered rule
(`questions.RULES`), on the trained models and, as the null, on their untrained weights
(`experiments.report.judged_against_untrained`); the others listed with what they still need."""

from __future__ import annotations

from collections.abc import Callable

import torch

from experiments.atlas.questions import MODELS, Q3_MODELS, QUESTIONS, RULES, SEQ2SEQ
from experiments.report import Claim, direction_claim, judged_against_untrained, threshold_claim

Records = dict[tuple[str, int], dict]
UNTRAINED = "untrained"
EXPECTED = {
    "q1": "paper 4: storing and counting units in its GRU",
    "q2": "paper 2: the determining phrase carries the prediction",
    "q3": "paper 1: guided encoder update gates mostly left-saturated",
    "q4": "papers 1 and 4: one set of counting units",
}
"""What each question extends (the claims table's "paper" column)."""


def side(record: dict, trained: bool) -> dict:
    """A run's measurements of its trained model, or of its untrained weights."""
    return record if trained else record[UNTRAINED]


def per_seed(records: Records, model: str, read: Callable[[dict], float | None],
             trained: bool) -> list[float] | None:  # fmt: skip
    """`read` of each seed's measurements of `model` (trained or untrained), in seed order; None
    where the model was not measured or a seed has no value."""
    values = [read(side(r, trained)) for (m, _), r in sorted(records.items()) if m == model]
    return values if values and None not in values else None


def statistic(name: str) -> Callable[[dict], float | None]:
    return lambda measured: measured["statistics"][name]


def left_saturation(measured: dict) -> float:
    return measured["gate_saturation"]["value"]


def pooled_left_median(records: Records, model: str, trained: bool) -> float | None:
    """Paper 1's gate-saturation statistic over every seed of `model`: the median over the pooled
    encoder update-gate units of the fraction left-saturated."""
    units = [x for (m, _), r in sorted(records.items()) if m == model
             for x in side(r, trained)["gate_saturation"]["encoder"]["left"]]  # fmt: skip
    return float(torch.tensor(units).median()) if units else None


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def differences(first: list[float], second: list[float]) -> list[float]:
    """Two models' per-seed values as differences, seed by seed (the scales give both models the
    same seeds), whose mean is the difference of their means: what a difference claim reports as
    measured; that difference alone where their seeds differ in number."""
    if len(first) == len(second):
        return [a - b for a, b in zip(first, second, strict=True)]
    return [mean(first) - mean(second)]


def judged(claim_id: str, values: list[float], value: float, name: str) -> Claim:
    """The claim `claim_id` by its pre-registered rule on `value` (its per-seed `values`)."""
    rule = RULES[claim_id]
    question = next(q for q in QUESTIONS if claim_id in q.claims)
    text, paper = question.claims[claim_id], EXPECTED[question.id]
    if rule.kind == "threshold":
        return threshold_claim(claim_id, text, paper, values, value, name, rule.reproduced_at,
                               rule.partially_at)  # fmt: skip
    return direction_claim(claim_id, text, paper, values, value, name, rule.reproduced_at,
                           rule.partially_at)  # fmt: skip


def question1(records: Records, trained: bool) -> list[Claim]:
    claims = []
    for claim_id, name in (("q1.guided_counting", "counting_excess"),
                           ("q1.guided_storing", "storing_effect")):  # fmt: skip
        values = per_seed(records, "paper1_guided", statistic(name), trained)
        if values is not None:
            claims.append(judged(claim_id, values, mean(values), f"mean over seeds of {name}"))
    guided = per_seed(records, "paper1_guided", statistic("function_share"), trained)
    baseline = per_seed(records, "paper1_baseline", statistic("function_share"), trained)
    if guided is not None and baseline is not None:
        claims.append(
            judged(
                "q1.guided_more",
                differences(guided, baseline),
                mean(guided) - mean(baseline),
                "guided - baseline mean share of counting or storing units",
            )
        )
    return claims


def decomposition(measured: dict) -> float | None:
    return measured["cells"].get("contextual_decomposition")


def question2(records: Records, trained: bool) -> list[Claim]:
    """The determining phrase's share of each seq2seq model's output logit (mean over seeds),
    and the two differences (guided minus baseline, setting B minus A) where both are measured."""
    claims, shares = [], {}
    for model in SEQ2SEQ:
        values = per_seed(records, model, decomposition, trained)
        if values is not None:
            shares[model] = values
            claims.append(judged(f"q2.most.{model}", values, mean(values),
                                 "mean over seeds of beta / (|beta| + |gamma|)"))  # fmt: skip
    for claim_id, first, second in (("q2.guided_over_baseline", "paper1_guided", "paper1_baseline"),
                                    ("q2.b_over_a", "paper3_scan_B", "paper3_scan_A")):  # fmt: skip
        if first in shares and second in shares:
            claims.append(judged(claim_id, differences(shares[first], shares[second]),
                                 mean(shares[first]) - mean(shares[second]),
                                 f"{first} - {second} mean share"))  # fmt: skip
    return claims


def question3(records: Records, trained: bool) -> list[Claim]:
    claims, medians = [], {}
    for model in MODELS:
        claim_id = f"q3.left_saturated.{model}"
        values = per_seed(records, model, left_saturation, trained)
        if claim_id not in RULES or values is None:
            continue
        medians[model] = pooled_left_median(records, model, trained)
        claims.append(judged(claim_id, values, medians[model],
                             "median over the pooled encoder update-gate units of the fraction "
                             "of steps below 0.1"))  # fmt: skip
    others = [m for m in MODELS if f"q3.left_saturated.{m}" in RULES and m != "paper1_guided"]
    if "paper1_guided" in medians and all(m in medians for m in others):
        values = per_seed(records, "paper1_guided", left_saturation, trained)
        change = medians["paper1_guided"] - max(medians[m] for m in others)
        claims.append(judged("q3.guidance_only", values, change,
                             "guided median - the largest other model's median"))  # fmt: skip
    return claims


def question4(records: Records, trained: bool) -> list[Claim]:
    claims = []
    for model in SEQ2SEQ:
        values = per_seed(records, model, statistic("overlap"), trained)
        if values is not None:
            claims.append(judged(f"q4.overlap.{model}", values, mean(values),
                                 "mean over seeds of the overlap beyond chance"))  # fmt: skip
    return claims


def claims_on(records: Records, trained: bool) -> list[Claim]:
    """Every claim the measurements can judge, on the trained models or on their untrained
    weights."""
    return (question1(records, trained) + question2(records, trained)
            + question3(records, trained) + question4(records, trained))  # fmt: skip


def claims_of(records: Records) -> list[Claim]:
    """The judged claims, each beside its verdict on the untrained weights, in the order of
    `questions.RULES`."""
    claims = judged_against_untrained(claims_on(records, True), claims_on(records, False))
    order = list(RULES)
    return sorted(claims, key=lambda claim: order.index(claim.id))


def not_judged(claims: list[Claim]) -> list[str]:
    """The pre-registered claims the measurements cannot judge yet, in their order."""
    judged_ids = {claim.id for claim in claims}
    return [claim_id for claim_id in RULES if claim_id not in judged_ids]


COUNTING, DECOMPOSITION, SATURATION = (
    "neuron_functions",
    "contextual_decomposition",
    "gate_saturation",
)
NEEDS = {
    "q1.guided_counting": (("paper1_guided", COUNTING),),
    "q1.guided_storing": (("paper1_guided", COUNTING),),
    "q1.guided_more": (("paper1_guided", COUNTING), ("paper1_baseline", COUNTING)),
    **{f"q2.most.{m}": ((m, DECOMPOSITION),) for m in SEQ2SEQ},
    "q2.guided_over_baseline": (("paper1_guided", DECOMPOSITION),
                                ("paper1_baseline", DECOMPOSITION)),
    "q2.b_over_a": (("paper3_scan_B", DECOMPOSITION), ("paper3_scan_A", DECOMPOSITION)),
    **{f"q3.left_saturated.{m}": ((m, SATURATION),) for m in Q3_MODELS},
    "q3.guidance_only": tuple((m, SATURATION) for m in Q3_MODELS),
    **{f"q4.overlap.{m}": ((m, COUNTING),) for m in SEQ2SEQ},
}  # fmt: skip
"""The cells (model, method) each claim reads: where one of them does not apply the claim is
never judged on this model set; where one is not measured yet, not yet (question 1's storing
effect and function share, and question 4's overlap, come from paper 4's stages on the model,
which its `neuron_functions` cell reports). The report reads this where a claim cannot be
judged, its cells not measured, so it is written out rather than found by running the claims;
`tests/test_atlas_claims.py` judges every claim from records where only its cells here are
measured and fails where a claim reads any other."""
