"""`make reproduce-paper4`: Lee et al., "Exposing the Functionalities of Neurons for GRU
Seq2Seq": token positioning, the storing, counting, triggering and outputting neurons found by
the three-stage method of section 3, Table 1, Figures 2, 3 and 5 and the gate interaction of
section 5.

Runs, each a fit through the suite's CLI (`python -m experiments fit ...`,
`experiments/configs/paper4/gru.yaml`): the GRU seq2seq over several seeds (the neuron analysis
runs on each), one LSTM and one with two (token, position) signals (section 2's accuracies).
Then `reports/paper4/{report.md, results.json, figures/}` are written and logged to W&B.

Scale (`SCALE` or `--scale`, see `SCALES`): `paper` is a vocabulary of 20,000, trained until
early stopping; `default` shrinks the vocabulary and the network and caps each run's training
time so that the reproduction finishes on 2 CPU cores; `smoke` is a minute-long check.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path

from experiments.runner import fit, run_all

CONFIGS = Path(__file__).parent / "configs" / "paper4"
PAPER = json.loads((Path(__file__).parent / "paper_values" / "paper4.json").read_text())
VARIANTS = {
    "gru": (),
    "lstm": ("--model.init_args.cell", "lstm"),
    "two_signals": ("--data.signals", "2"),
}
"""Trained variants and their CLI arguments on top of `gru.yaml` (section 2)."""


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
    overrides: tuple[str, ...] = field(default=())


SCALES = {
    "paper": Scale(
        seeds={"gru": (0, 1, 2), "lstm": (0, 1, 2), "two_signals": (0, 1, 2)},
        vocab_size=20000,
        hidden_size=256,
        embedding_size=128,
        batch_size=64,
        learning_rate=0.001,
        max_time=None,
        analysis_rows=500,
    ),  # fmt: skip
    "default": Scale(
        seeds={"gru": (0, 1, 2), "lstm": (0,), "two_signals": (0,)},
        vocab_size=2000,
        hidden_size=128,
        embedding_size=64,
        batch_size=128,
        learning_rate=0.002,
        max_time={"gru": "00:00:55:00", "lstm": "00:00:30:00", "two_signals": "00:00:30:00"},
        analysis_rows=200,
    ),  # fmt: skip
    "smoke": Scale(
        seeds={"gru": (0, 1), "lstm": (0,), "two_signals": (0,)},
        vocab_size=300,
        hidden_size=24,
        embedding_size=16,
        batch_size=64,
        learning_rate=0.005,
        max_time=None,
        analysis_rows=20,
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


def train(name: str, seed: int, scale: Scale, root: Path, reuse: bool) -> Path:
    """One run of `name` (a key of `VARIANTS`) through the CLI; returns its folder."""
    run = root / "paper4" / name / f"seed={seed}"
    time_cap = () if scale.max_time is None else ("--trainer.max_time", scale.max_time[name])
    arguments = [
        "--config", str(CONFIGS / "gru.yaml"),
        "--seed_everything", str(seed),
        "--run.root", str(root),
        "--run.variant", name,
        "--trainer.enable_progress_bar", "false",
        "--data.data_seed", str(seed),
        "--data.vocab_size", str(scale.vocab_size),
        "--data.batch_size", str(scale.batch_size),
        "--model.init_args.hidden_size", str(scale.hidden_size),
        "--model.init_args.embedding_size", str(scale.embedding_size),
        "--model.init_args.learning_rate", str(scale.learning_rate),
        *time_cap, *VARIANTS[name], *scale.overrides,
    ]  # fmt: skip
    fit(run, arguments, reuse)
    return run


def train_all(scale: Scale, root: Path, jobs: int, reuse: bool) -> dict[tuple, Path]:
    """Every run: the GRU seeds first (the analysis needs them), then the other variants."""
    keys = [(name, seed) for name in VARIANTS for seed in scale.seeds[name]]
    tasks = {key: functools.partial(train, *key, scale, root, reuse) for key in keys}
    return run_all(tasks, jobs, lambda key, run: f"{key[0]} seed={key[1]}")
