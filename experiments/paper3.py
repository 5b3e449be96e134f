"""`make reproduce-paper3`: "Gradient Descent Resists Compositionality", Figures 3-6 and the
claims of sections 5.1, 5.2 and 6.

Three experiments, each in setting A (the redundant input X2 carries label information in
training) and setting B (it does not), 5 runs each, every fit through the suite's CLI
(`python -m experiments fit ...`):
1. two-digit images (5.1, Appendix A): a CNN, the label is the left digit;
2. SCAN add-jump (5.2, Appendix B): a seq2seq LSTM with attention;
3. the toy 2-D problem (6, Appendix C): an MLP, with its decision boundaries over training.
Then `reports/paper3/{report.md, results.json, figures/}` are written and logged to W&B.

Scale (`SCALE` or `--scale`, see `SCALES`): `paper` evaluates every step on 1,000-row samples;
`default` evaluates the images on 250-row samples every step and SCAN on 500-row samples every
10 steps, sized for 2 CPU cores; `smoke` is a minute-long check. Training itself (steps, batch
sizes, optimizers) is the paper's at every scale but `smoke`.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from experiments.runner import fit, run_all  # noqa: E402

CONFIGS = Path(__file__).parent / "configs" / "paper3"
PAPER = json.loads((Path(__file__).parent / "paper_values" / "paper3.json").read_text())
EXPERIMENTS = ("two_digit_images", "scan", "toy_2d")
SETTINGS = ("A", "B")
ACCURACY = {"two_digit_images": "accuracy", "scan": "seq_acc", "toy_2d": "accuracy"}
"""The accuracy metric of each experiment (SCAN: sentence accuracy, as the paper)."""


@dataclass(frozen=True)
class Scale:
    """How much of the paper a reproduction runs."""

    seeds: tuple[int, ...]
    steps: dict[str, int]
    eval_size: dict[str, int]
    scan_eval_interval: int
    overrides: dict[str, tuple[str, ...]]
    """Extra CLI arguments per experiment."""


PAPER_STEPS = {"two_digit_images": 200, "scan": 2000, "toy_2d": 1024}
SCALES = {
    "paper": Scale(
        seeds=(0, 1, 2, 3, 4),
        steps=PAPER_STEPS,
        eval_size={"two_digit_images": 1000, "scan": 1000, "toy_2d": 1000},
        scan_eval_interval=1,
        overrides={},
    ),
    "default": Scale(
        seeds=(0, 1, 2, 3, 4),
        steps=PAPER_STEPS,
        eval_size={"two_digit_images": 250, "scan": 500, "toy_2d": 1000},
        scan_eval_interval=10,
        overrides={},
    ),
    "smoke": Scale(
        seeds=(0, 1),
        steps={"two_digit_images": 6, "scan": 6, "toy_2d": 16},
        eval_size={"two_digit_images": 40, "scan": 40, "toy_2d": 100},
        scan_eval_interval=2,
        overrides={
            "two_digit_images": ("--data.train_pairs", "400", "--data.test_pairs", "200"),
            "scan": ("--data.steps_per_epoch", "3"),
            "toy_2d": ("--data.steps_per_epoch", "8"),
        },
    ),
}


def variant(experiment: str, setting: str) -> str:
    return f"{experiment}_{setting}"


def train(experiment: str, setting: str, seed: int, scale: Scale, root: Path, reuse: bool) -> Path:
    """One run through the CLI; returns its folder. Runs differ in the model's seed and in the
    data's (the sampled pairs, the training draws and, for SCAN setting B, the action words)."""
    name = variant(experiment, setting)
    run = root / "paper3" / name / f"seed={seed}"
    arguments = [
        "--config", str(CONFIGS / f"{experiment}.yaml"),
        "--seed_everything", str(seed),
        "--run.root", str(root),
        "--run.variant", name,
        "--trainer.max_steps", str(scale.steps[experiment]),
        "--trainer.enable_progress_bar", "false",
        "--data.setting", setting,
        "--data.data_seed", str(seed),
        "--data.eval_size", str(scale.eval_size[experiment]),
        *(("--trainer.val_check_interval", str(scale.scan_eval_interval))
          if experiment == "scan" else ()),
        *scale.overrides.get(experiment, ()),
    ]  # fmt: skip
    fit(run, arguments, reuse)
    return run


def train_all(scale: Scale, root: Path, jobs: int, reuse: bool) -> dict[tuple, Path]:
    """Every run, longest first so that the pool stays busy."""
    keys = [(e, s, seed) for e in ("scan", "two_digit_images", "toy_2d")
            for s in SETTINGS for seed in scale.seeds]  # fmt: skip
    tasks = {key: functools.partial(train, *key, scale, root, reuse) for key in keys}
    return run_all(tasks, jobs, lambda key, run: f"{variant(*key[:2])} seed={key[2]}")
