"""Paper 3's runs: each trained through the suite's CLI (`python -m experiments fit ...`,
`experiments/configs/paper3/<experiment>.yaml`) and then measured once into its own small file,
`<run>/measurements.json`, from which the report is built.

A run's measurements (no weights) are everything the report reads of it: the command that trained
it (without the run root, so a copy elsewhere is the same run), its data source, its accuracies
after the last step on all training and test data, its accuracy curves on the training and test
samples by updates done and, for SCAN, each training batch's sentence accuracy before its update.
A toy run (under either reading, `experiments.paper3.toy`) keeps the X2 dependence of its last Y1
prediction and its boundary over training (the claims' statistics, measured on the full-precision
grids after each of Figure 5's steps) and only the P(Y1 = 1) grids the figures draw, as 8-bit
levels (`toy.encoded_grid`: 201 x 201 values, about 54 kB a grid; the playground's 100 x 100):
after the last step for Figure 6, and after every step of Figure 5 for the run that figure draws
(`figure5_run`) alone. Every run also keeps its data's sizes (rows of all training and test data)
and what its untrained weights (`epoch=init`, the null model) give: their accuracies on the
samples and on all data and, for a toy run, their X2 dependence (`untrained_accuracies`). A toy run
measured before its boundary over training was, or any run measured before its untrained
weights were, is measured again from its folder (trained again only where its folder is
gone). Every run keeps the settings its config file gives and its command does not (`reading`;
a config file may change one while the commands stay the same): a run or measurements whose
settings differ from the config file's are trained again.

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
import yaml

from experiments.engine.fit import fit, left_to_compute
from experiments.engine.pool import IN_PROCESS_TRAINER, run_all
from experiments.engine.sitting import Sitting
from experiments.engine.store import Schema, portable, write_measurements
from experiments.paper3.scales import (
    ACCURACY,
    CONFIGS,
    IMAGES_AUTHORS,
    ONE_DATA_SEED,
    PLAYGROUND_TOY,
    SCAN_AUTHORS,
    SETTINGS,
    Scale,
    variant,
)
from experiments.paper3.toy import (
    READINGS,
    ToyReading,
    boundary_over_training,
    encoded_grid,
    x2_dependence,
    y1_probability,
)
from storage import RunLayout
from storage.files import read_saved_config
from storage.layout import UNTRAINED
from storage.run_folder import RunFolder

TRAINING_ORDER = ("scan", "two_digit_images", IMAGES_AUTHORS, "toy_2d", PLAYGROUND_TOY,
                  SCAN_AUTHORS)  # fmt: skip
"""The experiments in the order their runs are trained: longest first, so the pool stays busy
(SCAN's authors' reading, 50 steps, last)."""


def run_keys(scale: Scale) -> list[tuple[str, str, int]]:
    """Every run of `scale` as (experiment, setting, seed), in `TRAINING_ORDER`: the list shards
    split (`Shard.keeps`)."""
    return [(e, s, seed) for e in TRAINING_ORDER for s in SETTINGS for seed in scale.seeds]


def arguments_of(experiment: str, setting: str, seed: int, scale: Scale, root: Path) -> list[str]:
    """The `python -m experiments fit` arguments of one run. Runs differ in the model's seed and
    in the data's (the sampled pairs, the training draws and, for SCAN setting B, the action
    words), but those of `ONE_DATA_SEED` all draw their data with the scale's first seed. The
    playground's toy counts its steps in epochs (passes)."""
    length = "--trainer.max_epochs" if experiment == PLAYGROUND_TOY else "--trainer.max_steps"
    data_seed = scale.seeds[0] if experiment in ONE_DATA_SEED else seed
    return [
        "--config", str(CONFIGS / f"{experiment}.yaml"),
        "--seed_everything", str(seed),
        "--run.root", str(root),
        "--run.variant", variant(experiment, setting),
        length, str(scale.steps[experiment]),
        "--trainer.enable_progress_bar", "false",
        "--data.setting", setting,
        "--data.data_seed", str(data_seed),
        "--data.eval_size", str(scale.eval_size[experiment]),
        *(("--trainer.val_check_interval", str(scale.scan_eval_interval))
          if experiment == "scan" else ()),
        *scale.overrides.get(experiment, ()),
    ]  # fmt: skip


