"""Paper 3's experiments, settings and scales: what each run of `make reproduce-paper3` trains.

Scale (`SCALE` or `--scale`, see `SCALES`): `paper` evaluates every step on 1,000-row samples;
`default` evaluates the images on 250-row samples every step and SCAN on 500-row samples every
10 steps, sized for 2 CPU cores; `quick` is the whole pipeline on tiny sizes in minutes, whose
verdicts mean nothing. Training itself (steps, batch sizes, optimizers) is the paper's at every
scale but `quick`.

Beside the paper's three experiments (`EXPERIMENTS`) the toy is also trained as the authors ran
it, in the TensorFlow Playground (`PLAYGROUND_TOY`, `experiments.paper3.toy`); its steps are
playground steps (passes over the training points, epochs of the fit). The two-digit images are
also trained as the authors' TensorFlow program ran them (`IMAGES_AUTHORS`), evaluated on the
program's 100-pair samples at every scale but `quick`, all its runs on one data seed
(`ONE_DATA_SEED`). SCAN is also trained as the authors' scripts ran it (`SCAN_AUTHORS`,
`experiments.paper3.scan_authors`): 50 steps, evaluated after every one on 100 rows of each split
at every scale but `quick`.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, replace
from pathlib import Path

from experiments.engine.cli import reproduction_parser

CONFIGS = Path(__file__).parents[1] / "configs" / "paper3"
PAPER = json.loads((Path(__file__).parents[1] / "paper_values" / "paper3.json").read_text())
EXPERIMENTS = ("two_digit_images", "scan", "toy_2d")
PLAYGROUND_TOY = "toy_2d_playground"
"""The toy under the authors' reading: a second reading of `toy_2d`, not a fourth experiment."""
IMAGES_AUTHORS = "two_digit_images_authors"
"""The two-digit images as the authors' `mnist.py` ran them: a second reading of
`two_digit_images` (`experiments/configs/paper3/two_digit_images_authors.yaml`)."""
SCAN_AUTHORS = "scan_authors"
"""SCAN under the authors' reading (their scripts): a second reading of `scan`."""
ONE_DATA_SEED = (IMAGES_AUTHORS,)
"""Experiments whose runs all draw their data with the scale's first seed, the model's seed
varying alone, as the authors' `mnist.py` runs (one `--data_random_seed`, line 255)."""
SETTINGS = ("A", "B")
ACCURACY = {"two_digit_images": "accuracy", "scan": "seq_acc", "toy_2d": "accuracy",
            PLAYGROUND_TOY: "accuracy",
            IMAGES_AUTHORS: "accuracy", SCAN_AUTHORS: "seq_acc"}  # fmt: skip
"""The accuracy metric of each experiment (SCAN: sentence accuracy, as the paper)."""
TOY_STEPS = (0, 1, 2, 3, 4, 8, 64, 1024)
"""Figure 5's panels: the paper shows steps 0, 1, 2, ... and the end of training."""


@dataclass(frozen=True)
class Scale:
    """How much of the paper a reproduction runs."""

    seeds: tuple[int, ...]
    steps: dict[str, int]
    eval_size: dict[str, int]
    scan_eval_interval: int
    overrides: dict[str, tuple[str, ...]]
    """Extra CLI arguments per experiment."""

    def figure5_steps(self, experiment: str = "toy_2d") -> list[int]:
        """The toy's steps Figure 5 draws: those of `TOY_STEPS` within training, and the last (the
        toy's configs snapshot the weights after each of them)."""
        last = self.steps[experiment]
        return sorted({n for n in TOY_STEPS if n <= last} | {last})


PAPER_STEPS = {"two_digit_images": 200, "scan": 2000, "toy_2d": 1024, PLAYGROUND_TOY: 1024,
               IMAGES_AUTHORS: 200, SCAN_AUTHORS: 50}  # fmt: skip
"""SCAN's authors' scripts: --epochs 50, a step each."""
AUTHORS_EVAL_SIZE = 100
"""The authors' `mnist.py` evaluates on 100 training-distribution and 100 test pairs (lines
266-267), their SCAN `main.py` on 100 rows of each split (lines 20-29)."""
PAPER_SCALE = Scale(
    seeds=(0, 1, 2, 3, 4),
    steps=PAPER_STEPS,
    eval_size={"two_digit_images": 1000, "scan": 1000, "toy_2d": 1000, PLAYGROUND_TOY: 1000,
               IMAGES_AUTHORS: AUTHORS_EVAL_SIZE, SCAN_AUTHORS: AUTHORS_EVAL_SIZE},
    scan_eval_interval=1,
    overrides={},
)  # fmt: skip
SCALES = {
    "paper": PAPER_SCALE,
    # The paper's training, evaluated on smaller samples (SCAN's less often).
    "default": replace(
        PAPER_SCALE,
        eval_size={**PAPER_SCALE.eval_size, "two_digit_images": 250, "scan": 500},
        scan_eval_interval=10,
    ),
    # The whole pipeline on tiny sizes (used by the tests), not a reproduction: its verdicts mean
    # nothing. Two seeds (the fewest whose spread the claims read), a few steps of each run.
    "quick": Scale(
        seeds=(0, 1),
        steps={"two_digit_images": 4, "scan": 4, "toy_2d": 8, PLAYGROUND_TOY: 4,
               IMAGES_AUTHORS: 4, SCAN_AUTHORS: 4},
        eval_size={"two_digit_images": 20, "scan": 20, "toy_2d": 100, PLAYGROUND_TOY: 100,
                   IMAGES_AUTHORS: 20, SCAN_AUTHORS: 20},
        scan_eval_interval=2,
        overrides={
            "two_digit_images": ("--data.train_pairs", "200", "--data.test_pairs", "100"),
            # all data is evaluated by greedy decoding, a step at a time: 2 batches of each
            # split here (the untrained weights on the same, `runs.evaluation_limits`)
            "scan": ("--data.steps_per_epoch", "2", "--data.batch_size", "32",
                     "--trainer.limit_test_batches", "2"),
            SCAN_AUTHORS: ("--data.steps_per_epoch", "2", "--data.batch_size", "32",
                           "--trainer.limit_test_batches", "2"),
            "toy_2d": ("--data.steps_per_epoch", "4"),
            IMAGES_AUTHORS: ("--data.train_pairs", "200", "--data.test_pairs", "100"),
        },
    ),
}  # fmt: skip


def variant(experiment: str, setting: str) -> str:
    return f"{experiment}_{setting}"


def command_line() -> argparse.ArgumentParser:
    """`python -m experiments.paper3`'s options (built without importing the reproduction)."""
    return reproduction_parser(
        "Reproduce paper 3 (Gradient Descent Resists Compositionality).", SCALES, "reports/paper3"
    )
