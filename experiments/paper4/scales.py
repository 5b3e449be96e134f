"""Paper 4's scales and trained variants: what each run of `make reproduce-paper4` trains.

Scale (`SCALE` or `--scale`, see `SCALES`): `paper` is a vocabulary of 20,000, trained until
early stopping; `default` shrinks the vocabulary and the network and caps each run's training
time so that the reproduction finishes on 2 CPU cores; `quick` is the whole pipeline on tiny sizes
in minutes, on six books of the default text, whose verdicts mean nothing.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from experiments.engine.cli import reproduction_parser

CONFIGS = Path(__file__).parents[1] / "configs" / "paper4"
VARIANTS = {
    "gru": (),
    "lstm": ("--model.init_args.cell", "lstm"),
    "two_signals": ("--data.signals", "2"),
    "gru_teacher_forced": (),
}
"""Trained variants and their CLI arguments on top of `gru.yaml` (section 2)."""
VARIANT_CONFIGS = {"gru_teacher_forced": ("teacher_forced.yaml",)}
"""Configs a variant stacks on `gru.yaml` (before the scale's arguments): the GRU trained under
teacher forcing, the second reading of section 2's objective."""


@dataclass(frozen=True)
class Scale:
    """How much of the paper a reproduction runs."""

    seeds: dict[str, tuple[int, ...]]
    """Seeds per variant (a run's seed is both its model's and its data's)."""
    vocab_size: int
    hidden_size: int
    embedding_size: int
    batch_size: int
    learning_rate: float
    max_time: dict[str, str] | None
    """Training-time cap per variant (Lightning's `DD:HH:MM:SS`); None: early stopping only."""
    analysis_rows: int
    """Rows per token for the neuron analysis (the paper's Figure 2 shows 500)."""
    control_draws: int = 3
    """Draws of size-matched random units for the control of each Table 1 manipulation."""
    redraw_signals: bool = False
    """Draw each training pair's signal afresh every epoch (`--data.redraw_signals`), a reading
    of the paper's "randomly select one token"."""
    tokens: int = 50
    """The most common tokens analysed (section 4: 50)."""
    training_batches: int = 40
    """Training batches whose greedy accuracy the report sets beside the test accuracy."""
    test_batches: int | None = None
    """Test batches the measurements decode (the untrained weights' test accuracy and the
    accuracies with random decoder inputs); None: the whole test split, as the fit's test."""
    correct_only: bool = True
    """Analyse only the rows the model answers correctly (False only for the quick scale, whose
    barely trained models answer almost none)."""
    untrained_of_kept_runs: bool = False
    """Measure the untrained weights (the null model) of runs whose kept measurements
    predate them (`--measure-untrained`); runs measured now always are."""
    books: tuple[str, ...] | None = None
    """Only these books of the default text (`--data.books`); None: all of it."""
    overrides: tuple[str, ...] = field(default=())


SCALES = {
    "paper": Scale(
        seeds={
            "gru": (0, 1, 2),
            "lstm": (0, 1, 2),
            "two_signals": (0, 1, 2),
            "gru_teacher_forced": (0,),
        },
        vocab_size=20000,
        hidden_size=256,
        embedding_size=128,
        batch_size=64,
        learning_rate=0.001,
        max_time=None,
        analysis_rows=500,
    ),  # fmt: skip
    "default": Scale(
        seeds={"gru": (0, 1, 2), "lstm": (0,), "two_signals": (0,), "gru_teacher_forced": (0,)},
        vocab_size=2000,
        hidden_size=128,
        embedding_size=64,
        batch_size=128,
        learning_rate=0.002,
        max_time={
            "gru": "00:00:30:00",
            "lstm": "00:00:32:00",
            "two_signals": "00:00:36:00",
            "gru_teacher_forced": "00:00:30:00",
        },
        analysis_rows=200,
        redraw_signals=True,
    ),  # fmt: skip
    # The whole pipeline on tiny sizes (used by the tests), not a reproduction: its verdicts mean
    # nothing. Every variant once, the GRU twice (the fewest whose spread the claims read).
    "quick": Scale(
        seeds={"gru": (0, 1), "lstm": (0,), "two_signals": (0,), "gru_teacher_forced": (0,)},
        vocab_size=300,
        hidden_size=24,
        embedding_size=16,
        batch_size=64,
        learning_rate=0.005,
        max_time=None,
        analysis_rows=20,
        control_draws=1,
        tokens=4,
        training_batches=5,
        test_batches=4,  # 256 test pairs of the 869
        correct_only=False,
        books=(
            "hamlet_gut.txt",
            "lear_gut.txt",
            "macbeth_gut.txt",
            "othello_gut.txt",
            "sonnets_gut.txt",
            "tempest_gut.txt",
        ),  # 17,386 line pairs: set up in 0.4 s, not 2.4
        overrides=(
            "--trainer.max_epochs",
            "1",
            "--trainer.limit_train_batches",
            "20",
            "--trainer.limit_val_batches",
            "5",
            "--trainer.limit_test_batches",
            "5",
        ),
    ),  # fmt: skip
}


def command_line() -> argparse.ArgumentParser:
    """`python -m experiments.paper4`'s options (built without importing the reproduction)."""
    parser = reproduction_parser(
        "Reproduce paper 4 (Exposing the Functionalities of Neurons for GRU Seq2Seq).",
        SCALES, "reports/paper4",
    )  # fmt: skip
    parser.add_argument(
        "--measure-untrained", action="store_true",
        help="with --reuse-runs: also measure the untrained weights (the null model) of runs "
        "whose kept measurements predate them, from their run folder or, where it is gone, "
        "rebuilt from their seed (a one-batch fit in a scratch folder); nothing is trained again",
    )  # fmt: skip
    parser.add_argument("--time-cap", type=time_cap, metavar="DD:HH:MM:SS", help="cap every "
                        "run's training at this (Lightning's max_time), for a machine lent for "
                        "hours; the report says which runs early stopping ended")  # fmt: skip
    return parser


def time_cap(text: str) -> str:
    """`--time-cap`'s value, checked: Lightning's `DD:HH:MM:SS`, above zero."""
    parts = text.split(":")
    if (
        len(parts) != 4
        or not all(p.isdigit() and len(p) == 2 for p in parts)
        or set(text) <= {"0", ":"}
    ):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a time cap: write days, hours, minutes and seconds as "
            "DD:HH:MM:SS, e.g. 00:02:30:00 for two and a half hours"
        )
    return text