# ---- reading a run's metrics -----------------------------------------------------------------
def accuracy_curves(run: RunFolder, experiment: str) -> pd.DataFrame:
    """Accuracy on the training and test samples (columns `train`, `test`) by the number of
    training updates done, with the epochs done (`passes`: the playground's steps). Lightning
    logs a validation row with `step` one below the updates done (checked against the weight
    snapshots: the row of step s matches `step=<s+1>`) and `epoch` one below the epochs done."""
    metric = ACCURACY[experiment]
    columns = {f"val/train_sample/{metric}": "train", f"val/test_sample/{metric}": "test"}
    frame = run.metrics()[["step", "epoch", *columns]].dropna().rename(columns=columns)
    frame.index = pd.Index(frame.pop("step").astype(int) + 1, name="updates")
    frame["passes"] = frame.pop("epoch").astype(int) + 1
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


# ---- the untrained weights: the null model --------------------------------------------


def untrained_accuracies(run: RunFolder, data, experiment: str) -> dict:
    """The run's untrained weights (`UNTRAINED`) evaluated as its trained ones are, on the same
    data (`data`, the run's DataModule, set up): accuracy on the training and test samples
    (`samples`: the curves' value before the first update, which training never logs) and on
    all training and test data (`final`, as `final_accuracies`)."""
    import pytorch_lightning as pl

    metric = ACCURACY[experiment]
    model = run.model(UNTRAINED)
    trainer = pl.Trainer(accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False,
                         **evaluation_limits(run))  # fmt: skip
    logged = {}
    with IN_PROCESS_TRAINER:  # runs are measured two at a time, in threads
        evaluated = (trainer.validate(model, datamodule=data, verbose=False),
                     trainer.test(model, datamodule=data, verbose=False))  # fmt: skip
    for results in evaluated:
        for result in results:
            logged |= result
    train, test = (logged[f"test/{split}/{metric}"] for split in ("train", "test"))
    return {
        "samples": {split: logged[f"val/{split}_sample/{metric}"] for split in ("train", "test")},
        "final": {"train": train, "test": test, "gap": train - test},
    }


def evaluation_limits(run: RunFolder) -> dict[str, int | float]:
    """The batches the run's fit validated and tested on (`--trainer.limit_val_batches`,
    `--trainer.limit_test_batches` in its `config.yaml`; the Trainer's 1.0, every batch, where
    unset), so that its untrained weights are evaluated on the rows its trained ones were."""
    config = read_saved_config(run.files) or {}
    trainer = config.get("trainer") or {}
    limits = {limit: trainer.get(limit) for limit in ("limit_val_batches", "limit_test_batches")}
    return {limit: 1.0 if value is None else value for limit, value in limits.items()}


# ---- the toy problem's decision boundary (section 6) -----------------------------------------
def figure5_run(scale: Scale) -> tuple[str, int]:
    """The toy run Figure 5 draws after each step: setting A's first seed."""
    return "A", scale.seeds[0]


def reading_of(experiment: str) -> ToyReading:
    return next(reading for reading in READINGS if reading.experiment == experiment)


def boundaries(run: RunFolder, reading: ToyReading, setting: str, seed: int, scale: Scale) -> dict:
    """The toy run's X2 dependence after the last step, its boundary over Figure 5's steps
    (`experiments.paper3.toy.boundary_over_training`) and the P(Y1 = 1) grids its figures draw
    (rows X2, columns X1 on the reading's grid), by the reading's steps done: after every step of
    Figure 5 for `figure5_run`, else after the last step only (Figure 6)."""
    last = scale.steps[reading.experiment]
    steps = scale.figure5_steps(reading.experiment)
    model = run.model("last")
    grids = {step: y1_probability(model, run.state_dict(reading.snapshot_tag(step)), reading)
             for step in steps}  # fmt: skip
    kept = steps if (setting, seed) == figure5_run(scale) else [last]
    return {
        "x2_dependence": x2_dependence(grids[last], reading),
        **boundary_over_training(grids, reading),
        "y1_probability": {str(step): encoded_grid(grids[step]) for step in kept},
    }  # fmt: skip


