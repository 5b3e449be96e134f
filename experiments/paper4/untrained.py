"""Paper 4's claims on the same runs untrained (the null model).

Every claim of a model is decided a second time, by the same rule, on the runs' untrained weights
(`epoch=init`, saved before the first update; `runs.untrained_fields`). The accuracies (section
2, section 5's random decoder inputs) are theirs as measured, on the same test split. The
analysis (sections 3-5) is the same three-stage identification on the same requested rows of
the same data, all of them: the trained analysis keeps the rows its GRU answers correctly, and
an untrained GRU answers none (or a handful by chance), so the same analysis runs on every
requested row, and says so (`correct_only: false`). Table 1's manipulations and their controls
are then accuracies on those rows. A claim the untrained weights pass (reproduced) is
uninformative: its rule cannot tell training from none (`experiments.report.
judged_against_untrained`); the untrained verdict is the claim's `null`, the report's
`untrained` column. The claims of `NO_NULL` have none, each for its reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from experiments.paper4.reading_claims import every_claim
from experiments.paper4.scales import VARIANTS, Scale
from experiments.report import Claim, judged_against_untrained

DATA_ONLY = (
    "data, not model: the share of the data's (token, position) signals on the analysed tokens "
    "and positions is the corpus's, the same for any weights"
)
NOTHING_TO_LOSE = (
    "a loss of the token from rows the GRU answers correctly: the untrained GRUs answer none, so "
    "there is nothing to lose, and on all their rows the rule's statistic would pass with no drop "
    "(zeroing leaves an accuracy of about 0 where it already was); the same edit against as many "
    "random units (control.storing_zero) is the comparison that can fail untrained"
)
NO_NULL = {
    "data.coverage_tokens": DATA_ONLY,
    "data.coverage_positions": DATA_ONLY,
    "direction.storing_zero_drops": NOTHING_TO_LOSE,
    "finding1.one_group_for_every_position": NOTHING_TO_LOSE,
}
"""Claims without an untrained verdict, and why."""
ACCURACIES = "accuracy."
"""The claims on test accuracies (section 2, section 5's random decoder inputs): the untrained
weights' own, as measured; every other claim reads the analysis."""
NULL_MODEL = (
    "the rule: the untrained models pass it too. The null model, measured after these results "
    "existed: the same rule on the same runs' untrained weights (their epoch=init snapshot, or "
    "the same weights rebuilt from the seed) passes, so the claim is uninformative"
)
"""The reason recorded beside a verdict the null model changed (the report's history)."""


def untrained_inputs(records: dict[tuple, dict],
                     scale: Scale) -> tuple[list[dict], dict[str, list[float]]] | None:  # fmt: skip
    """The GRU seeds' untrained analyses and every variant's untrained test accuracies, as
    `claims_of` reads the trained ones; None where a run's measurements have none (taken before
    the null model: `missing_untrained`)."""
    if missing_untrained(records):
        return None
    analyses = [records[("gru", seed)]["untrained"]["analysis"] for seed in scale.seeds["gru"]]
    accuracies = {name: [records[(name, s)]["untrained"]["test_position_acc"]
                         for s in scale.seeds[name]] for name in VARIANTS}  # fmt: skip
    return analyses, accuracies


def missing_untrained(records: dict[tuple, dict]) -> list[str]:
    """The runs whose measurements hold no untrained weights' (`variant seed=s`)."""
    return [f"{name} seed={seed}" for (name, seed), r in records.items() if "untrained" not in r]


def untrained_claims(analyses: list[dict], accuracies: dict[str, list[float]],
                     trained: Sequence[dict] = ()) -> list[Claim]:  # fmt: skip
    """`every_claim` decided on the untrained weights, but for `NO_NULL`, by the rules the
    `trained` analyses are judged by too; each rule read on the analysis says on which rows it
    ran (a test accuracy's, `accuracy.*` and `words_only.accuracy.*`, on the test split)."""
    rows = ", ".join(f"{a['correct']:,} of {a['rows']:,}" for a in analyses)
    where = (f"; untrained: the analysis on every requested row, since the untrained GRUs "
             f"answer almost none correctly ({rows} per seed)")  # fmt: skip
    return [
        c
        if c.id.removeprefix("words_only.").startswith(ACCURACIES)
        else replace(c, rule=c.rule + where)
        for c in every_claim(analyses, accuracies, trained)
        if c.id not in NO_NULL
    ]


def judged_claims(claims: Sequence[Claim], records: dict[tuple, dict], scale: Scale) -> list[Claim]:
    """`claims` beside their verdicts on the untrained weights (`untrained_claims`) where every
    run's measurements hold them; a verdict this changes keeps the one before (`NULL_MODEL`)."""
    null = untrained_inputs(records, scale)
    if null is None:
        return list(claims)
    trained = [records[("gru", seed)].get("analysis") for seed in scale.seeds["gru"]]
    trained = [analysis for analysis in trained if analysis is not None]
    return judged_against_untrained(claims, untrained_claims(*null, trained), NULL_MODEL)


def null_text(records: dict[tuple, dict], scale_name: str, scale: Scale) -> str:
    """The report's section on the null model: what it is, how each claim is decided on it,
    which claims have none and why, and whether these runs' measurements hold it."""
    missing = missing_untrained(records)
    no_null = "\n".join(f"- `{name}`: {why}." for name, why in NO_NULL.items())
    if missing:
        status = (
            f"**Not measured for these runs:** the measurements of {', '.join(missing)} predate "
            "it, so the claims below have no `untrained` verdict. `python -m experiments.paper4 "
            f"--scale {scale_name} --runs <run root> --reuse-runs --measure-untrained` "
            "measures it (from each run's folder, or from its seed where the folder is gone; "
            "nothing is trained again)."
        )
    else:
        untrained = [records[("gru", s)]["untrained"] for s in scale.seeds["gru"]]
        accuracy = ", ".join(f"{u['test_position_acc']:.4f}" for u in untrained)
        answered = ", ".join(f"{u['analysis']['correct']:,} of {u['analysis']['rows']:,}"
                             for u in untrained)  # fmt: skip
        status = (
            f"Measured for every run. The untrained GRUs position {accuracy} of the test tokens "
            f"(seeds {', '.join(map(str, scale.seeds['gru']))}) and answer {answered} of their "
            "requested rows correctly."
        )
    return f"""
## The null model: the untrained weights

Every claim of a model is decided a second time by the same rule on the same runs' untrained
weights: their `epoch=init` snapshot, saved before the first update (for runs trained before the
config saved it, the same weights rebuilt from the run's seed), with the same data and analysis.
That verdict is the claims table's `untrained` column; a claim the untrained weights reproduce
says nothing about training and is **uninformative**, its rule's own verdict beside it.

{status}

- Section 2's accuracies and section 5's random decoder inputs (`accuracy.*`): the untrained
  weights' test accuracies, measured as the trained ones are (greedy decoding, the test split).
- Everything read on the analysis (Table 1 and finding 4's manipulations and their controls, the
  stage-1 accuracies, shares, storing steadiness, counting, outputting values, section 5's gates,
  units with several functions): the same three-stage identification of the same 50 tokens' units
  on the same requested rows. The trained analysis keeps only the rows its GRU answers correctly;
  an untrained GRU answers almost none, so its analysis runs on every requested row (its rule says
  so, under the uninformative verdict it causes). The manipulations are then accuracies on rows
  it never answered, near 0.

Claims without an untrained verdict ("-"):

{no_null}
"""
