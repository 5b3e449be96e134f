"""The atlas's runs: each model of `questions.MODELS` is its own paper's run at its paper's scale
(`arguments_of`: the paper's `arguments_of` or `model_arguments`, with its scale's overrides), in
its paper's run folder (`paper_layout`, `<runs>/paper4/gru/seed=0/`): a run its paper's
reproduction trained under the same run root is read, not trained again, and one it did not is
trained there, through the engine's fit. The atlas measures each once into its own
`<runs>/atlas/<model>/seed=<s>/measurements.json` (`experiments.engine.measure`): every wired cell
of the trained model (at its paper's checkpoint selection) and, under `untrained`, of its
untrained weights (the `epoch=init` snapshot: the null). With `--reuse-runs` a run measured from
the same command is read back, so the report rebuilds from the measurement files alone
(`reports/atlas/runs/`).
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import torch

from experiments.atlas.questions import MODELS
from experiments.atlas.scales import WIRED_TASKS, Scale
from experiments.atlas.view import write_unit_analysis, write_view_traces
from experiments.engine.fit import left_to_compute
from experiments.engine.measure import measured, measured_before
from experiments.engine.pool import run_all
from experiments.engine.sitting import Sitting
from experiments.engine.store import Schema
from experiments.paper1 import runs as paper1_runs
from experiments.paper1.scales import ANALYSED
from experiments.paper1.scales import SCALES as PAPER1_SCALES
from experiments.paper4 import runs as paper4_runs
from experiments.paper4.scales import SCALES as PAPER4_SCALES
from storage import RunLayout
from storage.layout import UNTRAINED
from storage.run_folder import RunFolder

STUDY = "atlas"
SCHEMA = Schema(1)
"""The version of an atlas run's measurements file."""
TAGS = {1: ANALYSED, 2: "last", 3: "last", 4: "best"}
"""The checkpoint each paper's reproduction analyses (`questions.PROTOCOL`)."""


def paper_arguments(model: str, seed: int, scale: Scale, root: Path, data: tuple[str, ...]):
    """The fit arguments of `model`'s own paper for it at `scale.paper_scale` (paper 1's with
    its lookup data, `data`)."""
    paper = MODELS[model].paper
    variant = model.split("_", 1)[1]
    if paper == 1:
        own = dataclasses.replace(PAPER1_SCALES[scale.paper_scale], data=data)
        return paper1_runs.model_arguments(variant, seed, own, root)
    if paper == 4:
        return paper4_runs.arguments_of(variant, seed, PAPER4_SCALES[scale.paper_scale], root)
    if paper == 2:
        from experiments.paper2.runs import arguments_of
        from experiments.paper2.scales import SCALES, figure2_cell

        own = SCALES[scale.paper_scale]
        return arguments_of(figure2_cell(own), seed, own, root)
    from experiments.paper3.runs import arguments_of
    from experiments.paper3.scales import SCALES

    return arguments_of("scan", variant.removeprefix("scan_"), seed, SCALES[scale.paper_scale],
                        root)  # fmt: skip


def arguments_of(model: str, seed: int, scale: Scale, root: Path,
                 data: tuple[str, ...] = ()) -> list[str]:  # fmt: skip
    """`python -m experiments fit` arguments of the run the atlas reads as `model`: its paper's
    own run, trained by its paper's reproduction or by the atlas (`paper_layout`)."""
    return paper_arguments(model, seed, scale, root, data)


def paper_layout(model: str, seed: int, scale: Scale, root: Path) -> RunLayout:
    """The run folder of `model`'s run in its paper's layout under `root`, where its paper's
    reproduction trains it too: the atlas reuses a run either trained, and trains it there where
    neither has."""
    paper, variant = MODELS[model].paper, model.split("_", 1)[1]
    if paper == 2:
        from experiments.paper2.runs import run_layout
        from experiments.paper2.scales import SCALES, figure2_cell

        return run_layout(root, figure2_cell(SCALES[scale.paper_scale]), seed)
    if paper == 3:
        from experiments.paper3.scales import variant as paper3_variant

        variant = paper3_variant("scan", variant.removeprefix("scan_"))
    return RunLayout.of(root, f"paper{paper}", variant, seed)


