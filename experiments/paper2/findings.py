"""Paper 2's findings, in the paper's words (`claims.FINDINGS`, read from `paper_values`),
each naming the claims that test it under the text's reading (primary) and under the others:

- `authors`, `authors_at_close`: the authors' analysis, P read at omega's own step or at the
  text's step (every figure and section 3's statement);
- `authors_domain`: the authors' analysis on their domain test stream (Figure 3 only);
- `authors_generator.text`, `authors_generator.authors`, `authors_generator.authors_domain`:
  Figure 3's corpora written by the authors' generator, read each way;
- `m=100`: Figure 3 with 100 copies of each conduit, the text's second number (with each of the
  readings above as `<reading> m=100`);
- `second values`: section 3's momentum and weight decay at the suite's second values (momentum
  at plain SGD's long-run step, AWD-LSTM's weight decay);
- `before_fix`, `authors_before_fix`: Figures 2 and 3 read by the authors' CD before their fix,
  in float64 (`--before-fix`), and `float64, before the fix` CD's error so.

Claims about the data or the setup name no finding. `STUDY.findings` hands these to the engine,
which marks each claim with the finding it tests and opens the report with their table.
"""

from __future__ import annotations

from experiments.findings import Finding
from experiments.paper2.claims import FINDINGS as WORDS

ANALYSES = ("authors", "authors_at_close")
"""The readings of the authors' analysis that decide every claim of the text's runs."""
BEFORE_FIX = ("before_fix", "authors_before_fix")
"""The text's reading and the authors' analysis by their CD before their fix, in float64
(`--before-fix`): Figures 2 and 3 only."""
FIGURE3_READINGS = (*ANALYSES, "authors_domain", "authors_generator.text",
                    "authors_generator.authors", "authors_generator.authors_domain",
                    *BEFORE_FIX)  # fmt: skip
"""The readings that decide Figure 3's claims."""
SECOND_M = "m=100"
"""Figure 3's claims at the text's second number of copies carry `.m=100` in their ids."""


def readings_of(claims: tuple[str, ...], prefixes: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """Each reading in `prefixes` with the ids of `claims` under it (`<reading>.<claim id>`)."""
    return {prefix: tuple(f"{prefix}.{claim}" for claim in claims) for prefix in prefixes}


def figure3_finding(id: str, key: str, because: str = "") -> Finding:
    """A Figure 3 finding: `fig3.<key>` under the text's reading and m = 1000 copies, the same
    at m = 100 and under every reading of `FIGURE3_READINGS`, each at both numbers of copies."""
    claim = f"fig3.{key}"
    second = f"{claim}.{SECOND_M}"
    readings = {SECOND_M: (second,)}
    for prefix in FIGURE3_READINGS:
        readings[prefix] = (f"{prefix}.{claim}",)
        readings[f"{prefix} {SECOND_M}"] = (f"{prefix}.{second}",)
    return Finding(id, WORDS[key], (claim,), readings, because)


def text_finding(
    id: str, key: str, claims: tuple[str, ...], because: str = "", readings: tuple[str, ...] = ()
) -> Finding:
    """A finding tested by `claims` under the text's reading, both of `ANALYSES` and `readings`."""
    return Finding(id, WORDS[key], claims, readings_of(claims, (*ANALYSES, *readings)), because)


FIRST_VALUES = ("training.momentum_slows_rules", "training.weight_decay_slows_rules")
SECOND_VALUES = ("training.momentum_at_lr_0.1_slows_rules",
                 "training.weight_decay_1.2e-6_slows_rules")  # fmt: skip

FINDINGS: tuple[Finding, ...] = (
    text_finding(
        "fig1.longer_k",
        "longer_k_needs_more_rules",
        ("fig1.longer_k_needs_more_rules", "fig1.open_falls_with_k"),
    ),
    text_finding("fig1.conduit_low", "conduit_very_low", ("fig1.conduit_very_low",)),
    text_finding("fig1.rare_open_steady", "rare_open_steady", ("fig1.rare_open_steady",)),
    text_finding(
        "fig1.rare_conduit_declines",
        "rare_conduit_declines",
        ("fig1.rare_conduit_declines",),
    ),
    text_finding(
        "fig2.conduit_interacts",
        "conduit_interacts",
        ("fig2.conduit_interacts", "fig2.conduit_interacts_over_training"),
        because="with the most frequent rule alpha's P(omega) is already at its ceiling, so the "
        "conduit has no room to raise it, and the whole conduit lowers it slightly instead; "
        "along training it raises it at no epoch where the rule is above chance",
        readings=BEFORE_FIX,
    ),
    figure3_finding("fig3.predictable_early", "predictable_early"),
    figure3_finding(
        "fig3.predictable_late",
        "predictable_late",
        because="late in training the predictable and unpredictable conduits both bring the "
        "shorter rule to the ceiling, so the longer one decides alone, and there the predictable "
        "conduit's deficit is a few hundredths, near the spread of the seeds",
    ),
    Finding(
        "sec3.optimizers_slow",
        WORDS["optimizers_slow"],
        FIRST_VALUES,
        {"second values": SECOND_VALUES}
        | {name: tuple(f"{name}.{c}" for c in FIRST_VALUES) for name in ANALYSES}
        | {
            f"{name} second values": tuple(f"{name}.{c}" for c in SECOND_VALUES)
            for name in ANALYSES
        },
        because="momentum at plain SGD's learning rate takes much larger steps and learns the "
        "rule much sooner than plain SGD; weight decay at the common value keeps the rule at "
        "chance throughout (never learned rather than slowed); at the second values neither "
        "changes when the rule is learned",
    ),  # fmt: skip
    Finding(
        "sec4.cd_error",
        WORDS["cd_error"],
        ("cd.approximation_error",),
        {"float64, before the fix": ("cd.approximation_error.float64",)},
        because="the decomposition runs in the models' single precision, and at a few of the "
        "trained models' snapshots its error passes the paper's bound (the untrained models stay "
        "well under it); read in double precision (the authors' CD before their fix, on the runs "
        "of Figures 2 and 3 trained for that reading) every error is far under the bound, so the "
        "misses are float32 rounding, not the method",
    ),
)