def untrained_x2_dependence(run: RunFolder, reading: ToyReading) -> float:
    """The X2 dependence (`x2_dependence`) of the toy run's untrained weights (step 0)."""
    state = run.state_dict(reading.snapshot_tag(0))
    return x2_dependence(y1_probability(run.model("last"), state, reading), reading)


def unstamped_version(record: dict) -> int:
    """The schema version of measurements written before versions were recorded: 1 without the
    untrained weights' accuracies (`untrained`) or the data's sizes (`data_sizes`), 2 with them
    but a toy run's boundary over training without its quadrant share, else 3."""
    if "untrained" not in record or "data_sizes" not in record:
        return 1
    boundaries = record.get("boundaries")
    return 2 if boundaries is not None and "quadrant_y1_share" not in boundaries else 3


SCHEMA = Schema(3, unstamped=unstamped_version)
"""Paper 3's measurements: an older version is measured again from the run's folder (the fields
it lacks read the trained run), not trained again."""


# ---- a run's reading: the settings its config file gives -------------------------
SECTIONS = ("model", "data")


def reading_settings(config: dict, arguments: list[str]) -> dict:
    """Every `model`/`data` `init_args` setting of a LightningCLI `config` that the run's
    command (`arguments`) does not set itself: the settings a config file can change while the
    command stays the same (the images' layers and loss, SCAN's attention and clipping).
    `trainer` settings that change a reading (SCAN's clipping) are kept too."""
    overridden = {a.removeprefix("--").replace(".init_args.", ".") for a in arguments
                  if a.startswith("--")}  # fmt: skip
    settings = {
        f"{part}.{key}": value
        for part in SECTIONS
        for key, value in ((config.get(part) or {}).get("init_args") or {}).items()
    }
    settings |= {f"trainer.{key}": config.get("trainer", {}).get(key)
                 for key in ("gradient_clip_val", "gradient_clip_algorithm")}  # fmt: skip
    return {key: value for key, value in settings.items() if key not in overridden}


def configured_reading(experiment: str, arguments: list[str]) -> dict:
    """`reading_settings` of the experiment's config file."""
    config = yaml.safe_load((CONFIGS / f"{experiment}.yaml").read_text())
    return reading_settings(config, arguments)


def trained_reading(layout: RunLayout, arguments: list[str], configured: dict) -> dict | None:
    """The same settings as the run in `layout` was trained with (its saved config, which holds
    every setting resolved), None without one."""
    config = read_saved_config(layout)
    if config is None:
        return None
    saved = reading_settings(config, arguments)
    return {key: saved.get(key) for key in configured}


def trained_by_another_reading(layout: RunLayout, experiment: str, arguments: list[str]) -> bool:
    """A run folder whose saved config has other settings than its config file gives now."""
    configured = configured_reading(experiment, arguments)
    return trained_reading(layout, arguments, configured) not in (None, configured)


def reuses_fit(layout: RunLayout, experiment: str, arguments: list[str], sitting: Sitting) -> bool:
    """Whether `fit` may keep or resume the run's folder (`--reuse-runs`): not where it was
    trained under another reading, which is trained again."""
    return sitting.reuse and not trained_by_another_reading(layout, experiment, arguments)


def up_to_date(record: dict, experiment: str, arguments: list[str]) -> bool:
    """Kept measurements that need no new measuring: taken with the config file's settings of
    today (`reading`), with the untrained weights' accuracies and the data's sizes and, for a
    toy run, with its boundary over training."""
    if record.get("reading") != configured_reading(experiment, arguments):
        return False
    return SCHEMA.version_of(record) >= SCHEMA.version


