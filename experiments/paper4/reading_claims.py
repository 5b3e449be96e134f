"""Paper 4's pre-registered other readings as claims (`reports/paper4/preregistration.md`, items
7-10): Table 1's triggering rows at T = 6, counting edited at every step before the output and
with the lag held, "storing previous" as one step, and random decoder inputs drawn from words.
Each is judged by its primary claim's rule (`experiments.paper4.claims`): items 5-6's one-sided
rule for `*.table1.*` and `*.accuracy.random_decoder_inputs`, the controls' rule for
`*.control.*`, the directional words' and the accuracy ratio's thresholds; the untrained weights'
analyses are their null as for the primary claims (`experiments.paper4.untrained`). They exist
only where every analysis records the readings (`readings_measured`); the runs analysed before
them have none."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from experiments.paper4.claims import (
    HIGHER,
    PAPER,
    PRINTED,
    claims_of,
    control_claim,
    exact,
    one_sided,
    seeds_spread,
)
from experiments.paper4.readings import T6, measured, reading_values
from experiments.report import Claim, Measured, compare_summaries, threshold_claim


def readings_measured(analyses: Sequence[dict]) -> bool:
    """Whether there are analyses and every one records the pre-registered readings."""
    return bool(analyses) and all(map(measured, analyses))


def every_claim(analyses: list[dict], accuracies: dict[str, list[float]],
                other_analyses: Sequence[dict] = ()) -> list[Claim]:  # fmt: skip
    """`claims_of`, then the readings' claims (`reading_claims`) where `analyses` and
    `other_analyses` (the other side of the null) all record them, so that a claim and its null
    are read alike."""
    claims = claims_of(analyses, accuracies, other_analyses)
    if not readings_measured([*analyses, *other_analyses]):
        return claims
    return claims + reading_claims(analyses, accuracies)


def table1_reading(id: str, text: str, paper: float, values: list[float]) -> Claim:
    """Item 6's rule: one-sided on the paper's higher side, SE over the seeds. A reading has no
    rule before this one, so none is kept."""
    claim = compare_summaries(id, text, exact(paper), Measured.of(values), **PRINTED)
    return replace(one_sided(claim, HIGHER, claim.measured.std), earlier=())


def edited_readings(read) -> list[Claim]:
    """Items 7-8: the triggering edit on the rows with T = 6, and counting edited at every step
    and with the lag held, each as Table 1's accuracy and against its control."""
    table1 = PAPER["table1_gutenberg"]
    texts = {
        **{f"t6.{{kind}}.triggering_k{k}": (
            f"Triggering neurons' T - 1 values written at T - 1 - {k}, rows with T = {T6} only "
            f"(t = {T6 - 1 - k}): token {k} step(s) earlier (finding 3, Table 1 at T = {T6})",
            table1[f"triggering_k{k}"]) for k in (1, 2, 3, 4)},
        **{f"each_step.{{kind}}.counting_k{k}": (
            f"Counting neurons at each step t (1 <= t <= T - 1, one trial per step) set to their "
            f"values at t - {k}: token {k} step(s) later (finding 2, Table 1; edited at every "
            "step before the output)", table1[f"counting_k{k}"]) for k in (1, 2, 3)},
        **{f"lag_held.{{kind}}.counting_k{k}": (
            f"Counting neurons held {k} step(s) behind from a start t to the output (each t' = "
            f"t..T + {k} - 1 given its value at t' - {k}): token {k} step(s) later (finding 2, "
            "Table 1; the lag held)", table1[f"counting_k{k}"]) for k in (1, 2, 3)},
    }  # fmt: skip
    claims = []
    for pattern, (text, paper) in texts.items():
        named, gaps = read(pattern.format(kind="table1")), read(pattern.format(kind="control"))
        claims.append(table1_reading(pattern.format(kind="table1"), text, paper, named))
        control = float(np.mean([n - g for n, g in zip(named, gaps, strict=True)]))
        claims.append(control_claim(pattern.format(kind="control"), text, "have the effect",
                                    gaps, control))  # fmt: skip
    return claims


def reading_claims(analyses: list[dict], accuracies: dict[str, list[float]]) -> list[Claim]:
    """The 28 claims of items 7-10 (`readings.READING_IDS`, in the preregistration's order),
    each value per model from `reading_values`; `accuracies["gru"]`, the GRU seeds' test
    accuracies, give a single seed's spread (item 5)."""
    values = [reading_values(analysis) for analysis in analyses]

    def read(id: str) -> list[float]:
        return [float(v[id]) for v in values]

    edited = {c.id: c for c in edited_readings(read)}
    single = read("single_step.table1.storing_previous")
    storing = table1_reading(
        "single_step.table1.storing_previous", "Storing neurons at one step t (1..T - 1) "
        "replaced by their values at t - 1, one trial per step: accuracy (Table 1; a single-step "
        "replacement)", PAPER["table1_gutenberg"]["storing_previous"], single,
    )  # fmt: skip
    remains = threshold_claim(
        "single_step.direction.storing_previous_remains_high", "Replacing the storing neurons "
        "by their previous values at one step, the accuracy remains high (section 4.1; a "
        "single-step replacement)", "remains high (83.3 / 87.9%)", single,
        float(np.mean(single)), "mean accuracy over models", 0.8, 0.5,
    )  # fmt: skip
    words = compare_summaries(
        "words_only.accuracy.random_decoder_inputs", "GRU accuracy with <sos> first and every "
        "later decoder input a random word (section 5; drawn from the words only)",
        exact(PAPER["accuracy"]["random_decoder_inputs"]),
        Measured.of(read("words_only.accuracy.random_decoder_inputs")), **PRINTED,
    )  # fmt: skip
    spread = seeds_spread(words.measured, Measured.of(accuracies["gru"]))
    words = replace(one_sided(words, HIGHER, *spread), earlier=())
    kept = read("words_only.accuracy.random_inputs_barely_matter")
    ratio = threshold_claim(
        "words_only.accuracy.random_inputs_barely_matter", "Decoder inputs barely matter: "
        "random-word-input accuracy / normal accuracy (section 5; paper 98.0 / 98.5; <sos> "
        "first, then random words)", round(PAPER["accuracy"]["random_decoder_inputs"]
                                           / PAPER["accuracy"]["gru_gutenberg"], 3),
        kept, float(np.mean(kept)), "mean ratio of random-word-input to normal accuracy",
        0.98, 0.9,
    )  # fmt: skip
    by_id = {**edited, storing.id: storing, remains.id: remains, words.id: words,
             ratio.id: ratio}  # fmt: skip
    return [by_id[id] for id in values[0]]