def cells_of(run: RunFolder, tag: str, model: str, scale: Scale, correct_only: bool) -> dict:
    """Every wired cell of the run's checkpoint or weight snapshot `tag`; for the trained model
    (`correct_only` as the scale says), the rows they read are written into the run folder for
    `python -m probes view`, beside its untrained weights on them (`view.write_view_traces`),
    and for either the units the cells found, which the page orders units by
    (`view.write_unit_analysis`)."""
    # the measurement's own modules (captum, the tasks' DataModules) where a model is measured
    from experiments.atlas.cells import measure_model
    from experiments.atlas.targets import ROWS

    torch.set_num_threads(1)
    info = MODELS[model]
    network, datamodule = run.model(tag), run.datamodule(tag)
    with torch.no_grad():
        rows = ROWS[info.task](network, datamodule, scale.tokens, scale.rows_per_token,
                               correct_only)  # fmt: skip
    cells = measure_model(network, rows, info.task, info.cell, run.state_dict(tag),
                          scale.control_draws, datamodule)  # fmt: skip
    if tag != UNTRAINED:
        write_view_traces(run.path, tag, rows, info.task, run.model(UNTRAINED))
    write_unit_analysis(run.path, tag, cells, info.task, info.cell)
    return cells


def measured_settings(scale: Scale) -> dict:
    """What a run's measurement reads of `scale` (which models the scale holds it does not)."""
    return {k: v for k, v in dataclasses.asdict(scale).items() if k not in ("models", "left_out")}


def measure(model: str, seed: int, scale: Scale, sitting: Sitting, data: tuple[str, ...]) -> dict:
    """Train the atlas's run of `model` (or keep it, with `reuse`) and write its measurements:
    its cells trained (at its paper's checkpoint selection) and untrained."""
    info = MODELS[model]
    tag = TAGS[info.paper]

    def trained(run: RunFolder) -> dict:
        data = paper1_runs.data_record(run.datamodule(tag)) if info.paper == 1 else None
        return {"model": model, "seed": seed, "paper": info.paper, "task": info.task,
                "cell": info.cell, "tag": tag, "data": data,
                **cells_of(run, tag, model, scale, scale.correct_only)}  # fmt: skip

    def untrained(run: RunFolder) -> dict:
        return cells_of(run, UNTRAINED, model, scale, correct_only=False)

    layout = RunLayout.of(sitting.root, STUDY, model, seed)
    arguments = arguments_of(model, seed, scale, sitting.root, data)
    return measured(layout, arguments, sitting, trained, {"untrained": untrained},
                    trained_at=paper_layout(model, seed, scale, sitting.root),
                    settings=measured_settings(scale))  # fmt: skip


def wired_runs(scale: Scale) -> list[tuple[str, int]]:
    """The `(model, seed)` runs of `scale` whose task is wired (`scales.WIRED_TASKS`)."""
    return [(model, seed) for model, seeds in scale.models.items()
            if MODELS[model].task in WIRED_TASKS for seed in seeds]  # fmt: skip


def measure_all(scale: Scale, sitting: Sitting) -> dict[tuple[str, int], dict]:
    """Every wired run of `scale` (of the sitting's shard), `jobs` at a time, each measured as
    soon as it is trained."""
    every = wired_runs(scale)
    keys = [key for key in every if sitting.shard.keeps(key, every)]
    data: tuple[str, ...] = ()
    if any(MODELS[model].paper == 1 for model, _ in keys):
        lookup, sitting = paper1_runs.lookup_data_of(sitting, f"{STUDY}/paper1_*")
        print(f"paper 1's data: {lookup.notice}", flush=True)
        data = ("--data.init_args.data_dir", lookup.data_dir or "null")
    tasks = {key: functools.partial(measure, *key, scale, sitting, data) for key in keys}

    def done_before(key) -> bool:
        layout = RunLayout.of(sitting.root, STUDY, *key)
        arguments = arguments_of(*key, scale, sitting.root, data)
        return measured_before(layout, arguments, sitting, ["untrained"])

    def describe(key, record) -> str:
        cells = record["cells"]
        return f"{key[0]} seed={key[1]}: " + ", ".join(
            f"{name} {value:.3f}" for name, value in cells.items() if value is not None
        )

    def left(key) -> str | None:
        arguments = arguments_of(*key, scale, sitting.root, data)
        return left_to_compute(paper_layout(*key, scale, sitting.root).path, arguments,
                               sitting.reuse)  # fmt: skip

    return run_all(tasks, sitting.jobs, describe, done_before, left=left)