# ---- one run's measurements ------------------------------------------------------------------
def measurements_of(run: RunFolder, experiment: str, setting: str, seed: int, scale: Scale) -> dict:
    """Everything the report reads of one trained run (the module's docstring says what)."""
    curves = accuracy_curves(run, experiment)
    batches = batch_accuracy(run) if experiment in ("scan", SCAN_AUTHORS) else None
    toy = experiment in (reading.experiment for reading in READINGS)
    data = run.datamodule("last")
    untrained = untrained_accuracies(run, data, experiment)
    if toy:
        untrained["x2_dependence"] = untrained_x2_dependence(run, reading_of(experiment))
    return {
        "experiment": experiment,
        "setting": setting,
        "seed": seed,
        "data_source": data.data_source,
        "data_sizes": {split: len(data.datasets[split]) for split in ("train", "test")},
        "final": final_accuracies(run, experiment),
        "untrained": untrained,
        "curves": {"updates": curves.index.tolist(), "train": curves["train"].tolist(),
                   "test": curves["test"].tolist()}
                  | ({"passes": curves["passes"].tolist()} if experiment == PLAYGROUND_TOY else {}),
        "batch_accuracy": None if batches is None else {
            "updates": batches.index.tolist(), "seq_acc": batches.tolist()},
        "boundaries": boundaries(run, reading_of(experiment), setting, seed, scale) if toy
                      else None,
    }  # fmt: skip


def measure(experiment: str, setting: str, seed: int, scale: Scale, sitting: Sitting) -> dict:
    """Train the run (or keep it, with `reuse`), measure it and write its measurements file;
    with `reuse`, measurements taken from the same command are read back instead."""
    root = sitting.root
    layout = RunLayout.of(root, "paper3", variant(experiment, setting), seed)
    arguments = arguments_of(experiment, setting, seed, scale, root)
    kept = sitting.kept(layout, arguments)
    if kept is not None and up_to_date(kept, experiment, arguments):
        return kept
    trained = fit(layout.path, arguments, reuses_fit(layout, experiment, arguments, sitting))
    torch.set_num_threads(1)  # two runs are measured at a time, beside the fits
    measured = measurements_of(RunFolder(layout.path), experiment, setting, seed, scale)
    configured = configured_reading(experiment, arguments)
    reading = trained_reading(layout, arguments, configured)
    record = {"command": portable(arguments, root), **measured, "reading": reading}
    return {**write_measurements(layout, record, sitting.schema), "kept": not trained}


def measure_all(scale: Scale, sitting: Sitting) -> dict[tuple, dict]:
    """Every run's measurements (of the sitting's shard: a run is a group) by (experiment,
    setting, seed), `jobs` runs at a time, longest first."""
    every = run_keys(scale)
    keys = [key for key in every if sitting.shard.keeps(key, every)]
    tasks = {key: functools.partial(measure, *key, scale, sitting) for key in keys}

    def done_before(key) -> bool:
        layout = RunLayout.of(sitting.root, "paper3", variant(*key[:2]), key[2])
        arguments = arguments_of(*key, scale, sitting.root)
        kept = sitting.kept(layout, arguments)
        return kept is not None and up_to_date(kept, key[0], arguments)

    def describe(key, record) -> str:
        final = record["final"]
        return (f"{variant(*key[:2])} seed={key[2]}: train accuracy {final['train']:.3f}, "
                f"test {final['test']:.3f}")  # fmt: skip

    def left(key) -> str | None:
        layout = RunLayout.of(sitting.root, "paper3", variant(*key[:2]), key[2])
        arguments = arguments_of(*key, scale, sitting.root)
        reuse = reuses_fit(layout, key[0], arguments, sitting)
        return left_to_compute(layout.path, arguments, reuse)

    return run_all(tasks, sitting.jobs, describe, done_before,
                   lambda key: f"{variant(*key[:2])} seed={key[2]}", left)  # fmt: skip
