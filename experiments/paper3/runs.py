"""Paper 3's runs: each trained through the suite's CLI (`python -m experiments fit ...`,
`experiments/configs/paper3/<experiment>.yaml`) and then measured once into its own small file,
`<run>/measurements.json`, from which the report is built.

A run's measurements (no weights) are everything the report reads of it: the command that trained
it (without the run root, so a copy elsewhere is the same run), its data source, its accuracies
after the last step on all training and test data, its accuracy curves on the training and test
samples by updates done and, for SCAN, each training batch's sentence accuracy before its update.
A toy run keeps the X2 dependence of its last Y1 prediction (the claims' statistic, measured on
the full-precision grid) and only the P(Y1 = 1) grids the figures draw, rounded to
`KEPT_DECIMALS` (201 x 201 values, about 280 kB a grid): after the last step for Figure 6, and
after every step of Figure 5 for the run that figure draws (`figure5_run`) alone.

With `--reuse-runs` a run whose measurements were taken from the same command is never trained or
measured again, so the report can be rebuilt from the measurement files alone: the reproduction
copies them beside its report (`reports/paper3/runs/`), and `python -m experiments.paper3 --runs
reports/paper3/runs --reuse-runs` rebuilds it from there.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pandas as pd
import torch

from experiments.paper3.scales import ACCURACY, CONFIGS, SETTINGS, Scale, variant
from experiments.runner import Sitting, fit, portable, run_all, write_measurements
from storage import RunLayout
from storage.run_folder import RunFolder

TRAINING_ORDER = ("scan", "two_digit_images", "toy_2d")
"""The experiments in the order their runs are trained: longest first, so the pool stays busy."""


def run_keys(scale: Scale) -> list[tuple[str, str, int]]:
    """Every run of `scale` as (experiment, setting, seed), in `TRAINING_ORDER`: the list shards
    split (`Shard.keeps`)."""
    return [(e, s, seed) for e in TRAINING_ORDER for s in SETTINGS for seed in scale.seeds]


def arguments_of(experiment: str, setting: str, seed: int, scale: Scale, root: Path) -> list[str]:
    """The `python -m experiments fit` arguments of one run. Runs differ in the model's seed and
    in the data's (the sampled pairs, the training draws and, for SCAN setting B, the action
    words)."""
    return [
        "--config", str(CONFIGS / f"{experiment}.yaml"),
        "--seed_everything", str(seed),
        "--run.root", str(root),
        "--run.variant", variant(experiment, setting),
        "--trainer.max_steps", str(scale.steps[experiment]),
        "--trainer.enable_progress_bar", "false",
        "--data.setting", setting,
        "--data.data_seed", str(seed),
        "--data.eval_size", str(scale.eval_size[experiment]),
        *(("--trainer.val_check_interval", str(scale.scan_eval_interval))
          if experiment == "scan" else ()),
        *scale.overrides.get(experiment, ()),
    ]  # fmt: skip


# ---- reading a run's metrics -----------------------------------------------------------------
def accuracy_curves(run: RunFolder, experiment: str) -> pd.DataFrame:
    """Accuracy on the training and test samples (columns `train`, `test`) by the number of
    training updates done. Lightning logs a validation row with `step` one below the updates
    done (checked against the weight snapshots: the row of step s matches `step=<s+1>`)."""
    metric = ACCURACY[experiment]
    columns = {f"val/train_sample/{metric}": "train", f"val/test_sample/{metric}": "test"}
    frame = run.metrics()[["step", *columns]].dropna().rename(columns=columns)
    frame.index = pd.Index(frame.pop("step").astype(int) + 1, name="updates")
    return frame


def batch_accuracy(run: RunFolder) -> pd.Series:
    """SCAN: each training batch's sentence accuracy before its update, by updates done."""
    frame = run.metrics()[["step", "train/batch_seq_acc"]].dropna()
    return pd.Series(
        frame["train/batch_seq_acc"].to_numpy(),
        index=pd.Index(frame["step"].astype(int), name="updates"),
    )


def final_accuracies(run: RunFolder, experiment: str) -> dict[str, float]:
    """Accuracy of the weights after the last step on all training and all test data."""
    metric = ACCURACY[experiment]
    train, test = (run.test_accuracy(split, metric) for split in ("train", "test"))
    return {"train": train, "test": test, "gap": train - test}


# ---- the toy problem's decision boundary (section 6) -----------------------------------------
GRID = torch.arange(-100, 101) / 100
"""Both axes of the grid the toy model's Y1 prediction is read on: the data's range."""
KEPT_DECIMALS = 3
"""Decimals of the P(Y1 = 1) grids kept for the figures: finer than the colour map's 256 levels
(Figures 5 and 6 drawn from them differ from those drawn at full precision by at most 2 of 255
in a pixel's channel, at smoke scale)."""


