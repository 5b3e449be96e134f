"""The atlas's scales: which models each scale trains, at which scale of their own paper, and how
much of each is analysed.

Scale (`SCALE` or `--scale`): `default` trains every model of the matrix at its paper's default
scale (`questions.MODELS`); `quick` trains tiny versions of paper 1's baseline and guided GRUs,
paper 2's language model and paper 4's GRU (their papers' quick scales) to check the whole
pipeline in minutes; its verdicts mean nothing. Each model is trained by its paper's own fit
arguments (`runs.arguments_of`).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from experiments.engine.cli import reproduction_parser

WIRED_TASKS = ("lookup tables", "token positioning", "SCAN", "rule corpus")
"""The tasks whose models are trained and measured; a model of another task would be listed as
not yet measured and not trained, for its task's reason (`NOT_WIRED`)."""
NOT_WIRED: dict[str, str] = {}
"""Why each task outside `WIRED_TASKS` is not trained yet."""


@dataclass(frozen=True)
class Scale:
    """How much of the atlas a run of it measures."""

    models: dict[str, tuple[int, ...]]
    """The seeds of each model of `questions.MODELS` that the scale trains."""
    paper_scale: str
    """The scale of each model's own paper that trains it (its arguments and overrides)."""
    tokens: int
    """Analysed tokens per model (paper 4: its most common tokens; lookup tables: the final
    strings, at most this many; the rule corpus: omega alone, whatever this says)."""
    rows_per_token: int
    """Analysed rows per token (paper 4's `analysis_rows`)."""
    control_draws: int
    """Draws of size-matched random units for each manipulation's control (paper 4's)."""
    correct_only: bool
    """Analyse a trained model on the rows it answers correctly at T (paper 4's reading); its
    untrained weights always on every row."""
    left_out: tuple[str, ...] = ()
    """Models of the scale left out of this invocation (`--models` names the others)."""

    @property
    def seeds(self) -> dict[str, tuple[int, ...]]:
        """Every model's seeds (what the report and its W&B run name)."""
        return dict(self.models)


SCALES = {
    # Every model at its paper's default scale; the seeds that the questions compare (paper 1's
    # two variants, paper 4's GRU) three times, the others once: the committed report.
    "default": Scale(
        models={"paper1_baseline": (1, 2, 3), "paper1_guided": (1, 2, 3), "paper2_lm": (0,),
                "paper3_scan_A": (0,), "paper3_scan_B": (0,), "paper4_gru": (0, 1, 2),
                "paper4_lstm": (0,)},
        paper_scale="default",
        tokens=50,
        rows_per_token=200,
        control_draws=3,
        correct_only=True,
    ),
    # The whole pipeline on tiny sizes (used by the tests), not an atlas: its verdicts mean
    # nothing. One seed of each model the questions read first, and of paper 2's language model
    # (its own row: about 6 s), at their papers' quick scales.
    "quick": Scale(
        models={"paper1_baseline": (1,), "paper1_guided": (1,), "paper2_lm": (0,),
                "paper4_gru": (0,)},
        paper_scale="quick",
        tokens=4,
        rows_per_token=12,
        control_draws=1,
        correct_only=False,
    ),
}  # fmt: skip


DESCRIPTION = (
    "The atlas: every paper's method on every paper's models, beside their untrained weights, and "
    "the cross-paper questions of reports/atlas/preregistration.md."
)


def command_line() -> argparse.ArgumentParser:
    """`python -m experiments.atlas`'s options (built without importing the atlas)."""
    parser = reproduction_parser(DESCRIPTION, SCALES, "reports/atlas")
    parser.add_argument(
        "--models", nargs="+", metavar="MODEL",
        help="train and measure only these models of the scale (e.g. paper1_baseline "
        "paper1_guided, the models you have); the report lists the others as left out. It is "
        "not the atlas's report, so it goes under the run root or to --out, never to reports/atlas",
    )  # fmt: skip
    return parser
