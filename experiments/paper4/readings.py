"""The values paper 4's pre-registered other readings read from one model's analysis
(`reports/paper4/preregistration.md`, items 7-10; `analysis.analyse`): per claim id, the number
its primary claim's rule is applied to for that model (an accuracy, a gap over the random-unit
control, or a ratio), so that a claim takes the mean over models as its primary does. The
untrained weights' analysis gives the null's values the same way."""

from __future__ import annotations

import math

T6 = 6
"""Finding 3's Table 1 rows: "the values of triggering neurons at t = 5 ... when T = 6"."""
WORDS_ONLY = "random_word_inputs_accuracy"
"""The analysis's accuracy with `<sos>` first and every later decoder input a random word."""
READING_IDS = (
    *(f"t6.table1.triggering_k{k}" for k in (1, 2, 3, 4)),
    *(f"t6.control.triggering_k{k}" for k in (1, 2, 3, 4)),
    *(f"{reading}.{kind}.counting_k{k}" for reading in ("each_step", "lag_held")
      for kind in ("table1", "control") for k in (1, 2, 3)),
    "single_step.table1.storing_previous",
    "single_step.direction.storing_previous_remains_high",
    "words_only.accuracy.random_decoder_inputs",
    "words_only.accuracy.random_inputs_barely_matter",
)  # fmt: skip
"""The claim ids of the pre-registered readings, in its order."""


def pooled_accuracy(analysis: dict, name: str) -> float:
    """Hits / rows of the manipulation `name` pooled over the analysed tokens (NaN with none)."""
    hits = sum(t["verification"].get(name, [0, 0])[0] for t in analysis["tokens"].values())
    rows = sum(t["verification"].get(name, [0, 0])[1] for t in analysis["tokens"].values())
    return hits / rows if rows else float("nan")


def measured(analysis: dict) -> bool:
    """Whether the analysis records the pre-registered readings (an analysis taken before them
    does not)."""
    return WORDS_ONLY in analysis and all(
        "single_step.storing_previous" in t["verification"] for t in analysis["tokens"].values()
    )


def _check_measured(analysis: dict) -> None:
    """One clear error where the analysis was taken before these readings were measured."""
    if not measured(analysis):
        raise ValueError(
            "this paper 4 analysis has no pre-registered readings (items 7-10: "
            f"{WORDS_ONLY}, the verification's single_step/each_step/lag_held and .T= counts): "
            "it was measured before them; analyse the run again (experiments.paper4.analysis)"
        )


def reading_values(analysis: dict) -> dict[str, float]:
    """`{claim id: value}` for every id of `READING_IDS`, from one model's analysis:

    - `t6.table1.triggering_k<k>`: the triggering accuracy on the rows with T = 6 only;
      `t6.control.*`: that minus its random-unit control's, on the same rows;
    - `each_step.table1.counting_k<k>`, `lag_held.table1.counting_k<k>`: hits / trials pooled
      over rows, edited steps and tokens; their `.control.` ids: that minus the control's;
    - `single_step.table1.storing_previous` and `single_step.direction.
      storing_previous_remains_high`: the single-step replacement's hits / trials;
    - `words_only.accuracy.random_decoder_inputs`: the accuracy with `<sos>` first and random
      words after; `words_only.accuracy.random_inputs_barely_matter`: that over the model's own
      test accuracy (NaN where that is 0).

    A gap is NaN where the analysis has no control (no control draws)."""
    _check_measured(analysis)
    values = {}

    def read(claim: str, name: str) -> None:
        named = pooled_accuracy(analysis, name)
        values[claim.format(kind="table1")] = named
        values[claim.format(kind="control")] = named - pooled_accuracy(analysis, f"control.{name}")

    for k in (1, 2, 3, 4):
        read(f"t6.{{kind}}.triggering_k{k}", f"triggering_k{k}.T={T6}")
    for reading in ("each_step", "lag_held"):
        for k in (1, 2, 3):
            read(f"{reading}.{{kind}}.counting_k{k}", f"{reading}.counting_k{k}")
    single = pooled_accuracy(analysis, "single_step.storing_previous")
    values["single_step.table1.storing_previous"] = single
    values["single_step.direction.storing_previous_remains_high"] = single
    words, own = analysis[WORDS_ONLY], analysis.get("test_position_acc")
    values["words_only.accuracy.random_decoder_inputs"] = words
    values["words_only.accuracy.random_inputs_barely_matter"] = words / own if own else math.nan
    return {claim: values[claim] for claim in READING_IDS}


def shown_beside(analysis: dict) -> dict[str, float]:
    """Item 9's values shown beside its claims, not judged: the single-step replacement's
    accuracy over t <= T - 2 only (the paper's "before t = T - 1") and its random-unit
    control's accuracy."""
    _check_measured(analysis)
    return {
        "single_step.storing_previous_before_last": pooled_accuracy(
            analysis, "single_step.storing_previous_before_last"
        ),
        "control.single_step.storing_previous": pooled_accuracy(
            analysis, "control.single_step.storing_previous"
        ),
    }