@torch.no_grad()
def y1_probability(model, state: dict[str, torch.Tensor]) -> torch.Tensor:
    """P(Y1 = 1) on `GRID` x `GRID`, `[x2, x1]` (rows X2, columns X1)."""
    model.load_state_dict(state)
    x2, x1 = torch.meshgrid(GRID, GRID, indexing="ij")
    logits = model(torch.stack([x1.flatten(), x2.flatten()], -1))
    return logits.softmax(-1)[:, 1].reshape(len(GRID), len(GRID))


def x2_dependence(probability: torch.Tensor) -> float:
    """Share of the X1 columns in (0, 1] (where Y1 = 1) whose predicted Y1 changes as X2 moves
    over [-1, 1]. A compositional model (Y1 read from X1 alone) has 0."""
    predicted = probability[:, GRID > 0] > 0.5
    return float((predicted.any(0) & ~predicted.all(0)).float().mean())


def figure5_run(scale: Scale) -> tuple[str, int]:
    """The toy run Figure 5 draws after each step: setting A's first seed."""
    return "A", scale.seeds[0]


def boundaries(run: RunFolder, setting: str, seed: int, scale: Scale) -> dict:
    """The toy run's X2 dependence after the last step and the P(Y1 = 1) grids its figures draw
    (rows X2, columns X1 on `GRID`), by updates done: after every step of Figure 5 for
    `figure5_run`, else after the last step only (Figure 6)."""
    last = scale.steps["toy_2d"]
    steps = scale.figure5_steps() if (setting, seed) == figure5_run(scale) else [last]
    model = run.model("last")
    grids = {step: y1_probability(model, run.state_dict(f"step={step}")) for step in steps}
    return {
        "x2_dependence": x2_dependence(grids[last]),
        "y1_probability": {str(step): grid.double().round(decimals=KEPT_DECIMALS).tolist()
                           for step, grid in grids.items()},
    }  # fmt: skip


# ---- one run's measurements ------------------------------------------------------------------
def measurements_of(run: RunFolder, experiment: str, setting: str, seed: int, scale: Scale) -> dict:
    """Everything the report reads of one trained run (the module's docstring says what)."""
    curves = accuracy_curves(run, experiment)
    batches = batch_accuracy(run) if experiment == "scan" else None
    return {
        "experiment": experiment,
        "setting": setting,
        "seed": seed,
        "data_source": run.datamodule("last").data_source,
        "final": final_accuracies(run, experiment),
        "curves": {"updates": curves.index.tolist(), "train": curves["train"].tolist(),
                   "test": curves["test"].tolist()},
        "batch_accuracy": None if batches is None else {
            "updates": batches.index.tolist(), "seq_acc": batches.tolist()},
        "boundaries": boundaries(run, setting, seed, scale) if experiment == "toy_2d" else None,
    }  # fmt: skip


def measure(experiment: str, setting: str, seed: int, scale: Scale, sitting: Sitting) -> dict:
    """Train the run (or keep it, with `reuse`), measure it and write its measurements file;
    with `reuse`, measurements taken from the same command are read back instead."""
    root = sitting.root
    layout = RunLayout.of(root, "paper3", variant(experiment, setting), seed)
    arguments = arguments_of(experiment, setting, seed, scale, root)
    kept = sitting.kept(layout, arguments)
    if kept is not None:
        return kept
    trained = fit(layout.path, arguments, sitting.reuse)
    torch.set_num_threads(1)  # two runs are measured at a time, beside the fits
    measured = measurements_of(RunFolder(layout.path), experiment, setting, seed, scale)
    record = {"command": portable(arguments, root), **measured}
    return {**write_measurements(layout, record), "kept": not trained}


def measure_all(scale: Scale, sitting: Sitting) -> dict[tuple, dict]:
    """Every run's measurements (of the sitting's shard: a run is a group) by (experiment,
    setting, seed), `jobs` runs at a time, longest first."""
    every = run_keys(scale)
    keys = [key for key in every if sitting.shard.keeps(key, every)]
    tasks = {key: functools.partial(measure, *key, scale, sitting) for key in keys}

    def done_before(key) -> bool:
        layout = RunLayout.of(sitting.root, "paper3", variant(*key[:2]), key[2])
        return sitting.kept(layout, arguments_of(*key, scale, sitting.root)) is not None

    def describe(key, record) -> str:
        final = record["final"]
        return (f"{variant(*key[:2])} seed={key[2]}: train accuracy {final['train']:.3f}, "
                f"test {final['test']:.3f}")  # fmt: skip

    return run_all(tasks, sitting.jobs, describe, done_before,
                   lambda key: f"{variant(*key[:2])} seed={key[2]}")  # fmt: skip
