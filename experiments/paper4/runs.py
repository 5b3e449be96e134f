"""Paper 4's runs: each trained through the suite's CLI and then measured once into its own small
file, `<run>/measurements.json`, from which the report is built.

A run's measurements (no weights) are everything the report reads of it: the command that trained
it (without the run root, so a copy elsewhere is the same run), the decoder inputs it was trained
on, its stopping rule, its per-epoch curves, its test accuracy, its greedy accuracy on training
pairs, its accuracy with random decoder inputs, its data and, for a GRU seed, sections 3-5's
analysis; and, under `untrained`, the same of its untrained weights (the null model: the
`epoch=init` snapshot the config saves before the first update). With `--reuse-runs` a run whose
measurements were taken from the same command is never trained or measured again, so a report
can be rebuilt from the measurement files alone: the reproduction copies them beside its report
(`reports/paper4/runs/`), and `python -m experiments.paper4 --runs reports/paper4/runs
--reuse-runs` rebuilds it from there. Measurements taken before the null model (no `untrained`)
are read back as they are, unless `--measure-untrained` asks for it: then their runs' untrained
weights are measured, from the run folder or, where it is gone or has no snapshot, rebuilt from
the seed by a one-batch fit in a scratch folder (`experiments.engine.measure`); nothing is trained
again. The analysis is imported by the functions that measure a run, so a report rebuilt from
kept measurements loads neither Lightning nor sklearn.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path

import torch

from experiments.engine.fit import left_to_compute
from experiments.engine.measure import Fields, measured, measured_before
from experiments.engine.pool import run_all
from experiments.engine.sitting import Sitting
from experiments.paper4.scales import CONFIGS, VARIANT_CONFIGS, VARIANTS, Scale
from storage import RunLayout
from storage.files import RunFileError, read_saved_config
from storage.layout import UNTRAINED
from storage.run_folder import RunFolder

CURVES = ("val/position_acc", "val/loss", "train/position_acc")
"""The per-epoch metrics the report plots and reads (validation greedy, training as trained)."""


def arguments_of(name: str, seed: int, scale: Scale, root: Path) -> list[str]:
    """The `python -m experiments fit` arguments of the run of `name` (a key of `VARIANTS`)."""
    time_cap = () if scale.max_time is None else ("--trainer.max_time", scale.max_time[name])
    return [
        "--config", str(CONFIGS / "gru.yaml"),
        *(part for config in VARIANT_CONFIGS.get(name, ()) for part in
          ("--config", str(CONFIGS / config))),
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
        "--data.redraw_signals", str(scale.redraw_signals).lower(),
        *time_cap, *VARIANTS[name], *scale.overrides,
        *(() if scale.books is None else ("--data.books", json.dumps(scale.books))),
    ]  # fmt: skip


def stopping_of(run: RunFolder) -> dict:
    """The run's early stopping as its `config.yaml` records it: the monitored metric, its mode,
    the patience, and whether a time cap was set; and the decoder inputs it trained on."""
    config = read_saved_config(run.files)
    if config is None:
        raise RunFileError(
            f"{run.files.config} is missing: the run's early stopping is read from "
            "it; delete the run folder and rerun the reproduction to retrain it."
        )
    trainer = config["trainer"]
    stopping = next(c["init_args"] for c in trainer["callbacks"]
                    if c["class_path"].endswith(".EarlyStopping"))  # fmt: skip
    ratio = float(config["model"]["init_args"].get("teacher_forcing_ratio", 1.0))
    objective = {0.0: "own outputs", 1.0: "teacher forcing"}.get(ratio, f"mixed ({ratio})")
    return {"monitor": stopping["monitor"], "mode": stopping["mode"],
            "patience": stopping["patience"], "capped": bool(trainer["max_time"]),
            "objective": objective}  # fmt: skip


def epoch_curves(run: RunFolder) -> dict[str, list[float | None]]:
    """Per validated epoch (from 0) the value of each of `CURVES` (None where not logged)."""
    metrics = run.metrics()
    epochs = sorted(int(e) for e in metrics.dropna(subset=[CURVES[0]])["epoch"].unique())
    curves: dict[str, list[float | None]] = {"epoch": epochs}
    for name in CURVES:
        logged = metrics.dropna(subset=[name]).groupby("epoch")[name].last()
        curves[name] = [float(logged[e]) if e in logged.index else None for e in epochs]
    return curves


def accuracies(model, datamodule, scale: Scale, analysis: dict | None, test: float) -> dict:
    """A model's accuracies as its record holds them: on the test split (`test`), greedy on the
    first training batches (their epoch-0 signals: what the model learned of pairs it trained
    on, beside the test accuracy under the same decoding), and with every decoder input a random
    token (section 5's side finding; the analysis's, where there is one)."""
    from experiments.paper4.analysis import positioning_accuracy

    return {
        "test_position_acc": test,
        "training_accuracy": positioning_accuracy(model, datamodule, "train",
                                                  scale.training_batches),
        "random_inputs_accuracy": (analysis["random_inputs_accuracy"] if analysis is not None
                                   else positioning_accuracy(model, datamodule, "test",
                                                             scale.test_batches, random_seed=0)),
    }  # fmt: skip


def untrained_fields(name: str, scale: Scale, reuse: bool) -> Fields:
    """What a run's record holds of its untrained weights (`UNTRAINED`: the null model),
    measured as its trained ones are: the same accuracies and, for a GRU seed, the same analysis
    (on every requested row: they answer none correctly; `analysis_of`)."""

    def untrained(run: RunFolder) -> dict:
        from experiments.paper4.analysis import analysis_of, positioning_accuracy

        analysis = analysis_of(run.path, scale, reuse, UNTRAINED) if name == "gru" else None
        torch.set_num_threads(1)
        model, datamodule = run.model(UNTRAINED), run.datamodule(UNTRAINED)
        test = (analysis["test_position_acc"] if analysis is not None else
                positioning_accuracy(model, datamodule, "test", scale.test_batches))  # fmt: skip
        return {**accuracies(model, datamodule, scale, analysis, test), "analysis": analysis}

    return {"untrained": untrained}


def measure(name: str, seed: int, scale: Scale, sitting: Sitting) -> dict:
    """Train the run (or keep it, with `reuse`), measure it and its untrained weights and write
    its measurements file; with `reuse`, measurements taken from the same command are read back
    instead (`experiments.engine.measure`), those without the untrained weights' completed only with
    `scale.untrained_of_kept_runs`."""

    def trained(run: RunFolder) -> dict:
        from experiments.paper4.analysis import analysis_of

        analysis = analysis_of(run.path, scale, sitting.reuse) if name == "gru" else None
        torch.set_num_threads(1)
        model, datamodule = run.model("best"), run.datamodule("best")
        tested = run.test_accuracy("test", "position_acc")
        return {"variant": name, "seed": seed, "stopping": stopping_of(run),
                "curves": epoch_curves(run),
                **accuracies(model, datamodule, scale, analysis, tested),
                "data_source": datamodule.data_source, "analysis": analysis}  # fmt: skip

    return measured(RunLayout.of(sitting.root, "paper4", name, seed),
                    arguments_of(name, seed, scale, sitting.root), sitting, trained,
                    untrained_fields(name, scale, sitting.reuse),
                    scale.untrained_of_kept_runs, settings=dataclasses.asdict(scale))  # fmt: skip


def measure_all(scale: Scale, sitting: Sitting) -> dict[tuple, dict]:
    """Every run's measurements (of the sitting's shard: a run is a group), `jobs` runs at a
    time, the GRU seeds first; each GRU is analysed as soon as it is trained, while the other
    runs train, so the cores stay busy."""
    every = [(name, seed) for name in VARIANTS for seed in scale.seeds[name]]
    keys = [key for key in every if sitting.shard.keeps(key, every)]
    tasks = {key: functools.partial(measure, *key, scale, sitting) for key in keys}
    needed = ["untrained"] if scale.untrained_of_kept_runs else []

    def done_before(key) -> bool:
        layout = RunLayout.of(sitting.root, "paper4", *key)
        return measured_before(layout, arguments_of(*key, scale, sitting.root), sitting, needed)

    def left(key) -> str | None:
        return left_to_compute(RunLayout.of(sitting.root, "paper4", *key).path,
                               arguments_of(*key, scale, sitting.root), sitting.reuse)  # fmt: skip

    def describe(key, record) -> str:
        return f"{key[0]} seed={key[1]}: test accuracy {record['test_position_acc']:.3f}"

    return run_all(tasks, sitting.jobs, describe, done_before, left=left)
